/**
 * The real HTTP path: the AI SDK's openai-compatible provider against a fake chat completions
 * server on 127.0.0.1, in both modes, streaming and not, with rate limits, failures and timeouts.
 */
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type AgentEvent, Analyst, type AskResult, ModelCallError } from '../../src/agent/index.js'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { type CodeMode, resolveModel } from '../../src/models/index.js'
import { DABENCH, DABENCH_MISSING } from '../support/dabench.js'
import {
  type FakeOpenAI,
  lastObservation,
  type ScriptEntry,
  startFakeOpenAI,
} from '../support/fake-openai.js'

const DABENCH_DIR = DABENCH ?? ''
const TITANIC = DABENCH ? `${DABENCH_DIR}/tables/test_ave.csv` : 'examples/sales.csv'
const API_KEY = `sk-analyst-test-${Math.random().toString(36).slice(2)}`

let sandbox: Sandbox
let server: FakeOpenAI | undefined

beforeAll(async () => {
  sandbox = await Sandbox.create({ provider: new LocalProvider({ poolSize: 0 }), data: [TITANIC] })
})
afterAll(async () => {
  await sandbox?.kill()
})
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function ask(
  script: ScriptEntry[],
  question: string,
  options: { mode?: CodeMode; stream?: boolean; maxRetries?: number; requestTimeoutMs?: number } = {},
): Promise<{ result: AskResult; events: AgentEvent[] }> {
  server = await startFakeOpenAI(script)
  const env = { ANALYST_API_KEY: API_KEY }
  const model = await resolveModel({ spec: 'openai-compatible:fake-coder', baseUrl: server.url, env })
  const session = new Analyst({
    model: model.model,
    mode: options.mode ?? model.mode,
    sandbox,
    dataDescription: 'data/test_ave.csv: Titanic passengers',
    stream: options.stream,
    maxRetries: options.maxRetries ?? 2,
    requestTimeoutMs: options.requestTimeoutMs,
  })
  const events: AgentEvent[] = []
  for await (const event of session.ask(question)) events.push(event)
  const done = events.at(-1)
  if (done?.type !== 'done') throw new Error('no result')
  return { result: done.result, events }
}

describe.each([
  ['tools', true],
  ['tools', false],
  ['text', true],
  ['text', false],
] as const)('over HTTP in %s mode (stream: %s)', (mode, stream) => {
  it.skipIf(!DABENCH)(
    `answers a DABench question from the sandbox output, after a wrong column name${DABENCH ? '' : ` (${DABENCH_MISSING})`}`,
    async () => {
      const question = JSON.parse(
        readFileSync(`${DABENCH_DIR}/da-dev-questions.jsonl`, 'utf8').split('\n')[0] as string,
      )
      const label = JSON.parse(
        readFileSync(`${DABENCH_DIR}/da-dev-labels.jsonl`, 'utf8').split('\n')[0] as string,
      )
      const { result } = await ask(
        [
          {
            prose: "I'll load the passengers and average the fare.",
            code: "import pandas as pd\ndf = pd.read_csv('data/test_ave.csv')\nround(df['fare'].mean(), 2)",
            fence: '```py',
          },
          (request) => {
            expect(lastObservation(request)).toContain("KeyError: 'fare'")
            return {
              prose: 'The column is capitalised.',
              code: "print(df.columns.tolist())\nprint(round(df['Fare'].mean(), 2))",
              fence: '```',
            }
          },
          (request) => {
            const printed = lastObservation(request).match(/\n(\d+\.\d+)/)?.[1]
            return { content: `The mean fare is ${printed}.\n\n@mean_fare[${printed}]` }
          },
        ],
        question.question,
        { mode, stream },
      )
      expect(result.incomplete).toBe(false)
      expect(result.answer.match(/@mean_fare\[(.*?)\]/)?.[1]).toBe(label.common_answers[0][1])
      expect(result.unsupportedNumbers).toEqual([])
      expect(result.usage.totalTokens).toBeGreaterThan(0)
      expect(server?.requests.every((r) => r.headers.authorization === `Bearer ${API_KEY}`)).toBe(true)
      expect(server?.requests.every((r) => Boolean(r.stream) === stream)).toBe(true)
      expect(server?.requests.every((r) => (r.tools ?? []).length > 0 === (mode === 'tools'))).toBe(true)
    },
  )
})

