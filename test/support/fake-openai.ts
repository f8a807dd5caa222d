/**
 * A fake OpenAI-compatible chat completions server on 127.0.0.1, for the real HTTP path. It speaks
 * the wire protocol (JSON or SSE streaming, tool calls, usage, error bodies, Retry-After) and
 * replies from a script, the way real models do: prose around code, odd fences, rate limits.
 * Like real servers, it rejects (HTTP 400) a history where an assistant tool call has no tool result,
 * more than one, or a tool result answers no call.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: unknown
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>
  tool_call_id?: string
}

export interface ChatRequest {
  model: string
  messages: ChatMessage[]
  stream?: boolean
  tools?: unknown[]
  stream_options?: { include_usage?: boolean }
  headers: IncomingMessage['headers']
}

export type FakeReply =
  /** Code: a run_python tool call when the request offers tools, else a fenced block in the text. */
  | { code: string; prose?: string; fence?: string; closeFence?: boolean }
  | { content: string; finishReason?: 'stop' | 'length' }
  /** Tool calls as sent; `finishReason: 'length'` with arguments cut off, as when the reply hit its token limit. */
  | {
      toolCalls: Array<{ name: string; arguments: string }>
      content?: string
      finishReason?: 'tool_calls' | 'length'
    }
  /** An HTTP error as the provider sends it. */
  | { status: number; message?: string; headers?: Record<string, string> }
  /** Answer only after this long (for request timeouts); then the reply. */
  | { delayMs: number; reply: FakeReply }
  /** Take the request and never answer, as a server that hangs (the connection stays open). */
  | { hang: true }
  /**
   * Stream the reply slowly: each part after `partDelayMs`; with `stallAfter`, its first parts
   * only, then nothing more with the connection open (a stalled stream).
   */
  | { stallAfter?: number; partDelayMs?: number; reply: FakeReply }

export type ScriptEntry = FakeReply | ((request: ChatRequest) => FakeReply)

export interface FakeOpenAI {
  /** Base URL for `--base-url`, ending in /v1. */
  url: string
  requests: ChatRequest[]
  /** Replies not used yet. */
  remaining(): number
  close(): Promise<void>
}

/** The text of the last message (a tool result or a user observation): what the code printed. */
export function lastObservation(request: ChatRequest): string {
  const last = request.messages.at(-1)
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '')
}

