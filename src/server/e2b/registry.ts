/**
 * The sandboxes the E2B-compatible API has made: who owns each, its access tokens, its metadata,
 * its deadline (after which it is killed, or paused when it asked for that), and what it takes to
 * pause and resume it: its contexts and the cells that ran without error.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { InvalidArgumentError, NotFoundError } from '../../errors.js'
import type {
  Context,
  Language,
  MemoryBudget,
  ResidentHandle,
  SandboxCreateOptions,
  SandboxLimits,
  SandboxProvider,
} from '../../sandbox/index.js'
import { MetricsHistory } from './metrics.js'
import { type RecordedCell, replay, Snapshot } from './pause.js'
import { ServedSandbox } from './served.js'

/** The envd version the API claims: the SDK enables features by it (octet-stream uploads, closeStdin, watch entries). */
export const ENVD_VERSION = '0.6.4'

/**
 * Cells kept for replay; past that, none are kept (they would grow with every cell of a long-lived
 * sandbox) and a pause is refused rather than resumed without some of them.
 */
const MAX_RECORDED_CELLS = 10_000
const MAX_RECORDED_BYTES = 32 * 1024 * 1024

/** A context made through the code interpreter API. */
export interface ServedContext {
  /** The id the client holds. */
  id: string
  language: Language
  cwd: string
  /** The sandbox's own id for it: a new one after each resume. */
  sandboxId: string
}

export interface SandboxEntry {
  id: string
  /** Its place in creation order: lists are sorted by it and paged from it. */
  sequence: number
  /** `ownerOf(token)`, or null when the server has no tokens. */
  owner: string | null
  templateID: string
  /** The sandbox while it runs; a new one after each resume. */
  sandbox: ServedSandbox
  state: 'running' | 'paused'
  /** What the sandbox was made with, to make it again on resume. */
  envs: Record<string, string>
  network: boolean
  /** Its own memory and CPU (memoryMB, cpuCount), kept across resumes. */
  limits: Partial<SandboxLimits>
  /** The template it runs in (undefined: the engine's default). */
  template?: SandboxCreateOptions['template']
  /** Pause rather than kill at the deadline (E2B's lifecycle onTimeout: 'pause'). */
  autoPause: boolean
  /** Resume a paused sandbox when a call reaches it (E2B's autoResume). */
  autoResume: boolean
  metadata: Record<string, string>
  /** Checked on every envd call (X-Access-Token). */
  envdAccessToken: string
  /** Checked on every code-interpreter call (E2B-Traffic-Access-Token). */
  trafficAccessToken: string
  startedAt: Date
  endAt: Date
  timer?: NodeJS.Timeout
  /** Aborted when this run of the sandbox ends (kill, pause): streams into it are cut off. */
  life: AbortController
  /** Contexts made through the API, by the client's id. */
  contexts: Map<string, ServedContext>
  cells: RecordedCell[]
  recordedBytes: number
  /** It ran more cells than are kept for replay: it cannot be paused. */
  unreplayable: boolean
  /** The workspace, while paused. */
  snapshot?: Snapshot
  metrics: MetricsHistory
  /** The pause, resume or kill under way: the next one waits for it. */
  transition: Promise<unknown>
  /** Cells running now: a sandbox at work is not paused to free memory. */
  working: number
  /** Paused to free memory (the server's budget): the next call resumes it, as with autoResume. */
  evicted: boolean
  /** Its place in the memory budget while it runs. */
  resident?: ResidentHandle
}

export interface NewEntry {
  id: string
  owner: string | null
  templateID: string
  sandbox: ServedSandbox
  envs: Record<string, string>
  network: boolean
  limits: Partial<SandboxLimits>
  autoPause: boolean
  autoResume: boolean
  metadata: Record<string, string>
}

/** An id or token no one can guess: 20 characters of base 36 from 120 random bits and more. */
export function unguessable(prefix = ''): string {
  return (
    prefix +
    BigInt(`0x${randomBytes(16).toString('hex')}`)
      .toString(36)
      .slice(0, 20)
  )
}

