import type { ModelMessage } from 'ai'
import { describe, expect, it } from 'vitest'
import { Execution } from '../sandbox/index.js'
import { CANCELLED, outsideCellMessage, replyMessages, StepHistory } from './history.js'
import type { Run } from './runs.js'
import type { StepOutcome } from './step.js'

const cell = (id: string, code = 'x = 1'): Run => ({
  type: 'cell',
  code,
  call: { toolCallId: id, toolName: 'run_python' },
})
const extra = (id: string): Run => ({
  type: 'tool',
  tool: {
    name: 'render_map',
    description: '',
    inputSchema: {},
    call: async () => ({ observation: '', files: [] }),
  },
  input: {},
  call: { toolCallId: id, toolName: 'render_map' },
})
const ran = (observation: string, images: StepOutcome['images'] = []): StepOutcome => ({
  observation,
  ran: true,
  images,
})

describe('replyMessages', () => {
  it("drops the SDK's own results of calls the loop answers, and tool messages left empty", () => {
    const reply: ModelMessage[] = [
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'a', toolName: 'run_python', input: {} },
          { type: 'tool-call', toolCallId: 'b', toolName: 'web_search', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'a',
            toolName: 'run_python',
            output: { type: 'error-text', value: 'x' },
          },
          {
            type: 'tool-result',
            toolCallId: 'b',
            toolName: 'web_search',
            output: { type: 'text', value: 'y' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'a',
            toolName: 'run_python',
            output: { type: 'error-text', value: 'z' },
          },
        ],
      },
    ]
    const kept = replyMessages(reply, [cell('a')])
    expect(kept).toHaveLength(2)
    expect(kept[0]).toBe(reply[0])
    expect(kept[1]).toMatchObject({ role: 'tool', content: [{ toolCallId: 'b' }] })
    // Runs from the text answer no call: the reply stays as it is.
    expect(replyMessages(reply, [{ type: 'cell', code: 'x' }])).toBe(reply)
  })
})

describe('StepHistory', () => {
  it('answers each call under its own name, in the order of the runs, and cancels those that never ended', () => {
    const runs = [cell('a'), extra('b'), cell('c')]
    const history = new StepHistory(runs)
    history.add(runs[0] as Run, ran('[stdout]\n1'))
    expect(history.messages()).toEqual([
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'a',
            toolName: 'run_python',
            output: { type: 'text', value: '[stdout]\n1' },
          },
          {
            type: 'tool-result',
            toolCallId: 'b',
            toolName: 'render_map',
            output: { type: 'text', value: CANCELLED },
          },
          {
            type: 'tool-result',
            toolCallId: 'c',
            toolName: 'run_python',
            output: { type: 'text', value: CANCELLED },
          },
        ],
      },
    ])
    history.add(runs[1] as Run, { observation: 'a map', ran: false, images: [] })
    history.add(runs[2] as Run, ran('[no output]'))
    expect(history.messages()[0]?.content).toMatchObject([
      { toolCallId: 'a' },
      { toolCallId: 'b', toolName: 'render_map', output: { value: 'a map' } },
      { toolCallId: 'c', output: { value: '[no output]' } },
    ])
  })

  it('sends the observation of code from the text as a user message, labelled as output only where code ran', () => {
    const code: Run = { type: 'cell', code: 'print(1)' }
    const ranHistory = new StepHistory([code])
    ranHistory.add(code, ran('[stdout]\n1'))
    expect(ranHistory.messages()).toEqual([{ role: 'user', content: 'Output of your code:\n[stdout]\n1' }])

    const problem: Run = { type: 'problem', message: 'Your reply was empty.' }
    const nudged = new StepHistory([problem])
    nudged.add(problem, { observation: 'Your reply was empty.', ran: false, images: [] })
    expect(nudged.messages()).toEqual([{ role: 'user', content: 'Your reply was empty.' }])
  })

  it("shows a vision model the step's images after the results", () => {
    const runs = [cell('a'), cell('b')]
    const history = new StepHistory(runs)
    history.add(runs[0] as Run, ran('chart one', [{ data: 'iVBOR1', mediaType: 'image/png' }]))
    history.add(runs[1] as Run, ran('chart two', [{ data: '/9j/2', mediaType: 'image/jpeg' }]))
    const messages = history.messages()
    expect(messages.map((m) => m.role)).toEqual(['tool', 'user'])
    expect(messages[1]?.content).toEqual([
      { type: 'text', text: 'The charts from that step:' },
      { type: 'image', image: 'iVBOR1', mediaType: 'image/png' },
      { type: 'image', image: '/9j/2', mediaType: 'image/jpeg' },
    ])
  })

  it('says that code from the text did not finish when its run was never answered', () => {
    expect(new StepHistory([{ type: 'cell', code: 'x' }]).messages()).toEqual([
      { role: 'user', content: CANCELLED },
    ])
    expect(new StepHistory([{ type: 'problem', message: 'no code' }]).messages()).toEqual([])
  })
})

describe('outsideCellMessage', () => {
  it("tells the model of a cell run outside the conversation: its code and output, or the guard's reasons", () => {
    const execution = new Execution()
    execution.logs.stdout.push('42\n')
    expect(outsideCellMessage('print(42)', execution)).toEqual({
      role: 'user',
      content:
        'This code was run in the sandbox outside our conversation:\n```python\nprint(42)\n```\n[stdout]\n42',
    })
    const stopped = outsideCellMessage('import socket', undefined, [
      { rule: 'network', line: 1, column: 0, message: 'no network' },
      { rule: 'network', line: 1, column: 7, message: 'sockets are refused' },
    ])
    expect(stopped.content).toMatch(
      /Nothing ran: the guard stopped it \(no network; sockets are refused\)\.$/,
    )
  })
})
