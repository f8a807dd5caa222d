/**
 * `analyst eval --data`: a benchmark whose questions are about a database, through the built
 * command, the fake OpenAI-compatible model and real sandboxes: each question's code reaches the
 * SQLite file with sql(), and the answer is scored as usual. A wrong source is said before the run.
 */
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lastObservation, startFakeOpenAI } from '../support/fake-openai.js'
import { makeSet } from './support.js'

const BIN = resolve('dist/cli/bin.js')
let dir: string
let set: { dir: string; remove(): void }

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
          ANALYST_HOME: join(dir, 'home'),
          NO_COLOR: '1',
          ...env,
        },
        timeout: 180_000,
      },
      (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-eval-sources-'))
  execFileSync('/usr/bin/python3', [
    '-c',
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE orders (id INTEGER PRIMARY KEY, amount REAL)'); c.executemany('INSERT INTO orders VALUES (?, ?)', [(1, 10), (2, 5.5), (3, 2)]); c.commit()",
    join(dir, 'shop.db'),
  ])
  set = makeSet([
    {
      id: 0,
      question: 'How many orders are over 3?',
      concepts: ['Summary Statistics'],
      constraints: '',
      format: '@n[value] where value is a whole number.',
      file_name: 'people.csv',
      level: 'easy',
      answers: [['n', '2']],
    },
  ])
})
afterAll(() => {
  set.remove()
  rmSync(dir, { recursive: true, force: true })
})

describe('analyst eval --data', () => {
  it("gives every question's sql() the source, and scores the answer it backs", async () => {
    const server = await startFakeOpenAI([
      { code: "print(int(sql('SELECT COUNT(*) AS n FROM orders WHERE amount > 3').n[0]))" },
      (request) => ({ content: `Counted in SQL.\n@n[${lastObservation(request).match(/\d+/)?.[0]}]` }),
    ])
    try {
      const { code, stdout, stderr } = await analyst(
        ['eval', set.dir, '--json', '--data', 'shop=sqlite:shop.db'],
        {
          ANALYST_MODEL: 'openai-compatible:fake',
          ANALYST_BASE_URL: server.url,
        },
      )
      expect(code, stderr).toBe(0)
      const report = JSON.parse(stdout) as { results: Array<{ correct: boolean }> }
      expect(report.results.map((r) => r.correct)).toEqual([true])
    } finally {
      await server.close()
    }
  }, 240_000)

  it('says what is wrong with a source before any question is asked', async () => {
    const { code, stderr } = await analyst(['eval', set.dir, '--data', 'sqlite:missing.db'], {
      ANALYST_MODEL: 'openai-compatible:fake',
      ANALYST_BASE_URL: 'http://127.0.0.1:9/v1',
    })
    expect(code).toBe(2)
    expect(stderr).toMatch(/missing\.db/)
    expect(stderr).not.toMatch(/Eval run /)
    expect(stderr).not.toMatch(/\n\s+at /)
  })
})
