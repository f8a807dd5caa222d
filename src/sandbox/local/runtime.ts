/**
 * Host-side state shared by this process's sandboxes: one runtime folder, files the jails bind,
 * the sweep of folders left by processes that died, and the cleanup that runs when this one exits.
 * @module
 */
import { execFile, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { startTicks } from '../../processes.js'
import { SandboxUnavailableError } from '../errors.js'
import type { PythonInfo } from './python.js'

export const isRoot = process.geteuid?.() === 0

/**
 * `<pid>-<start time>` (clock ticks since boot): names what this process owns, so a later process
 * that got the pid back can tell it is stale. Without processes.ts's boot id: the runtime folder
 * is under /tmp by default, which a boot empties, and an older Analyst's tags must read as alive.
 */
export const ownerTag = `${process.pid}-${startTicks(process.pid) ?? '0'}`

export function ownerAlive(tag: string): boolean {
  const [pid, start] = tag.split('-')
  return pid !== undefined && startTicks(Number(pid)) === start
}

function secureDir(path: string, mode: number) {
  mkdirSync(path, { recursive: true, mode })
  const stat = lstatSync(path)
  const euid = process.geteuid?.() ?? 0
  if (!stat.isDirectory() || stat.uid !== euid || (stat.mode & 0o022) !== 0) {
    throw new SandboxUnavailableError(`${path} is not a private folder of this user`, {
      hint: `Remove it (rm -rf ${path}) or set TMPDIR to another folder.`,
    })
  }
}

/** Cleanups that must run even when the process exits without calling kill(); the latest runs first. */
const exitCleanups = new Set<() => void>()
let exitHookInstalled = false

export function onExit(cleanup: () => void): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on('exit', () => {
      for (const fn of [...exitCleanups].reverse()) {
        try {
          fn()
        } catch {
          // exiting: nothing left to report to
        }
      }
    })
  }
  exitCleanups.add(cleanup)
  return () => exitCleanups.delete(cleanup)
}

export function unmount(path: string) {
  spawnSync('umount', ['-l', path], { stdio: 'ignore' })
}

/** The same without blocking the event loop (a busy host can take a while). */
export function unmountAsync(path: string): Promise<void> {
  return new Promise((resolve) => execFile('umount', ['-l', path], () => resolve()))
}

export interface Runtime {
  /** `$TMPDIR/analyst-<euid>`: sandbox uids must be able to traverse it, so 0711 when root. */
  root: string
  /** This process's folder in root. */
  own: string
  /** passwd, group and hosts for the jail. */
  etc: string
  cache: string
}

let runtime: Runtime | undefined

export function getRuntime(): Runtime {
  if (runtime) return runtime
  const root = join(process.env.ANALYST_RUNTIME_DIR ?? tmpdir(), `analyst-${process.geteuid?.() ?? 0}`)
  const mode = isRoot ? 0o711 : 0o700
  secureDir(root, mode)
  sweepStale(root)
  const own = join(root, ownerTag)
  secureDir(own, mode)
  const etc = join(own, 'etc')
  mkdirSync(etc, { recursive: true, mode: 0o755 })
  writeFileSync(
    join(etc, 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n',
    { mode: 0o644 },
  )
  writeFileSync(join(etc, 'group'), 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n', { mode: 0o644 })
  writeFileSync(join(etc, 'hosts'), '127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\tsandbox\n', {
    mode: 0o644,
  })
  const cache = join(root, 'cache')
  secureDir(cache, mode)
  onExit(() => rmSync(own, { recursive: true, force: true }))
  runtime = { root, own, etc, cache }
  return runtime
}

/** Files under a sandbox folder that say what to undo if its owner died: see LocalSandbox. */
export const MOUNT_MARK = 'mounted'
export const CGROUPS_MARK = 'cgroups'

/** Removes what processes that died without cleaning up left behind: mounts, cgroups, folders, uid locks. */
export function sweepStale(root: string) {
  for (const entry of readdirSync(root)) {
    if (!/^\d+-\d+$/.test(entry) || ownerAlive(entry)) continue
    const dir = join(root, entry)
    // What cannot be removed now (a mount still busy) waits for a later sweep: a dead process's
    // leftovers must never stop this one from starting sandboxes.
    try {
      for (const sandbox of readdirSync(dir).filter((name) => name.startsWith('sb-'))) {
        releaseSandboxDir(join(dir, sandbox))
      }
      rmSync(dir, { recursive: true, force: true })
    } catch {
      // left for the next sweep
    }
  }
}

/** Host processes whose real uid is `uid`. */
function processesOf(uid: number): number[] {
  const pids: number[] = []
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1] === String(uid))
        pids.push(Number(pid))
    } catch {
      // exited meanwhile
    }
  }
  return pids
}

/** Whether a live process other than the sandbox folder's owner holds the uid's lock. */
function uidHeldByOther(uid: number, dir: string): boolean {
  try {
    const holder = readFileSync(join(dirname(dirname(dir)), 'uids', String(uid)), 'utf8')
    return holder !== basename(dirname(dir)) && ownerAlive(holder)
  } catch {
    return false
  }
}

