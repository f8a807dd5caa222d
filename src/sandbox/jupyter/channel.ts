/**
 * One kernel's WebSocket (`/api/kernels/ID/channels`), speaking Jupyter's messaging protocol in
 * the v1 binary form where the server offers it (Jupyter Server 1.23 does: it then passes the
 * kernel's messages through without parsing them again) and in the JSON form elsewhere (older
 * servers and gateways); see wire.ts. Requests go out on `shell`; replies and iopub messages come
 * back and are routed to the request they answer by `parent_header.msg_id`. A closed socket, a
 * silent server or a restarted kernel ends every request in flight with an error: nothing waits
 * forever.
 * @module
 */
import { randomUUID } from 'node:crypto'
import WebSocket from 'ws'
import { z } from 'zod'
import { SandboxUnavailableError } from '../../errors.js'
import { type JupyterHttp, SETTINGS_HINT } from './http.js'
import { decodeV1, encodeV1, V1_PROTOCOL, type WireMessage } from './wire.js'

// What the channel and the engine read of a message, and no more: five arrive for every cell, and
// copying headers or walking every key of a content (a record schema) cost more than the rest of
// the parse.
const messageSchema = z.object({
  header: z.object({ msg_id: z.string(), msg_type: z.string() }),
  parent_header: z.object({ msg_id: z.string().optional() }).nullish(),
  content: z.custom<Record<string, unknown> | null | undefined>(
    (value) => value == null || (typeof value === 'object' && !Array.isArray(value)),
  ),
  channel: z.string().nullish(),
})

export type KernelMessage = z.infer<typeof messageSchema> & { content: Record<string, unknown> }

/** The kernel was restarted or died (by the server's restarter) while a request waited. */
export class KernelLost extends Error {
  constructor(readonly state: string) {
    super(`kernel ${state}`)
  }
}

export interface ExecuteRequest {
  code: string
  silent?: boolean
  storeHistory?: boolean
  userExpressions?: Record<string, string>
  /** Whether the kernel drops queued requests after an error. @default false (Analyst queues itself) */
  stopOnError?: boolean
}

export interface ExecuteReply {
  status: 'ok' | 'error' | 'aborted'
  execution_count?: number
  ename?: string
  evalue?: string
  traceback?: string[]
  user_expressions?: Record<
    string,
    { status: string; data?: Record<string, unknown>; ename?: string; evalue?: string }
  >
}

interface Pending {
  onMessage: (message: KernelMessage) => void
  reply?: ExecuteReply
  idle: boolean
  resolve: (reply: ExecuteReply) => void
  reject: (error: Error) => void
}

/** How often the socket is pinged, and how long a missing pong may take before it is given up. */
const PING_INTERVAL_MS = 10_000

/** What `ws` says when the server chose no subprotocol: a server that speaks only JSON. */
const NO_SUBPROTOCOL = 'Server sent no subprotocol'

/** Servers found to speak only the JSON form: their next channels ask for nothing else. */
const jsonOnly = new WeakSet<JupyterHttp>()

export class KernelChannel {
  private readonly pending = new Map<string, Pending>()
  private readonly session = randomUUID()
  private closedWith: Error | undefined
  private pingTimer: NodeJS.Timeout | undefined
  private awaitingPong = false
  /** Told of kernel states that concern no request of ours (restarting, dead, starting). */
  onKernelState: (state: string) => void = () => {}
  /** Told of comm messages from the kernel, whatever request they follow (commands' output). */
  onComm: (commId: string, data: unknown) => void = () => {}
  /** Told of the kernel's input_request prompts (sql() asks the host through them). */
  onInputRequest: (prompt: string, answer: (value: string) => void) => void = () => {}

  private readonly v1: boolean

  private constructor(
    private readonly socket: WebSocket,
    private readonly describe: string,
  ) {
    this.v1 = socket.protocol === V1_PROTOCOL
    socket.on('message', (data, isBinary) => {
      // In the JSON form, a binary frame is a message with buffers, which Analyst does not use.
      if (this.v1 ? isBinary : !isBinary) this.receive(data as Buffer)
    })
    socket.on('pong', () => {
      this.awaitingPong = false
    })
    socket.on('close', (code, reason) => {
      this.fail(
        new SandboxUnavailableError(
          `The connection to ${describe} closed${code ? ` (${code}${reason.length ? ` ${reason}` : ''})` : ''}`,
          { hint: SETTINGS_HINT },
        ),
      )
    })
    socket.on('error', (error) => {
      this.fail(
        new SandboxUnavailableError(`The connection to ${describe} failed: ${error.message}`, {
          hint: SETTINGS_HINT,
          cause: error,
        }),
      )
    })
    // A server that vanished without closing (a dropped network) is noticed by a missing pong.
    this.pingTimer = setInterval(() => {
      if (this.awaitingPong) {
        socket.terminate()
        return
      }
      this.awaitingPong = true
      socket.ping()
    }, PING_INTERVAL_MS)
    this.pingTimer.unref()
  }

  /** Opens the kernel's channels: in the v1 form, or in JSON where the server has no other. */
  static async open(http: JupyterHttp, kernelId: string, timeoutMs = 30_000): Promise<KernelChannel> {
    if (jsonOnly.has(http)) return KernelChannel.connect(http, kernelId, timeoutMs, false)
    try {
      return await KernelChannel.connect(http, kernelId, timeoutMs, true)
    } catch (error) {
      if (!(error instanceof SandboxUnavailableError && error.cause instanceof Error)) throw error
      if (error.cause.message !== NO_SUBPROTOCOL) throw error
      jsonOnly.add(http)
      return KernelChannel.connect(http, kernelId, timeoutMs, false)
    }
  }

