/** `analyst run`, `ask` and `doctor` with `--sandbox jupyter`: the built command against a real Jupyter Server. */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningJupyter, startJupyterServer } from '../../src/test/support/jupyter-server.js'
import { sharedPostgres } from '../../src/test/support/shared-postgres.js'

const BIN = resolve('dist/cli/bin.js')
const SALES = resolve('examples/sales.csv')
let dir: string
let server: RunningJupyter

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-cli-jupyter-'))
  server = await startJupyterServer()
}, 90_000)
afterAll(async () => {
  await server?.stop()
  rmSync(dir, { recursive: true, force: true })
})

function analyst(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: dir,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: dir,
          NO_COLOR: '1',
          ANALYST_JUPYTER_URL: server.url,
          ANALYST_JUPYTER_TOKEN: server.token,
          ...env,
        },
        timeout: 120_000,
      },
      (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('the command line with --sandbox jupyter', () => {
  it('runs a script on the Jupyter server, saves its chart and files, and says what it cannot enforce', async () => {
    const { code, stdout, stderr } = await analyst([
      'run',
      '--sandbox',
      'jupyter',
      resolve('examples/analysis.py'),
      '--data',
      SALES,
      '--json',
    ])
    expect(code).toBe(0)
    const cell = JSON.parse(stdout.trim().split('\n')[0] ?? '{}')
    expect(cell.error).toBeUndefined()
    expect(cell.logs.stdout.join('')).toContain('400 orders')
    expect(cell.results.some((result: { png?: string }) => result.png)).toBe(true)
    expect(cell.artifacts.map((a: { name: string }) => a.name).sort()).toEqual([
      'revenue_by_month.png',
      'segments.csv',
    ])
    for (const artifact of cell.artifacts) expect(existsSync(artifact.savedPath)).toBe(true)
    expect(stderr).toMatch(/isolated by it, not by Analyst: network access is not blocked/)
    expect(await server.kernelIds()).toEqual([])
  })

  it('queries a PostgreSQL source from a script with sql(), the host holding the connection', async () => {
    const cluster = await sharedPostgres()
    const url = await cluster.createDatabase()
    const client = new pg.Client(url)
    await client.connect()
    await client.query(
      'CREATE TABLE orders (id int, total numeric(10,2)); INSERT INTO orders VALUES (1, 2.50), (2, 4.00)',
    )
    await client.end()
    const script = join(dir, 'orders.py')
    writeFileSync(
      script,
      "df = sql('SELECT count(*) AS n, sum(total) AS s FROM orders')\nprint(int(df.n[0]), df.s[0])\n",
    )
    const { code, stdout, stderr } = await analyst([
      'run',
      '--sandbox',
      'jupyter',
      script,
      '--data',
      `shop=${url}`,
      '--json',
    ])
    expect(code).toBe(0)
    const cell = JSON.parse(stdout.trim().split('\n')[0] ?? '{}')
    expect(cell.error).toBeUndefined()
    expect(cell.logs.stdout.join('')).toBe('2 6.50\n')
    expect(cell.queries).toMatchObject([
      { source: 'shop', rows: 1, query: expect.stringContaining('FROM orders') },
    ])
    // The library's warnings read as the command's own.
    expect(stderr).toMatch(/^analyst: warning: Sandboxes run on the Jupyter server/m)
    expect(stderr).not.toMatch(/\(node:\d+\)|--trace-warnings/)
    expect(await server.kernelIds()).toEqual([])
  })

  it('answers a question with a scripted model (recorded replies) through ANALYST_SANDBOX=jupyter', async () => {
    const { code, stdout } = await analyst(
      [
        'ask',
        'Average order value by segment?',
        '--data',
        SALES,
        '--replay',
        resolve('examples/demo-replies.json'),
      ],
      { ANALYST_SANDBOX: 'jupyter' },
    )
    expect(code).toBe(0)
    expect(stdout).toContain('813.05')
    expect(await server.kernelIds()).toEqual([])
    // The run's workspace is gone from the server's root.
    expect(readdirSync(server.root)).toEqual([])
  })

  it('doctor checks the engine, and says how to fix a wrong token', async () => {
    const good = await analyst(['doctor', '--sandbox', 'jupyter', '--json'])
    expect(good.code).toBe(0)
    const checks = JSON.parse(good.stdout).checks as Array<{ name: string; ok: boolean; detail: string }>
    expect(checks.find((check) => check.name === 'jupyter server')?.detail).toMatch(/Jupyter Server 1\.\d+/)
    expect(checks.find((check) => check.name === 'jupyter kernel')?.ok).toBe(true)
    expect(checks.find((check) => check.name === 'isolation')).toMatchObject({ ok: false })
    const bad = await analyst(['doctor', '--sandbox', 'jupyter'], { ANALYST_JUPYTER_TOKEN: 'wrong' })
    expect(bad.code).toBe(1)
    expect(bad.stdout).toMatch(/refused the token/)
    expect(bad.stdout).toMatch(/fix: Set ANALYST_JUPYTER_TOKEN/)
    const none = await analyst(['doctor', '--sandbox', 'jupyter'], { ANALYST_JUPYTER_URL: '' })
    expect(none.stdout).toMatch(/ANALYST_JUPYTER_URL is not set/)
    // Three whole doctor runs: over a minute on a loaded machine.
  }, 180_000)

  it('says which kernels exist when --jupyter-kernel names none of them', async () => {
    const { code, stderr } = await analyst([
      'run',
      '--sandbox',
      'jupyter',
      '--jupyter-kernel',
      'nope',
      resolve('examples/analysis.py'),
    ])
    expect(code).toBe(2)
    expect(stderr).toMatch(/no kernel named nope/)
    expect(stderr).toMatch(/python3/)
    expect(stderr).not.toMatch(/\n\s+at /)
  })
})
