/**
 * The e2b backend: Analyst's sandboxes on E2B's cloud (or on any E2B-compatible server, such as
 * `analyst serve`), through the official `@e2b/code-interpreter` SDK. Cells run in E2B's
 * code-interpreter kernel, files go through envd, commands are E2B's own. What E2B does not
 * report, the files a cell created or changed, comes from one `find` after each cell.
 *
 * A cell's timeout is E2B's: the SDK hangs up, and E2B's server interrupts the kernel
 * (template/server/messaging.py). What became of the cell is asked afterwards with a probe cell:
 * the kernel keeps the interrupt's traceback in sys.last_*, and its execution count tells whether
 * it is still the same kernel. A kernel still busy after a grace ignores interrupts: it is
 * restarted through E2B's contexts API, and the cell is told its state was lost.
 * @module
 */
import { createReadStream } from 'node:fs'
import { Readable } from 'node:stream'
import {
  AuthenticationError,
  CommandExitError,
  type ConnectionOpts,
  NotFoundError as E2BNotFoundError,
  RateLimitError as E2BRateLimitError,
  Sandbox as E2BSandbox,
  TimeoutError as E2BTimeoutError,
  FileNotFoundError,
} from '@e2b/code-interpreter'
import {
  InvalidArgumentError,
  NotFoundError,
  RateLimitError,
  SandboxError,
  SandboxUnavailableError,
} from '../../errors.js'
import type {
  CommandProcess,
  Context,
  DoExecuteOptions,
  DoStartCommandOptions,
  EntryInfo,
  Language,
  SandboxBackend,
  SandboxCapabilities,
  SandboxCreateOptions,
  SandboxProvider,
} from '../backend.js'
import { assertSupported, FULL_CAPABILITIES, missingCapabilities } from '../capabilities.js'
import { killedError, timeoutError } from '../cell-output.js'
import { finishCreate } from '../create-data.js'
import { sandboxKilled } from '../errors.js'
import { LANGUAGES, normalizeLanguage } from '../languages.js'
import type { Artifact, MimeBundle } from '../messaging.js'
import { dataFileSize } from '../paths.js'
import { changedFiles, parseListing, WORKSPACE_LISTING } from '../snapshot.js'

const HOME = '/home/user'
/** E2B's result fields → the MIME types Analyst's `Result` reads them from. */
const MIME_OF: Record<string, string> = {
  text: 'text/plain',
  html: 'text/html',
  markdown: 'text/markdown',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpeg: 'image/jpeg',
  pdf: 'application/pdf',
  latex: 'text/latex',
  json: 'application/json',
  javascript: 'application/javascript',
  data: 'analyst/data',
  chart: 'analyst/chart',
}
export interface E2BProviderOptions
  extends Pick<ConnectionOpts, 'apiUrl' | 'sandboxUrl' | 'domain' | 'requestTimeoutMs'> {
  /** @default E2B_API_KEY */
  apiKey?: string
  /** @default 'code-interpreter-v1' */
  template?: string
  /** How long a sandbox lives without being killed; E2B kills it then. @default 1 hour */
  lifetimeMs?: number
  /** How long a timed-out cell may take to stop before its kernel is restarted. @default 3000 */
  interruptGraceMs?: number
}

/**
 * Run after a timeout, in its own namespace: prints the traceback of the interrupt the kernel
 * recorded (IPython keeps the last error in sys.last_*), and forgets it.
 */
const PROBE = `exec(${JSON.stringify(
  [
    'import sys, traceback',
    "if getattr(sys, 'last_type', None) is KeyboardInterrupt:",
    "    print(''.join(traceback.format_exception(sys.last_type, sys.last_value, sys.last_traceback)), end='')",
    'sys.last_type = sys.last_value = sys.last_traceback = None',
    "if hasattr(sys, 'last_exc'):",
    '    sys.last_exc = None',
  ].join('\n'),
)}, {})`

