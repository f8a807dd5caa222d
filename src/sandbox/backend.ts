/**
 * The seam between `Sandbox` and the engines that run code (local bubblewrap kernels now; E2B,
 * Jupyter or Modal later). A backend implements these `do*` methods; users call `Sandbox`.
 * @module
 */

import type { BuiltTemplate } from '../templates/types.js'
import type { Artifact, MimeBundle } from './messaging.js'
import type { QueryHost, QueryRecord } from './query.js'

/** What a backend reports while a cell runs, in order. `finish` comes last, exactly once. */
export type ExecutionEvent =
  | { type: 'stdout'; text: string }
  | { type: 'stderr'; text: string }
  | { type: 'result'; bundle: MimeBundle; isMainResult: boolean }
  | { type: 'error'; name: string; value: string; traceback: string }
  | { type: 'artifact'; artifact: Artifact }
  /** A query the cell's sql() ran on the host's sources, once it ended. */
  | { type: 'query'; record: QueryRecord }
  | { type: 'finish'; executionCount?: number }

export interface DoExecuteOptions {
  code: string
  contextId?: string
  /** Without a context: the sandbox's default context of this language. @default 'python' */
  language?: Language
  envs?: Record<string, string>
  timeoutMs: number
  signal?: AbortSignal
  onEvent: (event: ExecutionEvent) => void
}

/** The languages a context runs (E2B's names; `js`, `ts` and `R` are read as these). */
export type Language = 'python' | 'r' | 'javascript' | 'typescript' | 'bash'

/** An independent namespace of variables in the same sandbox, in one language. */
export interface Context {
  id: string
  language: Language
  cwd: string
}

export interface EntryInfo {
  /** Base name. */
  name: string
  /** A link's is its target's, when the target is in the workspace; `symlink` when it is not. */
  type: 'file' | 'dir' | 'symlink'
  /** Absolute path inside the sandbox. */
  path: string
  size: number
  // The details below come with `{ details: true }` (E2B's EntryInfo); other listings leave them out.
  /** Last change of the content. */
  modifiedTime?: Date
  /** Permission bits (0o644); a link's are its target's. */
  mode?: number
  /** As `ls -l` shows them: `-rw-r--r--`, `drwxr-xr-x`, `Lrwxrwxrwx` for a link. */
  permissions?: string
  owner?: string
  group?: string
  /** Where a symbolic link points, as an absolute path inside the sandbox. */
  symlinkTarget?: string
  /** E2B's file metadata (`user.e2b.*` extended attributes), where the engine keeps it. */
  metadata?: Record<string, string>
}

/** What `doList` and `doStat` may add to each entry. */
export interface EntryOptions {
  /** Modified time, mode, permissions, owner and group, and links with their targets. */
  details?: boolean
}

/** A change in a watched folder, as E2B's envd reports it (inotify's events). */
export interface WatchEvent {
  type: 'create' | 'write' | 'remove' | 'rename' | 'chmod'
  /** Relative to the watched folder: `a.txt`, `sub/a.txt`. */
  name: string
}

export interface DoWatchOptions {
  /** Subfolders too, and the ones made later. */
  recursive: boolean
  onEvent: (event: WatchEvent) => void
}

/** A folder being watched, until `stop()`. */
export interface FolderWatch {
  stop(): void
}

/**
 * What the sandbox uses now, as counters: the caller turns two readings into a CPU percentage.
 * Memory and disk in bytes.
 */
export interface SandboxMetrics {
  /** CPU time used by all the sandbox's processes since it started, in seconds; absent where not accounted. */
  cpuSeconds?: number
  cpuCount: number
  memoryUsed: number
  /** Page cache counted in the sandbox's memory (files read and written, the workspace's tmpfs). */
  memoryCache: number
  memoryTotal: number
  diskUsed: number
  diskTotal: number
}

/** What a command reports, in order. `exit` comes last, exactly once. */
export type CommandEvent =
  | { type: 'stdout'; data: Uint8Array }
  | { type: 'stderr'; data: Uint8Array }
  /** `exitCode` 128 + N when signal N ended it; `error` says why when it did not exit by itself. */
  | { type: 'exit'; exitCode: number; error?: string }

export interface DoStartCommandOptions {
  /** Runs as `/bin/bash -l -c cmd`, in the same isolation and limits as the kernel. */
  cmd: string
  /** Absolute inside the sandbox, or relative to the workspace. @default the workspace */
  cwd?: string
  /** On top of the sandbox's environment. */
  envs?: Record<string, string>
  /** Keep stdin open for `sendStdin`; otherwise it reads nothing. */
  stdin: boolean
  onEvent: (event: CommandEvent) => void
}

