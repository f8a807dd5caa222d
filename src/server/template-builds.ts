/**
 * Template builds that API clients ask for (/api/templates and E2B's Template.build): untrusted
 * code, so off unless the operator allows them (`serve --allow-template-builds`), one at a time,
 * each bounded in time, disk and memory, and cancellable. A build is kept in memory with its log
 * (for E2B's status polling and the SSE stream) for a while after it ends; the template it makes
 * is in the store under ANALYST_HOME/templates, where every replica that shares it finds it.
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'
import {
  AnalystError,
  ConflictError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  RateLimitError,
} from '../errors.js'
import type { BuiltTemplate } from '../templates/types.js'

/**
 * A build's status asked of a replica that does not run it: builds live in the memory of the
 * replica that took them (421 Misdirected Request: this server cannot answer for it).
 */
export class BuildElsewhereError extends AnalystError {
  static override readonly errorName: string = 'BuildElsewhereError'
  override readonly status = 421
}

/** What to do when a build's requests reach several replicas. */
const ELSEWHERE_HINT =
  "Send a build's requests (POST /v3/templates, its build and status; /api/templates) to one replica: route /templates/, /v2/templates/, /v3/templates and /api/templates with session affinity (or run builds on one replica). The template it makes is in the store every replica shares (or build with analyst template build and carry it with ANALYST_TEMPLATE_IMPORT)."

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

export interface BuildLogLine {
  /** ISO 8601. */
  timestamp: string
  level: 'debug' | 'info' | 'warn' | 'error'
  message: string
  /** The builder's number of the step it belongs to (1 the base, then each step of the recipe, then the finish). */
  step?: number
}

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
}

export type BuildStatus = 'waiting' | 'building' | 'ready' | 'error' | 'cancelled'

export interface TemplateBuild {
  readonly id: string
  /** The name the template gets. */
  readonly name: string
  readonly owner: string | null
  status: BuildStatus
  /** Which step runs (1-based) of how many, and its title. */
  progress?: { step: number; total: number; title: string }
  readonly log: BuildLogLine[]
  /** Why it failed: the message and the step (the builder's number of it). */
  reason?: { message: string; step?: number }
  template?: BuiltTemplate
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
  limits?: Partial<TemplateBuildLimits>
  /** Builds waiting for their turn, beyond the one running. @default 4 */
  maxWaiting?: number
  /** How long an ended build is kept for its status. @default 1 hour */
  keepMs?: number
  /** This replica's name, tagged in its builds' ids so that another replica can say where one runs. @default this process */
  replica?: string
}

/** A build's log is capped: a chatty apt-get should not hold the server's memory. */
const MAX_LOG_LINES = 20_000

export class TemplateBuilds {
  readonly allowed: boolean
  readonly limits: TemplateBuildLimits
  readonly #builds = new Map<string, TemplateBuild>()
  readonly #controllers = new Map<string, AbortController>()
  readonly #listeners = new Map<string, Set<(event: BuildEvent) => void>>()
  readonly #queue: Array<() => void> = []
  #running = false
  readonly #maxWaiting: number
  readonly #keepMs: number
  readonly #tag: string

  constructor(options: TemplateBuildsOptions) {
    this.allowed = options.allowed
    this.limits = { ...DEFAULT_BUILD_LIMITS, ...options.limits }
    this.#maxWaiting = options.maxWaiting ?? 4
    this.#keepMs = options.keepMs ?? 3600_000
    this.#tag = replicaTag(options.replica ?? `${process.pid}:${randomUUID()}`)
  }

  /** A new build's id: a UUID with this replica's tag, so that another replica can tell it is not its own. */
  newId(): string {
    return `${randomUUID()}-${this.#tag}`
  }

