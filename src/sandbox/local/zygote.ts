/**
 * The zygote: one Python per root (the host's interpreter, or a template: template.ts), started
 * once in its own jail with numpy, pandas and matplotlib imported (and a template's start step
 * run), that forks each sandbox's kernel in a few milliseconds. How a forked sandbox keeps the
 * isolation of a bubblewrap-started one is written at the top of python/analyst_zygote.py. Root
 * only (the zygote builds namespaces and changes uids); where it cannot run, sandboxes start the
 * usual way and `analyst doctor` says why. A template's zygote runs the template's code, which is
 * not trusted: it is root of a user namespace of its own only (python/analyst_userns.py), never
 * of the host.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { chownSync, mkdirSync } from 'node:fs'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { SandboxUnavailableError } from '../errors.js'
import { forkTrace } from '../kernel/channel.js'
import { kernelEnv } from '../kernel/env.js'
import { bwrapArgs, SANDBOX_BIN_DIRS, SANDBOX_HOME, SANDBOX_KERNEL_DIR } from './jail.js'
import type { KernelProcess, KernelSpawnSpec } from './kernel.js'
import { canSetHostname } from './probe.js'
import type { PythonInfo } from './python.js'
import { allocateUid, getRuntime, isRoot, onExit, SANDBOX_UIDS } from './runtime.js'
import { seccompFilter } from './seccomp.js'
import type { SandboxRoot } from './template.js'
import { jailHelper, jailStart } from './template-reach.js'

/** How sandboxes start: forked from the zygote, or a new bubblewrap and Python each (spawn). */
export type ColdStart = 'fork' | 'spawn'

export interface Zygote {
  socket: string
  process: ChildProcess
  /** The host's side of the zygote (analyst_launcher.py): starts each forked sandbox. */
  launcher: Launcher
}

const zygotes = new Map<string, Promise<Zygote>>()
/**
 * Providers that may fork and are not closed. Zygotes run while one is open or a sandbox of
 * theirs runs; then they stop, so that a closed provider leaves no process behind.
 */
const users = new Set<object>()
/** A zygote that failed to start is not tried again before this long: creates spawn meanwhile. */
const RETRY_AFTER_MS = 60_000
const failures = new Map<string, { error: Error; at: number }>()

let unsupported: { reason: string | undefined } | undefined

/** Why forking cannot work on this machine at all, or undefined when it may. */
export function forkUnsupported(): string | undefined {
  // Found once: it cannot change while this process runs, and each create asks (building the
  // filter to know took half a millisecond at load 15).
  unsupported ??= {
    reason: !isRoot
      ? 'sandboxes are forked from a zygote only when Analyst runs as root'
      : !seccompFilter(undefined, { denyUserns: true })
        ? `no seccomp table for ${process.arch}: forked sandboxes could create user namespaces`
        : undefined,
  }
  return unsupported.reason
}

/** The running zygote of this root (the host's Python, or a template), started (once) when needed. */
export function zygoteFor(
  hostPython: PythonInfo,
  root: SandboxRoot,
  kernelDir: string,
  preload: string[],
): Promise<Zygote> {
  const key = root.key
  const failed = failures.get(key)
  if (failed && Date.now() - failed.at < RETRY_AFTER_MS) return Promise.reject(failed.error)
  const running = zygotes.get(key)
  if (running) return running
  const zygote = startZygote(hostPython, root, kernelDir, preload)
  zygotes.set(key, zygote)
  zygote.then(
    (started) => {
      started.process.once('exit', () => {
        if (zygotes.get(key) === zygote) zygotes.delete(key) // rebuilt by the next create
      })
      started.launcher.on('idle', () => {
        if (users.size === 0) void stopZygote(key, zygote)
      })
    },
    (error: Error) => {
      failures.set(key, { error, at: Date.now() })
      zygotes.delete(key)
    },
  )
  return zygote
}

/**
 * A template's zygote runs as root of a user namespace of its own (analyst_userns.py): on the host,
 * a uid of its own, without capabilities; in its namespace, the sandbox uids, which it gives its
 * sandboxes as the host's zygote does. The maps' lines: its own uid as 0, the sandbox uids as they are.
 */
function userNamespaceMap(own: number): string {
  const { base, count } = SANDBOX_UIDS
  const lines = [`0 ${own} 1`]
  if (own > base) lines.push(`${base} ${base} ${own - base}`)
  if (own + 1 < base + count) lines.push(`${own + 1} ${own + 1} ${base + count - own - 1}`)
  return lines.join(',')
}

