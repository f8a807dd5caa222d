/**
 * The local backend: Python kernels in bubblewrap jails on this machine.
 * @module
 */
import { LocalProvider } from './backend.js'

export { LocalProvider, type LocalProviderOptions } from './backend.js'
export { DEFAULT_LIMITS } from './limits.js'
export { findPython, type PythonInfo } from './python.js'

/** The provider `Sandbox.create()` uses by default, with its warm pool. */
export const local = new LocalProvider()
