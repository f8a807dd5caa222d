/**
 * The local engine's provider and backend: each sandbox is a Python kernel in a bubblewrap jail on this machine, with
 * its own uid, cgroup and size-limited workspace when Analyst runs as root. A warm pool of
 * started kernels makes `create` take milliseconds.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { availableParallelism, homedir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { resolveTemplate } from '../../templates/store.js'
import type {
  DoStartTerminalOptions,
  DoWatchOptions,
  EntryInfo,
  EntryOptions,
  FolderWatch,
  SandboxBackend,
  SandboxCreateOptions,
  SandboxEnvironment,
  SandboxLimits,
  SandboxMetrics,
  SandboxProvider,
  TerminalProcess,
} from '../backend.js'
import { signalExit } from '../cell-output.js'
import { finishCreate } from '../create-data.js'
import { InvalidArgumentError, SandboxUnavailableError } from '../errors.js'
import { KernelBackend } from '../kernel/backend.js'
import { kernelEnv, threadsFor } from '../kernel/env.js'
import { DEFAULT_LIMITS, resolveLimits } from '../kernel/limits.js'
import type { Artifact } from '../messaging.js'
import { isUnder, SANDBOX_TMP } from '../paths.js'
import type { QueryHost } from '../query.js'
import { enclosingOomKills, type MemoryMark, type SandboxesMemory, sandboxesMemory } from './cgroup.js'
import { type Home, type HomeConfig, prepareHome } from './home.js'
import { SANDBOX_BIN_DIRS, SANDBOX_HOME } from './jail.js'
import { Kernel, type KernelExit } from './kernel.js'
import { outOfMemory } from './out-of-memory.js'
import { findPython, type PythonInfo } from './python.js'
import { fontCache } from './runtime.js'
import { hostRoot, type SandboxRoot, templateRoot } from './template.js'
import { watchFolder } from './watch.js'
import { Workspace } from './workspace.js'
import { metadataOf } from './xattrs.js'
import { type ColdStart, releaseZygotes, useZygotes } from './zygote.js'

export interface LocalProviderOptions {
  /** Kernels kept started and ready for `create`. @default ANALYST_POOL_SIZE or 1 */
  poolSize?: number
  /** How long an interrupted cell may take to stop before its kernel is killed. @default 2000 */
  interruptGraceMs?: number
  /**
   * 'fork': sandboxes are forked from a zygote with pandas already imported (zygote.ts), where
   * that can run (as root); elsewhere, and with network on, they spawn. @default ANALYST_COLD_START or 'fork'
   */
  coldStart?: ColdStart
  /** Where `create({ template })` finds templates by name or id. @default ANALYST_HOME or ~/.analyst */
  home?: string
}

/**
 * A cell that has used this much CPU joins the batch class (cgroup.ts) until it ends, so that
 * other sandboxes' short cells (a `1 + 1`) wait for no busy one; checked this often while it runs.
 */
const BATCH_AFTER_CPU_SECONDS = 0.5
const BATCH_CHECK_MS = 250

interface Started {
  home: Home
  kernel: Kernel
}

/** Started kernels of one root, ready for `create`. */
interface Pool {
  /** What `create` named it by: undefined for the host's. */
  template: SandboxCreateOptions['template']
  ready: Started[]
  filling?: Promise<void>
}

async function start(config: HomeConfig, keepAlive = true): Promise<Started> {
  const home = await prepareHome(config)
  try {
    const kernel = await Kernel.start(home.spec, { keepAlive })
    home.cgroup?.settle()
    return { home, kernel }
  } catch (error) {
    home.release()
    throw error
  }
}

/**
 * A write by the host into the jail's /tmp. A spawned jail's /tmp (and a template zygote's
 * sandbox's) belongs to a user namespace below the host's, where the host's uid has no number
 * (EOVERFLOW): only code can create files there.
 */
