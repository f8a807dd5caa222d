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
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildAnalystGraph, MAX_ITERATIONS } from '../../examples/langgraph/graph.mjs'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { describeData, runPythonTool } from '../../src/integrations/langchain.js'

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
})
