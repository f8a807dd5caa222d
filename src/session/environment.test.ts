import { describe, expect, it } from 'vitest'
import { NotFoundError } from '../errors.js'
import { FULL_CAPABILITIES } from '../sandbox/capabilities.js'
import type { SandboxProvider } from '../sandbox/index.js'
import type { BuiltTemplate } from '../templates/types.js'
import { sessionLimits } from './environment.js'

const MiB = 1024 ** 2
const small = { id: 'a'.repeat(64), resources: { memoryBytes: 1000 * MiB, milliCpus: 1000 } } as BuiltTemplate
const templates = {
  resolve: (name: string) => {
    if (name === 'small') return small
    throw new NotFoundError(`No template "${name}"`)
  },
  get: () => undefined,
}
const built = { capabilities: FULL_CAPABILITIES } as SandboxProvider
const named = { capabilities: { ...FULL_CAPABILITIES, templates: 'named' } } as SandboxProvider
const server = { memoryBytes: 1500 * MiB, cpuSeconds: 30 }

describe('sessionLimits', () => {
  it("puts a template's memory and CPUs over the server's defaults, and the caller's over both", () => {
    expect(sessionLimits('small', undefined, server, { provider: built, templates })).toEqual({
      memoryBytes: 1000 * MiB,
      milliCpus: 1000,
      cpuSeconds: 30,
    })
    expect(sessionLimits(small, { memoryBytes: 400 * MiB }, server, { provider: built })).toEqual({
      memoryBytes: 400 * MiB,
      milliCpus: 1000,
      cpuSeconds: 30,
    })
  })

  it("keeps the server's where the template has none, the engine names its own, or the name is unknown", () => {
    expect(sessionLimits(undefined, undefined, server, { provider: built, templates })).toEqual(server)
    expect(sessionLimits('small', undefined, server, { provider: named, templates })).toEqual(server)
    expect(sessionLimits('nope', undefined, server, { provider: built, templates })).toEqual(server)
  })

  it("leaves a door without defaults as it is: the engine puts the template's under its limits", () => {
    const asked = { memoryBytes: 400 * MiB }
    expect(sessionLimits('small', asked, undefined, { provider: built, templates })).toBe(asked)
  })
})
