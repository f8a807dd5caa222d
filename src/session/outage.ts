/**
 * Writes that must reach the store even when it cannot take them for a while (PostgreSQL
 * restarting, the disk under SQLite full): how a question ended, and its session's lease let go.
 * Tried now; while the store cannot write, tried again in the background until it can, so the
 * request that met the outage is answered at once and the record is made as soon as it can be.
 * @module
 */
import { DiskFullError, StoreUnavailableError } from '../errors.js'

/** The store cannot write now, and will once it is back or space is freed. */
export function isOutage(error: unknown): boolean {
  return StoreUnavailableError.isInstance(error) || DiskFullError.isInstance(error)
}

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
    if (!isOutage(error)) throw error
  }
  const deadline = Date.now() + (options.giveUpMs ?? GIVE_UP_MS)
  const later = (async () => {
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? RETRY_MS).unref())
      try {
        await work()
        return true
      } catch (error) {
        if (!isOutage(error)) return false
      }
    }
    return false
  })()
  return { later }
}