function hostWrites<T>(path: string, write: () => T): T {
  try {
    return write()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EOVERFLOW') throw error
    throw new InvalidArgumentError(
      `${path}: this sandbox's ${SANDBOX_TMP} takes new files from its own code only`,
      {
        hint: `Write under ${SANDBOX_HOME}, or create the file with a command (sandboxes forked from the host's zygote, the default as root without a template, take them).`,
      },
    )
  }
}

class LocalSandbox extends KernelBackend<Kernel> {
  readonly provider = 'local'
  readonly environment: SandboxEnvironment | undefined
  /** Folder watches, ended with the sandbox: each holds folders of its workspace open. */
  private readonly watches = new Set<FolderWatch>()
  /**
   * The memory counters at the kernel's start or its last OOM kill, against which a kernel's death
   * is read: they stand while no kill is counted, so a cell reads one count, not every counter twice.
   */
  private memoryMark: MemoryMark | undefined
  /** Without a group of its own: the OOM kills of the group the server runs in (its container's), at the same moments. */
  private enclosingMark: number | undefined
  /** While a cell runs: the check of its CPU time, and whether it was moved to the batch class. */
  private busyCheck: NodeJS.Timeout | undefined
  private batched = false

  constructor(
    private readonly home: Home,
    kernel: Kernel,
    private readonly config: HomeConfig,
    interruptGraceMs: number,
    sources: QueryHost | undefined,
  ) {
    super(kernel, { limits: config.limits, interruptGraceMs, sources })
    const template = config.root.template
    this.environment = template && {
      template: template.names[0] ?? template.id.slice(0, 12),
      languages: template.languages,
      python: config.root.python.version,
      packages: template.packages,
    }
    this.markMemory()
  }

  private markMemory(): void {
    this.memoryMark = this.home.cgroup?.memoryMark()
    this.enclosingMark = this.home.cgroup ? undefined : enclosingOomKills()
  }

  get sandboxId(): string {
    return this.home.id
  }

  protected startKernel(): Promise<Kernel> {
    return Kernel.start(this.home.spec)
  }

  protected stopKernel(kernel: Kernel): Promise<KernelExit> {
    return kernel.kill()
  }

  protected override async beforeCell(): Promise<void> {
    const cgroup = this.home.cgroup
    const from = cgroup?.cpuSeconds()
    if (!cgroup || from === undefined) return
    this.busyCheck = setInterval(() => {
      if ((cgroup.cpuSeconds() ?? from) - from < BATCH_AFTER_CPU_SECONDS) return
      clearInterval(this.busyCheck)
      this.batched = true
      cgroup.batch(true)
    }, BATCH_CHECK_MS)
    this.busyCheck.unref()
  }

  protected override afterCell(): void {
    this.leaveBatch()
    // A kernel that died in the cell is read against the mark (describeStop, next); one that lived
    // through a kill (a child of it taken) is marked again, so that the kill is not blamed later.
    if (this.supervisor.current.alive && this.killedSinceMark()) this.markMemory()
  }

  private killedSinceMark(): boolean {
    const cgroup = this.home.cgroup
    if (cgroup) return cgroup.oomKills() > (this.memoryMark?.oomKills ?? 0)
    return this.enclosingMark !== undefined && (enclosingOomKills() ?? 0) > this.enclosingMark
  }

  /**
   * An interrupted cell leaves the batch class first: there it gets the CPU only when no one else
   * wants it, so on a busy machine it would not even reach the interrupt, and its session would
   * stay busy (and its memory held) long after the stop.
   */
  protected override beforeInterrupt(): void {
    this.leaveBatch()
  }

  private leaveBatch(): void {
    clearInterval(this.busyCheck)
    this.busyCheck = undefined
    if (!this.batched) return
    this.batched = false
    this.home.cgroup?.batch(false)
  }

