/**
 * Where the kernel's Python lives, in src/ or dist/ alike: analyst_kernel.py and its matplotlib
 * backend here, the modules every engine shares (src/sandbox/python: charts, commands, data), and
 * the compatibility shims (src/pylib). An engine puts them all in one folder of its sandbox.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PYLIB_DIR } from '../../python.js'

const here = dirname(fileURLToPath(import.meta.url))

/** analyst_kernel.py and the modules beside it. */
export const KERNEL_PYTHON_DIR = join(here, 'python')
/** The other languages' kernels (R, JavaScript), which analyst_languages.py starts from the same folder. */
export const KERNEL_LANGUAGES_DIR = join(here, 'languages')

/** Every folder whose .py files the kernel imports, in the order a later one wins. */
export const KERNEL_SOURCE_DIRS: readonly string[] = [
  PYLIB_DIR,
  join(here, '..', 'python'),
  KERNEL_PYTHON_DIR,
  KERNEL_LANGUAGES_DIR,
]

/** The kernels' own files: Python modules, and the R and JavaScript kernels. */
const KERNEL_FILE = /\.(py|R|mjs)$/

/** Each .py file the kernel needs, by name (the same name in two folders: the later folder's). */
export function kernelSourceFiles(dirs: readonly string[] = KERNEL_SOURCE_DIRS): Map<string, string> {
  const files = new Map<string, string>()
  for (const dir of dirs) {
    for (const name of readdirSync(dir).filter((file) => KERNEL_FILE.test(file)))
      files.set(name, join(dir, name))
  }
  return files
}

/** The kernel's files as text, by name: for an engine that sends them into its sandbox. */
export function kernelSources(): Record<string, string> {
  return Object.fromEntries(
    [...kernelSourceFiles()].map(([name, path]) => [name, readFileSync(path, 'utf8')]),
  )
}
