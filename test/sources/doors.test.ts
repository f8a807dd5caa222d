/**
 * A PostgreSQL source through the front doors, end to end: the built `analyst` command with a fake
 * OpenAI-compatible model on 127.0.0.1, a real PostgreSQL with a password-protected read-only role,
 * a real jail. `ask` answers a question over two joined tables with sql(), in the numbers Debian's
 * psql prints for the same query; a wrong password and a bad URL are refused before any model call;
 * `chat` and `serve` take `--data URL` too.
 */
import { type ChildProcess, execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AskResult } from '../../src/agent/index.js'
import type { SessionDetail, SourceInfo } from '../../src/server/types.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import { lastObservation, startFakeOpenAI } from '../support/fake-openai.js'
import { startServe } from '../support/serve.js'
import { askOverSse } from '../support/sse.js'

const BIN = resolve('dist/cli/bin.js')
const PASSWORD = 'doors-Pw-5c2e91'
const PSQL = '/usr/bin/psql'
/** The question's SQL: revenue and order count per region, over orders joined to customers. */
const REVENUE =
  'SELECT c.region, count(*) AS orders, sum(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.region ORDER BY c.region'

let dir: string
let cluster: PostgresCluster
let url: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-sources-doors-'))
  cluster = await startPostgres()
  const adminUrl = await cluster.createDatabase()
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`
    CREATE TABLE customers (id int PRIMARY KEY, region text NOT NULL);
    CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers(id), amount numeric(12, 2));
    INSERT INTO customers SELECT g, (ARRAY['north', 'south', 'east', 'west'])[g % 4 + 1] FROM generate_series(1, 37) g;
    INSERT INTO orders SELECT g, g % 37 + 1, round(((g * 7919) % 10007) / 13.0, 2) FROM generate_series(1, 5000) g;
    ANALYZE;
    CREATE ROLE analyst_ro LOGIN PASSWORD '${PASSWORD}';
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst_ro;
  `)
  await admin.end()
  await cluster.requirePassword(['analyst_ro'])
  url = `postgres://analyst_ro@127.0.0.1:${cluster.port}/${new URL(adminUrl).pathname.slice(1)}`
}, 120_000)

afterAll(async () => {
  await cluster?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** The built command, without blocking this process (the fake model answers from here). */
function analyst(args: string[], env: Record<string, string> = {}, input = '') {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1', ...env },
        timeout: 120_000,
      },
      (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
    child.stdin?.end(input)
  })
}

/** What psql prints for a query, as CSV, signed in as the source's role. */
async function psql(query: string): Promise<string> {
  const { stdout } = await promisify(execFile)(PSQL, ['-X', '--csv', '-c', query, url], {
    env: { PATH: process.env.PATH ?? '', PGPASSWORD: PASSWORD },
  })
  return stdout
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((done) => child.once('exit', (code) => done(code)))

describe('analyst ask over PostgreSQL', () => {
  it('answers a question over two joined tables with sql(), in the numbers psql prints', async () => {
    const model = await startFakeOpenAI([
      { code: `revenue = sql(${JSON.stringify(REVENUE)})\nprint(revenue.to_csv(index=False), end='')` },
      (request) => ({ content: `Revenue by region:\n${lastObservation(request)}` }),
    ])
    try {
      const { code, stdout, stderr } = await analyst(
        ['ask', 'Which region brings the most revenue?', '--data', `shop=${url}`, '--json'],
        { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: model.url, PGPASSWORD: PASSWORD },
      )
      expect(code, stderr).toBe(0)
      const result = JSON.parse(stdout) as AskResult
      const expected = await psql(REVENUE)
      // Four regions, and sums that are not round: a wrong join or a lost decimal shows.
      expect(expected.trim().split('\n')).toHaveLength(5)
      expect(expected).toMatch(/\d+\.\d{2}\n/)
      const step = result.steps[0]
      expect(step?.execution?.error).toBeUndefined()
      expect(step?.execution?.logs.stdout.join('')).toBe(expected)
      expect(step?.execution?.queries).toMatchObject([{ source: 'shop', rows: 4, query: REVENUE }])
      for (const line of expected.trim().split('\n')) expect(result.answer).toContain(line)
      expect(result.unsupportedNumbers).toEqual([])
      expect(stdout).not.toContain(PASSWORD)
      // The model saw both tables and the key that joins them, not the password.
      const system = JSON.stringify(model.requests[0]?.messages[0]?.content)
      expect(system).toContain('Source \\"shop\\" (PostgreSQL), 2 tables:')
      expect(system).toContain('customers (table, ~37 rows)')
      expect(system).toContain('orders (table, ~5,000 rows)')
      expect(system).toContain('  - customer_id: integer, → customers.id')
      expect(JSON.stringify(model.requests)).not.toContain(PASSWORD)
    } finally {
      await model.close()
    }
  }, 120_000)
})

describe('a source that cannot be opened, before any model call', () => {
  const free = () =>
    new Promise<number>((done) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => done(port))
      })
    })

  for (const command of ['ask', 'chat'] as const) {
    it(`analyst ${command}: a wrong password, a bad URL, a server not there, each with what to fix`, async () => {
      const model = await startFakeOpenAI([{ content: 'The model must not be called.' }])
      const env = { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: model.url }
      const wrong = 'Wrong-Pw-0a7d33'
      const cases: Array<[string, Record<string, string>, RegExp]> = [
        [url, { PGPASSWORD: wrong }, /refused the password/],
        [url.replace('analyst_ro@', `analyst_ro:${wrong}@`), {}, /refused the password/],
        [url.replace(`:${cluster.port}/`, ':port/'), {}, /Not a valid database URL/],
        [url.replace(/\/[^/]+$/, '/no_such_db'), { PGPASSWORD: PASSWORD }, /no such database/],
        [`postgres://analyst_ro@127.0.0.1:${await free()}/shop`, {}, /cannot be reached/],
        // biome-ignore lint/suspicious/noTemplateCurlyInString: ${VAR} is the syntax of source URLs
        ['postgres://analyst_ro:${UNSET_SHOP_PW}@127.0.0.1/shop', {}, /UNSET_SHOP_PW.*not set/],
      ]
      try {
        // chat opens its sources through the same code as ask: two cases show it.
        const tried = command === 'ask' ? cases : [cases[0], cases[5]].filter((c) => c !== undefined)
        const runs = tried.map(async ([data, extra, message]) => {
          const args = command === 'ask' ? ['ask', 'Revenue?', '--data', data] : ['chat', '--data', data]
          const { code, stdout, stderr } = await analyst(args, { ...env, ...extra }, 'Revenue?\n')
          expect(code, `${data}: ${stderr}`).toBe(2)
          expect(stderr, data).toMatch(/^analyst: /)
          expect(stderr, data).toMatch(message)
          expect(stderr, data).toMatch(/\n {2}\S/) // a second line that says what to do
          expect(stderr, data).not.toMatch(/\n\s+at /)
          expect(`${stdout}${stderr}`, data).not.toContain(wrong)
          expect(`${stdout}${stderr}`, data).not.toContain(PASSWORD)
        })
        await Promise.all(runs)
        expect(model.requests).toHaveLength(0)
      } finally {
        await model.close()
      }
    }, 240_000)
  }
})

