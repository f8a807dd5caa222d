/**
 * `analyst serve` with the disk under ANALYST_HOME full (a small tmpfs, filled by a file): an
 * upload is refused with 507 and a message (it used to get no answer at all), as the OpenAPI document
 * says, a new session too when SQLite cannot write, a step's file that does not fit is refused for
 * that step and the model is told which and why (its next call's prompt); SQLite's
 * integrity check passes and the sessions read back intact; once space is freed all works again.
 * And a sandbox's own workspace full through E2B's files.write: 507, not a hang. Needs root (mount).
 */
import { execFileSync } from 'node:child_process'
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { ScriptedModel, type ScriptStep } from '../../src/models/scripted.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { openApiDocument } from '../../src/server/openapi.js'
import type { SessionDetail } from '../../src/server/types.js'
import { askOverSse } from '../support/sse.js'

const root = process.getuid?.() === 0
const SALES = readFileSync(resolve('examples/sales.csv'))
/** The sandboxes' workspaces: small, so that E2B's files.write can fill one. */
const WORKSPACE_BYTES = 8 * 1024 ** 2

let home: string
let mounted = false
let server: RunningServer | undefined
const provider = new LocalProvider({ poolSize: 0 })
const script: ScriptStep[] = []

/** Writes a file of zeros until the disk is full; returns its path. */
function fill(dir: string): string {
  const path = join(dir, 'filler')
  const fd = openSync(path, 'w')
  const chunk = Buffer.alloc(256 * 1024)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
  } finally {
    closeSync(fd)
  }
  return path
}

async function call(path: string, init: RequestInit = {}) {
  // A request that gets no answer fails here, not at the test's own timeout.
  const response = await fetch(`${server?.url}${path}`, { ...init, signal: AbortSignal.timeout(30_000) })
  const text = await response.text()
  return { status: response.status, text, json: () => JSON.parse(text) }
}

/** The statuses the OpenAPI document gives an operation. */
function documented(method: string, path: string): string[] {
  const paths = openApiDocument.paths as Record<string, Record<string, { responses?: object }>>
  return Object.keys(paths[path]?.[method]?.responses ?? {})
}

function upload(id: string, name: string, content: Buffer) {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(content)]), name)
  return call(`/api/sessions/${id}/files`, { method: 'POST', body: form })
}

beforeAll(async () => {
  if (!root) return
  home = mkdtempSync(join(tmpdir(), 'analyst-disk-full-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', home])
  mounted = true
  const model = new ScriptedModel(script)
  server = await startServer({
    port: 0,
    home,
    tokens: [],
    provider,
    sandbox: { limits: { workspaceBytes: WORKSPACE_BYTES } },
    model: async () => ({ model, spec: 'scripted:test', provider: 'custom', modelId: 'test', mode: 'tools' }),
  })
}, 120_000)

afterAll(async () => {
  await server?.close()
  await provider.close?.()
  if (mounted) execFileSync('umount', ['-l', home])
  if (home) rmSync(home, { recursive: true, force: true })
})