async function startZygote(
  hostPython: PythonInfo,
  root: SandboxRoot,
  kernelDir: string,
  preload: string[],
): Promise<Zygote> {
  const reason = forkUnsupported()
  if (reason) throw new SandboxUnavailableError(reason)
  const runtime = getRuntime()
  const python = root.python
  // One folder per root, the same for the zygote that replaces a dead one: the specs of
  // running sandboxes name its socket, and their kernels restart through it.
  const key = createHash('sha256').update(root.key).digest('hex').slice(0, 12)
  const socketDir = join(runtime.own, `zygote-${key}`)
  mkdirSync(socketDir, { recursive: true, mode: 0o700 })
  const filter = seccompFilter(undefined, { denyUserns: true }) as Buffer
  const hostname = canSetHostname()
  const template = root.template !== undefined
  const config = JSON.stringify({
    preload,
    seccomp: filter.toString('hex'),
    hostname,
    ...(template ? { userns: true, start: root.start, workdir: root.workdir } : {}),
  })
  const args = bwrapArgs(
    {
      python,
      rootfs: root.rootfs,
      binds: root.binds,
      workspace: '',
      data: '',
      kernelDir,
      etc: runtime.etc,
      fontCache: root.fontCache,
      network: false,
      tmpBytes: 64 * 1024 * 1024,
      seccomp: false,
      disableUserns: false,
      hostname,
      zygoteSocketDir: socketDir,
    },
    [python.executable, '-s', `${SANDBOX_KERNEL_DIR}/analyst_zygote.py`, config],
  )
  let own: ReturnType<typeof allocateUid> | undefined
  if (template) {
    own = allocateUid()
    chownSync(socketDir, own.uid, own.uid)
  }
  const jailed = own
    ? jailStart(root.reach, { map: userNamespaceMap(own.uid) }, ['bwrap', ...args], jailHelper(hostPython))
        .command
    : ['bwrap', ...args]
  const [command, ...rest] = jailed as [string, ...string[]]
  const child = spawn(command, rest, {
    // One thread for its math libraries: each kernel forked from it sizes them (analyst_threads.py).
    env: kernelEnv(SANDBOX_HOME, root.env, process.env, SANDBOX_BIN_DIRS, 1),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const forget = onExit(() => child.kill('SIGKILL'))
  child.once('exit', forget)
  if (own) child.once('exit', own.release)
  let output = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4096)
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail('did not start within 60 s'), 60_000)
    const fail = (why: string) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new SandboxUnavailableError(`The zygote ${why}: ${output.trim().slice(-500)}`))
    }
    child.once('error', (error) => fail(error.message))
    child.once('exit', (code, signal) => fail(`exited (${signal ?? `code ${code}`})`))
    let seen = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8')
      if (seen.includes('ready\n')) {
        clearTimeout(timer)
        child.removeAllListeners('exit')
        child.once('exit', forget)
        if (own) child.once('exit', own.release)
        resolve()
      }
    })
  })
  // An idle zygote must not keep the host process running.
  child.unref()
  for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref(): void }).unref()
  const socket = join(socketDir, 'socket')
  // The launcher is the host's Python, as root: never the template's.
  const launcher = new Launcher(hostPython, join(kernelDir, 'analyst_launcher.py'), socket)
  // One goes with the other: sandboxes of a zygote whose launcher died cannot be reached.
  launcher.process.once('exit', () => child.kill('SIGKILL'))
  child.once('exit', () => launcher.process.kill('SIGKILL'))
  return { socket, process: child, launcher }
}

/** Kernels asked which pages they wrote (prefault), until one answers: a learning create takes a few ms more. */
const MAX_LEARN_TRIES = 3

/** What the launcher reports about one sandbox, by its id. */
type LauncherMessage =
  | { type: 'handle'; id: string; name: 'io' | 'out' }
  | { type: 'started'; id: string; pid: number }
  | { type: 'exit'; id: string; code: number | null }
  | { type: 'failed'; id: string; error: string }
  | { type: 'mounted'; id: string; error: string | null }

/**
 * A sandbox forked from the zygote, as Kernel sees a process: its output on 1, one socket for
 * requests (3) and messages (4), the jail's init as its pid.
 */
