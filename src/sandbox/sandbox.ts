import { basename } from 'node:path'
import type {
  Context,
  EntryInfo,
  ExecutionEvent,
  Language,
  SandboxBackend,
  SandboxCreateOptions,
  SandboxEnvironment,
  SandboxProvider,
} from './backend.js'
import { capabilitiesOf } from './capabilities.js'
import { Commands } from './commands.js'
import { InvalidArgumentError, SandboxUnavailableError } from './errors.js'
import { LANGUAGE_NAMES, LANGUAGES, normalizeLanguage } from './languages.js'
import { Execution, ExecutionError, OutputMessage, Result } from './messaging.js'
import type { QueryHost } from './query.js'

/** Options of one `runCode` call (E2B's names and units). */
export interface RunCodeOpts {
  /** Wall-clock limit. The cell is interrupted first (state kept), killed if it will not stop. @default 60_000 */
  timeoutMs?: number
  /** Environment variables for this cell only. */
  envs?: Record<string, string>
  /** The context to run in; the sandbox's default context when absent. */
  context?: Context
  /**
   * Without `context`: the sandbox's default context of this language (python, r, javascript or
   * js, typescript or ts, bash), made at its first cell. Not with `context`. @default 'python'
   */
  language?: 'python' | (string & {})
  /** Each stdout line, while the cell runs. */
  onStdout?: (message: OutputMessage) => unknown
  /** Each stderr line, while the cell runs. */
  onStderr?: (message: OutputMessage) => unknown
  /** Each result (display output, figure, last expression), while the cell runs. */
  onResult?: (result: Result) => unknown
  /** The cell's exception, if it raised one. */
  onError?: (error: ExecutionError) => unknown
  /** Interrupts the cell (state kept) and rejects with the signal's reason. */
  signal?: AbortSignal
}

export type CreateOpts = Omit<SandboxCreateOptions, 'sources'> & {
  /** The engine that runs the code. @default Sandbox.defaultProvider (the local engine's provider when imported from 'analyst') */
  provider?: SandboxProvider
  /**
   * The data sources code queries with `sql()`: a QueryHost the caller keeps (and closes), or
   * sources by name, `{ shop: 'postgres://analyst@db/shop', sales: 'sales.parquet' }`, which the
   * sandbox opens (on the host: code never sees a URL or a password) and closes at kill().
   */
  sources?: QueryHost | Record<string, string>
}

/** Opens sources given by name and URL; the package entry sets it (src/sources), as it sets the default provider. */
export type SourcesOpener = (
  sources: Record<string, string>,
) => Promise<QueryHost & { close(): Promise<void> }>

function isQueryHost(value: object): value is QueryHost {
  return typeof (value as QueryHost).run === 'function'
}

export const DEFAULT_TIMEOUT_MS = 60_000

/** Splits streamed text into lines, keeping each line's newline; a partial line waits for the rest. */
class LineSplitter {
  private pending = ''
  constructor(private readonly emit: (line: string) => void) {}
  push(text: string) {
    const lines = (this.pending + text).split('\n')
    this.pending = lines.pop() ?? ''
    for (const line of lines) this.emit(`${line}\n`)
  }
  end() {
    if (this.pending) this.emit(this.pending)
    this.pending = ''
  }
}

/** The versions of the provider spec (backend.ts) this Sandbox drives. */
const SPECIFICATION_VERSIONS: ReadonlySet<unknown> = new Set(['v1'])

/**
 * The provider, if it implements a version of the spec this Sandbox knows; a clear error
 * otherwise (an engine built for a newer or older Analyst), as the AI SDK's resolve-model does.
 */
export function resolveProvider(provider: SandboxProvider): SandboxProvider {
  const version = (provider as { specificationVersion?: unknown }).specificationVersion
  if (!SPECIFICATION_VERSIONS.has(version)) {
    const name = typeof provider.name === 'string' ? provider.name : 'the given'
    throw new InvalidArgumentError(
      `The ${name} sandbox provider implements specification version ${JSON.stringify(version ?? null)}; this Analyst knows ${[...SPECIFICATION_VERSIONS].join(', ')}`,
      { hint: 'Use a version of the engine made for this version of Analyst, or upgrade Analyst.' },
    )
  }
  return provider
}

/** The error for an optional backend method that a backend leaves out. */
export function unsupported(backend: SandboxBackend, what: string): SandboxUnavailableError {
  return new SandboxUnavailableError(`The ${backend.provider} sandbox cannot ${what}`)
}

/** Reads and writes files in the sandbox's workspace. Paths are relative to it, or absolute inside the sandbox. */
export class Files {
  constructor(private readonly backend: SandboxBackend) {}

