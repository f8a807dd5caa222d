/**
 * `analyst/ai`: Analyst's sandbox as AI SDK tools in a developer's own `generateText` agent, driven
 * by the AI SDK's MockLanguageModelV3, over a real sandbox (bubblewrap, Python).
 */
import { resolve } from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult } from '@ai-sdk/provider'
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { analystTools } from '../../src/integrations/ai.js'
import { startFakeOpenAI } from '../support/fake-openai.js'

const SALES = resolve('examples/sales.csv')
const provider = new LocalProvider({ poolSize: 0 })
let sandbox: Sandbox

beforeAll(async () => {
  sandbox = await Sandbox.create({ provider, data: [SALES] })
}, 60_000)
afterAll(async () => {
  await sandbox?.kill()
  await provider.close()
})

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

/** A model that calls the tools in order, then answers; it keeps every prompt it was given. */
function scripted(calls: Array<{ tool: string; input: unknown }>, answer: string) {
  let step = 0
  return new MockLanguageModelV3({
    doGenerate: async (): Promise<LanguageModelV3GenerateResult> => {
      const call = calls[step++]
      if (!call)
        return {
          content: [{ type: 'text', text: answer }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        }
      return {
        content: [
          {
            type: 'tool-call',
            toolCallId: `call-${step}`,
            toolName: call.tool,
            input: JSON.stringify(call.input),
          },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      }
    },
  })
}

/** The tool results the model was shown in a call's prompt. */
function toolResults(options: LanguageModelV3CallOptions | undefined) {
  return (options?.prompt ?? [])
    .filter((message) => message.role === 'tool')
    .flatMap((message) => message.content)
    .filter((part) => part.type === 'tool-result')
}

/** The parts of a tool result shown to the model as content (none when it was not content). */
function contentParts(output: unknown): Array<{ type: string; mediaType?: string }> {
  const value = (output as { type?: string; value?: unknown } | undefined)?.value
  return Array.isArray(value) ? value : []
}

describe('analystTools (AI SDK)', () => {
  it('gives a generateText agent the sandbox: state across calls, charts as images, data described, the guard first', async () => {
    const model = scripted(
      [
        { tool: 'list_data', input: {} },
        { tool: 'run_python', input: { code: "import pandas as pd\ndf = pd.read_csv('data/sales.csv')" } },
        { tool: 'run_python', input: { code: 'len(df)' } },
        {
          tool: 'run_python',
          input: { code: "import matplotlib.pyplot as plt\ndf['order_value'].plot.hist()\nplt.show()" },
        },
        { tool: 'run_python', input: { code: "import os\nos.system('curl http://example.com')" } },
      ],
      'There are 400 orders.',
    )
    const result = await generateText({
      model,
      tools: analystTools(sandbox, { data: [SALES] }),
      prompt: 'How many orders are there?',
      stopWhen: stepCountIs(10),
    })
    expect(result.text).toBe('There are 400 orders.')

    const calls = model.doGenerateCalls
    const [listed] = toolResults(calls[1])
    expect(listed?.output).toMatchObject({ type: 'text', value: expect.stringContaining('data/sales.csv') })
    expect(JSON.stringify(listed?.output)).toContain("pd.read_csv('data/sales.csv'")

    // State carried from one call to the next.
    const counted = toolResults(calls[3]).at(-1)
    expect(counted?.output).toEqual({ type: 'text', value: '[result] 400' })

    // The chart reached the model as an image.
    const charted = toolResults(calls[4]).at(-1)
    expect(charted?.output.type).toBe('content')
    const parts = contentParts(charted?.output)
    expect(parts[0]).toMatchObject({ type: 'text', text: expect.stringContaining('[image] a chart (PNG') })
    expect(parts[1]).toMatchObject({ type: 'image-data', mediaType: 'image/png' })

    // The guard stopped the shell command; nothing ran, and the model was told why.
    const blocked = toolResults(calls[5]).at(-1)
    expect(JSON.stringify(blocked?.output)).toContain('Nothing ran: the guard stopped this code.')
    const steps = result.steps.flatMap((s) => s.toolResults)
    expect(steps.at(-1)?.output).toMatchObject({ isError: true, images: [] })
  }, 120_000)

  it('returns a raised exception to the model with its traceback, and keeps images out when asked', async () => {
    const model = scripted(
      [
        { tool: 'run_python', input: { code: "{}['missing']" } },
        {
          tool: 'run_python',
          input: { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()' },
        },
      ],
      'Done.',
    )
    await generateText({
      model,
      tools: analystTools(sandbox, { images: false }),
      prompt: 'Try.',
      stopWhen: stepCountIs(5),
    })
    const raised = toolResults(model.doGenerateCalls[1]).at(-1)
    expect(JSON.stringify(raised?.output)).toContain("[error] KeyError: 'missing'")
    const chart = toolResults(model.doGenerateCalls[2]).at(-1)
    expect(chart?.output).toEqual({ type: 'text', value: expect.stringContaining('[image] a chart (PNG') })
  }, 120_000)

  it('works with a real provider package over HTTP: @ai-sdk/openai-compatible against a chat completions server', async () => {
    const server = await startFakeOpenAI([
      { code: "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nlen(df)" },
      { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()' },
      { content: 'There are 400 orders.' },
    ])
    try {
      const provider = createOpenAICompatible({ name: 'fake', baseURL: server.url, apiKey: 'test-key' })
      const result = await generateText({
        model: provider.chatModel('fake-model'),
        // A chat-completions provider sends images as base64 text: images off.
        tools: analystTools(sandbox, { images: false }),
        prompt: 'How many orders are there?',
        stopWhen: stepCountIs(5),
      })
      expect(result.text).toBe('There are 400 orders.')
      expect(server.requests).toHaveLength(3)
      const offered = JSON.stringify(server.requests[0]?.tools)
      expect(offered).toContain('"run_python"')
      expect(offered).toContain('"list_data"')
      // The model read each cell as plain text, not as JSON parts or base64.
      const toolMessages = server.requests[2]?.messages.filter((m) => m.role === 'tool') ?? []
      expect(toolMessages.map((m) => m.content)).toEqual(['[result] 400', expect.stringContaining('[image]')])
      expect(JSON.stringify(server.requests[2]?.messages).length).toBeLessThan(5_000)
    } finally {
      await server.close()
    }
  }, 120_000)
})
