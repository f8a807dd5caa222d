/**
 * envd, E2B's in-sandbox daemon (port 49983), over an Analyst sandbox: files over HTTP (`/files`,
 * with a token or a signature) and the Connect RPC services `filesystem.Filesystem` and
 * `process.Process`, served by connect-es from envd's own descriptors (envd/*_pb.ts), so the
 * framing is the library's, not ours. A folder is watched on the engine's inotify where it has
 * one, else polled.
 * @module
 */
import { gunzipSync } from 'node:zlib'
import { type DescMethod, fromBinary, type MessageInitShape } from '@bufbuild/protobuf'
import { timestampFromDate } from '@bufbuild/protobuf/wkt'
import { Code, ConnectError, createConnectRouter, type HandlerContext } from '@connectrpc/connect'
import { createFetchHandler } from '@connectrpc/connect/protocol'
import { codeToHttpStatus, errorToJson } from '@connectrpc/connect/protocol-connect'
import { Hono, type Context as HonoContext } from 'hono'
import {
  AnalystError,
  InvalidArgumentError,
  known,
  NotFoundError,
  statusOf,
  TooLargeError,
  UnsupportedMediaError,
} from '../../errors.js'
import { advice } from '../../fixes.js'
import {
  CommandExitError,
  type CommandHandle,
  CommandTimeoutError,
  type EntryInfo,
  type WatchEvent,
} from '../../sandbox/index.js'
import { readBody } from '../request-body.js'
import { cutOffWhen } from './cutoff.js'
import { EventType, Filesystem, FileType, type WatchDirResponseSchema } from './envd/filesystem_pb.js'
import { Process, type ProcessConfig, type ProcessEvent } from './envd/process_pb.js'
import type { SandboxEnv } from './interpreter.js'
import { type Registry, sameSecret } from './registry.js'
import type { ServedSandbox } from './served.js'
import { refusal, signedRequest } from './signing.js'

const RPC_KEEPALIVE_MS = 50_000
/** The RPCs that stream while something runs in the sandbox. */
const STREAMS = new Set([
  '/process.Process/Start',
  '/process.Process/Connect',
  '/filesystem.Filesystem/WatchDir',
])
/** How often a watched folder is looked at on an engine without inotify. */
const WATCH_INTERVAL_MS = 200
const DEADLINE_SLACK_MS = 1000

/** An Analyst error as the Connect code the SDK maps back to its own errors. */
function toConnectError(thrown: unknown): ConnectError {
  if (thrown instanceof ConnectError) return thrown
  const error = known(thrown)
  const message = error instanceof Error ? error.message : String(error)
  const what = AnalystError.isInstance(error) ? advice(error, 'http') : undefined
  const hint = what ? ` ${what}` : ''
  const codes: Record<number, Code> = {
    400: Code.InvalidArgument,
    401: Code.Unauthenticated,
    403: Code.PermissionDenied,
    404: Code.NotFound,
    409: Code.AlreadyExists,
    413: Code.ResourceExhausted,
    429: Code.ResourceExhausted,
    503: Code.FailedPrecondition,
    507: Code.ResourceExhausted,
  }
  return new ConnectError(`${message}${hint}`, codes[statusOf(error)] ?? Code.Internal)
}

async function rpc<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw toConnectError(error)
  }
}

const FILE_TYPES = { file: FileType.FILE, dir: FileType.DIRECTORY, symlink: FileType.SYMLINK }

/** envd's EntryInfo; an engine without details gets the mode and owner of a plain workspace. */
function entryInfo(entry: EntryInfo) {
  const dir = entry.type === 'dir'
  return {
    name: entry.name,
    type: FILE_TYPES[entry.type],
    path: entry.path,
    size: BigInt(entry.size),
    mode: entry.mode ?? (dir ? 0o755 : 0o644),
    permissions: entry.permissions ?? (dir ? 'drwxr-xr-x' : '-rw-r--r--'),
    owner: entry.owner ?? 'user',
    group: entry.group ?? 'user',
    modifiedTime: entry.modifiedTime ? timestampFromDate(entry.modifiedTime) : undefined,
    symlinkTarget: entry.symlinkTarget,
    metadata: entry.metadata ?? {},
  }
}

