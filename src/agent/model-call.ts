/**
 * One call of the model, streamed or not, as one `Reply`; a failure the loop cannot repair becomes
 * a `ModelCallError` that says what to do.
 * @module
 */
import {
  generateText,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  streamText,
  type ToolSet,
} from 'ai'
import { type Fix, ModelCallError } from '../errors.js'
import type { Usage } from './events.js'

/** A tool call as the AI SDK parsed it: `invalid` when its name or arguments did not fit. */
export interface ModelToolCall {
  toolCallId: string
  toolName: string
  input: unknown
  invalid?: boolean
  error?: unknown
}

/** A model reply, the same whether it was streamed or not. */
export interface Reply {
  text: string
  toolCalls: ModelToolCall[]
  finishReason: string
  usage: Usage
  /** The reply as messages for the history (the SDK's own results of invalid calls included). */
  messages: ModelMessage[]
}

export interface ModelCallOptions {
  model: LanguageModel
  system: string
  messages: ModelMessage[]
  tools?: ToolSet
  maxRetries: number
  /** How long the call may wait for the model: for the whole reply, or (streamed) for each next part. */
  requestTimeoutMs: number
  stream: boolean
  signal?: AbortSignal
  /** The reply's text as it streams. */
  onTextDelta?: (delta: string) => void
}

export function toUsage(usage: LanguageModelUsage | undefined): Usage {
  const inputTokens = usage?.inputTokens ?? 0
  const outputTokens = usage?.outputTokens ?? 0
  return { inputTokens, outputTokens, totalTokens: usage?.totalTokens ?? inputTokens + outputTokens }
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  }
}

/**
 * A deadline that can be pushed back: it aborts its signal when `ms` pass without a `touch`. The
 * AI SDK's own chunk timeout starts only at the first part, so a server that accepts the
 * connection and never answers would be waited for until the total timeout; this one starts at
 * the call.
 */
function stallTimer(ms: number) {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const touch = () => {
    clearTimeout(timer)
    timer = setTimeout(() => controller.abort(new ModelTimeout(ms)), ms)
  }
  touch()
  return { signal: controller.signal, touch, stop: () => clearTimeout(timer) }
}

class ModelTimeout extends Error {
  constructor(readonly ms: number) {
    super(`no answer from the model in ${formatSeconds(ms)}`)
  }
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`
}

/** Calls the model once; an abort rejects with the signal's reason. */
export async function callModel(options: ModelCallOptions): Promise<Reply> {
  const { signal } = options
  const deadline = stallTimer(options.requestTimeoutMs)
  const common = {
    model: options.model,
    system: options.system,
    messages: options.messages,
    tools: options.tools,
    maxRetries: options.maxRetries,
    abortSignal: signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal,
  }
  try {
    if (!options.stream) {
      const result = await generateText(common)
      return {
        text: result.text,
        toolCalls: result.toolCalls,
        finishReason: result.finishReason,
        usage: toUsage(result.usage),
        messages: result.response.messages,
      }
    }
    let failure: unknown
    let finished: ((reply: Reply) => void) | undefined
    const whenFinished = new Promise<Reply>((resolve) => {
      finished = resolve
    })
    // onFinish carries the whole reply: cheaper than awaiting each of the result's promises.
    const result = streamText({
      ...common,
      onError: ({ error }) => {
        failure = error
      },
      onFinish: (event) =>
        finished?.({
          text: event.text,
          toolCalls: event.toolCalls,
          finishReason: event.finishReason,
          usage: toUsage(event.usage),
          messages: event.response.messages,
        }),
    })
    for await (const part of result.fullStream) {
      // Each part from the model gives the next one as long again.
      if (part.type !== 'start') deadline.touch()
      if (part.type === 'text-delta' && part.text) options.onTextDelta?.(part.text)
      if (part.type === 'error') failure = part.error
      if (part.type === 'abort') failure = signal?.reason ?? new Error('the model request was aborted')
    }
    if (failure) throw failure
    return await whenFinished
  } catch (error) {
    if (signal?.aborted) throw signal.reason ?? error
    if (deadline.signal.aborted) throw modelTimedOut(deadline.signal.reason as ModelTimeout, options.stream)
    throw describeModelError(error)
  } finally {
    deadline.stop()
  }
}

function modelTimedOut(timeout: ModelTimeout, stream: boolean): ModelCallError {
  const wait = formatSeconds(timeout.ms)
  return new ModelCallError(
    stream
      ? `The model request failed: the model sent nothing for ${wait} (the model timeout)`
      : `The model request failed: the model did not answer within ${wait} (the model timeout)`,
    {
      cause: timeout,
      hint: 'The model did not answer in time; check the server, or allow it more time.',
      fix: { setting: 'requestTimeout' },
    },
  )
}

export function modelName(model: LanguageModel): string {
  return typeof model === 'string' ? model : `${model.provider}:${model.modelId}`
}

/** A model error the loop cannot repair, with what the user can do about it. */
export function describeModelError(error: unknown): ModelCallError {
  const e = error as {
    name?: string
    message?: string
    statusCode?: number
    lastError?: unknown
    reason?: string
    errors?: unknown[]
  }
  const last = (e.lastError ?? e) as { statusCode?: number; message?: string; url?: string }
  const status = last.statusCode
  const detail = (last.message ?? e.message ?? String(error)).split('\n')[0] ?? ''
  let fix: Fix | undefined
  let hint: string | undefined
  if (status === 401 || status === 403) fix = { setting: 'apiKey' }
  else if (status === 404) {
    fix = { setting: 'model' }
    hint = 'Check the base URL too, for a server of your own.'
  } else if (status === 429) hint = 'The model provider is rate limiting: wait a moment and try again.'
  else if (status !== undefined && status >= 500)
    hint = 'The model server failed repeatedly; try again later.'
  else if (/timeout|timed out|aborted/i.test(String(e.name) + detail)) {
    fix = { setting: 'requestTimeout' }
    hint = 'The model did not answer in time; check the server.'
  } else if (/fetch failed|ECONNREFUSED|connect|ENOTFOUND/i.test(detail)) {
    fix = { setting: 'baseUrl' }
    hint = 'The model server cannot be reached; check that it is running.'
  }
  return new ModelCallError(`The model request failed${status ? ` (HTTP ${status})` : ''}: ${detail}`, {
    cause: error,
    hint,
    fix,
  })
}
