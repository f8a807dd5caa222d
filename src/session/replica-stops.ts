/**
 * A Stop that reaches a run on another replica. Behind a load balancer the page's question streams
 * from one replica while its Stop may reach another: that one records a request in the store,
 * which every replica hears at once (NOTIFY), and waits a moment for the replica that holds the
 * session (its lease) to answer with how many it stopped. The holder stops as it would for a
 * local Stop. A holder that heard nothing (its listening connection was down) finds the request
 * when it next renews its lease; a request names a run, or "what runs now", and counts only for
 * the holding taken before it, and it expires after a lease's length: a later run is never stopped by it.
 * @module
 */
import type { StopNotice, StopRequest, StopRequests } from '../store/index.js'
import { unlessUnreachable } from './outage.js'

/**
 * How long the asking replica waits for the holder's answer: well under the web page's own patience
 * (3 s, after which it closes the run's request, which the run records as a lost connection).
 */
export const STOP_ANSWER_MS = 1500
/** How often the asker reads the answer in the store, in case the notice of it goes unheard. */
const POLL_MS = 250

/**
 * Which of a session's runs a Stop ends on this replica: one, or all; `leased`: only those holding
 * the session; `askedAtMs` (the database's clock): not those that took the session's lease after.
 */
export interface StopWhich {
  runId?: string
  leased?: boolean
  askedAtMs?: number
}

/** What a Stop did: runs stopped (here and on the holder, once it answered); `pending` when the holder did not answer in time. */
export interface StopOutcome {
  stopped: number
  /** Sent to the replica that runs the session, which has not answered yet: it stops the run when it hears or renews its lease. */
  pending?: true
}

export class ReplicaStops {
  readonly #waiting = new Map<string, () => void>()
  readonly #unsubscribe: () => void

  constructor(
    private readonly stops: StopRequests,
    private readonly options: {
      /** This replica's name, as in the sessions' leases. */
      replica: string
      /** How long a request lasts: a lease's length, past which the run it was for has lost its lease anyway. */
      ttlMs: number
      /** Stops the session's runs here as a local Stop does; how many. */
      stopHere: (sessionId: string, which: StopWhich) => number
      /** Whether this replica has anything of the session that a Stop could end. */
      has: (sessionId: string) => boolean
    },
  ) {
    this.#unsubscribe = stops.subscribe((notice) => this.#heard(notice))
  }

  /**
   * After this replica stopped what it had (`stoppedHere`): asks the others, and waits for the
   * holder's answer when another replica holds the session.
   */
  async request(sessionId: string, runId: string | undefined, stoppedHere: number): Promise<StopOutcome> {
    const request = await this.stops.request({
      sessionId,
      runId: runId ?? null,
      from: this.options.replica,
      ttlMs: this.options.ttlMs,
    })
    if (request.holder === null || request.holder === this.options.replica) return { stopped: stoppedHere }
    const there = await this.#answer(request.id)
    return there === undefined ? { stopped: stoppedHere, pending: true } : { stopped: stoppedHere + there }
  }

  /** What the holder of a session does after each renewal of its lease taken at `sinceMs`: the requests it did not hear. */
  async check(sessionId: string, sinceMs: number): Promise<void> {
    for (const request of await this.stops.pending(sessionId, sinceMs)) {
      const stopped = this.options.stopHere(sessionId, { ...which(request), leased: true })
      await this.stops.answer(request.id, stopped, { holder: true })
    }
  }

  /** Forgets expired requests (replicas' sweep). */
  forgetExpired(): Promise<number> {
    return this.stops.forgetExpired()
  }

  close(): void {
    this.#unsubscribe()
    for (const wake of this.#waiting.values()) wake()
  }

  #heard(notice: StopNotice) {
    if (notice.type === 'answer') return this.#waiting.get(notice.id)?.()
    const { request } = notice
    if (request.from !== this.options.replica) this.#serve(request)
  }

  /** Another replica's request: the runs it names stop here; the holder answers even when none did. */
  #serve(request: StopRequest) {
    const holder = request.holder === this.options.replica
    if (!holder && !this.options.has(request.sessionId)) return
    const stopped = this.options.stopHere(request.sessionId, which(request))
    if (stopped === 0 && !holder) return
    // The store briefly away: answered once it is back (the asker reads "pending" meanwhile).
    void unlessUnreachable(() => this.stops.answer(request.id, stopped, { holder })).catch(() => {})
  }

  /** The holder's answer, woken by its notice or read now and then; undefined after STOP_ANSWER_MS. */
  async #answer(id: string): Promise<number | undefined> {
    const deadline = Date.now() + STOP_ANSWER_MS
    try {
      for (;;) {
        // Listening first, then reading: an answer between the two is still seen.
        const woken = new Promise<void>((resolve) => this.#waiting.set(id, resolve))
        const stopped = await this.stops.answered(id).catch(() => undefined)
        if (stopped !== undefined) return stopped
        const left = deadline - Date.now()
        if (left <= 0) return undefined
        let timer: NodeJS.Timeout | undefined
        await Promise.race([
          woken,
          new Promise((resolve) => (timer = setTimeout(resolve, Math.min(left, POLL_MS)))),
        ])
        clearTimeout(timer)
      }
    } finally {
      this.#waiting.delete(id)
    }
  }
}

/** What a request stops: the run it names, or what ran in the session when it was asked. */
function which(request: StopRequest): StopWhich {
  return request.runId ? { runId: request.runId } : { askedAtMs: request.requestedAt }
}
