/**
 * The analysis loop with the AI SDK's mock model (scripted replies) and a real sandbox: repair,
 * bad model output of every kind, the step cap, grounding, follow-ups, charts, the guard.
 */
import { MockLanguageModelV3 } from 'ai/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AgentEvent, Analyst, type AnalystOptions, type AskResult } from '../../src/agent/index.js'
import { checkCode } from '../../src/guard/index.js'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { ScriptedModel, type ScriptStep } from '../../src/models/scripted.js'

const provider = new LocalProvider({ poolSize: 0 })
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await Sandbox.create({ provider, data: ['examples/sales.csv'] })
})
afterAll(async () => {
  await sandbox?.kill()
})

/** The AI SDK's mock model, replying from a script (streamed or not). */
function mockModel(script: ScriptStep[]) {
  const scripted = new ScriptedModel(script)
  const model = new MockLanguageModelV3({
    doGenerate: (options) => scripted.doGenerate(options),
    doStream: (options) => scripted.doStream(options),
  })
  return { model, scripted }
}

async function run(
  script: ScriptStep[],
  question: string,
  options: Partial<AnalystOptions> = {},
): Promise<{ events: AgentEvent[]; result: AskResult; scripted: ScriptedModel; session: Analyst }> {
  const { model, scripted } = mockModel(script)
  const session = new Analyst({
    model,
    mode: 'tools',
    sandbox,
    dataDescription: 'data/sales.csv: orders',
    ...options,
  })
  const events: AgentEvent[] = []
  for await (const event of session.ask(question)) events.push(event)
  const done = events.at(-1)
  if (done?.type !== 'done') throw new Error('no done event')
  return { events, result: done.result, scripted, session }
}

const observations = (events: AgentEvent[]) =>
  events
    .filter((e): e is Extract<AgentEvent, { type: 'observation' }> => e.type === 'observation')
    .map((e) => e.text)

/** The text of the tool results and user messages the model received on its last call. */
function lastPrompt(scripted: ScriptedModel): string {
  return JSON.stringify(scripted.calls.at(-1)?.prompt ?? [])
}

describe.each([
  ['tools', true],
  ['tools', false],
  ['text', true],
  ['text', false],
] as const)('the loop in %s mode (stream: %s)', (mode, stream) => {
  it('answers from what the code computed, after repairing a KeyError', async () => {
    const { events, result, scripted } = await run(
      [
        {
          code: "import pandas as pd\nsales = pd.read_csv('data/sales.csv')\nsales.groupby('segment')['order_value'].mean()",
        },
        (prompt) => {
          // The model sees the KeyError and the real column names, and repairs.
          expect(JSON.stringify(prompt)).toContain("KeyError: 'segment'")
          return {
            code: "print(sales.columns.tolist())\nsales.groupby('customer_segment')['order_value'].mean().round(2)",
          }
        },
        {
          text: 'The average order value is 813.05 for Consumer, 583.62 for Corporate and 546.32 for Small Business.',
        },
      ],
      'What is the average order value by customer segment?',
      { mode, stream },
    )
    expect(result.incomplete).toBe(false)
    expect(result.answer).toContain('813.05')
    expect(result.unsupportedNumbers).toEqual([])
    expect(result.steps.map((s) => s.execution?.error?.name ?? 'ok')).toEqual(['KeyError', 'ok'])
    expect(result.steps.map((s) => s.usage?.totalTokens)).toEqual([20, 20])
    expect(result.usage.totalTokens).toBe(60)
    expect(events.filter((e) => e.type === 'code')).toHaveLength(2)
    expect(lastPrompt(scripted)).toContain('813.05')
    if (stream) expect(events.some((e) => e.type === 'model-text-delta')).toBe(true)
  })
})

