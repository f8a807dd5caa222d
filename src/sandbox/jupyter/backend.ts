/**
 * The Jupyter engine: each sandbox is a kernel on a Jupyter server (Jupyter Server, a JupyterHub
 * user's server, Enterprise Gateway), in a workspace folder of its own; each extra context is one
 * more kernel in the same folder. Analyst keeps its own guarantees where the protocol lets it
 * (results, caps, timeouts that interrupt, artifacts, teardown of kernels); isolation, network and
 * resource limits are the server's (see `capabilities`).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { open } from 'node:fs/promises'
import { basename } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import mime from 'mime-types'
import type {
  CommandEvent,
  CommandProcess,
  Context,
  DoExecuteOptions,
  DoStartCommandOptions,
  EntryInfo,
  SandboxBackend,
  SandboxCapabilities,
  SandboxCreateOptions,
  SandboxProvider,
} from '../backend.js'
import { assertSupported, missingCapabilities } from '../capabilities.js'
import { CellOutput, CommandOutput, killedError, STATE_LOST, timeoutError } from '../cell-output.js'
import { CommandMessage } from '../command-messages.js'
import { addCreateData } from '../create-data.js'
import {
  InvalidArgumentError,
  NotFoundError,
  SandboxError,
  SandboxUnavailableError,
  sandboxKilled,
} from '../errors.js'
import type { RunningCell } from '../host-questions.js'
import { KernelSupervisor } from '../kernel/supervisor.js'
import { SANDBOX_HOME, splitPath } from '../paths.js'
import type { QueryHost } from '../query.js'
import { type ExecuteReply, KernelChannel, KernelLost, type KernelMessage } from './channel.js'
import {
  ContentsFiles,
  type FileEntry,
  KernelFiles,
  kernelAnswer,
  pythonLiteral,
  type WorkspaceFiles,
} from './files.js'
import { type JupyterKernel, JupyterKernels, whyStopped } from './kernels.js'
import { defaultRecordDir, KernelRecords } from './leftovers.js'
import { CELL_END_MIME, COMMANDS_COMM, cellEndFrom, cellEnvsCode, MODULE, preludeCode } from './prelude.js'
import { CellQuestions } from './questions.js'
import {
  checkKernelEnv,
  connect,
  deleteKernel,
  getKernel,
  interruptKernel,
  type JupyterSettings,
  type ServerInfo,
} from './server.js'

export interface JupyterProviderOptions extends JupyterSettings {
  /** How long an interrupted cell may take to stop before its kernel is restarted. @default 3000 */
  interruptGraceMs?: number
  /** Where started kernels are recorded, to shut down those of a crashed run. @default ANALYST_HOME/jupyter-kernels */
  recordDir?: string
}

/** What Analyst enforces on a Jupyter engine: the output caps. The rest is the server's. */
export const JUPYTER_CAPABILITIES: SandboxCapabilities = {
  networkIsolation: false,
  hostIsolation: false,
  readOnlyData: false,
  limits: ['outputBytes', 'resultBytes'],
  fullTeardown: false,
  homeWorkspace: false,
  abortInterrupts: true,
  filesDuringCells: true,
  hostQueries: true,
  terminals: false,
  rebuildsKernelState: false,
  // On Enterprise Gateway a template is the kernel's image (KERNEL_IMAGE), by name; a plain
  // Jupyter Server's kernels are its own, and it refuses one (doCreate, once it knows which it is).
  templates: 'named',
}

/** On a server without a Contents API (Enterprise Gateway), files and commands go through the busy kernel. */
export const JUPYTER_GATEWAY_CAPABILITIES: SandboxCapabilities = {
  ...JUPYTER_CAPABILITIES,
  filesDuringCells: false,
}

/** A command started through the main kernel, until its exit. */
interface RunningCommand {
  pid: number
  onEvent: (event: CommandEvent) => void
  output: CommandOutput
}

const DEFAULT_OUTPUT_BYTES = 10 * 1024 * 1024

/** ANSI colour codes in tracebacks (the prelude turns colours off; a restarted kernel before it may not). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: escape codes are what it removes
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

function tracebackText(lines: unknown): string {
  return Array.isArray(lines) ? lines.map(String).join('\n').replace(ANSI, '').trimEnd() : ''
}

/** How long a cell may be silent before the server is asked whether its kernel still runs it. */
const WATCHDOG_MS = 2000