describe('a history every provider accepts', () => {
  it.each([true, false])(
    'answers a tool call cut off by the length limit exactly once, saying what to do (stream: %s)',
    async (stream) => {
      const { result } = await ask(
        [
          {
            toolCalls: [{ name: 'run_python', arguments: '{"code": "import pandas as pd\\nprint(pd.read_' }],
            finishReason: 'length',
          },
          (request) => {
            // The fake rejects a history with no result or two results for a call, so reaching here
            // means exactly one; it must tell the model what to do.
            const results = request.messages.filter((m) => m.role === 'tool')
            expect(results).toHaveLength(1)
            expect(lastObservation(request)).toMatch(/invalid arguments; nothing ran.*\{"code"/s)
            return { code: 'print(6 * 7)' }
          },
          { content: 'It is 42.' },
        ],
        'What is 6 times 7?',
        { mode: 'tools', stream },
      )
      expect(result.answer).toBe('It is 42.')
      expect(server?.requests).toHaveLength(3)
      expect(server?.requests.at(-1)?.messages.filter((m) => m.role === 'tool')).toHaveLength(2)
    },
  )

  it('labels a nudge after an empty reply as a nudge, not as output of code', async () => {
    const { result } = await ask(
      [
        { content: '' },
        (request) => {
          const told = lastObservation(request)
          expect(told).toMatch(/reply was empty/)
          expect(told).not.toMatch(/Output of your code/)
          return { code: 'print(6 * 7)' }
        },
        (request) => {
          expect(lastObservation(request)).toMatch(/^Output of your code:\n[\s\S]*42/)
          return { content: 'It is 42.' }
        },
      ],
      'What is 6 times 7?',
      { mode: 'text' },
    )
    expect(result.answer).toBe('It is 42.')
  })

  it('the stricter fake refuses a tool call answered twice (so the checks above can fail)', async () => {
    server = await startFakeOpenAI([{ content: 'unused' }])
    const response = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'x',
        messages: [
          { role: 'user', content: 'q' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run_python', arguments: '{' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'first' },
          { role: 'tool', tool_call_id: 'c1', content: 'second' },
        ],
      }),
    })
    expect(response.status).toBe(400)
    expect(await response.text()).toMatch(/exactly one result/)
  })
})

describe('model failures', () => {
  it('retries a 429 after its Retry-After, then goes on', async () => {
    const { result } = await ask(
      [
        { status: 429, message: 'Rate limit reached for requests', headers: { 'retry-after': '0' } },
        { code: 'print(6 * 7)' },
        { content: 'It is 42.' },
      ],
      'What is 6 times 7?',
    )
    expect(result.answer).toBe('It is 42.')
    expect(server?.requests).toHaveLength(3)
  })

  it('gives up on a 500 that persists, with a clear error', async () => {
    const error = await ask([{ status: 500 }, { status: 500 }, { status: 500 }], 'q', {
      maxRetries: 1,
    }).catch((e: unknown) => e)
    expect(ModelCallError.isInstance(error)).toBe(true)
    expect((error as ModelCallError).message).toMatch(/HTTP 500/)
    expect((error as ModelCallError).hint).toMatch(/failed repeatedly/)
    expect(server?.requests).toHaveLength(2) // the first try and one retry
  })

  it('times out a request that takes too long', async () => {
    const error = await ask([{ delayMs: 5000, reply: { content: 'late' } }], 'q', {
      maxRetries: 0,
      requestTimeoutMs: 300,
    }).catch((e: unknown) => e)
    expect(ModelCallError.isInstance(error)).toBe(true)
    expect((error as ModelCallError).hint).toMatch(/did not answer in time/)
  })

  it.each([true, false])(
    'ends a call to a server that takes the request and never answers (stream: %s)',
    async (stream) => {
      const error = await ask([{ hang: true }], 'q', { stream, maxRetries: 0, requestTimeoutMs: 400 }).catch(
        (e: unknown) => e,
      )
      expect(ModelCallError.isInstance(error)).toBe(true)
      expect((error as ModelCallError).message).toMatch(
        stream ? /sent nothing for 0\.4 s \(the model timeout\)/ : /did not answer within 0\.4 s/,
      )
      expect((error as ModelCallError).fix).toEqual({ setting: 'requestTimeout' })
    },
  )

  it('ends a streamed reply that stalls between parts, and not one that keeps coming', async () => {
    const stalled = await ask(
      [{ stallAfter: 3, reply: { content: 'The answer is forty-two, as the numbers show.' } }],
      'q',
      {
        stream: true,
        maxRetries: 0,
        requestTimeoutMs: 400,
      },
    ).catch((e: unknown) => e)
    expect((stalled as ModelCallError).message).toMatch(/sent nothing for 0\.4 s/)
    await server?.close()
    // Slower in all than the timeout, but never that long between parts.
    const { result } = await ask(
      [{ partDelayMs: 100, reply: { content: 'Forty-two, from the sum of the rows.' } }],
      'q',
      {
        stream: true,
        maxRetries: 0,
        requestTimeoutMs: 400,
      },
    )
    expect(result.answer).toContain('Forty-two, from the sum')
  })

  it('reports a server that cannot be reached', async () => {
    const model = await resolveModel({
      spec: 'openai-compatible:x',
      baseUrl: 'http://127.0.0.1:9/v1',
      env: {},
    })
    const session = new Analyst({
      model: model.model,
      mode: 'text',
      sandbox,
      dataDescription: '',
      maxRetries: 0,
    })
    const error = await (async () => {
      for await (const _ of session.ask('q')) {
        // drain
      }
    })().catch((e: unknown) => e)
    expect(ModelCallError.isInstance(error)).toBe(true)
    expect((error as ModelCallError).hint).toMatch(/cannot be reached/)
  })
})

describe('secrets', () => {
  it("keeps the model's API key out of the sandbox", async () => {
    process.env.ANALYST_API_KEY = API_KEY
    process.env.OPENAI_API_KEY = API_KEY
    try {
      const { result } = await ask(
        [
          { code: "import os\nprint(sorted(os.environ))\nprint(open('/proc/1/environ').read())" },
          (request) => ({
            content: lastObservation(request).includes(API_KEY) ? 'LEAKED' : 'The environment is clean.',
          }),
        ],
        'Show the environment.',
      )
      expect(result.answer).toBe('The environment is clean.')
      expect(JSON.stringify(result.steps)).not.toContain(API_KEY)
    } finally {
      delete process.env.ANALYST_API_KEY
      delete process.env.OPENAI_API_KEY
    }
  })
})
