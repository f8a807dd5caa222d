/**
 * A fake Modal on 127.0.0.1, for tests and benchmarks of the modal engine: the control plane
 * (`modal.client.ModalClient`) and each sandbox's command router
 * (`modal.task_command_router.TaskCommandRouter`), served over real gRPC with the message and
 * service definitions generated into the `modal` SDK itself (its dist bundles them unexported, so
 * they are taken from the bundle's own scope). The SDK is driven unchanged: point it here with
 * `MODAL_SERVER_URL=fake.url`. A sandbox is a folder and a container: a bubblewrap jail (the local
 * engine's jail arguments) that sees that folder as its workspace, with the network cut off when
 * the sandbox blocks it, and runs nothing but `sleep` as the real one does without an entrypoint.
 * Each exec is a local process that joins the container's user and PID namespaces, so that, as
 * in a real Modal container, the execs of one sandbox see each other's processes (one can signal
 * another) and terminating the sandbox (its PID 1) ends every process in it. (Each exec keeps a
 * network namespace of its own, loopback only or the host's: nothing here relies on execs sharing it.)
 *
 * Only what the SDK calls on the paths Analyst uses is answered; anything else is UNIMPLEMENTED.
 * What the SDK sends (`calls`) is kept for tests to read, and faults can be injected per method.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { compileFunction } from 'node:vm'
import { Decoder, Encoder } from 'cbor-x'
import { type CallContext, createServer, type Server, ServerError, Status } from 'nice-grpc'
import { bwrapArgs } from '../../sandbox/local/jail.js'
import { canSetHostname } from '../../sandbox/local/probe.js'
import { getRuntime } from '../../sandbox/local/runtime.js'

// biome-ignore lint/suspicious/noExplicitAny: the SDK's generated definitions are not exported with types
type Definition = any
// biome-ignore lint/suspicious/noExplicitAny: requests are the generated messages, read field by field
type Request = any

interface Definitions {
  ModalClientDefinition: Definition
  TaskCommandRouterDefinition: Definition
}

let definitions: Definitions | undefined

/** The service definitions from the SDK's CommonJS bundle, evaluated once with two names exported. */
export function modalDefinitions(): Definitions {
  if (definitions) return definitions
  const require = createRequire(import.meta.url)
  const file = require.resolve('modal')
  const source = `${readFileSync(file, 'utf8')}\nmodule.exports.__analystDefinitions = { ModalClientDefinition, TaskCommandRouterDefinition };`
  const wrapper = compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname'], {
    filename: file,
  })
  const module = { exports: {} as Record<string, unknown> }
  wrapper(module.exports, createRequire(file), module, file, dirname(file))
  definitions = module.exports.__analystDefinitions as Definitions
  return definitions
}

/** The SDK's CBOR settings (serialization.ts): plain maps, byte strings untagged. */
const CBOR = { mapsAsObjects: true, useRecords: false, tagUint8Array: false, useTag259ForMaps: false }
const cbor = { encoder: new Encoder(CBOR), decoder: new Decoder(CBOR) }
const DATA_FORMAT_CBOR = 4

/** A GenericResult status (api.proto). */
const STATUS_SUCCESS = 1
const STATUS_FAILURE = 2
const STATUS_TERMINATED = 3
const NETWORK_BLOCKED = 2

