/**
 * Waiting for a state instead of assuming it: on a loaded machine a process, a file or a count
 * arrives later than on a quiet one. Poll until the state holds; fail, naming it, at a deadline
 * that only a broken system reaches.
 * @module
 */

export interface WaitOptions {
  /** What is awaited, for the failure message; a function can describe the state found at the deadline. */
  what: string | (() => string)
  /** @default 30_000 */
  timeoutMs?: number
  /** @default 50 */
  intervalMs?: number
}

/** Calls `check` until it returns (or resolves to) a truthy value, and returns that value. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { what, timeoutMs = 30_000, intervalMs = 50 }: WaitOptions,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as NonNullable<T>
    if (Date.now() >= deadline) {
      const described = typeof what === 'function' ? what() : what
      throw new Error(`Timed out after ${timeoutMs / 1000} s waiting for ${described}`)
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