  protected async describeStop(kernel: Kernel): Promise<string> {
    const exit = await kernel.whenExited()
    const cgroup = this.home.cgroup
    const cause = cgroup && this.memoryMark && cgroup.oomCause(this.memoryMark)
    if (cgroup && cause) {
      this.memoryMark = cgroup.memoryMark()
      return outOfMemory({
        cause,
        limitBytes: this.config.limits.memoryBytes,
        ownBytes: cgroup.usage().memoryBytes,
        all: sandboxesMemory(),
      })
    }
    // No group of its own: the container's limit took it if its group counted a kill meanwhile.
    const before = this.enclosingMark
    if (!cgroup && before !== undefined && (enclosingOomKills() ?? 0) > before) {
      this.markMemory()
      return outOfMemory({
        cause: 'host',
        limitBytes: this.config.limits.memoryBytes,
        ownBytes: 0,
        all: undefined,
      })
    }
    if (exit.signal) return `killed by ${exit.signal}`
    // bubblewrap passes a signal on as 128 + its number.
    if (exit.code !== null && exit.code > 128) return signalExit(exit.code)
    return `exit code ${exit.code}`
  }

  protected async artifacts(): Promise<Artifact[]> {
    return this.home.workspace.changes()
  }

  async doWriteFile(path: string, data: Uint8Array): Promise<EntryInfo> {
    this.assertAlive()
    const files = await this.filesAt(path)
    return hostWrites(path, () => files.write(path, data))
  }

  async doReadFile(path: string): Promise<Uint8Array> {
    this.assertAlive()
    return (await this.filesAt(path)).read(path)
  }

  async doList(path: string, options?: EntryOptions): Promise<EntryInfo[]> {
    this.assertAlive()
    const files = await this.filesAt(path)
    const entries = files.list(path, options)
    if (!options?.details || entries.length === 0) return entries
    const { base, dirs, name } = files.locate(path)
    return this.withMetadata(entries, { base, dirs: name ? [...dirs, name] : dirs })
  }

  async doStat(path: string, options?: EntryOptions): Promise<EntryInfo | undefined> {
    this.assertAlive()
    const files = await this.filesAt(path)
    const entry = files.stat(path, options)
    const { base, dirs, name } = files.locate(path)
    if (!entry || !options?.details || !name) return entry
    return (await this.withMetadata([entry], { base, dirs }))[0]
  }

  async doSetMetadata(path: string, metadata: Record<string, string>): Promise<void> {
    this.assertAlive()
    const { base, dirs, name, area } = (await this.filesAt(path)).locate(path)
    if (!name || area === 'data')
      throw new InvalidArgumentError(`${path}: metadata is kept on files in the workspace only`)
    await metadataOf(this.config.hostPython.executable, { base, dirs, names: [], set: { [name]: metadata } })
  }

  /** Entries of one folder with their E2B metadata (extended attributes), read in one go. */
  private async withMetadata(entries: EntryInfo[], folder: { base: string; dirs: string[] }) {
    const names = entries.map((entry) => entry.name)
    const found = await metadataOf(this.config.hostPython.executable, { ...folder, names }).catch(() => ({}))
    return entries.map((entry) => {
      const metadata = (found as Record<string, Record<string, string>>)[entry.name]
      return metadata ? { ...entry, metadata } : entry
    })
  }

  async doWatch(path: string, options: DoWatchOptions): Promise<FolderWatch> {
    this.assertAlive()
    const watch = watchFolder(this.home.workspace, path, options)
    this.watches.add(watch)
    return {
      stop: () => {
        this.watches.delete(watch)
        watch.stop()
      },
    }
  }

  /** A pseudo-terminal from the jail's own /dev/pts (bubblewrap's --dev), made by the kernel. */
  async doStartTerminal(options: DoStartTerminalOptions): Promise<TerminalProcess> {
    return this.startTerminalInKernel(options)
  }

