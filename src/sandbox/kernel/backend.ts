/**
 * What a backend does with Analyst's own kernel, wherever the kernel runs (a local jail, a Modal
 * container): cells one at a time, contexts, shell commands beside the kernel, and the one
 * restart policy (supervisor.ts). An engine adds how its kernels start and stop, its files, and
 * how it finds a cell's artifacts.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type {
  CommandProcess,
  Context,
  DoExecuteOptions,
  DoStartCommandOptions,
  DoStartTerminalOptions,
  EntryInfo,
  Language,
  SandboxBackend,
  SandboxLimits,
  TerminalProcess,
  TerminalSize,
} from '../backend.js'
import { CommandOutput, formatBytes, killedError } from '../cell-output.js'
import { NotFoundError, SandboxError, sandboxKilled } from '../errors.js'
import { answerQuestion, type RunningCell } from '../host-questions.js'
import { LANGUAGES } from '../languages.js'
import type { Artifact } from '../messaging.js'
import { SANDBOX_HOME, splitPath } from '../paths.js'
import type { QueryHost } from '../query.js'
import { runKernelCell } from './cell.js'
import type { KernelChannel } from './channel.js'
import { CellSyntaxError, toKernelScript } from './javascript.js'
import { KeptCells } from './kept-cells.js'
import { KernelSupervisor } from './supervisor.js'

/** A kernel that speaks Analyst's protocol, as the backend drives it; its end keeps what it printed last. */
export type ProtocolKernel = KernelChannel<Error & { readonly output: string }>

export interface KernelBackendSettings {
  limits: Pick<SandboxLimits, 'outputBytes' | 'resultBytes'> & Partial<Pick<SandboxLimits, 'memoryBytes'>>
  /** How long an interrupted cell may take to stop before its kernel is ended. */
  interruptGraceMs: number
  /** The host's data sources that the cells' sql() queries. */
  sources?: QueryHost
}

/** How long a stopped cell waits for its cancelled queries to say they ended. */
const QUERY_SETTLE_MS = 5000
/** Why a cell's queries still open end: one reason made once (abort() without one makes a DOMException, with its stack, at every cell). */
const CELL_ENDED = new Error('the cell ended')
/** How long one cell may take when it is run again to rebuild a kernel. */
const RERUN_TIMEOUT_MS = 300_000

/**
 * A cell's abort, its AbortController made only when a query first asks for it: most cells run
 * none, and one made and aborted at every cell took 12-20 µs of the server's ~460 per quick E2B
 * trip (Node's abort dispatches an event). Aborted before it is made, it is made aborted, with the
 * first reason, as an AbortController keeps its first.
 */
export function lazyAbort(): { readonly controller: AbortController; abort(reason?: unknown): void } {
  let made: AbortController | undefined
  let ended: { reason: unknown } | undefined
  return {
    get controller() {
      if (!made) {
        made = new AbortController()
        if (ended) made.abort(ended.reason)
      }
      return made
    },
    abort(reason?: unknown) {
      ended ??= { reason }
      made?.abort(reason)
    },
  }
}

/** A path of the files API (relative to the workspace, or absolute in it) → the absolute path in the sandbox. */
export function sandboxPath(path: string): string {
  const { area, parts } = splitPath(path)
  return [SANDBOX_HOME, ...(area === 'data' ? ['data'] : []), ...parts].join('/')
}

export abstract class KernelBackend<K extends ProtocolKernel> implements SandboxBackend {
  readonly specificationVersion = 'v1'
  /** Python here; the others in processes the kernel starts beside it (analyst_languages.py). */
  readonly languages = LANGUAGES
  abstract readonly provider: string
  abstract readonly sandboxId: string
  protected readonly supervisor: KernelSupervisor<K>
  private readonly contexts = new Map<string, Context>()
  private queue: Promise<unknown> = Promise.resolve()
  protected killed = false
  private running: RunningCell | undefined
  /** What a new kernel reruns when the last one died. */
  private readonly kept = new KeptCells()

  constructor(
    kernel: K,
    private readonly settings: KernelBackendSettings,
  ) {
    this.supervisor = new KernelSupervisor(kernel, {
      start: () => this.startKernel(),
      stop: (stale) => this.stopKernel(stale),
      describe: (stopped) => this.describeStop(stopped),
      prepare: async (fresh) => {
        this.listen(fresh)
        await this.prepareKernel(fresh)
        for (const context of this.contexts.values())
          await fresh.createContext(context.id, context.cwd, context.language)
        await this.rerun(fresh)
      },
      lost: () => this.kept.lost,
      closedError: sandboxKilled,
    })
    this.listen(kernel)
  }