/** The same check as the server's tokens: one constant-time comparison for every secret. */
export { sameSecret } from '../auth/secrets.js'

function gone(entry: SandboxEntry): NotFoundError {
  return new NotFoundError(`sandbox "${entry.id}" was killed`)
}

export class Registry {
  private readonly entries = new Map<string, SandboxEntry>()
  private created = 0

  constructor(
    private readonly provider: SandboxProvider,
    private readonly budget?: MemoryBudget,
  ) {}

  /** Room in the memory budget for one more sandbox of `owner`, else CapacityError (503). */
  async admit(owner: string | null): Promise<void> {
    await this.budget?.admit(owner)
  }

  /** A cell runs in the sandbox until `work` settles: meanwhile it is not paused for memory. */
  working(entry: SandboxEntry, work: Promise<unknown>) {
    entry.working++
    entry.resident?.touch()
    void work.finally(() => {
      entry.working--
      entry.resident?.touch()
    })
  }

  /** A call reached it: the last to be paused for memory. */
  touch(entry: SandboxEntry) {
    entry.resident?.touch()
  }

  /** In the memory budget while it runs: paused when idle and memory runs short. */
  private budgeted(entry: SandboxEntry) {
    entry.resident?.remove()
    entry.resident = this.budget?.add({
      owner: entry.owner,
      describe: () => `sandbox ${entry.id}`,
      busy: () => entry.working > 0,
      evict: async () => {
        const paused = await this.pause(entry, { evicted: true }).catch(() => false)
        if (!paused && entry.state === 'running' && this.entries.has(entry.id)) this.budgeted(entry)
      },
    })
  }

  add(fields: NewEntry, timeoutSeconds: number): SandboxEntry {
    const now = new Date()
    const entry: SandboxEntry = {
      ...fields,
      sequence: ++this.created,
      state: 'running',
      envdAccessToken: unguessable(),
      trafficAccessToken: unguessable(),
      startedAt: now,
      endAt: now,
      life: new AbortController(),
      contexts: new Map(),
      cells: [],
      recordedBytes: 0,
      unreplayable: false,
      metrics: new MetricsHistory(now.getTime()),
      transition: Promise.resolve(),
      working: 0,
      evicted: false,
    }
    this.entries.set(entry.id, entry)
    this.budgeted(entry)
    this.setTimeout(entry, timeoutSeconds, now.getTime())
    return entry
  }

  get(id: string): SandboxEntry | undefined {
    return this.entries.get(id)
  }

  /** The entry when it exists and the owner made it; otherwise undefined (a stranger's looks missing). */
  owned(id: string, owner: string | null): SandboxEntry | undefined {
    const entry = this.entries.get(id)
    return entry && entry.owner === owner ? entry : undefined
  }

  list(owner: string | null): SandboxEntry[] {
    return this.all().filter((entry) => entry.owner === owner)
  }

  all(): SandboxEntry[] {
    return [...this.entries.values()]
  }

  /** Moves the deadline to `seconds` from now (or from `from`), as E2B's setTimeout does. */
  setTimeout(entry: SandboxEntry, seconds: number, from = Date.now()) {
    clearTimeout(entry.timer)
    entry.endAt = new Date(from + seconds * 1000)
    // A paused sandbox is kept until it is resumed or killed, as E2B keeps it.
    const expire = () => {
      if (entry.state === 'paused') return
      void (entry.autoPause ? this.pause(entry).catch(() => this.kill(entry.id)) : this.kill(entry.id))
    }
    entry.timer = setTimeout(expire, Math.max(0, entry.endAt.getTime() - Date.now()))
    entry.timer.unref()
  }

