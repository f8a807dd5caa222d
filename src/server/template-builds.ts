/**
 * Template builds that API clients ask for (/api/templates and E2B's Template.build): untrusted
 * code, so off unless the operator allows them (`serve --allow-template-builds`), one at a time,
 * each bounded in time, disk and memory, and cancellable. A build runs on the replica that took it;
 * its state and log go to the history store (the log in batches), so that any replica over the
 * same database answers its status and log paging (E2B's SDK polls through a load balancer
 * without affinity), and passes a cancel on (a flag its runner reads with its heartbeat). A build
 * whose replica stopped beating has failed. One build of a name is under way at a time, and the
 * builds waiting are capped, over every replica (the store refuses a second of a name, and a build
 * past the cap, each in the write that takes the build). The
 * template it makes is under that replica's ANALYST_HOME/templates, and shared through the store
 * with the others (template-share.ts).
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  AnalystError,
  ConflictError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
} from '../errors.js'
import type {
  StoredTemplateBuild,
  TemplateBuildLogLine,
  TemplateBuildStatus,
  TemplateBuildStore,
} from '../store/types.js'
import type { BuiltTemplate } from '../templates/types.js'
import { templateView } from './template-view.js'
import type { TemplateView } from './types.js'

/**
 * A build's status asked of a replica that does not run it and shares no database with it (two
 * SQLite homes): 421 Misdirected Request, this server cannot answer for it.
 */
export class BuildElsewhereError extends AnalystError {
  static override readonly errorName: string = 'BuildElsewhereError'
  override readonly status = 421
}

/** What to do when a build's requests reach several replicas. */
const ELSEWHERE_HINT =
  "Run the replicas over one PostgreSQL database (ANALYST_DATABASE_URL), so that any of them answers for a build; or send a build's requests (POST /v3/templates, its build and status; /api/templates) to one replica: route /templates/, /v2/templates/, /v3/templates and /api/templates with session affinity."

/** The short tag of a replica in the ids of its builds (hex: safe in a URL). */
function replicaTag(replica: string): string {
  return createHash('sha256').update(replica).digest('hex').slice(0, 8)
}

/** How long, how much disk and how much memory one build may take. */
export interface TemplateBuildLimits {
  timeoutMs: number
  diskBytes: number
  memoryBytes: number
}

export const DEFAULT_BUILD_LIMITS: TemplateBuildLimits = {
  timeoutMs: 30 * 60_000,
  diskBytes: 8 * 1024 ** 3,
  memoryBytes: 4 * 1024 ** 3,
}

/**
 * The limits the operator set: ANALYST_TEMPLATE_BUILD_TIMEOUT (seconds), ANALYST_TEMPLATE_BUILD_DISK_MB
 * and ANALYST_TEMPLATE_BUILD_MEMORY_MB; the defaults for those unset.
 */
export function buildLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): TemplateBuildLimits {
  const number = (name: string, scale: number, fallback: number) => {
    const value = env[name]
    if (value === undefined || value === '') return fallback
    const parsed = Number(value)
    if (!Number.isFinite(parsed) || parsed <= 0)
      throw new InvalidArgumentError(`${name} must be a positive number, not ${value}`)
    return parsed * scale
  }
  return {
    timeoutMs: number('ANALYST_TEMPLATE_BUILD_TIMEOUT', 1000, DEFAULT_BUILD_LIMITS.timeoutMs),
    diskBytes: number('ANALYST_TEMPLATE_BUILD_DISK_MB', 1024 ** 2, DEFAULT_BUILD_LIMITS.diskBytes),
    memoryBytes: number('ANALYST_TEMPLATE_BUILD_MEMORY_MB', 1024 ** 2, DEFAULT_BUILD_LIMITS.memoryBytes),
  }
}

/** One line of a build's log (the store's shape: every replica pages the same log). */
export type BuildLogLine = TemplateBuildLogLine

/** What a build is told as it goes: tpl-build's onProgress and onLog, in one shape. */
export interface BuildReporter {
  log(message: string, options?: { level?: BuildLogLine['level']; step?: number }): void
  progress(step: number, total: number, title: string): void
}