/**
 * Kills whatever a sandbox left running: the processes in its cgroups and, as root, every process
 * of its own uid. Normally nothing is left (the jail's init takes its PID namespace with it); this
 * catches a jail whose init outlived its host.
 */
function killLeftovers(dir: string, cgroupPaths: string[]) {
  const pids = new Set<number>()
  for (const path of cgroupPaths) {
    try {
      for (const pid of readFileSync(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean))
        pids.add(Number(pid))
    } catch {
      // gone already
    }
  }
  if (isRoot) {
    try {
      const uid = lstatSync(join(dir, 'work')).uid
      // Only while no live process holds the uid again: then its processes are this sandbox's.
      if (uid >= UID_BASE && uid < UID_BASE + UID_COUNT && !uidHeldByOther(uid, dir)) {
        for (const pid of processesOf(uid)) pids.add(pid)
      }
    } catch {
      // no workspace left
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // exited meanwhile
    }
  }
}

/** Ends a sandbox's leftover processes, undoes its mount and cgroups, then deletes its folder. Synchronous: also used at exit. */
export function releaseSandboxDir(dir: string) {
  const work = join(dir, 'work')
  const cgroupsFile = join(dir, CGROUPS_MARK)
  killLeftovers(
    dir,
    existsSync(cgroupsFile) ? readFileSync(cgroupsFile, 'utf8').split('\n').filter(Boolean) : [],
  )
  if (existsSync(join(dir, MOUNT_MARK))) unmount(work)
  const cgroups = join(dir, CGROUPS_MARK)
  if (existsSync(cgroups)) {
    for (const path of readFileSync(cgroups, 'utf8').split('\n').filter(Boolean)) {
      try {
        rmdirSync(path)
      } catch {
        // gone already, or still has processes for a moment: the next sweep gets it
      }
    }
  }
  try {
    rmSync(dir, { recursive: true, force: true })
  } catch {
    // a mount still busy: the sweep of a later process removes the folder
  }
}

/** The font list found for each interpreter (fontCache), by its path and version. */
const fontCaches = new Map<string, string>()

/**
 * Matplotlib's font list, built once per interpreter, bound into every jail: saves ~0.2 s per kernel.
 * Returns the file's path, or undefined when it could not be built (the kernel then builds its own).
 */
export function fontCache(python: PythonInfo): string | undefined {
  if (!python.modules.matplotlib) return undefined
  // Each create asks: the file found before, while it is there, without a hash and two listings.
  const id = `${python.executable}\0${python.version}`
  const known = fontCaches.get(id)
  if (known && existsSync(known)) return known
  const key = createHash('sha256').update(id).digest('hex').slice(0, 16)
  const dir = join(getRuntime().cache, `matplotlib-${key}`)
  const find = () => readdirSync(dir).find((name) => /^fontlist-v\d+\.json$/.test(name))
  const found = existsSync(dir) ? find() : undefined
  if (found) {
    fontCaches.set(id, join(dir, found))
    return join(dir, found)
  }
  mkdirSync(dir, { recursive: true, mode: 0o755 })
  spawnSync(python.executable, ['-s', '-c', 'import matplotlib.font_manager'], {
    env: { PATH: '/usr/bin:/bin', HOME: dir, MPLCONFIGDIR: dir, MPLBACKEND: 'Agg' },
    stdio: 'ignore',
    timeout: 60_000,
  })
  const file = find()
  if (file) fontCaches.set(id, join(dir, file))
  return file ? join(dir, file) : undefined
}

const UID_BASE = 610_000
const UID_COUNT = 60_000
/** The host uids that sandboxes (and template zygotes, zygote.ts) take, one each. */
export const SANDBOX_UIDS = { base: UID_BASE, count: UID_COUNT }

/**
 * A host uid of its own for one sandbox (root only): the process limit counts per uid across the
 * host, so sandboxes that shared one would share one limit.
 */
export function allocateUid(): { uid: number; release: () => void } {
  const dir = join(getRuntime().root, 'uids')
  secureDir(dir, 0o700)
  const start = Math.floor(Math.random() * UID_COUNT)
  for (let i = 0; i < UID_COUNT; i++) {
    const uid = UID_BASE + ((start + i) % UID_COUNT)
    const lock = join(dir, String(uid))
    try {
      writeFileSync(lock, ownerTag, { flag: 'wx' })
    } catch {
      let holder = ''
      try {
        holder = readFileSync(lock, 'utf8')
      } catch {
        continue
      }
      if (ownerAlive(holder)) continue
      writeFileSync(lock, ownerTag)
    }
    const release = () => rmSync(lock, { force: true })
    return { uid, release }
  }
  throw new SandboxUnavailableError('No free sandbox uid left', {
    hint: 'Kill sandboxes that are no longer used.',
  })
}
