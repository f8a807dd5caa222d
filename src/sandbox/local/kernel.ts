/**
 * One kernel process (bubblewrap around analyst_kernel.py, or the bare kernel with isolation
 * 'none') and its message pipes. It only transports: timeouts, restarts and files live in
 * LocalSandbox.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, constants, openSync } from 'node:fs'
import type { Socket } from 'node:net'
import type { Readable, Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ErrorOptions } from '../../errors.js'
import { installHint, systemPackages } from '../../packages.js'
import { SandboxUnavailableError } from '../errors.js'
import { KernelChannel } from '../kernel/channel.js'
import { readLines } from '../kernel/protocol.js'
import { jailFailureFix } from './probe.js'
import { MODULE_SOURCES } from './python.js'
import { onExit } from './runtime.js'

export interface KernelSpawnSpec {
  command: string
  args: string[]
  env: Record<string, string>
  cwd?: string
  /** Run as this host uid/gid (root only). */
  uid?: number
  gid?: number
  /** cgroup.procs files the process joins before it starts the jail, so nothing it forks escapes. */
  cgroupProcs?: string[]
  /** Own process group, so that kill() reaches children (isolation 'none'). */
  processGroup?: boolean
  /** bubblewrap reports its init's PID on fd 5 (--info-fd 5). */
  infoFd?: boolean
  /** A file bubblewrap reads the seccomp filter from, on fd 6 (--seccomp 6). */
  seccompFile?: string
  /** Largest message line accepted from the kernel. */
  maxMessageBytes: number
  /** Starts the kernel some other way than spawning `command` (forked from the zygote). */
  launch?: () => Promise<KernelProcess>
}

/**
 * A kernel's process as Kernel sees it: a ChildProcess, or a sandbox forked from the zygote
 * (zygote.ts). stdio: output on 1 (and 2), requests on 3, messages on 4, bubblewrap's info on 5.
 */
export interface KernelProcess {
  readonly pid?: number
  /** The host PID of the jail's init, when known without bubblewrap's info fd. */
  readonly jailInit?: number
  readonly stdio: ReadonlyArray<Readable | Writable | null | undefined>
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this
  ref(): void
  unref(): void
  /** A forked kernel's pages written before ready, from its ready message (zygote.ts' prefault). */
  learned?(writes: string): void
}

/** The kernel process ended. `oom` when the cgroup's OOM killer fired. */
export class KernelExit extends Error {
  constructor(
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    readonly output: string,
  ) {
    super(`kernel exited (${signal ?? `code ${code}`})`)
  }
}

const JOIN_CGROUPS =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 111; shift; n=$((n-1)); done; exec "$@"'

export class Kernel extends KernelChannel<KernelExit> {
  private readonly requests: Writable
  private diagnostics = ''
  /** PID of the jail's init (bubblewrap's child): killing it ends the PID namespace and lets bubblewrap reap it. */
  private jailInit: number | undefined
  /**
   * `/proc/<jail init>`, held open from when its PID is known: through it the host reaches the
   * jail's own file system (its /tmp), and a PID reused after the jail ends cannot stand in for it.
   */
  private procFd: number | undefined
  protected readonly exited: Promise<KernelExit>

