/**
 * `sandbox.commands`: shell commands in the sandbox, in the shapes of E2B's SDK (`run`, `list`,
 * `kill`, `sendStdin`, `closeStdin`, `connect`; `CommandHandle`, `CommandResult`,
 * `CommandExitError`). Each command is `/bin/bash -l -c CMD` in the same isolation as the kernel.
 * @module
 */
import type {
  CommandEvent,
  CommandProcess,
  SandboxBackend,
  TerminalProcess,
  TerminalSize,
} from './backend.js'
import { InvalidArgumentError, NotFoundError, SandboxError, SandboxUnavailableError } from './errors.js'

/** What a finished command gave. */
export interface CommandResult {
  exitCode: number
  /** Why it ended, when it did not exit by itself (e.g. `signal: kill`). */
  error?: string
  stdout: string
  stderr: string
}

/** A command that exited with a code other than 0: thrown by `run` and `wait()`, as in E2B. */
export class CommandExitError extends SandboxError implements CommandResult {
  static override readonly errorName: string = 'CommandExitError'
  constructor(readonly result: CommandResult) {
    super(result.error ?? `The command exited with code ${result.exitCode}`, {
      hint: result.stderr.trim().split('\n').slice(-3).join('\n') || undefined,
    })
  }
  get exitCode() {
    return this.result.exitCode
  }
  get error() {
    return this.result.error
  }
  get stdout() {
    return this.result.stdout
  }
  get stderr() {
    return this.result.stderr
  }
}

/** A command that ran past its `timeoutMs`: it was killed. */
export class CommandTimeoutError extends SandboxError {
  static override readonly errorName: string = 'CommandTimeoutError'
  constructor(
    readonly timeoutMs: number,
    readonly result: CommandResult,
  ) {
    super(`The command ran longer than its ${timeoutMs / 1000} s timeout and was killed`, {
      hint: 'Pass a larger timeoutMs (0 for none), or run it with background: true.',
    })
  }
}

export interface ProcessInfo {
  pid: number
  tag?: string
  cmd: string
  args: string[]
  envs: Record<string, string>
  cwd?: string
  /** Its terminal's size, for a command run in a pseudo-terminal. */
  pty?: TerminalSize
}

export interface CommandStartOpts {
  /** Return a handle at once instead of waiting for the command to end. @default false */
  background?: boolean
  /** @default the workspace, /home/user */
  cwd?: string
  envs?: Record<string, string>
  /** Each chunk of stdout, decoded as UTF-8, while it runs. */
  onStdout?: (data: string) => unknown
  onStderr?: (data: string) => unknown
  /** Keep stdin open for `sendStdin`. @default false */
  stdin?: boolean
  /**
   * Run it in a pseudo-terminal of this size (E2B's `sandbox.pty`): the terminal is its stdin,
   * stdout and stderr, so all it prints (the echo of what is typed too) comes as stdout, and
   * `sendStdin` types at it. `resize` changes the size. Needs `capabilities.terminals`.
   */
  pty?: TerminalSize
  /** Kill the command after this long; 0 for no limit. @default 60_000 */
  timeoutMs?: number
  /** Only 'user' exists in an Analyst sandbox; accepted for code written for E2B. */
  user?: string
}

export type CommandConnectOpts = Pick<CommandStartOpts, 'onStdout' | 'onStderr' | 'timeoutMs'>

const DEFAULT_COMMAND_TIMEOUT_MS = 60_000