/** How long a new kernel may take to answer its first request (the prelude). */
const PRELUDE_TIMEOUT_MS = 60_000

const RATE_LIMIT = /^IOPub (data|message) rate exceeded/

/** The kernel of one context (the default or another), kept by the one restart supervisor. */
type ContextKernel = KernelSupervisor<JupyterKernel>

class JupyterSandbox implements SandboxBackend {
  readonly specificationVersion = 'v1'
  readonly provider = 'jupyter'
  private readonly main: ContextKernel
  private readonly contexts = new Map<string, ContextKernel>()
  private queue: Promise<unknown> = Promise.resolve()
  private killed = false
  /** Every file of the workspace as last reported by any kernel: `size:mtime_ns:inode`. */
  private readonly known = new Map<string, string>()
  /** Files written through the files API since the last cell, with their size: not artifacts. */
  private readonly written = new Map<string, number>()
  private readonly outputLimits: { outputBytes: number; resultBytes: number }
  /** Commands started through the main kernel that have not exited, by request id. */
  private readonly commands = new Map<string, RunningCommand>()
  /** Commands whose kernel restarted (they may run on, unheard): killed by the next prelude or kill(). */
  private orphans: number[] = []

  constructor(
    readonly sandboxId: string,
    private readonly server: ServerInfo,
    private readonly settings: JupyterProviderOptions,
    private readonly kernels: JupyterKernels,
    main: JupyterKernel,
    private files: WorkspaceFiles,
    private readonly envs: Record<string, string>,
    limits: SandboxCreateOptions['limits'],
    private readonly sources?: QueryHost,
  ) {
    const outputBytes = limits?.outputBytes ?? DEFAULT_OUTPUT_BYTES
    this.outputLimits = { outputBytes, resultBytes: limits?.resultBytes ?? 8 * outputBytes }
    this.main = this.supervise(main.cwd, main, true)
  }

  /** The workspace folder, relative to the kernel's start directory (the server's root). */
  get workspace(): string {
    return `analyst-${this.sandboxId}`
  }

  private get http() {
    return this.server.http
  }

  /**
   * The restart supervisor of one context's kernel (its first one, or none yet: it starts with
   * the first request). This engine only provisions: starts a kernel and runs the prelude in it,
   * reaches it again when only its socket dropped, restarts it through the server, deletes it.
   */
  private supervise(cwd: string, first: JupyterKernel | undefined, main: boolean): ContextKernel {
    return new KernelSupervisor(first, {
      start: () => this.kernels.start(cwd),
      reconnect: async (kernel) => {
        // Whatever a command sent while no socket listened is lost: it is ended (and killed) here.
        if (main && kernel.stopped === undefined) this.loseCommands('the connection to its kernel dropped')
        return this.kernels.reconnect(kernel)
      },
      restartInPlace: (kernel) => this.kernels.restart(kernel),
      stop: (kernel) => this.kernels.stop(kernel),
      describe: async (kernel) => kernel.stopped ?? 'it stopped',
      prepare: (kernel) => this.prepare(kernel, main),
      lost: STATE_LOST,
      closedError: sandboxKilled,
    })
  }

  /** Sets the sandbox's first kernel up, before the sandbox is handed out. */
  open(): Promise<void> {
    return this.prepare(this.main.current, true)
  }

  /**
   * Runs the prelude in a kernel (new, or restarted: its state is gone). The main kernel's
   * channel also carries its commands' output; they end when it stops.
   */
  private async prepare(kernel: JupyterKernel, main: boolean) {
    if (main) {
      kernel.onStop = (why) => this.loseCommands(`its kernel stopped (${why})`)
      kernel.onComm = (commId, data) => this.onCommand(commId, data)
    }
    const orphans = main ? this.orphans.splice(0) : []
    // Bounded: a kernel that never answers its first request is an error, not a hang.
    const silence = setTimeout(() => kernel.channel.close(), PRELUDE_TIMEOUT_MS)
    let reply: ExecuteReply
    try {
      reply = await kernel.channel.execute({
        code: preludeCode({ workspace: this.workspace, cwd: kernel.cwd, envs: this.envs, orphans }),
        silent: true,
      })
    } catch (error) {
      this.orphans.push(...orphans)
      if (!(error instanceof KernelLost)) throw error
      throw new SandboxUnavailableError(
        `The Jupyter kernel stopped while it was being set up for Analyst (${whyStopped(error.state)})`,
        { hint: "The Jupyter server's log says why its kernels stop." },
      )
    } finally {
      clearTimeout(silence)
    }
    if (reply.status !== 'ok') {
      throw new SandboxUnavailableError(
        `The Jupyter kernel could not be set up for Analyst: ${reply.ename}: ${reply.evalue}`,
        {
          hint: 'Analyst needs an IPython kernel (ipykernel 6 or newer) for Python 3.',
          fix: { setting: 'jupyterKernel' },
        },
      )
    }
  }