describe('bad model output', () => {
  it('an empty reply gets a nudge, and the next reply answers', async () => {
    const { result, events } = await run(
      [{ text: '' }, { text: 'There are 400 orders.' }],
      'How many orders?',
      { mode: 'text' },
    )
    expect(observations(events)[0]).toMatch(/reply was empty/)
    expect(result.answer).toBe('There are 400 orders.')
  })

  it('invalid tool-call arguments are reported to the model; nothing runs', async () => {
    const { events, result, scripted } = await run(
      [
        { toolCall: { name: 'run_python', input: '{"code": "print(1)' } },
        { code: 'print(2 + 2)' },
        { text: 'It is 4.' },
      ],
      'What is 2 + 2?',
    )
    expect(observations(events)[0]).toMatch(/invalid arguments; nothing ran/)
    expect(result.steps).toHaveLength(1)
    expect(result.steps[0]?.execution?.logs.stdout).toEqual(['4\n'])
    // The history the model got back answers the invalid call too.
    expect(JSON.stringify(scripted.calls[1]?.prompt)).toContain('invalid arguments')
  })

  it('a tool that does not exist is reported', async () => {
    const { events } = await run(
      [{ toolCall: { name: 'run_sql', input: '{"query": "select 1"}' } }, { text: 'Done.' }],
      'q',
    )
    expect(observations(events)[0]).toMatch(/no tool named run_sql/)
  })

  it('a reply cut off inside a code block is reported, not run', async () => {
    const { events, result } = await run(
      [
        {
          text: "Let me compute:\n```python\nimport pandas as pd\nx = pd.read_csv('data/sales.csv'",
          finishReason: 'length',
        },
        { text: 'Stopping.' },
      ],
      'q',
      { mode: 'text' },
    )
    expect(observations(events)[0]).toMatch(/cut off/)
    expect(result.steps).toHaveLength(0)
  })

  it('an unterminated fence is reported', async () => {
    const { events } = await run([{ text: '```python\nprint(1)' }, { text: 'ok' }], 'q', { mode: 'text' })
    expect(observations(events)[0]).toMatch(/not closed/)
  })

  it('code in another language is refused with a note to use Python', async () => {
    const { events } = await run(
      [{ text: 'Use SQL:\n```sql\nSELECT avg(order_value) FROM sales\n```' }, { text: 'ok' }],
      'q',
      {
        mode: 'text',
      },
    )
    expect(observations(events)[0]).toMatch(/Only Python runs here, not sql/)
  })

  it('odd fences (py, bare, tilde, several blocks) all run, in order, as one cell', async () => {
    const { result } = await run(
      [
        {
          text: 'First:\n~~~py\nodd = [1]\n~~~\nthen\n```\nodd.append(2)\n```\nand\n```python3\nprint(odd)\n```',
        },
        { text: 'The list has two entries.' },
      ],
      'q',
      { mode: 'text' },
    )
    expect(result.steps[0]?.execution?.logs.stdout).toEqual(['[1, 2]\n'])
    expect(result.steps[0]?.text).toBe('First:\nthen\nand')
  })

  it('a model that repeats itself is told so, and the step cap ends it as incomplete with the findings', async () => {
    const same = { code: "print('total', round(sales.order_value.sum(), 2))" }
    const { events, result } = await run(
      [{ code: "import pandas as pd\nsales = pd.read_csv('data/sales.csv')" }, same, same, same],
      'What is the total?',
      { maxSteps: 4 },
    )
    expect(observations(events).at(-1)).toMatch(/exactly the same code/)
    expect(result.incomplete).toBe(true)
    expect(result.answer).toMatch(/stopped after 4 steps/)
    expect(result.answer).toContain('total 277162.03')
    expect(events.find((e) => e.type === 'answer')).toMatchObject({ incomplete: true })
  })

  it('the same error twice in a row is pointed out', async () => {
    const { events } = await run(
      [{ code: 'undefined_name' }, { code: 'undefined_name + 1' }, { text: 'I give up.' }],
      'q',
    )
    expect(observations(events)[1]).toMatch(/same error as in your previous step/)
  })
})

describe('grounding', () => {
  it('lists numbers the answer states that no output contains', async () => {
    const { result, events } = await run(
      [
        {
          code: "import pandas as pd\nsales = pd.read_csv('data/sales.csv')\nprint(len(sales), round(sales.order_value.mean(), 2))",
        },
        { text: 'There are 400 orders, averaging 692.9; the median is 512.4 and growth was 12.5%.' },
      ],
      'Describe the orders.',
    )
    expect(result.unsupportedNumbers).toEqual(['512.4', '12.5%'])
    expect(events.find((e) => e.type === 'answer')).toMatchObject({ unsupportedNumbers: ['512.4', '12.5%'] })
  })
})

