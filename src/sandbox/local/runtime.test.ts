import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { MOUNT_MARK, sweepStale } from './runtime.js'

const isRoot = process.geteuid?.() === 0
const mounted = (path: string) => readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${path} `)
const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) {
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const path = line.split(' ')[4]
      if (path?.startsWith(root)) execFileSync('umount', ['-l', path])
    }
    rmSync(root, { recursive: true, force: true })
  }
})

/** The folder of a process that died (kill -9) with its sandbox's workspace mounted. */
function deadOwnersSandbox(marked: boolean): { root: string; work: string } {
  const root = mkdtempSync(join(tmpdir(), 'analyst-sweep-'))
  roots.push(root)
  const dir = join(root, '999999999-1', 'sb-0123456789ab')
  const work = join(dir, 'work')
  mkdirSync(work, { recursive: true })
  if (marked) writeFileSync(join(dir, MOUNT_MARK), '')
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', work])
  return { root, work }
}

describe.runIf(isRoot)('the sweep of what dead processes left', () => {
  it('unmounts a marked workspace and removes the folder', () => {
    const { root, work } = deadOwnersSandbox(true)
    sweepStale(root)
    expect(mounted(work)).toBe(false)
    expect(existsSync(join(root, '999999999-1'))).toBe(false)
  })

  it('never throws on what it cannot remove (a mount it did not know of): it is left for later', () => {
    const { root, work } = deadOwnersSandbox(false)
    expect(() => sweepStale(root)).not.toThrow()
    expect(mounted(work)).toBe(true)
  })
})
