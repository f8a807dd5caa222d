/**
 * A session's lease, held while this process answers one of its questions: replicas over one
 * store answer a session's questions one at a time. Taken when free (or lapsed: its holder died),
 * renewed while the run lives, released at its end. A holder that loses it (it stalled past the
 * lease and another replica took over) aborts its run: two kernels must not write one session.
 * @module
 */
import { hostname } from 'node:os'
import type { HistoryStore } from '../store/index.js'
import { unlessUnreachable } from './outage.js'

/** A name for this process among the replicas, unique even across restarts. */
export function replicaName(): string {
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`
}

/** Waits `ms`, or rejects with the signal's reason. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

export class SessionLease {
  private readonly lost = new AbortController()
  private readonly timer: NodeJS.Timeout
  private released = false

  private constructor(
    private readonly history: HistoryStore,
    readonly sessionId: string,
    readonly holder: string,
    private readonly ttlMs: number,
    /** Who held it before: when another replica, this process's kernel for the session is stale. */
    readonly previous: string | null,
    /** Whether another replica held it when asked, so that this question waited. */
    readonly waited: boolean,
    /** When it was taken, by the database's clock. */
    readonly atMs: number,
    /** Called after each renewal: what the holder checks in the store now and then (Stops it did not hear). */
    private readonly onRenew?: (lease: SessionLease) => Promise<void>,
  ) {
    this.timer = setInterval(() => void this.renew(), Math.max(50, Math.floor(ttlMs / 3)))
    this.timer.unref()
  }

  /** Aborts when the lease is lost. */
  get signal(): AbortSignal {
    return this.lost.signal
  }

  /** Takes the session's lease, waiting while another replica holds it. */
  static async acquire(
    history: HistoryStore,
    sessionId: string,
    holder: string,
    options: {
      ttlMs: number
      signal?: AbortSignal
      pollMs?: number
      onRenew?: (lease: SessionLease) => Promise<void>
    },
  ): Promise<SessionLease> {
    let waited = false
    for (;;) {
      options.signal?.throwIfAborted()
      const grant = await history.acquireLease(sessionId, holder, options.ttlMs)
      if (grant.acquired)
        return new SessionLease(
          history,
          sessionId,
          holder,
          options.ttlMs,
          grant.previous,
          waited,
          grant.atMs,
          options.onRenew,
        )
      waited = true
      await sleep(Math.min(options.pollMs ?? 200, grant.expiresInMs + 10), options.signal)
    }
  }

  private async renew() {
    if (this.released) return
    const kept = await this.history.renewLease(this.sessionId, this.holder, this.ttlMs).catch(() => true)
    if (!kept && !this.released) {
      clearInterval(this.timer)
      this.lost.abort(
        new Error('This replica lost the session to another (it stalled past its lease); the run stops here'),
      )
      return
    }
    if (!this.released) await this.onRenew?.(this).catch(() => {})
  }

  /** Lets the session go: at once, or once the store is reachable again (outage.ts). */
  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    clearInterval(this.timer)
    await unlessUnreachable(() => this.history.releaseLease(this.sessionId, this.holder)).catch(() => {})
  }
}
