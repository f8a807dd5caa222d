/**
 * The prompt's description of a schema over its budget follows each question: the session service
 * describes the sources again before each ask, so the tables that match the new question are the
 * ones given in full (the catalog is cached, so this costs no round trip). A real SQLite file of
 * 300 tables, the real local sandbox and the session service; a scripted model records the prompts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ScriptedModel } from '../../src/models/scripted.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import type { Sources } from '../../src/sources/sources.js'
import { askAll, openTestService, type TestService } from '../support/service.js'
import { openSources } from './support.js'

let dir: string
let sources: Sources
const provider = new LocalProvider({ poolSize: 1 })

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-ranking-'))
  const path = join(dir, 'wide.db')
  const db = new Database(path)
  db.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY, supplier_id INTEGER, amount REAL)')
  db.exec('CREATE TABLE suppliers (id INTEGER PRIMARY KEY, supplier_name TEXT)')
  for (let i = 0; i < 300; i++)
    db.exec(`CREATE TABLE metric_${i} (id INTEGER PRIMARY KEY, reading REAL, taken_at TEXT, sensor TEXT)`)
  db.close()
  sources = await openSources([`sqlite:${path}`])
})
afterAll(async () => {
  await sources?.close()
  await provider.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The system prompt of each call the model got. */
function systemPrompts(model: ScriptedModel): string[] {
  return model.calls.map((call) => JSON.stringify(call.prompt[0]?.content ?? ''))
}

describe('a schema over the prompt budget, in a session', () => {
  let test: TestService
  afterAll(() => test?.close())

  it('gives in full the tables that match each question, the next question its own', async () => {
    const model = new ScriptedModel([{ text: 'Invoices answered.' }, { text: 'Sensors answered.' }])
    test = await openTestService({ provider, model, sandbox: { sources } })
    const { id } = await test.service.createSession()
    await askAll(test.service, id, 'Total invoice amount per supplier?')
    await askAll(test.service, id, 'What do the sensor readings of metric 7 look like?')
    const [first, second] = systemPrompts(model)
    expect(first).toContain('invoices (table)')
    expect(first).not.toContain('metric_7 (table)')
    expect(second).toContain('metric_7 (table)')
    expect(second).not.toContain('invoices (table)')
  })
})