  /** From the sandbox's cgroup, which only Analyst running as root makes. */
  async doMetrics(): Promise<SandboxMetrics> {
    this.assertAlive()
    const cgroup = this.home.cgroup
    if (!cgroup) {
      throw new SandboxUnavailableError(
        'This sandbox has no cgroup to measure (Analyst makes one per sandbox when it runs as root)',
      )
    }
    const usage = cgroup.usage()
    return {
      cpuSeconds: usage.cpuSeconds,
      cpuCount:
        this.config.limits.milliCpus > 0
          ? Math.ceil(this.config.limits.milliCpus / 1000)
          : availableParallelism(),
      memoryUsed: Math.max(0, usage.memoryBytes - usage.cacheBytes),
      memoryCache: usage.cacheBytes,
      memoryTotal: this.config.limits.memoryBytes,
      diskUsed: this.home.workspace.diskUsed(),
      diskTotal: this.config.limits.workspaceBytes,
    }
  }

  async doRemove(path: string): Promise<void> {
    this.assertAlive()
    const files = await this.filesAt(path)
    files.remove(path)
  }

  async doMakeDir(path: string): Promise<boolean> {
    this.assertAlive()
    const files = await this.filesAt(path)
    return hostWrites(path, () => files.makeDir(path))
  }

  async doRename(from: string, to: string): Promise<EntryInfo> {
    this.assertAlive()
    if (isUnder(from, SANDBOX_TMP) !== isUnder(to, SANDBOX_TMP)) {
      throw new InvalidArgumentError(`${from} cannot be moved to ${to}: they are on different file systems`, {
        hint: 'Write the file again at its new place, then remove the old one.',
      })
    }
    const files = await this.filesAt(from)
    return hostWrites(to, () => files.rename(from, to))
  }

  /**
   * The files API's view of `path`: the workspace, or the jail's own /tmp (a tmpfs inside the
   * jail, reached through the jail's root; the host never resolves a link there either).
   */
  private async filesAt(path: string): Promise<Workspace> {
    if (!isUnder(path, SANDBOX_TMP)) return this.home.workspace
    const root = this.config.isolation === 'sandbox' ? (await this.kernel()).jailRoot : undefined
    if (!root) {
      throw new InvalidArgumentError(
        `${path}: the files API reaches ${SANDBOX_TMP} only in a jailed sandbox`,
        {
          hint: `Use a path under ${SANDBOX_HOME}.`,
        },
      )
    }
    return new Workspace(`${root}${SANDBOX_TMP}`, '', this.home.workspace.owner, SANDBOX_TMP)
  }

  async doAddData(hostPath: string, name: string): Promise<EntryInfo> {
    this.assertAlive()
    return this.home.workspace.addData(hostPath, name)
  }

  /** Without a jail the workspace is a host folder: a command's folder is found there. */
  protected override commandCwd(cwd: string | undefined): string {
    const inside = super.commandCwd(cwd)
    if (this.config.isolation === 'sandbox') return inside
    if (inside === SANDBOX_HOME || inside.startsWith(`${SANDBOX_HOME}/`)) {
      return this.home.workspace.work + inside.slice(SANDBOX_HOME.length)
    }
    return inside
  }

  /** Given after the kernel started: a forked restart starts from the template's, without them. */
  private appliedEnvs: Record<string, string> | undefined

  protected override async prepareKernel(fresh: Kernel) {
    if (this.appliedEnvs) await fresh.setEnv(randomBytes(4).toString('hex'), this.appliedEnvs)
  }

  /** Environment variables given after the kernel started (a pooled kernel): for this kernel and its restarts. */
  async applyEnvs(envs: Record<string, string>) {
    this.appliedEnvs = { ...this.appliedEnvs, ...envs }
    this.home.spec.env = kernelEnv(
      SANDBOX_HOME,
      { ...this.config.envs, ...envs },
      process.env,
      SANDBOX_BIN_DIRS,
      threadsFor(this.config.limits.milliCpus),
    )
    await this.supervisor.current.setEnv(randomBytes(4).toString('hex'), envs)
  }

