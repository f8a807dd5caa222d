/**
 * The local engine: Python kernels in bubblewrap jails on this machine.
 * @module
 */
import type { SandboxProvider } from '../backend.js'
import { LocalProvider } from './backend.js'

export { DEFAULT_LIMITS } from '../kernel/limits.js'
export { LocalProvider, type LocalProviderOptions } from './backend.js'
export { findPython, type PythonInfo } from './python.js'

let shared: LocalProvider | undefined

/**
 * The provider `Sandbox.create()` uses by default, with its warm pool. Made on first use: its
 * settings (ANALYST_POOL_SIZE, ANALYST_COLD_START) are read then, so a bad one fails the first
 * sandbox made with it, not every import of Analyst.
 */
export function localProvider(): LocalProvider {
  shared ??= new LocalProvider()
  return shared
}

/** The default provider, `localProvider()` behind the spec: nothing is made until it is used. */
export const local: SandboxProvider = {
  specificationVersion: 'v1',
  name: 'local',
  doCreate: (options) => localProvider().doCreate(options),
  warm: (options) => localProvider().warm(options),
  close: async () => shared?.close(),
}
