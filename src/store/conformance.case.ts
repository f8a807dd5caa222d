/**
 * What every store must do, as one suite each implementation runs (SQLite now, PostgreSQL next):
 * `describeStoreConformance({ name, open })`. Records go in and come back as they went in; owners
 * are kept apart; a step commits with its artifacts and blocked attempts; blobs are stored once.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { exportSession } from './export/index.js'
import { loadSessionHistory, loadSessionStats } from './history.js'
import type { BlobStore, HistoryStore } from './types.js'

/** A bar chart as the kernel's extractor gives it: drawable, so the exports carry its spec. */
const BAR_CHART = {
  type: 'bar',
  title: 'Total',
  x_label: null,
  y_label: null,
  x_unit: null,
  y_unit: null,
  x_scale: 'categorical',
  orientation: 'vertical',
  elements: [{ label: 'a', group: 'total', value: 42, start: -0.4, end: 0.4, bottom: 0 }],
}

export interface OpenedStores {
  history: HistoryStore
  blobs: BlobStore
  close(): Promise<void>
}

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }
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

export function describeStoreConformance(options: { name: string; open: () => Promise<OpenedStores> }) {
  describe(`store conformance: ${options.name}`, () => {
    let stores: OpenedStores
    let history: HistoryStore
    let blobs: BlobStore
    beforeEach(async () => {
      stores = await options.open()
      history = stores.history
      blobs = stores.blobs
    })
    afterEach(async () => {
      await stores.close()
    })

    /** A session with one question: a step with a chart and a file, a failed step, an answer. */
    async function seed(owner: string | null = null): Promise<string> {
      const session = await history.createSession({ title: 'Sales', owner, model: 'scripted:x' })
      const data = await blobs.put(Buffer.from('a,b\n1,2\n'))
      await history.putDataset(session.id, {
        name: 'sales.csv',
        bytes: data.size,
        sha256: data.sha256,
        profile,
      })
      const run = await history.startRun(session.id, 'What is the total?')
      const chart = await blobs.put(PNG)
      const file = await blobs.put(Readable.from([Buffer.from('a\n'), Buffer.from('1\n')]))
      await history.commitStep({
        runId: run.id,
        sessionId: session.id,
        step: {
          step: 1,
          code: "print('total', 42)\n2 + 2",
          text: 'Adding up.',
          stdout: 'total 42\n',
          stderr: '',
          results: [
            { isMainResult: true, text: '4' },
            { isMainResult: false, image: 'step-1-chart-1.png', chart: BAR_CHART },
          ],
          queries: [{ source: 'shop', query: 'SELECT sum(total) FROM orders', rows: 1, durationMs: 4 }],
          durationMs: 12,
          usage,
        },
        artifacts: [
          { name: 'step-1-chart-1.png', kind: 'image', mimeType: 'image/png', ...chart },
          { name: 'out.csv', kind: 'file', mimeType: 'text/csv', ...file },
        ],
        blocked: [],
      })
      await history.commitStep({
        runId: run.id,
        sessionId: session.id,
        step: {
          step: 2,
          code: 'boom',
          tool: { name: 'modal_app_fn', input: { args: [1], kwargs: { a: 'b' } } },
          stdout: '<script>alert(1)</script>\n',
          stderr: '',
          error: { name: 'NameError', value: "name 'boom' is not defined", traceback: 'Traceback…' },
          results: [],
          durationMs: 3,
        },
        artifacts: [],
        blocked: [{ source: 'sandbox', rule: 'network', message: 'ConnectionRefusedError' }],
      })
      await history.finishRun(run.id, {
        answer: 'The total is 42 (and 99).',
        followUps: ['By month?', 'Which region?'],
        incomplete: false,
        unsupportedNumbers: ['99'],
        usage,
      })
      await history.appendMessages(session.id, [
        { role: 'user', content: 'What is the total?' },
        { role: 'assistant', content: 'The total is 42.' },
      ])
      return session.id
    }

    it('records a session with its data, runs, steps, artifacts, blocked attempts and messages', async () => {
      const id = await seed()
      const loaded = await loadSessionHistory(history, id)
      expect(loaded?.session).toMatchObject({
        title: 'Sales',
        model: 'scripted:x',
        status: 'idle',
        questions: 1,
      })
      expect(loaded?.datasets).toMatchObject([
        { name: 'sales.csv', bytes: 8, profile: { readCall: expect.any(String) } },
      ])
      const run = loaded?.runs[0]
      // Follow-ups are kept with the answer, and come back apart from it.
      expect(run?.followUps).toEqual(['By month?', 'Which region?'])
      expect([run?.seq, run?.status, run?.answer, run?.unsupportedNumbers, run?.usage.totalTokens]).toEqual([
        1,
        'done',
        'The total is 42 (and 99).',
        ['99'],
        15,
      ])
      expect(run?.steps.map((s) => [s.step, s.text, s.error?.name, s.success, s.tool])).toEqual([
        [1, 'Adding up.', undefined, true, undefined],
        [
          2,
          undefined,
          'NameError',
          false,
          { name: 'modal_app_fn', input: { args: [1], kwargs: { a: 'b' } } },
        ],
      ])
      expect(run?.steps.map((s) => s.queries)).toEqual([
        [{ source: 'shop', query: 'SELECT sum(total) FROM orders', rows: 1, durationMs: 4 }],
        undefined,
      ])
      const first = run?.steps[0]
      expect(first?.results[1]).toMatchObject({
        chart: { type: 'bar' },
        image: { name: 'step-1-chart-1.png', kind: 'image', size: PNG.length, mimeType: 'image/png' },
      })
      expect(first?.files.map((a) => [a.name, a.size])).toEqual([['out.csv', 4]])
      expect(loaded?.blocked).toMatchObject([{ question: 1, step: 2, source: 'sandbox', rule: 'network' }])
      expect(await history.messages(id)).toEqual([
        { role: 'user', content: 'What is the total?' },
        { role: 'assistant', content: 'The total is 42.' },
      ])
      expect(await loadSessionStats(history, id)).toMatchObject({
        questions: 1,
        executions: 2,
        successful: 1,
        failed: 1,
        successRate: 0.5,
        totalDurationMs: 15,
      })
    })

    it('keeps a replaced dataset once, under its name', async () => {
      const id = await seed()
      const other = await blobs.put(Buffer.from('a,b\n3,4\n5,6\n'))
      await history.putDataset(id, { name: 'sales.csv', bytes: other.size, sha256: other.sha256, profile })
      expect((await history.datasets(id)).map((d) => [d.name, d.sha256])).toEqual([
        ['sales.csv', other.sha256],
      ])
    })

    it('stores equal content once, and streams it back', async () => {
      const a = await blobs.put(Buffer.from('same content'))
      const b = await blobs.put(Readable.from([Buffer.from('same '), Buffer.from('content')]))
      expect(b).toEqual(a)
      expect(a.sha256).toBe(createHash('sha256').update('same content').digest('hex'))
      expect((await buffer((await blobs.get(a.sha256)) as Readable)).toString()).toBe('same content')
      expect(await blobs.stat(a.sha256)).toEqual({ sha256: a.sha256, size: 12 })
      expect(await blobs.get('0'.repeat(64))).toBeUndefined()
      expect(await blobs.stat('not a hash')).toBeUndefined()
    })

    it('refuses a blob over the size limit, and keeps nothing of it', async () => {
      const big = Buffer.alloc(1024, 7)
      await expect(blobs.put(big, { maxBytes: 100 })).rejects.toMatchObject({ status: 413 })
      const stored = await blobs.put(big)
      expect(stored.size).toBe(1024)
    })

    it('keeps sessions apart by owner, and finds them by id prefix', async () => {
      const mine = await seed('owner-a')
      const theirs = await seed('owner-b')
      expect((await history.listSessions({ owner: 'owner-a' })).map((s) => s.id)).toEqual([mine])
      expect(await history.getSession(theirs, 'owner-a')).toBeUndefined()
      expect(await loadSessionHistory(history, theirs, 'owner-a')).toBeUndefined()
      expect(await history.resolveSessionId(mine.slice(0, 8))).toBe(mine)
      expect(await history.resolveSessionId(mine.slice(0, 8), 'owner-b')).toBeUndefined()
      expect(await history.resolveSessionId('')).toBeUndefined() // fits both
      expect((await history.listSessions()).length).toBe(2)
    })

    it("moves a session to a new owner only while it is still the expected owner's", async () => {
      const tokens = await seed('token-hash')
      const nobodys = await history.createSession({ title: 'open', owner: null })
      expect(await history.changeSessionOwner(tokens, 'someone-else', 'user:u1')).toBe(false)
      expect(await history.changeSessionOwner(tokens, 'token-hash', 'user:u1')).toBe(true)
      expect((await history.getSession(tokens))?.owner).toBe('user:u1')
      expect(await history.getSession(tokens, 'token-hash')).toBeUndefined()
      // Already moved: a second admin's move (from the old owner) finds nothing.
      expect(await history.changeSessionOwner(tokens, 'token-hash', 'user:u2')).toBe(false)
      expect(await history.changeSessionOwner(nobodys.id, null, 'user:u1')).toBe(true)
      expect((await history.listSessions({ owner: 'user:u1' })).map((s) => s.id).sort()).toEqual(
        [tokens, nobodys.id].sort(),
      )
      expect(await history.changeSessionOwner('no-such-session', null, 'user:u1')).toBe(false)
    })

    it('lists sessions newest first, with their number of questions', async () => {
      const older = await history.createSession({ title: 'older' })
      const newer = await seed()
      await history.updateSession(older.id, { title: 'renamed' })
      const listed = await history.listSessions()
      expect(listed.map((s) => [s.title, s.questions])).toEqual([
        ['renamed', 0],
        ['Sales', 1],
      ])
      expect(listed.map((s) => s.id)).toEqual([older.id, newer])
    })

    it("keeps the names of a session's sources, and none for a session without", async () => {
      const withSources = await history.createSession({ title: 'db', sources: ['shop', 'events'] })
      const without = await history.createSession({ title: 'files' })
      expect((await history.getSession(withSources.id))?.sources).toEqual(['shop', 'events'])
      expect((await history.getSession(without.id))?.sources).toBeUndefined()
      expect((await history.listSessions()).find((s) => s.id === withSources.id)?.sources).toEqual([
        'shop',
        'events',
      ])
    })

    it("keeps the template a session's sandbox starts from, and none for a session without", async () => {
      const inTemplate = await history.createSession({ title: 'modern', template: 'modern' })
      const without = await history.createSession({ title: 'host' })
      expect(inTemplate.template).toBe('modern')
      expect((await history.getSession(inTemplate.id))?.template).toBe('modern')
      expect((await history.getSession(without.id))?.template).toBeUndefined()
      expect((await history.listSessions()).find((s) => s.id === inTemplate.id)?.template).toBe('modern')
    })

    it('keeps the id of the build a session started from, and its language', async () => {
      const id = 'a'.repeat(64)
      const made = await history.createSession({
        title: 'r',
        template: 'modern',
        templateId: id,
        language: 'r',
      })
      const old = await history.createSession({ title: 'before ids' })
      expect(made).toMatchObject({ template: 'modern', templateId: id, language: 'r' })
      expect(await history.getSession(made.id)).toMatchObject({
        template: 'modern',
        templateId: id,
        language: 'r',
      })
      expect((await history.listSessions()).find((s) => s.id === made.id)).toMatchObject({ templateId: id })
      const before = await history.getSession(old.id)
      expect(before?.templateId).toBeUndefined()
      expect(before?.language).toBeUndefined()
    })

    it('marks what was running as interrupted, and a failed run as failed', async () => {
      const session = await history.createSession({ title: 't' })
      const cut = await history.startRun(session.id, 'q1')
      expect((await history.getSession(session.id))?.status).toBe('running')
      expect(await history.markInterrupted()).toBe(1)
      expect((await history.getSession(session.id))?.status).toBe('interrupted')
      const failing = await history.startRun(session.id, 'q2')
      expect(failing.seq).toBe(2)
      await history.failRun(failing.id, 'the model is down')
      const runs = await history.runs(session.id)
      expect(runs.map((r) => [r.id, r.status, r.error])).toEqual([
        [cut.id, 'interrupted', 'The server stopped while this question was being answered.'],
        [failing.id, 'failed', 'the model is down'],
      ])
      expect((await history.getSession(session.id))?.status).toBe('idle')
    })

    it('keeps long output up to its limit, with a note of what was cut', async () => {
      const session = await history.createSession({ title: 't' })
      const run = await history.startRun(session.id, 'q')
      await history.commitStep({
        runId: run.id,
        sessionId: session.id,
        step: { step: 1, code: 'x', stdout: 'y'.repeat(200_000), stderr: '', results: [], durationMs: 1 },
        artifacts: [],
        blocked: [],
      })
      const [step] = await history.steps(session.id)
      expect(step?.stdout.length).toBeLessThan(70_000)
      expect(step?.stdout).toMatch(/more characters not kept\]$/)
    })

    it("keeps a person's chart edit with its result, and clears it", async () => {
      const id = await seed()
      const other = await seed()
      const [step] = await history.steps(id)
      const stepId = step?.id as number
      const edit = { mark: 'line' as const, title: 'Totals', xTitle: '' }
      expect(await history.setChartEdit(id, stepId, 1, edit)).toBe(true)
      const edited = (await history.steps(id))[0]?.results
      expect(edited?.[1]).toEqual({ ...step?.results[1], chartEdit: edit })
      expect(edited?.[0]).toEqual(step?.results[0])
      // Another session's step, a result that is not there: nothing changes.
      expect(await history.setChartEdit(other, stepId, 1, edit)).toBe(false)
      expect(await history.setChartEdit(id, stepId, 2, edit)).toBe(false)
      expect(await history.setChartEdit(id, stepId, 1)).toBe(true)
      expect((await history.steps(id))[0]?.results).toEqual(step?.results)
    })

    it('deletes a session with everything that belongs to it', async () => {
      const id = await seed()
      const keep = await seed()
      await history.deleteSession(id)
      expect(await history.getSession(id)).toBeUndefined()
      expect(await history.steps(id)).toEqual([])
      expect(await history.artifacts(id)).toEqual([])
      expect(await history.messages(id)).toEqual([])
      expect(await history.blocked(id)).toEqual([])
      expect((await history.steps(keep)).length).toBe(2)
    })

    it('streams a large blob back whole, in order', async () => {
      // Several chunks of a chunked store; random, so that a chunk out of order would show.
      const big = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 7919 + (i >> 8)) % 251))
      const stored = await blobs.put(Readable.from([big.subarray(0, 100_000), big.subarray(100_000)]))
      expect(stored.size).toBe(big.length)
      const back = await buffer((await blobs.get(stored.sha256)) as Readable)
      expect(back.equals(big)).toBe(true)
    })

    describe('leases', () => {
      const TTL = 60_000

      it('one holder at a time; the holder renews and releases it; the next learns who held it', async () => {
        const { id } = await history.createSession({ title: 't' })
        expect(await history.acquireLease(id, 'a', TTL)).toEqual({
          acquired: true,
          previous: null,
          interrupted: 0,
          atMs: expect.any(Number),
        })
        const refused = await history.acquireLease(id, 'b', TTL)
        expect(refused).toMatchObject({ acquired: false, holder: 'a' })
        expect(refused.acquired === false && refused.expiresInMs).toBeGreaterThan(TTL / 2)
        expect(await history.acquireLease(id, 'a', TTL)).toMatchObject({ acquired: true, previous: 'a' })
        expect(await history.renewLease(id, 'a', TTL)).toBe(true)
        expect(await history.renewLease(id, 'b', TTL)).toBe(false)
        await history.releaseLease(id, 'b') // not b's: changes nothing
        expect(await history.acquireLease(id, 'b', TTL)).toMatchObject({ acquired: false })
        await history.releaseLease(id, 'a')
        expect(await history.renewLease(id, 'a', TTL)).toBe(false)
        expect(await history.acquireLease(id, 'b', TTL)).toEqual({
          acquired: true,
          previous: 'a',
          interrupted: 0,
          atMs: expect.any(Number),
        })
        expect(await history.leaseHolders([id, 'none'])).toEqual(new Map([[id, 'b']]))
      })

      it("a lapsed holder's run is interrupted: by the sweep, or by the next holder", async () => {
        const swept = await history.createSession({ title: 'swept' })
        const taken = await history.createSession({ title: 'taken' })
        const alive = await history.createSession({ title: 'alive' })
        await history.acquireLease(swept.id, 'dead', 1)
        await history.acquireLease(taken.id, 'dead', 1)
        await history.acquireLease(alive.id, 'live', TTL)
        const [a, b, c] = await Promise.all(
          [swept, taken, alive].map((session) => history.startRun(session.id, 'q')),
        )
        await new Promise((resolve) => setTimeout(resolve, 20))
        expect(await history.renewLease(swept.id, 'dead', TTL)).toBe(false) // lapsed: too late
        const grant = await history.acquireLease(taken.id, 'next', TTL)
        expect(grant).toEqual({ acquired: true, previous: 'dead', interrupted: 1, atMs: expect.any(Number) })
        expect(await history.markInterrupted({ lapsed: true })).toBe(1)
        const status = async (run: { sessionId: string }) => [
          (await history.runs(run.sessionId))[0]?.status,
          (await history.getSession(run.sessionId))?.status,
        ]
        expect(await status(a as never)).toEqual(['interrupted', 'interrupted'])
        expect((await status(b as never))[0]).toBe('interrupted')
        expect(await status(c as never)).toEqual(['running', 'running'])
      })
    })

    it("counts a token's sessions, running runs, data and requests", async () => {
      await seed('quota-a')
      const other = await history.createSession({ title: 'x', owner: 'quota-a' })
      await history.startRun(other.id, 'q')
      await seed('quota-b')
      expect(await history.ownerUsage('quota-a')).toEqual({ sessions: 2, runningRuns: 1, dataBytes: 8 })
      expect(await history.ownerUsage('nobody')).toEqual({ sessions: 0, runningRuns: 0, dataBytes: 0 })
      expect(await history.countRequest('quota-a', 100)).toBe(1)
      expect(await history.countRequest('quota-a', 100)).toBe(2)
      expect(await history.countRequest('quota-b', 100)).toBe(1)
      expect(await history.countRequest('quota-a', 101)).toBe(1)
      await history.checkReady()
    })

    it("sums an owner's runs and tokens by the model of their sessions", async () => {
      const usage = (n: number) => ({ inputTokens: n, outputTokens: 2 * n, totalTokens: 3 * n })
      const answer = async (sessionId: string, n: number) => {
        const run = await history.startRun(sessionId, 'q')
        await history.finishRun(run.id, {
          answer: 'a',
          incomplete: false,
          unsupportedNumbers: [],
          usage: usage(n),
        })
      }
      const big = await history.createSession({ title: 'a', owner: 'activity-a', model: 'openai:big' })
      const small = await history.createSession({ title: 'b', owner: 'activity-a', model: 'openai:small' })
      const other = await history.createSession({ title: 'c', owner: 'activity-b', model: 'openai:big' })
      await answer(big.id, 10)
      await answer(big.id, 5)
      await answer(small.id, 100)
      await history.startRun(small.id, 'still running')
      await answer(other.id, 1000)
      expect(await history.ownerActivity('activity-a')).toEqual({
        runs: 4,
        tokens: [
          { model: 'openai:small', runs: 2, inputTokens: 100, outputTokens: 200, totalTokens: 300 },
          { model: 'openai:big', runs: 2, inputTokens: 15, outputTokens: 30, totalTokens: 45 },
        ],
      })
      expect(await history.ownerActivity('nobody')).toEqual({ runs: 0, tokens: [] })
    })

    describe('exports', () => {
      let dir: string
      beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), 'analyst-export-'))
      })
      afterEach(() => rmSync(dir, { recursive: true, force: true }))
      const load = async (id: string) => {
        const loaded = await loadSessionHistory(history, id)
        if (!loaded) throw new Error('no session')
        return loaded
      }

      it('writes a notebook that nbformat validates, with outputs, charts and errors', async () => {
        const path = join(dir, 'session.ipynb')
        writeFileSync(path, await exportSession(await load(await seed()), 'ipynb', blobs))
        const check = `import nbformat, sys, json
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
code = [c for c in nb.cells if c.cell_type == 'code']
print(json.dumps([[o.output_type for o in c.outputs] for c in code]))`
        const outputs = JSON.parse(
          execFileSync('/usr/bin/python3', ['-c', check, path], { encoding: 'utf8' }),
        )
        // First the sql() that reaches the session's sources from the reader's machine (not run).
        expect(outputs).toEqual([[], ['stream', 'execute_result', 'display_data'], ['stream', 'error']])
        const notebook = readFileSync(path, 'utf8')
        // The chart's Vega-Lite spec beside its PNG, with its values: what JupyterLab draws.
        const display = (
          JSON.parse(notebook) as {
            cells: Array<{ outputs?: Array<{ data?: Record<string, { data?: { values?: unknown } }> }> }>
          }
        ).cells
          .flatMap((cell) => cell.outputs ?? [])
          .find((output) => output.data?.['image/png'])
        expect(display?.data?.['application/vnd.vegalite.v6+json']?.data?.values).toMatchObject([
          { label: 'a', value: 42 },
        ])
        expect(notebook).toContain('def sql(query, source=None, params=None)')
        expect(notebook).toContain('sql() on shop: 1 row in 4 ms')
      })

      it('writes a script with the cells that succeeded, and the answers as comments', async () => {
        const script = await exportSession(await load(await seed()), 'py', blobs)
        expect(script).toContain("print('total', 42)")
        expect(script).not.toContain('boom')
        expect(script).toContain('# Answer: The total is 42 (and 99).')
        // The step queried the source shop: the script says where its URL goes, and defines sql().
        expect(script).toContain('#   ANALYST_SOURCE_SHOP=postgres://USER@HOST/DB')
        expect(script).toContain('def sql(query, source=None, params=None)')
        execFileSync('/usr/bin/python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], {
          input: script,
        })
      })

      it('writes a self-contained report that escapes what the code printed and marks unsupported numbers', async () => {
        const html = await exportSession(await load(await seed()), 'html', blobs)
        expect(html).not.toContain('<script>')
        // The chart's spec as a data block (the report's CSP runs no script).
        const block =
          /<script type="application\/vnd\.vegalite\.v6\+json" class="chart-spec">(.*?)<\/script>/.exec(html)
        expect(JSON.parse(block?.[1] ?? '{}').data.values).toMatchObject([{ label: 'a', value: 42 }])
        expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
        expect(html).toContain('<mark title="not found in any output of the code">99</mark>')
        expect(html).toContain(`src="data:image/png;base64,${PNG.toString('base64')}"`)
        expect(html).not.toMatch(/(src|href)="https?:/)
      })
    })
  })
}