  doExecute(options: DoExecuteOptions): Promise<void> {
    return this.enqueue(() => this.runCell(options))
  }

  /** One cell (or restart, or removal) at a time across the sandbox's kernels, as the local engine does. */
  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task)
    this.queue = run.catch(() => {})
    return run
  }

  private supervisorOf(contextId: string | undefined): ContextKernel {
    if (contextId === undefined || contextId === 'default') return this.main
    const supervisor = this.contexts.get(contextId)
    if (!supervisor)
      throw new NotFoundError(`No context ${contextId} in this sandbox`, {
        hint: 'Create one with createContext().',
      })
    return supervisor
  }

  /** The context's kernel, ready for a request: the supervisor replaces one that stopped. */
  private async ready(supervisor: ContextKernel): Promise<JupyterKernel> {
    this.assertAlive()
    let kernel: JupyterKernel
    try {
      kernel = await supervisor.ready()
    } catch (error) {
      if (this.killed) throw sandboxKilled()
      throw error
    }
    if (supervisor === this.main && this.orphans.length > 0) {
      const orphans = this.orphans.splice(0)
      await kernel.channel.execute({
        code: '',
        silent: true,
        userExpressions: { result: `${MODULE}.end_processes(${JSON.stringify(orphans)})` },
      })
    }
    return kernel
  }

  private async runCell(options: DoExecuteOptions) {
    this.assertAlive()
    options.signal?.throwIfAborted()
    const supervisor = this.supervisorOf(options.contextId)
    const kernel = await this.ready(supervisor)
    const { onEvent } = options
    const notice = supervisor.takeNotice()
    if (notice) onEvent({ type: 'stderr', text: notice })
    supervisor.running()
    const output = new CellOutput(onEvent, this.outputLimits)
    const seconds = options.timeoutMs / 1000
    let stopped: 'timeout' | 'abort' | undefined
    let sawError = false
    let cellEnd: ReturnType<typeof cellEndFrom>
    let graceTimer: NodeJS.Timeout | undefined
    let restartedByUs: Promise<unknown> | undefined
    let giveUp: ((why: 'restarted' | KernelLost) => void) | undefined
    const abandoned = new Promise<'restarted' | KernelLost>((resolve) => {
      giveUp = resolve
    })
    const watchdog = this.watchdog(kernel, (lost) => giveUp?.(lost))
    const stop = (reason: 'timeout' | 'abort') => {
      if (stopped) return
      stopped = reason
      running.controller.abort() // its queries are cancelled on their servers
      interruptKernel(this.http, kernel.id).catch(() => {})
      graceTimer = setTimeout(() => {
        // The cell ignores the interrupt: its kernel is restarted (state lost), as the local engine kills it.
        // Given up first: the restart closes the socket the cell waits on.
        giveUp?.('restarted')
        restartedByUs = supervisor.restart().catch(() => {}) // a failure is the next request's
      }, this.settings.interruptGraceMs ?? 3000)
    }
    const running: RunningCell = {
      controller: new AbortController(),
      deadline: Date.now() + options.timeoutMs,
      onEvent,
      queries: new Map(),
      answering: new Set(),
    }
    const questions = new CellQuestions(this.sources, running)
    kernel.channel.onInputRequest = (prompt, reply) => questions.answer(prompt, reply)
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs)
    const onAbort = () => stop('abort')
    options.signal?.addEventListener('abort', onAbort, { once: true })
    const onMessage = (message: KernelMessage) => {
      watchdog.heard()
      const { content } = message
      switch (message.header.msg_type) {
        case 'stream': {
          const text = String(content.text ?? '')
          if (content.name === 'stderr' && RATE_LIMIT.test(text)) {
            return output.droppedByEngine(
              'the Jupyter server dropped output over its IOPub rate limit (ServerApp.iopub_data_rate_limit, iopub_msg_rate_limit); print less, or write big output to a file',
            )
          }
          return output.output(content.name === 'stderr' ? 'stderr' : 'stdout', text)
        }
        case 'execute_result':
          return output.result((content.data ?? {}) as Record<string, unknown>, true)
        case 'display_data':
        case 'update_display_data': {
          const data = (content.data ?? {}) as Record<string, unknown>
          if (CELL_END_MIME in data) {
            cellEnd = cellEndFrom(data[CELL_END_MIME])
            return
          }
          return output.result(data, false)
        }
        case 'error':
          sawError = true
          if (stopped === 'timeout' && content.ename === 'KeyboardInterrupt') {
            return onEvent(timeoutError(seconds, tracebackText(content.traceback)))
          }
          return onEvent({
            type: 'error',
            name: String(content.ename ?? 'Error'),
            value: String(content.evalue ?? ''),
            traceback: tracebackText(content.traceback),
          })
      }
    }
    let reply: ExecuteReply | undefined
    try {
      const envs = options.envs && Object.keys(options.envs).length > 0 ? options.envs : undefined
      // Sent together: the kernel runs them in order, with no round trip in between.
      const setEnvs = envs && kernel.channel.execute({ code: cellEnvsCode(envs), silent: true })
      const cell = kernel.channel.execute({ code: options.code }, onMessage)
      setEnvs?.catch(() => {})
      const settled = await Promise.race([cell, abandoned])
      if (settled instanceof KernelLost) {
        cell.catch(() => {})
        throw settled
      }
      if (settled === 'restarted') {
        cell.catch(() => {})
        await restartedByUs
        onEvent({ type: 'error', ...killedError(stopped, seconds) })
      } else {
        reply = settled
        if (stopped === 'timeout' && !sawError) onEvent(timeoutError(seconds))
      }
    } catch (error) {
      if (this.killed) throw new SandboxError('The sandbox was killed while the cell ran')
      if (!(error instanceof KernelLost)) throw error
      kernel.stop(whyStopped(error.state))
      onEvent({
        type: 'error',
        name: 'KernelDied',
        value: `The Python kernel died while running this cell; the next cell runs in a new one. ${STATE_LOST}`,
        traceback: '',
      })
      void supervisor.restart()
    } finally {
      running.controller.abort()
      await Promise.race([Promise.allSettled(running.answering), sleep(5000)])
      watchdog.stop()
      clearTimeout(timer)
      clearTimeout(graceTimer)
      options.signal?.removeEventListener('abort', onAbort)
    }
    if (cellEnd) for (const artifact of this.artifacts(cellEnd)) onEvent({ type: 'artifact', artifact })
    onEvent({ type: 'finish', executionCount: reply?.execution_count })
    if (stopped === 'abort') throw options.signal?.reason ?? new Error('aborted')
  }

  /**
   * Asks the server, while a cell is quiet, whether its kernel still runs it. A kernel can die and
   * be restarted on new ports without the socket hearing of it, or be deleted by someone else; the
   * server then reports it idle or starting (or dead, or gone) while the cell waits for a reply
   * that will never come.
   */
  private watchdog(kernel: JupyterKernel, lost: (error: KernelLost) => void) {
    let last = Date.now()
    let idleChecks = 0
    const timer = setInterval(async () => {
      if (Date.now() - last < WATCHDOG_MS) return
      const model = await getKernel(this.http, kernel.id).catch(() => null)
      if (model === null) return // the socket tells of a server that went away
      const state = model?.execution_state ?? 'gone'
      // A kernel that runs the cell is busy. After a restart whose notice did not reach the socket,
      // the server says 'starting' until the new kernel's first request, which never comes.
      idleChecks = state === 'busy' ? 0 : idleChecks + 1
      if (state === 'dead' || state === 'gone' || idleChecks >= 2) {
        // Told before the socket closes: the cell ends as lost, not as a dropped connection.
        const error = new KernelLost(state === 'dead' || state === 'gone' ? state : 'restarting')
        lost(error)
        kernel.stop(whyStopped(error.state))
      }
    }, WATCHDOG_MS)
    timer.unref()
    return {
      heard: () => {
        last = Date.now()
        idleChecks = 0
      },
      stop: () => clearInterval(timer),
    }
  }

  async doRestartContext(contextId: string): Promise<void> {
    this.assertAlive()
    const supervisor = this.supervisorOf(contextId)
    await this.enqueue(async () => {
      this.assertAlive()
      // Asked for: a fresh kernel, which does not count as one that stopped.
      await supervisor.restart({ asked: true })
    })
  }

  async doRemoveContext(contextId: string): Promise<void> {
    this.assertAlive()
    const supervisor = this.contexts.get(contextId)
    if (!supervisor) throw new NotFoundError(`No context ${contextId} in this sandbox`)
    this.contexts.delete(contextId)
    const closed = supervisor.close() // no new kernel for it from now on
    await this.enqueue(async () => {
      const kernel = await closed
      if (kernel) await this.kernels.stop(kernel)
    })
  }

  /**
   * A shell command started by the main kernel, so it runs where the cells run. Starting it, its
   * stdin and signals are kernel requests: while a cell runs they wait for it (the kernel reads one
   * request at a time); its output streams back meanwhile.
   */
  async doStartCommand(options: DoStartCommandOptions): Promise<CommandProcess> {
    this.assertAlive()
    const id = randomBytes(8).toString('hex')
    const request = {
      type: 'spawn',
      id,
      cmd: options.cmd,
      cwd: commandCwd(options.cwd),
      envs: options.envs ?? {},
      stdin: options.stdin,
    }
    const output = new CommandOutput(options.onEvent, this.outputLimits.outputBytes)
    // Listening before it starts: its first output can come before the reply.
    const running: RunningCommand = { pid: 0, onEvent: options.onEvent, output }
    this.commands.set(id, running)
    try {
      const reply = await this.kernelOp(`${MODULE}.command(${pythonLiteral(JSON.stringify(request))})`)
      running.pid = kernelAnswer<{ pid: number }>(reply, 'starting a command', (ename, evalue) =>
        ename === 'FileNotFoundError' || ename === 'NotADirectoryError'
          ? new InvalidArgumentError(`The command could not start: ${evalue}`, {
              hint: 'Check its cwd: a folder that exists where the kernel runs.',
            })
          : undefined,
      ).pid
    } catch (error) {
      this.commands.delete(id)
      throw error
    }
    const control = async (message: Record<string, unknown>) => {
      if (!this.commands.has(id)) return // exited: nothing to send to
      const reply = await this.kernelOp(
        `${MODULE}.command_control(${pythonLiteral(JSON.stringify({ ...message, id }))})`,
      )
      kernelAnswer(reply, 'controlling a command')
    }
    return {
      pid: running.pid,
      sendStdin: (data) => control({ type: 'proc-stdin', data: Buffer.from(data).toString('base64') }),
      closeStdin: () => control({ type: 'proc-close-stdin' }),
      kill: (signal = 'SIGKILL') => control({ type: 'proc-signal', signal }),
    }
  }

  private onCommand(commId: string, data: unknown) {
    if (commId !== COMMANDS_COMM) return
    const parsed = CommandMessage.safeParse(data)
    if (!parsed.success) return
    const message = parsed.data
    const running = this.commands.get(message.id)
    if (!running) return
    if (message.type === 'proc-out')
      running.output.output(message.stream, Buffer.from(message.data, 'base64'))
    else if (message.type === 'proc-exit') {
      this.commands.delete(message.id)
      running.onEvent({ type: 'exit', exitCode: message.code, error: message.error })
    }
  }

  /** Ends the commands whose output can no longer reach us, and remembers to kill what is left of them. */
  private loseCommands(why: string) {
    for (const [id, running] of this.commands) {
      this.commands.delete(id)
      if (running.pid) this.orphans.push(running.pid)
      running.onEvent({ type: 'exit', exitCode: -1, error: `the command was ended: ${why}` })
    }
  }

  /** Files a cell created or changed, from its kernel's report, against what every kernel reported. */
  private artifacts(end: NonNullable<ReturnType<typeof cellEndFrom>>) {
    for (const name of end.removed) this.known.delete(name)
    const artifacts = []
    for (const [name, state, size] of end.changed) {
      if (!isWorkspacePath(name)) continue
      const before = this.known.get(name)
      this.known.set(name, state)
      if (before === state) continue
      if (before === undefined && this.written.get(name) === size) continue
      artifacts.push({
        name,
        path: `${SANDBOX_HOME}/${name}`,
        size,
        mimeType: mime.lookup(name) || 'application/octet-stream',
      })
    }
    this.written.clear()
    return artifacts.sort((a, b) => a.name.localeCompare(b.name))
  }

  async doCreateContext(options: { cwd?: string }): Promise<Context> {
    this.assertAlive()
    const relative = workspacePath(options.cwd ?? SANDBOX_HOME)
    const id = randomBytes(6).toString('hex')
    // Kept before its kernel starts: a kill() meanwhile closes its supervisor, which then ends it.
    const supervisor = this.supervise(relative, undefined, false)
    this.contexts.set(id, supervisor)
    try {
      await this.ready(supervisor)
    } catch (error) {
      this.contexts.delete(id)
      throw error
    }
    return { id, language: 'python', cwd: relative ? `${SANDBOX_HOME}/${relative}` : SANDBOX_HOME }
  }

  /** Runs one call of the prelude in the main kernel, in a silent request's user expressions. */
  private async kernelOp(expression: string): Promise<ExecuteReply> {
    const kernel = await this.ready(this.main)
    return kernel.channel.execute({ code: '', silent: true, userExpressions: { result: expression } })
  }

  kernelFiles(): KernelFiles {
    return new KernelFiles((expression) => this.kernelOp(expression))
  }

  useKernelFiles() {
    this.files = this.kernelFiles()
  }

  async doWriteFile(path: string, data: Uint8Array): Promise<EntryInfo> {
    this.assertAlive()
    const relative = workspacePath(path)
    if (!relative || relative === 'data')
      throw new InvalidArgumentError(`${path} names a folder; give a file name`)
    const chunk = this.files.chunkBytes
    let offset = 0
    do {
      await this.files.write(relative, data.subarray(offset, offset + chunk), offset > 0)
      offset += chunk
    } while (offset < data.length)
    this.written.set(relative, data.length)
    return { name: basename(relative), type: 'file', path: `${SANDBOX_HOME}/${relative}`, size: data.length }
  }

  async doReadFile(path: string): Promise<Uint8Array> {
    this.assertAlive()
    const relative = workspacePath(path)
    if (!relative) throw new InvalidArgumentError(`${path} is a folder; read a file`)
    return this.files.read(relative)
  }

  async doList(path: string): Promise<EntryInfo[]> {
    this.assertAlive()
    const relative = workspacePath(path)
    return (await this.files.list(relative)).map((entry) => toInfo(relative, entry))
  }

  async doStat(path: string): Promise<EntryInfo | undefined> {
    this.assertAlive()
    const relative = workspacePath(path)
    if (!relative) return { name: 'user', type: 'dir', path: SANDBOX_HOME, size: 0 }
    const entry = await this.files.stat(relative)
    return entry && toInfo(relative.split('/').slice(0, -1).join('/'), entry)
  }

  async doRemove(path: string): Promise<void> {
    this.assertAlive()
    const relative = workspacePath(path)
    if (!relative) throw new InvalidArgumentError('The workspace itself cannot be removed')
    // Through the kernel: the Contents API moves files to the server's trash and keeps folders that are not empty.
    await this.kernelFiles().call('remove', relative)
  }

  async doAddData(hostPath: string, name: string): Promise<EntryInfo> {
    this.assertAlive()
    if (!name || name.includes('/') || name === '.' || name === '..' || name.includes('\0')) {
      throw new InvalidArgumentError(`${JSON.stringify(name)} is not a valid file name for data/`)
    }
    let file: Awaited<ReturnType<typeof open>>
    try {
      file = await open(hostPath, 'r')
    } catch (cause) {
      throw new NotFoundError(`${hostPath}: no such file`, {
        cause,
        hint: 'Check the path of the data file.',
      })
    }
    try {
      const stat = await file.stat()
      if (!stat.isFile()) throw new InvalidArgumentError(`${hostPath} is not a regular file`)
      const chunk = this.files.chunkBytes
      const buffer = Buffer.allocUnsafe(chunk)
      let offset = 0
      do {
        const { bytesRead } = await file.read(buffer, 0, chunk, offset)
        await this.files.write(`data/${name}`, buffer.subarray(0, bytesRead), offset > 0)
        offset += bytesRead
        if (bytesRead === 0) break
      } while (offset < stat.size)
      return { name, type: 'file', path: `${SANDBOX_HOME}/data/${name}`, size: offset }
    } finally {
      await file.close()
    }
  }

  private assertAlive() {
    if (this.killed) throw sandboxKilled()
  }

  /**
   * Removes the workspace (through the main kernel, when it answers) and deletes every kernel,
   * those whose start is under way too: their supervisors start nothing from now on.
   */
  async doKill(): Promise<void> {
    if (this.killed) return
    this.killed = true
    const pids = [...this.commands.values()].map((running) => running.pid).concat(this.orphans)
    this.loseCommands('the sandbox was killed')
    const [main, ...others] = await Promise.all(
      [this.main, ...this.contexts.values()].map((supervisor) => supervisor.close()),
    )
    if (main) {
      await interruptKernel(this.http, main.id).catch(() => {})
      if (main.alive) {
        const clear = main.channel.execute({
          code: '',
          silent: true,
          userExpressions: { result: `${MODULE}.op('clear', '', ${pythonLiteral(pids.join(','))})` },
        })
        await Promise.race([clear, new Promise((resolve) => setTimeout(resolve, 5000).unref())]).catch(
          () => {},
        )
      }
    }
    await Promise.all([main, ...others].map((kernel) => kernel && this.kernels.stop(kernel)))
    await this.kernels.settled()
  }
}

