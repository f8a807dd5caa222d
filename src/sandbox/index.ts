/**
 * The sandbox: its API (E2B's shapes), result types, errors, and the backend interface that every
 * engine implements. Backends live in subfolders and are imported from their own subpaths.
 * @module
 */
export type {
  Context,
  DoExecuteOptions,
  EntryInfo,
  ExecutionEvent,
  SandboxBackend,
  SandboxCapabilities,
  SandboxCreateOptions,
  SandboxLimits,
  SandboxProvider,
} from './backend.js'
export { capabilitiesOf, FULL_CAPABILITIES, missingCapabilities } from './capabilities.js'
export {
  AnalystError,
  InvalidArgumentError,
  NotFoundError,
  SandboxError,
  SandboxUnavailableError,
} from './errors.js'
export {
  type Artifact,
  Execution,
  ExecutionError,
  type Logs,
  type MimeBundle,
  OutputMessage,
  Result,
} from './messaging.js'
export { type CreateOpts, DEFAULT_TIMEOUT_MS, Files, type RunCodeOpts, Sandbox } from './sandbox.js'
