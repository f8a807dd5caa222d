/**
 * `analyst serve` with named sources, as a team runs it: an ANALYST_SOURCES file with a real
 * PostgreSQL (its password from the server's environment, kept to one token) and a SQLite file
 * (every token's). Callers list and pick sources by name; a session's sql() reaches them from
 * the sandbox; each query is kept in its step; after a restart the session's cells are replayed
 * against the same sources. The password is in nothing a caller gets, nor anywhere in the store.
 */
import type { ChildProcess } from 'node:child_process'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail, SourceInfo } from '../../src/server/types.js'
import { startJupyterServer } from '../../src/test/support/jupyter-server.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import { startFakeOpenAI } from '../support/fake-openai.js'
import { startServe } from '../support/serve.js'
import { askOverSse } from '../support/sse.js'

const PASSWORD = 'pw-of-the-shop-4417'
const A = { authorization: 'Bearer token-a' }
const B = { authorization: 'Bearer token-b' }

let dir: string
let home: string
let cluster: PostgresCluster
let env: Record<string, string>
let database: string

/** Every file under a folder, as bytes. */
function* filesUnder(folder: string): Generator<Buffer> {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name)
    if (statSync(path).isDirectory()) yield* filesUnder(path)
    else yield readFileSync(path)
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-serve-sources-'))
  home = join(dir, 'home')
  cluster = await startPostgres()
  const url = await cluster.createDatabase()
  database = new URL(url).pathname.slice(1)
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`
    CREATE TABLE orders (id int PRIMARY KEY, region text NOT NULL, amount numeric(10, 2));
    INSERT INTO orders VALUES (1, 'north', 10.50), (2, 'south', 20), (3, 'north', 4.25), (4, 'south', NULL);
    CREATE ROLE analyst_ro LOGIN PASSWORD '${PASSWORD}';
    GRANT SELECT ON orders TO analyst_ro;
  `)
  await admin.end()
  await cluster.requirePassword(['analyst_ro'])
  const local = join(dir, 'local.db')
  execFileSync('/usr/bin/python3', [
    '-c',
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE regions (name TEXT, manager TEXT)'); c.executemany('INSERT INTO regions VALUES (?, ?)', [('north', 'Ana'), ('south', 'Bo'), ('east', 'Cy')]); c.commit()",
    local,
  ])
  writeFileSync(
    join(dir, 'sources.json'),
    JSON.stringify({
      shop: {
        url: `postgres://analyst_ro@127.0.0.1:${cluster.port}/${database}`,
        passwordEnv: 'SHOP_PASSWORD',
        tokens: ['token-a'],
      },
      local: { url: `sqlite:${local}` },
    }),
  )
  env = {
    PATH: process.env.PATH ?? '',
    ANALYST_HOME: home,
    ANALYST_TOKEN: 'token-a,token-b',
    ANALYST_SOURCES: join(dir, 'sources.json'),
    SHOP_PASSWORD: PASSWORD,
    ANALYST_MODEL: 'openai-compatible:fake',
    NO_COLOR: '1',
  }
}, 120_000)