  /**
   * Runs the kept cells again in a new kernel, their output unseen. One that stops the kernel
   * again ends the rebuild: nothing is kept from then on, and the next kernel starts fresh.
   */
  private async rerun(fresh: K) {
    for (const cell of this.kept.list()) {
      const outcome = await runKernelCell(
        {
          execute: (request, handler) => fresh.execute(request, handler),
          interrupt: (id) => fresh.interrupt(id),
          kill: () => this.stopKernel(fresh),
        },
        { ...cell, timeoutMs: RERUN_TIMEOUT_MS, onEvent: () => {} },
        this.settings,
      )
      if (outcome.exit !== undefined || outcome.killedByUs) {
        this.kept.forget()
        throw new SandboxError('A cell run again to rebuild the kernel stopped it too', {
          cause: outcome.exit,
        })
      }
    }
  }

  /** The kernel's questions to the host (sql(), describe_table()) reach the sources. */
  private listen(kernel: K) {
    kernel.onQuestion = (question) =>
      void answerQuestion(this.settings.sources, question, this.running, (answer) => kernel.answer(answer))
  }

  /** A new kernel for this sandbox, ready for requests. */
  protected abstract startKernel(): Promise<K>
  /** Ends a kernel now (it ignored an interrupt, or it is replaced). */
  protected abstract stopKernel(kernel: K): Promise<unknown>
  /** Why a kernel stopped, in a few words: `exit code 3`, `killed by SIGKILL`. */
  protected abstract describeStop(kernel: K): Promise<string>
  /** What the cell created or changed in the workspace, after it ran. */
  protected abstract artifacts(): Promise<Artifact[]>
  /** A new kernel in place of one that stopped, before its contexts and the rerun of the kept cells. */
  protected async prepareKernel(_fresh: K): Promise<void> {}
  /** Before each cell, with its kernel ready. */
  protected async beforeCell(): Promise<void> {}
  /** After each cell that beforeCell began, however it ended. */
  protected afterCell(): void {}
  /** Before a running cell is interrupted (a stop, a timeout): it must get to the signal at once. */
  protected beforeInterrupt(): void {}
  /** A command's working folder as the kernel sees it. */
  protected commandCwd(cwd: string | undefined): string {
    if (cwd === undefined) return SANDBOX_HOME
    return cwd.startsWith('/') ? cwd : sandboxPath(cwd)
  }
  /** Turns a failure to start a new kernel into the error the caller sees. */
  protected restartFailed(cause: unknown): Error {
    return new SandboxError('The kernel could not be restarted', { cause })
  }

  protected assertAlive() {
    if (this.killed) throw sandboxKilled()
  }

  /** The kernel, restarted first if it stopped; refused once the sandbox is killed. */
  protected async kernel(): Promise<K> {
    this.assertAlive()
    try {
      return await this.supervisor.ready()
    } catch (cause) {
      if (this.killed) throw sandboxKilled()
      throw this.restartFailed(cause)
    }
  }

  doExecute(options: DoExecuteOptions): Promise<void> {
    // One cell at a time, in the order they were asked for, as a Jupyter kernel does.
    const run = this.queue.then(() => this.runCell(options))
    this.queue = run.catch(() => {})
    return run
  }

  private checkContext(contextId: string | undefined) {
    if (contextId !== undefined && contextId !== 'default' && !this.contexts.has(contextId)) {
      throw new NotFoundError(`No context ${contextId} in this sandbox`, {
        hint: 'Create one with createContext().',
      })
    }
  }

  /** The sandbox's default context of a language other than Python, made at its first cell. */
  private async defaultContext(language: Language): Promise<string> {
    const id = `default-${language}`
    if (!this.contexts.has(id)) await this.makeContext({ id, language, cwd: SANDBOX_HOME })
    return id
  }

