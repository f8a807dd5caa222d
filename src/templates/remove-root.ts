/**
 * Removing a root file system that a killed mmdebstrap may have left mounts in. mmdebstrap runs on
 * the host and mounts /proc, /sys, /dev/pts and /dev/shm in the root it makes; killed at a build's
 * time limit or on a cancel (SIGKILL), it cannot take them down, and that /dev/shm is the host's
 * own. A plain recursive delete would then walk into the host's shared memory (PostgreSQL's
 * segments, for one) and remove it. So mounts below the folder are detached first, deepest first,
 * and the folder is removed without crossing into another file system.
 * @module
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'

/** The mount points at or below `dir` (deepest first), from a mountinfo table. */
export function mountsUnder(dir: string, mountinfo: string): string[] {
  const root = resolve(dir)
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => Boolean(point))
    .map((point) =>
      point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))),
    )
    .filter((point) => point === root || point.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length)
}

/** Removes `dir`, first detaching whatever is mounted below it; never leaves its own file system. */
export function removeRoot(dir: string): void {
  if (!existsSync(dir)) return
  for (const point of mountsUnder(dir, readFileSync('/proc/self/mountinfo', 'utf8'))) {
    spawnSync('umount', ['--lazy', point], { stdio: 'ignore' })
  }
  const removed = spawnSync('rm', ['-rf', '--one-file-system', '--', dir], { stdio: 'ignore' })
  // No GNU rm (or it failed): only when nothing is mounted below any more is a plain delete safe.
  if (removed.status !== 0 && mountsUnder(dir, readFileSync('/proc/self/mountinfo', 'utf8')).length === 0) {
    rmSync(dir, { recursive: true, force: true })
  }
}
