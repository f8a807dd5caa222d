/**
 * sql() from cells on the local engine, against real servers: a real PostgreSQL and MariaDB, each
 * reached with a superuser's URL (the worst case), a CSV queried by DuckDB on the host, and a real
 * jail. What the Sources tests prove one level down must hold from a cell too: a query past the
 * cell's time limit ends on its server and the next cell does not wait for it; a server that goes
 * away mid-query is a QueryError and the session lives; the refused statements are refused with
 * their rule, the data unchanged and no program run on the database host.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Execution, Sandbox } from '../../src/index.js'
import type { Sources } from '../../src/sources/sources.js'
import { type MariadbServer, startMariadb } from '../../src/test/support/mariadb.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import { waitFor } from '../support/wait.js'
import { openSources } from './support.js'

const PG_PASSWORD = 'cells-pg-Pw-31d9'
const MY_PASSWORD = 'cells-my-Pw-77e0'

let dir: string
let cluster: PostgresCluster
let mariadb: MariadbServer
let admin: pg.Client
let pgUrl: string
let myUrl: string
let sources: Sources
let sandbox: Sandbox
const marker = `/tmp/analyst-cells-refused-${process.pid}`

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-cells-'))
  writeFileSync(join(dir, 'events.csv'), 'kind,n\na,1\nb,2\na,3\n')
  writeFileSync(join(dir, 'secret.csv'), 'token\nnot-for-code\n')
  ;[cluster, mariadb] = await Promise.all([startPostgres(), startMariadb()])
  const url = await cluster.createDatabase()
  admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`
    CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
    CREATE ROLE cell_boss LOGIN SUPERUSER PASSWORD '${PG_PASSWORD}';
  `)
  await cluster.requirePassword(['cell_boss'])
  pgUrl = `postgres://cell_boss:${PG_PASSWORD}@127.0.0.1:${cluster.port}/${new URL(url).pathname.slice(1)}`
  const database = await mariadb.createDatabase()
  await mariadb.query(`
    USE \`${database}\`;
    CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL);
    INSERT INTO customers VALUES (1, 'Ana'), (2, 'Bo');
    CREATE USER 'cell_boss'@'127.0.0.1' IDENTIFIED BY '${MY_PASSWORD}';
    GRANT ALL PRIVILEGES ON *.* TO 'cell_boss'@'127.0.0.1' WITH GRANT OPTION;
  `)
  myUrl = `mysql://cell_boss:${MY_PASSWORD}@127.0.0.1:${mariadb.port}/${database}`
  sources = await openSources([`pg=${pgUrl}`, `my=${myUrl}`, join(dir, 'events.csv')])
  sandbox = await Sandbox.create({ sources })
}, 180_000)

afterAll(async () => {
  await sandbox?.kill()
  await sources?.close()
  await admin?.end()
  await Promise.all([cluster?.stop(), mariadb?.stop()])
  rmSync(dir, { recursive: true, force: true })
  rmSync(marker, { force: true })
})

/** The active queries on PostgreSQL that match, other than the admin's own. */
async function pgRunning(pattern: string): Promise<number> {
  const { rows } = await admin.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE $1",
    [`%${pattern}%`],
  )
  return rows[0].n as number
}

/** The queries on MariaDB that match, from information_schema.processlist (not this lookup itself). */
async function myRunning(pattern: string): Promise<number> {
  const rows = (await mariadb.query(
    "SELECT id FROM information_schema.processlist WHERE command = 'Query' AND info LIKE ? AND id <> connection_id()",
    [`%${pattern}%`],
  )) as unknown[]
  return rows.length
}

/** The queries that the sources' role (cell_boss) runs now on a server. */
async function busyRole(source: 'pg' | 'my'): Promise<number> {
  if (source === 'pg') {
    const { rows } = await admin.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'cell_boss' AND state <> 'idle'",
    )
    return rows[0].n as number
  }
  const rows = (await mariadb.query(
    "SELECT id FROM information_schema.processlist WHERE user = 'cell_boss' AND command = 'Query'",
  )) as unknown[]
  return rows.length
}

/** The cell's error, named and explained, or a failure that shows the whole execution. */
function errorOf(execution: Execution) {
  expect(execution.error, JSON.stringify(execution.logs)).toBeDefined()
  return execution.error as NonNullable<Execution['error']>
}

