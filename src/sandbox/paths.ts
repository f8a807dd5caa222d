/**
 * Paths as every engine shows them: the workspace is `/home/user` (E2B's home), inputs are under
 * `data/`, and a path given to the files API is relative to the workspace or absolute inside it.
 * @module
 */
import { statSync } from 'node:fs'
import { posix } from 'node:path'
import { InvalidArgumentError, NotFoundError } from './errors.js'

/** The working directory of code, as the files API and artifacts name it on every engine. */
export const SANDBOX_HOME = '/home/user'

function escapes(path: string): InvalidArgumentError {
  return new InvalidArgumentError(`${path} is outside the sandbox's workspace`, {
    hint: `Use a path relative to the workspace (${SANDBOX_HOME}), e.g. 'out/result.csv' or 'data/input.csv'.`,
  })
}

/** The sandbox's own temporary folder, which the local engine's files API reaches too (E2B's tests use it). */
export const SANDBOX_TMP = '/tmp'

/** `path` is `root` or under it, written absolute. */
export function isUnder(path: string, root: string): boolean {
  return typeof path === 'string' && (path === root || path.startsWith(`${root}/`))
}

/**
 * A sandbox path → components under `root` (the workspace, or SANDBOX_TMP). `data/...` is the
 * workspace's read-only input area. Relative paths are the workspace's.
 */
export function splitPath(path: string, root = SANDBOX_HOME): { area: 'work' | 'data'; parts: string[] } {
  if (typeof path !== 'string' || path.includes('\0')) throw escapes(String(path))
  let relative = path
  if (path.startsWith('/') || root !== SANDBOX_HOME) {
    if (!isUnder(path, root)) throw escapes(path)
    relative = path.slice(root.length)
  }
  const normal = posix.normalize(`./${relative}`)
  if (normal === '..' || normal.startsWith('../')) throw escapes(path)
  const parts = normal.split('/').filter((part) => part && part !== '.')
  if (parts[0] === 'data' && root === SANDBOX_HOME) return { area: 'data', parts: parts.slice(1) }
  return { area: 'work', parts }
}

/** Checks a data file to add (a plain name under data/, a host file that exists); its size. */
export function dataFileSize(hostPath: string, name: string): number {
  if (!name || name.includes('/') || name === '.' || name === '..') {
    throw new InvalidArgumentError(`${JSON.stringify(name)} is not a valid file name for data/`)
  }
  try {
    return statSync(hostPath).size
  } catch (cause) {
    throw new NotFoundError(`${hostPath}: no such file`, { cause, hint: 'Check the path of the data file.' })
  }
}
