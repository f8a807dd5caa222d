/**
 * The session service with a mock sandbox and a scripted model (no kernels), over a real SQLite
 * file and blob folder: the lifecycle every door relies on.
 */
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import { askAll, openTestService, type TestService } from '../../test/support/service.js'
import { waitFor } from '../../test/support/wait.js'
import {
  MissingDataError,
  ModelCallError,
  ModelConfigError,
  NotFoundError,
  ShuttingDownError,
} from '../errors.js'
import { ScriptedModel, type ScriptStep } from '../models/scripted.js'
import { openTemplates } from '../templates/store.js'
import { MockSandboxProvider } from '../test/mock-sandbox.js'
import { commitTemplate } from '../test/support/templates.js'
import { SessionService, type SessionServiceOptions } from './service.js'

const SALES = resolve('examples/sales.csv')
const opened: TestService[] = []
afterEach(async () => {
  for (const test of opened.splice(0)) await test.close()
})

/** A mock cell: `boom` raises, anything else prints what it ran. */
const provider = () =>
  new MockSandboxProvider((code) =>
    code.includes('boom')
      ? [{ type: 'error', name: 'NameError', value: "name 'boom' is not defined", traceback: 'Traceback' }]
      : [{ type: 'stdout', text: `ran: ${code}\n` }],
  )

async function open(script: ScriptStep[], options: { idleMs?: number; mock?: MockSandboxProvider } = {}) {
  const mock = options.mock ?? provider()
  const model = new ScriptedModel(script)
  const test = await openTestService({ provider: mock, model, idleMs: options.idleMs })
  opened.push(test)
  return { ...test, mock, model }
}

/** The text of the system prompt and messages of a model call. */
/** Another process over the same store: a new service with its own provider and model. */
const serviceOptions = (
  first: TestService,
  mock: MockSandboxProvider,
  model = new ScriptedModel([{ text: 'Fine.' }]),
): SessionServiceOptions => ({
  history: first.stores.history,
  blobs: first.stores.blobs,
  provider: mock,
  model: async () => ({
    model,
    spec: 'scripted:again',
    provider: 'custom',
    modelId: 'again',
    mode: 'tools',
  }),
  cacheDir: join(first.home, 'cache'),
  idleMs: 0,
})
const restarted = (first: TestService, mock: MockSandboxProvider, model: ScriptedModel) =>
  new SessionService(serviceOptions(first, mock, model))
const promptText = (model: ScriptedModel, call: number) => JSON.stringify(model.calls[call]?.prompt)

