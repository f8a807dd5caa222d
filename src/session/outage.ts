/**
 * Writes that must reach the store even when it is gone for a while (PostgreSQL restarting): how a
 * question ended, and its session's lease let go. Tried now; while the store is unreachable, tried
 * again in the background until it is back, so the request that met the outage is answered at once
 * and the record is made as soon as it can be.
 * @module
 */
import { StoreUnavailableError } from '../errors.js'

/** How often an unreachable store is tried again. */
const RETRY_MS = 500
/** After this long the write is given up: the lease's lapse and the sweep (markInterrupted) end the run. */
const GIVE_UP_MS = 10 * 60_000

/**
 * Does `work`; resolves to `undefined` when it was done, or, when the store was unreachable, to
 * `{ later }`: the background retries (true once done, false when given up). Other errors are thrown.
 */
export async function unlessUnreachable(
  work: () => Promise<unknown>,
  options: { retryMs?: number; giveUpMs?: number } = {},
): Promise<{ later: Promise<boolean> } | undefined> {
  try {
    await work()
    return undefined
  } catch (error) {
    if (!StoreUnavailableError.isInstance(error)) throw error
  }
  const deadline = Date.now() + (options.giveUpMs ?? GIVE_UP_MS)
  const later = (async () => {
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? RETRY_MS).unref())
      try {
        await work()
        return true
      } catch (error) {
        if (!StoreUnavailableError.isInstance(error)) return false
      }
    }
    return false
  })()
  return { later }
}