function historyProblem(messages: ChatMessage[]): string | undefined {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as ChatMessage
    if (message.role === 'tool' && messages[i - 1]?.role !== 'tool' && !messages[i - 1]?.tool_calls?.length)
      return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue
    const answers = new Map<string, number>()
    for (let j = i + 1; j < messages.length && messages[j]?.role === 'tool'; j++) {
      const id = messages[j]?.tool_call_id ?? ''
      answers.set(id, (answers.get(id) ?? 0) + 1)
    }
    const missing = message.tool_calls.find((call) => !answers.has(call.id))
    if (missing) {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.id}`
    }
    // As Anthropic's API does (each tool_use gets exactly one tool_result): a second answer is an error.
    const twice = [...answers].find(([, count]) => count > 1)
    if (twice) return `Each tool call must have exactly one result; ${twice[0]} has ${twice[1]}.`
    const stray = [...answers.keys()].find((id) => !message.tool_calls?.some((call) => call.id === id))
    if (stray) return `A tool message answers ${stray}, which no tool call of the assistant message has.`
  }
  return undefined
}

/**
 * @param options.host where it listens: 127.0.0.1, or the gateway of a container network whose
 * containers must reach it (test/image's compose stack).
 * @param options.port @default a free one
 */
export async function startFakeOpenAI(
  script: ScriptEntry[],
  options: { host?: string; port?: number } = {},
): Promise<FakeOpenAI> {
  const host = options.host ?? '127.0.0.1'
  const requests: ChatRequest[] = []
  let next = 0
  let callCounter = 0
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'not found' } }))
      return
    }
    const request = {
      ...JSON.parse(Buffer.concat(chunks).toString('utf8')),
      headers: req.headers,
    } as ChatRequest
    requests.push(request)
    const problem = historyProblem(request.messages)
    if (problem) {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: problem, type: 'invalid_request_error' } }))
      return
    }
    const entry = script[next++] ?? { content: 'I have no more scripted replies.' }
    let reply: FakeReply
    try {
      reply = typeof entry === 'function' ? entry(request) : entry
    } catch (error) {
      // A failed expectation inside a scripted reply: end the request at once (400 is not retried),
      // so the test fails with the assertion's message instead of waiting for its timeout.
      reply = { status: 400, message: `scripted reply failed: ${(error as Error).message}` }
    }
    let stallAfter = Number.POSITIVE_INFINITY
    let partDelayMs = 0
    while ('reply' in reply || 'hang' in reply) {
      if ('hang' in reply) return
      if ('delayMs' in reply) {
        const { delayMs } = reply
        await new Promise((resolve) => setTimeout(resolve, delayMs))
        if (res.destroyed || req.destroyed) return
      } else {
        stallAfter = reply.stallAfter ?? stallAfter
        partDelayMs = reply.partDelayMs ?? 0
      }
      reply = reply.reply
    }
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(
        JSON.stringify({
          error: { message: reply.message ?? `error ${reply.status}`, type: 'server_error' },
        }),
      )
      return
    }
    const offeredTools = (request.tools ?? []).length > 0
    let content: string | null = null
    let toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = []
    let finishReason = 'stop'
    if ('code' in reply) {
      if (offeredTools) {
        content = reply.prose ?? null
        toolCalls = [
          {
            id: `call_${++callCounter}`,
            type: 'function',
            function: { name: 'run_python', arguments: JSON.stringify({ code: reply.code }) },
          },
        ]
        finishReason = 'tool_calls'
      } else {
        const fence = reply.fence ?? '```python'
        const close = reply.closeFence === false ? '' : `\n${fence.match(/^[`~]+/)?.[0] ?? '```'}`
        content = `${reply.prose ? `${reply.prose}\n\n` : ''}${fence}\n${reply.code}${close}`
      }
    } else if ('toolCalls' in reply) {
      content = reply.content ?? null
      toolCalls = reply.toolCalls.map((call) => ({
        id: `call_${++callCounter}`,
        type: 'function',
        function: call,
      }))
      finishReason = reply.finishReason ?? 'tool_calls'
    } else {
      content = reply.content
      finishReason = reply.finishReason ?? 'stop'
    }
    const usage = {
      prompt_tokens: 100 + request.messages.length,
      completion_tokens: 20,
      total_tokens: 120 + request.messages.length,
    }
    const base = {
      id: `chatcmpl-${requests.length}`,
      created: Math.floor(Date.now() / 1000),
      model: request.model,
    }
    if (!request.stream) {
      const message = { role: 'assistant', content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message, finish_reason: finishReason }],
          usage,
        }),
      )
      return
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    const parts: string[] = []
    const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      parts.push(
        `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra })}\n\n`,
      )
    send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])
    for (const piece of content?.match(/[\s\S]{1,12}/g) ?? [])
      send([{ index: 0, delta: { content: piece }, finish_reason: null }])
    toolCalls.forEach((call, index) => {
      send([
        {
          index: 0,
          delta: {
            tool_calls: [
              { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
            ],
          },
          finish_reason: null,
        },
      ])
      for (const piece of call.function.arguments.match(/[\s\S]{1,16}/g) ?? []) {
        send([
          {
            index: 0,
            delta: { tool_calls: [{ index, function: { arguments: piece } }] },
            finish_reason: null,
          },
        ])
      }
    })
    send([{ index: 0, delta: {}, finish_reason: finishReason }])
    if (request.stream_options?.include_usage) send([], { usage })
    for (const [index, part] of parts.entries()) {
      if (index >= stallAfter) return
      if (partDelayMs) await new Promise((resolve) => setTimeout(resolve, partDelayMs))
      if (res.destroyed) return
      res.write(part)
    }
    res.end('data: [DONE]\n\n')
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host}:${port}/v1`,
    requests,
    remaining: () => script.length - next,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
