/**
 * envd, E2B's in-sandbox daemon (port 49983), over an Analyst sandbox: files over HTTP (`/files`)
 * and the Connect RPC services `filesystem.Filesystem` and `process.Process`, served by connect-es
 * from envd's own descriptors (envd/*_pb.ts), so the framing is the library's, not ours.
 * @module
 */
import { gunzipSync } from 'node:zlib'
import { Code, ConnectError, createConnectRouter, type HandlerContext } from '@connectrpc/connect'
import { createFetchHandler } from '@connectrpc/connect/protocol'
import { Hono, type Context as HonoContext } from 'hono'
import { AnalystError, NotFoundError, statusOf, TooLargeError } from '../../errors.js'
import { advice } from '../../fixes.js'
import {
  CommandExitError,
  type CommandHandle,
  CommandTimeoutError,
  type EntryInfo,
  type Sandbox,
} from '../../sandbox/index.js'
import { EventType, Filesystem, FileType } from './envd/filesystem_pb.js'
import { Process, type ProcessEvent } from './envd/process_pb.js'
import type { SandboxEnv } from './interpreter.js'
import type { Registry } from './registry.js'

const RPC_KEEPALIVE_MS = 50_000
/** How often a watched folder is looked at: the workspace is another user's, so it is polled. */
const WATCH_INTERVAL_MS = 200
const DEADLINE_SLACK_MS = 1000

/** An Analyst error as the Connect code the SDK maps back to its own errors. */
function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error
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

function entryInfo(entry: EntryInfo) {
  const dir = entry.type === 'dir'
  return {
    name: entry.name,
    type: dir ? FileType.DIRECTORY : FileType.FILE,
    path: entry.path,
    size: BigInt(entry.size),
    mode: dir ? 0o755 : 0o644,
    permissions: dir ? 'drwxr-xr-x' : '-rw-r--r--',
    owner: 'user',
    group: 'user',
  }
}

async function listDir(sandbox: Sandbox, path: string, depth: number): Promise<EntryInfo[]> {
  const entries = await sandbox.files.list(path)
  if (depth <= 1) return entries
  const nested = await Promise.all(
    entries.filter((e) => e.type === 'dir').map((e) => listDir(sandbox, e.path, depth - 1)),
  )
  return [...entries, ...nested.flat()]
}

/** A folder's entries as `relative path → type:size`, `depth` levels down. */
async function folderState(sandbox: Sandbox, path: string, recursive: boolean): Promise<Map<string, string>> {
  const root = (await sandbox.files.stat(path))?.path
  if (!root) throw new NotFoundError(`${path}: no such folder in the sandbox`)
  const entries = await listDir(sandbox, root, recursive ? 32 : 1)
  return new Map(entries.map((e) => [e.path.slice(root.length + 1), `${e.type}:${e.size}`]))
}

