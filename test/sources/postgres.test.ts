/**
 * PostgreSQL sources against a real server (a throwaway cluster on 127.0.0.1) with password
 * authentication for two roles: a read-only role and a superuser. Types and NULLs, the caps,
 * every refused statement tried as the superuser (the data is unchanged and no file written
 * afterwards), a timeout and an abort that end the query on the server, a server that drops the
 * connection mid-query, a bad URL and a wrong password, and no password in any message.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sources } from '../../src/sources/sources.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import { waitFor } from '../support/wait.js'
import { drain, openSources, options, runningQueries } from './support.js'

const RO_PASSWORD = 'ro-Pw-7f3a9c'
const SU_PASSWORD = 'su-Pw-2b8e4d'

let cluster: PostgresCluster
let admin: pg.Client
let database: string
let readOnly: Sources
let superuser: Sources
const env = { RO_PW: RO_PASSWORD, SU_PW: SU_PASSWORD }
const marker = `/tmp/analyst-pg-refused-${process.pid}`

const urlOf = (user: string, password: string) =>
  `postgres://${user}:${password}@127.0.0.1:${cluster.port}/${database}`

beforeAll(async () => {
  cluster = await startPostgres()
  const url = await cluster.createDatabase()
  database = new URL(url).pathname.slice(1)
  admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`
    CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
    COMMENT ON TABLE customers IS 'People who buy';
    CREATE TABLE orders (
      id int PRIMARY KEY, customer_id int REFERENCES customers(id), qty int, price float8, total numeric(30, 10),
      day date, at timestamp, at_tz timestamptz, paid bool, meta jsonb, doc json, ref uuid, raw bytea,
      big bigint, note text, took interval, clock time);
    COMMENT ON COLUMN orders.total IS 'With tax';
    CREATE SEQUENCE tickets;
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
    INSERT INTO orders VALUES
      (1, 1, 3, 'NaN', 12345678901.0123456789, '2024-01-02', '2024-01-02 03:04:05.5', '2024-01-02 03:04:05+02',
       true, '{"a": [1, 2]}', '[1]', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x0102ff', 9007199254740993, 'é',
       '1 day 2 hours', '01:02:03'),
      (2, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (3, 1, -4, '-Infinity', 0.5, NULL, NULL, NULL, false, 'null', NULL, NULL, NULL, -3, NULL, NULL, NULL);
    ANALYZE;
    CREATE ROLE analyst_ro LOGIN PASSWORD '${RO_PASSWORD}';
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst_ro;
    CREATE ROLE boss LOGIN SUPERUSER PASSWORD '${SU_PASSWORD}';
  `)
  // Password authentication for these two roles (the cluster trusts everyone else).
  const { rows } = await admin.query('SHOW hba_file')
  const hba = rows[0].hba_file as string
  writeFileSync(hba, `host all analyst_ro,boss 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`)
  await admin.query('SELECT pg_reload_conf()')
  await waitFor(
    async () => {
      const probe = new pg.Client({ connectionString: urlOf('boss', 'wrong') })
      return probe.connect().then(
        () => probe.end().then(() => false),
        () => true,
      )
    },
    { what: 'password authentication to be in force' },
  )
  readOnly = await openSources(
    [`shop=postgres://analyst_ro:\${RO_PW}@127.0.0.1:${cluster.port}/${database}`],
    { maxRows: 50, maxBytes: 5000 },
    env,
  )
  superuser = await openSources(
    [`shop=postgres://boss:\${SU_PW}@127.0.0.1:${cluster.port}/${database}`],
    {},
    env,
  )
}, 120_000)

afterAll(async () => {
  await readOnly?.close()
  await superuser?.close()
  await admin?.end()
  await cluster?.stop()
})

const running = (pattern: string) => runningQueries(admin, pattern)

describe('PostgreSQL', () => {
  it('keeps the types, and NULL apart from NaN', async () => {
    const { columns, types } = await drain(
      await readOnly.run({ query: 'SELECT * FROM orders ORDER BY id' }, options()),
    )
    expect(types).toEqual({
      id: 'int',
      customer_id: 'int',
      qty: 'int',
      price: 'float',
      total: 'decimal',
      day: 'date',
      at: 'timestamp',
      at_tz: 'timestamptz',
      paid: 'bool',
      meta: 'json',
      doc: 'json',
      ref: 'uuid',
      raw: 'bytes',
      big: 'int',
      note: 'text',
      took: 'interval',
      clock: 'time',
    })
    expect(columns.qty).toEqual([3, null, -4])
    expect(columns.price).toEqual(['NaN', null, '-Infinity'])
    expect(columns.total).toEqual(['12345678901.0123456789', null, '0.5000000000'])
    expect(columns.day).toEqual(['2024-01-02', null, null])
    expect(columns.at).toEqual(['2024-01-02T03:04:05.5', null, null])
    expect(columns.at_tz).toEqual(['2024-01-02T01:04:05+00:00', null, null])
    expect(columns.paid).toEqual([true, null, false])
    expect(columns.meta).toEqual([{ a: [1, 2] }, null, null])
    expect(columns.doc).toEqual([[1], null, null])
    expect(columns.ref).toEqual(['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', null, null])
    expect(columns.raw).toEqual([Buffer.from([1, 2, 255]).toString('base64'), null, null])
    expect(columns.big).toEqual(['9007199254740993', null, -3])
    expect(columns.note).toEqual(['é', null, null])
    expect(columns.took).toEqual(['P1DT2H', null, null])
    expect(columns.clock).toEqual(['01:02:03', null, null])
  })

  it('binds parameters, and reads in batches past the first', async () => {
    const bound = await drain(
      await superuser.run({ query: 'SELECT name FROM customers WHERE id = $1', params: [2] }, options()),
    )
    expect(bound.columns.name).toEqual(['Bo'])
    const many = await superuser.run({ query: 'SELECT g AS n FROM generate_series(1, 25000) g' }, options())
    const { columns } = await drain(many)
    expect(columns.n).toHaveLength(25000)
    expect(columns.n?.at(-1)).toBe(25000)
    expect(many.summary()).toMatchObject({ rows: 25000 })
    expect(many.summary().truncated).toBeUndefined()
  })

  it('stops at the row cap and the byte cap and says so', async () => {
    const byRows = await readOnly.run({ query: 'SELECT g FROM generate_series(1, 1000) g' }, options())
    expect((await drain(byRows)).columns.g).toHaveLength(50)
    expect(byRows.summary().truncated).toMatchObject({ by: 'rows', limit: 50 })
    expect(byRows.summary().truncated?.message).toMatch(/Aggregate in SQL/)
    const byBytes = await readOnly.run(
      { query: "SELECT repeat('x', 200) AS s FROM generate_series(1, 40)" },
      options(),
    )
    const rows = (await drain(byBytes)).columns.s?.length ?? 0
    expect(rows).toBeGreaterThan(10)
    expect(rows).toBeLessThan(40)
    expect(byBytes.summary().truncated?.by).toBe('bytes')
    // The connection went back to the pool in a usable state.
    expect((await drain(await readOnly.run({ query: 'SELECT 1 AS one' }, options()))).columns.one).toEqual([
      1,
    ])
  })

  it('refuses file, program and server access, writes and several statements, even as a superuser', async () => {
    for (const [query, rule] of [
      ["SELECT pg_read_file('/etc/passwd')", /pg_read_file\(\) reads or changes the server's files/],
      ["SELECT * FROM pg_catalog.pg_read_binary_file('/etc/passwd')", /pg_read_binary_file/],
      ["SELECT pg_ls_dir('.')", /pg_ls_dir/],
      ["SELECT pg_stat_file('postgresql.conf')", /pg_stat_file/],
      [
        'SELECT sourcefile, name, setting FROM pg_file_settings',
        /pg_file_settings shows the server's configuration files/,
      ],
      ['SELECT * FROM pg_catalog.pg_hba_file_rules', /pg_hba\.conf/],
      ['SELECT * FROM pg_show_all_file_settings()', /configuration files/],
      ['SELECT rolname, rolpassword FROM pg_authid', /password hashes/],
      ['WITH s AS (SELECT passwd FROM pg_shadow) SELECT * FROM s', /password hashes/],
      ['SELECT * FROM pg_user_mappings', /other servers' passwords/],
      [`COPY customers TO PROGRAM 'touch ${marker}'`, /COPY reads and writes files and programs/],
      [`COPY (SELECT 1) TO '${marker}'`, /COPY/],
      ['COPY customers FROM STDIN', /COPY/],
      ["SELECT lo_import('/etc/passwd')", /lo_import/],
      [`SELECT lo_export(1, '${marker}')`, /lo_export/],
      [
        "SELECT * FROM dblink('host=127.0.0.1', 'SELECT 1') AS t(x int)",
        /dblink\(\) connects to other servers/,
      ],
      [
        "SELECT query_to_xml('SELECT pg_read_file(''/etc/passwd'')', true, true, '')",
        /runs SQL from a string/,
      ],
      ["SELECT set_config('statement_timeout', '0', false)", /set_config/],
      ['SELECT * INTO stolen FROM customers', /SELECT INTO creates a table/],
      ["INSERT INTO customers VALUES (9, 'Eve')", /INSERT is not a query/],
      ['UPDATE customers SET name = 1', /UPDATE is not a query/],
      ['WITH gone AS (DELETE FROM customers RETURNING *) SELECT * FROM gone', /DELETE changes data/],
      ['DROP TABLE orders', /DROP is not a query/],
      ["DO $$ BEGIN PERFORM pg_read_file('/etc/passwd'); END $$", /DO is not a query/],
      ['SET statement_timeout = 0', /not a query/],
      ['SELECT 1; SELECT 2', /one a call/],
      ['SELEC 1', /could not be parsed/],
    ] as const) {
      await expect(superuser.run({ query }, options()), query).rejects.toThrow(rule)
    }
    // Behind the parser, the transaction itself is read-only.
    await expect(superuser.run({ query: "SELECT nextval('tickets')" }, options())).rejects.toThrow(
      /read-only/,
    )
    expect(existsSync(marker)).toBe(false)
    const { rows } = await admin.query(
      'SELECT count(*)::int AS n, (SELECT count(*)::int FROM orders) AS o FROM customers',
    )
    expect(rows[0]).toEqual({ n: 2, o: 3 })
    const { rows: tables } = await admin.query(
      "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'stolen'",
    )
    expect(tables[0].n).toBe(0)
  })

  it('cancels a query on the server at its timeout', async () => {
    const began = Date.now()
    await expect(superuser.run({ query: 'SELECT pg_sleep(60)' }, options(2000))).rejects.toThrow(
      /time limit \(2 s\)/,
    )
    expect(Date.now() - began).toBeLessThan(30_000)
    await waitFor(async () => (await running('pg_sleep(60)')).length === 0, {
      what: 'no pg_sleep(60) left on the server',
    })
    expect((await drain(await superuser.run({ query: 'SELECT 2 AS two' }, options()))).columns.two).toEqual([
      2,
    ])
  })

  it('cancels a query on the server when its signal aborts', async () => {
    const controller = new AbortController()
    const query = superuser.run({ query: 'SELECT pg_sleep(61)' }, options(120_000, controller.signal))
    query.catch(() => {})
    await waitFor(async () => (await running('pg_sleep(61)')).length === 1, { what: 'pg_sleep(61) to run' })
    controller.abort()
    await expect(query).rejects.toThrow(/cancelled/)
    await waitFor(async () => (await running('pg_sleep(61)')).length === 0, {
      what: 'no pg_sleep(61) left on the server',
    })
  })

  it('says clearly when the server drops the connection mid-query, and goes on', async () => {
    const query = readOnly.run({ query: 'SELECT pg_sleep(62)' }, options())
    query.catch(() => {})
    await waitFor(async () => (await running('pg_sleep(62)')).length === 1, { what: 'pg_sleep(62) to run' })
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(62)%' AND pid <> pg_backend_pid()",
    )
    await expect(query).rejects.toThrow(/went away during the query/)
    expect(
      (await drain(await readOnly.run({ query: 'SELECT 3 AS three' }, options()))).columns.three,
    ).toEqual([3])
  })

  it('explains a wrong password, a wrong database and a server that is not there, without the password', async () => {
    const wrong = 'Not-The-Pw-91'
    const failure = await openSources([
      `postgres://analyst_ro:${wrong}@127.0.0.1:${cluster.port}/${database}`,
    ]).catch((error) => error)
    expect(failure.name).toBe('UnauthorizedError')
    expect(failure.message).toMatch(/refused the password/)
    expect(`${failure.message} ${failure.hint} ${failure.stack}`).not.toContain(wrong)
    const noDatabase = await openSources([
      `postgres://analyst_ro:${RO_PASSWORD}@127.0.0.1:${cluster.port}/nope`,
    ]).catch((e) => e)
    expect(noDatabase.message).toMatch(/no such database/)
    expect(`${noDatabase.message} ${noDatabase.hint} ${noDatabase.stack}`).not.toContain(RO_PASSWORD)
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
    const nobody = await openSources([`postgres://analyst_ro:${RO_PASSWORD}@127.0.0.1:${port}/x`]).catch(
      (e) => e,
    )
    expect(nobody.message).toMatch(/cannot be reached/)
    expect(nobody.hint).toMatch(/host and port/)
    expect(`${nobody.message} ${nobody.hint} ${nobody.stack}`).not.toContain(RO_PASSWORD)
  })

  it('keeps the password out of query errors and of what the sandbox sees', async () => {
    const error = await readOnly.run({ query: `SELECT '${RO_PASSWORD}'::int` }, options()).catch((e) => e)
    expect(error.message).toMatch(/invalid input syntax/)
    expect(`${error.message} ${error.hint} ${error.stack}`).not.toContain(RO_PASSWORD)
    expect(JSON.stringify(readOnly.sources)).not.toContain(RO_PASSWORD)
  })

  it('tells whether the role can write', async () => {
    expect((await readOnly.writeAccess())[0]?.access).toMatchObject({ canWrite: false })
    expect((await superuser.writeAccess())[0]?.access).toEqual({
      canWrite: true,
      reason: 'boss is a superuser',
    })
  })
})