  async doKill(): Promise<void> {
    const kernel = await this.closeKernel()
    if (!kernel) return
    for (const watch of this.watches) watch.stop()
    this.watches.clear()
    await kernel.kill()
    await waitUntilEmpty(this.home.cgroup?.procsFiles ?? [])
    await this.home.releaseAsync()
  }
}

/** Waits (briefly) until the cgroup has no process left, so it can be removed. */
async function waitUntilEmpty(procsFiles: string[]) {
  for (let i = 0; i < 200; i++) {
    const busy = procsFiles.some((file) => {
      try {
        return readFileSync(file, 'utf8').trim() !== ''
      } catch {
        return false
      }
    })
    if (!busy) return
    await sleep(10)
  }
}

function sameLimits(a: SandboxLimits, b: SandboxLimits): boolean {
  return Object.keys(DEFAULT_LIMITS).every(
    (key) => a[key as keyof SandboxLimits] === b[key as keyof SandboxLimits],
  )
}

/** A sandbox's limits: the caller's, over its template's memory and CPUs, over the defaults. */
function limitsOf(root: SandboxRoot, asked: SandboxCreateOptions['limits'] = {}): SandboxLimits {
  const given = Object.entries(asked).filter(([, value]) => value !== undefined)
  return resolveLimits({ ...root.template?.resources, ...Object.fromEntries(given) })
}

export class LocalProvider implements SandboxProvider {
  readonly specificationVersion = 'v1'
  readonly name = 'local'
  readonly poolSize: number
  private readonly interruptGraceMs: number
  readonly coldStart: ColdStart
  private readonly home: string
  /** Ready kernels per root (template.ts): the host's, and each template's that was asked for. */
  private readonly pools = new Map<string, Pool>()
  private hits = 0
  private misses = 0

  constructor(options: LocalProviderOptions = {}) {
    const size = options.poolSize ?? Number(process.env.ANALYST_POOL_SIZE ?? 1)
    if (!Number.isInteger(size) || size < 0)
      throw new InvalidArgumentError(`poolSize must be a whole number ≥ 0, not ${size}`)
    this.poolSize = size
    this.interruptGraceMs = options.interruptGraceMs ?? 2000
    const coldStart = options.coldStart ?? process.env.ANALYST_COLD_START ?? 'fork'
    if (coldStart !== 'fork' && coldStart !== 'spawn')
      throw new InvalidArgumentError(`coldStart must be 'fork' or 'spawn', not ${coldStart}`)
    this.coldStart = coldStart
    this.home = options.home ?? (process.env.ANALYST_HOME || join(homedir(), '.analyst'))
  }

  /** The host's Python, or the template asked for (a name or id from the store, or a built one). */
  private async root(
    template: SandboxCreateOptions['template'],
  ): Promise<{ hostPython: PythonInfo; root: SandboxRoot }> {
    const hostPython = await findPython()
    if (template === undefined) return { hostPython, root: hostRoot(hostPython, fontCache(hostPython)) }
    const built = typeof template === 'string' ? resolveTemplate(this.home, template) : template
    return { hostPython, root: await templateRoot(built) }
  }

  private async config(options: SandboxCreateOptions): Promise<HomeConfig> {
    if (this.coldStart === 'fork') useZygotes(this)
    const { hostPython, root } = await this.root(options.template)
    return {
      hostPython,
      root,
      limits: limitsOf(root, options.limits),
      network: options.network ?? false,
      isolation: options.isolation ?? 'sandbox',
      envs: options.envs ?? {},
      coldStart: this.coldStart,
    }
  }