/** One running command as the library tracks it: its output so far, its listeners, its end. */
class Running {
  stdout = ''
  stderr = ''
  result: CommandResult | undefined
  readonly listeners = new Set<(stream: 'stdout' | 'stderr', text: string) => void>()
  readonly exited: Promise<CommandResult>
  /** Set once the backend has started it. */
  process: CommandProcess | TerminalProcess | undefined
  private resolveExit!: (result: CommandResult) => void
  private readonly decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() }

  constructor(readonly info: Omit<ProcessInfo, 'pid'>) {
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve
    })
  }

  onEvent = (event: CommandEvent) => {
    if (event.type === 'exit') {
      for (const stream of ['stdout', 'stderr'] as const) this.emit(stream, this.decoders[stream].decode())
      this.result = { exitCode: event.exitCode, error: event.error, stdout: this.stdout, stderr: this.stderr }
      this.resolveExit(this.result)
      return
    }
    this.emit(event.type, this.decoders[event.type].decode(event.data, { stream: true }))
  }

  private emit(stream: 'stdout' | 'stderr', text: string) {
    if (!text) return
    this[stream] += text
    for (const listener of this.listeners) listener(stream, text)
  }
}

/** A command started with `background: true`, or joined with `connect`. */
export class CommandHandle {
  private killedByTimeout = false
  private readonly done: Promise<CommandResult>
  private readonly callbackErrors: unknown[] = []
  private readonly listener: (stream: 'stdout' | 'stderr', text: string) => void
  private readonly timer: NodeJS.Timeout | undefined

  constructor(
    private readonly running: Running,
    options: CommandConnectOpts,
  ) {
    const listener = (stream: 'stdout' | 'stderr', text: string) => {
      const callback = stream === 'stdout' ? options.onStdout : options.onStderr
      if (!callback) return
      try {
        const returned = callback(text)
        if (returned instanceof Promise) returned.catch((error) => this.callbackErrors.push(error))
      } catch (error) {
        this.callbackErrors.push(error)
      }
    }
    this.listener = listener
    running.listeners.add(listener)
    const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            this.killedByTimeout = true
            void running.process?.kill('SIGKILL').catch(() => {})
          }, timeoutMs)
        : undefined
    timer?.unref()
    this.timer = timer
    this.done = running.exited.then((result) => {
      clearTimeout(timer)
      running.listeners.delete(listener)
      if (this.killedByTimeout) throw new CommandTimeoutError(timeoutMs, result)
      return result
    })
    this.done.catch(() => {}) // reported by wait()
  }

  get pid(): number {
    return this.running.process?.pid ?? 0
  }
  get stdout(): string {
    return this.running.stdout
  }
  get stderr(): string {
    return this.running.stderr
  }
  /** The exit code, once it has exited. */
  get exitCode(): number | undefined {
    return this.running.result?.exitCode
  }
  get error(): string | undefined {
    return this.running.result?.error
  }

  /** Waits for the end; throws `CommandExitError` for a code other than 0. */
  async wait(): Promise<CommandResult> {
    const result = await this.done
    if (this.callbackErrors.length > 0) throw this.callbackErrors[0]
    if (result.exitCode !== 0) throw new CommandExitError(result)
    return result
  }

  /** Kills it (and what it started). Returns false when it had already exited. */
  async kill(): Promise<boolean> {
    if (this.running.result || !this.running.process) return false
    await this.running.process.kill('SIGKILL')
    return true
  }

  async sendStdin(data: string | Uint8Array): Promise<void> {
    await this.running.process?.sendStdin(toBytes(data))
  }

  async closeStdin(): Promise<void> {
    await this.running.process?.closeStdin()
  }

  /** Stops listening; the command goes on. */
  async disconnect(): Promise<void> {
    clearTimeout(this.timer)
    this.running.listeners.delete(this.listener)
  }
}

function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? new TextEncoder().encode(data) : data
}

export class Commands {
  private readonly running = new Map<number, Running>()

  constructor(private readonly backend: SandboxBackend) {}

  /** Runs a command and waits for it; throws `CommandExitError` when it exits with a code other than 0. */
  run(cmd: string, options?: CommandStartOpts & { background?: false }): Promise<CommandResult>
  /** Starts a command and returns at once. */
  run(cmd: string, options: CommandStartOpts & { background: true }): Promise<CommandHandle>
  run(cmd: string, options?: CommandStartOpts): Promise<CommandResult | CommandHandle>
  async run(cmd: string, options: CommandStartOpts = {}): Promise<CommandResult | CommandHandle> {
    const handle = await this.start(cmd, options)
    return options.background ? handle : handle.wait()
  }