/** Runs one build to its end: the template, or a thrown error that names the step (`step`) and why. */
export type RunBuild = (context: {
  reporter: BuildReporter
  signal: AbortSignal
  limits: TemplateBuildLimits
}) => Promise<BuiltTemplate>

/** The templates built here, as the doors read and remove them (src/templates/store.ts). */
export interface TemplateCatalog {
  /** Newest first. */
  list(): BuiltTemplate[]
  /** The template a name or id points at; a NotFoundError naming those there are. */
  resolve(nameOrId: string): BuiltTemplate
  remove(nameOrId: string): { name?: string; id?: string }
  /** Brings the template a name or id points at from the other replicas, when it is not here (template-share.ts). */
  ensure?(nameOrId: string): Promise<void>
  /** Removes one that only other replicas hold, from the database they share; false when it has none. */
  forgetElsewhere?(nameOrId: string): Promise<boolean>
}

export type BuildStatus = TemplateBuildStatus

/** A build as any replica answers for it: this replica's own from memory, another's from the store. */
export interface TemplateBuild {
  readonly id: string
  /** The name the template gets. */
  readonly name: string
  readonly owner: string | null
  status: BuildStatus
  /** Which step runs (1-based) of how many, and its title. */
  progress?: { step: number; total: number; title: string }
  /** Why it failed: the message and the step (the builder's number of it). */
  reason?: { message: string; step?: number }
  /** What a client sees of the template it made. */
  template?: TemplateView
  readonly createdAt: Date
  finishedAt?: Date
}

export type BuildEvent =
  | { type: 'log'; line: BuildLogLine }
  | { type: 'progress'; step: number; total: number; title: string }
  | { type: 'end'; build: TemplateBuild }

export interface TemplateBuildsOptions {
  /** The operator allows builds from API clients (--allow-template-builds). */
  allowed: boolean
  /** Where builds and their logs are kept: every replica over the same database answers for each. */
  store: TemplateBuildStore
  /** Whether other replicas share the store (PostgreSQL); with SQLite another replica's build is elsewhere. */
  shared: boolean
  limits?: Partial<TemplateBuildLimits>
  /** Builds waiting for their turn, beyond those running, over every replica. @default 4 */
  maxWaiting?: number
  /** How long an ended build is kept for its status. @default 1 hour */
  keepMs?: number
  /** This replica's name: its builds' runner in the store, and the tag in their ids. @default this process */
  replica?: string
  /** A build under way whose replica has not beaten for this long failed with it. @default 30 s */
  lapseMs?: number
  /**
   * Shares a template just built with the other replicas (template-share.ts), before its build is
   * ready; the bytes it put in the store, 0 when there are no others.
   */
  publish?: (template: BuiltTemplate, name: string) => Promise<number>
}

/** A build's log is capped: a chatty apt-get should not hold the server's memory. */
const MAX_LOG_LINES = 20_000
/** The log goes to the store in batches: every FLUSH_MS, or at once when this many lines wait. */
const FLUSH_MS = 250
const FLUSH_LINES = 64
/** How often a replica says, in the store, that its builds are alive (and reads their cancels). */
const HEARTBEAT_MS = 1000
/** How often a client following another replica's build reads the store. */
const FOLLOW_MS = 500

/** A build this replica runs: its state, its whole log, and how much of both the store has. */
interface LocalBuild extends TemplateBuild {
  readonly log: BuildLogLine[]
  readonly controller: AbortController
  /** Lines of the log written to the store. */
  stored: number
  /** The state changed since it was last written. */
  dirty: boolean
  /** The store's writes, one after the other. */
  writing: Promise<void>
  /** Resolves when the build has ended. */
  done?: Promise<void>
}

export class TemplateBuilds {
  readonly allowed: boolean
  readonly limits: TemplateBuildLimits
  readonly #store: TemplateBuildStore
  readonly #shared: boolean
  readonly #builds = new Map<string, LocalBuild>()
  readonly #listeners = new Map<string, Set<(event: BuildEvent) => void>>()
  readonly #queue: Array<() => void> = []
  #running = false
  readonly #maxWaiting: number
  readonly #keepMs: number
  readonly #lapseMs: number
  readonly #publish: TemplateBuildsOptions['publish']
  readonly #replica: string
  readonly #tag: string
  #timer: NodeJS.Timeout | undefined
  #lastBeat = 0
  #closed = false

