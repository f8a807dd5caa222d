/**
 * A queue between a driver's callbacks and an async iterator: pushed items wait until they are
 * read, an error ends the reading, and `onRead` tells the producer when to send more.
 * @module
 */

export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = []
  #waiting: { resolve: (result: IteratorResult<T>) => void; reject: (error: unknown) => void } | undefined
  #ended = false
  #error: unknown
  #failed = false

  constructor(
    private readonly hooks: {
      /** After an item was taken: the producer may send more. */
      onRead?: () => void
      /** The reader stopped before the end (a cap, a break). */
      onReturn?: () => void
    } = {},
  ) {}

  get length(): number {
    return this.#items.length
  }

  push(item: T): void {
    if (this.#ended) return
    const waiting = this.#waiting
    if (waiting) {
      this.#waiting = undefined
      waiting.resolve({ value: item, done: false })
      this.hooks.onRead?.()
    } else this.#items.push(item)
  }

  end(): void {
    this.#ended = true
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.resolve({ value: undefined, done: true })
  }

  fail(error: unknown): void {
    if (this.#ended) return
    this.#ended = true
    this.#failed = true
    this.#error = error
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.reject(error)
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.#items.shift()
        if (item !== undefined) {
          this.hooks.onRead?.()
          return Promise.resolve({ value: item, done: false })
        }
        if (this.#failed) return Promise.reject(this.#error)
        if (this.#ended) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve, reject) => {
          this.#waiting = { resolve, reject }
        })
      },
      return: () => {
        if (!this.#ended) {
          this.#ended = true
          this.hooks.onReturn?.()
        }
        return Promise.resolve({ value: undefined, done: true })
      },
    }
  }
}
