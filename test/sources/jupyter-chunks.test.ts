/**
 * The Jupyter engine's answers to marked stdin prompts (src/sandbox/jupyter/questions.ts), against
 * a real SQLite source: a malformed prompt and an unknown query get an error the kernel can raise,
 * other prompts are left alone, and a large result comes in chunks of at most CHUNK_BYTES that
 * the kernel asks for, the source read no further ahead than the chunk held; a row too large for
 * any message is refused with what to do.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunningCell } from '../../src/sandbox/host-questions.js'
import { CellQuestions, CHUNK_BYTES, QUESTION_MARKER } from '../../src/sandbox/jupyter/questions.js'
import type { QueryRecord } from '../../src/sandbox/query.js'
import type { Sources } from '../../src/sources/sources.js'
import { openSources } from './support.js'

let dir: string
let sources: Sources
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-jupyter-chunks-'))
  const path = join(dir, 'wide.db')
  const db = new Database(path)
  db.exec('CREATE TABLE t (id INTEGER, s TEXT); CREATE TABLE huge (id INTEGER, s TEXT)')
  db.prepare('INSERT INTO huge VALUES (?, ?)').run(1, 'y'.repeat(9 * 1024 * 1024))
  const insert = db.prepare('INSERT INTO t VALUES (?, ?)')
  db.transaction(() => {
    for (let i = 0; i < 60_000; i++) insert.run(i, 'x'.repeat(200))
  })()
  db.close()
  sources = await openSources([`sqlite:${path}`])
})
afterAll(async () => {
  await sources?.close()
  rmSync(dir, { recursive: true, force: true })
})

function cell() {
  const records: QueryRecord[] = []
  const running: RunningCell = {
    controller: new AbortController(),
    deadline: Date.now() + 60_000,
    onEvent: (event) => {
      if (event.type === 'query') records.push(event.record)
    },
    queries: new Map(),
    answering: new Set(),
  }
  return { running, records, questions: new CellQuestions(sources, running) }
}

/** An answer as the kernel reads it. */
interface Answer {
  type: string
  id?: string
  rows?: number
  values?: number[][]
  message?: string
}

/** Asks as the prelude does, and waits for the host's reply. */
function ask(questions: CellQuestions, message: unknown): Promise<{ text: string; answers: Answer[] }> {
  return new Promise((resolve) => {
    const prompt = QUESTION_MARKER + (typeof message === 'string' ? message : JSON.stringify(message))
    questions.answer(prompt, (text) => resolve({ text, answers: JSON.parse(text) }))
  })
}

describe('questions over the stdin channel', () => {
  it('answers a malformed question and an unknown query with an error, and leaves other prompts alone', async () => {
    const { questions } = cell()
    expect((await ask(questions, '{not json')).answers).toEqual([
      { type: 'query-error', id: '', name: 'QueryError', message: 'malformed question' },
    ])
    expect((await ask(questions, { type: 'query-more', id: 'j9' })).answers).toMatchObject([
      { type: 'query-error', id: 'j9', message: 'this query has ended' },
    ])
    let replied = false
    questions.answer('Your name? ', () => {
      replied = true
    })
    expect(replied).toBe(false)
  })

  it('sends a large result in chunks the kernel asks for, each within the limit, every row once', async () => {
    const { questions, running, records } = cell()
    let reply = await ask(questions, { type: 'query', id: 'j1', query: 'SELECT id, s FROM t ORDER BY id' })
    const ids: number[] = []
    let chunks = 0
    let last: Answer | undefined
    for (;;) {
      chunks++
      expect(reply.text.length).toBeLessThanOrEqual(CHUNK_BYTES)
      for (const answer of reply.answers) {
        if (answer.type === 'query-rows') ids.push(...(answer.values?.[0] ?? []))
        last = answer
      }
      if (last?.type === 'query-end' || last?.type === 'query-error') break
      reply = await ask(questions, { type: 'query-more', id: 'j1' })
    }
    expect(last).toMatchObject({ type: 'query-end', rows: 60_000 })
    expect(chunks).toBeGreaterThan(5) // about 13 MB
    expect(ids).toEqual(Array.from({ length: 60_000 }, (_, i) => i))
    await Promise.all(running.answering)
    expect(records).toMatchObject([{ rows: 60_000 }])
  })

  it('refuses a row too large for one message with what to do, and stops its query', async () => {
    const { questions, running, records } = cell()
    const reply = await ask(questions, { type: 'query', id: 'j1', query: 'SELECT id, s FROM huge' })
    expect(reply.text.length).toBeLessThan(CHUNK_BYTES)
    expect(reply.answers.at(-1)).toMatchObject({
      type: 'query-error',
      message: expect.stringMatching(/over 8 MiB.*leave out or cut the widest column/),
    })
    await Promise.all(running.answering)
    expect(records).toHaveLength(1)
    expect(records[0]?.error).toBeDefined()
  })

  it('lets the source go when the cell ends with a query still held', async () => {
    const { questions, running, records } = cell()
    const first = await ask(questions, { type: 'query', id: 'j1', query: 'SELECT id, s FROM t' })
    expect(first.answers.at(-1)?.type).toBe('query-rows')
    // The kernel asks no more (its cell was interrupted); the cell's end must not wait on the source.
    running.controller.abort()
    await Promise.all(running.answering)
    expect(records).toHaveLength(1)
    expect((await ask(questions, { type: 'query-more', id: 'j1' })).answers[0]?.type).toBe('query-error')
  })
})