  constructor(options: TemplateBuildsOptions) {
    this.allowed = options.allowed
    this.limits = { ...DEFAULT_BUILD_LIMITS, ...options.limits }
    this.#store = options.store
    this.#shared = options.shared
    this.#maxWaiting = options.maxWaiting ?? 4
    this.#keepMs = options.keepMs ?? 3600_000
    this.#lapseMs = options.lapseMs ?? 30_000
    this.#publish = options.publish
    this.#replica = options.replica ?? `${process.pid}:${randomUUID()}`
    this.#tag = replicaTag(this.#replica)
  }

  /** A new build's id: a UUID with this replica's tag, so that another replica can tell it is not its own. */
  newId(): string {
    return `${randomUUID()}-${this.#tag}`
  }

  /** Throws what to do when the id is another replica's build and the store is not shared; returns otherwise. */
  assertHere(id: string): void {
    if (this.#shared) return
    const tag = /^[0-9a-f-]{36}-([0-9a-f]{8})$/.exec(id)?.[1]
    if (tag && tag !== this.#tag)
      throw new BuildElsewhereError(
        `Template build ${id} runs on another replica, not this one: without a shared database (ANALYST_DATABASE_URL) builds are kept by the replica that runs them`,
        { hint: ELSEWHERE_HINT },
      )
  }

  /** Throws the refusal a client gets when builds are off. */
  assertAllowed(): void {
    if (!this.allowed)
      throw new ForbiddenError(
        'Template builds from API clients are off on this server: a build runs code that the client sends.',
        {
          hint: 'The operator can allow them with analyst serve --allow-template-builds, or build the template on the server with analyst template build.',
        },
      )
  }

  /**
   * Records a build that a client asked for and whose steps come later (E2B's POST /v3/templates),
   * so that whichever replica the steps reach starts it; returns its id.
   */
  async request(name: string, owner: string | null, request: Record<string, unknown>): Promise<string> {
    this.assertAllowed()
    const id = this.newId()
    await this.#store.createTemplateBuild({ id, name, owner, request })
    return id
  }

  /** What a requested build's request carried; a 404 when no such build was requested of this owner and name. */
  async requested(id: string, owner: string | null, name: string): Promise<Record<string, unknown>> {
    const stored = await this.#store.getTemplateBuild(id)
    if (!stored || stored.owner !== owner || stored.name !== name || stored.replica !== undefined) {
      this.assertHere(id)
      throw new NotFoundError(`No build ${id} was requested for template ${name}`)
    }
    return stored.request ?? {}
  }

  /**
   * Starts a build (or queues it behind the one running); it runs on after the request ends. With
   * the `id` of a requested build, takes that one (a 409 when another replica took it first).
   */
  async start(
    name: string,
    owner: string | null,
    run: RunBuild,
    requestedId?: string,
  ): Promise<TemplateBuild> {
    this.assertAllowed()
    this.#forget()
    // The limits hold over every replica, through the store: a build of a replica that stopped
    // fails first, so that it holds its name no longer; the store counts the builds waiting
    // anywhere as it takes this one (createTemplateBuild's maxWaiting: one step, no race).
    await this.#store.failLapsedTemplateBuilds(this.#lapseMs, lapsed(this.#lapseMs))
    // This replica's last build of the name has ended here: the store is to know it before the next.
    await Promise.all(
      [...this.#builds.values()].filter((b) => b.name === name && ended(b)).map((b) => b.writing),
    )
    if ([...this.#builds.values()].some((b) => b.name === name && !ended(b)))
      throw new ConflictError(`A build of "${name}" is under way already`, {
        hint: 'Wait for it to end, or cancel it first.',
      })
    const id = requestedId ?? this.newId()
    const build: LocalBuild = {
      id,
      name,
      owner,
      status: 'waiting',
      log: [],
      createdAt: new Date(),
      controller: new AbortController(),
      stored: 0,
      dirty: false,
      writing: Promise.resolve(),
    }
    // Here before the store has it: a second request for the name meanwhile meets this one.
    this.#builds.set(id, build)
    try {
      if (requestedId === undefined)
        await this.#store.createTemplateBuild({
          id,
          name,
          owner,
          replica: this.#replica,
          maxWaiting: this.#maxWaiting,
        })
      else if (!(await this.#store.claimTemplateBuild(id, this.#replica, this.#maxWaiting)))
        throw new ConflictError(`Template build ${id} has started already`, {
          hint: 'Poll its status; to build again, request a new build.',
        })
    } catch (error) {
      this.#builds.delete(id)
      throw error
    }
    this.#tick()
    build.done = this.#turn().then(() => this.#run(build, run))
    return build
  }

  /**
   * The build of this id if the caller may see it (its owner), else a 404: this replica's own from
   * memory, another's from the store (failed first when its replica stopped beating).
   */
  async get(id: string, owner: string | null): Promise<TemplateBuild> {
    const local = this.#builds.get(id)
    if (local) {
      if (local.owner !== owner) throw notFound(id)
      return local
    }
    let stored = await this.#store.getTemplateBuild(id)
    if (stored && !ended(stored) && (stored.beatMsAgo ?? 0) > this.#lapseMs) {
      await this.#store.failLapsedTemplateBuilds(this.#lapseMs, lapsed(this.#lapseMs))
      stored = await this.#store.getTemplateBuild(id)
    }
    if (!stored || stored.owner !== owner) {
      this.assertHere(id)
      throw notFound(id)
    }
    return fromStore(stored)
  }

  /** Up to `limit` lines of a build's log from `offset` on (the build as `get` gave it). */
  async log(build: TemplateBuild, offset: number, limit: number): Promise<BuildLogLine[]> {
    const local = this.#builds.get(build.id)
    if (local) return local.log.slice(offset, offset + limit)
    return this.#store.templateBuildLog(build.id, offset, limit)
  }

  /** Stops a build, on whichever replica runs it: its processes end, nothing of it is kept. False when it had ended already. */
  async cancel(id: string, owner: string | null): Promise<boolean> {
    const build = await this.get(id, owner)
    if (ended(build)) return false
    const local = this.#builds.get(id)
    if (local) {
      local.controller.abort(new Error('the build was cancelled'))
      return true
    }
    // The replica that runs it reads the flag with its next heartbeat.
    return this.#store.requestTemplateBuildCancel(id)
  }

  /**
   * The build's log so far, then each line, progress and the end as they come: from this replica's
   * own events, or read from the store every FOLLOW_MS for another's build.
   */
  async *follow(build: TemplateBuild, signal: AbortSignal): AsyncGenerator<BuildEvent> {
    const local = this.#builds.get(build.id)
    if (local) yield* this.#followLocal(local, signal)
    else yield* this.#followStored(build, signal)
  }

  async *#followLocal(build: LocalBuild, signal: AbortSignal): AsyncGenerator<BuildEvent> {
    const queue: BuildEvent[] = []
    let wake: (() => void) | undefined
    const listener = (event: BuildEvent) => {
      queue.push(event)
      wake?.()
    }
    const set = this.#listeners.get(build.id) ?? new Set()
    this.#listeners.set(build.id, set)
    set.add(listener)
    const stop = () => wake?.()
    signal.addEventListener('abort', stop)
    try {
      // The backlog as it is now; lines logged while it goes out come through the listener.
      for (const line of build.log.slice(0, build.log.length)) yield { type: 'log', line }
      if (ended(build)) queue.push({ type: 'end', build })
      while (!signal.aborted) {
        const event = queue.shift()
        if (!event) {
          await new Promise<void>((resolve) => {
            wake = resolve
          })
          continue
        }
        yield event
        if (event.type === 'end') return
      }
    } finally {
      set.delete(listener)
      signal.removeEventListener('abort', stop)
    }
  }

  async *#followStored(build: TemplateBuild, signal: AbortSignal): AsyncGenerator<BuildEvent> {
    let offset = 0
    let progress = JSON.stringify(build.progress)
    while (!signal.aborted) {
      // The state first: the runner writes its lines before it, so the lines read after an end are all of them.
      const current = await this.get(build.id, build.owner)
      for (;;) {
        const lines = await this.#store.templateBuildLog(build.id, offset, 1000)
        offset += lines.length
        for (const line of lines) yield { type: 'log', line }
        if (lines.length < 1000) break
      }
      if (JSON.stringify(current.progress) !== progress && current.progress) {
        progress = JSON.stringify(current.progress)
        yield { type: 'progress', ...current.progress }
      }
      if (ended(current)) {
        yield { type: 'end', build: current }
        return
      }
      await sleep(FOLLOW_MS, undefined, { signal }).catch(() => undefined)
    }
  }

  /**
   * Cancels every build (the server stops), and writes their end to the store while it is open: a
   * build that does not stop within a few seconds is failed by the other replicas when it lapses.
   */
  async close(): Promise<void> {
    const running = [...this.#builds.values()].filter((build) => !ended(build))
    for (const build of running) build.controller.abort(new Error('the server stopped'))
    await Promise.race([
      Promise.all(running.map((build) => build.done)),
      sleep(5000, undefined, { ref: false }),
    ])
    await Promise.all([...this.#builds.values()].map((build) => this.#flush(build)))
    this.#closed = true
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #emit(build: TemplateBuild, event: BuildEvent) {
    for (const listener of this.#listeners.get(build.id) ?? []) listener(event)
  }

  #log(build: LocalBuild, message: string, level: BuildLogLine['level'] = 'info', step?: number) {
    if (build.log.length >= MAX_LOG_LINES) return
    const line: BuildLogLine = {
      timestamp: new Date().toISOString(),
      level,
      message:
        build.log.length === MAX_LOG_LINES - 1 ? '… (the rest of the log is cut)' : hidePasswords(message),
      ...(step !== undefined ? { step } : {}),
    }
    build.log.push(line)
    this.#emit(build, { type: 'log', line })
    if (build.log.length - build.stored >= FLUSH_LINES) void this.#flush(build)
  }

  /** Writes what the store lacks of a build: its new lines, then its state. A failed write is tried again at the next tick. */
  #flush(build: LocalBuild): Promise<void> {
    build.writing = build.writing.then(async () => {
      try {
        const lines = build.log.slice(build.stored)
        if (lines.length > 0) {
          await this.#store.appendTemplateBuildLog(build.id, build.stored, lines)
          build.stored += lines.length
        }
        if (build.dirty) {
          build.dirty = false
          await this.#store
            .updateTemplateBuild(build.id, {
              status: build.status,
              ...(build.progress ? { progress: build.progress } : {}),
              ...(build.reason ? { reason: build.reason } : {}),
              ...(build.template ? { template: { ...build.template } } : {}),
              finished: build.finishedAt !== undefined,
            })
            .catch((error: unknown) => {
              build.dirty = true
              throw error
            })
        }
      } catch {
        // The store is unreachable for now: the next tick writes it.
      }
    })
    return build.writing
  }

  /** While this replica has builds the store lacks something of: flush them, and beat for those under way. */
  #tick() {
    if (this.#timer || this.#closed) return
    this.#timer = setInterval(() => {
      const pending = [...this.#builds.values()].filter(
        (b) => !ended(b) || b.dirty || b.stored < b.log.length,
      )
      if (pending.length === 0) {
        clearInterval(this.#timer)
        this.#timer = undefined
        return
      }
      for (const build of pending) void this.#flush(build)
      if (Date.now() - this.#lastBeat >= HEARTBEAT_MS) {
        this.#lastBeat = Date.now()
        const live = pending.filter((b) => !ended(b))
        this.#store
          .beatTemplateBuilds(
            this.#replica,
            live.map((b) => b.id),
          )
          .then((cancelled) => {
            for (const id of cancelled)
              this.#builds.get(id)?.controller.abort(new Error('the build was cancelled'))
          })
          .catch(() => undefined)
      }
    }, FLUSH_MS)
    this.#timer.unref()
  }

  /** Resolves when it is this build's turn. */
  #turn(): Promise<void> {
    if (!this.#running) {
      this.#running = true
      return Promise.resolve()
    }
    return new Promise((resolve) => this.#queue.push(resolve))
  }

  #next() {
    const next = this.#queue.shift()
    if (next) next()
    else this.#running = false
  }

  async #run(build: LocalBuild, run: RunBuild) {
    const { signal } = build.controller
    const timer = setTimeout(
      () =>
        build.controller.abort(
          new Error(`the build ran past its time limit (${this.limits.timeoutMs / 1000} s)`),
        ),
      this.limits.timeoutMs,
    )
    try {
      if (signal.aborted) throw signal.reason
      build.status = 'building'
      build.dirty = true
      this.#log(build, `Building template "${build.name}"`)
      const reporter: BuildReporter = {
        log: (message, options = {}) => this.#log(build, message, options.level, options.step),
        progress: (step, total, title) => {
          build.progress = { step, total, title }
          build.dirty = true
          this.#emit(build, { type: 'progress', step, total, title })
        },
      }
      const template = await run({ reporter, signal, limits: this.limits })
      await this.#share(build, template)
      build.template = templateView(template)
      build.status = 'ready'
      this.#log(build, `Template "${build.name}" is ready (${template.id.slice(0, 12)})`)
    } catch (error) {
      const cancelled = signal.aborted && /cancelled|server stopped/.test(String(signal.reason?.message))
      build.status = cancelled ? 'cancelled' : 'error'
      const message = signal.aborted
        ? String(signal.reason?.message ?? 'the build was stopped')
        : error instanceof Error
          ? error.message
          : String(error)
      const step = stepOf(error)
      build.reason = { message: hidePasswords(message), ...(step !== undefined ? { step } : {}) }
      this.#log(build, message, 'error', step)
    } finally {
      clearTimeout(timer)
      build.finishedAt = new Date()
      build.dirty = true
      void this.#flush(build)
      this.#emit(build, { type: 'end', build })
      this.#listeners.delete(build.id)
      this.#next()
    }
  }

  /** Puts the template in the store for the other replicas; a failure is said in the log, and the build stays good here. */
  async #share(build: LocalBuild, template: BuiltTemplate) {
    if (!this.#publish) return
    try {
      const bytes = await this.#publish(template, build.name)
      if (bytes > 0)
        this.#log(
          build,
          `Shared with the other replicas through the database (${(bytes / 1024 ** 2).toFixed(1)} MiB)`,
        )
    } catch (error) {
      this.#log(
        build,
        `The template could not be shared with the other replicas (${error instanceof Error ? error.message : String(error)}): only this one starts it`,
        'warn',
      )
    }
  }