/** An unsigned JWT with an expiry: the SDK reads only `exp`. */
function jwt(payload: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  return `${part({ alg: 'none' })}.${part({ exp: Math.floor(Date.now() / 1000) + 3600, ...payload })}.x`
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
function alnum(length: number): string {
  return Array.from(randomBytes(length), (byte) => ALNUM[byte % ALNUM.length]).join('')
}

/** Output of one stream of an exec, kept whole so a reader can start at any offset. */
class Stdio {
  chunks: Buffer[] = []
  length = 0
  ended = false
  private waiters: Array<() => void> = []

  push(chunk: Buffer) {
    this.chunks.push(chunk)
    this.length += chunk.length
    this.wake()
  }

  end() {
    this.ended = true
    this.wake()
  }

  wake() {
    for (const waiter of this.waiters.splice(0)) waiter()
  }

  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done)
        resolve()
      }
      this.waiters.push(done)
      signal.addEventListener('abort', done, { once: true })
    })
  }

  /** The bytes from offset on, in pieces of at most 1 MiB. */
  *from(offset: number): Generator<Buffer> {
    let start = 0
    for (const chunk of this.chunks) {
      const end = start + chunk.length
      if (end > offset) {
        const piece = chunk.subarray(Math.max(0, offset - start))
        for (let i = 0; i < piece.length; i += 1 << 20) yield piece.subarray(i, i + (1 << 20))
      }
      start = end
    }
  }
}

interface FakeExec {
  id: string
  args: string[]
  env: Record<string, string>
  child: ChildProcess
  stdout: Stdio
  stderr: Stdio
  stdinOffset: number
  exit?: { code?: number; signal?: number }
  exited: Promise<void>
  /** Set by `dropStdio()`: its output streams end at once, while the process runs on. */
  dropped: boolean
}

export interface FakeSandbox {
  id: string
  taskId: string
  jwt: string
  dir: string
  /** The create request's definition, as the SDK sent it. */
  definition: Request
  v2: boolean
  execs: Map<string, FakeExec>
  /** The container: its PID 1 (`sleep`) holds the namespaces that every exec joins. */
  container: ChildProcess
  /** Open descriptors of the container's user and PID namespaces, passed to each exec. */
  namespaces: { user: number; pid: number }
  terminated: boolean
  timer?: NodeJS.Timeout
}

interface Fault {
  code: Status
  message: string
  times: number
}

export interface FakeModal {
  /** For MODAL_SERVER_URL. */
  url: string
  tokenId: string
  tokenSecret: string
  /** Every control-plane and router call, in order: method name and request. */
  calls: Array<{ method: string; request: Request }>
  sandboxes: Map<string, FakeSandbox>
  /** The next `times` calls of a method fail with this status (Infinity: until cleared). */
  fail(method: string, code: Status, message?: string, times?: number): void
  clearFaults(): void
  /**
   * Deploys a function: `APP/NAME` then answers FunctionGet, and its calls (FunctionMap, then
   * FunctionGetOutputs) run `handler` with the decoded arguments. A thrown error is the call's failure.
   */
  deployFunction(
    app: string,
    name: string,
    handler: (args: unknown[], kwargs: Record<string, unknown>) => unknown,
  ): void
  /** Ends every open output stream of the sandbox's execs now, and later reads of them at once. */
  dropStdio(sandboxId: string): void
  close(): Promise<void>
}

export interface FakeModalOptions {
  tokenId?: string
  tokenSecret?: string
}