function isWorkspacePath(name: string): boolean {
  return (
    !name.startsWith('/') && !name.split('/').some((part) => part === '..' || part === '' || part === '.')
  )
}

/** A command's folder for the prelude: absolute outside the sandbox's home, else relative to the workspace. */
function commandCwd(cwd: string | undefined): string {
  if (cwd === undefined) return ''
  if (cwd.startsWith('/') && cwd !== SANDBOX_HOME && !cwd.startsWith(`${SANDBOX_HOME}/`)) return cwd
  return workspacePath(cwd)
}

/** A sandbox path → the path relative to the workspace folder ('' for the workspace). */
function workspacePath(path: string): string {
  const { area, parts } = splitPath(path)
  return [...(area === 'data' ? ['data'] : []), ...parts].join('/')
}

function toInfo(folder: string, entry: FileEntry): EntryInfo {
  const relative = folder ? `${folder}/${entry.name}` : entry.name
  return { name: entry.name, type: entry.type, path: `${SANDBOX_HOME}/${relative}`, size: entry.size }
}

/**
 * The kernel start settings for a sandbox in a template: on Enterprise Gateway, the template's name
 * is the kernel's image (KERNEL_IMAGE, which the gateway's kernelspec pulls). A plain Jupyter
 * Server has no notion of one.
 */
