import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, resolveLimits } from './limits.js'

describe('resolveLimits', () => {
  it('fills in defaults and applies overrides', () => {
    expect(resolveLimits({ processes: 10 })).toEqual({ ...DEFAULT_LIMITS, processes: 10 })
  })

  it('rejects unknown limits and values that are not positive whole numbers, saying what is allowed', () => {
    expect(() => resolveLimits({ memory: 1 } as never)).toThrow(/Unknown limit memory.*/)
    expect(() => resolveLimits({ processes: 0 })).toThrow(/positive whole number/)
    expect(() => resolveLimits({ cpuSeconds: 1.5 })).toThrow(/positive whole number/)
  })
})
