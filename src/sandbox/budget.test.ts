import { describe, expect, it } from 'vitest'
import { MemoryBudget, type Resident } from './budget.js'
import { CapacityError } from './errors.js'

const MiB = 1024 ** 2

/** Sandboxes that each hold `mib`, measured together against a budget of 1000 MiB. */
function world(sizes: Record<string, number>) {
  const held = new Map(Object.entries(sizes))
  const busy = new Set<string>()
  const evicted: string[] = []
  const budget = new MemoryBudget(
    () => ({ budgetBytes: 1000 * MiB, usedBytes: [...held.values()].reduce((a, b) => a + b, 0) * MiB }),
    { intervalMs: 60_000, reserveBytes: 100 * MiB },
  )
  const handles = new Map(
    Object.keys(sizes).map((name) => {
      const resident: Resident = {
        owner: name.startsWith('mine') ? 'me' : 'them',
        describe: () => `session ${name}`,
        busy: () => busy.has(name),
        evict: async () => {
          held.delete(name)
          evicted.push(name)
        },
        memoryBytes: () => (held.get(name) ?? 0) * MiB,
      }
      return [name, budget.add(resident)]
    }),
  )
  return { budget, busy, evicted, handles }
}

describe('MemoryBudget', () => {
  it('admits without pausing while there is room under the high water', async () => {
    const { budget, evicted } = world({ mine1: 300, other: 300 })
    await budget.admit('me')
    expect(evicted).toEqual([])
    budget.close()
  })

  it('pauses idle sandboxes least recently used first, passing over busy ones, until one more fits', async () => {
    const { budget, busy, evicted, handles } = world({ mine1: 300, other: 300, mine2: 300 })
    handles.get('mine1')?.touch() // now the most recent: other, then mine2, are older
    busy.add('other')
    await budget.admit('me')
    expect(evicted).toEqual(['mine2'])
    budget.close()
  })

  it('refuses with 503 and Retry-After when nothing idle is left, naming only the owner’s sandboxes', async () => {
    const { budget, busy } = world({ mine1: 450, other: 450 })
    busy.add('mine1')
    busy.add('other')
    const error = await budget.admit('me').catch((e: unknown) => e)
    expect(CapacityError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ status: 503, retryAfterSeconds: expect.any(Number) })
    expect((error as Error).message).toMatch(/900 MiB of their 1000 MiB memory budget/)
    expect((error as Error).message).toContain('Yours: session mine1, 450 MiB, busy.')
    expect((error as Error).message).not.toContain('session other')
    budget.close()
  })
})
