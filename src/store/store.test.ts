import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SCHEMA_VERSION } from './db.js'
import { exportSession } from './export/index.js'
import { Store } from './store.js'

let home: string
let store: Store

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'analyst-store-'))
  store = Store.open(home)
})
afterEach(() => {
  store.close()
  rmSync(home, { recursive: true, force: true })
})

const profile = {
  path: '/x/sales.csv',
  name: 'sales.csv',
  format: 'csv',
  bytes: 10,
  rows: 2,
  columns: [],
  sampleRows: [],
  warnings: [],
  readCall: "pd.read_csv('data/sales.csv')",
} as never
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }

function seed(owner: string | null = null) {
  const session = store.createSession({ title: 'Sales', owner, model: 'scripted:x' })
  store.addDataset(session.id, { name: 'sales.csv', sourcePath: '/x/sales.csv', bytes: 10, profile })
  const run = store.startRun(session.id, 'What is the total?')
  const ok = store.addStep(run, session.id, {
    step: 1,
    code: "print('total', 42)\n2 + 2",
    text: 'Adding up.',
    stdout: 'total 42\n',
    stderr: '',
    results: [
      { isMainResult: true, text: '4' },
      { isMainResult: false, image: 'step-1-chart-1.png' },
    ],
    durationMs: 12,
    usage,
  })
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
    'base64',
  )
  store.addArtifact(session.id, ok, {
    name: 'step-1-chart-1.png',
    kind: 'image',
    mimeType: 'image/png',
    bytes: png,
  })
  store.addArtifact(session.id, ok, {
    name: 'out.csv',
    kind: 'file',
    mimeType: 'text/csv',
    bytes: Buffer.from('a\n1\n'),
  })
  const failed = store.addStep(run, session.id, {
    step: 2,
    code: 'boom',
    stdout: '<script>alert(1)</script>\n',
    stderr: '',
    error: { name: 'NameError', value: "name 'boom' is not defined", traceback: 'Traceback…' },
    results: [],
    durationMs: 3,
  })
  store.addBlocked(session.id, failed, {
    source: 'sandbox',
    rule: 'network',
    message: 'ConnectionRefusedError',
  })
  store.finishRun(run, {
    answer: 'The total is 42 (and 99).',
    incomplete: false,
    unsupportedNumbers: ['99'],
    usage,
  })
  store.appendMessages(session.id, [
    { role: 'user', content: 'What is the total?' },
    { role: 'assistant', content: 'The total is 42.' },
  ])
  return session.id
}

