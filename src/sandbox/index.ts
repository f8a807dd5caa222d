/**
 * The sandbox: its API (E2B's shapes), result types, errors, and the provider spec that every
 * engine implements. Engines live in subfolders and are imported from their own subpaths.
 * @module
 */
export type {
  CommandEvent,
  CommandProcess,
  Context,
  DoExecuteOptions,
  DoStartCommandOptions,
  DoStartTerminalOptions,
  DoWatchOptions,
  EntryInfo,
  EntryOptions,
  ExecutionEvent,
  FolderWatch,
  Language,
  SandboxBackend,
  SandboxCapabilities,
  SandboxCreateOptions,
  SandboxEnvironment,
  SandboxLimits,
  SandboxMetrics,
  SandboxProvider,
  TerminalProcess,
  TerminalSize,
  WatchEvent,
} from './backend.js'
export { capabilitiesOf, FULL_CAPABILITIES, missingCapabilities } from './capabilities.js'
export { type Chart, type ChartType, parseChart, summarizeChart } from './charts.js'
export {
  type CommandConnectOpts,
  CommandExitError,
  CommandHandle,
  type CommandResult,
  type CommandStartOpts,
  Commands,
  CommandTimeoutError,
  type ProcessInfo,
} from './commands.js'
export * from './errors.js'
export { LANGUAGE_NAMES, LANGUAGES, normalizeLanguage } from './languages.js'
export {
  type Artifact,
  Execution,
  ExecutionError,
  type Logs,
  type MimeBundle,
  OutputMessage,
  Result,
} from './messaging.js'
export type {
  ColumnLayout,
  QueryBatch,
  QueryColumn,
  QueryColumnData,
  QueryColumnsBatch,
  QueryColumnType,
  QueryHost,
  QueryOptions,
  QueryRecord,
  QueryRequest,
  QuerySourceInfo,
  QueryStream,
  QuerySummary,
  QueryValuesBatch,
} from './query.js'
export { describeSources } from './query.js'
export { type CreateOpts, DEFAULT_TIMEOUT_MS, Files, type RunCodeOpts, Sandbox } from './sandbox.js'
