/**
 * `analyst/langchain` and examples/langgraph: the LangChain tool over a real sandbox, and the
 * LangGraph analyst driven by LangChain's fake chat model (in process, and as a user runs it).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import type { BaseMessage, ToolMessage } from '@langchain/core/messages'
import { FakeListChatModel } from '@langchain/core/utils/testing'
import { createReactAgent } from '@langchain/langgraph/prebuilt'
import { ChatOpenAI } from '@langchain/openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildAnalystGraph, MAX_ITERATIONS } from '../../examples/langgraph/graph.mjs'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { describeData, runPythonTool } from '../../src/integrations/langchain.js'
import { startFakeOpenAI } from '../support/fake-openai.js'

const SALES = resolve('examples/sales.csv')
const provider = new LocalProvider({ poolSize: 0 })
let sandbox: Sandbox
let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-langgraph-'))
  sandbox = await Sandbox.create({ provider, data: [SALES] })
}, 60_000)
afterAll(async () => {
  await sandbox?.kill()
  await provider.close()
  rmSync(dir, { recursive: true, force: true })
})

const call = (code: string, id = 'call-1') =>
  ({ name: 'run_python', args: { code }, id, type: 'tool_call' }) as const

describe('runPythonTool (LangChain)', () => {
  it('answers a tool call with the text for the model and the whole outcome as the artifact', async () => {
    const tool = runPythonTool(sandbox)
    expect(tool.name).toBe('run_python')
    const first = (await tool.invoke(
      call("import pandas as pd\ndf = pd.read_csv('data/sales.csv')"),
    )) as ToolMessage
    expect(first.artifact).toMatchObject({ isError: false })
    const counted = (await tool.invoke(call('len(df)', 'call-2'))) as ToolMessage
    expect(counted.content).toBe('[result] 400')
    expect(counted.tool_call_id).toBe('call-2')

    const chart = (await tool.invoke(
      call("import matplotlib.pyplot as plt\ndf['order_value'].plot.hist()\nplt.show()"),
    )) as ToolMessage
    expect(chart.artifact.images).toHaveLength(1)
    expect(chart.artifact.images[0]).toMatchObject({ mediaType: 'image/png' })

    const blocked = (await tool.invoke(call("import subprocess\nsubprocess.run(['id'])"))) as ToolMessage
    expect(blocked.content).toContain('Nothing ran: the guard stopped this code.')
    expect(blocked.artifact).toMatchObject({ isError: true })

    const raised = (await tool.invoke(call("df['no_such_column']"))) as ToolMessage
    expect(raised.content).toContain("[error] KeyError: 'no_such_column'")
    // Called with plain arguments, it answers the text.
    expect(await tool.invoke({ code: 'print(len(df) * 2)' })).toBe('[stdout]\n800')
  }, 120_000)
})

describe('over HTTP with @langchain/openai against a chat completions server on 127.0.0.1', () => {
  it("serves a LangGraph ReAct agent's tool calls; the model reads each cell's text", async () => {
    const server = await startFakeOpenAI([
      { code: "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nlen(df)" },
      { code: "import os\nos.system('id')" },
      { content: 'There are 400 orders.' },
    ])
    try {
      const llm = new ChatOpenAI({
        model: 'fake-model',
        apiKey: 'test-key',
        configuration: { baseURL: server.url },
      })
      const agent = createReactAgent({ llm, tools: [runPythonTool(sandbox)] })
      const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'How many orders?' }] })
      expect(messages.at(-1)?.content).toBe('There are 400 orders.')
      expect(server.requests).toHaveLength(3)
      // The tool as the model is offered it: its name, description and JSON Schema.
      expect(server.requests[0]?.tools).toEqual([
        expect.objectContaining({
          type: 'function',
          function: expect.objectContaining({
            name: 'run_python',
            description: expect.stringContaining('stateful sandbox'),
            parameters: expect.objectContaining({ required: ['code'] }),
          }),
        }),
      ])
      const toolMessages = server.requests[2]?.messages.filter((m) => m.role === 'tool') ?? []
      expect(toolMessages.map((m) => m.content)).toEqual([
        '[result] 400',
        expect.stringContaining('Nothing ran: the guard stopped this code.'),
      ])
      expect(server.requests[0]?.headers.authorization).toBe('Bearer test-key')
    } finally {
      await server.close()
    }
  }, 120_000)
})

describe('the LangGraph analyst (examples/langgraph)', () => {
  it('generates, executes, repairs after an error, and interprets', async () => {
    const model = new FakeListChatModel({
      responses: [
        "```python\nimport pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(df['order_vaule'].sum())\n```",
        "```python\nimport pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(round(df['order_value'].sum(), 2))\n```",
        'The total order value is 277162.03.',
      ],
    })
    const prompts: string[] = []
    const graph = buildAnalystGraph({ model, sandbox })
    const state = await graph.invoke(
      { question: 'What is the total order value?', data: await describeData([SALES]) },
      {
        callbacks: [
          {
            handleChatModelStart: (_llm: unknown, messages: BaseMessage[][]) => {
              prompts.push(JSON.stringify(messages[0]?.map((m) => m.content)))
            },
          },
        ],
      },
    )
    expect(state).toMatchObject({
      iterations: 2,
      error: false,
      answer: 'The total order value is 277162.03.',
    })
    expect(state.output).toBe('[stdout]\n277162.03')
    expect(prompts).toHaveLength(3)
    // The data as Analyst describes it, and the error of the first try in the second prompt.
    expect(prompts[0]).toContain("pd.read_csv('data/sales.csv'")
    expect(prompts[1]).toContain("KeyError: 'order_vaule'")
    expect(prompts[2]).toContain('277162.03')
  }, 120_000)

  it(`stops repairing after ${MAX_ITERATIONS} tries and interprets the failure`, async () => {
    const broken = '```python\nprint(undefined_name)\n```'
    const model = new FakeListChatModel({
      responses: [
        ...Array(MAX_ITERATIONS).fill(broken),
        'The code kept failing: undefined_name is not defined.',
      ],
    })
    const state = await buildAnalystGraph({ model, sandbox }).invoke({ question: 'Anything?', data: '' })
    expect(state).toMatchObject({ iterations: MAX_ITERATIONS, error: true })
    expect(state.output).toContain("NameError: name 'undefined_name' is not defined")
    expect(state.answer).toBe('The code kept failing: undefined_name is not defined.')
  }, 120_000)

  it('runs as a user runs it: node examples/langgraph/run.mjs with recorded replies', async () => {
    const replies = join(dir, 'replies.json')
    writeFileSync(
      replies,
      JSON.stringify([
        "```python\nimport pandas as pd\nprint(pd.read_csv('data/sales.csv')['region'].nunique())\n```",
        'There are 4 regions.',
      ]),
    )
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['examples/langgraph/run.mjs', 'How many regions?', '--data', SALES, '--replay', replies, '--json'],
      { env: { PATH: process.env.PATH ?? '', HOME: dir }, timeout: 120_000 },
    )
    expect(JSON.parse(stdout)).toMatchObject({
      question: 'How many regions?',
      output: '[stdout]\n4',
      error: false,
      iterations: 1,
      answer: 'There are 4 regions.',
    })
  }, 120_000)

  it('runs as a user runs it with OPENAI_API_KEY and OPENAI_BASE_URL: ChatOpenAI, a repair, the answer', async () => {
    const server = await startFakeOpenAI([
      {
        prose: 'Counting regions.',
        code: "import pandas as pd\nprint(pd.read_csv('data/sales.csv')['regoin'].nunique())",
      },
      { code: "import pandas as pd\nprint(pd.read_csv('data/sales.csv')['region'].nunique())" },
      { content: 'There are 4 regions.' },
    ])
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['examples/langgraph/run.mjs', 'How many regions?', '--data', SALES, '--json'],
        {
          env: {
            PATH: process.env.PATH ?? '',
            HOME: dir,
            OPENAI_API_KEY: 'test-key',
            OPENAI_BASE_URL: server.url,
            OPENAI_MODEL: 'fake-model',
          },
          timeout: 120_000,
        },
      )
      expect(JSON.parse(stdout)).toMatchObject({
        output: '[stdout]\n4',
        error: false,
        iterations: 2,
        answer: 'There are 4 regions.',
      })
      expect(server.requests.map((r) => r.model)).toEqual(['fake-model', 'fake-model', 'fake-model'])
      // The data as Analyst describes it in the first prompt, the error of the first try in the second.
      expect(JSON.stringify(server.requests[0]?.messages)).toContain("pd.read_csv('data/sales.csv'")
      expect(JSON.stringify(server.requests[1]?.messages)).toContain("KeyError: 'regoin'")
    } finally {
      await server.close()
    }
  }, 120_000)
})