/** A command started in the sandbox, until its `exit` event. */
export interface CommandProcess {
  /** Its process id inside the sandbox. */
  readonly pid: number
  sendStdin(data: Uint8Array): Promise<void>
  closeStdin(): Promise<void>
  /** Signals the command and every process it started. */
  kill(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>
}

/** A pseudo-terminal's size, in characters. */
export interface TerminalSize {
  cols: number
  rows: number
}

/**
 * A command in a pseudo-terminal of `size`: the terminal is its stdin, stdout, stderr and
 * controlling terminal. What it prints (echo included) comes as `stdout` events; `sendStdin` types.
 */
export interface DoStartTerminalOptions extends Omit<DoStartCommandOptions, 'stdin'> {
  size: TerminalSize
}

/** A command in a pseudo-terminal, which can be resized (its programs get SIGWINCH). */
export interface TerminalProcess extends CommandProcess {
  resize(size: TerminalSize): Promise<void>
}

export interface SandboxBackend {
  readonly specificationVersion: 'v1'
  /** e.g. `local`. */
  readonly provider: string
  readonly sandboxId: string
  /** The GPUs the sandbox has, as the engine names them (`A10G`, `H100:2`); absent when none. */
  readonly gpu?: string
  /** The template it started from, as far as the engine knows it; absent: the engine's default. */
  readonly environment?: SandboxEnvironment
  /** The languages its contexts run; a backend that leaves it out runs Python only. */
  readonly languages?: readonly Language[]
  /** Runs one cell; resolves after the `finish` event. Rejects only when the sandbox itself fails. */
  doExecute(options: DoExecuteOptions): Promise<void>
  doCreateContext(options: { cwd?: string; language?: Language }): Promise<Context>
  doWriteFile(path: string, data: Uint8Array): Promise<EntryInfo>
  doReadFile(path: string): Promise<Uint8Array>
  doList(path: string, options?: EntryOptions): Promise<EntryInfo[]>
  /** The entry at path, or undefined when there is none. */
  doStat(path: string, options?: EntryOptions): Promise<EntryInfo | undefined>
  doRemove(path: string): Promise<void>
  /** Creates a folder and its parents; false when it existed. Optional, like commands. */
  doMakeDir?(path: string): Promise<boolean>
  /**
   * Replaces a file's metadata (E2B's `user.e2b.*` extended attributes; `{}` clears it). Optional:
   * where absent, the E2B door refuses uploads that carry metadata.
   */
  doSetMetadata?(path: string, metadata: Record<string, string>): Promise<void>
  /** Moves a file or folder. Optional, like commands. */
  doRename?(from: string, to: string): Promise<EntryInfo>
  /** Makes a host file readable by code at `data/<name>`, read-only, without loading it into memory. */
  doAddData(hostPath: string, name: string): Promise<EntryInfo>
  /**
   * Starts a shell command beside the kernel. Optional: a backend that cannot run commands leaves
   * it out, and `sandbox.commands` says so.
   */
  doStartCommand?(options: DoStartCommandOptions): Promise<CommandProcess>
  /**
   * Starts a command in a pseudo-terminal, in the same isolation as commands. Optional: where it
   * is absent (`capabilities.terminals` false), `sandbox.commands.run(…, { pty })` says so.
   */
  doStartTerminal?(options: DoStartTerminalOptions): Promise<TerminalProcess>
  /** Clears a context's variables (the default context's too). Optional, like commands. */
  doRestartContext?(contextId: string): Promise<void>
  /** Removes a context. Optional, like commands. */
  doRemoveContext?(contextId: string): Promise<void>
  /** Reports changes in a folder as they happen (inotify). Optional: callers poll where it is absent. */
  doWatch?(path: string, options: DoWatchOptions): Promise<FolderWatch>
  /** The sandbox's CPU, memory and disk use (its cgroup). Optional, like commands. */
  doMetrics?(): Promise<SandboxMetrics>
  doKill(): Promise<void>
}

/** Resource limits of one sandbox. */
export interface SandboxLimits {
  /** Memory of all the sandbox's processes together. @default 2 GiB */
  memoryBytes: number
  /** Processes and threads. @default 128 */
  processes: number
  /** Size of any one file written. @default 1 GiB */
  fileSizeBytes: number
  /** Total size of the workspace. @default 1 GiB */
  workspaceBytes: number
  /** CPU seconds one cell may use. @default 600 */
  cpuSeconds: number
  /** Open files per process. @default 1024 */
  openFiles: number
  /** stdout + stderr kept per cell; more is dropped with a marker. @default 10 MiB */
  outputBytes: number
  /** Results (displays, tables, charts) kept per cell; more are dropped with a marker. @default 8 × outputBytes */
  resultBytes: number
}

/** What a sandbox's template holds, for the model's prompt. */
export interface SandboxEnvironment {
  /** The template's name (or the start of its id). */
  template: string
  /** Its languages, the first the default. */
  languages: string[]
  /** The Python version, e.g. 3.13.5. */
  python?: string
  /** Its main packages and their versions (pandas → 2.2.3). */
  packages: Record<string, string>
}

export interface SandboxCreateOptions {
  /** Host files readable by code at `data/<base name>`, read-only. */
  data?: Array<string | { path: string; name: string }>
  /** Environment variables of the kernel, on top of a minimal clean environment. */
  envs?: Record<string, string>
  limits?: Partial<SandboxLimits>
  /**
   * `'sandbox'` runs code in the isolated jail. `'none'` runs it as a plain child process with
   * access to everything the host user can reach: only for machines without namespaces.
   * @default 'sandbox'
   */
  isolation?: 'sandbox' | 'none'
  /** Let code reach the network. @default false */
  network?: boolean
  /**
   * The host's data sources that code queries with `sql()` (src/sources). The host keeps the
   * connections and credentials; code gets rows. Only engines whose kernel can ask the host
   * (`capabilities.hostQueries`) take them.
   */
  sources?: QueryHost
  /**
   * The environment the sandbox starts from: a template's name or id (`analyst template list`), or
   * a built template (src/templates). Each engine maps it to its own notion of one, or refuses it
   * with the reason (`capabilities.templates`). @default the engine's own default environment
   */
  template?: string | BuiltTemplate
  /** Abort creation. */
  signal?: AbortSignal
}

/**
 * What Analyst itself enforces on an engine's sandboxes. Where a field is false (or a limit is not
 * listed) the engine, or the server behind it, decides: Analyst says so to the user (`doctor`, the
 * CLI, the conformance suite) instead of behaving differently in silence.
 */
export interface SandboxCapabilities {
  /** Code cannot reach the network unless created with `network: true`. */
  networkIsolation: boolean
  /** Code sees none of the host's files or environment variables, only its workspace and inputs. */
  hostIsolation: boolean
  /** Files given as data are read-only for code. */
  readOnlyData: boolean
  /** The limits enforced. stdout/stderr and results are capped by the host on every engine. */
  limits: ReadonlyArray<keyof SandboxLimits>
  /** kill() ends every process the code started, daemons and double forks included. */
  fullTeardown: boolean
  /**
   * Code (cells and commands) sees its workspace at /home/user, the path the files API and
   * artifacts use. Where false, code sees the engine's own folder for it (the files API still
   * calls it /home/user): code that writes absolute paths must ask `os.getcwd()`.
   */
  homeWorkspace: boolean
  /**
   * Aborting a cell (its `signal`) interrupts it at once. Where false, the call still rejects at
   * once, but the cell runs on in the sandbox until it ends or reaches its timeoutMs, and the next
   * cell waits for it (E2B: its SDK takes no abort signal and E2B has no interrupt call).
   */
  abortInterrupts: boolean
  /**
   * The files API and commands answer while a cell runs. Where false (a Jupyter server without a
   * Contents API, such as Enterprise Gateway: both go through the kernel, which runs one request
   * at a time), they wait for the running cell to end.
   */
  filesDuringCells: boolean
  /**
   * Code can ask the host to run queries on its sources (`sql()`): the kernel has a channel to
   * the host. Where false (E2B's cloud: its SDK gives the sandbox no way to call back), a sandbox
   * with sources cannot be created.
   */
  hostQueries: boolean
  /** Commands can run in a pseudo-terminal (`pty`, E2B's `sandbox.pty`): `doStartTerminal`. */
  terminals: boolean
  /**
   * What `create({ template })` means: 'built', a template from Analyst's store (src/templates),
   * which the engine roots its sandboxes in; 'named', the engine's own template of that name
   * (E2B's); 'none', refused with what to do instead.
   */
  templates: 'built' | 'named' | 'none'
}

export interface SandboxProvider {
  readonly specificationVersion: 'v1'
  readonly name: string
  /** What this engine enforces; absent means everything (the local engine's jail). */
  readonly capabilities?: SandboxCapabilities
  doCreate(options: SandboxCreateOptions): Promise<SandboxBackend>
  /** Starts what makes `doCreate` fast (a warm pool, of that template's), if the engine has such a thing. */
  warm?(options?: Pick<SandboxCreateOptions, 'template'>): Promise<void>
  /** Stops what it keeps ready (a warm pool). Sandboxes already made are their owners' to kill. */
  close?(): Promise<void>
}