/** Names in byte order, as Go's filepath.WalkDir gives them to envd. */
const byName = (a: EntryInfo, b: EntryInfo) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** As envd's walkDir: depth first, each folder followed by what is in it, `depth` levels down; links are not followed. */
async function listDir(sandbox: ServedSandbox, path: string, depth: number): Promise<EntryInfo[]> {
  const listed: EntryInfo[] = []
  for (const entry of (await sandbox.list(path)).sort(byName)) {
    listed.push(entry)
    if (depth > 1 && entry.type === 'dir' && entry.symlinkTarget === undefined)
      listed.push(...(await listDir(sandbox, entry.path, depth - 1)))
  }
  return listed
}

/** The folder to watch, checked as envd checks it. */
async function watchedFolder(sandbox: ServedSandbox, path: string): Promise<string> {
  const folder = await sandbox.stat(path)
  if (!folder) throw new NotFoundError(`path ${path} not found`)
  if (folder.type !== 'dir' || folder.symlinkTarget !== undefined)
    throw new ConnectError(`path ${folder.path} not a directory`, Code.InvalidArgument)
  return folder.path
}

/** A folder's entries as `relative path → state`, for polling where the engine has no inotify. */
async function folderState(
  sandbox: ServedSandbox,
  root: string,
  recursive: boolean,
): Promise<Map<string, string>> {
  const entries = await listDir(sandbox, root, recursive ? 32 : 1)
  return new Map(
    entries.map((e) => [
      e.path.slice(root.length + 1),
      `${e.type}:${e.size}:${e.modifiedTime?.getTime()}:${e.mode}`,
    ]),
  )
}

/** What changed between two polls of a folder, as envd's events. */
function changes(before: Map<string, string>, after: Map<string, string>): WatchEvent[] {
  const events: WatchEvent[] = []
  for (const [name, state] of after) {
    const was = before.get(name)
    if (was === undefined) events.push({ name, type: 'create' })
    else if (was.split(':').slice(0, 3).join() !== state.split(':').slice(0, 3).join())
      events.push({ name, type: 'write' })
    else if (was !== state) events.push({ name, type: 'chmod' })
  }
  for (const name of before.keys()) if (!after.has(name)) events.push({ name, type: 'remove' })
  return events
}

const EVENT_TYPES: Record<WatchEvent['type'], EventType> = {
  create: EventType.CREATE,
  write: EventType.WRITE,
  remove: EventType.REMOVE,
  rename: EventType.RENAME,
  chmod: EventType.CHMOD,
}

/** Polls a folder, pushing what changed, until `signal` aborts or the folder goes. */
async function poll(
  sandbox: ServedSandbox,
  root: string,
  recursive: boolean,
  push: (event: WatchEvent) => void,
  signal: AbortSignal,
) {
  let state = await folderState(sandbox, root, recursive)
  while (!signal.aborted) {
    await new Promise((resolve) => setTimeout(resolve, WATCH_INTERVAL_MS))
    if (signal.aborted) return
    const now = await folderState(sandbox, root, recursive).catch(() => undefined)
    if (!now) return // the folder (or the sandbox) is gone
    for (const change of changes(state, now)) push(change)
    state = now
  }
}