  /** Throws what to do when the id is another replica's build; returns when it may be this one's. */
  assertHere(id: string): void {
    const tag = /^[0-9a-f-]{36}-([0-9a-f]{8})$/.exec(id)?.[1]
    if (tag && tag !== this.#tag)
      throw new BuildElsewhereError(
        `Template build ${id} runs on another replica, not this one: builds are kept by the replica that runs them`,
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

  /** Starts a build (or queues it behind the one running); it runs on after the request ends. */
  start(name: string, owner: string | null, run: RunBuild, id: string = this.newId()): TemplateBuild {
    this.assertAllowed()
    this.#forget()
    const waiting = [...this.#builds.values()].filter((b) => b.status === 'waiting').length
    if (waiting >= this.#maxWaiting)
      throw new RateLimitError(`${waiting} template builds are waiting already`, {
        hint: 'Try again when one has finished.',
        retryAfterSeconds: 60,
      })
    if ([...this.#builds.values()].some((b) => b.name === name && !ended(b)))
      throw new ConflictError(`A build of "${name}" is under way already`, {
        hint: 'Wait for it to end, or cancel it first.',
      })
    const build: TemplateBuild = {
      id,
      name,
      owner,
      status: 'waiting',
      log: [],
      createdAt: new Date(),
    }
    const controller = new AbortController()
    this.#builds.set(build.id, build)
    this.#controllers.set(build.id, controller)
    void this.#turn().then(() => this.#run(build, controller, run))
    return build
  }

  /** The build of this id if the caller may see it (its owner), else a 404. */
  get(id: string, owner: string | null): TemplateBuild {
    const build = this.#builds.get(id)
    if (!build || build.owner !== owner) {
      this.assertHere(id)
      throw new NotFoundError(`No template build ${id} (an ended build is kept for its status for a while)`)
    }
    return build
  }

  /** Builds of this owner, newest first. */
  list(owner: string | null): TemplateBuild[] {
    return [...this.#builds.values()].filter((b) => b.owner === owner).reverse()
  }

  /** Stops a build: its processes end, nothing of it is kept. False when it had ended already. */
  cancel(id: string, owner: string | null): boolean {
    const build = this.get(id, owner)
    if (ended(build)) return false
    this.#controllers.get(id)?.abort(new Error('the build was cancelled'))
    return true
  }

  /** Calls `listener` for each event of the build from now on; returns the unsubscribe. */
  subscribe(id: string, listener: (event: BuildEvent) => void): () => void {
    const set = this.#listeners.get(id) ?? new Set()
    this.#listeners.set(id, set)
    set.add(listener)
    return () => set.delete(listener)
  }

  /** Cancels every build (the server stops). */
  close(): void {
    for (const controller of this.#controllers.values()) controller.abort(new Error('the server stopped'))
  }

  #emit(build: TemplateBuild, event: BuildEvent) {
    for (const listener of this.#listeners.get(build.id) ?? []) listener(event)
  }

  #log(build: TemplateBuild, message: string, level: BuildLogLine['level'] = 'info', step?: number) {
    if (build.log.length >= MAX_LOG_LINES) return
    const line: BuildLogLine = {
      timestamp: new Date().toISOString(),
      level,
      message: build.log.length === MAX_LOG_LINES - 1 ? '… (the rest of the log is cut)' : message,
      ...(step !== undefined ? { step } : {}),
    }
    build.log.push(line)
    this.#emit(build, { type: 'log', line })
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

  async #run(build: TemplateBuild, controller: AbortController, run: RunBuild) {
    const { signal } = controller
    const timer = setTimeout(
      () =>
        controller.abort(new Error(`the build ran past its time limit (${this.limits.timeoutMs / 1000} s)`)),
      this.limits.timeoutMs,
    )
    try {
      if (signal.aborted) throw signal.reason
      build.status = 'building'
      this.#log(build, `Building template "${build.name}"`)
      const reporter: BuildReporter = {
        log: (message, options = {}) => this.#log(build, message, options.level, options.step),
        progress: (step, total, title) => {
          build.progress = { step, total, title }
          this.#emit(build, { type: 'progress', step, total, title })
        },
      }
      build.template = await run({ reporter, signal, limits: this.limits })
      build.status = 'ready'
      this.#log(build, `Template "${build.name}" is ready (${build.template.id.slice(0, 12)})`)
    } catch (error) {
      const cancelled = signal.aborted && /cancelled|server stopped/.test(String(signal.reason?.message))
      build.status = cancelled ? 'cancelled' : 'error'
      const message = signal.aborted
        ? String(signal.reason?.message ?? 'the build was stopped')
        : error instanceof Error
          ? error.message
          : String(error)
      const step = stepOf(error)
      build.reason = { message, ...(step !== undefined ? { step } : {}) }
      this.#log(build, message, 'error', step)
    } finally {
      clearTimeout(timer)
      build.finishedAt = new Date()
      this.#controllers.delete(build.id)
      this.#emit(build, { type: 'end', build })
      this.#listeners.delete(build.id)
      this.#next()
    }
  }

  /** Drops builds that ended long enough ago. */
  #forget() {
    const before = Date.now() - this.#keepMs
    for (const [id, build] of this.#builds)
      if (build.finishedAt && build.finishedAt.getTime() < before) this.#builds.delete(id)
  }
}

export function ended(build: TemplateBuild): boolean {
  return build.status === 'ready' || build.status === 'error' || build.status === 'cancelled'
}

/** The step an error names, if it names one (a TemplateBuildError's `step.number`). */
function stepOf(error: unknown): number | undefined {
  const step = (error as { step?: { number?: unknown } } | undefined)?.step?.number
  return typeof step === 'number' ? step : undefined
}