function kernelSettings(
  settings: JupyterSettings,
  server: ServerInfo,
  template: SandboxCreateOptions['template'],
): JupyterSettings {
  if (template === undefined) return settings
  if (server.kind !== 'enterprise-gateway')
    throw new InvalidArgumentError(
      "A Jupyter Server's kernels run in its own environment: it cannot start a template",
      {
        hint: 'Leave out the template (install packages on that server), use Enterprise Gateway, where a template is the kernel image, or the local engine (--sandbox local).',
      },
    )
  // A built template is refused before (assertSupported): the cluster cannot pull it from this host.
  if (typeof template !== 'string') return settings
  const kernelEnv = { ...settings.kernelEnv, KERNEL_IMAGE: template }
  checkKernelEnv(kernelEnv)
  return { ...settings, kernelEnv }
}

export class JupyterProvider implements SandboxProvider {
  readonly specificationVersion = 'v1'
  readonly name = 'jupyter'
  private server: Promise<ServerInfo> | undefined
  private readonly records: KernelRecords
  private told = false
  /** Set once a sandbox had to reach its files through the kernel (no Contents API there). */
  private filesThroughKernel = false

  constructor(private readonly settings: JupyterProviderOptions) {
    if (!settings.url) {
      throw new SandboxUnavailableError('No Jupyter server configured: ANALYST_JUPYTER_URL is not set', {
        hint: 'Set ANALYST_JUPYTER_URL (and ANALYST_JUPYTER_TOKEN) to the server, e.g. http://127.0.0.1:8888/.',
      })
    }
    checkKernelEnv(settings.kernelEnv ?? {})
    this.records = new KernelRecords(settings.recordDir ?? defaultRecordDir())
  }

