/**
 * sql() on the other engines. Modal: the official `modal` SDK against the fake Modal on 127.0.0.1
 * (src/test/support/modal-control-plane.ts, Modal's gRPC protocol, each exec a local jail), the
 * kernel's questions carried over Analyst's own protocol, with a real PostgreSQL: a join answered in
 * psql's numbers, a refused write, a query past the cell's timeout ended on the server. E2B's cloud
 * has no channel back to the host: the capability is declared missing, and a sandbox with sources
 * is refused with what to use instead, before E2B is called.
 */
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { missingCapabilities } from '../../src/sandbox/capabilities.js'
import { E2B_CAPABILITIES, E2BProvider } from '../../src/sandbox/e2b/index.js'
import { Sandbox } from '../../src/sandbox/index.js'
import { MODAL_CAPABILITIES, ModalProvider } from '../../src/sandbox/modal/index.js'
import { type FakeModal, startFakeModal } from '../../src/test/support/modal-control-plane.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { startFakeOpenAI } from '../support/fake-openai.js'
import { waitFor } from '../support/wait.js'
import { openSources } from './support.js'

const JOIN =
  'SELECT c.segment, count(*) AS orders, sum(o.amount) AS total FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.segment ORDER BY c.segment'

describe('sql() on the Modal engine', () => {
  let fake: FakeModal
  let cluster: SharedPostgres
  let url: string
  let admin: pg.Client
  let sandbox: Sandbox
  let sources: Awaited<ReturnType<typeof openSources>>

  beforeAll(async () => {
    ;[fake, cluster] = await Promise.all([startFakeModal(), sharedPostgres()])
    // The SDK reads its server from the environment when a client is made (at the first create).
    process.env.MODAL_SERVER_URL = fake.url
    url = await cluster.createDatabase()
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`
      CREATE TABLE customers (id int PRIMARY KEY, segment text NOT NULL);
      CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers(id), amount numeric(10, 2));
      INSERT INTO customers SELECT g, (ARRAY['retail', 'corporate', 'public'])[g % 3 + 1] FROM generate_series(1, 20) g;
      INSERT INTO orders SELECT g, g % 20 + 1, round(((g * 613) % 997) / 7.0, 2) FROM generate_series(1, 900) g;
    `)
    sources = await openSources([`shop=${url}`])
    const provider = new ModalProvider({ tokenId: fake.tokenId, tokenSecret: fake.tokenSecret })
    sandbox = await Sandbox.create({ provider, sources })
  }, 180_000)

  afterAll(async () => {
    await sandbox?.kill()
    await sources?.close()
    await admin?.end()
    delete process.env.MODAL_SERVER_URL
    await fake?.close()
  })

  it('declares the capability, and answers a join in the numbers psql prints', async () => {
    expect(MODAL_CAPABILITIES.hostQueries).toBe(true)
    const execution = await sandbox.runCode(
      `print(sql(${JSON.stringify(JOIN)}).to_csv(index=False), end='')`,
      { timeoutMs: 120_000 },
    )
    expect(execution.error).toBeUndefined()
    const { stdout } = await promisify(execFile)('/usr/bin/psql', ['-X', '--csv', '-c', JOIN, url])
    expect(stdout.trim().split('\n')).toHaveLength(4)
    expect(execution.logs.stdout.join('')).toBe(stdout)
    expect(execution.queries).toMatchObject([{ source: 'shop', query: JOIN, rows: 3 }])
    // The sandbox has no network: the rows came over the kernel's own channel.
    expect(fake.calls.some((call) => call.method === 'SandboxCreateV2')).toBe(true)
  })

  it('refuses a write from the cell as a QueryError, and the data is unchanged', async () => {
    const refused = await sandbox.runCode("sql('DELETE FROM orders')")
    expect(refused.error?.name).toBe('QueryError')
    expect(refused.error?.value).toMatch(/DELETE is not a query/)
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM orders')
    expect(rows[0].n).toBe(900)
  })

  it('ends a query past the cell timeout on the server, and the next cell runs', async () => {
    const timedOut = await sandbox.runCode("sql('SELECT pg_sleep(60)')", { timeoutMs: 3000 })
    expect(timedOut.error?.name).toBe('TimeoutError')
    expect((await sandbox.runCode('1 + 1', { timeoutMs: 60_000 })).text).toBe('2')
    await waitFor(
      async () =>
        (
          await admin.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND datname = current_database() AND query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()",
          )
        ).rows[0].n === 0,
      { what: 'no pg_sleep(60) left on the server' },
    )
  })
})

describe('sources on the E2B engine', () => {
  it('declares the capability missing and refuses a sandbox with sources, saying what to use, before calling E2B', async () => {
    expect(E2B_CAPABILITIES.hostQueries).toBe(false)
    expect(missingCapabilities(E2B_CAPABILITIES)).toContain(
      "code cannot query the host's data sources (sql())",
    )
    // Nothing listens here: a call to E2B would fail otherwise, and differently.
    const provider = new E2BProvider({
      apiKey: 'e2b_never_used',
      apiUrl: 'http://127.0.0.1:9',
      sandboxUrl: 'http://127.0.0.1:9',
    })
    const failure = await Sandbox.create({ provider, sources: { shop: 'sqlite:never-opened.db' } }).then(
      () => undefined,
      (error: Error & { hint?: string }) => error,
    )
    expect(failure?.name).toBe('InvalidArgumentError')
    expect(failure?.message).toBe("The e2b engine cannot give code the host's data sources (sql())")
    expect(failure?.hint).toMatch(/no channel back to the host.*local, Modal or Jupyter engine/)
  })

  it('analyst ask --sandbox e2b with a database says so, exit 2, no stack trace, no model call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-sources-e2b-'))
    const model = await startFakeOpenAI([{ content: 'The model must not be called.' }])
    try {
      execFileSync('/usr/bin/python3', [
        '-c',
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE t (n)'); c.commit()",
        join(dir, 'shop.db'),
      ])
      const { code, stderr } = await new Promise<{ code: number; stderr: string }>((done) =>
        execFile(
          process.execPath,
          [resolve('dist/cli/bin.js'), 'ask', 'How many?', '--sandbox', 'e2b', '--data', 'sqlite:shop.db'],
          {
            cwd: dir,
            timeout: 120_000,
            env: {
              PATH: process.env.PATH ?? '',
              HOME: dir,
              NO_COLOR: '1',
              ANALYST_MODEL: 'openai-compatible:fake',
              ANALYST_BASE_URL: model.url,
              E2B_API_KEY: 'e2b_never_used',
              E2B_API_URL: 'http://127.0.0.1:9',
              E2B_SANDBOX_URL: 'http://127.0.0.1:9',
            },
          },
          (error, _stdout, stderr) =>
            done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stderr }),
        ),
      )
      expect(code).toBe(2)
      expect(stderr).toContain("analyst: The e2b engine cannot give code the host's data sources (sql())")
      expect(stderr).toMatch(/Use the local, Modal or Jupyter engine/)
      expect(stderr).not.toMatch(/\n\s+at /)
      expect(model.requests).toHaveLength(0)
    } finally {
      await model.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 150_000)
})
