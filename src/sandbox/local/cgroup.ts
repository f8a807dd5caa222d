/**
 * Per-sandbox cgroups (root only): memory and process limits that hold for all of a sandbox's
 * processes together, which rlimits (per process) cannot, and what they use (CPU time, memory).
 * cgroup v1 or v2, whichever the host delegates; where neither is writable the sandbox runs with
 * rlimits alone.
 * @module
 */
import { chownSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface Cgroup {
  /** Folders created, one per controller hierarchy. */
  paths: string[]
  /** `cgroup.procs` files the sandbox's first process writes its pid to. */
  procsFiles: string[]
  /** How many times the kernel's OOM killer has fired in this cgroup. */
  oomKills(): number
  /** CPU time of all its processes so far (undefined where CPU is not accounted), and memory in bytes. */
  usage(): CgroupUsage
  remove(): void
}

export interface CgroupUsage {
  cpuSeconds?: number
  memoryBytes: number
  /** The page cache within memoryBytes (files, the workspace's tmpfs). */
  cacheBytes: number
}

function ownPath(controller: string): string | undefined {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':')
    if (controllers === undefined || path === undefined) continue
    if (controller === '' ? line.startsWith('0::') : controllers.split(',').includes(controller)) return path
  }
  return undefined
}

function readCount(file: string, key: string): number {
  try {
    const match = readFileSync(file, 'utf8').match(new RegExp(`^${key} (\\d+)`, 'm'))
    return match ? Number(match[1]) : 0
  } catch {
    return 0
  }
}

function readNumber(file: string): number | undefined {
  try {
    const value = Number(readFileSync(file, 'utf8').trim())
    return Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value)
    return true
  } catch {
    return false
  }
}

function removeDirs(paths: string[]) {
  for (const path of paths) {
    try {
      rmdirSync(path)
    } catch {
      // busy for a moment after its last process died; the runtime sweep removes it later
    }
  }
}

function v1(name: string, memoryBytes: number, processes: number, uid: number): Cgroup | undefined {
  const created: string[] = []
  try {
    const dirs: Record<string, string> = {}
    for (const controller of ['memory', 'pids']) {
      const own = ownPath(controller)
      const base = `/sys/fs/cgroup/${controller}`
      if (own === undefined || !existsSync(join(base, 'cgroup.procs'))) return undefined
      const dir = join(base, own, `analyst-${name}`)
      mkdirSync(dir)
      created.push(dir)
      dirs[controller] = dir
    }
    const memory = dirs.memory as string
    const pids = dirs.pids as string
    if (!tryWrite(join(memory, 'memory.limit_in_bytes'), String(memoryBytes))) throw new Error('memory')
    tryWrite(join(memory, 'memory.memsw.limit_in_bytes'), String(memoryBytes))
    if (!tryWrite(join(pids, 'pids.max'), String(processes))) throw new Error('pids')
    // CPU time where the host lets us account it; the limits hold without it.
    const cpu = cpuacctV1(name)
    if (cpu) created.push(cpu)
    const procsFiles = created.map((dir) => join(dir, 'cgroup.procs'))
    for (const file of procsFiles) chownSync(file, uid, uid)
    return {
      paths: created,
      procsFiles,
      oomKills: () => readCount(join(memory, 'memory.oom_control'), 'oom_kill'),
      usage: () => {
        const nanoseconds = cpu ? readNumber(join(cpu, 'cpuacct.usage')) : undefined
        const stat = join(memory, 'memory.stat')
        return {
          cpuSeconds: nanoseconds === undefined ? undefined : nanoseconds / 1e9,
          memoryBytes: readNumber(join(memory, 'memory.usage_in_bytes')) ?? 0,
          cacheBytes: readCount(stat, 'total_cache') || readCount(stat, 'cache'),
        }
      },
      remove: () => removeDirs(created),
    }
  } catch {
    removeDirs(created)
    return undefined
  }
}

function cpuacctV1(name: string): string | undefined {
  const own = ownPath('cpuacct')
  const base = '/sys/fs/cgroup/cpuacct'
  if (own === undefined || !existsSync(join(base, 'cgroup.procs'))) return undefined
  const dir = join(base, own, `analyst-${name}`)
  try {
    mkdirSync(dir)
    return dir
  } catch {
    return undefined
  }
}

function v2(name: string, memoryBytes: number, processes: number, uid: number): Cgroup | undefined {
  const own = ownPath('')
  const mount = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((dir) =>
    existsSync(join(dir, 'cgroup.controllers')),
  )
  if (own === undefined || mount === undefined) return undefined
  const dir = join(mount, own, `analyst-${name}`)
  try {
    mkdirSync(dir)
  } catch {
    return undefined
  }
  const ok =
    tryWrite(join(dir, 'memory.max'), String(memoryBytes)) &&
    tryWrite(join(dir, 'pids.max'), String(processes))
  if (!ok) {
    removeDirs([dir])
    return undefined
  }
  tryWrite(join(dir, 'memory.swap.max'), '0')
  const procs = join(dir, 'cgroup.procs')
  chownSync(procs, uid, uid)
  return {
    paths: [dir],
    procsFiles: [procs],
    oomKills: () => readCount(join(dir, 'memory.events'), 'oom_kill'),
    usage: () => ({
      cpuSeconds: readCount(join(dir, 'cpu.stat'), 'usage_usec') / 1e6,
      memoryBytes: readNumber(join(dir, 'memory.current')) ?? 0,
      cacheBytes: readCount(join(dir, 'memory.stat'), 'file'),
    }),
    remove: () => removeDirs([dir]),
  }
}

/** A cgroup with the sandbox's memory and process limits, or undefined where none can be made. */
export function createCgroup(
  name: string,
  memoryBytes: number,
  processes: number,
  uid: number,
): Cgroup | undefined {
  if (process.geteuid?.() !== 0) return undefined
  return v1(name, memoryBytes, processes, uid) ?? v2(name, memoryBytes, processes, uid)
}
