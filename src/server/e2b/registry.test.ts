/**
 * The registry's record of a sandbox's cells, kept for replay after a pause: bounded, as the
 * session kernel's kept cells are (kernel/kept-cells.ts), however long the sandbox lives.
 */
import { describe, expect, it } from 'vitest'
import { MockSandboxProvider } from '../../test/mock-sandbox.js'
import { Registry } from './registry.js'
import type { ServedSandbox } from './served.js'

describe('the cells an E2B sandbox keeps for replay', () => {
  it('stops keeping them past the cap, and then refuses a pause with why', async () => {
    const registry = new Registry(new MockSandboxProvider(() => []))
    const sandbox = { kill: async () => {} } as unknown as ServedSandbox
    const entry = registry.add(
      {
        id: 'isbx',
        owner: null,
        templateID: 'base',
        sandbox,
        envs: {},
        network: false,
        limits: {},
        autoPause: false,
        autoResume: false,
        metadata: {},
      },
      300,
    )
    try {
      const cell = { contextId: 'default', code: 'x = x + 1', envs: {}, language: 'python' as const }
      for (let i = 0; i < 10_000; i++) registry.record(entry, cell)
      expect(entry.cells).toHaveLength(10_000)
      for (let i = 0; i < 5_000; i++) registry.record(entry, cell)
      expect(entry.cells).toHaveLength(0)
      await expect(registry.pause(entry)).rejects.toThrow(/more than 10000 cells .* too many to replay/)
    } finally {
      await registry.kill(entry.id)
    }
  })
})
