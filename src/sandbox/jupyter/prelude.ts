/**
 * The code that turns a fresh Jupyter kernel into an Analyst sandbox (prelude.py with the shared
 * analyst_data.py, as one module `analyst_jupyter`), and how its cell-end message is read.
 * @module
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))

let source: string | undefined

function moduleSource(): string {
  source ??= [
    readFileSync(join(here, '..', 'python', 'analyst_data.py'), 'utf8'),
    readFileSync(join(here, 'prelude.py'), 'utf8'),
  ].join('\n\n')
  return source
}

/** The prelude's module, reached without a name in the user's namespace (code may delete names). */
export const MODULE = "__import__('sys').modules['analyst_jupyter']"

/** The MIME type of the message the prelude sends after each cell (see prelude.py). */
export const CELL_END_MIME = 'application/vnd.analyst.cell-end+json'

export interface PreludeConfig {
  /** The sandbox's workspace, relative to the kernel's starting directory (or absolute). */
  workspace: string
  /** The working directory, relative to the workspace. */
  cwd: string
  envs: Record<string, string>
}

/** One silent cell that defines `analyst_jupyter` and sets the kernel up. */
export function preludeCode(config: PreludeConfig): string {
  return [
    'import sys as _s, types as _t',
    "_m = _t.ModuleType('analyst_jupyter')",
    `exec(compile(${JSON.stringify(moduleSource())}, '<analyst_jupyter>', 'exec'), _m.__dict__)`,
    "_s.modules['analyst_jupyter'] = _m",
    `_m.setup(__import__('json').loads(${JSON.stringify(JSON.stringify(config))}))`,
    'del _s, _t, _m',
  ].join('\n')
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