  /** Drops builds that ended long enough ago, here and in the store. */
  #forget() {
    const before = Date.now() - this.#keepMs
    for (const [id, build] of this.#builds)
      if (build.finishedAt && build.finishedAt.getTime() < before) this.#builds.delete(id)
    void this.#store.forgetTemplateBuilds(new Date(before).toISOString()).catch(() => undefined)
  }
}

/** Why a build whose replica stopped beating failed. */
function lapsed(lapseMs: number): string {
  return `the replica that ran the build stopped (no sign of it for ${Math.round(lapseMs / 1000)} s)`
}

export function ended(build: Pick<TemplateBuild, 'status'>): boolean {
  return build.status === 'ready' || build.status === 'error' || build.status === 'cancelled'
}

function notFound(id: string): NotFoundError {
  return new NotFoundError(`No template build ${id} (an ended build is kept for its status for a while)`)
}

/** Another replica's build, as the store has it. */
function fromStore(stored: StoredTemplateBuild): TemplateBuild {
  return {
    id: stored.id,
    name: stored.name,
    owner: stored.owner,
    status: stored.status,
    ...(stored.progress ? { progress: stored.progress } : {}),
    ...(stored.reason ? { reason: stored.reason } : {}),
    ...(stored.template ? { template: stored.template as unknown as TemplateView } : {}),
    createdAt: new Date(stored.createdAt),
    ...(stored.finishedAt ? { finishedAt: new Date(stored.finishedAt) } : {}),
  }
}

/**
 * A log line with the passwords of the URLs in it hidden (a pip index URL may carry one): the log
 * is kept in the database and shown to whoever may see the build.
 */
function hidePasswords(message: string): string {
  return message.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*):[^@/?#\s]*@/gi, '$1:***@')
}

/** The step an error names, if it names one (a TemplateBuildError's `step.number`). */
function stepOf(error: unknown): number | undefined {
  const step = (error as { step?: { number?: unknown } } | undefined)?.step?.number
  return typeof step === 'number' ? step : undefined
}