  /** What this engine enforces, as far as known: it depends on the server (see JUPYTER_GATEWAY_CAPABILITIES). */
  get capabilities(): SandboxCapabilities {
    return this.filesThroughKernel ? JUPYTER_GATEWAY_CAPABILITIES : JUPYTER_CAPABILITIES
  }

  /** What is at the URL: found once, then shared; a failure is retried by the next call. */
  connect(): Promise<ServerInfo> {
    this.server ??= connect(this.settings).then(
      async (server) => {
        await this.cleanUpLeftovers(server).catch(() => {})
        return server
      },
      (error) => {
        this.server = undefined
        throw error
      },
    )
    return this.server
  }

  /** Shuts down the kernels that Analyst processes on this machine started and left behind when they crashed. */
  async cleanUpLeftovers(server?: ServerInfo): Promise<string[]> {
    const { http } = server ?? (await this.connect())
    const removed: string[] = []
    for (const record of this.records.leftovers(http.baseUrl)) {
      if (await getKernel(http, record.kernelId).catch(() => undefined)) {
        await clearLeftover(server ?? (await this.connect()), record.kernelId)
        await deleteKernel(http, record.kernelId)
        removed.push(record.kernelId)
      }
      this.records.remove(record.kernelId)
    }
    return removed
  }