  async doCreate(options: SandboxCreateOptions): Promise<SandboxBackend> {
    if (options.isolation !== undefined && options.isolation !== 'sandbox' && options.isolation !== 'none') {
      throw new InvalidArgumentError(
        `isolation must be 'sandbox' or 'none', not ${String(options.isolation)}`,
      )
    }
    options.signal?.throwIfAborted()
    const config = await this.config(options)
    if (config.isolation === 'none') {
      process.emitWarning(
        "Sandbox created with isolation: 'none': code runs as this user with access to its files, network and processes. Use it only for code you trust.",
        'AnalystWarning',
      )
    }
    if (config.isolation === 'none' && config.root.template) {
      throw new InvalidArgumentError(
        "A template's sandboxes run in the jail: isolation 'none' cannot take a template",
        {
          hint: "Leave out isolation: 'none', or the template.",
        },
      )
    }
    // The pool's kernels have the template's limits (or the defaults): a create that asks for others starts its own.
    const poolable =
      config.isolation === 'sandbox' &&
      !config.network &&
      sameLimits(config.limits, limitsOf(config.root, undefined))
    const pool = this.poolOf(config.root.key, options.template)
    const pooled = poolable ? pool.ready.shift() : undefined
    if (pooled) this.hits++
    else this.misses++
    const started = pooled ?? (await start({ ...config, envs: poolable ? {} : config.envs }))
    // Refill after this create has returned: preparing a home blocks the event loop for a moment.
    if (poolable) setImmediate(() => this.fill(pool))
    const sandbox = new LocalSandbox(
      started.home,
      started.kernel,
      config,
      this.interruptGraceMs,
      options.sources,
    )
    return finishCreate(sandbox, options, async () => {
      if (poolable && Object.keys(config.envs).length > 0) await sandbox.applyEnvs(config.envs)
    })
  }

  /** What this process's sandboxes use together, from their parent cgroup (as root). */
  memoryUse(): SandboxesMemory | undefined {
    return sandboxesMemory()
  }

  /** Kernels ready in the pool now, and how many creates took one (hits) or started their own (misses). */
  private poolOf(key: string, template: SandboxCreateOptions['template']): Pool {
    let pool = this.pools.get(key)
    if (!pool) {
      pool = { template, ready: [] }
      this.pools.set(key, pool)
    }
    return pool
  }

  /** Kernels ready in the pools now, and how many creates took one (hits) or started their own (misses). */
  get poolStats(): { ready: number; size: number; hits: number; misses: number } {
    const ready = [...this.pools.values()].reduce((sum, pool) => sum + pool.ready.length, 0)
    return { ready, size: this.poolSize, hits: this.hits, misses: this.misses }
  }

  /**
   * Starts kernels until the pool is full (the host's, or a template's); resolves when it is.
   * Creation does this in the background for the root it was asked for.
   */
  async warm(options: Pick<SandboxCreateOptions, 'template'> = {}): Promise<void> {
    const { root } = await this.root(options.template)
    const pool = this.poolOf(root.key, options.template)
    this.fill(pool)
    return pool.filling ?? Promise.resolve()
  }

  private fill(pool: Pool) {
    if (pool.filling || pool.ready.length >= this.poolSize) return
    pool.filling = (async () => {
      try {
        while (pool.ready.length < this.poolSize) {
          const entry = await start(await this.config({ template: pool.template }), false)
          entry.kernel.whenExited().then(() => {
            const index = pool.ready.indexOf(entry)
            if (index >= 0) {
              pool.ready.splice(index, 1)
              entry.home.release()
            }
          })
          pool.ready.push(entry)
        }
      } catch {
        // The pool stays short; create() starts kernels itself and reports what is wrong.
      } finally {
        pool.filling = undefined
      }
    })()
  }

  /**
   * Stops the pool's kernels. Sandboxes already created are not affected; the zygote
   * stops once they are gone, unless another open provider forks from it.
   */
  async close(): Promise<void> {
    const pools = [...this.pools.values()]
    await Promise.all(pools.map((pool) => pool.filling))
    const entries = pools.flatMap((pool) => pool.ready.splice(0))
    await Promise.all(
      entries.map(async (entry) => {
        await entry.kernel.kill()
        entry.home.release()
      }),
    )
    await releaseZygotes(this)
  }
}