/** E2B's errors as Analyst's, with what to do about them. */
function fromE2B(error: unknown, doing: string): Error {
  if (error instanceof AuthenticationError) {
    return new SandboxUnavailableError(`E2B refused the API key while ${doing}`, {
      cause: error,
      hint: 'Check E2B_API_KEY (e2b.dev/dashboard?tab=keys).',
      fix: { setting: 'sandbox', example: 'local' },
    })
  }
  if (error instanceof E2BRateLimitError)
    return new RateLimitError(`E2B rate-limited ${doing}`, { cause: error })
  if (error instanceof FileNotFoundError) {
    return new NotFoundError(`${doing}: no such file in the sandbox`, { cause: error })
  }
  if (error instanceof E2BNotFoundError)
    return new NotFoundError(`${doing}: ${error.message}`, { cause: error })
  if (error instanceof Error && /not available on this server|Only Python/.test(error.message)) {
    return new InvalidArgumentError(error.message, { cause: error })
  }
  const message = error instanceof Error ? error.message : String(error)
  return new SandboxError(`E2B failed while ${doing}: ${message}`, { cause: error })
}

function inside(path: string): string {
  if (path.startsWith('/')) return path
  const relative = path.replace(/^\.\/?/, '')
  return relative ? `${HOME}/${relative}` : HOME
}

function resultBundle(result: Record<string, unknown>): MimeBundle {
  const bundle: MimeBundle = {}
  for (const [field, mimeType] of Object.entries(MIME_OF)) {
    if (result[field] !== undefined && result[field] !== null) bundle[mimeType] = result[field]
  }
  for (const [key, value] of Object.entries((result.extra as Record<string, unknown>) ?? {}))
    bundle[key] = value
  return bundle
}

class E2BBackend implements SandboxBackend {
  readonly specificationVersion = 'v1'
  readonly provider = 'e2b'
  private snapshot = new Map<string, string>()
  /** Set after the host wrote files: the next cell takes a fresh snapshot first, so they are not its artifacts. */
  private stale = true
  /** The last execution count of each context: a lower one later means a new kernel. */
  private readonly counts = new Map<string, number>()
  private killed = false
  /** E2B's code interpreter has Python, R, JavaScript/TypeScript and bash contexts (a template without one says so per run). */
  readonly languages = LANGUAGES
  /** The language of each context this backend made (a probe after a timeout is Python's only). */
  private readonly contextLanguages = new Map<string, Language>()

  constructor(
    private readonly sdk: E2BSandbox,
    private readonly interruptGraceMs: number,
  ) {}

  private assertAlive() {
    if (this.killed) throw sandboxKilled()
  }

  get sandboxId(): string {
    return this.sdk.sandboxId
  }

  private async files(): Promise<Map<string, string>> {
    const { stdout } = await this.sdk.commands.run(WORKSPACE_LISTING, { timeoutMs: 60_000 })
    return parseListing(stdout)
  }

  private async artifacts(): Promise<Artifact[]> {
    const now = await this.files()
    const changed = changedFiles(this.snapshot, now)
    this.snapshot = now
    return changed
  }