  warm(): Promise<void> {
    return this.connect().then(() => {})
  }

  async doCreate(options: SandboxCreateOptions): Promise<SandboxBackend> {
    assertSupported('jupyter', this.capabilities, options)
    options.signal?.throwIfAborted()
    const server = await this.connect()
    const sandboxId = randomBytes(6).toString('hex')
    const kernels = new JupyterKernels(
      server,
      kernelSettings(this.settings, server, options.template),
      this.records,
    )
    const main = await kernels.start('', options.signal)
    let sandbox: JupyterSandbox | undefined
    try {
      const files: WorkspaceFiles = new ContentsFiles(server.http, `analyst-${sandboxId}`)
      sandbox = new JupyterSandbox(
        sandboxId,
        server,
        this.settings,
        kernels,
        main,
        files,
        options.envs ?? {},
        options.limits,
        options.sources,
      )
      await sandbox.open()
      // The Contents API sees the workspace only when the kernel started in the server's root.
      if (!server.contents || !(await files.stat('').catch(() => undefined))) {
        sandbox.useKernelFiles()
        this.filesThroughKernel = true
      }
      if (!this.told) {
        this.told = true
        process.emitWarning(
          `Sandboxes run on the Jupyter server at ${server.http.baseUrl}, isolated by it, not by Analyst: ${missingCapabilities(this.capabilities).join('; ')}. The guard still checks code (analyst doctor --sandbox jupyter).`,
          'AnalystWarning',
        )
      }
      await addCreateData(sandbox, options)
      return sandbox
    } catch (error) {
      if (sandbox) await sandbox.doKill()
      else await kernels.stop(main)
      throw error
    }
  }
}

/** Removes a leftover kernel's workspace through the kernel itself, if it is idle and answers quickly. */
async function clearLeftover(server: ServerInfo, kernelId: string) {
  await interruptKernel(server.http, kernelId).catch(() => {})
  const channel = await KernelChannel.open(server.http, kernelId, 5000).catch(() => undefined)
  if (!channel) return
  try {
    const clear = channel.execute({
      code: '',
      silent: true,
      userExpressions: {
        result: `${MODULE}.op('clear', '') if 'analyst_jupyter' in __import__('sys').modules else None`,
      },
    })
    await Promise.race([clear, new Promise((resolve) => setTimeout(resolve, 5000).unref())]).catch(() => {})
  } finally {
    channel.close()
  }
}
