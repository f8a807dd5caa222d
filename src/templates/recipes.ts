/**
 * The recipes shipped with Analyst (recipes/*.yaml), built by name: `analyst template build modern`.
 * @module
 */
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** recipes/, in src/ or dist/. */
export const RECIPES_DIR = join(dirname(fileURLToPath(import.meta.url)), 'recipes')

/** The names of the shipped recipes. */
export function recipeNames(): string[] {
  return readdirSync(RECIPES_DIR)
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => file.slice(0, -'.yaml'.length))
    .sort()
}

/** The spec file of a shipped recipe, or undefined when there is none of that name. */
export function recipePath(name: string): string | undefined {
  if (!/^[a-z0-9-]+$/.test(name)) return undefined
  const path = join(RECIPES_DIR, `${name}.yaml`)
  return existsSync(path) ? path : undefined
}