  async doExecute(options: DoExecuteOptions): Promise<void> {
    this.assertAlive()
    const { onEvent } = options
    options.signal?.throwIfAborted()
    if (this.stale) {
      this.snapshot = await this.files().catch(() => this.snapshot)
      this.stale = false
    }
    const context: Context | undefined =
      options.contextId && options.contextId !== 'default'
        ? {
            id: options.contextId,
            language: this.contextLanguages.get(options.contextId) ?? 'python',
            cwd: HOME,
          }
        : undefined
    // Without a context, the default context of the language (E2B's SDK takes one or the other).
    const language = context ? context.language : (options.language ?? 'python')
    const running = this.sdk.runCode(options.code, {
      ...(context ? { context } : language !== 'python' ? { language } : {}),
      envs: options.envs,
      timeoutMs: options.timeoutMs,
      onStdout: (message) => onEvent({ type: 'stdout', text: message.line }),
      onStderr: (message) => onEvent({ type: 'stderr', text: message.line }),
      onResult: (result) =>
        onEvent({
          type: 'result',
          bundle: resultBundle(result as unknown as Record<string, unknown>),
          isMainResult: result.isMainResult,
        }),
      onError: (error) =>
        onEvent({ type: 'error', name: error.name, value: error.value, traceback: error.traceback }),
    })
    // E2B's SDK takes no abort signal: an abort returns now; the cell stops at its timeout
    // (E2B_CAPABILITIES.abortInterrupts, said to the user).
    const aborted = new Promise<never>((_, reject) => {
      options.signal?.addEventListener('abort', () => reject(options.signal?.reason), { once: true })
    })
    const key = context?.id ?? (language === 'python' ? 'default' : `default-${language}`)
    let executionCount: number | undefined
    try {
      executionCount = (await Promise.race([running, aborted])).executionCount
      if (executionCount !== undefined) this.counts.set(key, executionCount)
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason
      if (this.killed) throw sandboxKilled()
      if (!(error instanceof E2BTimeoutError)) throw fromE2B(error, 'running the cell')
      // The probe is Python: another language's kernel is taken to have kept its state.
      onEvent(
        language === 'python'
          ? await this.afterTimeout(context, key, options.timeoutMs / 1000)
          : timeoutError(options.timeoutMs / 1000),
      )
    }
    for (const artifact of await this.artifacts().catch(() => [])) onEvent({ type: 'artifact', artifact })
    onEvent({ type: 'finish', executionCount })
  }

  /** What became of a cell that timed out (E2B interrupted it when the SDK hung up). */
  private async afterTimeout(context: Context | undefined, key: string, seconds: number) {
    const before = this.counts.get(key) ?? 0
    for (let attempt = 0; attempt < 2; attempt++) {
      let probe: Awaited<ReturnType<E2BSandbox['runCode']>>
      try {
        probe = await this.sdk.runCode(PROBE, { context, timeoutMs: this.interruptGraceMs })
      } catch (error) {
        if (!(error instanceof E2BTimeoutError)) throw fromE2B(error, 'checking the kernel after a timeout')
        // Still busy: the cell ignores interrupts. A restart ends it, and its state.
        await this.doRestartContext(key)
        this.counts.delete(key)
        return { type: 'error' as const, ...killedError('timeout', seconds) }
      }
      // A probe that arrived while the interrupt was still being raised may be aborted: ask again.
      if (probe.error) continue
      const traceback = probe.logs.stdout.join('').trimEnd()
      const count = probe.executionCount ?? 0
      this.counts.set(key, count)
      // The timed-out cell counted in the same kernel, so the probe's count is past the last one
      // seen (and past 1); a fresh kernel (the server restarted it) starts again from 1.
      if (traceback || count > Math.max(before, 1)) return timeoutError(seconds, traceback)
      return { type: 'error' as const, ...killedError('timeout', seconds) }
    }
    return timeoutError(seconds)
  }

  async doCreateContext(options: { cwd?: string; language?: Language }): Promise<Context> {
    this.assertAlive()
    const cwd = inside(options.cwd ?? HOME)
    const asked = options.language ?? 'python'
    const context = await this.sdk.createCodeContext({ cwd, language: asked }).catch((error: unknown) => {
      throw fromE2B(error, 'creating a context')
    })
    const language = normalizeLanguage(context.language ?? asked)
    this.contextLanguages.set(context.id, language)
    return { id: context.id, language, cwd: context.cwd }
  }

  async doRestartContext(contextId: string): Promise<void> {
    this.assertAlive()
    let id = contextId
    if (id === 'default') {
      // E2B's default context has the kernel's id: the first Python context it lists.
      const contexts = await this.sdk.listCodeContexts()
      id = contexts.find((c) => c.language === 'python')?.id ?? id
    }
    await this.sdk.restartCodeContext(id).catch((error: unknown) => {
      throw fromE2B(error, `restarting context ${contextId}`)
    })
  }

