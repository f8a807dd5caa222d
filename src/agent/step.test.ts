import { describe, expect, it } from 'vitest'
import type { ExecutionEvent } from '../sandbox/backend.js'
import { Execution, ExecutionError, Sandbox } from '../sandbox/index.js'
import { type MockCell, MockSandboxProvider } from '../test/mock-sandbox.js'
import type { AgentEvent } from './events.js'
import { Evidence, unsupportedNumbers } from './grounding.js'
import type { Run } from './runs.js'
import {
  closingEvents,
  Repeats,
  runStep,
  type StepContext,
  type StepOutcome,
  type StepSettings,
} from './step.js'
import type { AnalystTool, ToolOutcome } from './tools.js'

/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

const usage = { inputTokens: 3, outputTokens: 4, totalTokens: 7 }

async function setup(cell?: MockCell, settings: Partial<StepSettings> = {}) {
  const provider = new MockSandboxProvider(cell)
  const sandbox = await Sandbox.create({ provider })
  const evidence = new Evidence()
  return {
    provider,
    sandbox,
    evidence,
    settings: { sandbox, cellTimeoutMs: 5000, vision: false, evidence, ...settings } satisfies StepSettings,
  }
}

async function step(
  run: Run,
  settings: StepSettings,
  context: Partial<StepContext> = {},
): Promise<{ events: AgentEvent[]; outcome: StepOutcome }> {
  const events: AgentEvent[] = []
  const running = runStep(run, settings, { step: 2, usage, repeats: new Repeats(), ...context })
  for (let next = await running.next(); ; next = await running.next()) {
    if (next.done) return { events, outcome: next.value }
    events.push(next.value)
  }
}

const mapTool = (outcome: ToolOutcome | (() => Promise<ToolOutcome>)): AnalystTool => ({
  name: 'render_map',
  description: 'Renders a map.',
  inputSchema: { type: 'object' },
  call: typeof outcome === 'function' ? outcome : async () => outcome,
})

