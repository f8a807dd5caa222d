/**
 * A kernel restart done elsewhere, told to this page, whose grids then say that their tables are
 * gone (as after its own Restart):
 *
 * - in another tab of this browser: that tab says so on a BroadcastChannel, and this page hears
 *   it at once (same origin only; no request);
 * - in another browser, through any replica: seen when this page comes back into view (its tab
 *   shown again, its window focused), by asking the server whether a kernel holds the session's
 *   state now (GET /api/sessions/:id/kernel: one read, the kernel not asked). A person looks at a
 *   page again before they read its grids, and nothing is asked while no one comes back: no
 *   polling, and no stream held open per tab (which would need each replica to watch the store for
 *   another's restart).
 * @module
 */
import { json } from './api.js'

const CHANNEL = 'analyst-kernel'

/** Why a grid's table is gone, as its grid says it. */
export type KernelGone = 'restarted' | 'not-running'

/**
 * This page's one channel to the other tabs, where the browser has one: one object both says and
 * hears, and a channel object does not hear what it says itself.
 */
let tabs: BroadcastChannel | null | undefined
function channel(): BroadcastChannel | undefined {
  tabs ??= typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel(CHANNEL)
  return tabs ?? undefined
}

/** Tells this browser's other tabs that this page restarted the session's kernel. */
export function tellRestarted(sessionId: string): void {
  channel()?.postMessage({ restarted: sessionId })
}

/**
 * Calls `gone` when the kernel of the session shown (`shown()`, null when none, or when it has no
 * table to tell) is found restarted elsewhere; returns what stops listening.
 */
export function watchKernelElsewhere(
  shown: () => string | null,
  gone: (why: KernelGone) => void,
): () => void {
  const heard = (event: MessageEvent<{ restarted?: unknown }>) => {
    if (shown() !== null && event.data?.restarted === shown()) gone('restarted')
  }
  channel()?.addEventListener('message', heard)
  let asking = false
  // A tab shown again fires both events: one request.
  const look = () => {
    const id = shown()
    if (id === null || asking || document.visibilityState !== 'visible') return
    asking = true
    json<{ running: boolean }>(`/api/sessions/${encodeURIComponent(id)}/kernel`)
      .then(
        ({ running }) => {
          if (!running && shown() === id) gone('not-running')
        },
        // Unreachable now: the grids find out at their next request.
        () => undefined,
      )
      .finally(() => {
        asking = false
      })
  }
  document.addEventListener('visibilitychange', look)
  window.addEventListener('focus', look)
  return () => {
    channel()?.removeEventListener('message', heard)
    document.removeEventListener('visibilitychange', look)
    window.removeEventListener('focus', look)
  }
}