  private async runCell(given: DoExecuteOptions) {
    this.assertAlive()
    given.signal?.throwIfAborted()
    this.checkContext(given.contextId)
    const onEvent = this.namingMemoryLimit(given.onEvent)
    const options = {
      ...given,
      onEvent,
      contextId:
        given.contextId === undefined && given.language && given.language !== 'python'
          ? await this.defaultContext(given.language)
          : given.contextId,
    }
    const kernel = await this.kernel()
    const language = this.contexts.get(options.contextId ?? 'default')?.language ?? 'python'
    if (language === 'javascript' || language === 'typescript') {
      try {
        options.code = toKernelScript(options.code, language)
      } catch (error) {
        if (!(error instanceof CellSyntaxError)) throw error
        onEvent({
          type: 'error',
          name: error.name,
          value: error.message,
          traceback: `SyntaxError: ${error.message}`,
        })
        return onEvent({ type: 'finish' })
      }
    }
    const notice = this.supervisor.takeNotice() ?? this.takeDeathNotice() ?? this.takeMemoryNotice()
    if (notice) onEvent({ type: 'stderr', text: notice })
    await this.beforeCell()
    this.supervisor.running()
    const seconds = options.timeoutMs / 1000
    const abort = lazyAbort()
    const cell: RunningCell = {
      get controller() {
        return abort.controller
      },
      deadline: Date.now() + options.timeoutMs,
      onEvent,
      queries: new Map(),
      answering: new Set(),
    }
    this.running = cell
    let failed = false
    const outcome = await runKernelCell(
      {
        execute: (request, handler) => kernel.execute(request, handler),
        interrupt: (id) => {
          // A stopped cell's queries are cancelled on their servers, not left to run on.
          abort.abort()
          this.beforeInterrupt()
          kernel.interrupt(id)
        },
        kill: () => this.stopKernel(kernel),
      },
      {
        ...options,
        onEvent: (event) => {
          if (event.type === 'error') failed = true
          onEvent(event)
        },
      },
      this.settings,
    ).finally(() => {
      abort.abort(CELL_ENDED)
      this.running = undefined
      this.afterCell()
    })
    // The records of queries that a stop cancelled, before the cell's end (bounded: a server
    // that does not answer its cancel must not hold the cell).
    if (cell.answering.size > 0) {
      await Promise.race([
        Promise.allSettled(cell.answering),
        sleep(QUERY_SETTLE_MS, undefined, { ref: false }),
      ])
    }
    const { count, stopped, killedByUs, exit } = outcome
    if (exit === undefined && !failed && !stopped) {
      this.kept.add({ contextId: options.contextId, code: options.code, envs: options.envs })
    }
    if (exit !== undefined) {
      // The kernel's end is the cell's error; anything else is not the code's doing.
      if (kernel.alive) throw exit
      if (this.killed) throw new SandboxError('The sandbox was killed while the cell ran')
      const why = killedByUs ? undefined : await this.describeStop(kernel)
      const error = why
        ? {
            name: 'KernelDied',
            value: `The Python kernel died while running this cell (${why}). ${this.kept.lost}`,
            traceback: lastLines((await kernel.whenExited()).output),
          }
        : killedError(stopped, seconds, this.kept.lost)
      // The next cell, in the new kernel, says what happened too (a caller may read only that one).
      this.diedIn = why
      onEvent({ type: 'error', ...error })
      void this.supervisor.restart()
    }
    for (const artifact of await this.artifacts()) onEvent({ type: 'artifact', artifact })
    onEvent({ type: 'finish', executionCount: count ?? undefined })
    if (stopped === 'abort') throw options.signal?.reason ?? new Error('aborted')
  }

  /**
   * A MemoryError says which limit the cell went over, and the next cell that the kernel went on
   * (Python survived it: its variables are kept).
   */
  private namingMemoryLimit(onEvent: DoExecuteOptions['onEvent']): DoExecuteOptions['onEvent'] {
    const limit = this.settings.limits.memoryBytes
    if (!limit) return onEvent
    return (event) => {
      if (event.type !== 'error' || event.name !== 'MemoryError') return onEvent(event)
      const said = event.value.trim()
      const value = `${said ? `${said}: ` : ''}the cell needed more memory than this sandbox may use (its memory limit, ${formatBytes(limit)})`
      this.memoryNotice = `[The last cell ran out of memory (the sandbox's limit is ${formatBytes(limit)}); the kernel went on with its variables.]\n`
      onEvent({ ...event, value })
    }
  }

  private memoryNotice: string | undefined

  /** Why the kernel died during the last cell, until the next cell (in a new kernel) has said it. */
  private diedIn: string | undefined

  private takeDeathNotice(): string | undefined {
    const why = this.diedIn
    this.diedIn = undefined
    // Said once the new kernel has replayed (or failed to): what `lost` says now is what happened.
    return why
      ? `[The kernel died in the last cell (${why}); this cell runs in a new one. ${this.kept.lost}]\n`
      : undefined
  }

  private takeMemoryNotice(): string | undefined {
    const notice = this.memoryNotice
    this.memoryNotice = undefined
    return notice
  }