describe('runStep: a cell', () => {
  it('runs the code, streams its events, and records it with what the model wrote and the tokens', async () => {
    const { settings, provider } = await setup(() => [
      { type: 'stdout', text: 'mean 813.0512\n' },
      { type: 'result', bundle: { 'text/plain': '400' }, isMainResult: true },
      {
        type: 'artifact',
        artifact: { name: 'out.csv', path: '/home/user/out.csv', size: 9, mimeType: 'text/csv' },
      },
    ])
    const { events, outcome } = await step(
      { type: 'cell', code: 'x = 1', call: { toolCallId: 'a', toolName: 'run_python' } },
      settings,
      {
        prose: 'Computing.',
      },
    )
    expect(provider.calls.map((c) => [c.code, c.timeoutMs])).toEqual([['x = 1', 5000]])
    expect(events.map((e) => e.type)).toEqual(['code', 'stdout', 'result', 'artifact'])
    expect(events[0]).toEqual({ type: 'code', step: 2, code: 'x = 1', source: 'tool' })
    expect(outcome).toMatchObject({ ran: true, images: [] })
    expect(outcome.observation).toBe(
      '[stdout]\nmean 813.0512\n[result] 400\n[files] saved in the workspace: out.csv (9 bytes, text/csv)',
    )
    expect(outcome.record).toMatchObject({
      step: 2,
      code: 'x = 1',
      text: 'Computing.',
      execution: { logs: { stdout: ['mean 813.0512\n'] }, results: [{ text: '400' }] },
      artifacts: [{ name: 'out.csv' }],
      images: [],
      usage,
    })
    expect(outcome.record?.durationMs).toBeGreaterThanOrEqual(0)
    // What it printed backs numbers in the answer.
    expect(
      unsupportedNumbers('The mean is 813.05 over 400 orders; 512.4 is made up.', settings.evidence),
    ).toEqual(['512.4'])
  })

  it('is marked as code from the text when no tool call asked for it', async () => {
    const { settings } = await setup()
    const { events } = await step({ type: 'cell', code: 'x = 1' }, settings)
    expect(events[0]).toMatchObject({ type: 'code', source: 'text' })
  })

  it('names its images for the user and, for a vision model, hands them on', async () => {
    const cell: MockCell = () => [
      { type: 'result', bundle: { 'image/png': PNG, 'text/plain': '<Figure>' }, isMainResult: false },
      { type: 'result', bundle: { 'image/jpeg': '/9j/4AAQ' }, isMainResult: false },
      { type: 'result', bundle: { 'text/plain': 'no image' }, isMainResult: true },
    ]
    const nameImage = (step: number, index: number) => `step-${step}-chart-${index}.png`
    const seeing = await setup(cell, { vision: true, nameImage })
    const { outcome } = await step({ type: 'cell', code: 'plot()' }, seeing.settings)
    expect(outcome.record?.images).toEqual(['step-2-chart-1.png', 'step-2-chart-2.png'])
    expect(outcome.observation).toContain(
      '[image] a chart (PNG 1×1), shown to the user as step-2-chart-1.png',
    )
    expect(outcome.images).toEqual([
      { data: PNG, mediaType: 'image/png' },
      { data: '/9j/4AAQ', mediaType: 'image/jpeg' },
    ])
    const blind = await setup(cell)
    expect((await step({ type: 'cell', code: 'plot()' }, blind.settings)).outcome.images).toEqual([])
  })

  it('is stopped by the guard before it runs: the model is told each rule, and the record keeps them', async () => {
    const violations = [{ rule: 'network', line: 1, column: 0, message: 'Network access is not available' }]
    const { settings, provider } = await setup(undefined, { check: async () => violations })
    const { events, outcome } = await step({ type: 'cell', code: 'import socket' }, settings)
    expect(provider.calls).toEqual([])
    expect(events).toEqual([
      { type: 'code', step: 2, code: 'import socket', source: 'text' },
      { type: 'guard', step: 2, violations },
    ])
    expect(outcome.observation).toBe(
      "Nothing ran: the code breaks the sandbox's rules.\n- line 1, column 0 [network]: Network access is not available",
    )
    expect(outcome).toMatchObject({
      ran: false,
      record: { code: 'import socket', violations, artifacts: [] },
    })
    expect(outcome.record?.execution).toBeUndefined()
  })

  it('does not start once the question is aborted', async () => {
    const { settings, provider } = await setup()
    const controller = new AbortController()
    controller.abort(new Error('stopped'))
    await expect(step({ type: 'cell', code: 'x' }, settings, { signal: controller.signal })).rejects.toThrow(
      'stopped',
    )
    expect(provider.calls).toEqual([])
  })

  it('rejects with the reason when aborted while the cell runs', async () => {
    const controller = new AbortController()
    const { settings } = await setup(async function* (): AsyncGenerator<ExecutionEvent> {
      yield { type: 'stdout', text: 'working\n' }
      await new Promise(() => {})
    })
    const events: AgentEvent[] = []
    const running = (async () => {
      for await (const event of runStep({ type: 'cell', code: 'sleep()' }, settings, {
        step: 1,
        usage,
        repeats: new Repeats(),
        signal: controller.signal,
      })) {
        events.push(event)
        if (event.type === 'stdout') controller.abort(new Error('stopped by the user'))
      }
    })()
    await expect(running).rejects.toThrow('stopped by the user')
    expect(events.map((e) => e.type)).toEqual(['code', 'stdout'])
  })
})

