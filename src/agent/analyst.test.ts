/**
 * The loop's edge cases through `Analyst`, with a mock sandbox (scripted cells) and a scripted
 * model: no kernel, no network. The real jail and HTTP are in test/agent.
 */
import type { LanguageModelV3Content } from '@ai-sdk/provider'
import type { ModelMessage, ToolResultPart } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { describe, expect, it } from 'vitest'
import { ConflictError, InvalidArgumentError } from '../errors.js'
import { ScriptedModel, type ScriptStep } from '../models/scripted.js'
import type { ExecutionEvent } from '../sandbox/backend.js'
import { Execution, Sandbox } from '../sandbox/index.js'
import { type MockCell, MockSandboxProvider } from '../test/mock-sandbox.js'
import { Analyst, type AnalystOptions, type AnalystTool } from './analyst.js'
import type { AgentEvent } from './events.js'
import { CANCELLED } from './history.js'

/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

/** A mock cell: a name never defined raises, a plot shows a PNG, anything else prints what ran. */
const cells: MockCell = (code) => {
  if (code.includes('undefined_name'))
    return [
      {
        type: 'error',
        name: 'NameError',
        value: "name 'undefined_name' is not defined",
        traceback: 'Traceback',
      },
    ]
  if (code.includes('plot'))
    return [{ type: 'result', bundle: { 'image/png': PNG, 'text/plain': '<Figure>' }, isMainResult: false }]
  return [{ type: 'stdout', text: `ran: ${code}\n` }]
}

async function analyst(
  script: ScriptStep[] | MockLanguageModelV3,
  options: Partial<AnalystOptions> & { cell?: MockCell } = {},
) {
  const provider = new MockSandboxProvider(options.cell ?? cells)
  const sandbox = await Sandbox.create({ provider })
  const model = Array.isArray(script) ? new ScriptedModel(script) : script
  const session = new Analyst({ model, mode: 'tools', sandbox, dataDescription: '', ...options })
  return { session, model: model as ScriptedModel, provider, sandbox }
}

async function ask(session: Analyst, question: string, signal?: AbortSignal) {
  const events: AgentEvent[] = []
  for await (const event of session.ask(question, { signal })) events.push(event)
  const done = events.at(-1)
  if (done?.type !== 'done') throw new Error('no done event')
  return { events, result: done.result }
}

const observations = (events: AgentEvent[]) =>
  events.flatMap((e) => (e.type === 'observation' ? [e.text] : []))

/** The messages the model was sent on its nth call (0-based), as JSON. */
const prompt = (model: ScriptedModel, call: number) => JSON.stringify(model.calls[call]?.prompt ?? [])

/**
 * What a strict provider requires of a conversation: each tool call answered exactly once, before
 * the next message of another role, by a result under the call's own name.
 */
function expectValidHistory(messages: ModelMessage[] | Array<{ role: string; content: unknown }>) {
  let open = new Map<string, string>()
  for (const message of messages) {
    const parts = (Array.isArray(message.content) ? message.content : []) as Array<{
      type: string
      toolCallId?: string
      toolName?: string
    }>
    if (message.role === 'tool') {
      for (const part of parts.filter((p) => p.type === 'tool-result')) {
        expect(open.get(part.toolCallId ?? ''), `the result of ${part.toolCallId}`).toBe(part.toolName)
        open.delete(part.toolCallId ?? '')
      }
      continue
    }
    expect([...open.keys()], 'tool calls without a result').toEqual([])
    open = new Map(
      parts.filter((p) => p.type === 'tool-call').map((p) => [p.toolCallId ?? '', p.toolName ?? '']),
    )
  }
  expect([...open.keys()], 'tool calls without a result').toEqual([])
}

function toolResults(messages: ModelMessage[]): ToolResultPart[] {
  return messages.flatMap((m) =>
    m.role === 'tool' ? m.content.filter((p): p is ToolResultPart => p.type === 'tool-result') : [],
  )
}

