/**
 * Events that a model call or a cell produces through callbacks while it runs, drained by the
 * loop's async generator until the work settles.
 * @module
 */
import type { AgentEvent } from './events.js'

export class EventQueue {
  private items: AgentEvent[] = []
  private wake: (() => void) | undefined
  push(event: AgentEvent) {
    this.items.push(event)
    this.wake?.()
  }
  /** Yields what was pushed, as it comes, until `until` settles (its outcome is the caller's). */
  async *drain(until: Promise<unknown>): AsyncGenerator<AgentEvent> {
    let settled = false
    const settle = () => {
      settled = true
      this.wake?.()
    }
    until.then(settle, settle)
    for (;;) {
      while (this.items.length > 0) yield this.items.shift() as AgentEvent
      if (settled) return
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
      this.wake = undefined
    }
  }
}