class ForkedKernel extends EventEmitter implements KernelProcess {
  readonly stdio: ReadonlyArray<Readable | Writable | null | undefined>
  private held = false

  constructor(
    readonly pid: number,
    io: Socket,
    out: Socket,
    private readonly launcher: Launcher,
  ) {
    super()
    this.stdio = [null, out, null, io, io, null]
  }

  get jailInit(): number {
    return this.pid
  }

  learned(writes: string) {
    this.launcher.learned(writes)
  }

  ref() {
    if (!this.held) this.launcher.hold(+1)
    this.held = true
  }

  unref() {
    if (this.held) this.launcher.hold(-1)
    this.held = false
  }

  exited(code: number | null, signal: NodeJS.Signals | null) {
    this.unref()
    this.emit('exit', code, signal)
  }
}

interface Starting {
  io?: Socket
  out?: Socket
  pid?: number
  resolve(kernel: ForkedKernel): void
  reject(error: Error): void
}

/**
 * The host's side of one zygote, spoken to over Node's IPC channel (fds travel on it). Emits
 * 'idle' when its last sandbox is gone.
 */
export class Launcher extends EventEmitter {
  readonly process: ChildProcess
  private readonly starting = new Map<string, Starting>()
  private readonly running = new Map<string, ForkedKernel>()
  private readonly mounting = new Map<string, (error: string | null) => void>()
  private holds = 0
  /**
   * The pages a kernel of this zygote wrote between its fork and ready (hex ranges): each kernel
   * forked after copies them in one call per range instead of one page fault each (prefault in
   * analyst_zygote.py). Asked of the first kernels until one answers; given to the zygote once.
   */
  private writes: string | undefined
  private writesGiven = false
  private learnTries = 0

  constructor(python: PythonInfo, script: string, socket: string) {
    super()
    this.process = spawn(python.executable, ['-I', '-S', script, socket], {
      env: {},
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    const forget = onExit(() => this.process.kill('SIGKILL'))
    let output = ''
    this.process.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-2048)
    })
    this.process.on('message', (message: LauncherMessage, handle?: Socket) => this.receive(message, handle))
    this.process.once('exit', (code, signal) => {
      forget()
      const error = new SandboxUnavailableError(
        `The sandbox launcher exited (${signal ?? `code ${code}`}): ${output.trim().slice(-300)}`,
      )
      for (const start of this.starting.values()) start.reject(error)
      this.starting.clear()
      for (const kernel of this.running.values()) kernel.exited(null, 'SIGKILL')
      this.running.clear()
      for (const mounted of this.mounting.values()) mounted('the launcher exited')
    })
    this.process.unref()
    ;(this.process.stderr as unknown as { unref(): void } | null)?.unref()
    this.process.channel?.unref()
  }

  /** Forks one sandbox; resolves once its init is in its cgroups and its pipes are here. */
  start(request: ForkRequest): Promise<KernelProcess> {
    const id = randomBytes(8).toString('hex')
    const { env, work, data, cgroupProcs, ...rest } = request
    return new Promise<KernelProcess>((resolve, reject) => {
      this.hold(+1)
      const done = () => {
        this.starting.delete(id)
        this.hold(-1)
        this.checkIdle()
      }
      this.starting.set(id, {
        resolve: (kernel) => {
          done()
          resolve(kernel)
        },
        reject: (error) => {
          done()
          reject(error)
        },
      })
      if (forkTrace.hasSubscribers)
        forkTrace.publish({ id, phases: [['node launch', Number(process.hrtime.bigint())]] })
      const learn = this.writes === undefined && this.learnTries < MAX_LEARN_TRIES
      if (learn) this.learnTries++
      // Sent once: the zygote keeps them for every kernel forked after.
      const give = this.writes !== undefined && !this.writesGiven
      if (give) this.writesGiven = true
      const prefault = give ? { prefault: this.writes } : learn ? { learn: true } : {}
      this.process.send({
        type: 'start',
        id,
        work,
        data,
        cgroupProcs,
        env,
        request: { ...rest, ...prefault },
      })
    })
  }

  /** What a kernel wrote before ready (ForkedKernel): the next kernels' prefault. */
  learned(writes: string) {
    if (this.writes === undefined && writes.length > 0) this.writes = writes
  }

  /** Mounts a tmpfs at path (the `mount` options given), in the host's mount namespace; false if it could not. */
  mount(path: string, options: string): Promise<boolean> {
    const id = randomBytes(8).toString('hex')
    return new Promise<boolean>((resolve) => {
      if (this.process.exitCode !== null || this.process.signalCode !== null) return resolve(false)
      this.hold(+1)
      this.mounting.set(id, (error) => {
        this.mounting.delete(id)
        this.hold(-1)
        resolve(error === null)
        this.checkIdle()
      })
      this.process.send({ type: 'mount', id, path, options })
    })
  }

  /** No sandbox starting or running, no mount under way. */
  get idle(): boolean {
    return this.starting.size === 0 && this.running.size === 0 && this.mounting.size === 0
  }

  private checkIdle() {
    if (this.idle) this.emit('idle')
  }

  /** While a sandbox is starting or busy, the IPC channel keeps the host's event loop running. */
  hold(change: number) {
    const before = this.holds
    this.holds += change
    if (before === 0 && this.holds > 0) this.process.channel?.ref()
    else if (before > 0 && this.holds === 0) this.process.channel?.unref()
  }

  private receive(message: LauncherMessage, handle?: Socket) {
    if (message.type === 'mounted') return this.mounting.get(message.id)?.(message.error)
    const start = this.starting.get(message.id)
    if (message.type === 'exit') {
      const kernel = this.running.get(message.id)
      this.running.delete(message.id)
      kernel?.exited(message.code, null)
      start?.reject(new SandboxUnavailableError(`The sandbox exited as it started (code ${message.code})`))
      this.checkIdle()
      return
    }
    if (!start) {
      handle?.destroy() // a sandbox that failed meanwhile
      return
    }
    if (message.type === 'failed') {
      start.io?.destroy()
      start.out?.destroy()
      start.reject(new SandboxUnavailableError(`The zygote could not start a sandbox: ${message.error}`))
      return
    }
    if (message.type === 'handle' && handle) start[message.name] = handle
    if (message.type === 'started') start.pid = message.pid
    if (start.io && start.out && start.pid) {
      const kernel = new ForkedKernel(start.pid, start.io, start.out, this)
      this.running.set(message.id, kernel)
      start.resolve(kernel)
    }
  }
}

