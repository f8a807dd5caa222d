/**
 * sql() over PostgreSQL's binary COPY (src/sources/pg-copy.ts) against a real server: the same
 * rows read the cursor's way (a query with parameters, which COPY cannot take) must give the same
 * DataFrame, value for value and dtype for dtype, over the edges of every type it reads. Then the
 * caps, a cancelled or failing COPY, wide rows, rows split across messages, and the connection
 * left fit for the next query. Left out of the comparison, where COPY is the more faithful side:
 * -0.0 (the cursor's JSON makes it 0.0), JSON numbers such as 1.0 or beyond 2^53 (parsed on the
 * host by the cursor path).
 */
import { type AddressInfo, connect, createServer } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/index.js'
import type { Sources } from '../../src/sources/sources.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { waitFor } from '../support/wait.js'
import { drain, openSources, options, runningQueries } from './support.js'

let cluster: SharedPostgres
let admin: pg.Client
let url: string
let sandbox: Sandbox

/** Each column's edges; one row a value, NULL in every column's last row. */
const EDGES: Record<string, { type: string; values: string[] }> = {
  i2: { type: 'int2', values: ['-32768', '32767', '0'] },
  i4: { type: 'int4', values: ['-2147483648', '2147483647', '7'] },
  i8: { type: 'int8', values: ['-9223372036854775808', '9223372036854775807', '9007199254740993'] },
  oid: { type: 'oid', values: ['4294967295', '0', '26'] },
  f4: { type: 'float4', values: ["'NaN'", "'-Infinity'", '1.1'] },
  f8: { type: 'float8', values: ["'NaN'", "'Infinity'", '5e-324', '0.1', '1.7976931348623157e308'] },
  num: {
    type: 'numeric',
    values: [
      '0',
      '-0.000001',
      '10000',
      '100000000.5',
      '123456789012345678901234567890.123456789',
      "'NaN'",
      "'Infinity'",
      "'-Infinity'",
      '0.00010000',
      '-9999.9999',
    ],
  },
  txt: {
    type: 'text',
    values: ["''", "' '", "E'a\\tb'", "E'line\\nbreak'", `'"quoted", comma'`, "E'\\\\N'", "'é 😀'"],
  },
  chr: { type: 'char(4)', values: ["'ab'", "''"] },
  vc: { type: 'varchar(5)', values: ["'abc'"] },
  nm: { type: 'name', values: ["'pg_class'"] },
  ch1: { type: '"char"', values: ["'x'", "''", "'é'"] }, // its binary form is one raw byte: cast to text
  day: {
    type: 'date',
    values: ["'2000-01-01'", "'1970-01-01'", "'1999-12-31'", "'2262-04-11'", "'1677-09-22'"],
  },
  old: { type: 'date', values: ["'0001-01-01'", "'9999-12-31'"] },
  ts: { type: 'timestamp', values: ["'2024-01-02 03:04:05.123456'", "'1969-12-31 23:59:59.999999'"] },
  tz: { type: 'timestamptz', values: ["'2024-01-02 03:04:05+02'", "'2000-01-01 00:00:00.000001+00'"] },
  tzold: { type: 'timestamptz', values: ["'0001-01-01 00:00:00+00'"] },
  ok: { type: 'bool', values: ['true', 'false'] },
  js: { type: 'json', values: [`'{"a": [1, 2.5, null]}'`, "'null'", `'"s"'`] },
  jb: { type: 'jsonb', values: [`'{"a": {"b": true}}'`, "'[]'", "'3'"] },
  id: {
    type: 'uuid',
    values: ["'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'"],
  },
  raw: { type: 'bytea', values: ["''", "'\\x00ff00'", "'\\x41'"] },
  // Types without a layout: cast to their text by the COPY, read as the cursor reads them.
  tm: { type: 'time', values: ["'01:02:03.5'", "'00:00:00'"] },
  iv: { type: 'interval', values: ["'1 day 2 hours'", "'00:00:00.5'"] },
  arr: { type: 'int4[]', values: ["'{1,2,NULL}'", "'{}'"] },
  en: { type: 'mood', values: ["'happy'", "'sad'"] },
  ip: { type: 'inet', values: ["'10.0.0.1/8'"] },
}
const ROWS = Math.max(...Object.values(EDGES).map((column) => column.values.length)) + 1

