/**
 * The session service every door composes: sessions opened and resumed from the store, their
 * data, their questions (recorded step by step), idle close and shutdown.
 * @module
 */
export { type DataFileInput, materialize, profileInputs } from './datasets.js'
export type { Replayed, ServiceEvent, SessionEvent } from './events.js'
export { type AnalystSettings, LiveSession } from './live.js'
export { Recorder } from './recorder.js'
export { type CellResult, SessionService, type SessionServiceOptions, UNTITLED } from './service.js'
