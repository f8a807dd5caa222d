/**
 * Where InfiAgent-DABench lives (never copied into the repository): $DABENCH_DIR, else
 * ../shared/datasets/dabench beside the project, else /work/shared/datasets/dabench.
 * Undefined when none exists; suites that need it skip, saying why.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'

const ROOT = resolve(import.meta.dirname, '../..')

export const DABENCH: string | undefined = [
  process.env.DABENCH_DIR,
  join(ROOT, '../shared/datasets/dabench'),
  '/work/shared/datasets/dabench',
].find((dir): dir is string => Boolean(dir) && existsSync(join(dir as string, 'tables')))

export const DABENCH_MISSING = 'InfiAgent-DABench not found: set DABENCH_DIR to its folder'