  private constructor(
    private readonly child: KernelProcess,
    private readonly processGroup: boolean,
    maxMessageBytes: number,
  ) {
    super()
    const stdio = child.stdio as unknown as [null, Readable, Readable | null, Writable, Readable]
    this.requests = stdio[3]
    this.requests.on('error', () => {}) // the exit handler reports a dead kernel
    this.jailInit = child.jailInit
    this.holdProc()
    for (const stream of [stdio[1], stdio[2]]) {
      // Before the kernel redirects fd 1 and 2 (and for bwrap's own errors), output lands here.
      stream?.on('data', (chunk: Buffer) => {
        this.diagnostics = (this.diagnostics + chunk.toString('utf8')).slice(-8192)
      })
    }
    const info = (child.stdio as unknown as Array<Readable | null>)[5]
    if (info) {
      let text = ''
      info.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8')
        const pid = text.match(/"child-pid":\s*(\d+)/)?.[1]
        if (pid && this.jailInit === undefined) {
          this.jailInit = Number(pid)
          this.holdProc()
        }
      })
    }
    readLines(
      stdio[4],
      maxMessageBytes,
      (line) => this.receive(line),
      () => this.dropped++,
    )
    const forget = onExit(() => this.killNow())
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        forget()
        if (this.procFd !== undefined) closeSync(this.procFd)
        this.procFd = undefined
        const exit = new KernelExit(code, signal, this.diagnostics)
        // Commands run in the kernel's jail: they ended with it.
        this.ended(exit)
        resolve(exit)
      })
    })
    this.unref()
  }

  /** Starts a kernel and waits for its `ready` message. */
  static async start(
    spec: KernelSpawnSpec,
    options: { readyTimeoutMs?: number; keepAlive?: boolean } = {},
  ): Promise<Kernel> {
    if (spec.launch) return Kernel.ready(await Kernel.launch(spec.launch), spec, options)
    const [command, args] = spec.cgroupProcs?.length
      ? [
          '/bin/sh',
          [
            '-c',
            JOIN_CGROUPS,
            'sh',
            String(spec.cgroupProcs.length),
            ...spec.cgroupProcs,
            spec.command,
            ...spec.args,
          ],
        ]
      : [spec.command, spec.args]
    const seccomp = spec.seccompFile ? openSync(spec.seccompFile, 'r') : undefined
    let child: ChildProcess
    try {
      child = spawn(command, args, {
        env: spec.env,
        cwd: spec.cwd,
        uid: spec.uid,
        gid: spec.gid,
        detached: spec.processGroup ?? false,
        stdio: [
          'ignore',
          'pipe',
          'pipe',
          'pipe',
          'pipe',
          spec.infoFd ? 'pipe' : 'ignore',
          seccomp ?? 'ignore',
        ],
      })
    } finally {
      if (seccomp !== undefined) closeSync(seccomp)
    }
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
    try {
      await spawned
    } catch (cause) {
      const missing = (cause as NodeJS.ErrnoException).code === 'ENOENT'
      throw new SandboxUnavailableError(
        missing ? `${spec.command} is not installed` : `Could not start ${spec.command}`,
        {
          cause,
          hint:
            missing && spec.command.endsWith('bwrap')
              ? `Install bubblewrap: ${installHint(['bubblewrap'], systemPackages())}`
              : undefined,
        },
      )
    }
    return Kernel.ready(child, spec, options)
  }

  private static async launch(launch: () => Promise<KernelProcess>): Promise<KernelProcess> {
    try {
      return await launch()
    } catch (cause) {
      const why = cause instanceof Error ? cause.message : String(cause)
      throw new SandboxUnavailableError(`The sandbox failed to start: ${why}`, { cause })
    }
  }

  /** Waits for the started process's kernel to say it is ready. */
  private static async ready(
    child: KernelProcess,
    spec: KernelSpawnSpec,
    options: { readyTimeoutMs?: number; keepAlive?: boolean },
  ): Promise<Kernel> {
    const kernel = new Kernel(child, spec.processGroup ?? false, spec.maxMessageBytes)
    // Warm-pool kernels start with keepAlive false: they must not hold the host process open.
    if (options.keepAlive !== false) kernel.ref()
    const ready = new Promise<void>((resolve) =>
      kernel.waiters.set('ready', (message) => {
        // Only the first ready, before any cell: code cannot write what the next kernels prefault.
        kernel.waiters.delete('ready')
        if (message?.type === 'ready' && message.writes !== undefined) child.learned?.(message.writes)
        resolve()
      }),
    )
    const timeoutMs = options.readyTimeoutMs ?? 60_000
    let timer: NodeJS.Timeout | undefined
    const outcome = await Promise.race([
      ready.then(() => 'ready' as const),
      kernel.exited,
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs)
      }),
    ])
    clearTimeout(timer)
    kernel.unref()
    if (outcome === 'ready') return kernel
    kernel.kill()
    const output = outcome === 'timeout' ? kernel.diagnostics : outcome.output
    throw new SandboxUnavailableError(
      outcome === 'timeout'
        ? `The Python kernel did not start within ${timeoutMs / 1000} s`
        : `The sandbox failed to start: ${output.trim().split('\n').slice(-3).join(' ') || outcome.message}`,
      startHint(output),
    )
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  private holdProc() {
    if (this.jailInit === undefined || this.procFd !== undefined) return
    try {
      this.procFd = openSync(`/proc/${this.jailInit}`, constants.O_RDONLY | constants.O_DIRECTORY)
    } catch {
      // gone already: the exit handler reports it
    }
  }

  /**
   * The jail's root folder as the host reaches it, while the jail runs; undefined without a jail.
   * Named by this process's PID, not /proc/self: helpers it starts (xattrs.ts) walk it too.
   */
  get jailRoot(): string | undefined {
    return this.alive && this.procFd !== undefined ? `/proc/${process.pid}/fd/${this.procFd}/root` : undefined
  }

  protected write(line: string) {
    this.requests.write(line)
  }

  protected override busy() {
    this.ref()
  }

  protected override idle() {
    this.unref()
  }

  /**
   * SIGKILL. In the jail the init goes first: the kernel then kills everything in its PID
   * namespace, setsid daemons and double forks included, and bubblewrap reaps it and exits. The
   * outer bubblewrap is killed too if it has not exited shortly after.
   */
  async kill(): Promise<KernelExit> {
    if (!this.alive) return this.exited
    this.ref() // keep the host alive until the exit is seen
    this.killNow()
    const exited = await Promise.race([this.exited, sleep(1000, undefined, { ref: false })])
    if (exited) return exited
    this.signal(this.child.pid, this.processGroup)
    return this.exited
  }

  /** Synchronous kill, also used by the process's exit hook. */
  killNow() {
    if (!this.alive) return
    if (this.jailInit) this.signal(this.jailInit, false)
    else this.signal(this.child.pid, this.processGroup)
  }

  private signal(pid: number | undefined, group: boolean) {
    if (!pid) return
    try {
      process.kill(group ? -pid : pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }

  /** While idle, a kernel does not keep the host's event loop alive. */
  private ref() {
    this.child.ref()
    for (const stream of this.openStreams()) stream.ref()
  }

  private unref() {
    this.child.unref()
    for (const stream of this.openStreams()) stream.unref()
  }

  /** Pipes still open: unref() on a closed socket would wait for a 'connect' that never comes. */
  private openStreams(): Array<{ ref(): void; unref(): void }> {
    return (this.child.stdio as unknown as Array<(Socket & { destroyed: boolean }) | null>).filter(
      (stream): stream is Socket & { destroyed: boolean } => stream !== null && !stream.destroyed,
    )
  }
}

/** What to do about a kernel that failed to start, from what it printed. */
export function startHint(output: string): Pick<ErrorOptions, 'hint' | 'fix'> {
  // bubblewrap's own refusals: user namespaces, /proc in a container, each with its own fix.
  const jail = jailFailureFix(output)
  if (jail) return { hint: jail, fix: { setting: 'isolation' } }
  // A memory limit (RLIMIT_AS) below what the kernel's imports take: numpy, pandas and matplotlib,
  // and a thread stack per core for OpenBLAS.
  if (/kernel failed to start: (MemoryError|RuntimeError\("can't start new thread)/.test(output)) {
    return {
      hint: 'The memory limit is too small for the sandbox Python to start: it imports numpy, pandas and matplotlib first (about 230 MiB of address space, and more for any computation). Give the sandbox 512 MiB or more.',
      fix: { setting: 'memory' },
    }
  }
  if (/No module named|ModuleNotFoundError/.test(output)) {
    const packages = [MODULE_SOURCES.pandas.package, MODULE_SOURCES.matplotlib.package]
    const otherwise = 'set ANALYST_PYTHON to a Python 3 with pandas and matplotlib'
    return {
      hint: `The sandbox Python lacks a module: ${installHint(packages, systemPackages(), otherwise)}`,
    }
  }
  return {}
}