  private async start(cmd: string, options: CommandStartOpts): Promise<CommandHandle> {
    if (typeof cmd !== 'string' || cmd.trim() === '')
      throw new InvalidArgumentError('cmd must be a command line')
    if (options.user !== undefined && options.user !== 'user') {
      throw new InvalidArgumentError(`Commands run as 'user' in this sandbox, not ${options.user}`, {
        hint: 'Leave out the user option: there is no root inside an Analyst sandbox.',
      })
    }
    const startCommand = options.pty
      ? this.terminalStarter(options.pty)
      : this.backend.doStartCommand?.bind(this.backend)
    if (!startCommand) {
      throw new SandboxUnavailableError(`The ${this.backend.provider} sandbox cannot run shell commands`, {
        hint: 'Use runCode (e.g. subprocess.run), or a provider with commands such as local or e2b.',
      })
    }
    const running = new Running({
      cmd: '/bin/bash',
      args: ['-l', '-c', cmd],
      envs: options.envs ?? {},
      cwd: options.cwd,
      ...(options.pty ? { pty: options.pty } : {}),
    })
    // The handle listens before the command starts, so not a byte of its output is missed.
    const handle = new CommandHandle(running, options)
    try {
      running.process = await startCommand({
        cmd,
        cwd: options.cwd,
        envs: options.envs,
        stdin: options.stdin ?? false,
        onEvent: running.onEvent,
      })
    } catch (error) {
      await handle.disconnect()
      throw error
    }
    const pid = running.process.pid
    this.running.set(pid, running)
    void running.exited.then(() => this.running.delete(pid))
    return handle
  }

  /** How to start a command in a terminal of `size`; refused where the engine has none. */
  private terminalStarter(size: TerminalSize) {
    const startTerminal = this.backend.doStartTerminal?.bind(this.backend)
    if (!startTerminal) {
      throw new SandboxUnavailableError(`The ${this.backend.provider} sandbox has no pseudo-terminals`, {
        hint: 'Run the command without pty, or use an engine with terminals (local).',
      })
    }
    return (options: Parameters<NonNullable<SandboxBackend['doStartCommand']>>[0]) =>
      startTerminal({ ...options, size })
  }

  /** Resizes the terminal of a command run with `pty`. */
  async resize(pid: number, size: TerminalSize): Promise<void> {
    const running = this.find(pid)
    const process = running.process
    if (!running.info.pty || !process || !('resize' in process))
      throw new InvalidArgumentError(`The command with pid ${pid} has no terminal to resize`)
    await process.resize(size)
    running.info.pty = size
  }

  /** The commands still running that this sandbox object started. */
  async list(): Promise<ProcessInfo[]> {
    return [...this.running].map(([pid, running]) => ({ pid, ...running.info }))
  }

  /** Kills a command by pid; false when there is none. */
  async kill(pid: number): Promise<boolean> {
    const running = this.running.get(pid)
    if (!running) return false
    await running.process?.kill('SIGKILL')
    return true
  }

  async sendStdin(pid: number, data: string | Uint8Array): Promise<void> {
    await this.find(pid).process?.sendStdin(toBytes(data))
  }

  async closeStdin(pid: number): Promise<void> {
    await this.find(pid).process?.closeStdin()
  }

  /** Follows a running command's output from now on. */
  async connect(pid: number, options: CommandConnectOpts = {}): Promise<CommandHandle> {
    return new CommandHandle(this.find(pid), options)
  }

  private find(pid: number): Running {
    const running = this.running.get(pid)
    if (!running) throw new NotFoundError(`No running command with pid ${pid}`)
    return running
  }
}
