/**
 * The code that turns a fresh Jupyter kernel into an Analyst sandbox (prelude.py as the module
 * `analyst_jupyter`, beside the modules it shares with Analyst's own kernel), and how its cell-end
 * message is read.
 * @module
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))

/** The modules a kernel gets, in order (each may import the ones before it). */
const MODULES: Array<[name: string, file: string]> = [
  ['analyst_data', join(here, '..', 'python', 'analyst_data.py')],
  ['analyst_charts', join(here, '..', 'python', 'analyst_charts.py')],
  ['analyst_commands', join(here, '..', 'python', 'analyst_commands.py')],
  ['analyst_sql', join(here, '..', 'python', 'analyst_sql.py')],
  ['analyst_jupyter', join(here, 'prelude.py')],
]

let sources: Array<[string, string]> | undefined

function moduleSources(): Array<[string, string]> {
  sources ??= MODULES.map(([name, file]) => [name, readFileSync(file, 'utf8')])
  return sources
}

/** The prelude's module, reached without a name in the user's namespace (code may delete names). */
export const MODULE = "__import__('sys').modules['analyst_jupyter']"

/** The comm id of the messages that carry commands' output and exits (see prelude.py). */
export const COMMANDS_COMM = 'analyst-commands'

/** The MIME type of the message the prelude sends after each cell (see prelude.py). */
export const CELL_END_MIME = 'application/vnd.analyst.cell-end+json'

export interface PreludeConfig {
  /** The sandbox's workspace, relative to the kernel's starting directory (or absolute). */
  workspace: string
  /** The working directory, relative to the workspace. */
  cwd: string
  envs: Record<string, string>
  /** Process ids of commands the host started in a kernel that has since restarted: killed now. */
  orphans?: number[]
}

/** One silent cell that defines the modules and then calls `call` on the prelude's module `_m`. */
function withModules(call: string): string {
  return [
    'import sys as _s, types as _t',
    `for _n, _c in ${JSON.stringify(moduleSources())}:`,
    '    _m = _t.ModuleType(_n)',
    "    _m.__file__ = '<%s>' % _n",
    '    _s.modules[_n] = _m',
    "    exec(compile(_c, _m.__file__, 'exec'), _m.__dict__)",
    call,
    'del _s, _t, _m, _n, _c',
  ].join('\n')
}

/** One silent cell that defines the modules and sets the kernel up. */
export function preludeCode(config: PreludeConfig): string {
  return withModules(`_m.setup(__import__('json').loads(${JSON.stringify(JSON.stringify(config))}))`)
}

/**
 * Only the prelude's kernel settings (`quick_cells`: history in memory, no sleep before replies,
 * no empty flushes), nothing of Analyst's results: for the benchmark's baseline client.
 */
export function kernelSettingsCode(): string {
  return withModules("_m.quick_cells(__import__('IPython').get_ipython())")
}

/** The code that sets variables for the next cell only. */
export function cellEnvsCode(envs: Record<string, string>): string {
  return `${MODULE}.cell_envs(__import__('json').loads(${JSON.stringify(JSON.stringify(envs))}))`
}

export interface CellEnd {
  /** [relative path, state, size] of files new or changed since this kernel's last report. */
  changed: Array<[string, string, number]>
  removed: string[]
}

export function cellEndFrom(value: unknown): CellEnd | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { changed, removed } = value as Record<string, unknown>
  if (!Array.isArray(changed) || !Array.isArray(removed)) return undefined
  return {
    changed: changed.filter(
      (item): item is [string, string, number] =>
        Array.isArray(item) &&
        typeof item[0] === 'string' &&
        typeof item[1] === 'string' &&
        typeof item[2] === 'number',
    ),
    removed: removed.filter((name): name is string => typeof name === 'string'),
  }
}