describe('SessionService', () => {
  it('answers in a new session: data as blobs, every step recorded, named after its first question', async () => {
    const { service, stores, mock } = await open([
      { code: 'x = 1' },
      { code: 'boom' },
      { text: 'Done: x is 1.' },
    ])
    const { id } = await service.createSession()
    const [dataset] = await service.addData(id, [{ path: SALES }])
    expect(dataset).toMatchObject({ name: 'sales.csv', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect(await stores.blobs.stat(dataset?.sha256 as string)).toMatchObject({ size: dataset?.bytes })

    const { events, result } = await askAll(service, id, 'What is x?')
    expect(events.slice(0, 3).map((e) => e.type)).toEqual(['preparing', 'ready', 'run-start'])
    expect(events.at(-1)?.type).toBe('done')
    expect(result.answer).toBe('Done: x is 1.')
    expect(mock.sandboxes).toMatchObject([{ data: ['sales.csv'], killed: false }])

    const session = await service.getSession(id)
    expect(session).toMatchObject({
      title: 'What is x?',
      model: 'scripted:test',
      status: 'idle',
      questions: 1,
    })
    const [run] = await stores.history.runs(id)
    expect(run).toMatchObject({ status: 'done', answer: 'Done: x is 1.', question: 'What is x?' })
    const steps = await stores.history.steps(id)
    expect(steps.map((s) => [s.code, s.success])).toEqual([
      ['x = 1', true],
      ['boom', false],
    ])
    expect((await stores.history.messages(id)).length).toBeGreaterThan(3)
  })

  it('answers the questions of a session one at a time, in the order they came', async () => {
    const { service, stores } = await open([{ text: 'Answer 1' }, { text: 'Answer 2' }, { text: 'Answer 3' }])
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    const [a, b, c] = await Promise.all([
      askAll(service, id, 'First?'),
      askAll(service, id, 'Second?'),
      askAll(service, id, 'Third?'),
    ])
    expect([a.result.answer, b.result.answer, c.result.answer]).toEqual(['Answer 1', 'Answer 2', 'Answer 3'])
    const queued = (events: Array<{ type: string; queued?: boolean }>) =>
      events.find((e) => e.type === 'run-start')?.queued
    expect([queued(a.events), queued(b.events), queued(c.events)]).toEqual([false, true, true])
    expect((await stores.history.runs(id)).map((r) => [r.seq, r.question])).toEqual([
      [1, 'First?'],
      [2, 'Second?'],
      [3, 'Third?'],
    ])
  })

  it("records the door's template with a session, and replays it there after a restart whatever the door's is now", async () => {
    const mock = provider()
    const model = new ScriptedModel([{ code: 'a = 1' }, { text: 'a is 1.' }])
    const first = await openTestService({ provider: mock, model, sandbox: { template: 'modern' } })
    opened.push(first)
    const { id } = await first.service.createSession()
    expect((await first.service.getSession(id)).template).toBe('modern')
    const named = await first.service.createSession({ template: 'other' })
    expect(named.template).toBe('other')
    await askAll(first.service, id, 'Set a.')
    await first.service.shutdown()
    expect(mock.sandboxes.map((sandbox) => sandbox.template)).toEqual(['modern'])

    // Another process, whose door names no template: the session's own is used for the replay.
    const again = provider()
    const second = restarted(first, again, new ScriptedModel([{ text: 'Still 1.' }]))
    try {
      await askAll(second, id, 'And a?')
      expect(again.calls.map((call) => call.code)).toEqual(['a = 1'])
      expect(again.sandboxes.map((sandbox) => sandbox.template)).toEqual(['modern'])
    } finally {
      await second.shutdown()
    }
  })

  it('records the language of a session, and replays and prompts in it whatever the door says now', async () => {
    const mock = new MockSandboxProvider(undefined, ['python', 'r'])
    const model = new ScriptedModel([
      { toolCall: { name: 'run_r', input: JSON.stringify({ code: 'a <- 1' }) } },
      { text: 'a is 1.' },
    ])
    const first = await openTestService({ provider: mock, model, analyst: { language: 'r' } })
    opened.push(first)
    const { id } = await first.service.createSession()
    expect((await first.service.getSession(id)).language).toBe('r')
    await first.service.addData(id, [{ path: SALES }])
    await askAll(first.service, id, 'Set a.')
    // The data is described the R way: its read call, R's types, no pandas.
    expect(promptText(model, 0)).toContain(
      'df <- readr::read_csv(\\"data/sales.csv\\", show_col_types = FALSE)',
    )
    expect(promptText(model, 0)).not.toContain('pd.read_csv')
    await first.service.shutdown()

    // Another process whose door says nothing of languages (python): the session stays in R.
    const again = new MockSandboxProvider(undefined, ['python', 'r'])
    const next = new ScriptedModel([{ text: 'Still 1.' }])
    const second = restarted(first, again, next)
    try {
      await askAll(second, id, 'And a?')
      expect(again.calls.map((call) => [call.code, call.language])).toEqual([['a <- 1', 'r']])
      expect(promptText(next, 0)).toContain('R session')
      expect(JSON.stringify(next.calls[0]?.tools)).toContain('run_r')
      expect(await second.export(id, 'ipynb')).toContain('"ir"')
    } finally {
      await second.shutdown()
    }
  })

  it("replays a session in the build its template's name pointed at, and says what to do once it is removed", async () => {
    const templatesHome = mkdtempSync(join(tmpdir(), 'analyst-service-templates-'))
    onTestFinished(() => rmSync(templatesHome, { recursive: true, force: true }))
    const catalog = openTemplates(templatesHome)
    const build = (id: string) =>
      commitTemplate(templatesHome, id, {
        name: 'team',
        manifest: {
          base: { kind: 'host' },
          hasRootfs: false,
          python: { path: '/usr/bin/python3', version: '3.11.2' },
        },
      })
    const [older, newer] = ['1'.repeat(64), '2'.repeat(64)]
    build(older)
    const mock = provider()
    const first = await openTestService({
      provider: mock,
      model: new ScriptedModel([{ code: 'a = 1' }, { text: 'a is 1.' }]),
      sandbox: { template: 'team' },
      templates: catalog,
    })
    opened.push(first)
    const { id } = await first.service.createSession()
    expect(await first.service.getSession(id)).toMatchObject({ template: 'team', templateId: older })
    await expect(first.service.createSession({ template: 'nosuch' })).rejects.toThrow(/No template "nosuch"/)
    await askAll(first.service, id, 'Set a.')
    await first.service.shutdown()

    // The name moves to a newer build: the session keeps its own.
    build(newer)
    const again = provider()
    const second = new SessionService({ ...serviceOptions(first, again), templates: catalog })
    try {
      await askAll(second, id, 'And a?')
      expect(again.sandboxes.map((sandbox) => sandbox.template)).toEqual([older])
      expect((await second.createSession()).templateId).toBeUndefined()
    } finally {
      await second.shutdown()
    }

    // Its build removed: the next question says so, and how to get it back.
    catalog.remove(older)
    const third = new SessionService({ ...serviceOptions(first, provider()), templates: catalog })
    try {
      await expect(askAll(third, id, 'Still there?')).rejects.toMatchObject({
        status: 404,
        message: expect.stringMatching(/"team" \(build 111111111111\), is no longer built here/),
        hint: expect.stringMatching(/Build it again from the same spec/),
      })
    } finally {
      await third.shutdown()
    }
  })

  it('resumes a session from the store alone: its successful cells replayed, its conversation carried on', async () => {
    const first = await open([
      { code: 'a = 1' },
      { code: 'boom' },
      { code: 'b = a + 1' },
      { text: 'b is 2.' },
    ])
    const { id } = await first.service.createSession()
    await first.service.addData(id, [{ path: SALES }])
    await askAll(first.service, id, 'Compute b.')
    await first.service.shutdown()

    // Another process: a new service over the same files, a new provider and model.
    const mock = provider()
    const model = new ScriptedModel([{ text: 'Still 2.' }])
    const second = restarted(first, mock, model)
    try {
      const { events, result } = await askAll(second, id, 'And b?')
      expect(mock.calls.map((call) => call.code)).toEqual(['a = 1', 'b = a + 1'])
      expect(events.find((e) => e.type === 'preparing')).toMatchObject({ replaying: 2, datasets: 1 })
      expect(events.find((e) => e.type === 'ready')).toMatchObject({ replayed: { ran: 2, failed: 0 } })
      expect(mock.sandboxes[0]?.data).toEqual(['sales.csv'])
      expect(promptText(model, 0)).toContain('Compute b.')
      expect(result.answer).toBe('Still 2.')
      expect((await second.getSession(id)).model).toBe('scripted:again')
    } finally {
      await second.shutdown()
    }
  })

  it("runs a caller's cell in turn: the guard first, recorded as a run, and known to the next question", async () => {
    const { service, stores, model } = await open([{ text: 'x was set to 41.' }])
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    const cell = await service.runCell(id, 'x = 41\nprint(x)')
    expect(cell.violations).toEqual([])
    expect(cell.execution?.logs.stdout.join('')).toContain('ran: x = 41')
    const blocked = await service.runCell(id, "import socket\nsocket.create_connection(('example.com', 80))")
    expect(blocked.execution).toBeUndefined()
    expect(blocked.violations.length).toBeGreaterThan(0)
    const { result } = await askAll(service, id, 'What is x?')
    expect(result.answer).toBe('x was set to 41.')
    expect(promptText(model, 0)).toContain('x = 41')
    expect(promptText(model, 0)).toContain('Nothing ran: the guard stopped it')
    const runs = await stores.history.runs(id)
    expect(runs.map((r) => [r.question, r.status])).toEqual([
      ['run_python', 'done'],
      ['run_python', 'done'],
      ['What is x?', 'done'],
    ])
    expect((await stores.history.blocked(id)).map((b) => b.source)).toContain('guard')
    expect((await service.getSession(id)).title).toBe('What is x?')
  })

  it("runs a caller's cells without a model; a question says why there is none, and works once there is one", async () => {
    const mock = provider()
    const test = await openTestService({ provider: mock, model: new ScriptedModel([]) })
    opened.push(test)
    const model = new ScriptedModel([{ text: 'x is 41.' }])
    let configured = false
    const service = new SessionService({
      history: test.stores.history,
      blobs: test.stores.blobs,
      provider: mock,
      model: async () => {
        if (!configured) throw new ModelConfigError('No model is configured', { hint: 'Set ANALYST_MODEL.' })
        return { model, spec: 'scripted:later', provider: 'custom', modelId: 'later', mode: 'tools' }
      },
      cacheDir: join(test.home, 'cache'),
      idleMs: 0,
    })
    try {
      const { id } = await service.createSession()
      const cell = await service.runCell(id, 'x = 41', { nameImage: (i) => `chart-${i}.png` })
      expect(cell.execution?.logs.stdout.join('')).toContain('ran: x = 41')
      await expect(askAll(service, id, 'What is x?')).rejects.toMatchObject({
        name: 'ModelConfigError',
        hint: 'Set ANALYST_MODEL.',
      })
      // Nothing recorded a model, and the failed question left no run.
      expect((await service.getSession(id)).model).toBeUndefined()
      expect((await test.stores.history.runs(id)).map((r) => r.question)).toEqual(['run_python'])
      configured = true
      const { result } = await askAll(service, id, 'What is x?')
      expect(result.answer).toBe('x is 41.')
      // Reopened with the model: the first sandbox ended, the cell replayed in the second.
      expect(mock.sandboxes.map((s) => s.killed)).toEqual([true, false])
      expect(mock.calls.map((c) => c.code)).toEqual(['x = 41', 'x = 41'])
      expect(promptText(model, 0)).toContain('x = 41')
      expect((await service.getSession(id)).model).toBe('scripted:later')
    } finally {
      await service.shutdown()
    }
  })

  it("names a caller's cell's images as asked", async () => {
    const png = 'iVBORw0KGgo='
    const mock = new MockSandboxProvider(() => [
      { type: 'result', isMainResult: false, bundle: { 'image/png': png, 'text/plain': '<Figure>' } },
      { type: 'result', isMainResult: false, bundle: { 'image/png': png, 'text/plain': '<Figure>' } },
    ])
    const { service, stores } = await open([], { mock })
    const { id } = await service.createSession()
    await service.runCell(id, 'plot()', { nameImage: (i) => `cell-a-chart-${i}.png` })
    await service.runCell(id, 'plot()')
    expect((await stores.history.artifacts(id)).map((a) => a.name)).toEqual([
      'cell-a-chart-1.png',
      'cell-a-chart-2.png',
      'step-1-chart-1.png',
      'step-1-chart-2.png',
    ])
  })

  it('data added to a live session reaches its sandbox and the next prompt', async () => {
    const { service, mock, model, home } = await open([{ text: 'One file.' }, { text: 'Two files.' }])
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    await askAll(service, id, 'Which files?')
    const extra = join(home, 'targets.csv')
    writeFileSync(extra, 'region,target\nNorth,100\n')
    await service.addData(id, [{ path: extra }])
    expect(mock.sandboxes[0]?.data).toEqual(['sales.csv', 'targets.csv'])
    await askAll(service, id, 'And now?')
    expect(promptText(model, 0)).not.toContain('data/targets.csv')
    expect(promptText(model, 1)).toContain('data/targets.csv')
  })

  it('refuses data that cannot be read, naming the file, and records nothing', async () => {
    const { service, stores, home } = await open([])
    const { id } = await service.createSession()
    const bad = join(home, 'picture.csv')
    writeFileSync(bad, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0, 1, 2, 3]))
    await expect(service.addData(id, [{ path: bad }])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('picture.csv cannot be read as data'),
    })
    expect(await stores.history.datasets(id)).toEqual([])
  })

  it('a question abandoned mid-step is recorded as interrupted, and the conversation stays valid', async () => {
    const { service, stores } = await open([{ code: 'x = 1' }, { text: 'Later answer.' }])
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    const asking = service.ask(id, 'Start.')
    for (let next = await asking.next(); !next.done; next = await asking.next()) {
      if (next.value.type === 'code') break
    }
    await asking.return(undefined as never)
    const [run] = await stores.history.runs(id)
    expect(run).toMatchObject({ status: 'interrupted' })
    // Each tool call of the stored conversation has exactly one result.
    const messages = (await stores.history.messages(id)) as Array<{ role: string; content: unknown }>
    const parts = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])) as Array<{
      type: string
      toolCallId?: string
    }>
    const calls = parts.filter((p) => p.type === 'tool-call').map((p) => p.toolCallId)
    const results = parts.filter((p) => p.type === 'tool-result').map((p) => p.toolCallId)
    expect(calls.length).toBe(1)
    expect(results).toEqual(calls)
    const { result } = await askAll(service, id, 'Go on.')
    expect(result.answer).toBe('Later answer.')
  })

  it("a Stop is recorded as one: the run's reason, the running step kept with its output so far, the model told", async () => {
    // A cell that prints, then runs until it is interrupted.
    const mock = new MockSandboxProvider((code) =>
      code.includes('forever')
        ? (async function* () {
            yield { type: 'stdout' as const, text: 'counting\n' }
            await new Promise(() => {})
          })()
        : [{ type: 'stdout', text: `ran: ${code}\n` }],
    )
    const { service, stores } = await open(
      [
        { code: 'forever()' },
        (prompt) => ({
          text: JSON.stringify(prompt).includes('stopped before it finished') ? 'Told.' : 'Not told.',
        }),
      ],
      { mock },
    )
    const { id } = await service.createSession()
    const events: string[] = []
    const asking = (async () => {
      for await (const event of service.ask(id, 'Start.')) {
        events.push(event.type)
        if (event.type === 'stdout')
          expect(await service.stop(id, { runId: undefined })).toEqual({ stopped: 1 })
      }
    })()
    await expect(asking).rejects.toMatchObject({ name: 'StoppedError', message: 'Stopped.' })
    const [run] = await stores.history.runs(id)
    expect(run).toMatchObject({ status: 'interrupted', error: 'Stopped.' })
    const steps = await stores.history.steps(id)
    expect(steps.map((step) => [step.code, step.stdout, step.stopped, step.success])).toEqual([
      ['forever()', 'counting\n', 'Stopped.', false],
    ])
    // Nothing left to stop; another owner cannot stop anything of it.
    expect(await service.stop(id)).toEqual({ stopped: 0 })
    await expect(service.stop(id, { owner: 'someone else' })).rejects.toThrow(NotFoundError)
    const { result } = await askAll(service, id, 'Go on.')
    expect(result.answer).toBe('Told.')
  })

  it('a cell asked while the kernel restarts waits for the restart, which gives back only its own hold on the lease', async () => {
    const order: string[] = []
    const mock = new MockSandboxProvider((code) => {
      order.push(`ran ${code}`)
      return [{ type: 'stdout', text: 'ok\n' }]
    })
    const first = await open([], { mock })
    const { id } = await first.service.createSession()
    // The restart's giving back of the lease held until the test lets it go.
    let slowRelease = false
    let letGo = () => {}
    let releasing = () => {}
    const released = new Promise<void>((resolve) => (releasing = resolve))
    const history = first.stores.history
    const gated = Object.create(history) as typeof history
    gated.releaseLease = async (sessionId, holder) => {
      if (slowRelease) {
        slowRelease = false
        releasing()
        await new Promise<void>((resolve) => (letGo = resolve))
      }
      await history.releaseLease(sessionId, holder)
      order.push('lease given back')
    }
    const service = new SessionService({ ...serviceOptions(first, mock), history: gated })
    onTestFinished(() => service.shutdown())
    await service.runCell(id, 'x = 1')
    order.length = 0
    slowRelease = true
    const restarting = service.restartKernel(id)
    await released
    const cell = service.runCell(id, 'print(x)')
    // A moment for a cell that did not wait to run (it would share the restart's lease).
    await new Promise((resolve) => setTimeout(resolve, 100))
    letGo()
    expect(await restarting).toEqual({ replaying: 1 })
    expect((await cell).execution?.logs.stdout.join('')).toBe('ok\n')
    // The restart's lease was given back before the cell ran (and took its own).
    expect(order.slice(0, 2)).toEqual(['lease given back', 'ran x = 1'])
    expect(order).toContain('ran print(x)')
  })

  it('a question aborted while it waits for its turn gives up its place and records nothing', async () => {
    const { service, stores } = await open([{ code: 'x = 1' }, { text: 'First.' }, { text: 'Third.' }])
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    const controller = new AbortController()
    const first = askAll(service, id, 'First?')
    const second = askAll(service, id, 'Second?', controller.signal)
    controller.abort(new Error('the client went away'))
    const third = askAll(service, id, 'Third?')
    await expect(second).rejects.toThrow('the client went away')
    expect((await first).result.answer).toBe('First.')
    expect((await third).result.answer).toBe('Third.')
    expect((await stores.history.runs(id)).map((r) => r.question)).toEqual(['First?', 'Third?'])
  })

  it('a session whose data is gone from the store says so, with what to do', async () => {
    const { service, stores } = await open([{ text: 'unused' }])
    const { id } = await service.createSession()
    const [dataset] = await service.addData(id, [{ path: SALES }])
    unlinkSync(stores.blobs.localPath?.(dataset?.sha256 as string) as string)
    const error = await askAll(service, id, 'Anything?').catch((e: unknown) => e)
    expect(MissingDataError.isInstance(error)).toBe(true)
    expect(ModelCallError.isInstance(error)).toBe(false)
    expect(error).toMatchObject({ status: 409, fix: { setting: 'data' } })
    expect((await stores.history.runs(id)).length).toBe(0)
  })

  it('moves a dataset recorded before blobs (a host path only) into the blob store when it opens', async () => {
    const { service, stores, home } = await open([{ text: 'Read.' }])
    const { id } = await service.createSession()
    const legacy = join(home, 'legacy.csv')
    writeFileSync(legacy, 'a,b\n1,2\n')
    const [profiled] = await service.addData(id, [{ path: legacy }])
    await stores.history.putDataset(id, {
      name: 'legacy.csv',
      bytes: 8,
      sourcePath: legacy,
      profile: profiled?.profile as never,
    })
    expect((await stores.history.datasets(id))[0]?.sha256).toBeUndefined()
    await askAll(service, id, 'Read it.')
    expect((await stores.history.datasets(id))[0]?.sha256).toBe(profiled?.sha256)
  })

  it('keeps sessions of other owners out of sight', async () => {
    const { service } = await open([])
    const { id } = await service.createSession({ owner: 'a' })
    await expect(service.getSession(id, 'b')).rejects.toBeInstanceOf(NotFoundError)
    await expect(service.ask(id, 'Peek?', { owner: 'b' }).next()).rejects.toMatchObject({ status: 404 })
    await expect(service.addData(id, [{ path: SALES }], { owner: 'b' })).rejects.toMatchObject({
      status: 404,
    })
    expect((await service.listSessions({ owner: 'b' })).length).toBe(0)
  })

  it('closes an idle session, and after shutdown refuses new questions', async () => {
    const { service, mock } = await open([{ text: 'Hi.' }], { idleMs: 30 })
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    await askAll(service, id, 'Hello?')
    await waitFor(() => mock.sandboxes[0]?.killed, { what: 'the idle session to close its sandbox' })
    await service.shutdown()
    await expect(askAll(service, id, 'Again?')).rejects.toBeInstanceOf(ShuttingDownError)
  })

  it('deletes a session with its records and ends its sandbox', async () => {
    const { service, stores, mock } = await open([{ text: 'Hi.' }])
    const { id } = await service.createSession()
    await service.addData(id, [{ path: SALES }])
    await askAll(service, id, 'Hello?')
    await service.deleteSession(id)
    expect(mock.sandboxes[0]?.killed).toBe(true)
    expect(await stores.history.getSession(id)).toBeUndefined()
    await expect(service.sessionHistory(id)).rejects.toMatchObject({ status: 404 })
  })
})
