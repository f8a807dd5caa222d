import { describe, expect, it } from 'vitest'
import { executionFix, phraseFix } from '../../fixes.js'
import { outOfMemory } from './out-of-memory.js'

const MiB = 1024 ** 2
const all = { budgetBytes: 420 * MiB, usedBytes: 230 * MiB }
const died = (value: string) => ({ name: 'KernelDied', value })

describe('the words of the limit that ran out, and the fix each door reads from them', () => {
  it("the sandbox's own limit: raise it", () => {
    const words = outOfMemory({ cause: 'own', limitBytes: 768 * MiB, ownBytes: 0, all })
    expect(words).toBe('out of memory: the sandbox may use 768 MiB')
    expect(phraseFix(executionFix(died(words)), 'http')).toMatch(/memoryMB/)
  })

  it('the budget of all sandboxes: what the others use, and to try again (or raise the budget)', () => {
    const words = outOfMemory({ cause: 'budget', limitBytes: 2048 * MiB, ownBytes: 30 * MiB, all })
    expect(words).toBe(
      "out of memory: the memory budget of all sandboxes (ANALYST_MEMORY_BUDGET, 420 MiB) was full, not this sandbox's own limit (2 GiB); the other sandboxes use 200 MiB of it: try again once they have finished or been paused",
    )
    expect(executionFix(died(words))).toEqual({ setting: 'memoryBudget' })
    expect(phraseFix(executionFix(died(words)), 'http')).toMatch(/Try again .*\(ANALYST_MEMORY_BUDGET\)/)
    expect(phraseFix(executionFix(died(words)), 'mcp')).toMatch(/\(ANALYST_MEMORY_BUDGET\)/)
    expect(phraseFix(executionFix(died(words)), 'model')).toMatch(/run the step again/)
    // Without the budget's figures (no parent group to read), the words still say which limit.
    expect(
      executionFix(died(outOfMemory({ cause: 'budget', limitBytes: MiB, ownBytes: 0, all: undefined }))),
    ).toEqual({
      setting: 'memoryBudget',
    })
  })

  it('the machine itself: a budget that fits in it', () => {
    const words = outOfMemory({ cause: 'host', limitBytes: 2048 * MiB, ownBytes: 0, all })
    expect(words).toMatch(
      /the machine ran out of memory, not this sandbox's own limit \(2 GiB\) nor the memory budget/,
    )
    expect(executionFix(died(words))).toEqual({ setting: 'hostMemory' })
  })
})
