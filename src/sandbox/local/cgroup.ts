/**
 * Cgroups (root only). Every sandbox of this process lives under one parent group, whose memory
 * limit is the memory budget of all of them together and whose CPU weight is below the host
 * process's; each sandbox has a group of its own under it with its memory, process and CPU limits,
 * which hold for all of its processes together (rlimits, per process, cannot), and what it uses.
 * cgroup v1 or v2, whichever the host delegates; where neither is writable the sandbox runs with
 * rlimits alone.
 * @module
 */
import {
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmdirSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { totalmem } from 'node:os'
import { join } from 'node:path'
import { parseSize } from '../kernel/limits.js'
import { ownerAlive, ownerTag } from './runtime.js'

export interface Cgroup {
  /** Folders created, one per controller hierarchy. */
  paths: string[]
  /** `cgroup.procs` files the sandbox's first process writes its pid to. */
  procsFiles: string[]
  /** How many times the kernel's OOM killer has fired in this cgroup. */
  oomKills(): number
  /** The memory counters now, to tell later which limit an OOM kill came from (`oomCause`). */
  memoryMark(): MemoryMark
  /**
   * Which limit made the OOM killer take a process of this sandbox since `mark`; undefined where
   * it took none.
   */
  oomCause(mark: MemoryMark): OomCause | undefined
  /** CPU time of all its processes so far (undefined where CPU is not accounted), and memory in bytes. */
  usage(): CgroupUsage
  /** The CPU time alone: one small file read, not three (checked at each cell). */
  cpuSeconds(): number | undefined
  /** Its CPU weight once its kernel has started: it starts at the host's, so that a start never queues behind busy sandboxes. */
  settle(): void
  /**
   * Into the batch class and out of it (cpu.idle): a sandbox whose cell has been busy for a while
   * gives way at once to any other sandbox that wakes, and still takes the CPU that no one else
   * wants. Its weight comes back as it was.
   */
  batch(on: boolean): void
  remove(): void
}

export interface CgroupUsage {
  cpuSeconds?: number
  memoryBytes: number
  /** The page cache within memoryBytes (files, the workspace's tmpfs). */
  cacheBytes: number
}

/**
 * Which limit ran out when the OOM killer took a sandbox's process: its own (`--memory`), the
 * budget of all sandboxes together (ANALYST_MEMORY_BUDGET, the parent group's limit), or neither
 * (the host or its container was out of memory).
 */
export type OomCause = 'own' | 'budget' | 'host'

/** Counters that only rise, read at one moment (`memoryMark`). */
export interface MemoryMark {
  oomKills: number
  /** Times the sandbox's own limit was the one reached (v2 only; v1 reads its peak instead). */
  ownLimit: number
  /** Times the budget (the parent group's limit) was reached. */
  budget: number
}

export interface CgroupLimits {
  memoryBytes: number
  processes: number
  /** CPU time per wall-clock second, in thousandths of a core; 0: no quota. */
  milliCpus: number
}

/**
 * CPU weights, as v1's cpu.shares (v2's cpu.weight is a tenth of it, rounded: it takes only whole
 * numbers, and refused 102.4, 51.2 and 25.6 unseen). The host process has the
 * default (1024): all sandboxes together weigh half of it, so that four busy sandboxes leave the
 * server (and the kernels it forks) its share; a sandbox that is starting weighs as much as the
 * host, and so does their parent while one starts (at half, a start waited behind every busy
 * process outside the sandboxes: 0.71× the create time at load 9 with the parent at the host's).
 */
const SANDBOXES_SHARES = 512
const SANDBOX_SHARES = 256
const STARTING_SHARES = 1024
/** Where the kernel has no cpu.idle (before 5.15): the lowest weight, which is close. */
const BATCH_SHARES = 2

/**
 * Where the cgroup files are: the system's, or a folder laid out as they are (a test's, for the
 * hierarchy this host does not mount: cgroup v2 where v1 holds the memory controller).
 */
export interface CgroupRoot {
  /** What /proc/self/cgroup says: this process's group in each hierarchy. */
  self: string
  /** Where the hierarchies are mounted. */
  mount: string
  /** Makes a group's folder: in cgroupfs the kernel fills it with the group's files; elsewhere they must be made. */
  mkdir(dir: string): void
}

const SYSTEM: CgroupRoot = {
  self: '/proc/self/cgroup',
  mount: '/sys/fs/cgroup',
  mkdir: (dir) => mkdirSync(dir),
}

function ownPath(controller: string, root: CgroupRoot): string | undefined {
  for (const line of readFileSync(root.self, 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':')
    if (controllers === undefined || path === undefined) continue
    if (controller === '' ? line.startsWith('0::') : controllers.split(',').includes(controller)) return path
  }
  return undefined
}

function readCount(file: string, key: string): number {
  try {
    return countIn(readFileSync(file, 'utf8'), key)
  } catch {
    return 0
  }
}

const COUNT_PATTERNS = new Map<string, RegExp>()

function countIn(text: string | undefined, key: string): number {
  let pattern = COUNT_PATTERNS.get(key)
  if (!pattern) {
    pattern = new RegExp(`^${key} (\\d+)`, 'm')
    COUNT_PATTERNS.set(key, pattern)
  }
  const match = text?.match(pattern)
  return match ? Number(match[1]) : 0
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

/**
 * A sandbox's counter files, kept open: each cell reads (and v1 resets) some of them at its start
 * and its end, and opening a file deep in cgroupfs costs several times reading it (40–120 µs
 * against 4–15 µs, measured at load 12). Read at offset 0, a cgroup file says what it says now.
 * Closed with the group; after that, each call opens the file again.
 */
class CounterFiles {
  /** An open file, or null where there is none (v1's memsw files without swap accounting). */
  private readonly fds = new Map<string, number | null>()
  private readonly buffer: Buffer
  private closed = false

  /** `bytes`: what most of its files hold, so that one read takes each (v1's memory.stat is ~1.2 kB). */
  constructor(bytes = 1024) {
    this.buffer = Buffer.alloc(bytes)
  }

  private fd(file: string, flags: 'r' | 'r+'): number | null {
    let fd = this.fds.get(file)
    if (fd !== undefined) return fd
    try {
      fd = openSync(file, flags)
    } catch (error) {
      // Tried again at the next call unless the file is not there (out of descriptors, say).
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return null
      fd = null
    }
    this.fds.set(file, fd)
    return fd
  }

  read(file: string): string | undefined {
    if (this.closed) {
      try {
        return readFileSync(file, 'utf8')
      } catch {
        return undefined
      }
    }
    const fd = this.fd(file, 'r')
    if (fd === null) return undefined
    try {
      let text = ''
      for (let at = 0; ; ) {
        const read = readSync(fd, this.buffer, 0, this.buffer.length, at)
        text += this.buffer.toString('utf8', 0, read)
        // A cgroup file gives all it holds to one read large enough: a short read is the end.
        if (read < this.buffer.length) return text
        at += read
      }
    } catch {
      return undefined
    }
  }

  count(file: string, key: string): number {
    return countIn(this.read(file), key)
  }

  number(file: string): number | undefined {
    const text = this.read(file)
    const value = Number(text?.trim())
    return text === undefined || !Number.isFinite(value) ? undefined : value
  }

  write(file: string, value: string): boolean {
    if (this.closed) return tryWrite(file, value)
    const fd = this.fd(file, 'r+')
    if (fd === null) return false
    try {
      writeSync(fd, value, 0)
      return true
    } catch {
      return false
    }
  }

  close() {
    this.closed = true
    for (const fd of this.fds.values()) if (fd !== null) closeSync(fd)
    this.fds.clear()
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

// ------------------------------------------------------------------ the budget

/** The memory this process may use as its container sees it: the host's, or a cgroup limit above it. */
function memoryAvailable(root: CgroupRoot): number {
  let limit = totalmem()
  const v1 = ownPath('memory', root)
  if (v1 !== undefined) {
    // v1 reports no limit as a huge number; a limit on an ancestor shows in hierarchical_memory_limit.
    // In a container, /proc/self/cgroup names the host's path while the hierarchy's mount is the
    // container's own group (podman: 640 MiB there under --memory 640m): read both.
    const mount = join(root.mount, 'memory')
    for (const own of [join(mount, v1), mount]) {
      const hierarchical = readCount(join(own, 'memory.stat'), 'hierarchical_memory_limit')
      for (const value of [readNumber(join(own, 'memory.limit_in_bytes')), hierarchical])
        if (value && value > 0 && value < limit) limit = value
    }
  }
  const v2 = ownPath('', root)
  if (v2 !== undefined) {
    // Up to the root of the group namespace (a container's: its own limit), which says "max" where none.
    for (let path = v2; ; path = path.slice(0, path.lastIndexOf('/')) || '/') {
      const value = readNumber(join(root.mount, path, 'memory.max'))
      if (value && value < limit) limit = value
      if (path === '/') break
    }
  }
  return limit
}

/**
 * The memory all of this process's sandboxes may use together: ANALYST_MEMORY_BUDGET (a size, or
 * a percentage of what the host or its container has), by default 80% of it.
 */
export function memoryBudget(env: NodeJS.ProcessEnv = process.env, root = SYSTEM): number {
  const given = env.ANALYST_MEMORY_BUDGET?.trim()
  const available = memoryAvailable(root)
  if (!given) return Math.floor(available * 0.8)
  const percent = /^(\d+(?:\.\d+)?)%$/.exec(given)
  const bytes = percent ? Math.floor((available * Number(percent[1])) / 100) : parseSize(given)
  if (!bytes) {
    throw new Error(
      `ANALYST_MEMORY_BUDGET must be a size such as 16G or a percentage such as 80%, not ${given}`,
    )
  }
  return bytes
}

/**
 * The OOM kills counted in the memory group this process runs in, for sandboxes without a group of
 * their own (a container that delegates none, a host process that is not root): there a kernel
 * taken by the container's limit is told from one killed by hand. In a container the group is the
 * mount's root (v1 shows the host's path in /proc/self/cgroup, not mounted inside). Undefined
 * where no count can be read.
 */
export function enclosingOomKills(root = SYSTEM): number | undefined {
  const files: string[] = []
  const v1 = ownPath('memory', root)
  if (v1 !== undefined)
    files.push(
      join(root.mount, 'memory', v1, 'memory.oom_control'),
      join(root.mount, 'memory', 'memory.oom_control'),
    )
  const v2 = ownPath('', root)
  if (v2 !== undefined) files.push(join(root.mount, v2, 'memory.events'), join(root.mount, 'memory.events'))
  const file = files.find((path) => existsSync(path))
  return file === undefined ? undefined : readCount(file, 'oom_kill')
}

// ------------------------------------------------------------------ the parent group

interface Parent {
  version: 1 | 2
  /** By controller (v1: memory, pids, cpu, cpuacct; v2: ''), where sandboxes' groups are made. */
  dirs: Map<string, string>
  budgetBytes: number
  /** Sandboxes made and not yet settled: while there are any, the parent weighs as much as the host. */
  starting: number
  root: CgroupRoot
  /** Its memory counters, kept open: the budget looks at them every 250 ms and at each admission. */
  files: CounterFiles
}

/** The parent's CPU weight, as cpu.shares (v1) or cpu.weight (v2), where the cpu controller is there. */
function parentShares(found: Parent, shares: number) {
  const cpu = found.version === 1 ? found.dirs.get('cpu') : found.dirs.get('')
  if (!cpu) return
  if (found.version === 1) tryWrite(join(cpu, 'cpu.shares'), String(shares))
  else tryWrite(join(cpu, 'cpu.weight'), String(Math.round(shares / 10)))
}

/** One sandbox starts (true) or has started or gone (false). */
function starting(found: Parent, on: boolean) {
  found.starting += on ? 1 : -1
  if (on && found.starting === 1) parentShares(found, STARTING_SHARES)
  if (!on && found.starting === 0) parentShares(found, SANDBOXES_SHARES)
}

let parent: Parent | undefined | null

/** The folder of this process's sandboxes in one hierarchy. */
const parentName = (tag: string) => `analyst-${tag}`

/** Parents of processes that died: their sandboxes' groups first, then the parent. */
function sweepParents(base: string) {
  try {
    for (const entry of readdirSync(base)) {
      const tag = /^analyst-(\d+-\d+)$/.exec(entry)?.[1]
      if (!tag || ownerAlive(tag)) continue
      const dir = join(base, entry)
      for (const child of readdirSync(dir, { withFileTypes: true })) {
        if (child.isDirectory()) removeDirs([join(dir, child.name)])
      }
      removeDirs([dir])
    }
  } catch {
    // not ours to read: nothing to sweep
  }
}

function makeParentV1(budgetBytes: number, root: CgroupRoot): Parent | undefined {
  const dirs = new Map<string, string>()
  try {
    for (const controller of ['memory', 'pids', 'cpu', 'cpuacct']) {
      const own = ownPath(controller, root)
      const base = join(root.mount, controller)
      if (own === undefined || !existsSync(join(base, 'cgroup.procs'))) {
        if (controller === 'memory' || controller === 'pids') throw new Error(controller)
        continue // CPU weight and accounting where the host lets us; the limits hold without them
      }
      const at = join(base, own)
      sweepParents(at)
      const dir = join(at, parentName(ownerTag))
      if (!existsSync(dir)) root.mkdir(dir)
      dirs.set(controller, dir)
    }
    const memory = dirs.get('memory') as string
    if (!tryWrite(join(memory, 'memory.limit_in_bytes'), String(budgetBytes))) throw new Error('memory')
    const cpu = dirs.get('cpu')
    if (cpu) tryWrite(join(cpu, 'cpu.shares'), String(SANDBOXES_SHARES))
    return { version: 1, dirs, budgetBytes, starting: 0, root, files: new CounterFiles(4096) }
  } catch {
    removeDirs([...dirs.values()])
    return undefined
  }
}

/** The leaf the processes of the server's v2 group move into, so that the group can delegate. */
export const SERVER_LEAF = 'analyst-server'

/** Controllers whose lines are in a group's file (`cgroup.controllers`, `cgroup.subtree_control`). */
function controllersIn(file: string): Set<string> {
  try {
    // (A folder standing in for cgroupfs keeps what was written: `+memory`.)
    return new Set(
      readFileSync(file, 'utf8')
        .split(/\s+/)
        .filter(Boolean)
        .map((name) => name.replace(/^\+/, '')),
    )
  } catch {
    return new Set()
  }
}

/**
 * Hands `wanted` (those the group has) down to the children of v2 group `dir`; false where a
 * `required` one cannot be. v2 lets no group both hold processes and delegate a controller (the
 * "no internal processes" rule; the root of the hierarchy alone is exempt): in a container the
 * server usually sits at its group namespace's root beside the other processes there, which
 * delegates nothing. As runc, systemd and a pod's containerd do, they all move into a leaf then
 * (`analyst-server`), and the controllers are delegated beside it.
 */
export function delegateControllers(
  dir: string,
  wanted: string[],
  required: string[],
  root: CgroupRoot = SYSTEM,
): boolean {
  const subtree = join(dir, 'cgroup.subtree_control')
  const available = controllersIn(join(dir, 'cgroup.controllers'))
  if (!required.every((name) => available.has(name))) return false
  const missing = () => wanted.filter((name) => available.has(name) && !controllersIn(subtree).has(name))
  const enable = () =>
    tryWrite(
      subtree,
      missing()
        .map((name) => `+${name}`)
        .join(' '),
    )
  if (missing().length === 0 || enable()) return required.every((name) => controllersIn(subtree).has(name))
  // Not the hierarchy's root (which has no cgroup.type) and holding processes: move them, retried
  // for those forked meanwhile (a pid that exits in between cannot be moved, and need not be).
  const procs = join(dir, 'cgroup.procs')
  if (existsSync(join(dir, 'cgroup.type'))) {
    const leaf = join(dir, SERVER_LEAF)
    try {
      if (!existsSync(leaf)) root.mkdir(leaf)
    } catch {
      return false
    }
    for (let round = 0; round < 5; round++) {
      const pids = readFileSync(procs, 'utf8').split('\n').filter(Boolean)
      if (pids.length === 0) break
      for (const pid of pids) tryWrite(join(leaf, 'cgroup.procs'), pid)
    }
    enable()
  }
  return required.every((name) => controllersIn(subtree).has(name))
}

function makeParentV2(budgetBytes: number, root: CgroupRoot): Parent | undefined {
  const own = ownPath('', root)
  const mount = [root.mount, join(root.mount, 'unified')].find((dir) =>
    existsSync(join(dir, 'cgroup.controllers')),
  )
  if (own === undefined || mount === undefined) return undefined
  const at = join(mount, own)
  if (!delegateControllers(at, ['memory', 'pids', 'cpu'], ['memory', 'pids'], root)) return undefined
  sweepParents(at)
  const dir = join(at, parentName(ownerTag))
  try {
    if (!existsSync(dir)) root.mkdir(dir)
  } catch {
    return undefined
  }
  if (!tryWrite(join(dir, 'memory.max'), String(budgetBytes))) {
    removeDirs([dir])
    return undefined
  }
  // Sandboxes' own groups get the controllers the parent has; cpu where delegated.
  tryWrite(join(dir, 'cgroup.subtree_control'), '+memory +pids')
  if (tryWrite(join(dir, 'cgroup.subtree_control'), '+cpu'))
    tryWrite(join(dir, 'cpu.weight'), String(Math.round(SANDBOXES_SHARES / 10)))
  return {
    version: 2,
    dirs: new Map([['', dir]]),
    budgetBytes,
    starting: 0,
    root,
    files: new CounterFiles(4096),
  }
}

/** The parent group under `root` with this budget, made now; undefined where none can be made. */
function makeParent(budgetBytes: number, root: CgroupRoot): Parent | undefined {
  return makeParentV1(budgetBytes, root) ?? makeParentV2(budgetBytes, root)
}

/** The parent group, made at the first sandbox with the budget then; null where none can be made. */
function parentGroup(): Parent | null {
  if (parent !== undefined) return parent
  parent = makeParent(memoryBudget(), SYSTEM) ?? null
  const made = parent
  // After the exit hook of runtime.ts (which ends the sandboxes in it): process listeners run in order.
  if (made)
    process.once('exit', () => {
      made.files.close()
      removeDirs([...made.dirs.values()])
    })
  return parent
}

/** What all of this process's sandboxes use together, against their budget; undefined without cgroups. */
export interface SandboxesMemory {
  budgetBytes: number
  /** Memory in use that cannot be reclaimed without swap: anonymous memory, tmpfs, active file pages. */
  usedBytes: number
}

export function sandboxesMemory(): SandboxesMemory | undefined {
  // Made (or found impossible) as root only: after that the budget's looks need not ask the euid.
  if (parent === undefined && process.geteuid?.() !== 0) return undefined
  const found = parentGroup()
  return found ? memoryOf(found) : undefined
}

/** The parent's usage file and its stat file with the key of the inactive page cache, by version. */
const MEMORY_FILES = {
  1: { dir: 'memory', usage: 'memory.usage_in_bytes', inactive: 'total_inactive_file' },
  2: { dir: '', usage: 'memory.current', inactive: 'inactive_file' },
} as const

function memoryOf(found: Parent): SandboxesMemory {
  const names = MEMORY_FILES[found.version]
  const dir = found.dirs.get(names.dir) as string
  // Read through the parent's kept files (a pread each), not opened and closed at every look.
  const usage = found.files.number(join(dir, names.usage)) ?? 0
  const inactive = found.files.count(join(dir, 'memory.stat'), names.inactive)
  return { budgetBytes: found.budgetBytes, usedBytes: Math.max(0, usage - inactive) }
}

// ------------------------------------------------------------------ a sandbox's group

/** v1's peaks of a group's memory, and of memory and swap (the limit a charge meets first where both are set). */
const PEAK_FILES_V1 = ['memory.max_usage_in_bytes', 'memory.memsw.max_usage_in_bytes']
/** How far below its limit a group's peak may stay when a charge is refused there: a huge page. */
const PEAK_SLACK_BYTES = 4 * 1024 * 1024

/** v2's events of a group alone (Linux 5.2), else its events with its descendants' (a sandbox's group has none). */
function localEvents(dir: string): string {
  const local = join(dir, 'memory.events.local')
  return existsSync(local) ? local : join(dir, 'memory.events')
}

function v1(found: Parent, name: string, limits: CgroupLimits, uid: number): Cgroup | undefined {
  const created: string[] = []
  try {
    const dirs: Record<string, string> = {}
    for (const [controller, base] of found.dirs) {
      const dir = join(base, `analyst-${name}`)
      found.root.mkdir(dir)
      created.push(dir)
      dirs[controller] = dir
    }
    const memory = dirs.memory as string
    const pids = dirs.pids as string
    if (!tryWrite(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes)))
      throw new Error('memory')
    tryWrite(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes))
    if (!tryWrite(join(pids, 'pids.max'), String(limits.processes))) throw new Error('pids')
    const cpu = dirs.cpu
    if (cpu) {
      tryWrite(join(cpu, 'cpu.shares'), String(STARTING_SHARES))
      if (limits.milliCpus > 0) {
        const period = readNumber(join(cpu, 'cpu.cfs_period_us')) ?? 100_000
        if (!tryWrite(join(cpu, 'cpu.cfs_quota_us'), String(Math.round((period * limits.milliCpus) / 1000))))
          throw new Error('cpu')
      }
    } else if (limits.milliCpus > 0) throw new Error('cpu')
    const accounting = dirs.cpuacct
    const procsFiles = created.map((dir) => join(dir, 'cgroup.procs'))
    for (const file of procsFiles) chownSync(file, uid, uid)
    // The paths made once: a cell reads them at its start and end.
    const counters = new CounterFiles()
    const oomControl = join(memory, 'memory.oom_control')
    const failures = join(found.dirs.get('memory') as string, 'memory.failcnt')
    const cpuUsage = accounting && join(accounting, 'cpuacct.usage')
    const peaks = PEAK_FILES_V1.map((file) => join(memory, file))
    const oomKills = () => counters.count(oomControl, 'oom_kill')
    const budgetReached = () => counters.number(failures) ?? 0
    const cpuSeconds = () => {
      const nanoseconds = cpuUsage ? counters.number(cpuUsage) : undefined
      return nanoseconds === undefined ? undefined : nanoseconds / 1e9
    }
    return {
      paths: created,
      procsFiles,
      oomKills,
      cpuSeconds,
      memoryMark: () => {
        // The peaks start again from what is used now (any write resets them).
        for (const file of peaks) counters.write(file, '0')
        return { oomKills: oomKills(), ownLimit: 0, budget: budgetReached() }
      },
      oomCause: (mark) => {
        if (oomKills() <= mark.oomKills) return undefined
        // v1 counts a kill in the victim's group whichever limit ran out, and keeps no count of
        // a memsw limit reached: the group's peak since the mark says whether its own limit was
        // reached, the parent's failcnt (its charges refused) whether the budget was.
        const limit = readNumber(join(memory, 'memory.limit_in_bytes')) ?? Number.POSITIVE_INFINITY
        const peak = Math.max(...PEAK_FILES_V1.map((file) => readNumber(join(memory, file)) ?? 0))
        if (peak >= limit - PEAK_SLACK_BYTES) return 'own'
        return budgetReached() > mark.budget ? 'budget' : 'host'
      },
      usage: () => {
        const stat = join(memory, 'memory.stat')
        return {
          cpuSeconds: cpuSeconds(),
          memoryBytes: readNumber(join(memory, 'memory.usage_in_bytes')) ?? 0,
          cacheBytes: readCount(stat, 'total_cache') || readCount(stat, 'cache'),
        }
      },
      settle: () => {
        if (cpu) tryWrite(join(cpu, 'cpu.shares'), String(SANDBOX_SHARES))
      },
      batch: (on) => {
        if (!cpu || tryWrite(join(cpu, 'cpu.idle'), on ? '1' : '0')) return
        tryWrite(join(cpu, 'cpu.shares'), String(on ? BATCH_SHARES : SANDBOX_SHARES))
      },
      remove: () => {
        counters.close()
        removeDirs(created)
      },
    }
  } catch {
    removeDirs(created)
    return undefined
  }
}

function v2(found: Parent, name: string, limits: CgroupLimits, uid: number): Cgroup | undefined {
  const dir = join(found.dirs.get('') as string, `analyst-${name}`)
  try {
    found.root.mkdir(dir)
  } catch {
    return undefined
  }
  const hasCpu = existsSync(join(dir, 'cpu.weight'))
  const ok =
    tryWrite(join(dir, 'memory.max'), String(limits.memoryBytes)) &&
    tryWrite(join(dir, 'pids.max'), String(limits.processes)) &&
    (limits.milliCpus === 0 ||
      (hasCpu && tryWrite(join(dir, 'cpu.max'), `${Math.round(limits.milliCpus * 100)} 100000`)))
  if (!ok) {
    removeDirs([dir])
    return undefined
  }
  tryWrite(join(dir, 'memory.swap.max'), '0')
  if (hasCpu) tryWrite(join(dir, 'cpu.weight'), String(Math.round(STARTING_SHARES / 10)))
  const procs = join(dir, 'cgroup.procs')
  chownSync(procs, uid, uid)
  const counters = new CounterFiles()
  const events = join(dir, 'memory.events')
  const cpuStat = join(dir, 'cpu.stat')
  const oomKills = () => counters.count(events, 'oom_kill')
  // `oom`: the times this group's own limit was reached and reclaim could not make room (local:
  // not its descendants'); the parent's is the budget's.
  const ownEvents = localEvents(dir)
  const budgetEvents = localEvents(found.dirs.get('') as string)
  const ownLimit = () => counters.count(ownEvents, 'oom')
  const budget = () => counters.count(budgetEvents, 'oom')
  const cpuSeconds = () => counters.count(cpuStat, 'usage_usec') / 1e6
  return {
    paths: [dir],
    procsFiles: [procs],
    oomKills,
    cpuSeconds,
    memoryMark: () => ({ oomKills: oomKills(), ownLimit: ownLimit(), budget: budget() }),
    oomCause: (mark) => {
      if (oomKills() <= mark.oomKills) return undefined
      if (ownLimit() > mark.ownLimit) return 'own'
      return budget() > mark.budget ? 'budget' : 'host'
    },
    usage: () => ({
      cpuSeconds: cpuSeconds(),
      memoryBytes: readNumber(join(dir, 'memory.current')) ?? 0,
      cacheBytes: readCount(join(dir, 'memory.stat'), 'file'),
    }),
    settle: () => {
      if (hasCpu) tryWrite(join(dir, 'cpu.weight'), String(Math.round(SANDBOX_SHARES / 10)))
    },
    batch: (on) => {
      if (!hasCpu || tryWrite(join(dir, 'cpu.idle'), on ? '1' : '0')) return
      tryWrite(join(dir, 'cpu.weight'), on ? '1' : String(Math.round(SANDBOX_SHARES / 10)))
    },
    remove: () => {
      counters.close()
      removeDirs([dir])
    },
  }
}

/**
 * A cgroup with the sandbox's memory, process and CPU limits, under the parent group, or undefined
 * where none can be made (a CPU quota asked for where the host delegates no CPU controller included).
 */
export function createCgroup(
  name: string,
  limits: CgroupLimits,
  uid: number,
  /** A sandbox's: the parent weighs as much as the host until it settles (or is removed). */
  options: { starting?: boolean } = {},
): Cgroup | undefined {
  if (process.geteuid?.() !== 0) return undefined
  const found = parentGroup()
  return found ? groupIn(found, name, limits, uid, options) : undefined
}

function groupIn(
  found: Parent,
  name: string,
  limits: CgroupLimits,
  uid: number,
  options: { starting?: boolean },
): Cgroup | undefined {
  const group = found.version === 1 ? v1(found, name, limits, uid) : v2(found, name, limits, uid)
  if (!group || !options.starting) return group
  starting(found, true)
  let started = false
  const start = () => {
    if (!started) starting(found, false)
    started = true
  }
  return {
    ...group,
    settle: () => {
      group.settle()
      start()
    },
    remove: () => {
      start()
      group.remove()
    },
  }
}

/**
 * The sandboxes' parent group under another root than the system's, with what createCgroup and
 * sandboxesMemory do there: for a test that lays out a cgroup tree this host does not mount.
 */
export function cgroupsAt(root: CgroupRoot, budgetBytes = memoryBudget({}, root)) {
  const found = makeParent(budgetBytes, root)
  if (!found) return undefined
  return {
    dirs: found.dirs,
    create: (name: string, limits: CgroupLimits, uid: number, options: { starting?: boolean } = {}) =>
      groupIn(found, name, limits, uid, options),
    memory: () => memoryOf(found),
    /** Closes the files the parent keeps open (a process's own parent closes them at its exit). */
    close: () => found.files.close(),
  }
}
