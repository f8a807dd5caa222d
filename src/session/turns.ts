/**
 * The questions of one session take turns, in the order they arrived: a question waits for the
 * one before it to end, and hands over to the next when it ends (or gives up its place).
 * @module
 */
export interface Turn {
  /** Whether a question was ahead of this one when it arrived. */
  queued: boolean
  /** Resolves when the questions ahead have ended. */
  ready: Promise<void>
  /** Ends this turn (or gives up the place in line); the next question goes once those ahead have ended. */
  release(): void
}

export class Turns {
  private tail: Promise<void> = Promise.resolve()
  /** Questions waiting or running. */
  pending = 0

  take(): Turn {
    const ahead = this.tail
    let handOver = () => {}
    this.tail = new Promise<void>((resolve) => {
      handOver = resolve
    })
    const queued = this.pending > 0
    this.pending++
    let released = false
    return {
      queued,
      ready: ahead,
      release: () => {
        if (released) return
        released = true
        this.pending--
        // Giving up a place while those ahead still run must not let the next one pass them.
        void ahead.then(handOver)
      },
    }
  }
}

/** Waits for the promise, or rejects with the signal's reason when it aborts first. */
export function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise
  signal.throwIfAborted()
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