export async function startFakeModal(options: FakeModalOptions = {}): Promise<FakeModal> {
  const { ModalClientDefinition, TaskCommandRouterDefinition } = modalDefinitions()
  const tokenId = options.tokenId ?? `ak-${alnum(16)}`
  const tokenSecret = options.tokenSecret ?? `as-${alnum(16)}`
  const root = mkdtempSync(join(tmpdir(), 'analyst-fake-modal-'))
  const calls: FakeModal['calls'] = []
  const sandboxes = new Map<string, FakeSandbox>()
  const byTask = new Map<string, FakeSandbox>()
  const faults = new Map<string, Fault>()
  let routerUrl = ''
  type Handler = (args: unknown[], kwargs: Record<string, unknown>) => unknown
  const functions = new Map<string, { id: string; handler: Handler }>()
  const functionCalls = new Map<string, Promise<{ ok: boolean; value?: unknown; error?: string }>>()

  const record = (method: string, request: Request) => {
    calls.push({ method, request })
    const fault = faults.get(method)
    if (fault && fault.times > 0) {
      fault.times--
      throw new ServerError(fault.code, fault.message)
    }
  }

  const authenticate = (context: CallContext) => {
    const id = context.metadata.get('x-modal-token-id')
    const secret = context.metadata.get('x-modal-token-secret')
    if (id !== tokenId || secret !== tokenSecret) {
      throw new ServerError(Status.UNAUTHENTICATED, 'Token ID or secret is invalid or expired')
    }
  }

  const sandboxOf = (id: string): FakeSandbox => {
    const sandbox = sandboxes.get(id)
    if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Sandbox ${id} not found`)
    return sandbox
  }

  const newSandbox = async (definition: Request, v2: boolean): Promise<FakeSandbox> => {
    const id = v2 ? `sb2-${alnum(20)}` : `sb-${alnum(22)}`
    const taskId = `ta-${alnum(22)}`
    const dir = join(root, id)
    for (const sub of ['home/user', 'tmp', 'root']) mkdirSync(join(dir, sub), { recursive: true })
    const { container, namespaces } = await startContainer(dir, definition)
    const sandbox: FakeSandbox = {
      id,
      taskId,
      jwt: jwt({ task_id: taskId }),
      dir,
      definition,
      v2,
      execs: new Map(),
      container,
      namespaces,
      terminated: false,
    }
    const seconds = Number(definition?.timeoutSecs ?? 300)
    sandbox.timer = setTimeout(() => terminate(sandbox), seconds * 1000)
    sandbox.timer.unref()
    sandboxes.set(id, sandbox)
    byTask.set(taskId, sandbox)
    return sandbox
  }

  const terminate = (sandbox: FakeSandbox) => {
    if (sandbox.terminated) return
    sandbox.terminated = true
    clearTimeout(sandbox.timer)
    // The container's PID 1 ends, and with it every process in its PID namespace.
    sandbox.container.kill('SIGKILL')
    for (const exec of sandbox.execs.values()) {
      if (!exec.exit) exec.child.kill('SIGKILL')
    }
    closeSync(sandbox.namespaces.user)
    closeSync(sandbox.namespaces.pid)
    Promise.all([...sandbox.execs.values()].map((exec) => exec.exited)).then(() =>
      rmSync(sandbox.dir, { recursive: true, force: true }),
    )
  }

  const access = (sandbox: FakeSandbox) => ({ url: routerUrl, jwt: sandbox.jwt })

  const control: Record<string, (request: Request, context: CallContext) => Promise<unknown>> = {
    async authTokenGet() {
      return { token: jwt({ sub: tokenId }) }
    },
    async appGetOrCreate(request) {
      return { appId: `ap-${Buffer.from(String(request.appName)).toString('hex').slice(0, 20)}` }
    },
    async environmentGetOrCreate() {
      return {
        environmentId: 'en-fake',
        metadata: { name: 'main', settings: { imageBuilderVersion: '2025.06', webhookSuffix: '' } },
      }
    },
    async imageGetOrCreate(request) {
      const key = JSON.stringify([request.image?.dockerfileCommands, request.image?.baseImages])
      const id = `im-${Buffer.from(key).toString('base64url').slice(-22)}`
      return { imageId: id, result: { status: STATUS_SUCCESS } }
    },
    async sandboxCreate(request) {
      return { sandboxId: (await newSandbox(request.definition, false)).id }
    },
    async sandboxCreateV2(request) {
      const sandbox = await newSandbox(request.definition, true)
      return {
        sandboxId: sandbox.id,
        taskId: sandbox.taskId,
        tunnels: [],
        commandRouterAccess: access(sandbox),
        sandboxToken: '',
      }
    },
    async sandboxGetTaskId(request) {
      const sandbox = sandboxOf(request.sandboxId)
      if (sandbox.terminated) return { taskResult: { status: STATUS_TERMINATED, exception: 'terminated' } }
      return { taskId: sandbox.taskId }
    },
    async taskGetCommandRouterAccess(request) {
      const sandbox = byTask.get(request.taskId)
      if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Task ${request.taskId} not found`)
      return access(sandbox)
    },
    async sandboxGetCommandRouterAccess(request) {
      return { ...access(sandboxOf(request.sandboxId)), workerIpv4Address: '' }
    },
    async sandboxTerminate(request) {
      terminate(sandboxOf(request.sandboxId))
      return {}
    },
    async sandboxWait(request, context) {
      const sandbox = sandboxOf(request.sandboxId)
      const deadline = Date.now() + Number(request.timeout ?? 0) * 1000
      while (!sandbox.terminated && Date.now() < deadline && !context.signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      return {
        result: sandbox.terminated ? { status: STATUS_TERMINATED, exitcode: 137 } : undefined,
        metadata: undefined,
      }
    },
  }
  control.functionGet = async (request) => {
    const found = functions.get(`${request.appName}/${request.objectTag}`)
    if (!found)
      throw new ServerError(Status.NOT_FOUND, `Function ${request.appName}/${request.objectTag} not found`)
    return {
      functionId: found.id,
      handleMetadata: {
        functionName: request.objectTag,
        supportedInputFormats: [DATA_FORMAT_CBOR],
        supportedOutputFormats: [DATA_FORMAT_CBOR],
      },
    }
  }
  control.functionMap = async (request) => {
    const found = [...functions.values()].find((f) => f.id === request.functionId)
    if (!found) throw new ServerError(Status.NOT_FOUND, `Function ${request.functionId} not found`)
    const input = request.pipelinedInputs?.[0]?.input
    const [args, kwargs] = cbor.decoder.decode(Buffer.from(input?.args ?? [])) as [
      unknown[],
      Record<string, unknown>,
    ]
    const id = `fc-${alnum(20)}`
    functionCalls.set(
      id,
      Promise.resolve()
        .then(() => found.handler(args, kwargs))
        .then(
          (value) => ({ ok: true, value }),
          (error: unknown) => ({ ok: false, error: String((error as Error)?.message ?? error) }),
        ),
    )
    return {
      functionCallId: id,
      functionCallJwt: jwt({ fc: id }),
      pipelinedInputs: [{ idx: 0, inputJwt: jwt({ in: id }) }],
    }
  }
  control.functionGetOutputs = async (request) => {
    const call = functionCalls.get(request.functionCallId)
    if (!call) throw new ServerError(Status.NOT_FOUND, `Function call ${request.functionCallId} not found`)
    const waited = await Promise.race([
      call,
      new Promise<undefined>((resolve) =>
        setTimeout(resolve, Math.min(Number(request.timeout ?? 0), 5) * 1000),
      ),
    ])
    if (!waited) return { outputs: [] }
    const result = waited.ok
      ? { status: STATUS_SUCCESS, data: cbor.encoder.encode(waited.value) }
      : { status: STATUS_FAILURE, exception: waited.error, traceback: '' }
    return { outputs: [{ idx: 0, result, dataFormat: DATA_FORMAT_CBOR }] }
  }
  control.sandboxGetTaskIdV2 = control.sandboxGetTaskId as (typeof control)[string]
  control.sandboxTerminateV2 = control.sandboxTerminate as (typeof control)[string]
  control.sandboxWaitV2 = control.sandboxWait as (typeof control)[string]

  const execOf = (request: Request, context: CallContext): [FakeSandbox, FakeExec | undefined] => {
    const sandbox = byTask.get(request.taskId)
    if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Task ${request.taskId} not found`)
    if (context.metadata.get('authorization') !== `Bearer ${sandbox.jwt}`) {
      throw new ServerError(Status.UNAUTHENTICATED, 'invalid command router token')
    }
    if (sandbox.terminated) throw new ServerError(Status.NOT_FOUND, `Task ${request.taskId} has finished`)
    return [sandbox, sandbox.execs.get(request.execId)]
  }
  const existing = (exec: FakeExec | undefined, id: string): FakeExec => {
    if (!exec) throw new ServerError(Status.NOT_FOUND, `Exec ${id} not found`)
    return exec
  }

  const router: Record<string, (request: Request, context: CallContext) => unknown> = {
    async taskExecStart(request, context) {
      const [sandbox] = execOf(request, context)
      sandbox.execs.set(request.execId, startExec(sandbox, request))
      return {}
    },
    async taskExecStdinWrite(request, context) {
      const [, found] = execOf(request, context)
      const exec = existing(found, request.execId)
      const data = Buffer.from(request.data ?? [])
      // A retried write is sent again with the same offset: only the bytes not yet written count.
      const fresh = data.subarray(Math.max(0, exec.stdinOffset - Number(request.offset)))
      if (fresh.length > 0 && !exec.child.stdin?.destroyed) exec.child.stdin?.write(fresh)
      exec.stdinOffset = Math.max(exec.stdinOffset, Number(request.offset) + data.length)
      if (request.eof) exec.child.stdin?.end()
      return {}
    },
    async *taskExecStdioRead(request, context) {
      const [, found] = execOf(request, context)
      const exec = existing(found, request.execId)
      const stdio = request.fileDescriptor === 1 ? exec.stderr : exec.stdout
      let offset = Number(request.offset ?? 0)
      while (!context.signal.aborted && !exec.dropped) {
        const changed = stdio.changed(context.signal)
        for (const data of stdio.from(offset)) {
          offset += data.length
          yield { data }
        }
        if (stdio.ended) return
        await changed
      }
    },
    async taskExecWait(request, context) {
      const [, found] = execOf(request, context)
      const exec = existing(found, request.execId)
      await Promise.race([
        exec.exited,
        new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true })),
      ])
      if (!exec.exit) throw new ServerError(Status.DEADLINE_EXCEEDED, 'still running')
      return exec.exit
    },
    async taskExecPoll(request, context) {
      const [, found] = execOf(request, context)
      return existing(found, request.execId).exit ?? {}
    },
  }

  const startExec = (sandbox: FakeSandbox, request: Request): FakeExec => {
    const env: Record<string, string> = {
      PATH: '/usr/bin:/bin',
      HOME: '/root',
      LANG: 'C.UTF-8',
    }
    for (const source of request.secretSources ?? []) Object.assign(env, source.env?.contents ?? {})
    // In the container's namespaces: the user one (as its own uid) and the PID one (its processes).
    const args = joinNamespaces(
      jailArgs(
        sandbox.dir,
        sandbox.definition,
        request.commandArgs,
        request.workdir || sandbox.definition?.workdir || '/',
      ),
    )
    const { user, pid } = sandbox.namespaces
    const child = spawn('bwrap', args, { env, stdio: ['pipe', 'pipe', 'pipe', user, pid] })
    const exec: FakeExec = {
      id: request.execId,
      args: request.commandArgs,
      env,
      child,
      stdout: new Stdio(),
      stderr: new Stdio(),
      stdinOffset: 0,
      exited: Promise.resolve(),
      dropped: false,
    }
    child.stdin?.on('error', () => {})
    child.stdout?.on('data', (chunk: Buffer) => exec.stdout.push(chunk))
    child.stderr?.on('data', (chunk: Buffer) => exec.stderr.push(chunk))
    exec.exited = new Promise((resolve) => {
      child.on('close', (code, signal) => {
        exec.exit = signal ? { signal: signalNumber(signal) } : { code: code ?? 0 }
        exec.stdout.end()
        exec.stderr.end()
        resolve()
      })
      child.on('error', (error) => {
        exec.stderr.push(Buffer.from(String(error)))
        exec.exit = { code: 127 }
        exec.stdout.end()
        exec.stderr.end()
        resolve()
      })
    })
    return exec
  }

  const server = createServer({
    'grpc.max_receive_message_length': 100 * 1024 * 1024,
    'grpc.max_send_message_length': 100 * 1024 * 1024,
  })
  server.add(ModalClientDefinition, implementation(ModalClientDefinition, control, record, authenticate))
  const port = await server.listen('127.0.0.1:0')
  const routerServer: Server = createServer({
    'grpc.max_receive_message_length': 100 * 1024 * 1024,
    'grpc.max_send_message_length': 100 * 1024 * 1024,
  })
  routerServer.add(TaskCommandRouterDefinition, implementation(TaskCommandRouterDefinition, router, record))
  const routerPort = await routerServer.listen('127.0.0.1:0')
  // The SDK requires an https: router URL, and dials it in plain text when the control plane is local.
  routerUrl = `https://127.0.0.1:${routerPort}`

  return {
    url: `http://127.0.0.1:${port}`,
    tokenId,
    tokenSecret,
    calls,
    sandboxes,
    deployFunction(app, name, handler) {
      functions.set(`${app}/${name}`, { id: `fu-${alnum(20)}`, handler })
    },
    fail(method, code, message = 'injected fault', times = Number.POSITIVE_INFINITY) {
      faults.set(method, { code, message, times })
    },
    clearFaults() {
      faults.clear()
    },
    dropStdio(sandboxId) {
      for (const exec of sandboxOf(sandboxId).execs.values()) {
        exec.dropped = true
        exec.stdout.wake()
        exec.stderr.wake()
      }
    },
    async close() {
      for (const sandbox of sandboxes.values()) terminate(sandbox)
      await Promise.all([...sandboxes.values()].flatMap((s) => [...s.execs.values()].map((e) => e.exited)))
      await Promise.all([server.shutdown(), routerServer.shutdown()])
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/** The jail of a sandbox's container or one of its execs: the local engine's, made a container's. */
function jailArgs(dir: string, definition: Request, command: string[], workdir: string): string[] {
  const blocked = definition?.networkAccess?.networkAccessType === NETWORK_BLOCKED
  const runtime = getRuntime()
  return containerArgs(
    bwrapArgs(
      {
        python: { executable: '/usr/bin/python3', version: '', paths: [], modules: {} },
        workspace: join(dir, 'home/user'),
        data: join(dir, 'home/user'),
        kernelDir: join(dir, 'root'),
        etc: runtime.etc,
        network: !blocked,
        tmpBytes: 0,
        seccomp: false,
        disableUserns: false,
        hostname: canSetHostname(),
      },
      command,
    ),
    dir,
    workdir,
  )
}

/** The descriptors at which an exec finds the container's user and PID namespaces. */
const USERNS_FD = 3
const PIDNS_FD = 4

/** An exec's jail that joins the container's user and PID namespaces instead of making its own. */
function joinNamespaces(args: string[]): string[] {
  return args.flatMap((arg) =>
    arg === '--unshare-user'
      ? ['--userns', String(USERNS_FD)]
      : arg === '--unshare-pid'
        ? ['--pidns', String(PIDNS_FD)]
        : [arg],
  )
}

/**
 * Starts a sandbox's container: `sleep` as its init, in a jail of its own (a user and a PID
 * namespace, the sandbox's folder); resolves when bubblewrap says where it runs, with its
 * namespaces open for the execs to join.
 */
async function startContainer(
  dir: string,
  definition: Request,
): Promise<{ container: ChildProcess; namespaces: { user: number; pid: number } }> {
  // Without --dev: bubblewrap would then nest a second user namespace under the one that owns the
  // PID namespace, and an exec that joins it could not join the PID namespace.
  const jail = jailArgs(dir, definition, ['sleep', 'infinity'], '/')
  const dev = jail.indexOf('--dev')
  const args = ['--info-fd', '3', ...jail.slice(0, dev), ...jail.slice(dev + 2)]
  const container = spawn('bwrap', args, {
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  container.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const childPid = await new Promise<number>((resolve, reject) => {
    let info = ''
    const stream = container.stdio[3] as NodeJS.ReadableStream
    stream.on('data', (chunk: Buffer) => {
      info += chunk.toString()
      const pid = /"child-pid":\s*(\d+)/.exec(info)?.[1]
      if (pid) resolve(Number(pid))
    })
    container.once('exit', (code) =>
      reject(new Error(`the fake container did not start (${code}): ${stderr}`)),
    )
    container.once('error', reject)
  })
  // Its init (bubblewrap's, PID 1) lives as long as the container: its namespaces are the sandbox's.
  return { container, namespaces: await joinableNamespaces(childPid) }
}

/**
 * Opens a process's user and PID namespaces once an exec can join them. bubblewrap names its child
 * on the info fd before that child has written its user namespace's uid and gid maps; an exec that
 * joins an unmapped user namespace runs as the overflow uid, and its bubblewrap then fails to send
 * its pid (`Can't send pid: Invalid argument`: the kernel refuses credentials whose uid has no
 * mapping). Under load that window is wide enough for the kernel's start to fall into it.
 */
export async function joinableNamespaces(
  pid: number,
  deadline = Date.now() + 30_000,
): Promise<{ user: number; pid: number }> {
  const mapped = (file: string) => readFileSync(`/proc/${pid}/${file}`, 'utf8').trim() !== ''
  while (!(mapped('uid_map') && mapped('gid_map'))) {
    if (Date.now() > deadline) throw new Error(`the fake container ${pid} never mapped its user`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return {
    user: openSync(`/proc/${pid}/ns/user`, 'r'),
    pid: openSync(`/proc/${pid}/ns/pid`, 'r'),
  }
}

/**
 * The local jail's arguments, made into a container's: the workspace folder is the sandbox's own
 * (with data/ in it, writable, as in a Modal container), /tmp and /root are the sandbox's and
 * shared by its execs, the exec starts in its workdir, and no info fd is read.
 */
function containerArgs(args: string[], dir: string, workdir: string): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--info-fd') {
      i++
      continue
    }
    if (arg === '--size') {
      i += 3 // --size N --tmpfs /tmp
      out.push('--bind', join(dir, 'tmp'), '/tmp')
      continue
    }
    if (arg === '--ro-bind' && args[i + 2] === '/home/user/data') {
      i += 2
      continue
    }
    if (arg === '--ro-bind' && args[i + 2] === '/opt/analyst') {
      i += 2
      out.push('--bind', join(dir, 'root'), '/root')
      continue
    }
    if (arg === '--chdir') {
      out.push(arg, workdir)
      i++
      continue
    }
    out.push(arg)
  }
  return out
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }
function signalNumber(signal: NodeJS.Signals): number {
  return SIGNALS[signal] ?? 9
}

/** A service implementation: every method of the definition, UNIMPLEMENTED unless given. */
function implementation(
  definition: Definition,
  methods: Record<string, (request: Request, context: CallContext) => unknown>,
  record: (method: string, request: Request) => void,
  authenticate?: (context: CallContext) => void,
): Definition {
  const out: Record<string, unknown> = {}
  for (const [name, method] of Object.entries(definition.methods as Record<string, Definition>)) {
    const given = methods[name]
    const check = (request: Request, context: CallContext) => {
      authenticate?.(context)
      record(method.name, request)
      if (!given) throw new ServerError(Status.UNIMPLEMENTED, `${method.name} is not in the fake`)
      return given
    }
    out[name] = method.responseStream
      ? async function* (request: Request, context: CallContext) {
          yield* check(request, context)(request, context) as AsyncIterable<unknown>
        }
      : async (request: Request, context: CallContext) => check(request, context)(request, context)
  }
  return out
}
