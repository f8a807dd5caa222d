/**
 * sql() and describe_table() on the Jupyter engine: a real Jupyter Server, a real PostgreSQL and a
 * SQLite file, the questions carried over the kernel's stdin channel (src/sandbox/jupyter/questions.ts).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/index.js'
import { JupyterProvider } from '../../src/sandbox/jupyter/index.js'
import { type RunningJupyter, startJupyterServer } from '../../src/test/support/jupyter-server.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { waitFor } from '../support/wait.js'

describe('sql() on the Jupyter engine', () => {
  let dir: string
  let server: RunningJupyter
  let cluster: SharedPostgres
  let url: string
  let sandbox: Sandbox

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'analyst-jupyter-sql-'))
    const db = join(dir, 'shop.db')
    execFileSync('/usr/bin/python3', [
      '-c',
      "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE customers (id INTEGER PRIMARY KEY, segment TEXT)'); c.executemany('INSERT INTO customers VALUES (?, ?)', [(1, 'retail'), (2, None)]); c.commit()",
      db,
    ])
    ;[server, cluster] = await Promise.all([startJupyterServer(), sharedPostgres()])
    url = await cluster.createDatabase()
    const client = new pg.Client(url)
    await client.connect()
    await client.query(
      `CREATE TABLE t (n int, d numeric(10,2), day date, at timestamptz, ok boolean, j jsonb, u uuid, f float8);
       INSERT INTO t VALUES (1, 1.25, '2024-02-29', '2024-01-01 12:00+02', true, '{"a": [1]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'NaN'),
                            (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
    )
    await client.end()
    const provider = new JupyterProvider({
      url: server.url,
      token: server.token,
      interruptGraceMs: 5000,
      recordDir: join(dir, 'records'),
    })
    sandbox = await Sandbox.create({ provider, sources: { pg: url, lite: `sqlite:${db}` } })
  }, 120_000)

  afterAll(async () => {
    await sandbox?.kill()
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('brings PostgreSQL types over as the local engine does, NULL apart from NaN', async () => {
    const execution = await sandbox.runCode(
      [
        "df = sql('SELECT * FROM t ORDER BY n', source='pg')",
        'print(dict(df.dtypes.astype(str)))',
        "print(repr(df.d[0]), df.day[0].date(), df['at'][0].isoformat(), df.j[0], str(df.u[0]), df.f.isna().tolist(), __import__('math').isnan(df.f[0]))",
        'print(df.n.isna().tolist(), df.ok.isna().tolist())',
      ].join('\n'),
    )
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout.join('')).toContain("'n': 'Int64'")
    expect(execution.logs.stdout.join('')).toContain(
      "Decimal('1.25') 2024-02-29 2024-01-01T10:00:00+00:00 {'a': [1]} a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 [False, True] True",
    )
    expect(execution.logs.stdout.join('')).toContain('[False, True] [False, True]')
    expect(execution.queries.map((q) => [q.source, q.rows])).toEqual([['pg', 2]])
  })

  it('queries the SQLite file with params, and describes a table', async () => {
    const execution = await sandbox.runCode(
      "print(sql('SELECT segment FROM customers WHERE id = ?', source='lite', params=[1]).segment.tolist())\nprint('segment' in describe_table('customers', source='lite'))",
    )
    expect(execution.error).toBeUndefined()
    expect(execution.logs.stdout).toEqual(["['retail']\n", 'True\n'])
  })

  it('brings a result larger than a Jupyter Server message (10 MiB) whole, in chunks', async () => {
    const execution = await sandbox.runCode(
      [
        "df = sql(\"SELECT g AS id, repeat('x', 60) || g AS s FROM generate_series(1, 200000) g\", source='pg')",
        'print(len(df), int(df.id.sum()), int(df.s.str.len().sum()), df.s.iloc[-1][-6:])',
        "print(len(sql('SELECT 1 AS n', source='pg')))",
      ].join('\n'),
      { timeoutMs: 120_000 },
    )
    expect(execution.error).toBeUndefined()
    // 200,000 rows of 61 to 66 characters: about 13 MB as JSON.
    const lengths =
      200_000 * 60 +
      [1, 2, 3, 4, 5, 6].reduce(
        (sum, digits) => sum + digits * (Math.min(200_000, 10 ** digits - 1) - 10 ** (digits - 1) + 1),
        0,
      )
    expect(execution.logs.stdout.join('')).toBe(`200000 20000100000 ${lengths} 200000\n1\n`)
  })

  it('refuses a DELETE with a message the code can read', async () => {
    const refused = await sandbox.runCode("sql('DELETE FROM t', source='pg')")
    expect(refused.error?.name).toBe('QueryError')
    expect(refused.error?.value).toMatch(/read-only|DELETE|not allowed|refuse/i)
    expect((await sandbox.runCode("len(sql('SELECT * FROM t', source='pg'))")).text).toBe('2')
  })

  it('cancels the query on its server when the cell is interrupted', async () => {
    const controller = new AbortController()
    const cell = sandbox.runCode("sql('SELECT pg_sleep(600)', source='pg')", { signal: controller.signal })
    cell.catch(() => {})
    const client = new pg.Client(url)
    await client.connect()
    const sleeping = async () =>
      (
        await client.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_sleep(600)%' AND state = 'active' AND pid <> pg_backend_pid()",
        )
      ).rows[0].n
    await waitFor(async () => (await sleeping()) === 1, {
      what: 'the query running on the server',
      timeoutMs: 60_000,
    })
    controller.abort()
    await cell.catch(() => {})
    await waitFor(async () => (await sleeping()) === 0, {
      what: 'the query gone from pg_stat_activity',
      timeoutMs: 30_000,
    })
    await client.end()
    expect((await sandbox.runCode('1 + 1')).text).toBe('2')
  })

  it('leaves ordinary input() as it was: refused, the cells have no stdin', async () => {
    const execution = await sandbox.runCode("input('name? ')")
    expect(execution.error?.name).toBe('StdinNotImplementedError')
  })
})