/** Everything the launcher needs to ask the zygote for one sandbox. */
export interface ForkRequest {
  work: string
  data: string
  uid: number
  gid: number
  tmpBytes: number
  /** The sandbox's boot id (jail.ts BOOT_ID). */
  bootId: string
  env: Record<string, string>
  kernel: unknown
  cgroupProcs: string[]
}

/**
 * The spec of a forked kernel. It asks the zygote running when it starts, so that a kernel
 * restarted after its zygote died comes from the new one.
 */
export function forkSpec(zygote: () => Promise<Zygote>, request: ForkRequest): KernelSpawnSpec {
  return {
    command: 'the zygote',
    args: [],
    env: request.env,
    maxMessageBytes: 64 * 1024 * 1024,
    launch: async () => (await zygote()).launcher.start(request),
  }
}

/** A provider that may fork sandboxes: zygotes keep running until it is released. */
export function useZygotes(user: object) {
  users.add(user)
}

/** A provider closed: with no other open, every zygote stops once no sandbox of it runs. */
export async function releaseZygotes(user: object): Promise<void> {
  users.delete(user)
  if (users.size > 0) return
  await Promise.all(
    [...zygotes].map(async ([key, zygote]) => {
      if ((await zygote.catch(() => undefined))?.launcher.idle && users.size === 0)
        await stopZygote(key, zygote)
    }),
  )
}

/** Stops every zygote (tests, and hosts that want their memory back). */
export async function stopZygotes(): Promise<void> {
  await Promise.all([...zygotes].map(([key, zygote]) => stopZygote(key, zygote)))
}

async function stopZygote(key: string, zygote: Promise<Zygote>) {
  if (zygotes.get(key) === zygote) zygotes.delete(key)
  const started = await zygote.catch(() => undefined)
  if (!started) return
  const exits = [started.process, started.launcher.process]
    .filter((child) => child.exitCode === null && child.signalCode === null)
    .map((child) => {
      child.ref() // an idle zygote is unref'd: the wait for its exit must hold the loop
      return new Promise((resolve) => child.once('exit', resolve))
    })
  started.process.kill('SIGKILL')
  await Promise.all(exits)
}
