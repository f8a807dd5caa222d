import { describe, expect, it } from 'vitest'
import type { AuthChange, AuthChanges } from '../../store/index.js'
import { IdentityCache } from './identity-cache.js'

/** A feed the test drives: it says what changed, and whether it can hear. */
class Feed implements AuthChanges {
  live = true
  readonly listeners = new Set<(change: AuthChange) => void>()
  subscribe(listener: (change: AuthChange) => void) {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
  tell(change: AuthChange) {
    for (const listener of this.listeners) listener(change)
  }
}

function setup(options: { ttlMs?: number; max?: number } = {}) {
  const feed = new Feed()
  let now = 1_000_000
  const cache = new IdentityCache<{ userId: string; keyId?: string }>({
    changes: feed,
    clock: () => now,
    ...options,
  })
  return { feed, cache, advance: (ms: number) => (now += ms) }
}

describe('IdentityCache', () => {
  it('forgets what a change names: a key by id, a user with all their secrets, a session by hash', () => {
    const { feed, cache } = setup()
    cache.put('k1', { userId: 'u1', keyId: 'key-1' }, cache.generation)
    cache.put('k2', { userId: 'u1', keyId: 'key-2' }, cache.generation)
    cache.put('s1', { userId: 'u1' }, cache.generation)
    cache.put('s2', { userId: 'u2' }, cache.generation)
    feed.tell({ kind: 'key', id: 'key-1' })
    expect(cache.get('k1')).toBeUndefined()
    expect(cache.get('k2')).toBeDefined()
    feed.tell({ kind: 'session', id: 's2' })
    expect(cache.get('s2')).toBeUndefined()
    feed.tell({ kind: 'user', id: 'u1' })
    expect([cache.get('k2'), cache.get('s1')]).toEqual([undefined, undefined])
    cache.put('s3', { userId: 'u3' }, cache.generation)
    feed.tell({ kind: 'all' })
    expect(cache.size).toBe(0)
  })

  it('keeps no store read that a change overtook, and nothing while the feed cannot hear', () => {
    const { feed, cache } = setup()
    const before = cache.generation
    feed.tell({ kind: 'user', id: 'someone-else' }) // came while the read was under way
    cache.put('k1', { userId: 'u1' }, before)
    expect(cache.get('k1')).toBeUndefined()
    feed.live = false
    cache.put('k1', { userId: 'u1' }, cache.generation)
    expect(cache.get('k1')).toBeUndefined()
    feed.live = true
    cache.put('k1', { userId: 'u1' }, cache.generation)
    expect(cache.get('k1')).toEqual({ userId: 'u1' })
  })

  it('lets an entry go after its TTL, and the least recently used past its size', () => {
    const { cache, advance } = setup({ ttlMs: 60_000, max: 2 })
    cache.put('a', { userId: 'a' }, cache.generation)
    cache.put('b', { userId: 'b' }, cache.generation)
    expect(cache.get('a')).toBeDefined() // a is now the most recently used
    cache.put('c', { userId: 'c' }, cache.generation)
    expect([cache.get('a'), cache.get('b'), cache.get('c')].map((e) => e?.userId)).toEqual([
      'a',
      undefined,
      'c',
    ])
    advance(60_000)
    expect(cache.get('a')).toBeUndefined()
    expect(cache.size).toBe(1)
  })

  it('keeps nothing with a TTL of 0, and hears nothing once unsubscribed', () => {
    const off = setup({ ttlMs: 0 })
    off.cache.put('a', { userId: 'a' }, off.cache.generation)
    expect(off.cache.size).toBe(0)
    const { feed, cache } = setup()
    cache.unsubscribe()
    expect(feed.listeners.size).toBe(0)
  })
})