describe.skipIf(!root)('analyst serve with the disk under ANALYST_HOME full (as root: a tmpfs)', () => {
  it('refuses uploads, sessions and step files with 507 and a message; nothing is corrupted; all works once space is freed', async () => {
    const created = await call('/api/sessions', { method: 'POST', body: '{}' })
    expect(created.status).toBe(201)
    const id = created.json().id as string
    expect((await upload(id, 'sales.csv', SALES)).status).toBe(201)
    script.push(
      { code: "import pandas as pd\nsales = pd.read_csv('data/sales.csv')\nprint(len(sales))" },
      { text: 'There are 400 rows.' },
    )
    const first = await askOverSse(server?.url as string, id, 'How many rows?')
    expect(first.at(-1)?.event).toBe('done')

    const filler = fill(home)
    try {
      // An upload: refused with 507 and what to do, at once (it used to get no answer).
      const refused = await upload(id, 'more.csv', Buffer.concat(Array.from({ length: 40 }, () => SALES)))
      expect(refused.status, refused.text).toBe(507)
      expect(refused.json().error).toMatchObject({
        code: 'insufficient_storage',
        message: expect.stringMatching(/disk is full/),
        hint: expect.stringMatching(/ANALYST_HOME/),
      })
      expect(documented('post', '/api/sessions/{id}/files')).toContain('507')
      // A new session: SQLite cannot write it.
      const session = await call('/api/sessions', { method: 'POST', body: '{}' })
      expect(session.status, session.text).toBe(507)
      expect(session.json().error.message).toMatch(/disk is full/)
      expect(documented('post', '/api/sessions')).toContain('507')
      // A question while SQLite cannot write: refused before it starts.
      const asked = await call(`/api/sessions/${id}/ask`, {
        method: 'POST',
        body: JSON.stringify({ question: 'Anything?' }),
      })
      expect([asked.status, asked.text]).not.toContain(500)
      expect(asked.text).toMatch(/disk is full/)
      // Room for the database's pages, not for a step's 3 MB file: the file is refused for that
      // step, said in the step, and the run goes on to its answer.
      truncateSync(filler, statSync(filler).size - 1024 ** 2)
      // The model's next call carries what it was told of the step: the file was not kept, and why.
      let told = ''
      script.push(
        {
          code: "open('big.bin', 'wb').write(b'x' * 3_000_000)\nopen('small.txt', 'w').write('ok')\nprint('written')",
        },
        (prompt) => {
          told = JSON.stringify(prompt.at(-1))
          return { text: 'Wrote small.txt; big.bin could not be kept.' }
        },
      )
      const events = await askOverSse(server?.url as string, id, 'Write a big file.')
      expect(events.at(-1)?.event, JSON.stringify(events.at(-1))).toBe('done')
      expect(told).toMatch(/written/)
      expect(told).toMatch(/\[not kept\] big\.bin: the server's disk is full/)
      expect(told).toMatch(/do not offer it in your answer/)
      expect(told).not.toMatch(/not kept\] [^:]*small\.txt/)
      const stepEnd = events.find((e) => e.event === 'step-end')?.data as
        | {
            record: {
              artifacts: Array<{ name: string }>
              refused?: Array<{ name: string; reason: string }>
              execution: { logs: { stderr: string[] } }
            }
          }
        | undefined
      expect(stepEnd?.record.artifacts.map((artifact) => artifact.name)).toEqual(['small.txt'])
      expect(stepEnd?.record.refused).toEqual([
        { name: 'big.bin', reason: expect.stringMatching(/disk is full/) },
      ])
      expect(stepEnd?.record.execution.logs.stderr.join('')).toMatch(
        /not kept: big\.bin: the server's disk is full/,
      )
      // The run's events say it after the step (what the model was told), and its result leaves it out.
      expect(events.filter((e) => e.event === 'observation').at(-1)?.data.text).toMatch(
        /^\[not kept\] big\.bin/,
      )
      const done = events.at(-1)?.data as { result: { artifacts: Array<{ name: string }> } }
      expect(done.result.artifacts.map((artifact) => artifact.name)).toEqual(['small.txt'])
    } finally {
      rmSync(filler)
    }

    // Space freed: uploads and new sessions work again; the history is intact.
    const again = await upload(id, 'again.csv', SALES)
    expect(again.status, again.text).toBe(201)
    expect((await call('/api/sessions', { method: 'POST', body: '{}' })).status).toBe(201)
    script.push({ code: 'print(len(sales))' }, { text: 'Still 400.' })
    expect((await askOverSse(server?.url as string, id, 'Still there?')).at(-1)?.event).toBe('done')
    const detail = (await call(`/api/sessions/${id}`)).json() as SessionDetail
    expect(detail.datasets.map((d) => d.name)).toEqual(['sales.csv', 'again.csv'])
    expect(detail.runs[0]?.steps.map((s) => s.stdout)).toEqual(['400\n'])
    expect(detail.runs.at(-1)).toMatchObject({ status: 'done', answer: 'Still 400.' })
    expect(detail.runs.every((run) => run.status !== 'running')).toBe(true)
    const db = new Database(join(home, 'analyst.db'), { readonly: true })
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok')
    } finally {
      db.close()
    }
  }, 180_000)

  it("E2B's files.write into a sandbox whose workspace is full: 507 with a message, not a hang", async () => {
    const created = await call('/v2/sandboxes', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'any' },
      body: JSON.stringify({ templateID: 'base' }),
    })
    expect(created.status, created.text).toBe(201)
    const { sandboxID, envdAccessToken } = created.json() as { sandboxID: string; envdAccessToken: string }
    const headers = {
      'E2b-Sandbox-Id': sandboxID,
      'E2b-Sandbox-Port': '49983',
      'X-Access-Token': envdAccessToken,
    }
    try {
      const full = await call('/files?path=big.bin', {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/octet-stream' },
        body: new Uint8Array(WORKSPACE_BYTES + 1024 ** 2),
      })
      expect(full.status, full.text).toBe(507)
      expect(full.json().message).toMatch(/disk is full/)
    } finally {
      await call(`/v2/sandboxes/${sandboxID}`, { method: 'DELETE', headers: { 'x-api-key': 'any' } })
    }
  }, 120_000)
})
