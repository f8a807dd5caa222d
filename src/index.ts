/**
 * Analyst: an open code interpreter for data analysis.
 *
 * `import { Sandbox } from 'analyst'` gives the sandbox with the local engine as its default.
 * @module
 */
import { local } from './sandbox/local/index.js'
import { Sandbox } from './sandbox/sandbox.js'

Sandbox.defaultProvider ??= local
// Sources by URL (`Sandbox.create({ sources: { shop: 'postgres://…' } })`); their drivers load when used.
Sandbox.openSources ??= async (sources) => {
  const { parseSource, Sources } = await import('./sources/index.js')
  return Sources.open(Object.entries(sources).map(([name, url]) => parseSource(`${name}=${url}`)))
}

export * from './sandbox/index.js'
export { LocalProvider, local, localProvider } from './sandbox/local/index.js'