  /** Keeps a cell that ran without error, for replay after a pause; past the caps, none. */
  record(entry: SandboxEntry, cell: RecordedCell) {
    if (entry.unreplayable) return
    entry.cells.push(cell)
    entry.recordedBytes += cell.code.length
    if (entry.cells.length > MAX_RECORDED_CELLS || entry.recordedBytes > MAX_RECORDED_BYTES) {
      entry.cells = []
      entry.recordedBytes = 0
      entry.unreplayable = true
    }
  }

  /** Forgets a context's cells: it was restarted or removed. */
  forgetCells(entry: SandboxEntry, contextId: string) {
    entry.cells = entry.cells.filter((cell) => cell.contextId !== contextId)
    entry.recordedBytes = entry.cells.reduce((total, cell) => total + cell.code.length, 0)
  }

  /** Pauses a running sandbox; false when it was paused already. */
  pause(entry: SandboxEntry, options: { evicted?: boolean } = {}): Promise<boolean> {
    return this.step(entry, async () => {
      if (!this.entries.has(entry.id)) throw gone(entry)
      if (entry.state === 'paused') return false
      if (entry.unreplayable) {
        throw new InvalidArgumentError(
          `This sandbox ran more than ${MAX_RECORDED_CELLS} cells (or ${MAX_RECORDED_BYTES / 1024 ** 2} MiB of code): too many to replay on resume. Keep it running, or start a new one.`,
        )
      }
      const snapshot = await Snapshot.take(entry.sandbox)
      entry.resident?.remove()
      entry.resident = undefined
      entry.state = 'paused'
      // Paused by the memory budget: the next call resumes it (set with the state: a call may come at once).
      entry.evicted = options.evicted === true
      entry.snapshot = snapshot
      clearTimeout(entry.timer)
      entry.life.abort()
      await entry.sandbox.kill().catch(() => {})
      return true
    })
  }

  /** Resumes a paused sandbox: a new one with its files, contexts and cells; a running one stays as it is. */
  resume(entry: SandboxEntry, timeoutSeconds: number): Promise<boolean> {
    return this.step(entry, async () => {
      if (!this.entries.has(entry.id)) throw gone(entry)
      if (entry.state === 'running') return false
      await this.admit(entry.owner)
      const sandbox = await ServedSandbox.start(this.provider, {
        envs: entry.envs,
        network: entry.network,
        limits: entry.limits,
        ...(entry.template ? { template: entry.template } : {}),
      })
      try {
        const snapshot = entry.snapshot
        await snapshot?.restore(sandbox)
        const restored = new Date()
        const ids = new Map<string, Context>()
        for (const context of entry.contexts.values()) {
          const made = await sandbox.createCodeContext({ cwd: context.cwd, language: context.language })
          context.sandboxId = made.id
          ids.set(context.id, made)
        }
        await replay(sandbox, entry.cells, ids)
        await snapshot?.settle(sandbox, restored)
        snapshot?.discard()
      } catch (error) {
        await sandbox.kill().catch(() => {})
        throw error
      }
      entry.snapshot = undefined
      entry.sandbox = sandbox
      entry.life = new AbortController()
      entry.state = 'running'
      entry.evicted = false
      this.budgeted(entry)
      this.setTimeout(entry, timeoutSeconds)
      return true
    })
  }

  /** Removes and kills a sandbox; false when there was none. */
  async kill(id: string): Promise<boolean> {
    const entry = this.entries.get(id)
    if (!entry) return false
    this.entries.delete(id)
    entry.resident?.remove()
    clearTimeout(entry.timer)
    entry.life.abort()
    await this.step(entry, async () => {
      entry.snapshot?.discard()
      entry.snapshot = undefined
      await entry.sandbox.kill().catch(() => {})
    })
    return true
  }

  async killAll() {
    await Promise.all([...this.entries.keys()].map((id) => this.kill(id)))
  }

  /** Runs one lifecycle step after the one under way. */
  private step<T>(entry: SandboxEntry, work: () => Promise<T>): Promise<T> {
    const next = entry.transition.then(work, work)
    entry.transition = next.catch(() => {})
    return next
  }
}