  async doCreateContext(options: { cwd?: string; language?: Language }): Promise<Context> {
    return this.makeContext({
      id: randomBytes(6).toString('hex'),
      language: options.language ?? 'python',
      cwd: sandboxPath(options.cwd ?? SANDBOX_HOME),
    })
  }

  private async makeContext(context: Context): Promise<Context> {
    const kernel = await this.kernel()
    await kernel.createContext(context.id, context.cwd, context.language)
    this.contexts.set(context.id, context)
    return context
  }

  async doRestartContext(contextId: string): Promise<void> {
    this.assertAlive()
    const context = contextId === 'default' ? undefined : this.contexts.get(contextId)
    if (contextId !== 'default' && !context)
      throw new NotFoundError(`No context ${contextId} in this sandbox`)
    // A fresh namespace under the same id (another language's: a new process): the kernel replaces it.
    await (await this.kernel()).createContext(contextId, context?.cwd, context?.language)
    this.kept.dropContext(contextId)
  }

  async doRemoveContext(contextId: string): Promise<void> {
    this.assertAlive()
    if (!this.contexts.delete(contextId)) throw new NotFoundError(`No context ${contextId} in this sandbox`)
    if (this.supervisor.current.alive) this.supervisor.current.removeContext(contextId)
    this.kept.dropContext(contextId)
  }

  /** A shell command started by the kernel, so it runs in the kernel's isolation, limits and workspace. */
  async doStartCommand(options: DoStartCommandOptions): Promise<CommandProcess> {
    return this.spawnInKernel(options, { stdin: options.stdin })
  }

  /**
   * A command in a pseudo-terminal that the kernel makes (analyst_commands.py), for an engine whose
   * sandbox has one (/dev/pts): the engine offers it as its doStartTerminal.
   */
  protected async startTerminalInKernel(options: DoStartTerminalOptions): Promise<TerminalProcess> {
    const { size } = options
    const started = await this.spawnInKernel(options, { stdin: true, pty: terminalSize(size) })
    const kernel = await this.kernel()
    return {
      ...started,
      resize: async (size) => kernel.control({ type: 'proc-resize', id: started.id, ...terminalSize(size) }),
    }
  }

  private async spawnInKernel(
    options: Omit<DoStartCommandOptions, 'stdin'>,
    spawn: { stdin: boolean; pty?: TerminalSize },
  ): Promise<CommandProcess & { id: string }> {
    const kernel = await this.kernel()
    const id = randomBytes(8).toString('hex')
    const output = new CommandOutput(options.onEvent, this.settings.limits.outputBytes)
    const pid = await kernel.spawn(
      {
        type: 'spawn',
        id,
        cmd: options.cmd,
        cwd: this.commandCwd(options.cwd),
        envs: options.envs,
        ...spawn,
      },
      (message) => {
        if (message.type === 'proc-exit') {
          return options.onEvent({ type: 'exit', exitCode: message.code, error: message.error })
        }
        if (message.type === 'proc-out') output.output(message.stream, Buffer.from(message.data, 'base64'))
      },
    )
    return {
      id,
      pid,
      sendStdin: async (data) =>
        kernel.control({ type: 'proc-stdin', id, data: Buffer.from(data).toString('base64') }),
      closeStdin: async () => kernel.control({ type: 'proc-close-stdin', id }),
      kill: async (signal = 'SIGKILL') => kernel.control({ type: 'proc-signal', id, signal }),
    }
  }

  abstract doWriteFile(path: string, data: Uint8Array): Promise<EntryInfo>
  abstract doReadFile(path: string): Promise<Uint8Array>
  abstract doList(path: string): Promise<EntryInfo[]>
  abstract doStat(path: string): Promise<EntryInfo | undefined>
  abstract doRemove(path: string): Promise<void>
  abstract doAddData(hostPath: string, name: string): Promise<EntryInfo>

  /**
   * Marks the sandbox killed (every later call is refused) and stops restarting its kernel.
   * Returns the kernel to end; the engine ends it and frees what it holds.
   */
  protected async closeKernel(): Promise<K | undefined> {
    if (this.killed) return undefined
    this.killed = true
    return this.supervisor.close()
  }

  abstract doKill(): Promise<void>
}

/** A size the kernel can set (whole characters, 1 to 65535 each way). */
function terminalSize(size: TerminalSize): TerminalSize {
  const clamp = (value: number) => Math.min(65_535, Math.max(1, Math.floor(Number(value) || 0)))
  return { cols: clamp(size.cols), rows: clamp(size.rows) }
}

/** The end of what a kernel printed before it stopped: its last words, for the traceback. */
function lastLines(output: string): string {
  return output.trim().split('\n').slice(-20).join('\n')
}