describe('runStep: an extra tool', () => {
  it('is called with its input; its observation is the output, its files are written and are artifacts', async () => {
    const { settings, sandbox } = await setup()
    let given: unknown
    const tool = mapTool(async (input?: unknown) => {
      given = input
      return {
        observation: '{"pixels": 1024}',
        files: [{ name: 'map.png', data: new Uint8Array([1, 2, 3]), mimeType: 'image/png' }],
      }
    })
    const { events, outcome } = await step(
      { type: 'tool', tool, input: { region: 'north' }, call: { toolCallId: 'a', toolName: 'render_map' } },
      settings,
      { prose: 'Drawing.' },
    )
    expect(given).toEqual({ region: 'north' })
    expect(events).toEqual([
      { type: 'code', step: 2, code: '# render_map({"region":"north"})', source: 'tool' },
      { type: 'stdout', step: 2, text: '{"pixels": 1024}\n' },
      {
        type: 'artifact',
        step: 2,
        artifact: { name: 'map.png', path: '/home/user/map.png', size: 3, mimeType: 'image/png' },
      },
    ])
    expect(await sandbox.files.read('map.png', { format: 'bytes' })).toEqual(new Uint8Array([1, 2, 3]))
    expect(outcome.observation).toBe('{"pixels": 1024}\nSaved in the working directory: map.png')
    expect(outcome).toMatchObject({
      ran: false,
      record: {
        code: '# render_map({"region":"north"})',
        text: 'Drawing.',
        tool: { name: 'render_map', input: { region: 'north' } },
        execution: {
          logs: { stdout: ['{"pixels": 1024}\n'], stderr: [] },
          results: [],
          artifacts: [{ name: 'map.png' }],
        },
        artifacts: [{ name: 'map.png' }],
        usage,
      },
    })
    expect(unsupportedNumbers('It has 1024 pixels.', settings.evidence)).toEqual([])
  })

  it("a call that failed is the step's ToolError, and the model is told why", async () => {
    const { settings } = await setup()
    const tool = mapTool({
      ok: false,
      observation: 'The Modal function maps/render failed: quota',
      files: [],
    })
    const { events, outcome } = await step(
      { type: 'tool', tool, input: undefined, call: { toolCallId: 'a', toolName: 'render_map' } },
      settings,
    )
    expect(events.map((e) => e.type)).toEqual(['code', 'error'])
    expect(events[0]).toMatchObject({ code: '# render_map({})' })
    expect(events[1]).toMatchObject({
      error: { name: 'ToolError', value: 'The Modal function maps/render failed: quota' },
    })
    expect(outcome.record?.execution).toMatchObject({ error: { name: 'ToolError' }, logs: { stdout: [] } })
    expect(outcome.observation).toBe('The Modal function maps/render failed: quota')
  })

  it('is given the signal, and a call that ignores it does not hold up an aborted question', async () => {
    const { settings } = await setup()
    const controller = new AbortController()
    let signal: AbortSignal | undefined
    const tool: AnalystTool = {
      ...mapTool({ observation: '', files: [] }),
      call: (_input, options) => {
        signal = options?.signal
        controller.abort(new Error('stopped by the user'))
        return new Promise(() => {})
      },
    }
    await expect(
      step({ type: 'tool', tool, input: {}, call: { toolCallId: 'a', toolName: 'render_map' } }, settings, {
        signal: controller.signal,
      }),
    ).rejects.toThrow('stopped by the user')
    expect(signal?.aborted).toBe(true)
  })
})

describe('runStep: a problem with the reply', () => {
  it('runs nothing and yields nothing: the message is what the model is told', async () => {
    const { settings, provider } = await setup()
    const { events, outcome } = await step(
      { type: 'problem', message: 'The code was empty; nothing ran.' },
      settings,
    )
    expect(events).toEqual([])
    expect(provider.calls).toEqual([])
    expect(outcome).toEqual({ observation: 'The code was empty; nothing ran.', ran: false, images: [] })
  })
})

describe('closingEvents', () => {
  it('tells the observation, then ends a step that tried something; a guarded step ends first', () => {
    const record = { step: 1, code: 'x', artifacts: [], durationMs: 1 }
    expect(closingEvents(1, { observation: 'o', ran: false, images: [] })).toEqual([
      { type: 'observation', step: 1, text: 'o' },
    ])
    expect(closingEvents(1, { observation: 'o', ran: true, images: [], record }).map((e) => e.type)).toEqual([
      'observation',
      'step-end',
    ])
    const guarded = { ...record, violations: [{ rule: 'r', line: 1, column: 0, message: 'm' }] }
    expect(closingEvents(1, { observation: 'o', ran: false, images: [], record: guarded })).toEqual([
      { type: 'step-end', step: 1, record: guarded },
      { type: 'observation', step: 1, text: 'o' },
    ])
  })
})

describe('Repeats', () => {
  const failed = (value: string) => new Execution([], undefined, new ExecutionError('NameError', value, ''))

  it('points out the same error twice in a row, and the same code twice in a row', () => {
    const repeats = new Repeats()
    expect(repeats.notesFor('a', failed("name 'a' is not defined"))).toEqual([])
    expect(repeats.notesFor('a + 1', failed("name 'a' is not defined"))).toEqual([
      expect.stringMatching(/^This is the same error as in your previous step/),
    ])
    expect(repeats.notesFor(' a + 1\n', failed("name 'b' is not defined"))).toEqual([
      expect.stringMatching(/^You ran exactly the same code as in the previous step/),
    ])
    // Only the step before counts.
    expect(repeats.notesFor('c', new Execution())).toEqual([])
    expect(repeats.notesFor('d', failed("name 'b' is not defined"))).toEqual([])
  })

  it('knows the code that ran without an error, trimmed', () => {
    const repeats = new Repeats()
    repeats.notesFor(' print(total)\n', new Execution())
    repeats.notesFor('boom', failed('boom'))
    expect([...repeats.ranWithoutError]).toEqual(['print(total)'])
  })
})