describe('sql() from a cell past its time limit', () => {
  for (const [source, sleep, running] of [
    ['pg', 'SELECT pg_sleep(60)', () => pgRunning('pg_sleep(60)')],
    ['my', 'SELECT SLEEP(60)', () => myRunning('SLEEP(60)')],
  ] as const) {
    it(`${source}: the cell fails with a timeout, the query ends on the server, the next cell runs at once`, async () => {
      const began = Date.now()
      const timedOut = await sandbox.runCode(`sql(${JSON.stringify(sleep)}, source='${source}')`, {
        timeoutMs: 2000,
      })
      const error = errorOf(timedOut)
      expect(error.name, `${error.name}: ${error.value}`).toBe('TimeoutError')
      expect(error.value).toMatch(/longer than its 2 s timeout/)
      // The next cell does not wait for the 60 s query: only a broken cancel reaches this bound.
      const next = await sandbox.runCode('1 + 1')
      expect(next.text).toBe('2')
      expect(Date.now() - began).toBeLessThan(45_000)
      await waitFor(async () => (await running()) === 0, {
        what: `no ${sleep} left on the server`,
      })
      // Nor any other query of the source's role.
      expect(await busyRole(source)).toBe(0)
      expect(timedOut.queries).toMatchObject([{ source, query: sleep }])
      expect(timedOut.queries[0]?.error).toBeDefined()
      // The source still answers.
      expect((await sandbox.runCode(`int(sql('SELECT 7 AS n', source='${source}').n[0])`)).text).toBe('7')
    })
  }
})

describe('a database that goes away mid-query', () => {
  it('pg: a terminated backend is a clear QueryError, the session lives and the next sql() works', async () => {
    await sandbox.runCode('kept = 41')
    const cell = sandbox.runCode(
      "try:\n    sql('SELECT pg_sleep(63)', source='pg')\nexcept QueryError as e:\n    print('QueryError:', e)\n    raise",
      { timeoutMs: 120_000 },
    )
    await waitFor(async () => (await pgRunning('pg_sleep(63)')) === 1, { what: 'pg_sleep(63) to run' })
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(63)%' AND pid <> pg_backend_pid()",
    )
    const error = errorOf(await cell)
    expect(error.name).toBe('QueryError')
    expect(error.value).toMatch(/went away during the query/)
    expect(error.value).not.toContain(PG_PASSWORD)
    expect((await sandbox.runCode('kept + 1')).text).toBe('42')
    expect((await sandbox.runCode("len(sql('SELECT * FROM customers', source='pg'))")).text).toBe('2')
  })

  it('my: a killed connection is a clear QueryError, the session lives and the next sql() works', async () => {
    await sandbox.runCode('kept = 41')
    const cell = sandbox.runCode("sql('SELECT SLEEP(64)', source='my')", { timeoutMs: 120_000 })
    await waitFor(async () => (await myRunning('SLEEP(64)')) === 1, { what: 'SLEEP(64) to run' })
    const [row] = (await mariadb.query(
      "SELECT id FROM information_schema.processlist WHERE info LIKE '%SLEEP(64)%' AND id <> connection_id()",
    )) as Array<{ id: number }>
    await mariadb.query(`KILL CONNECTION ${Number(row?.id)}`)
    const error = errorOf(await cell)
    expect(error.name).toBe('QueryError')
    expect(error.value).toMatch(
      /The MySQL server went away during the query: Connection lost[^.]*\. Check that the server runs/,
    )
    expect(error.value).not.toContain(MY_PASSWORD)
    expect((await sandbox.runCode('kept')).text).toBe('41')
    expect((await sandbox.runCode("len(sql('SELECT * FROM customers', source='my'))")).text).toBe('2')
  })

  it('pg: a server stopped mid-query is a QueryError, and a later sql() says it cannot connect', async () => {
    const doomed = await startPostgres()
    let stopped = false
    const own = await openSources([`gone=${doomed.url()}`])
    const alone = await Sandbox.create({ sources: own })
    try {
      const probe = new pg.Client({ connectionString: doomed.url() })
      await probe.connect()
      const sleeping = async () =>
        (
          await probe.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(65)%' AND pid <> pg_backend_pid()",
          )
        ).rows[0].n === 1
      const cell = alone.runCode("sql('SELECT pg_sleep(65)')", { timeoutMs: 120_000 })
      await waitFor(sleeping, { what: 'pg_sleep(65) to run' })
      await probe.end()
      await doomed.stop()
      stopped = true
      const error = errorOf(await cell)
      expect(error.name).toBe('QueryError')
      expect(error.value).toMatch(/The PostgreSQL server went away during the query/)
      expect((await alone.runCode('2 + 2')).text).toBe('4')
      const later = errorOf(await alone.runCode("sql('SELECT 1')"))
      expect(later.name).toBe('QueryError')
      expect(later.value).toMatch(/PostgreSQL cannot be reached at .*Check the host and port/)
      expect(later.value).not.toMatch(/\n\s+at /)
    } finally {
      await alone.kill()
      await own.close()
      if (!stopped) await doomed.stop()
    }
  }, 120_000)
})