/** An extra tool whose call never answers, and ignores its signal. */
function waitingTool(name = 'render_map') {
  const calls: Array<{ input: unknown; signal?: AbortSignal }> = []
  let started: () => void = () => {}
  const whenStarted = new Promise<void>((resolve) => {
    started = resolve
  })
  const tool: AnalystTool = {
    name,
    description: 'Renders a map (slowly).',
    inputSchema: { type: 'object', properties: { region: { type: 'string' } } },
    call: (input, options) => {
      calls.push({ input, signal: options?.signal })
      started()
      return new Promise(() => {})
    },
  }
  return { tool, calls, whenStarted }
}

/** A model that replies with these contents, one list per call, not streamed. */
function contentModel(replies: LanguageModelV3Content[][]) {
  let next = 0
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const content = replies[next++] ?? [{ type: 'text', text: 'Done.' }]
      const calls = content.some((part) => part.type === 'tool-call')
      return {
        content,
        finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 10, text: 10, reasoning: undefined },
        },
        warnings: [],
      }
    },
  })
}

const runPython = (id: string, code: string): LanguageModelV3Content => ({
  type: 'tool-call',
  toolCallId: id,
  toolName: 'run_python',
  input: JSON.stringify({ code }),
})

describe.each([true, false])('a question (stream: %s)', (stream) => {
  it('goes step by step to the answer: events in order, records, usage and the conversation', async () => {
    const { session, model } = await analyst([{ code: 'print(12)' }, { text: 'The total is 12.' }], {
      stream,
    })
    const { events, result } = await ask(session, 'What is the total?')
    expect(events.filter((e) => e.type !== 'model-text-delta').map((e) => e.type)).toEqual([
      'step-start',
      'usage',
      'code',
      'stdout',
      'observation',
      'step-end',
      'step-start',
      'usage',
      'model-text',
      'answer',
      'done',
    ])
    const deltas = events.flatMap((e) => (e.type === 'model-text-delta' ? [e.delta] : []))
    expect(deltas.join('')).toBe(stream ? 'The total is 12.' : '')
    expect(events[0]).toEqual({ type: 'step-start', step: 1, maxSteps: 8 })
    expect(events.find((e) => e.type === 'usage')).toEqual({
      type: 'usage',
      step: 1,
      usage: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
      total: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
    })
    expect(result).toMatchObject({
      answer: 'The total is 12.',
      incomplete: false,
      unsupportedNumbers: [],
      usage: { totalTokens: 40 },
      model: 'scripted:script',
      sessionId: session.sessionId,
    })
    expect(result.steps).toMatchObject([
      {
        step: 1,
        code: 'print(12)',
        execution: { logs: { stdout: ['ran: print(12)\n'] } },
        usage: { totalTokens: 20 },
      },
    ])
    expect(events.find((e) => e.type === 'step-end')).toEqual({
      type: 'step-end',
      step: 1,
      record: result.steps[0],
    })
    expect(session.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
    expect(session.messages.at(-1)).toEqual({ role: 'assistant', content: 'The total is 12.' })
    expect(prompt(model, 1)).toContain('ran: print(12)')
    expectValidHistory(session.messages)
    // The next question carries on from there; usage adds up per session.
    await ask(session, 'And again?')
    expect(session.usage.totalTokens).toBe(60)
  })

  it('in text mode, sends the output back as a user message labelled as output', async () => {
    const { session, model } = await analyst(
      [{ text: 'Looking.', code: 'print(1)' }, { text: 'It printed one.' }],
      {
        mode: 'text',
        stream,
      },
    )
    const { events, result } = await ask(session, 'Print one.')
    expect(events.find((e) => e.type === 'code')).toMatchObject({ source: 'text' })
    expect(result.steps[0]?.text).toBe('Looking.')
    expect(session.messages[2]).toEqual({
      role: 'user',
      content: 'Output of your code:\n[stdout]\nran: print(1)',
    })
    expect(model.calls[0]?.tools).toBeUndefined()
  })
})

describe('broken tool calls', () => {
  it('invalid JSON arguments: nothing runs, the model is told, and the call has exactly one result', async () => {
    const { session, model, provider } = await analyst([
      { toolCall: { name: 'run_python', input: '{"code": "print(1)' } },
      { code: 'print(2)' },
      { text: 'It is 2.' },
    ])
    const { events, result } = await ask(session, 'q')
    expect(observations(events)[0]).toMatch(/^The run_python call had invalid arguments; nothing ran\./)
    expect(provider.calls.map((c) => c.code)).toEqual(['print(2)'])
    expect(result.steps.map((s) => s.code)).toEqual(['print(2)'])
    // No step-end for a call that ran nothing.
    expect(events.filter((e) => e.type === 'step-end')).toHaveLength(1)
    expect(toolResults(session.messages).filter((r) => r.toolCallId === 'call_1')).toMatchObject([
      { toolName: 'run_python', output: { type: 'text', value: expect.stringMatching(/invalid arguments/) } },
    ])
    expectValidHistory(model.calls[1]?.prompt ?? [])
  })

  it("an unknown tool's call is answered under the name the model called", async () => {
    const { session, model } = await analyst([
      { toolCall: { name: 'run_sql', input: '{"query": "select 1"}' } },
      { text: 'Done.' },
    ])
    const { events } = await ask(session, 'q')
    expect(observations(events)).toEqual([
      'There is no tool named run_sql. Use run_python with a "code" argument.',
    ])
    expect(toolResults(session.messages)).toMatchObject([{ toolCallId: 'call_1', toolName: 'run_sql' }])
    expectValidHistory(model.calls[1]?.prompt ?? [])
  })

  it('empty code runs nothing', async () => {
    const { session, provider } = await analyst([{ code: '   ' }, { text: 'Done.' }])
    const { events, result } = await ask(session, 'q')
    expect(observations(events)).toEqual(['The code was empty; nothing ran.'])
    expect(provider.calls).toEqual([])
    expect(result.steps).toEqual([])
  })

  it('several calls in one reply run in order, as one step, each answered in one tool message', async () => {
    const drawn: unknown[] = []
    const mapTool: AnalystTool = {
      name: 'render_map',
      description: 'Renders a map.',
      inputSchema: { type: 'object' },
      call: async (input) => {
        drawn.push(input)
        return { observation: 'drawn', files: [] }
      },
    }
    const model = contentModel([
      [
        { type: 'text', text: 'Three at once.' },
        runPython('a', 'x = 1'),
        { type: 'tool-call', toolCallId: 'b', toolName: 'render_map', input: '{"region": "north"}' },
        { type: 'tool-call', toolCallId: 'c', toolName: 'run_sql', input: '{}' },
        runPython('d', 'print(x)'),
      ],
    ])
    const { session, provider } = await analyst(model, { tools: [mapTool], stream: false })
    const { events, result } = await ask(session, 'q')
    expect(provider.calls.map((c) => c.code)).toEqual(['x = 1', 'print(x)'])
    expect(drawn).toEqual([{ region: 'north' }])
    expect(result.steps.map((s) => [s.step, s.code, s.text])).toEqual([
      [1, 'x = 1', 'Three at once.'],
      [1, '# render_map({"region":"north"})', 'Three at once.'],
      [1, 'print(x)', 'Three at once.'],
    ])
    expect(observations(events)).toHaveLength(4)
    expect(session.messages.filter((m) => m.role === 'tool')).toHaveLength(1)
    expect(toolResults(session.messages).map((r) => [r.toolCallId, r.toolName])).toEqual([
      ['a', 'run_python'],
      ['b', 'render_map'],
      ['c', 'run_sql'],
      ['d', 'run_python'],
    ])
    expectValidHistory(model.doGenerateCalls[1]?.prompt ?? [])
  })
})

describe('replies that are not code', () => {
  it.each([
    [
      'a reply cut off by length',
      { text: '```python\nx = pd.read_csv(', finishReason: 'length' as const },
      /cut off \(too long\)/,
    ],
    ['an unterminated fence', { text: '```python\nprint(1)' }, /not closed with ```/],
    ['another language', { text: '```sql\nSELECT 1\n```' }, /Only Python runs here, not sql/],
    ['an empty reply', { text: '' }, /Your reply was empty/],
  ])('%s is told back to the model; nothing runs', async (_, reply, told) => {
    const { session, model, provider } = await analyst([reply, { text: 'Done.' }], { mode: 'text' })
    const { events, result } = await ask(session, 'q')
    expect(observations(events)).toEqual([expect.stringMatching(told)])
    expect(provider.calls).toEqual([])
    expect(result.steps).toEqual([])
    expect(result.answer).toBe('Done.')
    // Told as what it is, not as output of code.
    const last = model.calls[1]?.prompt.at(-1)
    expect(last?.role).toBe('user')
    expect(JSON.stringify(last?.content)).not.toContain('Output of your code')
    expect(JSON.stringify(last?.content)).toMatch(told)
  })

  it('follow-ups come with the final answer, in the same model call, off its text and its numbers', async () => {
    const model = contentModel([
      [runPython('c1', 'print(12)')],
      [{ type: 'text', text: 'The total is 12.\n\nFollow-ups:\n- Which month had 99 sales?\n- By region?' }],
    ])
    const { session } = await analyst(model, { stream: false })
    const { events, result } = await ask(session, 'q')
    // One call for the code, one for the answer: none for the suggestions.
    expect(model.doGenerateCalls).toHaveLength(2)
    const followUps = ['Which month had 99 sales?', 'By region?']
    expect(events.find((e) => e.type === 'answer')).toMatchObject({
      text: 'The total is 12.',
      followUps,
      unsupportedNumbers: [],
    })
    expect(result).toMatchObject({ answer: 'The total is 12.', followUps })
    // The prompt asks for them.
    expect(JSON.stringify(model.doGenerateCalls[1]?.prompt[0])).toContain('Follow-ups:')
  })

  it('a final answer that shows code it already ran answers, and the code does not run again', async () => {
    const { session, provider } = await analyst(
      [{ code: 'print(total)' }, { text: 'The total is 12.\n```python\nprint(total)\n```' }],
      { mode: 'text' },
    )
    const { result } = await ask(session, 'q')
    expect(provider.calls).toHaveLength(1)
    expect(result).toMatchObject({
      incomplete: false,
      answer: 'The total is 12.\n```python\nprint(total)\n```',
    })
  })

  it('code shown again after it failed runs again', async () => {
    const { session, provider } = await analyst(
      [{ code: 'undefined_name' }, { text: 'Again:\n```python\nundefined_name\n```' }, { text: 'No.' }],
      { mode: 'text' },
    )
    await ask(session, 'q')
    expect(provider.calls).toHaveLength(2)
  })
})

describe('repeats and the step cap', () => {
  it('the same error twice in a row is pointed out', async () => {
    const { session, model } = await analyst([
      { code: 'undefined_name' },
      { code: 'undefined_name + 1' },
      { text: 'No.' },
    ])
    const { events } = await ask(session, 'q')
    expect(observations(events)[0]).not.toMatch(/same error/)
    expect(observations(events)[1]).toMatch(/\[note\] This is the same error as in your previous step/)
    expect(prompt(model, 2)).toContain('same error as in your previous step')
  })

  it('the same code twice in a row is pointed out', async () => {
    const { session } = await analyst([{ code: 'print(1)' }, { code: 'print(1)\n' }, { text: 'One.' }])
    const { events } = await ask(session, 'q')
    expect(observations(events)[0]).not.toMatch(/same code/)
    expect(observations(events)[1]).toMatch(/\[note\] You ran exactly the same code as in the previous step/)
  })

  it('the step cap ends the question as incomplete, with what the code found', async () => {
    const { session, model } = await analyst(
      [{ code: 'a = 1' }, { code: 'undefined_name' }, { code: 'b = 2' }, { text: 'never asked' }],
      { maxSteps: 3 },
    )
    const { events, result } = await ask(session, 'q')
    expect(model.calls).toHaveLength(3)
    expect(result.incomplete).toBe(true)
    expect(result.answer).toBe(
      'The analysis stopped after 3 steps without a final answer (incomplete).\nWhat the code found so far:\nStep 1:\nran: a = 1\nStep 3:\nran: b = 2',
    )
    expect(events.find((e) => e.type === 'answer')).toEqual({
      type: 'answer',
      text: result.answer,
      incomplete: true,
      unsupportedNumbers: [],
    })
    expect(events.flatMap((e) => (e.type === 'step-start' ? [[e.step, e.maxSteps]] : []))).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ])
    // The findings are not the model's words: the conversation does not claim them.
    expect(session.messages.at(-1)?.role).toBe('tool')
    expectValidHistory(session.messages)
  })
})

describe('images', () => {
  it('a vision model is shown the charts after the results; names reach the record and the model', async () => {
    const nameImage = (step: number, index: number) => `chart-${step}-${index}.png`
    const seeing = await analyst([{ code: 'plot()' }, { text: 'A chart.' }], { vision: true, nameImage })
    const { result } = await ask(seeing.session, 'Plot it.')
    expect(result.steps[0]?.images).toEqual(['chart-1-1.png'])
    const sent = seeing.model.calls[1]?.prompt ?? []
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user'])
    expect(sent.at(-1)?.content).toMatchObject([
      { type: 'text', text: 'The charts from that step:' },
      { type: 'file', mediaType: 'image/png' },
    ])
    expect(JSON.stringify(sent[3])).toContain('shown to the user as chart-1-1.png')

    const blind = await analyst([{ code: 'plot()' }, { text: 'A chart.' }])
    await ask(blind.session, 'Plot it.')
    expect((blind.model.calls[1]?.prompt ?? []).map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
    ])
  })
})

describe('the session', () => {
  it('answers one question at a time', async () => {
    const { session } = await analyst([{ text: 'One.' }, { text: 'Two.' }])
    const first = session.ask('q1')
    await first.next()
    await expect(session.ask('q2').next()).rejects.toSatisfy((error) => ConflictError.isInstance(error))
    for await (const _ of first) {
      // consume
    }
    expect((await ask(session, 'q3')).result.answer).toBe('Two.')
  })

  it('refuses extra tools in text mode, where the model is offered none', async () => {
    const { tool } = waitingTool()
    await expect(analyst([], { mode: 'text', tools: [tool] })).rejects.toSatisfy(
      (error) =>
        InvalidArgumentError.isInstance(error) &&
        /render_map need a model that calls tools/.test(String(error)),
    )
  })

  it("a cell run outside the conversation is told to the model, and its output backs the answer's numbers", async () => {
    const { session, model } = await analyst([{ text: 'The mean is 813.05.' }])
    const execution = new Execution()
    execution.logs.stdout.push('mean 813.0512\n')
    session.noteCell('print(mean)', execution)
    const { result } = await ask(session, 'What is the mean?')
    expect(result.unsupportedNumbers).toEqual([])
    expect(prompt(model, 0)).toContain('This code was run in the sandbox outside our conversation')
  })

  it('new data reaches the next prompt', async () => {
    const { session, model } = await analyst([{ text: 'Yes.' }])
    session.setDataDescription('data/late.csv: 3 rows, columns a, b')
    await ask(session, 'Is there data?')
    expect(model.calls[0]?.prompt[0]).toMatchObject({
      role: 'system',
      content: expect.stringContaining('data/late.csv'),
    })
  })
})

describe("files the step's keeper refused (the server's disk full)", () => {
  const written: MockCell = () => [
    {
      type: 'artifact',
      artifact: {
        name: 'big.bin',
        path: '/home/user/big.bin',
        size: 3,
        mimeType: 'application/octet-stream',
      },
    },
    { type: 'stdout', text: 'written\n' },
  ]
  const reason = "the server's disk is full"

  it('the model is told which file was not kept and why before its next call; the result leaves it out', async () => {
    const { session, model } = await analyst([{ code: 'write()' }, { text: 'Done.' }], { cell: written })
    const events: AgentEvent[] = []
    for await (const event of session.ask('Write it.')) {
      // What the session's recorder does when the blob store has no room for the file.
      if (event.type === 'step-end') {
        event.record.artifacts = []
        event.record.refused = [{ name: 'big.bin', reason }]
      }
      events.push(event)
    }
    const sent = prompt(model, 1)
    expect(sent).toContain("[not kept] big.bin: the server's disk is full")
    expect(sent).toMatch(/do not offer it in your answer/)
    // The run's events say it too, after the step's end.
    const types = events.map((event) => event.type)
    expect(types.lastIndexOf('observation')).toBeGreaterThan(types.indexOf('step-end'))
    expect(observations(events).at(-1)).toMatch(/^\[not kept\] big\.bin/)
    const done = events.at(-1)
    expect(done?.type === 'done' && done.result.artifacts).toEqual([])
    expectValidHistory(session.messages)
  })

  it('in text mode and for a cell run outside the conversation alike', async () => {
    const { session, model } = await analyst([{ code: 'write()' }, { text: 'Done.' }], {
      cell: written,
      mode: 'text',
    })
    for await (const event of session.ask('Write it.'))
      if (event.type === 'step-end') event.record.refused = [{ name: 'big.bin', reason }]
    expect(prompt(model, 1)).toContain('[not kept] big.bin')
    session.noteCell('write()', undefined, [], [{ name: 'chart.png', reason }])
    expect(JSON.stringify(session.messages.at(-1))).toContain(
      "[not kept] chart.png: the server's disk is full",
    )
  })
})

describe('cancellation', () => {
  it('during the model call: the question rejects with the reason, and the next one goes on', async () => {
    let called: () => void = () => {}
    const whenCalled = new Promise<void>((resolve) => {
      called = resolve
    })
    let calls = 0
    const model = new MockLanguageModelV3({
      doStream: async ({ abortSignal }) => {
        if (calls++ > 0) return new ScriptedModel([{ text: 'Here now.' }]).doStream({ prompt: [] })
        called()
        return new Promise((_, reject) =>
          abortSignal?.addEventListener('abort', () => reject(abortSignal.reason)),
        )
      },
    })
    const { session } = await analyst(model)
    const controller = new AbortController()
    const asking = ask(session, 'Slow?', controller.signal)
    await whenCalled
    controller.abort(new Error('stopped by the user'))
    await expect(asking).rejects.toThrow('stopped by the user')
    expect(session.messages).toEqual([{ role: 'user', content: 'Slow?' }])
    const { result } = await ask(session, 'Now?')
    expect(result.answer).toBe('Here now.')
    expect(model.doStreamCalls[1]?.prompt.map((m) => m.role)).toEqual(['system', 'user', 'user'])
  })

  it.each(['tools', 'text'] as const)(
    'during a cell (%s mode): no step-end, a call answered as cancelled, the next question valid',
    async (mode) => {
      const waiting: MockCell = (code, options) =>
        code.includes('sleep')
          ? (async function* (): AsyncGenerator<ExecutionEvent> {
              yield { type: 'stdout', text: 'waiting\n' }
              await new Promise(() => {})
            })()
          : cells(code, options)
      const { session, model } = await analyst([{ code: 'sleep()' }, { text: 'Stopped before.' }], {
        mode,
        cell: waiting,
      })
      const controller = new AbortController()
      const events: AgentEvent[] = []
      const asking = (async () => {
        for await (const event of session.ask('Wait.', { signal: controller.signal })) {
          events.push(event)
          if (event.type === 'stdout') controller.abort(new Error('stopped by the user'))
        }
      })()
      await expect(asking).rejects.toThrow('stopped by the user')
      expect(events.map((e) => e.type).filter((t) => t !== 'model-text-delta')).toEqual(
        mode === 'tools'
          ? ['step-start', 'usage', 'code', 'stdout']
          : ['step-start', 'usage', 'model-text', 'code', 'stdout'],
      )
      if (mode === 'tools')
        expect(toolResults(session.messages)).toMatchObject([
          { toolCallId: 'call_1', toolName: 'run_python', output: { value: CANCELLED } },
        ])
      // Code from the text that did not finish is said too: the kernel may hold part of it.
      else
        expect(session.messages.slice(1)).toMatchObject([
          { role: 'assistant' },
          { role: 'user', content: CANCELLED },
        ])
      const { result } = await ask(session, 'Go on.')
      expect(result.answer).toBe('Stopped before.')
      expectValidHistory(model.calls[1]?.prompt ?? [])
    },
  )

  it('abandoned once a cell has run: the model is told what it found, not that it was cancelled', async () => {
    const { session, model } = await analyst([{ code: 'print(41 + 1)' }, { text: 'It was 42.' }])
    const asking = session.ask('Add.')
    for (let next = await asking.next(); !next.done; next = await asking.next()) {
      if (next.value.type === 'observation') break
    }
    await asking.return(undefined as never)
    expect(toolResults(session.messages)).toMatchObject([
      { toolCallId: 'call_1', output: { value: '[stdout]\nran: print(41 + 1)' } },
    ])
    await ask(session, 'Go on.')
    expectValidHistory(model.calls[1]?.prompt ?? [])
  })

  it('aborted at the end of a step: the next step does not start', async () => {
    const { session, model } = await analyst([{ code: 'x = 1' }, { code: 'y = 2' }])
    const controller = new AbortController()
    const asking = (async () => {
      for await (const event of session.ask('q', { signal: controller.signal }))
        if (event.type === 'step-end') controller.abort(new Error('stopped by the user'))
    })()
    await expect(asking).rejects.toThrow('stopped by the user')
    expect(model.calls).toHaveLength(1)
    expectValidHistory(session.messages)
  })

  it("a question abandoned at an extra tool's call answers that call under the tool's name", async () => {
    const { tool } = waitingTool()
    const { session, model } = await analyst(
      [{ toolCall: { name: 'render_map', input: '{"region": "north"}' } }, { text: 'Nothing was drawn.' }],
      { tools: [tool] },
    )
    const asking = session.ask('Draw the north.')
    for (let next = await asking.next(); !next.done; next = await asking.next()) {
      if (next.value.type === 'code') break
    }
    await asking.return(undefined as never)
    expect(toolResults(session.messages)).toMatchObject([
      { toolCallId: 'call_1', toolName: 'render_map', output: { value: CANCELLED } },
    ])
    expectValidHistory(session.messages)
    // The next question goes out with that history, and the model got it valid.
    await ask(session, 'Go on.')
    expectValidHistory(model.calls[1]?.prompt ?? [])
  })

  it("a question aborted during an extra tool's call rejects with the reason, the call answered under its name", async () => {
    const { tool, calls, whenStarted } = waitingTool()
    const { session, model } = await analyst(
      [{ toolCall: { name: 'render_map', input: '{"region": "north"}' } }, { text: 'Nothing was drawn.' }],
      { tools: [tool] },
    )
    const controller = new AbortController()
    const events: AgentEvent[] = []
    const asking = (async () => {
      for await (const event of session.ask('Draw the north.', { signal: controller.signal }))
        events.push(event)
    })()
    await whenStarted
    controller.abort(new Error('stopped by the user'))
    // The tool never answers, and ignores its signal: the question ends all the same.
    await expect(asking).rejects.toThrow('stopped by the user')
    expect(calls[0]?.signal?.aborted).toBe(true)
    expect(events.filter((e) => e.type === 'step-end')).toEqual([])
    expect(toolResults(session.messages)).toMatchObject([{ toolCallId: 'call_1', toolName: 'render_map' }])
    await ask(session, 'Go on.')
    expectValidHistory(model.calls[1]?.prompt ?? [])
  })
})
