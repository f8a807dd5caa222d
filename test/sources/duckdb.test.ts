/**
 * DuckDB sources: data files queried in place (CSV, gzipped CSV, TSV, Parquet, NDJSON, joined), a
 * `.duckdb` file opened read-only; types and NULLs, the caps, refused statements (no file written,
 * nothing else read), a timeout and an abort that interrupt the query.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sources } from '../../src/sources/sources.js'
import { drain, openSources, options } from './support.js'

let dir: string
let files: Sources
let database: Sources
let databasePath: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-duckdb-'))
  writeFileSync(
    join(dir, 'sales.csv'),
    'id,customer_id,amount,day\n1,1,10.5,2024-01-02\n2,2,,2024-01-03\n3,1,7.25,2024-02-01\n',
  )
  writeFileSync(join(dir, 'secret.csv'), 'password\nhunter2\n')
  writeFileSync(join(dir, 'regions.tsv'), 'customer_id\tregion\n1\tnorth\n2\tsouth\n')
  writeFileSync(
    join(dir, 'events.ndjson'),
    '{"id": 1, "kind": "click", "tags": ["a"]}\n{"id": 2, "kind": null, "tags": []}\n',
  )
  writeFileSync(
    join(dir, 'big.csv'),
    `n,label\n${Array.from({ length: 100 }, (_, i) => `${i},row ${i} ${'y'.repeat(50)}`).join('\n')}\n`,
  )
  execFileSync('gzip', ['-k', join(dir, 'sales.csv')])
  execFileSync('mv', [join(dir, 'sales.csv.gz'), join(dir, 'archive.csv.gz')])
  databasePath = join(dir, 'warehouse.duckdb')
  const instance = await DuckDBInstance.create(databasePath)
  const connection = await instance.connect()
  await connection.run(`
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL);
    COMMENT ON TABLE customers IS 'Who buys';
    CREATE TABLE typed (i INTEGER, b BIGINT, f DOUBLE, d DECIMAL(12,3), day DATE, ts TIMESTAMP, tz TIMESTAMPTZ,
      ok BOOLEAN, j JSON, u UUID, raw BLOB, l INTEGER[], s STRUCT(a INTEGER));
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
    INSERT INTO typed VALUES
      (1, 9007199254740993, 'NaN', 1234567.891, '2024-01-02', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05+02',
       true, '{"a": 1}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x01\\x02'::BLOB, [1, 2], {'a': 1}),
      (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (3, -5, '-Infinity', 0.001, NULL, NULL, NULL, false, '[1]', NULL, NULL, [], NULL);
    COPY (SELECT * FROM customers) TO '${join(dir, 'customers.parquet')}' (FORMAT parquet);
  `)
  connection.closeSync()
  instance.closeSync()
  files = await openSources(
    ['sales.csv', 'archive.csv.gz', 'regions.tsv', 'events.ndjson', 'customers.parquet', 'big.csv'].map(
      (name) => join(dir, name),
    ),
    { maxRows: 50, maxBytes: 1_000_000 },
  )
  database = await openSources([`duckdb:${databasePath}`])
}, 60_000)

afterAll(async () => {
  await files?.close()
  await database?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('DuckDB over data files', () => {
  it('makes each file a table named after it, one source for all', async () => {
    expect(files.sources.map((source) => source.name)).toEqual([
      'sales',
      'archive',
      'regions',
      'events',
      'customers',
      'big',
    ])
    expect(files.sources.every((source) => source.kind === 'file')).toBe(true)
    const joined = await drain(
      await files.run(
        {
          query: `SELECT r.region, c.name, sum(s.amount) AS total FROM sales s JOIN regions r USING (customer_id)
                  JOIN customers c ON c.id = s.customer_id GROUP BY ALL ORDER BY region`,
        },
        options(),
      ),
    )
    expect(joined.columns).toEqual({ region: ['north', 'south'], name: ['Ana', 'Bo'], total: [17.75, null] })
    const archived = await drain(
      await files.run({ query: 'SELECT count(*) AS n FROM archive', source: 'archive' }, options()),
    )
    expect(archived.columns.n).toEqual([3])
    const events = await drain(await files.run({ query: 'SELECT * FROM events ORDER BY id' }, options()))
    expect(events.columns).toEqual({ id: [1, 2], kind: ['click', null], tags: [['a'], []] })
    expect(events.types.tags).toBe('json')
    const day = await drain(
      await files.run({ query: 'SELECT day FROM sales WHERE id = $1', params: [3] }, options()),
    )
    expect(day).toEqual({ columns: { day: ['2024-02-01'] }, types: { day: 'date' } })
  })

  it('stops at the caps', async () => {
    const byRows = await files.run({ query: 'SELECT * FROM big' }, options())
    expect((await drain(byRows)).columns.n).toHaveLength(50)
    expect(byRows.summary().truncated).toMatchObject({ by: 'rows', limit: 50 })
    const small = await openSources([join(dir, 'big.csv')], { maxBytes: 2000 })
    try {
      const byBytes = await small.run({ query: 'SELECT * FROM big' }, options())
      const rows = (await drain(byBytes)).columns.n?.length ?? 0
      expect(rows).toBeGreaterThan(5)
      expect(rows).toBeLessThan(50)
      expect(byBytes.summary().truncated?.by).toBe('bytes')
    } finally {
      await small.close()
    }
  })

  it('refuses ATTACH, INSTALL, LOAD, COPY, other files, writes and several statements', async () => {
    const out = join(dir, 'out.csv')
    for (const [query, rule] of [
      [`ATTACH '${join(dir, 'x.duckdb')}' AS x`, /ATTACH opens other databases/],
      ['INSTALL httpfs', /INSTALL and LOAD/],
      ['LOAD httpfs', /INSTALL and LOAD/],
      [`COPY sales TO '${out}'`, /refused/],
      [`EXPORT DATABASE '${dir}/export'`, /refused/],
      [`SELECT * FROM read_csv('${join(dir, 'secret.csv')}')`, /only the data files can be read/],
      [`SELECT * FROM '${join(dir, 'secret.csv')}'`, /only the data files can be read/],
      [`SELECT * FROM glob('${dir}/*')`, /only the data files can be read/],
      ["SELECT * FROM read_text('/etc/passwd')", /only the data files can be read/],
      ['CREATE TABLE t AS SELECT 1', /CREATE is not a query/],
      ['SET enable_external_access = true', /not a query/],
      ['SELECT 1; SELECT 2', /one a call/],
    ] as const) {
      await expect(files.run({ query }, options()), query).rejects.toThrow(rule)
    }
    expect(existsSync(out)).toBe(false)
    expect(readdirSync(dir).sort()).toEqual(
      [
        'archive.csv.gz',
        'big.csv',
        'customers.parquet',
        'events.ndjson',
        'regions.tsv',
        'sales.csv',
        'secret.csv',
        'warehouse.duckdb',
      ].sort(),
    )
  })

  const endless = 'SELECT count(*) FROM range(1000000000000) a, range(1000) b WHERE a.range + b.range = -1'

  it('interrupts a query at its timeout and on abort', async () => {
    const began = Date.now()
    await expect(files.run({ query: endless }, options(500))).rejects.toThrow(/time limit \(0.5 s\)/)
    expect(Date.now() - began).toBeLessThan(30_000)
    const controller = new AbortController()
    const running = files.run({ query: endless }, options(60_000, controller.signal))
    setTimeout(() => controller.abort(), 200)
    await expect(running).rejects.toThrow(/cancelled/)
    const next = await drain(await files.run({ query: 'SELECT 1 AS one' }, options()))
    expect(next.columns.one).toEqual([1])
  })
})

describe('DuckDB files', () => {
  it('keeps the types, and NULL apart from NaN', async () => {
    const { columns, types } = await drain(
      await database.run({ query: 'SELECT * FROM typed ORDER BY i NULLS LAST' }, options()),
    )
    expect(types).toEqual({
      i: 'int',
      b: 'int',
      f: 'float',
      d: 'decimal',
      day: 'date',
      ts: 'timestamp',
      tz: 'timestamptz',
      ok: 'bool',
      j: 'json',
      u: 'uuid',
      raw: 'bytes',
      l: 'json',
      s: 'json',
    })
    expect(columns.i).toEqual([1, 3, null])
    expect(columns.b).toEqual(['9007199254740993', -5, null])
    expect(columns.f).toEqual(['NaN', '-Infinity', null])
    expect(columns.d).toEqual(['1234567.891', '0.001', null])
    expect(columns.day).toEqual(['2024-01-02', null, null])
    expect(columns.ts).toEqual(['2024-01-02T03:04:05.5', null, null])
    expect(columns.tz).toEqual(['2024-01-02T01:04:05+00:00', null, null])
    expect(columns.ok).toEqual([true, false, null])
    expect(columns.j).toEqual([{ a: 1 }, [1], null])
    expect(columns.u).toEqual(['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', null, null])
    expect(columns.raw).toEqual([Buffer.from([1, 2]).toString('base64'), null, null])
    expect(columns.l).toEqual([[1, 2], [], null])
    expect(columns.s).toEqual([{ a: 1 }, null, null])
  })

  it('is read-only, and reads no other file', async () => {
    const before = statSync(databasePath).mtimeMs
    await expect(
      database.run({ query: "INSERT INTO customers VALUES (3, 'Eve')" }, options()),
    ).rejects.toThrow(/INSERT is not a query/)
    await expect(
      database.run({ query: `SELECT * FROM '${join(dir, 'secret.csv')}'` }, options()),
    ).rejects.toThrow(/only the data files/)
    const count = await drain(await database.run({ query: 'SELECT count(*) AS n FROM customers' }, options()))
    expect(count.columns.n).toEqual([2])
    expect(statSync(databasePath).mtimeMs).toBe(before)
    expect((await database.writeAccess())[0]?.access.canWrite).toBe(false)
  })

  it('says clearly when the file is missing or not a database', async () => {
    await expect(openSources([`duckdb:${join(dir, 'nope.duckdb')}`])).rejects.toThrow(/does not exist/)
    await expect(openSources([`duckdb:${join(dir, 'sales.csv')}`])).rejects.toThrow(
      /cannot be opened as a DuckDB database/,
    )
  })

  it('spills under ANALYST_HOME and keeps to ANALYST_DUCKDB_MEMORY unless told otherwise', async () => {
    const settings = async (sources: Sources) =>
      (
        await drain(
          await sources.run(
            {
              query:
                "SELECT current_setting('temp_directory') AS spill, current_setting('memory_limit') AS memory",
            },
            options(),
          ),
        )
      ).columns
    const home = join(dir, 'home')
    const saved = { home: process.env.ANALYST_HOME, memory: process.env.ANALYST_DUCKDB_MEMORY }
    process.env.ANALYST_HOME = home
    process.env.ANALYST_DUCKDB_MEMORY = '512MB'
    try {
      const sources = await openSources([join(dir, 'sales.csv')])
      try {
        const { spill, memory } = await settings(sources)
        expect(spill).toEqual([join(home, 'spill')])
        // DuckDB reports its limit in its own units: 512MB is 488.2 MiB.
        expect(String(memory?.[0])).toMatch(/^488\.\d MiB$/)
      } finally {
        await sources.close()
      }
      process.env.ANALYST_DUCKDB_MEMORY = 'lots'
      await expect(openSources([join(dir, 'sales.csv')])).rejects.toThrow(
        /ANALYST_DUCKDB_MEMORY=lots is not a size/,
      )
    } finally {
      for (const [name, value] of [
        ['ANALYST_HOME', saved.home],
        ['ANALYST_DUCKDB_MEMORY', saved.memory],
      ] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
  })
})