/** A queue that a producer fills and a streaming handler drains; `end()` lets the drain finish. */
class Channel<T> {
  private readonly items: T[] = []
  private wake: (() => void) | undefined
  private ended = false
  push(item: T) {
    this.items.push(item)
    this.wake?.()
  }
  end() {
    this.ended = true
    this.wake?.()
  }
  async *drain(signal: AbortSignal): AsyncGenerator<T> {
    const onAbort = () => this.wake?.()
    signal.addEventListener('abort', onAbort)
    try {
      for (;;) {
        while (this.items.length > 0) yield this.items.shift() as T
        if (this.ended || signal.aborted) return
        await new Promise<void>((resolve) => {
          this.wake = resolve
        })
        this.wake = undefined
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }
}

type Event = ProcessEvent['event']

/**
 * Streams a command's events as envd does: start, data, end; keepalives while it is quiet. A
 * command in a terminal has one output, envd's `pty` (the library gives it as stdout).
 */
async function* follow(
  attach: (onData: (stream: 'stdout' | 'stderr', text: string) => void) => Promise<CommandHandle>,
  context: HandlerContext,
  terminal = false,
) {
  const channel = new Channel<Event>()
  const encoder = new TextEncoder()
  const handle = await attach((stream, text) =>
    channel.push({
      case: 'data',
      value: { output: { case: terminal ? 'pty' : stream, value: encoder.encode(text) } } as never,
    }),
  )
  const keepalive = setInterval(
    () => channel.push({ case: 'keepalive', value: {} as never }),
    RPC_KEEPALIVE_MS,
  )
  handle
    .wait()
    .then(
      (result) => result,
      (error: unknown) => {
        if (error instanceof CommandExitError) return error.result
        if (error instanceof CommandTimeoutError) return error.result
        return { exitCode: -1, error: (error as Error).message }
      },
    )
    .then((result) => {
      channel.push({
        case: 'end',
        value: {
          exitCode: result.exitCode,
          exited: result.error === undefined,
          status: result.error ?? `exit status ${result.exitCode}`,
          error: result.error,
        } as never,
      })
      channel.end()
    })
  try {
    yield { event: { event: { case: 'start' as const, value: { pid: handle.pid } } } }
    for await (const event of channel.drain(context.signal)) yield { event: { event: event } }
  } finally {
    clearInterval(keepalive)
    await handle.disconnect()
    // A deadline (the SDK's timeoutMs) ends the command; a client that merely goes away does not.
    // The SDK aborts at its deadline too, a moment before the server's: near the deadline counts.
    const reason = context.signal.reason
    const remaining = context.timeoutMs()
    const atDeadline =
      (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) ||
      (remaining !== undefined && remaining <= DEADLINE_SLACK_MS)
    if (atDeadline) await handle.kill()
  }
}

/** A process's command, arguments, env and folder go to execve: no NUL in them, no `=` in a name. */
function checkProcess(config: ProcessConfig) {
  const invalid = (message: string) => new ConnectError(message, Code.InvalidArgument)
  const words = [config.cmd, ...config.args, ...Object.entries(config.envs).flat(), config.cwd ?? '']
  if (words.some((word) => word.includes('\0')))
    throw invalid('A command, its arguments, env and folder cannot hold a NUL byte')
  for (const name of Object.keys(config.envs))
    if (!name || name.includes('='))
      throw invalid(`${JSON.stringify(name)} cannot name an environment variable (empty, or with =)`)
}

/** A terminal's size, as a terminal can have it (1 to 65535 columns and rows). */
function terminalSize(size: { cols: number; rows: number } | undefined, fallback = { cols: 80, rows: 24 }) {
  const { cols, rows } = size ?? fallback
  if (![cols, rows].every((n) => Number.isInteger(n) && n >= 1 && n <= 65535))
    throw new ConnectError(
      `A terminal of ${cols}×${rows}: columns and rows are 1 to 65535`,
      Code.InvalidArgument,
    )
  return { cols, rows }
}

/** The shell line for an envd process config: the SDK sends `/bin/bash -l -c CMD`. */
function commandLine(cmd: string, args: string[]): string {
  if (cmd === '/bin/bash' && args.length === 3 && args[0] === '-l' && args[1] === '-c')
    return args[2] as string
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`
  return `exec ${[cmd, ...args].map(quote).join(' ')}`
}

function connectRouter(registry: Registry) {
  const sandboxOf = (context: HandlerContext): ServedSandbox => {
    const entry = registry.get(context.requestHeader.get('e2b-sandbox-id') ?? '')
    if (entry?.state !== 'running')
      throw new ConnectError('The sandbox is not running anymore', Code.Unavailable)
    return entry.sandbox
  }
  const pidOf = (selector: { selector: { case: string | undefined; value?: unknown } } | undefined) => {
    if (selector?.selector.case !== 'pid')
      throw new ConnectError('Select processes by pid', Code.InvalidArgument)
    return selector.selector.value as number
  }
  const router = createConnectRouter({ grpc: false, grpcWeb: false })
  router.service(Filesystem, {
    stat: (request, context) =>
      rpc(async () => {
        const entry = await sandboxOf(context).stat(request.path)
        if (!entry) throw new NotFoundError(`${request.path}: no such file or folder`)
        return { entry: entryInfo(entry) }
      }),
    makeDir: (request, context) =>
      rpc(async () => {
        const sandbox = sandboxOf(context)
        if (!(await sandbox.files.makeDir(request.path))) {
          throw new ConnectError(`${request.path} exists already`, Code.AlreadyExists)
        }
        return { entry: entryInfo((await sandbox.stat(request.path)) as EntryInfo) }
      }),
    move: (request, context) =>
      rpc(async () => {
        const sandbox = sandboxOf(context)
        const moved = await sandbox.files.rename(request.source, request.destination)
        return { entry: entryInfo((await sandbox.stat(moved.path)) ?? moved) }
      }),
    listDir: (request, context) =>
      rpc(async () => ({
        entries: (await listDir(sandboxOf(context), request.path, request.depth || 1)).map(entryInfo),
      })),
    // Removing what is not there succeeds, as in envd (os.RemoveAll).
    remove: (request, context) =>
      rpc(async () => {
        await sandboxOf(context)
          .files.remove(request.path)
          .catch((error: unknown) => {
            if (!NotFoundError.isInstance(error)) throw error
          })
        return {}
      }),
    async *watchDir(request, context): AsyncGenerator<MessageInitShape<typeof WatchDirResponseSchema>> {
      const sandbox = sandboxOf(context)
      const root = await rpc(() => watchedFolder(sandbox, request.path))
      const channel = new Channel<WatchEvent | { type: 'keepalive' }>()
      const stop = new AbortController()
      const onAbort = () => stop.abort()
      context.signal.addEventListener('abort', onAbort)
      const watch = await rpc(async () =>
        sandbox.watch(root, { recursive: request.recursive, onEvent: (event) => channel.push(event) }),
      ).catch(() => undefined) // no inotify here (or out of watches): polled instead
      if (!watch) {
        void poll(sandbox, root, request.recursive, (event) => channel.push(event), stop.signal)
          .catch(() => {})
          .finally(() => channel.end())
      }
      const keepalive = setInterval(() => channel.push({ type: 'keepalive' }), RPC_KEEPALIVE_MS)
      try {
        yield { event: { case: 'start' as const, value: {} } }
        for await (const event of channel.drain(context.signal)) {
          if (event.type === 'keepalive') {
            yield { event: { case: 'keepalive' as const, value: {} } }
            continue
          }
          // The entry is best effort, and only where the path still names what the event is about.
          const carries = request.includeEntry && ['create', 'write', 'chmod'].includes(event.type)
          const entry = carries
            ? await sandbox.stat(`${root}/${event.name}`).catch(() => undefined)
            : undefined
          yield {
            event: {
              case: 'filesystem' as const,
              value: { name: event.name, type: EVENT_TYPES[event.type], entry: entry && entryInfo(entry) },
            },
          }
        }
      } finally {
        clearInterval(keepalive)
        context.signal.removeEventListener('abort', onAbort)
        stop.abort()
        watch?.stop()
      }
    },
  })
  router.service(Process, {
    list: (_request, context) =>
      rpc(async () => ({
        processes: (await sandboxOf(context).commands.list()).map((info) => ({
          pid: info.pid,
          tag: info.tag,
          config: { cmd: info.cmd, args: info.args, envs: info.envs, cwd: info.cwd },
        })),
      })),
    async *start(request, context) {
      const config = request.process
      if (!config) throw new ConnectError('process is required', Code.InvalidArgument)
      checkProcess(config)
      const pty = request.pty ? terminalSize(request.pty.size) : undefined
      const sandbox = sandboxOf(context)
      yield* follow(
        (onData) =>
          rpc(() =>
            sandbox.commands.run(commandLine(config.cmd, config.args), {
              background: true,
              stdin: request.stdin ?? true,
              envs: config.envs,
              cwd: config.cwd,
              timeoutMs: 0,
              pty,
              onStdout: (text) => onData('stdout', text),
              onStderr: (text) => onData('stderr', text),
            }),
          ),
        context,
        request.pty !== undefined,
      )
    },
    async *connect(request, context) {
      const pid = pidOf(request.process)
      const sandbox = sandboxOf(context)
      const terminal = (await sandbox.commands.list()).some((info) => info.pid === pid && info.pty)
      yield* follow(
        (onData) =>
          rpc(() =>
            sandbox.commands.connect(pid, {
              timeoutMs: 0,
              onStdout: (text) => onData('stdout', text),
              onStderr: (text) => onData('stderr', text),
            }),
          ),
        context,
        terminal,
      )
    },
    // A terminal's input is its stdin (what is typed at it).
    sendInput: (request, context) =>
      rpc(async () => {
        const input = request.input?.input
        if (input?.case !== 'stdin' && input?.case !== 'pty')
          throw new ConnectError('Send stdin or pty input', Code.InvalidArgument)
        await sandboxOf(context).commands.sendStdin(pidOf(request.process), input.value)
        return {}
      }),
    update: (request, context) =>
      rpc(async () => {
        const size = request.pty?.size
        if (!size) throw new ConnectError('Nothing to update but a terminal size', Code.InvalidArgument)
        await sandboxOf(context).commands.resize(pidOf(request.process), terminalSize(size))
        return {}
      }),
    closeStdin: (request, context) =>
      rpc(async () => {
        await sandboxOf(context).commands.closeStdin(pidOf(request.process))
        return {}
      }),
    sendSignal: (request, context) =>
      rpc(async () => {
        const pid = pidOf(request.process)
        if (!(await sandboxOf(context).commands.kill(pid))) {
          throw new ConnectError(`No running process with pid ${pid}`, Code.NotFound)
        }
        return {}
      }),
  })
  return new Map(
    router.handlers.map((handler) => [
      handler.requestPath,
      { method: handler.method, fetch: createFetchHandler(handler) },
    ]),
  )
}

/** What Connect's content types a request may have: unary (JSON, protobuf) and enveloped streams. */
const RPC_CONTENT = /^application\/(connect\+)?(json|proto)\s*(;|$)/
/** envd's messages are paths, commands and input: far smaller than this. */
const RPC_MAX_BYTES = 16 * 1024 ** 2

/** A refusal in Connect's unary error body: `{ code, message }`, with the status of its code unless told. */
function connectRefusal(message: string, code: Code, status = codeToHttpStatus(code)): Response {
  return Response.json(errorToJson(new ConnectError(message, code), undefined), { status })
}

/**
 * A Connect request checked where the library would answer a client's mistake as `internal` or
 * with no body (a protobuf that does not parse, a compressed envelope without compression, a
 * content type it does not take): the refusal, or the request to serve.
 */
async function checkedRpc(request: Request, method: DescMethod): Promise<Request | Response> {
  const type = RPC_CONTENT.exec(request.headers.get('content-type') ?? '')
  const stream = method.methodKind !== 'unary'
  if (!type || Boolean(type[1]) !== stream)
    return connectRefusal(
      `${method.name} is ${stream ? 'a stream' : 'unary'}: send Content-Type ${stream ? 'application/connect+json or application/connect+proto' : 'application/json or application/proto'}`,
      Code.InvalidArgument,
      415,
    )
  const input = method.input
  let body: Uint8Array
  try {
    body = await readBody(request, RPC_MAX_BYTES)
  } catch (error) {
    return connectRefusal((error as Error).message, Code.ResourceExhausted, 413)
  }
  let message = body
  if (type[1]) {
    const length = body.length >= 5 ? new DataView(body.buffer, body.byteOffset).getUint32(1) : -1
    if (body[0] !== 0 || length !== body.length - 5)
      return connectRefusal(
        'A stream takes one uncompressed envelope: a flags byte of 0, the message length in 4 bytes (big-endian), then the message',
        Code.InvalidArgument,
      )
    message = body.subarray(5)
  }
  if (type[2] === 'proto') {
    try {
      fromBinary(input, message)
    } catch (error) {
      return connectRefusal(
        `The message is not a ${input.typeName}: ${(error as Error).message}`,
        Code.InvalidArgument,
      )
    }
  }
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    body: body as Uint8Array<ArrayBuffer>,
    signal: request.signal,
  })
}

const METADATA_HEADER = 'x-metadata-'

/** E2B's file metadata, from an upload's `X-Metadata-<key>` headers. */
function uploadMetadata(headers: Record<string, string>): Record<string, string> {
  const metadata: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(METADATA_HEADER)) metadata[name.slice(METADATA_HEADER.length)] = value
  }
  return metadata
}

/** An upload's bytes as sent (gzip, as the SDK may send them, unpacked up to `maxBytes`). */
function unpacked(encoding: string | undefined, body: Uint8Array, maxBytes: number): Uint8Array {
  if (!encoding || encoding === 'identity') return body
  if (encoding !== 'gzip')
    throw new UnsupportedMediaError(`Content-Encoding ${encoding} is not taken here`, {
      hint: 'Send the file as it is, or gzip it.',
    })
  try {
    return new Uint8Array(gunzipSync(body, { maxOutputLength: maxBytes }))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      throw new TooLargeError(`The upload is larger than ${maxBytes} bytes once unpacked`)
    throw new InvalidArgumentError('The upload says Content-Encoding: gzip, but it is not gzip', {
      hint: 'Send gzip data, or leave out Content-Encoding.',
    })
  }
}

export interface EnvdOptions {
  registry: Registry
  /** @default 256 MiB */
  maxUploadBytes?: number
}

export function envdRoutes({ registry, maxUploadBytes = 256 * 1024 ** 2 }: EnvdOptions) {
  const app = new Hono<SandboxEnv>()
  const rpcHandlers = connectRouter(registry)
  app.onError((thrown, c) => {
    // The disk full (the workspace's, or the server's) is said as such: 507, not a 500.
    const error = known(thrown) as Error
    return c.json({ code: statusOf(error), message: error.message }, statusOf(error) as 400)
  })

  app.get('/health', (c) => c.body(null, 204))

  // A request without the access token is let in by a signature of the token (signing.ts).
  const signedOut = (c: HonoContext<SandboxEnv>, operation: 'read' | 'write') => {
    if (sameSecret(c.req.header('x-access-token'), c.env.entry.envdAccessToken)) return undefined
    const refused = refusal(c.env.entry.envdAccessToken, signedRequest(new URL(c.req.url), operation))
    return refused ? c.json({ code: 401, message: refused }, 401) : undefined
  }

  app.get('/files', async (c) => {
    const refused = signedOut(c, 'read')
    if (refused) return refused
    const path = c.req.query('path')
    if (!path) return c.json({ code: 400, message: 'path is required' }, 400)
    const bytes = await c.env.entry.sandbox.files.read(path, { format: 'bytes' })
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'content-type': 'application/octet-stream' })
  })

  app.post('/files', async (c) => {
    const refused = signedOut(c, 'write')
    if (refused) return refused
    const sandbox = c.env.entry.sandbox
    const metadata = uploadMetadata(c.req.header())
    if (Object.keys(metadata).length > 0 && !sandbox.keepsMetadata) {
      return c.json(
        {
          code: 400,
          message:
            "File metadata (X-Metadata-*) is not kept by this server's engine: write the file without metadata",
        },
        400,
      )
    }
    const files = sandbox.files
    const path = c.req.query('path')
    const type = c.req.header('content-type') ?? ''
    const body = unpacked(
      c.req.header('content-encoding'),
      await readBody(c.req.raw, maxUploadBytes),
      maxUploadBytes,
    )
    const uploads: Array<{ path: string; data: Uint8Array }> = []
    if (type.startsWith('multipart/form-data')) {
      const form = await new Response(body as Uint8Array<ArrayBuffer>, {
        headers: { 'content-type': type },
      })
        .formData()
        .catch(() => {
          throw new InvalidArgumentError('The multipart/form-data body cannot be read', {
            hint: 'Send the file in a form field named "file", with the boundary the Content-Type names.',
          })
        })
      for (const part of form.getAll('file')) {
        // A part without a file name (a plain form field, as browsers send text) is the file at `path`.
        if (typeof part === 'string') {
          if (path) uploads.push({ path, data: new TextEncoder().encode(part) })
          continue
        }
        uploads.push({ path: path ?? part.name, data: new Uint8Array(await part.arrayBuffer()) })
      }
    } else {
      if (!path) return c.json({ code: 400, message: 'path is required' }, 400)
      uploads.push({ path, data: body })
    }
    if (uploads.length === 0) return c.json({ code: 400, message: 'No file in the upload' }, 400)
    const written = []
    const tagged = Object.keys(metadata).length > 0
    for (const upload of uploads) {
      // An overwritten file loses the metadata it had, as in envd; a new one has none to lose.
      const existed = !tagged && (await files.exists(upload.path).catch(() => false))
      const info = await files.write(upload.path, upload.data)
      if (tagged || existed) await sandbox.setMetadata(info.path, metadata)
      written.push({ name: info.name, type: 'file', path: info.path, ...(tagged ? { metadata } : {}) })
    }
    return c.json(written)
  })

  app.post('/:service/:method', async (c) => {
    const path = new URL(c.req.url).pathname
    const rpc = rpcHandlers.get(path)
    if (!rpc) return c.json({ code: 404, message: 'No such RPC' }, 404)
    const request = await checkedRpc(c.req.raw, rpc.method)
    if (request instanceof Response) return request
    // Streams end with the sandbox: cut off, as E2B's edge cuts them, not ended as a result.
    const life = c.env.entry.life.signal
    return STREAMS.has(path) ? cutOffWhen(life, await rpc.fetch(request)) : rpc.fetch(request)
  })

  app.all('*', (c) => c.json({ code: 404, message: `No route ${c.req.method} ${c.req.path}` }, 404))
  return app
}