  private static connect(
    http: JupyterHttp,
    kernelId: string,
    timeoutMs: number,
    v1: boolean,
  ): Promise<KernelChannel> {
    const describe = `kernel ${kernelId} on ${http.baseUrl}`
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(
        http.wsUrl(`api/kernels/${encodeURIComponent(kernelId)}/channels?session_id=${randomUUID()}`),
        v1 ? [V1_PROTOCOL] : [],
        { headers: http.headers(), handshakeTimeout: timeoutMs, perMessageDeflate: false },
      )
      socket.once('open', () => {
        socket.off('error', reject)
        socket.off('unexpected-response', onResponse)
        // Small messages at once: no Nagle delay on our side of the socket.
        ;(socket as unknown as { _socket?: { setNoDelay?: (on: boolean) => void } })._socket?.setNoDelay?.(
          true,
        )
        resolve(new KernelChannel(socket, describe))
      })
      const onResponse = (_request: unknown, response: { statusCode?: number }) => {
        socket.terminate()
        const status = response.statusCode
        reject(
          new SandboxUnavailableError(
            `The Jupyter server refused the channels of ${describe}: HTTP ${status}`,
            {
              hint: status === 401 || status === 403 ? 'Check ANALYST_JUPYTER_TOKEN.' : SETTINGS_HINT,
            },
          ),
        )
      }
      socket.once('unexpected-response', onResponse)
      socket.once('error', (error) =>
        reject(
          new SandboxUnavailableError(`Cannot open the channels of ${describe}: ${error.message}`, {
            hint: SETTINGS_HINT,
            cause: error,
          }),
        ),
      )
    })
  }

  get closed(): boolean {
    return this.closedWith !== undefined
  }

  private receive(data: Buffer) {
    let message: KernelMessage
    try {
      const parsed = messageSchema.safeParse(this.v1 ? decodeV1(data) : JSON.parse(data.toString()))
      if (!parsed.success) return
      message = { ...parsed.data, content: parsed.data.content ?? {} }
    } catch {
      return
    }
    const type = message.header.msg_type
    if (type === 'comm_msg' && typeof message.content.comm_id === 'string') {
      this.onComm(message.content.comm_id, message.content.data)
      return
    }
    if (type === 'input_request') {
      const header = message.header
      this.onInputRequest(String(message.content.prompt ?? ''), (value) => this.inputReply(header, value))
      return
    }
    const parent = message.parent_header?.msg_id
    const pending = parent ? this.pending.get(parent) : undefined
    if (!pending) {
      if (type === 'status') this.kernelState(String(message.content.execution_state))
      return
    }
    if (message.channel === 'shell' || type === 'execute_reply') {
      pending.reply = message.content as unknown as ExecuteReply
    } else if (type === 'status') {
      if (message.content.execution_state === 'idle') pending.idle = true
    } else {
      pending.onMessage(message)
    }
    if (pending.reply && pending.idle && parent) {
      this.pending.delete(parent)
      pending.resolve(pending.reply)
    }
  }

  /** A restart or death by the server's restarter ends every request in flight. */
  private kernelState(state: string) {
    if (state === 'restarting' || state === 'dead') {
      const lost = new KernelLost(state)
      for (const [id, pending] of this.pending) {
        this.pending.delete(id)
        pending.reject(lost)
      }
    }
    this.onKernelState(state)
  }

  /** Sends an execute_request; resolves with its reply once the kernel is idle again. */
  execute(
    request: ExecuteRequest,
    onMessage: (message: KernelMessage) => void = () => {},
  ): Promise<ExecuteReply> {
    if (this.closedWith) return Promise.reject(this.closedWith)
    const id = randomUUID()
    const message: WireMessage = {
      channel: 'shell',
      header: {
        msg_id: id,
        msg_type: 'execute_request',
        username: 'analyst',
        session: this.session,
        version: '5.3',
        date: new Date().toISOString(),
      },
      parent_header: {},
      metadata: {},
      content: {
        code: request.code,
        silent: request.silent ?? false,
        store_history: request.storeHistory ?? !request.silent,
        user_expressions: request.userExpressions ?? {},
        allow_stdin: false,
        stop_on_error: request.stopOnError ?? false,
      },
    }
    return new Promise((resolve, reject) => {
      this.pending.set(id, { onMessage, idle: false, resolve, reject })
      this.socket.send(this.v1 ? encodeV1(message) : JSON.stringify(message), (error) => {
        if (error && this.pending.delete(id)) {
          reject(
            new SandboxUnavailableError(`Cannot send to ${this.describe}: ${error.message}`, {
              cause: error,
            }),
          )
        }
      })
    })
  }

  /** Answers an input_request on the stdin channel, which the kernel reads while its cell runs. */
  private inputReply(parent: KernelMessage['header'], value: string) {
    if (this.closedWith) return
    const message: WireMessage = {
      channel: 'stdin',
      header: {
        msg_id: randomUUID(),
        msg_type: 'input_reply',
        username: 'analyst',
        session: this.session,
        version: '5.3',
        date: new Date().toISOString(),
      },
      parent_header: parent,
      metadata: {},
      content: { value },
    }
    this.socket.send(this.v1 ? encodeV1(message) : JSON.stringify(message))
  }

  private fail(error: Error) {
    if (this.closedWith) return
    this.closedWith = error
    clearInterval(this.pingTimer)
    for (const pending of this.pending.values()) pending.reject(error)
    this.pending.clear()
  }

  close() {
    this.fail(new SandboxUnavailableError(`The connection to ${this.describe} was closed`))
    this.socket.close()
  }
}
