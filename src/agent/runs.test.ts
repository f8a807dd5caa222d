import { describe, expect, it } from 'vitest'
import { LANGUAGE_PROFILES } from './language.js'
import type { ModelToolCall } from './model-call.js'
import { EMPTY_REPLY_NUDGE } from './prompt.js'
import { planRuns } from './runs.js'
import type { AnalystTool } from './tools.js'

const mapTool: AnalystTool = {
  name: 'render_map',
  description: 'Renders a map.',
  inputSchema: { type: 'object' },
  call: async () => ({ observation: 'a map', files: [] }),
}

const text = (text: string, finishReason = 'stop') => ({ text, toolCalls: [], finishReason })
const calls = (toolCalls: ModelToolCall[], text = '') => ({ text, toolCalls, finishReason: 'tool-calls' })
const call = (id: string, toolName: string, input: unknown, invalid?: boolean): ModelToolCall => ({
  toolCallId: id,
  toolName,
  input,
  invalid,
})

describe('planRuns: tool calls', () => {
  it('turns each call of a reply into a run, in order, each answering its call by id and name', () => {
    const plan = planRuns(
      calls(
        [
          call('a', 'run_python', { code: 'x = 1' }),
          call('b', 'render_map', { region: 'north' }),
          call('c', 'run_sql', { query: 'select 1' }),
          call('d', 'run_python', '{"code": "print(1)', true),
          call('e', 'run_python', { source: 'x' }),
          call('f', 'run_python', { code: '  \n' }),
        ],
        ' Two things at once. ',
      ),
      { tools: [mapTool] },
    )
    expect(plan).toMatchObject({
      type: 'runs',
      prose: 'Two things at once.',
      runs: [
        { type: 'cell', code: 'x = 1', call: { toolCallId: 'a', toolName: 'run_python' } },
        {
          type: 'tool',
          tool: mapTool,
          input: { region: 'north' },
          call: { toolCallId: 'b', toolName: 'render_map' },
        },
        {
          type: 'problem',
          message: expect.stringMatching(/^There is no tool named run_sql\. Use run_python/),
          call: { toolCallId: 'c', toolName: 'run_sql' },
        },
        {
          type: 'problem',
          message: expect.stringMatching(/invalid arguments; nothing ran/),
          call: { toolCallId: 'd', toolName: 'run_python' },
        },
        { type: 'problem', message: expect.stringMatching(/invalid arguments/), call: { toolCallId: 'e' } },
        { type: 'problem', message: 'The code was empty; nothing ran.', call: { toolCallId: 'f' } },
      ],
    })
  })

  it('an extra tool is unknown unless the analyst has it', () => {
    const plan = planRuns(calls([call('a', 'render_map', {})]))
    expect(plan).toMatchObject({
      runs: [{ type: 'problem', message: expect.stringMatching(/no tool named render_map/) }],
    })
  })

  it('with tool calls, fenced code in the text is prose, not a second cell', () => {
    const plan = planRuns(
      calls([call('a', 'run_python', { code: 'x = 1' })], 'Like this:\n```python\ny = 2\n```'),
    )
    expect(plan).toMatchObject({
      runs: [{ type: 'cell', code: 'x = 1' }],
      prose: expect.stringContaining('y = 2'),
    })
    expect(plan.type === 'runs' && plan.runs).toHaveLength(1)
  })
})

describe('planRuns: text', () => {
  it('runs fenced python as one cell with no call, the prose around it kept', () => {
    expect(planRuns(text('Let me look.\n```python\nprint(1)\n```\nThen more.'))).toEqual({
      type: 'runs',
      runs: [{ type: 'cell', code: 'print(1)' }],
      prose: 'Let me look.\nThen more.',
    })
  })

  it('takes plain text for the final answer, trimmed', () => {
    expect(planRuns(text('  The mean is 4.2.\n'))).toEqual({ type: 'answer', text: 'The mean is 4.2.' })
  })

  it('takes an answer that shows code it already ran for the answer, not a new step', () => {
    const reply = text('The total is 12.\n```python\nprint(total)\n```')
    expect(planRuns(reply, { ranBefore: new Set(['print(total)']) })).toEqual({
      type: 'answer',
      text: 'The total is 12.\n```python\nprint(total)\n```',
    })
    // Code not run before (or that failed) runs; so does the same code with no words around it.
    expect(planRuns(reply, { ranBefore: new Set() })).toMatchObject({ runs: [{ type: 'cell' }] })
    expect(
      planRuns(text('```python\nprint(total)\n```'), { ranBefore: new Set(['print(total)']) }),
    ).toMatchObject({ runs: [{ type: 'cell', code: 'print(total)' }] })
  })

  it('tells the model of a reply cut off by length, of an unclosed fence and of other languages', () => {
    const problem = (plan: ReturnType<typeof planRuns>) =>
      plan.type === 'runs' && plan.runs[0]?.type === 'problem' ? plan.runs[0].message : plan
    expect(problem(planRuns(text('```python\nx = pd.read_csv(', 'length')))).toMatch(/cut off \(too long\)/)
    expect(problem(planRuns(text('The answer is', 'length')))).toMatch(/cut off/)
    expect(problem(planRuns(text('```python\nprint(1)')))).toMatch(/not closed with ```; nothing ran/)
    expect(problem(planRuns(text('```sql\nSELECT 1\n```\n```bash\nls\n```')))).toBe(
      'Only Python runs here, not sql, bash. Rewrite the step in Python (pandas can do it).',
    )
    expect(problem(planRuns(text(' \n')))).toBe(EMPTY_REPLY_NUDGE)
  })

  it('runs complete code even when the reply ran out of length after it', () => {
    expect(planRuns(text('```python\nprint(1)\n```\nAnd then', 'length'))).toMatchObject({
      runs: [{ type: 'cell', code: 'print(1)' }],
    })
  })
})

describe('planRuns: an R analysis', () => {
  const r = { language: LANGUAGE_PROFILES.r }

  it('runs ```r blocks and run_r calls, and tells the model that Python does not run', () => {
    expect(planRuns(text('Counting.\n```r\nnrow(df)\n```'), r)).toMatchObject({
      runs: [{ type: 'cell', code: 'nrow(df)' }],
    })
    expect(planRuns(calls([call('a', 'run_r', { code: 'x <- 1' })]), r)).toMatchObject({
      runs: [{ type: 'cell', code: 'x <- 1', call: { toolName: 'run_r' } }],
    })
    const python = planRuns(text('```python\nlen(df)\n```'), r)
    expect(python).toMatchObject({
      runs: [{ type: 'problem', message: 'Only R runs here, not python. Rewrite the step in R.' }],
    })
    expect(planRuns(calls([call('b', 'run_python', { code: 'x = 1' })]), r)).toMatchObject({
      runs: [
        { type: 'problem', message: 'There is no tool named run_python. Use run_r with a "code" argument.' },
      ],
    })
  })
})
