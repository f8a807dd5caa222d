/**
 * The memory budget of a door's sandboxes (sessions and E2B's sandboxes alike), over an engine
 * that measures what they use together (the local engine's parent cgroup). Before the budget is
 * reached, idle ones are paused, least recently used first: their kernels end, and their state is
 * rebuilt by replay at their next use. When nothing idle is left, a new sandbox or question is
 * refused at once (503 with Retry-After), saying what uses the memory: never a wait without end,
 * never someone else's session taken down.
 * @module
 */
import { formatBytes } from './cell-output.js'
import { CapacityError } from './errors.js'

/** What all sandboxes use together, against their budget; undefined when it cannot be known now. */
export type MemoryMeter = () => { budgetBytes: number; usedBytes: number } | undefined

/** A sandbox that can be paused to free its memory. */
export interface Resident {
  owner: string | null
  /** Names it in a refusal: `session 3f2a1b2c ("Sales by region")`. */
  describe(): string
  /** Working now (a question, a cell, a request in flight): not paused. */
  busy(): boolean
  /** Ends its kernel; its state is rebuilt at its next use. */
  evict(): Promise<void>
  /** The memory its sandbox uses now, where the engine says. */
  memoryBytes?(): number | undefined
}

export interface MemoryBudgetOptions {
  /** Idle sandboxes are paused once their total passes this share of the budget. @default 0.9 */
  highWater?: number
  /** What a sandbox about to start is expected to need at first. @default 64 MiB */
  reserveBytes?: number
  /** How often the total is looked at between requests (two small files read). @default 250 ms */
  intervalMs?: number
  /** Told of each sandbox paused to free memory. */
  onEvicted?(resident: Resident): void
}

/** How long a refused client should wait before it tries again: a cell or a question ends by then, often. */
const RETRY_AFTER_SECONDS = 10

export interface ResidentHandle {
  /** It was used now: the last to be paused. */
  touch(): void
  /** It is gone (closed, killed, paused): no longer counted. */
  remove(): void
}

export class MemoryBudget {
  /** Each sandbox, with when it was last used (a count: two uses in one millisecond still have an order). */
  private readonly residents = new Map<Resident, number>()
  private uses = 0
  private readonly highWater: number
  private readonly reserveBytes: number
  private readonly timer: NodeJS.Timeout
  /** One round of pausing at a time, in turn: two at once would pause more than needed. */
  private rounds: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly meter: MemoryMeter,
    private readonly options: MemoryBudgetOptions = {},
  ) {
    this.highWater = options.highWater ?? 0.9
    this.reserveBytes = options.reserveBytes ?? 64 * 1024 ** 2
    this.timer = setInterval(() => void this.free(0).catch(() => {}), options.intervalMs ?? 250)
    this.timer.unref()
  }

  add(resident: Resident): ResidentHandle {
    this.residents.set(resident, ++this.uses)
    return {
      touch: () => {
        if (this.residents.has(resident)) this.residents.set(resident, ++this.uses)
      },
      remove: () => {
        this.residents.delete(resident)
      },
    }
  }

  /**
   * Room for one more sandbox of `owner` (a new one, or one paused that is to be rebuilt): idle
   * ones are paused for it if need be; refused with CapacityError when none is left to pause.
   */
  async admit(owner: string | null): Promise<void> {
    if (await this.free(this.reserveBytes)) return
    const memory = this.meter()
    if (!memory) return
    throw new CapacityError(this.refusal(memory, owner), { retryAfterSeconds: RETRY_AFTER_SECONDS })
  }

  /** Pauses idle sandboxes, least recently used first, until `more` fits under the high water; false if it cannot. */
  private free(more: number): Promise<boolean> {
    const round = this.rounds.then(() => this.pauseUntilFits(more))
    this.rounds = round.catch(() => false)
    return round
  }

  private async pauseUntilFits(more: number): Promise<boolean> {
    for (;;) {
      const memory = this.meter()
      if (!memory || memory.usedBytes + more <= memory.budgetBytes * this.highWater) return true
      const idle = [...this.residents].filter(([resident]) => !resident.busy()).sort((a, b) => a[1] - b[1])
      const oldest = idle[0]?.[0]
      if (!oldest) return false
      this.residents.delete(oldest)
      await oldest.evict().catch(() => {})
      this.options.onEvicted?.(oldest)
    }
  }

  private refusal(memory: { budgetBytes: number; usedBytes: number }, owner: string | null): string {
    const mine = [...this.residents.keys()].filter((resident) => resident.owner === owner)
    const listed = mine.slice(0, 10).map((resident) => {
      const bytes = resident.memoryBytes?.()
      return `${resident.describe()}${bytes ? `, ${formatBytes(bytes)}` : ''}${resident.busy() ? ', busy' : ''}`
    })
    const yours =
      mine.length === 0
        ? 'None of them is yours.'
        : `Yours: ${listed.join('; ')}${mine.length > listed.length ? ` and ${mine.length - listed.length} more` : ''}.`
    return `The server's sandboxes use ${formatBytes(memory.usedBytes)} of their ${formatBytes(memory.budgetBytes)} memory budget, and none is idle to pause for another. ${yours}`
  }

  /** Sandboxes counted now. */
  get size(): number {
    return this.residents.size
  }

  close() {
    clearInterval(this.timer)
  }
}