beforeAll(async () => {
  cluster = await sharedPostgres()
  url = await cluster.createDatabase()
  admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query("CREATE TYPE mood AS ENUM ('happy', 'sad')")
  const names = Object.keys(EDGES)
  const rows = Array.from({ length: ROWS }, (_, row) =>
    names.map((name) => {
      const { type, values } = EDGES[name] as { type: string; values: string[] }
      return row < values.length ? `(${values[row]})::${type}` : `NULL::${type}`
    }),
  )
  await admin.query(
    `CREATE TABLE edges AS SELECT * FROM (VALUES ${rows
      .map((row, index) => `(${index}, ${row.join(', ')})`)
      .join(', ')}) AS t(n, ${names.join(', ')})`,
  )
  // Numerics of every scale and sign, and many rows: batches past the first.
  await admin.query(`CREATE TABLE many AS
    SELECT i, (random() * 10 ^ (i % 25) * (CASE WHEN i % 2 = 0 THEN -1 ELSE 1 END))::numeric(60, 20)
                 ::numeric(60, 20) AS v,
           round((random() * 1000)::numeric, i % 7) AS w, md5(i::text) AS t,
           CASE WHEN i % 5 = 0 THEN NULL ELSE i END AS maybe
      FROM generate_series(1, 60000) AS s(i)`)
  await admin.query(`CREATE TABLE forever AS SELECT DATE 'infinity' AS d`)
  sandbox = await Sandbox.create({ sources: { shop: url } })
}, 120_000)

afterAll(async () => {
  await sandbox?.kill()
  await admin?.end()
})

const running = (pattern: string) => runningQueries(admin, pattern)

/** The connection a COPY left is fit for the next query. */
async function expectNextQueryRuns(sources: Sources) {
  const next = await sources.run(
    { query: 'SELECT count(*) AS n FROM many' },
    { ...options(), rawColumns: true },
  )
  for await (const _ of next.batches);
  expect(next.summary().rows).toBe(1)
}

/** Runs a cell; its stdout, or the error it raised. */
async function run(code: string, timeoutMs = 60_000): Promise<string> {
  const execution = await sandbox.runCode(code, { timeoutMs })
  if (execution.error)
    return `${execution.error.name}: ${execution.error.value}\n${execution.error.traceback}`
  return execution.logs.stdout.join('')
}

/** The differences between a query read by COPY and by the cursor (`WHERE $1`), as JSON. */
const DIFFERENCES = `
import json
def differences(query, order):
    raw = sql('SELECT * FROM (%s) q ORDER BY %s' % (query, order))
    values = sql('SELECT * FROM (%s) q WHERE $1 ORDER BY %s' % (query, order), params=[True])
    found = []
    if list(raw.columns) != list(values.columns):
        found.append(['columns', list(raw.columns), list(values.columns)])
    for name in values.columns:
        if str(raw[name].dtype) != str(values[name].dtype):
            found.append([name, str(raw[name].dtype), str(values[name].dtype)])
        for a, b in zip(raw[name], values[name]):
            if repr(a) != repr(b) or type(a) is not type(b):
                found.append([name, repr(a), repr(b)])
    return {'rows': len(raw), 'differences': found[:20]}
`