  read(path: string, options?: { format?: 'text' }): Promise<string>
  read(path: string, options: { format: 'bytes' }): Promise<Uint8Array>
  async read(path: string, options: { format?: 'text' | 'bytes' } = {}): Promise<string | Uint8Array> {
    const bytes = await this.backend.doReadFile(path)
    return options.format === 'bytes' ? bytes : new TextDecoder().decode(bytes)
  }

  async write(path: string, data: string | Uint8Array | ArrayBuffer): Promise<EntryInfo> {
    const bytes =
      typeof data === 'string'
        ? new TextEncoder().encode(data)
        : data instanceof Uint8Array
          ? data
          : new Uint8Array(data)
    return this.backend.doWriteFile(path, bytes)
  }

  list(path = '.'): Promise<EntryInfo[]> {
    return this.backend.doList(path)
  }

  remove(path: string): Promise<void> {
    return this.backend.doRemove(path)
  }

  async exists(path: string): Promise<boolean> {
    return (await this.backend.doStat(path)) !== undefined
  }

  /** Name, type, path and size of the entry at path, or undefined. */
  stat(path: string): Promise<EntryInfo | undefined> {
    return this.backend.doStat(path)
  }

  /** Creates a folder and its parents; false when it existed already. */
  makeDir(path: string): Promise<boolean> {
    if (!this.backend.doMakeDir) throw unsupported(this.backend, 'create folders')
    return this.backend.doMakeDir(path)
  }

  /** Moves a file or folder; E2B's name. */
  rename(from: string, to: string): Promise<EntryInfo> {
    if (!this.backend.doRename) throw unsupported(this.backend, 'move files')
    return this.backend.doRename(from, to)
  }

  /** Makes a host file readable by code at `data/<name>` (read-only), without reading it into memory. */
  addData(hostPath: string, name = basename(hostPath)): Promise<EntryInfo> {
    return this.backend.doAddData(hostPath, name)
  }
}

/**
 * A stateful Python sandbox: variables, imports and functions persist from one `runCode` to the
 * next. The same API as E2B's code interpreter.
 *
 * ```ts
 * const sandbox = await Sandbox.create({ data: ['sales.csv'] })
 * const execution = await sandbox.runCode("import pandas as pd\npd.read_csv('data/sales.csv').shape")
 * console.log(execution.text) // (1000, 5)
 * await sandbox.kill()
 * ```
 */
export class Sandbox {
  /** Used when `create` is given no provider; the package entry sets it to the local backend. */
  static defaultProvider: SandboxProvider | undefined
  /** Opens sources given as URLs; the package entry sets it. */
  static openSources: SourcesOpener | undefined

  readonly files: Files
  /** Shell commands beside the kernel, in the same isolation (E2B's `sandbox.commands`). */
  readonly commands: Commands
  /** Cells in runCode now, of every context (the server's grid asks whether the kernel is held). */
  #running = 0

  protected constructor(
    private readonly backend: SandboxBackend,
    /** Closes what the sandbox opened for itself (sources given by URL). */
    private readonly release?: () => Promise<void>,
  ) {
    this.files = new Files(backend)
    this.commands = new Commands(backend)
  }

  static async create(options: CreateOpts = {}): Promise<Sandbox> {
    const { provider = Sandbox.defaultProvider, sources: given, ...rest } = options
    if (!provider) {
      throw new InvalidArgumentError('No sandbox provider given', {
        hint: "Import Sandbox from 'analyst' (local backend by default) or pass { provider }.",
      })
    }
    const engine = resolveProvider(provider)
    if (given && !capabilitiesOf(engine).hostQueries) {
      throw new InvalidArgumentError(
        `The ${engine.name} engine cannot give code the host's data sources (sql())`,
        {
          hint: 'Its sandboxes have no channel back to the host. Use the local, Modal or Jupyter engine for data sources.',
        },
      )
    }
    if (!given || isQueryHost(given)) return new Sandbox(await engine.doCreate({ ...rest, sources: given }))
    if (!Sandbox.openSources) {
      throw new InvalidArgumentError('Sources given by URL need the sources module', {
        hint: "Import Sandbox from 'analyst', or pass a QueryHost you opened yourself.",
      })
    }
    const opened = await Sandbox.openSources(given)
    try {
      return new Sandbox(await engine.doCreate({ ...rest, sources: opened }), () => opened.close())
    } catch (error) {
      await opened.close()
      throw error
    }
  }

  /** The GPUs the sandbox has (`A10G`, `H100:2`), on engines that give them; undefined when none. */
  get gpu(): string | undefined {
    return this.backend.gpu
  }