/** What changed between two states of a folder, as envd's events (writes seen by their size). */
function changes(before: Map<string, string>, after: Map<string, string>) {
  const events: Array<{ name: string; type: EventType }> = []
  for (const [name, state] of after) {
    const was = before.get(name)
    if (was === undefined) events.push({ name, type: EventType.CREATE })
    else if (was !== state) events.push({ name, type: EventType.WRITE })
  }
  for (const name of before.keys()) if (!after.has(name)) events.push({ name, type: EventType.REMOVE })
  return events
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

/** Streams a command's events as envd does: start, data, end; keepalives while it is quiet. */
async function* follow(
  attach: (onData: (stream: 'stdout' | 'stderr', text: string) => void) => Promise<CommandHandle>,
  context: HandlerContext,
) {
  const channel = new Channel<Event>()
  const encoder = new TextEncoder()
  const handle = await attach((stream, text) =>
    channel.push({ case: 'data', value: { output: { case: stream, value: encoder.encode(text) } } as never }),
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

/** The shell line for an envd process config: the SDK sends `/bin/bash -l -c CMD`. */
function commandLine(cmd: string, args: string[]): string {
  if (cmd === '/bin/bash' && args.length === 3 && args[0] === '-l' && args[1] === '-c')
    return args[2] as string
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`
  return `exec ${[cmd, ...args].map(quote).join(' ')}`
}

function connectRouter(registry: Registry) {
  const sandboxOf = (context: HandlerContext): Sandbox => {
    const entry = registry.get(context.requestHeader.get('e2b-sandbox-id') ?? '')
    if (!entry) throw new ConnectError('The sandbox is not running anymore', Code.Unavailable)
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
        const entry = await sandboxOf(context).files.stat(request.path)
        if (!entry) throw new NotFoundError(`${request.path}: no such file or folder`)
        return { entry: entryInfo(entry) }
      }),
    makeDir: (request, context) =>
      rpc(async () => {
        const files = sandboxOf(context).files
        if (!(await files.makeDir(request.path))) {
          throw new ConnectError(`${request.path} exists already`, Code.AlreadyExists)
        }
        return { entry: entryInfo((await files.stat(request.path)) as EntryInfo) }
      }),
    move: (request, context) =>
      rpc(async () => ({
        entry: entryInfo(await sandboxOf(context).files.rename(request.source, request.destination)),
      })),
    listDir: (request, context) =>
      rpc(async () => ({
        entries: (await listDir(sandboxOf(context), request.path, request.depth || 1)).map(entryInfo),
      })),
    remove: (request, context) =>
      rpc(async () => {
        await sandboxOf(context).files.remove(request.path)
        return {}
      }),
    async *watchDir(request, context) {
      const sandbox = sandboxOf(context)
      let state = await rpc(() => folderState(sandbox, request.path, request.recursive))
      yield { event: { case: 'start' as const, value: {} } }
      let quiet = 0
      while (!context.signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, WATCH_INTERVAL_MS))
        if (context.signal.aborted) return
        const now = await folderState(sandbox, request.path, request.recursive).catch(() => undefined)
        if (!now) return // the folder (or the sandbox) is gone
        for (const change of changes(state, now))
          yield { event: { case: 'filesystem' as const, value: change } }
        state = now
        quiet += WATCH_INTERVAL_MS
        if (quiet >= RPC_KEEPALIVE_MS) {
          quiet = 0
          yield { event: { case: 'keepalive' as const, value: {} } }
        }
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
      if (request.pty)
        throw new ConnectError('PTYs are not available in Analyst sandboxes', Code.Unimplemented)
      const config = request.process
      if (!config) throw new ConnectError('process is required', Code.InvalidArgument)
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
              onStdout: (text) => onData('stdout', text),
              onStderr: (text) => onData('stderr', text),
            }),
          ),
        context,
      )
    },
    async *connect(request, context) {
      const pid = pidOf(request.process)
      const sandbox = sandboxOf(context)
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
      )
    },
    sendInput: (request, context) =>
      rpc(async () => {
        const input = request.input?.input
        if (input?.case !== 'stdin')
          throw new ConnectError('Only stdin input exists here', Code.InvalidArgument)
        await sandboxOf(context).commands.sendStdin(pidOf(request.process), input.value)
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
  return new Map(router.handlers.map((handler) => [handler.requestPath, createFetchHandler(handler)]))
}

/** The request body, up to `maxBytes`; past that a 413, without reading the rest. */
async function readBody(c: HonoContext, maxBytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = c.req.raw.body?.getReader()
  if (!reader) return new Uint8Array()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > maxBytes) {
      await reader.cancel()
      throw new TooLargeError(`The upload is larger than ${maxBytes} bytes`)
    }
    chunks.push(value)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

export interface EnvdOptions {
  registry: Registry
  /** @default 256 MiB */
  maxUploadBytes?: number
}

export function envdRoutes({ registry, maxUploadBytes = 256 * 1024 ** 2 }: EnvdOptions) {
  const app = new Hono<SandboxEnv>()
  const rpcHandlers = connectRouter(registry)
  app.onError((error, c) => c.json({ code: statusOf(error), message: error.message }, statusOf(error) as 400))

  app.get('/health', (c) => c.body(null, 204))

  app.get('/files', async (c) => {
    const path = c.req.query('path')
    if (!path) return c.json({ code: 400, message: 'path is required' }, 400)
    const bytes = await c.env.entry.sandbox.files.read(path, { format: 'bytes' })
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'content-type': 'application/octet-stream' })
  })

  app.post('/files', async (c) => {
    const files = c.env.entry.sandbox.files
    const path = c.req.query('path')
    const type = c.req.header('content-type') ?? ''
    let body = await readBody(c, maxUploadBytes)
    if (c.req.header('content-encoding') === 'gzip') body = new Uint8Array(gunzipSync(body))
    const uploads: Array<{ path: string; data: Uint8Array }> = []
    if (type.startsWith('multipart/form-data')) {
      const form = await new Response(body as Uint8Array<ArrayBuffer>, {
        headers: { 'content-type': type },
      }).formData()
      for (const part of form.getAll('file')) {
        if (typeof part === 'string') continue
        const target = path ?? part.name
        uploads.push({ path: target, data: new Uint8Array(await part.arrayBuffer()) })
      }
    } else {
      if (!path) return c.json({ code: 400, message: 'path is required' }, 400)
      uploads.push({ path, data: body })
    }
    if (uploads.length === 0) return c.json({ code: 400, message: 'No file in the upload' }, 400)
    const written = []
    for (const upload of uploads) {
      const info = await files.write(upload.path, upload.data)
      written.push({ name: info.name, type: 'file', path: info.path })
    }
    return c.json(written)
  })

  app.post('/:service/:method', async (c) => {
    const handler = rpcHandlers.get(new URL(c.req.url).pathname)
    return handler ? handler(c.req.raw) : c.json({ code: 404, message: 'No such RPC' }, 404)
  })

  app.all('*', (c) => c.json({ code: 404, message: `No route ${c.req.method} ${c.req.path}` }, 404))
  return app
}
