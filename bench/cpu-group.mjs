// A CPU cgroup of its own for one side of a benchmark, with the default weight podman gives a
// container (cgroup v1 cpu.shares 1024, v2 cpu.weight 100), and the CPU time used in it. Why: a
// process in the root CPU cgroup is scheduled by autogroup, one group per session, and every
// sandbox's bubblewrap starts a session (--new-session): a burst of 50 sandboxes on the host then
// weighs 50 groups against the machine's other work, while the same burst in a container weighs
// one (bench/RESULTS.md, 2026-12-03). In a group of its own each, both sides compete alike.
import { existsSync, mkdirSync, readFileSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'

const V2 = '/sys/fs/cgroup'

/** The folders a new group is made in: v1's cpu and cpuacct hierarchies (maybe one), or v2's. */
function hierarchies() {
  if (existsSync(`${V2}/cpu/cpu.shares`)) {
    const roots = [`${V2}/cpu`, `${V2}/cpuacct`].filter(existsSync).map((path) => realpathSync(path))
    return { version: 1, roots: [...new Set(roots)] }
  }
  const controllers = `${V2}/cgroup.subtree_control`
  if (existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('cpu'))
    return { version: 2, roots: [V2] }
  return undefined
}

/** This process's cgroup path for one v1 controller ('' for v2's unified line). */
function ownPath(controller) {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [id, controllers, path] = line.split(':')
    if (controller === '' ? id === '0' && controllers === '' : controllers?.split(',').includes(controller))
      return path
  }
  return '/'
}

/** v1's folders are named by their controllers (cpu, cpuacct, or both: "cpu,cpuacct"). */
function ownPathUnder(root, version) {
  return ownPath(version === 2 ? '' : basename(root).split(',')[0])
}

/**
 * Runs fn (synchronous: its children are spawned and waited for inside) with this process in a
 * new CPU cgroup; children inherit it. Returns { value, grouped }: grouped false where no cgroup
 * could be made (not root, or no cpu controller), and fn ran where this process is.
 */
export function inCpuGroup(name, fn) {
  const found = hierarchies()
  const moves = []
  try {
    for (const root of found?.roots ?? []) {
      const dir = join(root, `${name}-${process.pid}`)
      const back = join(root, ownPathUnder(root, found.version), 'cgroup.procs')
      mkdirSync(dir)
      moves.push({ dir, back })
      writeFileSync(join(dir, 'cgroup.procs'), String(process.pid))
    }
  } catch {
    undo(moves)
    return { value: fn(), grouped: false }
  }
  try {
    return { value: fn(), grouped: moves.length > 0 }
  } finally {
    undo(moves)
  }
}

function undo(moves) {
  for (const { dir, back } of moves.reverse()) {
    try {
      writeFileSync(back, String(process.pid))
    } catch {
      // never moved in
    }
    remove(dir)
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

/**
 * CPU time used so far by every process of this process's cgroup, in ms, or undefined. Only
 * meaningful in a group of the side's own (inCpuGroup's, or a container's: there the cgroup file
 * system shows the container's own group at its top).
 */
export function groupCpuMs() {
  const v1 = `${V2}/cpuacct`
  if (existsSync(`${v1}/cpuacct.usage`)) {
    const own = join(v1, ownPath('cpuacct'), 'cpuacct.usage')
    const file = ownPath('cpuacct') !== '/' && existsSync(own) ? own : `${v1}/cpuacct.usage`
    return Number(readFileSync(file, 'utf8')) / 1e6
  }
  const own = join(V2, ownPath(''), 'cpu.stat')
  const file = existsSync(own) ? own : `${V2}/cpu.stat`
  const usec = readFileSync(file, 'utf8').match(/^usage_usec (\d+)/m)?.[1]
  return usec === undefined ? undefined : Number(usec) / 1000
}
