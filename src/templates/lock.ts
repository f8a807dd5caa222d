/**
 * A lock between processes on one host: a folder that names its holder. Builds take it around
 * what two of them must not make at once (a cached base root).
 * @module
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { ownerAlive, ownerTag } from '../sandbox/local/runtime.js'

/** Takes a lock folder, waiting while a live process holds it; a dead holder's lock is taken over. */
export async function holdLock(lock: string, signal?: AbortSignal): Promise<() => void> {
  for (;;) {
    try {
      mkdirSync(lock)
      writeFileSync(join(lock, 'owner'), ownerTag)
      return () => rmSync(lock, { recursive: true, force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let holder = ''
    try {
      holder = readFileSync(join(lock, 'owner'), 'utf8')
    } catch {}
    // No owner yet: its holder is between mkdir and write, or died there (taken over once it is old).
    if (holder ? !ownerAlive(holder) : lockAge(lock) > 10_000) rmSync(lock, { recursive: true, force: true })
    else await sleep(500, undefined, { signal })
  }
}

function lockAge(lock: string): number {
  try {
    return Date.now() - statSync(lock).mtimeMs
  } catch {
    return 0
  }
}
