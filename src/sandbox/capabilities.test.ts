import { describe, expect, it } from 'vitest'
import { assertSupported, capabilitiesOf, FULL_CAPABILITIES, missingCapabilities } from './capabilities.js'

describe('capabilities', () => {
  it('are complete for a provider that declares none, and nothing is said', () => {
    expect(capabilitiesOf({})).toBe(FULL_CAPABILITIES)
    expect(missingCapabilities(FULL_CAPABILITIES)).toEqual([])
  })

  it('say, one sentence each, what an engine does not enforce', () => {
    const missing = missingCapabilities({
      networkIsolation: false,
      hostIsolation: true,
      readOnlyData: false,
      limits: ['outputBytes', 'resultBytes'],
      fullTeardown: true,
      homeWorkspace: false,
      abortInterrupts: false,
      filesDuringCells: true,
      hostQueries: true,
      terminals: false,
      templates: 'none',
    })
    expect(missing).toEqual([
      'network access is not blocked by Analyst',
      'data files are not read-only for code',
      'limits not enforced: memoryBytes, processes, fileSizeBytes, workspaceBytes, cpuSeconds, openFiles',
      "code sees its workspace at the engine's own path, not /home/user (the files API still names it /home/user)",
      'an aborted cell runs on until its timeout (the next cell waits for it)',
      'commands cannot run in a pseudo-terminal (pty)',
      "Analyst's templates cannot be used (--template)",
    ])
  })

  it('refuse a template where the engine has none, and a built one where it takes names', () => {
    const built = { id: 'a'.repeat(64) } as never
    expect(() => assertSupported('local', FULL_CAPABILITIES, { template: 'modern' })).not.toThrow()
    expect(() => assertSupported('local', FULL_CAPABILITIES, { template: built })).not.toThrow()
    const none = { ...FULL_CAPABILITIES, templates: 'none' as const }
    expect(() => assertSupported('modal', none, { template: 'modern' }, 'Use the local engine.')).toThrow(
      expect.objectContaining({
        message: 'The modal engine cannot start a sandbox from a template yet',
        hint: 'Use the local engine.',
      }),
    )
    expect(() => assertSupported('modal', none, {})).not.toThrow()
    const named = { ...FULL_CAPABILITIES, templates: 'named' as const }
    expect(() => assertSupported('e2b', named, { template: 'my-e2b-template' })).not.toThrow()
    expect(() => assertSupported('e2b', named, { template: built })).toThrow(/by name/)
  })

  it('refuse a limit given explicitly that the engine cannot enforce, and accept the rest', () => {
    const capabilities = { ...FULL_CAPABILITIES, limits: ['outputBytes' as const] }
    expect(() => assertSupported('remote', capabilities, { limits: { outputBytes: 1024 } })).not.toThrow()
    expect(() =>
      assertSupported('remote', capabilities, { limits: { memoryBytes: 1, cpuSeconds: 2 } }),
    ).toThrow('The remote engine cannot enforce limits.memoryBytes, limits.cpuSeconds')
  })
})