describe('Store', () => {
  it('migrates a new database to the latest schema, and keeps it on reopen', () => {
    expect(store.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal')
    const id = seed()
    store.close()
    store = Store.open(home)
    expect(store.summary(id)?.title).toBe('Sales')
  })

  it('records sessions, runs, steps, artifacts, messages, and gives them back as the API shape', () => {
    const id = seed()
    const detail = store.detail(id, (name) => `/files/${name}`)
    expect(detail?.runs).toHaveLength(1)
    const run = detail?.runs[0]
    expect([run?.status, run?.answer, run?.unsupportedNumbers, run?.usage.totalTokens]).toEqual([
      'done',
      'The total is 42 (and 99).',
      ['99'],
      15,
    ])
    expect(run?.steps.map((s) => [s.step, s.text, s.error?.name])).toEqual([
      [1, 'Adding up.', undefined],
      [2, undefined, 'NameError'],
    ])
    expect(run?.steps[0]?.results[1]?.image).toEqual({
      name: 'step-1-chart-1.png',
      size: 70,
      mimeType: 'image/png',
      url: '/files/step-1-chart-1.png',
    })
    expect(run?.steps[0]?.artifacts.map((a) => a.name)).toEqual(['out.csv'])
    expect(detail?.blocked).toMatchObject([{ question: 1, step: 2, source: 'sandbox', rule: 'network' }])
    expect(store.messages(id)).toEqual([
      { role: 'user', content: 'What is the total?' },
      { role: 'assistant', content: 'The total is 42.' },
    ])
    expect(store.stats(id)).toMatchObject({
      questions: 1,
      executions: 2,
      successful: 1,
      failed: 1,
      successRate: 0.5,
      totalDurationMs: 15,
    })
  })

  it('stores equal content once', () => {
    const id = seed()
    store.addArtifact(id, null, {
      name: 'copy.csv',
      kind: 'file',
      mimeType: 'text/csv',
      bytes: Buffer.from('a\n1\n'),
    })
    const blobs = readdirSync(join(home, 'blobs')).flatMap((dir) => readdirSync(join(home, 'blobs', dir)))
    expect(blobs).toHaveLength(2)
    expect(store.artifact(id, 'copy.csv')?.sha256).toBe(store.artifact(id, 'out.csv')?.sha256)
  })

  it('keeps sessions apart by owner, and finds them by id prefix', () => {
    const mine = seed('owner-a')
    const theirs = seed('owner-b')
    expect(store.listSessions({ owner: 'owner-a' }).map((s) => s.id)).toEqual([mine])
    expect(store.summary(theirs, 'owner-a')).toBeUndefined()
    expect(store.detail(theirs, (n) => n, 'owner-a')).toBeUndefined()
    expect(store.resolveId(mine.slice(0, 8))).toBe(mine)
    expect(store.resolveId(mine.slice(0, 8), 'owner-b')).toBeUndefined()
  })

  it('marks what was running as interrupted, and a failed run as failed', () => {
    const session = store.createSession({ title: 't' })
    const cut = store.startRun(session.id, 'q1')
    expect(store.summary(session.id)?.status).toBe('running')
    expect(store.markInterrupted()).toBe(1)
    expect(store.summary(session.id)?.status).toBe('interrupted')
    const failing = store.startRun(session.id, 'q2')
    store.failRun(failing, 'the model is down')
    const runs = store.detail(session.id, (n) => n)?.runs
    expect(runs?.map((r) => [r.id, r.status, r.error])).toEqual([
      [cut, 'interrupted', 'The server stopped while this question was being answered.'],
      [failing, 'failed', 'the model is down'],
    ])
    expect(store.summary(session.id)?.status).toBe('idle')
  })

  it('deletes a session with everything that belongs to it', () => {
    const id = seed()
    store.deleteSession(id)
    expect(store.summary(id)).toBeUndefined()
    expect(store.steps(id)).toEqual([])
    expect(store.artifacts(id)).toEqual([])
  })
})

describe('exports', () => {
  it('writes a notebook that nbformat validates, with outputs, charts and errors', () => {
    const id = seed()
    const path = join(home, 'session.ipynb')
    writeFileSync(path, exportSession(store, id, 'ipynb') as string)
    const check = `import nbformat, sys, json
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
code = [c for c in nb.cells if c.cell_type == 'code']
print(json.dumps([[o.output_type for o in c.outputs] for c in code]))`
    const outputs = JSON.parse(execFileSync('/usr/bin/python3', ['-c', check, path], { encoding: 'utf8' }))
    expect(outputs).toEqual([
      ['stream', 'execute_result', 'display_data'],
      ['stream', 'error'],
    ])
  })

  it('writes a script with the cells that succeeded, and the answers as comments', () => {
    const script = exportSession(store, seed(), 'py') as string
    expect(script).toContain("print('total', 42)")
    expect(script).not.toContain('boom')
    expect(script).toContain('# Answer: The total is 42 (and 99).')
    execFileSync('/usr/bin/python3', ['-c', `import ast, sys; ast.parse(sys.stdin.read())`], {
      input: script,
    })
  })

  it('writes a self-contained report that escapes what the code printed and marks unsupported numbers', () => {
    const html = exportSession(store, seed(), 'html') as string
    expect(html).not.toContain('<script>')
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(html).toContain('<mark title="not found in any output of the code">99</mark>')
    expect(html).toContain('src="data:image/png;base64,')
    expect(html).not.toMatch(/(src|href)="https?:/)
  })

  it('gives nothing for another owner', () => {
    expect(exportSession(store, seed('a'), 'py', 'b')).toBeUndefined()
  })
})
