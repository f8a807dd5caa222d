/**
 * The loop's edge cases through `Analyst`, with a mock sandbox (scripted cells) and a scripted
 * model: no kernel, no network. The real jail and HTTP are in test/agent.
 */
import type { ModelMessage } from 'ai'
import { describe, expect, it } from 'vitest'
import { ScriptedModel, type ScriptStep } from '../models/scripted.js'
import { Sandbox } from '../sandbox/index.js'
import { MockSandboxProvider } from '../test/mock-sandbox.js'
import { Analyst, type AnalystOptions, type AnalystTool } from './analyst.js'
import type { AgentEvent } from './events.js'

async function analyst(script: ScriptStep[], options: Partial<AnalystOptions> = {}) {
  const sandbox = await Sandbox.create({ provider: new MockSandboxProvider() })
  const model = new ScriptedModel(script)
  const session = new Analyst({ model, mode: 'tools', sandbox, dataDescription: '', ...options })
  return { session, model, sandbox }
}

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

function toolResults(messages: ModelMessage[]) {
  return messages.flatMap((m) => (m.role === 'tool' ? m.content : []))
}

/** An extra tool whose call answers only when `answer` is called (never, unless a test does). */
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

describe('cancellation', () => {
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
      { toolCallId: 'call_1', toolName: 'render_map', output: { value: expect.stringMatching(/cancelled/) } },
    ])
    expectValidHistory(session.messages)
    // The next question goes out with that history, and the model got it valid.
    for await (const _ of session.ask('Go on.')) {
      // consume
    }
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
    for await (const _ of session.ask('Go on.')) {
      // consume
    }
    expectValidHistory(model.calls[1]?.prompt ?? [])
  })
})
