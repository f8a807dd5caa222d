/**
 * Identities already resolved (an API key or a browser session, with its user), by the SHA-256 of
 * their secret, so that a request reads no store. It is only a copy: the store's change feed
 * drops an entry the moment its key is revoked, its user changes or its session ends, here or on
 * another replica; while the feed is not live nothing is kept. Only good identities are kept (a
 * refusal always asks the store), at most `max` of them, the least recently used going first,
 * each for at most `ttlMs`: a safety net, should a change ever go unheard.
 * @module
 */
import type { AuthChange, AuthChanges } from '../../store/index.js'

export interface CachedIdentity {
  userId: string
  /** An API key's id: what a revocation names. */
  keyId?: string
}

export interface IdentityCacheOptions {
  changes: AuthChanges
  /** @default 60 s; 0 keeps nothing */
  ttlMs?: number
  /** @default 10 000 */
  max?: number
  /** @default Date.now */
  clock?: () => number
}

export class IdentityCache<T extends CachedIdentity> {
  readonly #entries = new Map<string, { value: T; at: number }>()
  readonly #changes: AuthChanges
  readonly #ttlMs: number
  readonly #max: number
  readonly #clock: () => number
  /** Counts changes: a store read that a change overtook is not kept (it may be what changed). */
  #generation = 0
  readonly unsubscribe: () => void

  constructor(options: IdentityCacheOptions) {
    this.#changes = options.changes
    this.#ttlMs = options.ttlMs ?? 60_000
    this.#max = options.max ?? 10_000
    this.#clock = options.clock ?? Date.now
    this.unsubscribe = options.changes.subscribe((change) => this.forget(change))
  }

  get size(): number {
    return this.#entries.size
  }

  /** Taken before a store read, given back to `put`. */
  get generation(): number {
    return this.#generation
  }

  get(hash: string): T | undefined {
    const entry = this.#entries.get(hash)
    if (!entry) return undefined
    this.#entries.delete(hash)
    if (this.#clock() - entry.at >= this.#ttlMs) return undefined
    this.#entries.set(hash, entry) // most recently used last
    return entry.value
  }

  /** Keeps what a store read found, unless a change came since `generation` or no change can be heard. */
  put(hash: string, value: T, generation: number): void {
    if (generation !== this.#generation || !this.#changes.live || this.#ttlMs <= 0) return
    this.#entries.delete(hash)
    this.#entries.set(hash, { value, at: this.#clock() })
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value as string)
  }

  delete(hash: string): void {
    this.#entries.delete(hash)
  }

  forget(change: AuthChange): void {
    this.#generation++
    if (change.kind === 'all') this.#entries.clear()
    else if (change.kind === 'session') this.#entries.delete(change.id)
    else
      for (const [hash, { value }] of this.#entries)
        if (change.kind === 'user' ? value.userId === change.id : value.keyId === change.id)
          this.#entries.delete(hash)
  }
}
