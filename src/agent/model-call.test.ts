import { APICallError } from '@ai-sdk/provider'
import { MockLanguageModelV3 } from 'ai/test'
import { describe, expect, it } from 'vitest'
import { ModelCallError } from '../errors.js'
import { ScriptedModel } from '../models/scripted.js'
import { addUsage, callModel, describeModelError, type ModelCallOptions, modelName } from './model-call.js'
import { offeredTools } from './tools.js'

const base = (model: ModelCallOptions['model'], stream: boolean): ModelCallOptions => ({
  model,
  system: 'You are a test.',
  messages: [{ role: 'user', content: 'Hi' }],
  maxRetries: 0,
  requestTimeoutMs: 10_000,
  stream,
})

describe.each([true, false])('callModel (stream: %s)', (stream) => {
  it('gives one reply: text, tool calls, finish reason, usage and its messages', async () => {
    const model = new ScriptedModel([{ text: 'Loading the data first.', code: 'import pandas as pd' }])
    const deltas: string[] = []
    const reply = await callModel({
      ...base(model, stream),
      tools: offeredTools('tools'),
      onTextDelta: (delta) => deltas.push(delta),
    })
    expect(reply).toMatchObject({
      text: 'Loading the data first.',
      toolCalls: [{ toolName: 'run_python', input: { code: 'import pandas as pd' } }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
    })
    expect(reply.messages.map((m) => m.role)).toEqual(['assistant'])
    expect(deltas.join('')).toBe(stream ? 'Loading the data first.' : '')
    // The system prompt and the messages reach the model.
    expect(JSON.stringify(model.calls[0]?.prompt)).toMatch(/You are a test\..*Hi/)
  })

  it("marks a call with arguments that are not JSON invalid, and the SDK's messages answer it already", async () => {
    const model = new ScriptedModel([{ toolCall: { name: 'run_python', input: '{"code": "print(1)' } }])
    const reply = await callModel({ ...base(model, stream), tools: offeredTools('tools') })
    expect(reply.toolCalls).toMatchObject([{ toolName: 'run_python', invalid: true }])
    expect(reply.messages.map((m) => m.role)).toEqual(['assistant', 'tool'])
  })

  it('turns a failure into a ModelCallError that says what to fix', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new APICallError({
          message: 'Incorrect API key provided',
          url: 'https://api.example.com/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 401,
          isRetryable: false,
        })
      },
      doStream: async () => {
        throw new APICallError({
          message: 'Incorrect API key provided',
          url: 'https://api.example.com/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 401,
          isRetryable: false,
        })
      },
    })
    const failure = await callModel(base(model, stream)).catch((error: unknown) => error)
    expect(ModelCallError.isInstance(failure)).toBe(true)
    expect(failure).toMatchObject({
      message: 'The model request failed (HTTP 401): Incorrect API key provided',
      fix: { setting: 'apiKey' },
    })
  })

  it('rejects with the signal’s reason when aborted while the model thinks', async () => {
    let called: () => void = () => {}
    const whenCalled = new Promise<void>((resolve) => {
      called = resolve
    })
    const waitForAbort = async ({ abortSignal }: { abortSignal?: AbortSignal }): Promise<never> => {
      called()
      return new Promise((_, reject) =>
        abortSignal?.addEventListener('abort', () => reject(abortSignal.reason)),
      )
    }
    const model = new MockLanguageModelV3({ doGenerate: waitForAbort, doStream: waitForAbort })
    const controller = new AbortController()
    const replying = callModel({ ...base(model, stream), signal: controller.signal })
    await whenCalled
    controller.abort(new Error('stopped by the user'))
    await expect(replying).rejects.toThrow('stopped by the user')
  })
})

describe('describeModelError', () => {
  const failed = (statusCode: number) => ({ name: 'AI_RetryError', lastError: { statusCode, message: 'no' } })

  it('names the setting or says what to do, by the kind of failure', () => {
    expect(describeModelError(failed(403))).toMatchObject({ fix: { setting: 'apiKey' } })
    expect(describeModelError(failed(404))).toMatchObject({
      fix: { setting: 'model' },
      hint: 'Check the base URL too, for a server of your own.',
    })
    expect(describeModelError(failed(429)).hint).toMatch(/rate limiting/)
    expect(describeModelError(failed(503))).toMatchObject({
      message: 'The model request failed (HTTP 503): no',
    })
    expect(describeModelError(failed(503)).hint).toMatch(/failed repeatedly/)
    expect(describeModelError(new Error('The operation timed out'))).toMatchObject({
      fix: { setting: 'requestTimeout' },
    })
    expect(describeModelError(new Error('fetch failed\n  at x'))).toMatchObject({
      message: 'The model request failed: fetch failed',
      fix: { setting: 'baseUrl' },
    })
    const odd = describeModelError('something else')
    expect([odd.message, odd.fix, odd.hint]).toEqual([
      'The model request failed: something else',
      undefined,
      undefined,
    ])
  })
})

describe('usage and names', () => {
  it('adds usage up, and names a model by provider and id', () => {
    expect(
      addUsage(
        { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
        { inputTokens: 10, outputTokens: 20, totalTokens: 30 },
      ),
    ).toEqual({ inputTokens: 11, outputTokens: 22, totalTokens: 33 })
    expect(modelName(new ScriptedModel([], { provider: 'ollama', modelId: 'qwen' }))).toBe('ollama:qwen')
    expect(modelName('openai/gpt-5')).toBe('openai/gpt-5')
  })
})
