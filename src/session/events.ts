/**
 * What asking a question through the session service reports: the agent's events, and the
 * service's own around them. Plain JSON (the web UI reads these types).
 * @module
 */
import type { AgentEvent } from '../agent/events.js'

/** Cells re-run to rebuild a stored session, and how many of them failed this time. */
export interface Replayed {
  ran: number
  failed: number
}

/** What the service itself reports around the agent's events. */
export type ServiceEvent =
  /** The session's sandbox must be started (and its state rebuilt) before the question: this takes a moment. */
  | {
      type: 'preparing'
      message: string
      model: string
      datasets: number
      replaying: number
      /** The session had been paused to free memory (the server's memory budget): its state is rebuilt now. */
      paused?: 'memory'
    }
  /** The sandbox is ready; `replayed` says how many earlier cells were re-run and how many failed this time. */
  | { type: 'ready'; replayed: Replayed }
  /** The question's run has begun; `queued` when it waited for earlier questions of the session. */
  | { type: 'run-start'; runId: string; queued: boolean }

export type SessionEvent = AgentEvent | ServiceEvent