describe('sessions', () => {
  it('a follow-up question uses a variable from the first', async () => {
    const { model } = mockModel([
      {
        code: "import pandas as pd\nsegments = pd.read_csv('data/sales.csv').groupby('customer_segment').order_value.sum()",
      },
      { text: 'Revenue by segment is computed.' },
      { code: 'print(segments.idxmax(), round(segments.max(), 2))' },
      { text: 'Consumer has the most revenue: 166675.88.' },
    ])
    const session = new Analyst({ model, mode: 'tools', sandbox, dataDescription: '' })
    let first: AskResult | undefined
    for await (const event of session.ask('Compute revenue by segment.'))
      if (event.type === 'done') first = event.result
    let second: AskResult | undefined
    for await (const event of session.ask('Which segment has the most?'))
      if (event.type === 'done') second = event.result
    expect(first?.incomplete).toBe(false)
    expect(second?.steps[0]?.execution?.logs.stdout).toEqual(['Consumer 166675.88\n'])
    expect(second?.unsupportedNumbers).toEqual([])
    expect(session.usage.totalTokens).toBe(80)
  })

  it('a chart is saved as a file, named for the model, and reported as an artifact', async () => {
    const { result, events } = await run(
      [
        {
          code: "import pandas as pd, matplotlib.pyplot as plt\ns = pd.read_csv('data/sales.csv')\ns.groupby('region').order_value.sum().plot.bar(title='Revenue by region')\nplt.savefig('regions.png')",
        },
        { text: 'The chart is saved as regions.png.' },
      ],
      'Chart revenue by region.',
      { nameImage: (step, index) => `step-${step}-chart-${index}.png` },
    )
    expect(result.artifacts.map((a) => [a.name, a.mimeType])).toEqual([['regions.png', 'image/png']])
    expect(result.steps[0]?.images).toEqual(['step-1-chart-1.png'])
    expect(observations(events)[0]).toContain('shown to the user as step-1-chart-1.png')
    expect(observations(events)[0]).toContain('regions.png')
    expect((await sandbox.files.read('regions.png', { format: 'bytes' })).subarray(1, 4)).toEqual(
      new TextEncoder().encode('PNG'),
    )
  })

  it('shows charts to a vision model as images', async () => {
    const { scripted } = await run(
      [
        { code: "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')" },
        { text: 'A peak in the middle.' },
      ],
      'Plot it.',
      { vision: true },
    )
    const prompt = scripted.calls[1]?.prompt ?? []
    const images = prompt
      .flatMap((m): Array<{ type: string }> => (Array.isArray(m.content) ? m.content : []))
      .filter((part) => part.type === 'file')
    expect(images).toHaveLength(1)
    expect(images[0]).toMatchObject({ mediaType: 'image/png' })
  })
})

describe('the guard in the loop', () => {
  it('stops code that breaks the rules before it runs and tells the model why', async () => {
    const { events, result } = await run(
      [
        { code: "import socket\nsocket.create_connection(('example.com', 80))" },
        { code: "import pandas as pd\nprint(len(pd.read_csv('data/sales.csv')))" },
        { text: 'There are 400 orders.' },
      ],
      'How many orders?',
      { check: (code) => checkCode(code) },
    )
    expect(events.find((e) => e.type === 'guard')).toBeDefined()
    expect(observations(events)[0]).toMatch(/Nothing ran/)
    expect(result.steps[0]?.violations?.length).toBeGreaterThan(0)
    expect(result.steps[0]?.execution).toBeUndefined()
    expect(result.steps[1]?.execution?.logs.stdout).toEqual(['400\n'])
  })
})

describe('cancellation', () => {
  it('an aborted question stops its cell and rejects; the session keeps its variables', async () => {
    const { model } = mockModel([
      { code: "kept_value = 'still here'" },
      { text: 'Stored.' },
      { code: "import time\nprint('waiting', flush=True)\ntime.sleep(30)" },
      { code: 'kept_value' },
      { text: 'It is still here.' },
    ])
    const session = new Analyst({ model, mode: 'tools', sandbox, dataDescription: '' })
    for await (const _ of session.ask('Store a value.')) {
      // consume
    }
    const controller = new AbortController()
    const stopped = (async () => {
      for await (const event of session.ask('Wait a long time.', { signal: controller.signal })) {
        // Stopped once the cell says it runs.
        if (event.type === 'stdout') controller.abort(new Error('stopped by the user'))
      }
    })()
    await expect(stopped).rejects.toThrow('stopped by the user')
    let result: AskResult | undefined
    for await (const event of session.ask('Is the value still there?'))
      if (event.type === 'done') result = event.result
    expect(result?.steps[0]?.execution?.results[0]?.text).toBe("'still here'")
  })
})
