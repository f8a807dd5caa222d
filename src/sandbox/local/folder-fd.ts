/**
 * Reading a workspace through open folders: `/proc/self/fd/N/<name>` with O_NOFOLLOW (the
 * equivalent of openat), so code that plants links or swaps folders can never lead the host
 * outside it.
 * @module
 */
import { closeSync, constants, openSync, readdirSync } from 'node:fs'

export const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW

export interface FolderEntry {
  name: string
  isFile: boolean
  isDirectory: boolean
  isLink: boolean
}

/** The path of `name` inside an open folder; a Buffer name keeps bytes that are not UTF-8. */
export function at(dirFd: number, name: string): string
export function at(dirFd: number, name: string | Buffer): string | Buffer
export function at(dirFd: number, name: string | Buffer): string | Buffer {
  return typeof name === 'string'
    ? `/proc/self/fd/${dirFd}/${name}`
    : Buffer.concat([Buffer.from(`/proc/self/fd/${dirFd}/`), name])
}

/**
 * The entries of an open folder whose names are valid UTF-8 (others cannot be named through the
 * files API; code can still use them). Read as bytes so such a name cannot break the listing.
 */
export function entriesOf(dirFd: number): FolderEntry[] {
  const entries: FolderEntry[] = []
  for (const entry of readdirSync(`/proc/self/fd/${dirFd}`, { withFileTypes: true, encoding: 'buffer' })) {
    const raw = entry.name as unknown as Buffer
    const name = raw.toString('utf8')
    if (!Buffer.from(name, 'utf8').equals(raw)) continue
    entries.push({
      name,
      isFile: entry.isFile(),
      isDirectory: entry.isDirectory(),
      isLink: entry.isSymbolicLink(),
    })
  }
  return entries
}

/**
 * Calls `use` with the folder `name` of an open folder, opened without following a link, and
 * closes it after; `missing` when it cannot be opened (gone, or swapped for a link).
 */
export function inFolder<T>(dirFd: number, name: string, use: (fd: number) => T, missing: T): T {
  let child: number
  try {
    child = openSync(at(dirFd, name), DIR_FLAGS)
  } catch {
    return missing
  }
  try {
    return use(child)
  } finally {
    closeSync(child)
  }
}
