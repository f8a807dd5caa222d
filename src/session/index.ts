/**
 * The session service every door composes: sessions opened and resumed from the store, their
 * data, their questions (recorded step by step), idle close and shutdown.
 * @module
 */
export { type SandboxBlock, sandboxBlocks } from './blocked.js'
export { type DataFileInput, materialize, profileInputs } from './datasets.js'
export type { Replayed, ServiceEvent, SessionEvent } from './events.js'
export { forkSession } from './fork.js'
export { replicaName, SessionLease } from './lease.js'
export { type AnalystSettings, type LargeFiles, LiveSession, type SessionSources } from './live.js'
export { Recorder } from './recorder.js'
export {
  type CellResult,
  type RunWatchEvent,
  type ServiceObserver,
  SessionService,
  type SessionServiceOptions,
  type SignedInUser,
  UNTITLED,
} from './service.js'
