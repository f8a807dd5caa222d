import { afterEach, describe, expect, it, vi } from 'vitest'

describe("importing 'analyst'", () => {
  const saved = { ...process.env }
  afterEach(() => {
    process.env = { ...saved }
    vi.resetModules()
  })

  it('works with bad local settings; the default provider says what is wrong when it is first used', async () => {
    process.env.ANALYST_POOL_SIZE = 'lots'
    vi.resetModules()
    const analyst = await import('./index.js')
    const { MockSandboxProvider } = await import('./test/index.js')
    const sandbox = await analyst.Sandbox.create({ provider: new MockSandboxProvider() })
    expect((await sandbox.runCode('x')).logs.stdout).toEqual(['ran 1 characters\n'])
    await expect(analyst.Sandbox.create()).rejects.toMatchObject({
      name: 'InvalidArgumentError',
      message: 'poolSize must be a whole number ≥ 0, not NaN',
    })
  })

  it('with a bad ANALYST_COLD_START too', async () => {
    process.env.ANALYST_COLD_START = 'warp'
    vi.resetModules()
    const analyst = await import('./index.js')
    expect(analyst.Sandbox.defaultProvider?.name).toBe('local')
    await expect(analyst.Sandbox.create()).rejects.toThrow(/coldStart must be 'fork' or 'spawn', not warp/)
  })
})