afterAll(async () => {
  await cluster?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => child.once('exit', (code) => r(code)))

describe('analyst serve with ANALYST_SOURCES', () => {
  it('lists, picks, queries, records and replays sources by name, and never gives out the password', async () => {
    const model = await startFakeOpenAI([
      {
        code: [
          "totals = sql('SELECT region, sum(amount)::float8 AS total, count(amount) AS n FROM orders GROUP BY region ORDER BY region', source='shop')",
          "print(totals.to_dict('list'))",
        ].join('\n'),
      },
      { content: 'North 14.75, south 20.' },
      // After the restart: `totals` exists again because its cell was replayed with sql().
      {
        code: "managers = sql('SELECT count(*) AS n FROM regions', source='local')\nprint(len(totals), int(managers.n[0]))",
      },
      { content: 'Two regions of three.' },
    ])
    let server = await startServe([], { ...env, ANALYST_BASE_URL: model.url })
    try {
      // Each token sees the sources it may use, with their tables, and no URL.
      const listed = async (headers: Record<string, string>) =>
        (await (await fetch(`${server.url}/api/sources`, { headers })).json()) as SourceInfo[]
      const forA = await listed(A)
      expect(forA.map((s) => [s.name, s.kind, s.default])).toEqual([
        ['shop', 'postgres', false],
        ['local', 'sqlite', false],
      ])
      expect(forA[0]?.description).toContain('orders')
      expect(forA[1]?.description).toContain('regions')
      expect(JSON.stringify(forA)).not.toMatch(/127\.0\.0\.1|postgres:\/\/|pw-of/)
      expect((await listed(B)).map((s) => s.name)).toEqual(['local'])

      // A source a token may not use is one that does not exist for it.
      const create = (headers: Record<string, string>, body: unknown) =>
        fetch(`${server.url}/api/sessions`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      const refused = await create(B, { sources: ['shop'] })
      expect(refused.status).toBe(404)
      expect(JSON.stringify(await refused.json())).toContain('There is no source named \\"shop\\"')
      expect((await create(A, { sources: ['nope'] })).status).toBe(404)
      expect(((await (await create(A, {})).json()) as { sources: string[] }).sources).toEqual([])

      const made = await create(A, { sources: ['shop', 'local'] })
      expect(made.status).toBe(201)
      const { id, sources } = (await made.json()) as { id: string; sources: string[] }
      expect(sources).toEqual(['shop', 'local'])

      const events = await askOverSse(server.url, id, 'Totals by region?', A)
      expect(events.at(-1)?.data).toMatchObject({
        type: 'done',
        result: { answer: 'North 14.75, south 20.' },
      })
      const detail = (await (
        await fetch(`${server.url}/api/sessions/${id}`, { headers: A })
      ).json()) as SessionDetail
      expect(detail.sources).toEqual(['shop', 'local'])
      const step = detail.runs[0]?.steps[0]
      expect(step?.stdout).toBe("{'region': ['north', 'south'], 'total': [14.75, 20.0], 'n': [2, 1]}\n")
      expect(step?.queries).toMatchObject([{ source: 'shop', rows: 2 }])
      expect(step?.queries?.[0]?.query).toContain('GROUP BY region')
      // Another token does not see the session at all.
      expect((await fetch(`${server.url}/api/sessions/${id}`, { headers: B })).status).toBe(404)

      // A restart: the session's first cell runs again against the same sources.
      server.child.kill('SIGTERM')
      expect(await exited(server.child)).toBe(0)
      server = await startServe([], { ...env, ANALYST_BASE_URL: model.url })
      const again = await askOverSse(server.url, id, 'How many regions have managers?', A)
      expect(again.at(-1)?.data).toMatchObject({ type: 'done', result: { answer: 'Two regions of three.' } })
      const after = (await (
        await fetch(`${server.url}/api/sessions/${id}`, { headers: A })
      ).json()) as SessionDetail
      expect(after.runs[1]?.steps[0]?.stdout).toBe('2 3\n')

      // The password is in no answer, export or stored byte.
      const exports = await Promise.all(
        ['py', 'ipynb', 'html'].map(async (format) =>
          (await fetch(`${server.url}/api/sessions/${id}/export?format=${format}`, { headers: A })).text(),
        ),
      )
      for (const text of [JSON.stringify(after), ...exports]) expect(text).not.toContain(PASSWORD)
      for (const bytes of filesUnder(home)) expect(bytes.includes(PASSWORD)).toBe(false)

      // The script re-runs the analysis here, its sql() reaching the sources by URLs the reader sets.
      const [script, notebook, report] = exports as [string, string, string]
      expect(script).toContain('ANALYST_SOURCE_SHOP=postgres://USER@HOST/DB')
      writeFileSync(join(dir, 'analysis.py'), script)
      const rerun = execFileSync('/usr/bin/python3', [join(dir, 'analysis.py')], {
        cwd: dir,
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH ?? '',
          ANALYST_SOURCE_SHOP: `postgres://analyst_ro@127.0.0.1:${cluster.port}/${database}`,
          PGPASSWORD: PASSWORD,
          ANALYST_SOURCE_LOCAL: `sqlite:${join(dir, 'local.db')}`,
        },
      })
      expect(rerun).toBe(`${step?.stdout}2 3\n`)
      // Without a source's URL it says which variable to set.
      const unset = (() => {
        try {
          execFileSync('/usr/bin/python3', [join(dir, 'analysis.py')], {
            cwd: dir,
            encoding: 'utf8',
            stdio: 'pipe',
          })
          return ''
        } catch (error) {
          return String((error as { stderr: string }).stderr)
        }
      })()
      expect(unset).toContain('Set ANALYST_SOURCE_SHOP to the URL of the source')
      // The notebook and the report show each query with its source and rows.
      const cells = (JSON.parse(notebook) as { cells: { source: string[] }[] }).cells.map((c) =>
        c.source.join(''),
      )
      expect(cells.some((c) => c.includes('sql() on shop: 2 rows in') && c.includes('GROUP BY region'))).toBe(
        true,
      )
      expect(report).toContain('sql() on local: 1 row in')
    } finally {
      server.child.kill('SIGTERM')
      await exited(server.child)
      await model.close()
    }
  }, 240_000)

  it('on the Jupyter engine too: a session over a source, its cells replayed with sql() after a restart', async () => {
    const jupyter = await startJupyterServer()
    const model = await startFakeOpenAI([
      {
        code: "regions = sql('SELECT name FROM regions ORDER BY name', source='local')\nprint(len(regions))",
      },
      { content: 'Three regions.' },
      { code: "print(', '.join(regions.name))" },
      { content: 'East, north and south.' },
    ])
    const jupyterEnv = {
      ...env,
      ANALYST_HOME: join(dir, 'home-jupyter'),
      ANALYST_BASE_URL: model.url,
      ANALYST_SANDBOX: 'jupyter',
      ANALYST_JUPYTER_URL: jupyter.url,
      ANALYST_JUPYTER_TOKEN: jupyter.token,
    }
    let server = await startServe([], jupyterEnv)
    try {
      const made = await fetch(`${server.url}/api/sessions`, {
        method: 'POST',
        headers: { ...B, 'content-type': 'application/json' },
        body: JSON.stringify({ sources: ['local'] }),
      })
      const { id } = (await made.json()) as { id: string }
      const first = await askOverSse(server.url, id, 'How many regions?', B)
      expect(first.at(-1)?.data).toMatchObject({ type: 'done', result: { answer: 'Three regions.' } })
      server.child.kill('SIGTERM')
      expect(await exited(server.child)).toBe(0)
      server = await startServe([], jupyterEnv)
      const again = await askOverSse(server.url, id, 'Which ones?', B)
      expect(again.at(-1)?.data).toMatchObject({ type: 'done', result: { answer: 'East, north and south.' } })
      const detail = (await (
        await fetch(`${server.url}/api/sessions/${id}`, { headers: B })
      ).json()) as SessionDetail
      expect(detail.runs[1]?.steps[0]?.stdout).toBe('east, north, south\n')
    } finally {
      server.child.kill('SIGTERM')
      await exited(server.child)
      await model.close()
      await jupyter.stop()
    }
  }, 240_000)

  it('says at start which source cannot be reached or has a role that can write, and still serves the others', async () => {
    const broken = join(dir, 'broken.json')
    writeFileSync(
      broken,
      JSON.stringify({
        gone: {
          url: `postgres://analyst_ro@127.0.0.1:${cluster.port}/no_such_db`,
          passwordEnv: 'SHOP_PASSWORD',
        },
        local: { url: `sqlite:${join(dir, 'local.db')}` },
        // The cluster's superuser, as an admin might give by mistake.
        admin: { url: cluster.url(database) },
      }),
    )
    const server = await startServe([], { ...env, ANALYST_SOURCES: broken, ANALYST_HOME: join(dir, 'home2') })
    try {
      const listed = (await (await fetch(`${server.url}/api/sources`, { headers: A })).json()) as SourceInfo[]
      expect(listed.find((s) => s.name === 'gone')?.error).toMatch(/no_such_db/)
      expect(listed.find((s) => s.name === 'local')?.description).toContain('regions')
      const deadline = Date.now() + 30_000
      while (!server.stderr().includes('source gone') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100))
      expect(server.stderr()).toMatch(/warning: source gone: .*no_such_db/)
      while (!server.stderr().includes('source admin') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100))
      expect(server.stderr()).toMatch(/warning: source admin: The role of source "admin" can change data/)
      expect(server.stderr()).not.toContain(PASSWORD)
    } finally {
      server.child.kill('SIGTERM')
      await exited(server.child)
    }
  }, 120_000)

  it('refuses a sources file it cannot read, with what to fix, before it listens', async () => {
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ shop: { url: 'postgres://x@h/db', passwordEnv: 'UNSET_PW' } }),
    )
    const failed = await startServe([], { ...env, ANALYST_SOURCES: join(dir, 'bad.json') }).then(
      () => 'started',
      (error: Error) => error.message,
    )
    expect(failed).toMatch(/serve exited 2: .*source "shop": UNSET_PW is not set/s)
    expect(failed).toMatch(/Set UNSET_PW in the environment/)
    expect(failed).not.toMatch(/\n\s+at /) // no stack trace
  })
})