  async doRemoveContext(contextId: string): Promise<void> {
    this.assertAlive()
    await this.sdk.removeCodeContext(contextId).catch((error: unknown) => {
      throw fromE2B(error, `removing context ${contextId}`)
    })
  }

  async doWriteFile(path: string, data: Uint8Array): Promise<EntryInfo> {
    this.assertAlive()
    const target = inside(path)
    const info = await this.sdk.files.write(target, data.slice().buffer).catch((error: unknown) => {
      throw fromE2B(error, `writing ${path}`)
    })
    this.stale = true
    return { name: info.name, type: 'file', path: info.path, size: data.length }
  }

  async doReadFile(path: string): Promise<Uint8Array> {
    this.assertAlive()
    return this.sdk.files.read(inside(path), { format: 'bytes' }).catch((error: unknown) => {
      throw fromE2B(error, path)
    })
  }

  async doList(path: string): Promise<EntryInfo[]> {
    this.assertAlive()
    const entries = await this.sdk.files.list(inside(path)).catch((error: unknown) => {
      throw fromE2B(error, `listing ${path}`)
    })
    return entries
      .filter((entry) => entry.type === 'file' || entry.type === 'dir')
      .map((entry) => ({
        name: entry.name,
        type: entry.type as 'file' | 'dir',
        path: entry.path,
        size: entry.size,
      }))
      .sort((a, b) => a.name.localeCompare(b.name))
  }

  async doStat(path: string): Promise<EntryInfo | undefined> {
    this.assertAlive()
    try {
      const entry = await this.sdk.files.getInfo(inside(path))
      return {
        name: entry.name,
        type: entry.type === 'dir' ? 'dir' : 'file',
        path: entry.path,
        size: entry.size,
      }
    } catch (error) {
      if (error instanceof FileNotFoundError || error instanceof E2BNotFoundError) return undefined
      throw fromE2B(error, `looking at ${path}`)
    }
  }

  async doRemove(path: string): Promise<void> {
    this.assertAlive()
    await this.sdk.files.remove(inside(path)).catch((error: unknown) => {
      throw fromE2B(error, `removing ${path}`)
    })
    this.stale = true
  }

  async doMakeDir(path: string): Promise<boolean> {
    this.assertAlive()
    return this.sdk.files.makeDir(inside(path)).catch((error: unknown) => {
      throw fromE2B(error, `creating ${path}`)
    })
  }

  async doRename(from: string, to: string): Promise<EntryInfo> {
    this.assertAlive()
    const entry = await this.sdk.files.rename(inside(from), inside(to)).catch((error: unknown) => {
      throw fromE2B(error, `moving ${from}`)
    })
    this.stale = true
    return {
      name: entry.name,
      type: entry.type === 'dir' ? 'dir' : 'file',
      path: entry.path,
      size: entry.size,
    }
  }

  /** Streams a host file to data/<name>, without reading it into memory. */
  async doAddData(hostPath: string, name: string): Promise<EntryInfo> {
    this.assertAlive()
    const size = dataFileSize(hostPath, name)
    const target = `${HOME}/data/${name}`
    const stream = Readable.toWeb(createReadStream(hostPath)) as ReadableStream<Uint8Array>
    await this.sdk.files.write(target, stream).catch((error: unknown) => {
      throw fromE2B(error, `uploading ${hostPath}`)
    })
    // Read-only for the code, as data/ is everywhere (best effort: a server may have it read-only already).
    await this.sdk.commands.run(`chmod a-w ${JSON.stringify(target)}`).catch(() => {})
    this.stale = true
    return { name, type: 'file', path: target, size }
  }