describe('refused statements tried from a cell, with a superuser URL', () => {
  it('pg: file, program and large-object access are QueryErrors with their rule; nothing ran or changed', async () => {
    for (const [query, rule] of [
      ["SELECT pg_read_file('/etc/passwd')", /pg_read_file\(\) reads or changes the server's files/],
      [`COPY customers TO PROGRAM 'touch ${marker}'`, /COPY reads and writes files and programs/],
      [`COPY (SELECT 1) TO PROGRAM 'sh -c "touch ${marker}"'`, /COPY/],
      ["SELECT lo_import('/etc/passwd')", /lo_import/],
      ['DELETE FROM customers WHERE id = 1', /DELETE is not a query/],
    ] as const) {
      const execution = await sandbox.runCode(
        `try:\n    sql(${JSON.stringify(query)}, source='pg')\nexcept QueryError as e:\n    print('refused')\n    raise`,
      )
      const error = errorOf(execution)
      expect(error.name, query).toBe('QueryError')
      expect(error.value, query).toMatch(rule)
      expect(execution.logs.stdout, query).toEqual(['refused\n'])
    }
    expect(existsSync(marker)).toBe(false)
    const { rows } = await admin.query(
      "SELECT (SELECT count(*)::int FROM customers) AS n, (SELECT count(*)::int FROM pg_largeobject_metadata) AS lo, (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend' AND query LIKE '%touch%' AND pid <> pg_backend_pid()) AS copying",
    )
    expect(rows[0]).toEqual({ n: 2, lo: 0, copying: 0 })
  })

  it('my: LOAD_FILE, INTO OUTFILE and LOAD DATA are QueryErrors; the data unchanged', async () => {
    for (const [query, rule] of [
      ["SELECT LOAD_FILE('/etc/passwd')", /LOAD_FILE/],
      [`SELECT * FROM customers INTO OUTFILE '${marker}'`, /INTO OUTFILE writes files/],
      [
        `LOAD DATA INFILE '/etc/passwd' INTO TABLE customers`,
        /LOAD DATA reads the server's or the client's files/,
      ],
    ] as const) {
      const error = errorOf(await sandbox.runCode(`sql(${JSON.stringify(query)}, source='my')`))
      expect(error.name, query).toBe('QueryError')
      expect(error.value, query).toMatch(rule)
    }
    expect(existsSync(marker)).toBe(false)
    expect((await sandbox.runCode("len(sql('SELECT * FROM customers', source='my'))")).text).toBe('2')
  })

  it('DuckDB: ATTACH, INSTALL and read_csv outside the data files are QueryErrors with their rule', async () => {
    for (const [query, rule] of [
      [`ATTACH '${join(dir, 'other.duckdb')}' AS other`, /ATTACH opens other databases/],
      ['INSTALL httpfs', /INSTALL and LOAD/],
      [`SELECT * FROM read_csv('${join(dir, 'secret.csv')}')`, /only the data files can be read/],
      ["SELECT * FROM read_csv('/etc/passwd')", /only the data files can be read/],
    ] as const) {
      const error = errorOf(await sandbox.runCode(`sql(${JSON.stringify(query)}, source='events')`))
      expect(error.name, query).toBe('QueryError')
      expect(error.value, query).toMatch(rule)
    }
    expect(existsSync(join(dir, 'other.duckdb'))).toBe(false)
    expect(
      (await sandbox.runCode("sql('SELECT SUM(n) AS n FROM events', source='events').n.tolist()")).text,
    ).toBe('[6]')
  })
})
