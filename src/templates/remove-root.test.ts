import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { mountsUnder, removeRoot } from './remove-root.js'

const MOUNTINFO = [
  '22 1 253:0 / / rw,relatime - ext4 /dev/vda rw',
  '40 22 0:5 / /dev/shm rw - tmpfs tmpfs rw',
  '91 22 0:44 / /cache/.partial-1/rootfs/proc ro - proc proc ro',
  '92 22 0:5 / /cache/.partial-1/rootfs/dev/shm rw - tmpfs tmpfs rw',
  '93 22 0:45 / /cache/.partial-1/rootfs/dev/pts rw - devpts none rw',
  '94 22 0:46 / /cache/.partial-10/rootfs/proc ro - proc proc ro',
  '95 22 0:47 / /cache/.partial-1/rootfs/a\\040b rw - tmpfs tmpfs rw',
].join('\n')

describe('removing a root that mounts were left in', () => {
  it('finds the mounts below the folder only, deepest first, with escaped names decoded', () => {
    expect(mountsUnder('/cache/.partial-1', MOUNTINFO)).toEqual([
      '/cache/.partial-1/rootfs/dev/shm',
      '/cache/.partial-1/rootfs/dev/pts',
      '/cache/.partial-1/rootfs/proc',
      '/cache/.partial-1/rootfs/a b',
    ])
    expect(mountsUnder('/cache/.partial-2', MOUNTINFO)).toEqual([])
  })

  it.runIf(process.getuid?.() === 0)(
    'detaches a bind of a host folder before removing, and leaves its files',
    () => {
      const base = mkdtempSync(join(tmpdir(), 'analyst-remove-root-'))
      try {
        const host = join(base, 'host-shm')
        mkdirSync(host)
        writeFileSync(join(host, 'segment'), 'keep me')
        const partial = join(base, '.partial', 'rootfs', 'dev', 'shm')
        mkdirSync(partial, { recursive: true })
        expect(spawnSync('mount', ['--bind', host, partial]).status).toBe(0)
        removeRoot(join(base, '.partial'))
        expect(existsSync(join(base, '.partial'))).toBe(false)
        expect(readFileSync(join(host, 'segment'), 'utf8')).toBe('keep me')
        expect(mountsUnder(base, readFileSync('/proc/self/mountinfo', 'utf8'))).toEqual([])
      } finally {
        rmSync(base, { recursive: true, force: true })
      }
    },
  )
})