  async doStartCommand(options: DoStartCommandOptions): Promise<CommandProcess> {
    this.assertAlive()
    const encoder = new TextEncoder()
    const handle = await this.sdk.commands
      .run(options.cmd, {
        background: true,
        stdin: options.stdin,
        envs: options.envs,
        cwd: options.cwd === undefined ? undefined : inside(options.cwd),
        timeoutMs: 0,
        onStdout: (text) => options.onEvent({ type: 'stdout', data: encoder.encode(text) }),
        onStderr: (text) => options.onEvent({ type: 'stderr', data: encoder.encode(text) }),
      })
      .catch((error: unknown) => {
        throw fromE2B(error, 'starting a command')
      })
    handle.wait().then(
      (result) => options.onEvent({ type: 'exit', exitCode: result.exitCode, error: result.error }),
      (error: unknown) =>
        options.onEvent(
          error instanceof CommandExitError
            ? { type: 'exit', exitCode: error.exitCode, error: error.error }
            : { type: 'exit', exitCode: -1, error: (error as Error).message },
        ),
    )
    this.stale = true
    const pid = handle.pid
    return {
      pid,
      sendStdin: (data) => this.sdk.commands.sendStdin(pid, data),
      closeStdin: () => this.sdk.commands.closeStdin(pid),
      kill: async () => {
        await this.sdk.commands.kill(pid)
      },
    }
  }

  async doKill(): Promise<void> {
    if (this.killed) return
    this.killed = true
    await this.sdk.kill().catch(() => {})
  }
}

/** E2B's VM isolates; what it cannot do is cut an aborted cell short (no abort in the SDK, no interrupt call). */
/** E2B's cloud: no interrupt call, and no way for code to call back to the host (no sql()). */
export const E2B_CAPABILITIES: SandboxCapabilities = {
  ...FULL_CAPABILITIES,
  abortInterrupts: false,
  hostQueries: false,
  // E2B has PTYs; this engine does not drive them yet.
  terminals: false,
  rebuildsKernelState: false,
  // A template is E2B's own template of that name (its id or alias in E2B's cloud).
  templates: 'named',
}

export class E2BProvider implements SandboxProvider {
  readonly specificationVersion = 'v1'
  readonly name = 'e2b'
  readonly capabilities = E2B_CAPABILITIES
  private readonly options: E2BProviderOptions
  private told = false

  constructor(options: E2BProviderOptions = {}) {
    this.options = options
  }

  async doCreate(options: SandboxCreateOptions): Promise<SandboxBackend> {
    // E2B's template sets the limits and its VM is the isolation: asking for others cannot be honoured.
    if (options.limits && Object.values(options.limits).some((value) => value !== undefined)) {
      throw new InvalidArgumentError('The e2b provider cannot set limits: the E2B template decides them', {
        hint: 'Leave out limits, or use the local provider.',
      })
    }
    if (options.isolation === 'none') {
      throw new InvalidArgumentError("isolation 'none' does not apply to E2B: its sandboxes are VMs")
    }
    assertSupported('e2b', this.capabilities, { template: options.template })
    options.signal?.throwIfAborted()
    const {
      template: defaultTemplate = 'code-interpreter-v1',
      lifetimeMs = 3_600_000,
      interruptGraceMs = 3000,
      ...connection
    } = this.options
    const template = (options.template as string | undefined) ?? defaultTemplate
    const sdk = await E2BSandbox.create(template, {
      ...connection,
      timeoutMs: lifetimeMs,
      envs: options.envs,
      // Secure by default: no network unless asked for.
      allowInternetAccess: options.network ?? false,
    }).catch((error: unknown) => {
      throw fromE2B(error, 'creating a sandbox')
    })
    const backend = new E2BBackend(sdk, interruptGraceMs)
    if (!this.told) {
      this.told = true
      process.emitWarning(
        `On E2B, ${missingCapabilities(this.capabilities).join('; ')}: E2B interrupts a cell only when its client hangs up at the timeout.`,
        'AnalystWarning',
      )
    }
    return finishCreate(backend, options)
  }
}