describe('sql() over binary COPY', () => {
  it('gives the DataFrame the cursor gives, at the edges of every type', async () => {
    const names = Object.keys(EDGES).filter((name) => name !== 'old' && name !== 'tzold')
    const out = await run(
      `${DIFFERENCES}\nprint(json.dumps(differences('SELECT n, ${names.join(', ')} FROM edges', 'n')))`,
    )
    expect(out.startsWith('{') ? JSON.parse(out) : out).toEqual({ rows: ROWS, differences: [] })
  })

  it('gives dates beyond datetime64 as Python dates, as the cursor does', async () => {
    const out = await run(
      `${DIFFERENCES}\nprint(json.dumps(differences('SELECT n, old, tzold FROM edges', 'n')))\ndf = sql('SELECT old FROM edges ORDER BY n')\nprint(repr(df.old[0]))`,
    )
    const [differences, first] = out.trim().split('\n')
    expect(JSON.parse(differences as string)).toEqual({ rows: ROWS, differences: [] })
    expect(first).toBe('datetime.date(1, 1, 1)')
  })

  it('reads numerics of every scale and sign exactly, in batches', async () => {
    const out = await run(
      `${DIFFERENCES}\nprint(json.dumps(differences('SELECT * FROM many', 'i')))\ndf = sql('SELECT * FROM many')\nimport decimal\ndecimal.getcontext().prec = 200\nprint(sum(df.v), df.maybe.isna().sum(), df.maybe.dtype)`,
    )
    const [differences, totals] = out.trim().split('\n')
    expect(JSON.parse(differences as string)).toEqual({ rows: 60_000, differences: [] })
    const { rows } = await admin.query('SELECT sum(v)::text AS v, count(*) - count(maybe) AS nulls FROM many')
    expect(totals).toBe(`${rows[0].v} ${rows[0].nulls} Int64`)
  })

  it('comes as raw columns, types without a layout as text, and a query that ends with a semicolon or a comment still reads', async () => {
    const sources = await openSources([`shop=${url}`])
    try {
      const stream = await sources.run(
        { query: 'SELECT i, t FROM many WHERE i <= 3; -- three' },
        { ...options(), rawColumns: true },
      )
      const batches = []
      for await (const batch of stream.batches) batches.push(batch)
      expect(
        batches.map((batch) => ('columns' in batch ? batch.columns.map((c) => c.layout) : 'values')),
      ).toEqual([['i4', 'text']])
      expect(stream.summary().rows).toBe(3)
      // An interval and an enum, cast to their text by the COPY: raw still.
      const cast = await sources.run(
        { query: 'SELECT n, iv, en FROM edges' },
        { ...options(), rawColumns: true },
      )
      const layouts = []
      for await (const batch of cast.batches)
        layouts.push('columns' in batch ? batch.columns.map((c) => c.layout) : 'values')
      expect(layouts).toEqual([['i4', 'text', 'text']])
    } finally {
      await sources.close()
    }
    expect(await run(`print(sql('SELECT 1 AS a, 2 AS a -- the end').values.tolist())`)).toBe('[[1, 2]]\n')
  })

  it("reads strings as the guard's parser does, whatever the role sets", async () => {
    // With standard_conforming_strings off, 'a\' would open a string the guard saw closed.
    await admin.query(`CREATE ROLE lax LOGIN; ALTER ROLE lax SET standard_conforming_strings = off;
      GRANT SELECT ON ALL TABLES IN SCHEMA public TO lax`)
    const lax = new URL(url)
    lax.username = 'lax'
    const sources = await openSources([`shop=${lax}`])
    const laxSandbox = await Sandbox.create({ sources: { shop: lax.toString() } })
    try {
      const stream = await sources.run({ query: "SELECT 'a\\' AS s" }, options())
      expect((await drain(stream)).columns.s).toEqual(['a\\'])
      const execution = await laxSandbox.runCode('print(sql("SELECT \'a\\\\\' AS s").s[0])')
      expect(execution.logs.stdout.join('')).toBe('a\\\n')
    } finally {
      await laxSandbox.kill()
      await sources.close()
    }
  })

  it('stops at the row and byte caps, cancels the COPY on the server, and the next query runs', async () => {
    for (const limits of [{ maxRows: 25_000 }, { maxBytes: 300_000 }]) {
      const sources = await openSources([`shop=${url}`], limits)
      try {
        const stream = await sources.run(
          { query: 'SELECT * FROM many ORDER BY i' },
          { ...options(), rawColumns: true },
        )
        let rows = 0
        let last = 0
        for await (const batch of stream.batches) {
          rows += batch.rows
          if ('columns' in batch) last = batch.rowEnds.at(-1) ?? last
        }
        const { truncated } = stream.summary()
        expect(truncated?.by).toBe(limits.maxRows ? 'rows' : 'bytes')
        if (limits.maxRows) expect(rows).toBe(25_000)
        else expect(rows).toBeGreaterThan(0)
        await waitFor(async () => (await running('ORDER BY i')).length === 0, {
          what: 'the capped COPY to end on the server',
        })
        await expectNextQueryRuns(sources)
      } finally {
        await sources.close()
      }
    }
  })

  it('cancels a COPY at the cell timeout; a failing one raises QueryError; the next cell runs at once', async () => {
    const timedOut = await run("sql('SELECT 1 AS x FROM pg_sleep(60)')", 2_000)
    expect(timedOut).toMatch(/TimeoutError|KeyboardInterrupt|QueryError/)
    await waitFor(async () => (await running('pg_sleep(60)')).length === 0, {
      what: 'the timed-out COPY to be cancelled on the server',
    })
    expect(
      await run(
        "try:\n    sql('SELECT 1 / (i - 50000) AS x FROM many ORDER BY i')\nexcept QueryError as e:\n    print('QueryError', e)",
      ),
    ).toMatch(/^QueryError .*division by zero/)
    expect(
      await run("try:\n    sql('SELECT d FROM forever')\nexcept ValueError as e:\n    print(e)"),
    ).toMatch(/infinity.*d::text/)
    expect(await run("print(len(sql('SELECT * FROM many')))")).toBe('60000\n')
  })

  it('reads a wide result (220 columns) in batches sized to what they send', async () => {
    const columns = [
      ...Array.from({ length: 200 }, (_, c) => `i * ${c + 1} AS n${c}`),
      ...Array.from({ length: 20 }, (_, c) => `repeat('x', i % ${c + 7}) AS t${c}`),
    ]
    const query = `SELECT i, ${columns.join(', ')} FROM generate_series(1, 3000) AS s(i)`
    const out = await run(`${DIFFERENCES}\nprint(json.dumps(differences(${JSON.stringify(query)}, 'i')))`)
    expect(out.startsWith('{') ? JSON.parse(out) : out).toEqual({ rows: 3000, differences: [] })
    // What a batch sends stays near 512 KiB (half a Jupyter chunk), whatever the wire carried:
    // numerics that widen to long text, NULL uuids that take 16 bytes each.
    const sources = await openSources([`shop=${url}`])
    try {
      for (const wide of [
        'SELECT 0::numeric(1000, 900) AS z FROM generate_series(1, 4000)',
        `SELECT ${Array.from({ length: 50 }, (_, c) => `NULL::uuid AS u${c}`).join(', ')} FROM generate_series(1, 4000)`,
      ]) {
        const stream = await sources.run({ query: wide }, { ...options(), rawColumns: true })
        let largest = 0
        for await (const batch of stream.batches) {
          if (!('columns' in batch)) throw new Error('expected raw columns')
          largest = Math.max(
            largest,
            batch.columns.reduce((sum, c) => sum + c.data.length + (c.nulls?.length ?? 0), 0),
          )
        }
        expect(stream.summary().rows).toBe(4000)
        expect(largest).toBeLessThan(600 * 1024)
      }
    } finally {
      await sources.close()
    }
  })

  it('reads rows that a proxy splits across messages', async () => {
    // Between host and server, every CopyData message cut in two: the protocol allows it.
    const target = new URL(url)
    const proxy = createServer((client) => {
      const server = connect(Number(target.port), target.hostname)
      client.pipe(server)
      let pending = Buffer.alloc(0)
      server.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk])
        const out: Buffer[] = []
        while (pending.length >= 5 && pending.length >= 1 + pending.readUInt32BE(1)) {
          const size = 1 + pending.readUInt32BE(1)
          const message = pending.subarray(0, size)
          pending = pending.subarray(size)
          const payload = message.subarray(5)
          if (message[0] === 0x64 && payload.length > 1) {
            const half = Math.floor(payload.length / 2)
            for (const part of [payload.subarray(0, half), payload.subarray(half)]) {
              const head = Buffer.alloc(5)
              head[0] = 0x64
              head.writeUInt32BE(part.length + 4, 1)
              out.push(head, part)
            }
          } else out.push(message)
        }
        client.write(Buffer.concat(out))
      })
      server.on('error', () => client.destroy())
      client.on('error', () => server.destroy())
      server.on('close', () => client.end())
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    const proxied = new URL(url)
    proxied.port = String((proxy.address() as AddressInfo).port)
    const direct = await openSources([`shop=${url}`])
    const split = await openSources([`shop=${proxied}`])
    try {
      const read = async (sources: Sources) => {
        const stream = await sources.run(
          { query: 'SELECT * FROM many ORDER BY i LIMIT 5000' },
          { ...options(), rawColumns: true },
        )
        const parts: string[] = []
        for await (const batch of stream.batches) {
          if (!('columns' in batch)) throw new Error('expected raw columns')
          for (const column of batch.columns)
            parts.push(Buffer.from(column.data).toString('hex'), String(column.nulls ?? ''))
        }
        return { rows: stream.summary().rows, digest: parts.join('|') }
      }
      const expected = await read(direct)
      expect(expected.rows).toBe(5000)
      expect(await read(split)).toEqual(expected)
    } finally {
      await split.close()
      await direct.close()
      proxy.close()
    }
  })

  it('ends the COPY on the server when the cell stops while no batch is being read', async () => {
    const sources = await openSources([`shop=${url}`])
    try {
      const controller = new AbortController()
      const stream = await sources.run(
        { query: 'SELECT a.i, b.t FROM many a CROSS JOIN many b' },
        { ...options(60_000, controller.signal), rawColumns: true },
      )
      const batches = stream.batches[Symbol.asyncIterator]()
      await batches.next()
      controller.abort()
      await waitFor(async () => (await running('CROSS JOIN')).length === 0, {
        what: 'the COPY to end on the server while its batches wait',
      })
      await batches.return?.(undefined)
    } finally {
      await sources.close()
    }
  })

  it('closes the connection when the cancel cannot reach the server (no connection left for it)', async () => {
    await admin.query('CREATE ROLE single LOGIN CONNECTION LIMIT 1; GRANT SELECT ON many TO single')
    const single = new URL(url)
    single.username = 'single'
    const sources = await openSources([`shop=${single}`], { maxRows: 10 })
    try {
      // After its first batch, a row a millisecond (20 s more): the COPY that goes on while the host waits
      // for it to end costs little.
      const stream = await sources.run(
        {
          query:
            'SELECT i, CASE WHEN i > 20000 THEN pg_sleep(0.001)::text END AS z FROM generate_series(1, 40000) AS s(i)',
        },
        { ...options(), rawColumns: true },
      )
      for await (const _ of stream.batches);
      expect(stream.summary().truncated?.by).toBe('rows')
      await waitFor(async () => (await running('generate_series(1, 40000)')).length === 0, {
        what: 'the capped COPY to end with its connection',
      })
      await expectNextQueryRuns(sources)
    } finally {
      await sources.close()
    }
  })

  it('says what to do with dates Python has no value for, and with a NUL in the query', async () => {
    expect(
      await run(
        'try:\n    sql("SELECT \'10000-01-01\'::timestamp AS t")\nexcept ValueError as e:\n    print(e)',
      ),
    ).toMatch(/t holds a date outside years 1 to 9999.*t::text/)
    expect(
      await run(
        'try:\n    sql("SELECT \'0044-03-15 BC\'::date AS d")\nexcept ValueError as e:\n    print(e)',
      ),
    ).toMatch(/d holds a date outside years 1 to 9999/)
    expect(await run("try:\n    sql('SELECT 1\\x00')\nexcept QueryError as e:\n    print(e)")).toMatch(
      /NUL character/,
    )
  })
})
