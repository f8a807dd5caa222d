/**
 * What a finished template holds, read inside it: its Python's version, the versions of the main
 * analysis packages (for the prompt, `%pip` and `template show`), R's where R is there, and the
 * languages its kernels can speak.
 * @module
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { TemplateBuildError } from '../errors.js'
import type { CommandResult } from './process.js'
import type { TemplateLanguage } from './types.js'

/** The packages whose versions a template's manifest records (their distribution names). */
export const MAIN_PYTHON_PACKAGES = [
  'pandas',
  'numpy',
  'matplotlib',
  'scipy',
  'scikit-learn',
  'statsmodels',
  'seaborn',
  'plotly',
  'geopandas',
  'xgboost',
  'polars',
  'pyarrow',
  'duckdb',
  'openpyxl',
]
export const MAIN_R_PACKAGES = ['IRkernel', 'tidyverse', 'dplyr', 'ggplot2', 'data.table', 'readr', 'tidyr']

const PROBE = `
import importlib.metadata as m, json, sys
names = ${JSON.stringify(MAIN_PYTHON_PACKAGES)}
found = {}
for name in names:
    try:
        found[name] = m.version(name)
    except Exception:
        pass
print(json.dumps({"python": "%d.%d.%d" % sys.version_info[:3], "packages": found}))
`

const R_PROBE = `cat("R", paste(R.version$major, R.version$minor, sep = "."), "\\n"); for (p in c(${MAIN_R_PACKAGES.map((p) => `"${p}"`).join(', ')})) { v <- suppressWarnings(packageDescription(p, fields = "Version")); if (!is.na(v)) cat(p, v, "\\n") }`

export interface Inspected {
  pythonVersion: string
  packages: Record<string, string>
  languages: TemplateLanguage[]
}

/** Reads versions by running the template's own interpreters (through `run`, in the build jail). */
export async function inspectTemplate(options: {
  python: string
  run: (command: string[]) => Promise<CommandResult>
  /** The template's root; undefined over the host. */
  root?: string
}): Promise<Inspected> {
  const result = await options.run([options.python, '-I', '-c', PROBE])
  const line = result.tail.find((text) => text.startsWith('{'))
  if (result.code !== 0 || !line)
    throw new TemplateBuildError(
      `the template's Python (${options.python}) does not run: ${result.tail.slice(-3).join(' ')}`,
      {
        log: result.tail,
        hint: 'The kernel needs python3 in the template: install python3 (apt) in it.',
      },
    )
  const probe = JSON.parse(line) as { python: string; packages: Record<string, string> }
  // Debian's builds carry its repackaging in a local version (2.2.3+dfsg): the upstream version is what code is written for.
  const packages = Object.fromEntries(
    Object.entries(probe.packages).map(([name, version]) => [
      name,
      version.replace(/\+(dfsg|ds)[0-9.]*$/, ''),
    ]),
  )
  const has = (path: string) => existsSync(options.root ? join(options.root, path) : path)
  const languages: TemplateLanguage[] = ['python']
  if (has('usr/bin/Rscript') && options.root) {
    const r = await options.run(['/usr/bin/Rscript', '--vanilla', '-e', R_PROBE])
    for (const text of r.code === 0 ? r.tail : []) {
      const [name, version] = text.trim().split(/\s+/)
      if (name && version) packages[name] = version
    }
    languages.push('r')
  }
  if (options.root && (has('usr/bin/node') || has('usr/local/bin/node'))) languages.push('js', 'ts')
  if (has(options.root ? 'bin/bash' : '/bin/bash')) languages.push('bash')
  return { pythonVersion: probe.python, packages, languages }
}
