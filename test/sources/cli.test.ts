/**
 * `--data` with databases and large files, through the built command: `analyst run` and
 * `analyst ask` (a fake OpenAI-compatible model on 127.0.0.1), a real SQLite file, a real jail.
 */
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lastObservation, startFakeOpenAI } from '../support/fake-openai.js'

const BIN = resolve('dist/cli/bin.js')
let dir: string

function analyst(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, NO_COLOR: '1', ...env }, timeout: 120_000 },
      (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-sources-cli-'))
  execFileSync('/usr/bin/python3', [
    '-c',
    [
      'import sqlite3, sys',
      'c = sqlite3.connect(sys.argv[1])',
      "c.execute('CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL)')",
      "c.executemany('INSERT INTO orders VALUES (?, ?, ?)', [(1, 'north', 10), (2, 'south', 5.5), (3, 'north', 2)])",
      'c.commit()',
    ].join('\n'),
    join(dir, 'shop.db'),
  ])
  writeFileSync(
    join(dir, 'query.py'),
    "print(sql('SELECT region, SUM(amount) AS total FROM orders GROUP BY region ORDER BY region').to_dict('list'))\n",
  )
  writeFileSync(join(dir, 'events.csv'), 'kind,n\na,1\nb,2\na,3\n')
  writeFileSync(
    join(dir, 'big.py'),
    "print(sql('SELECT kind, SUM(n) AS n FROM events GROUP BY kind ORDER BY kind').n.tolist())\nimport os\nprint(os.listdir('data'))\n",
  )
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('--data with sources', () => {
  it('analyst run queries a database given by URL', async () => {
    const { code, stdout, stderr } = await analyst(['run', 'query.py', '--data', 'sqlite:shop.db'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toBe("{'region': ['north', 'south'], 'total': [12.0, 5.5]}\n")
  })

  it('a file over the size threshold stays on the host: sql() reads it, data/ does not have it', async () => {
    const { code, stdout } = await analyst(['run', 'big.py', '--data', 'events.csv'], {
      ANALYST_SQL_ONLY_BYTES: '10',
    })
    expect(code).toBe(0)
    expect(stdout).toBe('[4, 2]\n[]\n')
  })

  it('a source that cannot be opened is said before anything runs, with no stack trace', async () => {
    const { code, stderr } = await analyst(['run', 'query.py', '--data', 'sqlite:missing.db'])
    expect(code).toBe(2)
    expect(stderr).toMatch(/^analyst: .*missing\.db/)
    expect(stderr).not.toMatch(/\n\s+at /)
  })

  it('analyst ask answers with sql(), the database described in the prompt', async () => {
    const server = await startFakeOpenAI([
      {
        code: "totals = sql('SELECT region, SUM(amount) AS total FROM orders GROUP BY region ORDER BY total DESC')\nprint(totals.to_string(index=False))",
      },
      (request) => ({ content: `By region:\n${lastObservation(request)}` }),
    ])
    try {
      const { code, stdout } = await analyst(
        ['ask', 'Which region sells most?', '--data', 'shop=sqlite:shop.db', '--json'],
        {
          ANALYST_MODEL: 'openai-compatible:fake',
          ANALYST_BASE_URL: server.url,
        },
      )
      expect(code).toBe(0)
      const result = JSON.parse(stdout) as {
        answer: string
        steps: Array<{ execution: { queries: unknown[] } }>
      }
      expect(result.answer).toMatch(/north\s+12\.0/)
      expect(result.steps[0]?.execution.queries).toMatchObject([{ source: 'shop', rows: 2 }])
      const system = JSON.stringify(server.requests[0]?.messages[0]?.content)
      expect(system).toContain('sql(query, source=None, params=None)')
      expect(system).toMatch(/shop/)
      // The tables themselves, with their columns, types, keys and samples.
      expect(system).toContain('Source \\"shop\\" (SQLite), 1 table:')
      expect(system).toContain('orders (table)')
      expect(system).toContain('  - id: INTEGER, primary key; e.g. 1, 2, 3')
      expect(system).toContain('  - region: TEXT; e.g. \\"north\\", \\"south\\"')
    } finally {
      await server.close()
    }
  })

  it('analyst ask shows each query after its step, and analyst show lists them with the SQL', async () => {
    const server = await startFakeOpenAI([
      { code: "n = sql('SELECT COUNT(*) AS n FROM orders WHERE amount > 3').n[0]\nprint(n)" },
      { content: 'Two orders are over 3.' },
    ])
    const env = { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: server.url }
    try {
      const asked = await analyst(['ask', 'How many orders over 3?', '--data', 'shop=sqlite:shop.db'], env)
      expect(asked.code).toBe(0)
      expect(asked.stdout).toMatch(/\[sql\(\) on shop: 1 row in \d+ ms\]/)
      const sessions = JSON.parse((await analyst(['history', '--json'])).stdout) as Array<{
        id: string
        title: string
      }>
      const id = sessions.find((s) => s.title.includes('orders over 3'))?.id as string
      const shown = await analyst(['show', id])
      expect(shown.code).toBe(0)
      expect(shown.stdout).toMatch(
        /step 1 · ok[^\n]*\n\s+sql\(\) on shop: 1 row in \d+ ms\n\s+SELECT COUNT\(\*\) AS n FROM orders WHERE amount > 3/,
      )
    } finally {
      await server.close()
    }
  })
})