  /** The template it started from (its Python and main packages), where the engine knows it. */
  get environment(): SandboxEnvironment | undefined {
    return this.backend.environment
  }

  /** How many cells run (or wait in the kernel's queue) now: runCode calls that have not returned. */
  get runningCells(): number {
    return this.#running
  }

  get sandboxId(): string {
    return this.backend.sandboxId
  }

  /** Runs a cell. Its exceptions come back in `execution.error`; only sandbox failures reject. */
  async runCode(code: string, options: RunCodeOpts = {}): Promise<Execution> {
    if (typeof code !== 'string') throw new InvalidArgumentError('code must be a string')
    if (options.language !== undefined && options.context !== undefined) {
      throw new InvalidArgumentError('Pass a context or a language, not both', {
        hint: "A context has its language already: createCodeContext({ language: 'r' }).",
      })
    }
    const language = options.language === undefined ? undefined : this.language(options.language)
    const execution = new Execution()
    const callbackErrors: unknown[] = []
    const call = <T>(callback: ((value: T) => unknown) | undefined, value: T) => {
      if (!callback) return
      try {
        const returned = callback(value)
        if (returned instanceof Promise) returned.catch((error) => callbackErrors.push(error))
      } catch (error) {
        callbackErrors.push(error)
      }
    }
    const stdout = new LineSplitter((line) => {
      execution.logs.stdout.push(line)
      call(options.onStdout, new OutputMessage(line, Date.now(), false))
    })
    const stderr = new LineSplitter((line) => {
      execution.logs.stderr.push(line)
      call(options.onStderr, new OutputMessage(line, Date.now(), true))
    })
    const onEvent = (event: ExecutionEvent) => {
      switch (event.type) {
        case 'stdout':
          return stdout.push(event.text)
        case 'stderr':
          return stderr.push(event.text)
        case 'result': {
          const result = new Result(event.bundle, event.isMainResult)
          execution.results.push(result)
          return call(options.onResult, result)
        }
        case 'error':
          stdout.end()
          stderr.end()
          execution.error = new ExecutionError(event.name, event.value, event.traceback)
          return call(options.onError, execution.error)
        case 'artifact':
          execution.artifacts.push(event.artifact)
          return
        case 'query':
          execution.queries.push(event.record)
          return
        case 'finish':
          stdout.end()
          stderr.end()
          execution.executionCount = event.executionCount
          return
      }
    }
    this.#running++
    try {
      await this.backend.doExecute({
        code,
        contextId: options.context?.id,
        ...(language && language !== 'python' ? { language } : {}),
        envs: options.envs,
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        signal: options.signal,
        onEvent,
      })
    } finally {
      this.#running--
    }
    if (callbackErrors.length > 0) throw callbackErrors[0]
    return execution
  }

  /** A language this sandbox's engine runs, by any of its names; a clear error otherwise. */
  private language(word: string): Language {
    const language = normalizeLanguage(word)
    const languages = this.backend.languages ?? ['python']
    if (!languages.includes(language)) {
      throw new InvalidArgumentError(
        `The ${this.backend.provider} engine runs no ${LANGUAGE_NAMES[language]} code`,
        { hint: `Its languages: ${languages.join(', ')}. The local engine runs ${LANGUAGES.join(', ')}.` },
      )
    }
    return language
  }

  /** A new context: its own variables, sharing the sandbox's files and processes; in Python unless `language` says. */
  createContext(options: { cwd?: string; language?: 'python' | (string & {}) } = {}): Promise<Context> {
    const { language, ...rest } = options
    const chosen = language === undefined ? undefined : this.language(language)
    return this.backend.doCreateContext(chosen && chosen !== 'python' ? { ...rest, language: chosen } : rest)
  }

  /** E2B's name for `createContext`. */
  createCodeContext(options: { cwd?: string; language?: 'python' | (string & {}) } = {}): Promise<Context> {
    return this.createContext(options)
  }

  /** Clears a context's variables and imports (files stay). */
  restartCodeContext(context: Context | string): Promise<void> {
    if (!this.backend.doRestartContext) throw unsupported(this.backend, 'restart contexts')
    return this.backend.doRestartContext(typeof context === 'string' ? context : context.id)
  }

  /** Removes a context; running code in it afterwards fails. */
  removeCodeContext(context: Context | string): Promise<void> {
    if (!this.backend.doRemoveContext) throw unsupported(this.backend, 'remove contexts')
    return this.backend.doRemoveContext(typeof context === 'string' ? context : context.id)
  }

  /** Ends every process of the sandbox and removes its files. Safe to call twice. */
  async kill(): Promise<void> {
    try {
      await this.backend.doKill()
    } finally {
      await this.release?.()
    }
  }
}
