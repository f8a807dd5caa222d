// A CPU cgroup of its own for one side of a benchmark, with the default weight podman gives a
// container (cgroup v1 cpu.shares 1024, v2 cpu.weight 100). Why: a process in the root CPU cgroup
// is scheduled by autogroup, one group per session, and every sandbox's bubblewrap starts a
// session (--new-session): a burst of 50 sandboxes on the host then weighs 50 groups against the
// machine's other work, while the same burst in a container weighs one (bench/RESULTS.md,
// 2026-12-03). In a group of its own each, the host and the container compete alike.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** The cpu hierarchy's root and the file a process is moved with, or undefined (no cpu controller we can use). */
function hierarchy() {
  if (existsSync('/sys/fs/cgroup/cpu/cpu.shares')) return { root: '/sys/fs/cgroup/cpu', version: 1 }
  const controllers = '/sys/fs/cgroup/cgroup.subtree_control'
  if (existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('cpu'))
    return { root: '/sys/fs/cgroup', version: 2 }
  return undefined
}

/** This process's cgroup in that hierarchy, to come back to. */
function ownCgroup(version) {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [id, controllers, path] = line.split(':')
    if (version === 2 ? id === '0' : controllers?.split(',').includes('cpu')) return path
  }
  return '/'
}

/**
 * Runs fn (synchronous: its children are spawned and waited for inside) with this process in a
 * new CPU cgroup; children inherit it. Returns { value, grouped }: grouped false where no cgroup
 * could be made (not root, or no cpu controller), and fn ran where this process is.
 */
export function inCpuGroup(name, fn) {
  const found = hierarchy()
  const back = found && join(found.root, ownCgroup(found.version), 'cgroup.procs')
  let dir = found && join(found.root, `${name}-${process.pid}`)
  if (dir) {
    try {
      mkdirSync(dir)
      writeFileSync(join(dir, 'cgroup.procs'), String(process.pid))
    } catch {
      if (existsSync(dir)) rmdirSync(dir)
      dir = undefined
    }
  }
  try {
    return { value: fn(), grouped: Boolean(dir) }
  } finally {
    if (dir) {
      writeFileSync(back, String(process.pid))
      remove(dir)
    }
  }
}

/** A sandbox's last process may still be exiting: try for a few seconds, then leave it. */
function remove(dir) {
  const deadline = Date.now() + 5000
  for (;;) {
    try {
      return rmdirSync(dir)
    } catch (error) {
      if (error.code !== 'EBUSY' || Date.now() > deadline) return
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50)
    }
  }
}