describe('chat and serve with --data URL', () => {
  it('analyst chat answers each line of stdin with sql(), the variables of earlier questions kept', async () => {
    const model = await startFakeOpenAI([
      { code: `revenue = sql(${JSON.stringify(REVENUE)})\nprint(len(revenue))` },
      { content: 'Four regions.' },
      { code: "print(revenue.sort_values('revenue').region.iloc[-1])" },
      (request) => ({ content: `The most: ${lastObservation(request).trim()}.` }),
    ])
    try {
      const { code, stdout, stderr } = await analyst(
        ['chat', '--data', url, '--json'],
        { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: model.url, PGPASSWORD: PASSWORD },
        'How many regions buy?\nWhich brings the most revenue?\n',
      )
      expect(code, stderr).toBe(0)
      const answers = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as AskResult)
      const top = (await psql(`${REVENUE.replace(/ORDER BY .*/, 'ORDER BY revenue DESC LIMIT 1')}`))
        .split('\n')[1]
        ?.split(',')[0]
      expect(answers.map((a) => a.answer)).toEqual(['Four regions.', expect.stringContaining(`${top}`)])
      expect(answers[1]?.steps[0]?.execution?.logs.stdout).toEqual([`${top}\n`])
      expect(answers[0]?.sessionId).toBe(answers[1]?.sessionId)
    } finally {
      await model.close()
    }
  }, 120_000)

  it('analyst serve: a session made with no sources gets the --data one, and queries it', async () => {
    const model = await startFakeOpenAI([
      { code: `print(sql(${JSON.stringify(REVENUE)}).to_csv(index=False), end='')` },
      { content: 'Done.' },
    ])
    const server = await startServe(['--data', `shop=${url}`], {
      PATH: process.env.PATH ?? '',
      ANALYST_HOME: join(dir, 'serve-home'),
      ANALYST_MODEL: 'openai-compatible:fake',
      ANALYST_BASE_URL: model.url,
      PGPASSWORD: PASSWORD,
      NO_COLOR: '1',
    })
    try {
      const listed = (await (await fetch(`${server.url}/api/sources`)).json()) as SourceInfo[]
      expect(listed.map((s) => [s.name, s.kind, s.default])).toEqual([['shop', 'postgres', true]])
      expect(JSON.stringify(listed)).not.toMatch(/127\.0\.0\.1|postgres:\/\/|Pw-/)
      const made = await fetch(`${server.url}/api/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
      expect(made.status).toBe(201)
      const { id, sources } = (await made.json()) as { id: string; sources: string[] }
      expect(sources).toEqual(['shop'])
      const events = await askOverSse(server.url, id, 'Revenue by region?')
      expect(events.at(-1)?.data).toMatchObject({ type: 'done', result: { answer: 'Done.' } })
      const detail = (await (await fetch(`${server.url}/api/sessions/${id}`)).json()) as SessionDetail
      const step = detail.runs[0]?.steps[0]
      expect(step?.stdout).toBe(await psql(REVENUE))
      expect(step?.queries).toMatchObject([{ source: 'shop', rows: 4 }])
      expect(JSON.stringify(detail)).not.toContain(PASSWORD)
      expect(server.stderr()).not.toContain(PASSWORD)
    } finally {
      server.child.kill('SIGTERM')
      await exited(server.child)
      await model.close()
    }
  }, 120_000)
})
