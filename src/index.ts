/**
 * Analyst: an open code interpreter for data analysis.
 *
 * `import { Sandbox } from 'analyst'` gives the sandbox with the local engine as its default.
 * @module
 */
import { local } from './sandbox/local/index.js'
import { Sandbox } from './sandbox/sandbox.js'

Sandbox.defaultProvider ??= local

export * from './sandbox/index.js'
export { LocalProvider, local, localProvider } from './sandbox/local/index.js'
