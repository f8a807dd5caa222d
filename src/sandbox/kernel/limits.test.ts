import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, parseCpus, parseSize, resolveLimits, sandboxResources } from './limits.js'

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

describe('sizes, cores and the environment', () => {
  it.each([
    ['512M', 512 * 1024 ** 2],
    ['2g', 2 * 1024 ** 3],
    ['1.5GiB', 1.5 * 1024 ** 3],
    ['2048 MB', 2 * 1024 ** 3],
    ['1000', 1000],
    ['lots', undefined],
    ['0G', undefined],
    ['-1G', undefined],
  ])('parseSize(%j)', (text, bytes) => expect(parseSize(text)).toBe(bytes))

  it('parseCpus: cores to thousandths, positive only', () => {
    expect([parseCpus('1.5'), parseCpus('2'), parseCpus('0.25'), parseCpus('0'), parseCpus('')]).toEqual([
      1500,
      2000,
      250,
      undefined,
      undefined,
    ])
  })

  it("a door's flags first, else ANALYST_SANDBOX_MEMORY and _CPUS; a wrong value names the variable", () => {
    const env = { ANALYST_SANDBOX_MEMORY: '1G', ANALYST_SANDBOX_CPUS: '0.5' }
    expect(sandboxResources({}, env)).toEqual({ memoryBytes: 1024 ** 3, milliCpus: 500 })
    expect(sandboxResources({ memoryBytes: 5 }, env)).toEqual({ memoryBytes: 5, milliCpus: 500 })
    expect(sandboxResources({}, {})).toEqual({})
    expect(() => sandboxResources({}, { ANALYST_SANDBOX_CPUS: 'all' })).toThrow(
      /ANALYST_SANDBOX_CPUS must be/,
    )
  })
})
