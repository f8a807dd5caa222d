/**
 * The session service: the one place that knows the life of a session, for every door (the CLI,
 * the HTTP server, and next MCP and eval). Made from `{ history, blobs, provider, model }` with
 * exactly one sandbox provider, it creates and resumes sessions, adds their data, answers their
 * questions one after another (recording every step), names them, closes idle ones and shuts down.
 *
 * Words (one per thing): a **session** is a conversation about some data, kept in the store; a
 * **live session** is one whose sandbox and analyst are open in this process; a **run** is the
 * handling of one question; a **step** is one cell the model wrote and the sandbox ran.
 * @module
 */
import type { Readable } from 'node:stream'
import type { AgentEvent, AskResult, RefusedFile, StepRecord, Violation } from '../agent/index.js'
import type { DatasetProfile } from '../data/index.js'
import {
  ConflictError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  ShuttingDownError,
  StoppedError,
} from '../errors.js'
import type { ModelChoice } from '../models/index.js'
import type { FindPython } from '../python.js'
import {
  capabilitiesOf,
  type Execution,
  type MemoryBudget,
  type ResidentHandle,
  type Sandbox,
  type SandboxCreateOptions,
  type SandboxLimits,
  type SandboxProvider,
} from '../sandbox/index.js'
import { type ExportFormat, exportSession } from '../store/export/index.js'
import {
  type BlobStore,
  type HistoryStep,
  type HistoryStore,
  loadSessionHistory,
  type SessionHistory,
  type StopRequests,
  type StoredArtifact,
  type StoredDataset,
  type StoredRun,
  type StoredSession,
} from '../store/index.js'
import { type DataFileInput, profileInputs, sandboxFiles } from './datasets.js'
import { recordEnvironment, sessionLanguage, type TemplateCatalog } from './environment.js'
import type { SessionEvent } from './events.js'
import { forkSession } from './fork.js'
import { replicaName, SessionLease } from './lease.js'
import {
  type AnalystSettings,
  type LargeFiles,
  LiveSession,
  type SessionSources,
  type SourcesCaller,
} from './live.js'
import { isMissingModel, missingModel } from './no-model.js'
import { isOutage, unlessUnreachable } from './outage.js'
import { Recorder } from './recorder.js'
import { ReplicaStops, type StopOutcome, type StopWhich } from './replica-stops.js'
import { type Turn, Turns, untilAborted } from './turns.js'

/**
 * Records why a run ended without its end: the signal's reason when it was aborted (interrupted:
 * a Stop, a lost connection, a drain), else the error (failed). Gives what to throw: a Stop's own
 * error, for the door to say as such, else what was thrown (e.g. the model call's abort).
 */
async function recordFailure(recorder: Recorder, signal: AbortSignal, error: unknown): Promise<unknown> {
  await recorder.fail(
    signal.aborted ? (signal.reason ?? error) : error,
    signal.aborted ? 'interrupted' : 'failed',
  )
  return signal.aborted && StoppedError.isInstance(signal.reason) ? signal.reason : error
}

/** The title of a session until its first question names it. */
export const UNTITLED = 'New session'

/** A signed-in caller as the sources judge them (their groups and email), beside the owner. */
export type SignedInUser = Omit<SourcesCaller, 'owner'>

/** What a cell run with `runCell` did. */
export interface CellResult {
  runId: string
  /** Absent when the guard stopped the code. */
  execution?: Execution
  violations: Violation[]
  /** The cell's files and charts the server could not keep (its disk full), and why. */
  refused?: RefusedFile[]
}

export interface SessionServiceOptions {
  history: HistoryStore
  blobs: BlobStore
  /** The one provider every session's sandbox comes from. */
  provider: SandboxProvider
  /** Settings of every sandbox (isolation, network, limits, envs). Its limits win over a template's. */
  sandbox?: Omit<SandboxCreateOptions, 'data' | 'signal'>
  /**
   * Each sandbox's limits where neither its template (memory and CPUs) nor `sandbox.limits` sets
   * them: the server's own (serve's --memory and --cpus), which a template's go over, as in E2B's create.
   */
  defaultLimits?: Partial<SandboxLimits>
  /** The model for a session; `stored` is the spec it was last asked with, if any. */
  model: (stored?: string) => Promise<ModelChoice>
  /** How the analyst works (steps, timeouts, guard…). */
  analyst?: AnalystSettings
  /** The Python that profiles data files. @default the host's */
  python?: FindPython
  /** Where blobs are copied for sandboxes when the blob store keeps no files of its own. */
  cacheDir: string
  /** Close a live session after this long without questions; 0: never. @default 15 minutes */
  idleMs?: number
  /** This process's name among replicas over one store. @default host, pid and a random part */
  replica?: string
  /** How long a session's lease lasts unless renewed (renewed every third of it). @default ANALYST_LEASE_MS or 15 s */
  leaseMs?: number
  /** Stops across replicas (used when the history is shared): a Stop here reaches a run on another replica. */
  stops?: StopRequests
  /** What the service does, for metrics (see `ServiceObserver`). */
  observer?: ServiceObserver
  /** The host's sources that sessions pick by name (serve's ANALYST_SOURCES and --data). */
  sources?: SessionSources
  /** Data files too large for the sandbox stay on the host as SQL tables (serve); left out, every file goes in. */
  largeFiles?: LargeFiles
  /**
   * The memory budget the sandboxes share (serve's, with the E2B API's): idle sessions are paused
   * for it, least recently used first, and rebuilt at their next question; none idle, a question
   * that needs a sandbox is refused (CapacityError).
   */
  budget?: MemoryBudget
  /**
   * Where built templates are found (the door's ANALYST_HOME/templates): a new session records the
   * id of the build its template's name points at, and replays there while that build exists.
   * Left out, a session records the name alone.
   */
  templates?: TemplateCatalog
}

/** Told what the service does, as it does it (metrics count it; nothing waits for it). */
export interface ServiceObserver {
  /** An event of a run, with the session's model. */
  event?(event: SessionEvent, context: { sessionId: string; model: string }): void
  /** A sandbox was started for a session (and its cells replayed), in this long. */
  sandboxOpened?(ms: number): void
}

/** A question or cell of this process, waiting or running, that a Stop (or a drain) ends. */
interface Stoppable {
  stop: AbortController
  /** Its run, once it started. */
  runId?: string
  /** When it took the session's lease (the database's clock): it runs, or is about to. */
  leasedAtMs?: number
}

/** A step of a run as committed, or the run once it ended: what a client watching a run gets. */
export type RunWatchEvent =
  | { type: 'step'; step: HistoryStep }
  | { type: 'run-end'; run: StoredRun & { steps: HistoryStep[] } }

export class SessionService {
  private readonly live = new Map<string, Promise<LiveSession>>()
  /** Those of `live` still starting (their sandbox made, their cells replayed). */
  private readonly starting = new WeakSet<Promise<LiveSession>>()
  private readonly turns = new Map<string, Turns>()
  /** Live sessions to open again at their next turn (their sources changed). */
  private readonly stale = new Set<string>()
  /** Sessions paused to free memory, until their next turn rebuilds them. */
  private readonly paused = new Set<string>()
  /** Each live session's place in the memory budget. */
  private readonly residents = new Map<string, ResidentHandle>()
  /**
   * Each session's questions and cells, waiting or running, with their run once it started: Stop
   * ends them, and so does a drain that runs out of time.
   */
  private readonly stoppable = new Map<string, Set<Stoppable>>()
  /** Over a shared store: Stops asked on other replicas, and this one's for their runs. */
  private readonly replicaStops: ReplicaStops | undefined
  private closed = false
  private running = 0
  private queued = 0
  private sweeper: NodeJS.Timeout | undefined
  /** This process's name in the sessions' leases. */
  readonly replica: string
  private readonly leaseMs: number

  constructor(private readonly options: SessionServiceOptions) {
    this.replica = options.replica ?? replicaName()
    this.leaseMs = options.leaseMs ?? (Number(process.env.ANALYST_LEASE_MS) || 15_000)
    // Replicas share the store: a Stop on one reaches a run on another (one replica needs none of it).
    if (options.history.shared && options.stops)
      this.replicaStops = new ReplicaStops(options.stops, {
        replica: this.replica,
        ttlMs: this.leaseMs,
        stopHere: (sessionId, which) => this.stopHere(sessionId, which),
        has: (sessionId) => this.stoppable.has(sessionId),
      })
    // And each looks out for runs of dead replicas and sessions taken over.
    if (options.history.shared) {
      this.sweeper = setInterval(() => void this.sweep().catch(() => {}), Math.max(100, this.leaseMs / 2))
      this.sweeper.unref()
    }
  }

  get history(): HistoryStore {
    return this.options.history
  }

  /** Whether it has stopped taking questions (shutdown). */
  get closing(): boolean {
    return this.closed
  }

  /** Questions waiting or being answered, in all sessions. */
  get busy(): number {
    return this.running
  }

  /** Questions waiting for their session's turn (here or on another replica). */
  get waiting(): number {
    return this.queued
  }

  /** Sessions whose sandbox is open in this process. */
  get liveSessions(): number {
    return this.live.size
  }

  // ------------------------------------------------------------------ sessions

  /**
   * A new session. `sources` names the host's sources it may query (checked against what `owner`,
   * or the signed-in `user` with their groups, may use); left out, it gets the door's defaults.
   */
  async createSession(
    input: {
      title?: string
      owner?: string | null
      user?: SignedInUser
      model?: string
      sources?: string[]
      /** The template its sandbox starts from (a name or id); left out, the door's (--template), if any. */
      template?: string
    } = {},
  ): Promise<StoredSession> {
    const { sources: asked, user, template: askedTemplate, ...rest } = input
    const wanted = askedTemplate ?? this.options.sandbox?.template
    // Built on another replica (serve): brought here first.
    if (typeof wanted === 'string') await this.options.templates?.ensure?.(wanted)
    const environment = recordEnvironment(wanted, this.options.analyst?.language, this.options)
    const directory = this.options.sources
    if (!directory && asked?.length) {
      throw new InvalidArgumentError('This server offers no data sources to choose from', {
        hint: 'Name them in a JSON file and point ANALYST_SOURCES at it (or give --data URLs) where the server starts, or leave sources out.',
      })
    }
    const sources = directory?.choose(asked, { owner: input.owner ?? null, ...user }) ?? []
    return this.options.history.createSession({
      ...rest,
      ...(sources.length ? { sources } : {}),
      ...environment,
      title: input.title?.trim() || UNTITLED,
    })
  }

  /**
   * A copy of a session for another owner ("continue from here"), with its data, steps and
   * conversation. Its sources must be ones the new owner may use: a share shows a session, it does
   * not hand out its databases.
   */
  async forkSession(
    id: string,
    input: { owner: string | null; user?: SignedInUser },
  ): Promise<StoredSession> {
    const session = await this.getSession(id)
    const refused = this.refusedSources(session, { owner: input.owner, ...input.user })
    if (refused.length > 0) {
      throw new ForbiddenError(
        `This session queries ${refused.length === 1 ? 'a source' : 'sources'} you may not use (${refused.join(', ')}), so it cannot be continued as yours`,
        {
          hint: "Ask the server's admin for access to the source (its entry in ANALYST_SOURCES), or its owner to continue it.",
        },
      )
    }
    return forkSession(this.options.history, id, { owner: input.owner })
  }

  /** The session's sources that `caller` may not use (any, on a door that offers none). */
  private refusedSources(session: StoredSession, caller: SourcesCaller): string[] {
    if (!session.sources?.length) return []
    const allowed = new Set(this.options.sources?.available(caller).map((source) => source.name))
    return session.sources.filter((name) => !allowed.has(name))
  }

  /** The session; NotFoundError when there is none (or it is not the owner's). */
  async getSession(id: string, owner?: string | null): Promise<StoredSession> {
    const session = await this.options.history.getSession(id, owner)
    if (!session) throw new NotFoundError(`No session ${id}`)
    return session
  }

  /** The id of the one session whose id starts with `prefix`. */
  async resolveId(prefix: string, owner?: string | null): Promise<string> {
    const id = await this.options.history.resolveSessionId(prefix, owner)
    if (!id) throw new NotFoundError(`No session ${prefix} (or the prefix fits several)`)
    return id
  }

  listSessions(options: { owner?: string | null; limit?: number } = {}): Promise<StoredSession[]> {
    return this.options.history.listSessions(options)
  }

  /** Everything recorded for the session. */
  async sessionHistory(id: string, owner?: string | null): Promise<SessionHistory> {
    const history = await loadSessionHistory(this.options.history, id, owner)
    if (!history) throw new NotFoundError(`No session ${id}`)
    return history
  }

  /** Ends the session's sandbox and removes its records (blobs stay: other sessions may share them). */
  async deleteSession(id: string, owner?: string | null): Promise<void> {
    await this.getSession(id, owner)
    await this.close(id)
    await this.options.history.deleteSession(id)
  }

  // ------------------------------------------------------------------ data

  /**
   * Adds data files (files on this machine): profiled, kept as blobs, recorded, and readable at
   * once by a live session's code. One that cannot be read as data adds nothing.
   */
  async addData(
    sessionId: string,
    files: DataFileInput[],
    options: { owner?: string | null; signal?: AbortSignal } = {},
  ): Promise<StoredDataset[]> {
    const session = await this.getSession(sessionId, options.owner)
    const profiles = await profileInputs(files, { python: this.options.python, signal: options.signal })
    const kept = await this.keptOnHost(session, profiles)
    const datasets: StoredDataset[] = []
    for (const [index, file] of files.entries()) {
      const profile = profiles[index] as StoredDataset['profile']
      const table = kept.get(profile.name)
      if (table) profile.sqlTable = table
      const { sha256, size } = await this.options.blobs.put({ path: file.path }, { signal: options.signal })
      const dataset = {
        name: profile.name,
        bytes: size,
        sha256,
        profile,
        createdAt: new Date().toISOString(),
      }
      await this.options.history.putDataset(sessionId, dataset)
      datasets.push(dataset)
    }
    const live = await this.live.get(sessionId)?.catch(() => undefined)
    // New tables change its sources: the next turn opens the session again, with them.
    if (live && kept.size > 0) this.stale.add(sessionId)
    else if (live) await live.addData(await sandboxFiles(datasets, this.filesContext(options.signal)))
    return datasets
  }

  /**
   * Which of these files stay on the host as SQL tables (too large for the sandbox), by file name:
   * refused with what to do when the sandbox cannot query the host, when the file is not one DuckDB
   * reads, or when its table's name is taken.
   */
  private async keptOnHost(session: StoredSession, profiles: DatasetProfile[]): Promise<Map<string, string>> {
    const kept = new Map<string, string>()
    const large = this.options.largeFiles
    if (!large) return kept
    const taken = new Set([
      ...(session.sources ?? []),
      ...(await this.options.history.datasets(session.id)).flatMap((d) =>
        d.profile.sqlTable ? [d.profile.sqlTable] : [],
      ),
    ])
    for (const profile of profiles) {
      if (profile.bytes <= large.overBytes) continue
      const table = large.tableFor(profile.name)
      if (table === undefined) {
        throw new InvalidArgumentError(
          `${profile.name} is too large for the sandbox, and only CSV, TSV, Parquet and NDJSON files are kept on the host for sql()`,
          {
            hint: 'Save it as CSV or Parquet and upload that, or ask the admin to raise ANALYST_SQL_ONLY_BYTES.',
          },
        )
      }
      if (!capabilitiesOf(this.options.provider).hostQueries) {
        throw new InvalidArgumentError(
          `${profile.name} is too large for the sandbox, and this server's sandboxes cannot query files kept on the host`,
          {
            hint: 'Upload a smaller file (over ANALYST_SQL_ONLY_BYTES a file is queried on the host), or run the server on an engine with sql(): local, Jupyter or Modal.',
          },
        )
      }
      if (taken.has(table)) {
        throw new InvalidArgumentError(
          `${profile.name} would be the SQL table "${table}", a name this session already has`,
          {
            hint: 'Rename the file before uploading it.',
          },
        )
      }
      taken.add(table)
      kept.set(profile.name, table)
    }
    return kept
  }

  private filesContext(signal?: AbortSignal) {
    return { blobs: this.options.blobs, cacheDir: this.options.cacheDir, python: this.options.python, signal }
  }

  // ------------------------------------------------------------------ questions

  /**
   * Answers a question in its session, after the questions before it: yields the service's events
   * and the agent's as they happen, records every step, and returns the result. Aborting the signal
   * stops the model call and the cell; the run is then recorded as interrupted.
   */
  ask(
    sessionId: string,
    question: string,
    options: { owner?: string | null; user?: SignedInUser; signal?: AbortSignal } = {},
  ): AsyncGenerator<SessionEvent, AskResult> {
    const text = question.trim()
    if (!text) throw new InvalidArgumentError('The question is empty')
    return this.inTurn(
      sessionId,
      text,
      { ...options, names: true, needsModel: true },
      async function* (live, recorder, signal) {
        let result: AskResult | undefined
        try {
          await live.describeFor(text)
          for await (const event of live.analyst.ask(text, { signal })) {
            await recorder.handle(event)
            if (event.type === 'done') result = event.result
            yield event
          }
        } catch (error) {
          throw await recordFailure(recorder, signal, error)
        } finally {
          // The caller stopped listening before the end: the run did not finish.
          if (!result)
            await recorder.fail(new Error('The question was abandoned before its answer'), 'interrupted')
        }
        if (!result) throw new Error('The analysis ended without a result')
        return result
      },
    )
  }

  /**
   * Runs one cell that a caller wrote (an MCP client, a person) in the session's sandbox, in turn
   * with its questions: the guard first, then the sandbox. Recorded as a run of one step, and told
   * to the session's analyst, so that a later question sees what it did.
   */
  async runCell(
    sessionId: string,
    code: string,
    options: {
      owner?: string | null
      user?: SignedInUser
      signal?: AbortSignal
      timeoutMs?: number
      /** Names the run in the history, e.g. the tool that sent the cell. @default 'run_python' */
      label?: string
      /** Names the cell's images (1, 2… in the order of its PNG results). @default step-1-chart-N.png */
      nameImage?: (index: number) => string
      /** Each event as it happens (preparing, ready, run-start, stdout…). */
      onEvent?: (event: SessionEvent) => void
    } = {},
  ): Promise<CellResult> {
    if (!code.trim()) throw new InvalidArgumentError('The code is empty')
    const running = this.inTurn(
      sessionId,
      options.label ?? 'run_python',
      options,
      async function* (live, recorder, signal) {
        const started = Date.now()
        // What it prints and shows as it runs reaches the recorder, which keeps it if the cell is stopped.
        const see = (event: SessionEvent) => void recorder.handle(event as AgentEvent)
        let told = false
        try {
          const violations = (await live.check?.(code)) ?? []
          if (violations.length === 0) see({ type: 'code', step: 1, code, source: 'text' })
          const execution =
            violations.length > 0
              ? undefined
              : await live.sandbox.runCode(code, {
                  timeoutMs: options.timeoutMs,
                  signal,
                  ...live.runOptions,
                  onStdout: (message) => see({ type: 'stdout', step: 1, text: message.line }),
                  onStderr: (message) => see({ type: 'stderr', step: 1, text: message.line }),
                  onResult: (result) => see({ type: 'result', step: 1, result }),
                  onError: (error) => see({ type: 'error', step: 1, error }),
                })
          const { nameImage } = options
          const pngs = execution?.results.filter((result) => result.png) ?? []
          const record: StepRecord = {
            step: 1,
            code,
            execution: execution?.toJSON(),
            artifacts: execution?.artifacts ?? [],
            violations: violations.length > 0 ? violations : undefined,
            durationMs: Date.now() - started,
            images: nameImage && pngs.length > 0 ? pngs.map((_, i) => nameImage(i + 1)) : undefined,
          }
          try {
            await recorder.handle({ type: 'step-end', step: 1, record })
          } finally {
            // After the recorder: the model is told of the files it could not keep (record.refused).
            live.analyst.noteCell(code, execution, violations, record.refused)
            told = true
          }
          await recorder.finishCell()
          yield { type: 'step-end', step: 1, record } satisfies SessionEvent
          return {
            runId: recorder.run.id,
            execution,
            violations,
            ...(record.refused ? { refused: record.refused } : {}),
          }
        } catch (error) {
          // Stopped (or cut off) mid-cell: the model is told at the next question, as the kernel
          // may hold part of what it did.
          if (signal.aborted && !told) live.analyst.noteStoppedCell(code)
          throw await recordFailure(recorder, signal, error)
        }
      },
    )
    for (let next = await running.next(); ; next = await running.next()) {
      if (next.done) return next.value
      options.onEvent?.(next.value)
    }
  }

  /**
   * Does `work` in the session's turn (questions and cells of a session go one at a time, in the
   * order they came, on this replica and across replicas through the session's lease), with its
   * sandbox open (started and its state rebuilt first when need be: a session another replica
   * answered since is rebuilt too) and a run recorded for it. `work` gets a signal that aborts
   * when the caller's does, when a drain runs out of time, or when the lease is lost. Work that
   * does not need the model (a caller's cell) goes on without one when none can be had.
   */
  private async *inTurn<T>(
    sessionId: string,
    label: string,
    options: {
      owner?: string | null
      user?: SignedInUser
      signal?: AbortSignal
      names?: boolean
      needsModel?: boolean
    },
    work: (live: LiveSession, recorder: Recorder, signal: AbortSignal) => AsyncGenerator<SessionEvent, T>,
  ): AsyncGenerator<SessionEvent, T> {
    if (this.closed) throw new ShuttingDownError()
    // A place in line at once, before anything is awaited.
    const { turns, turn } = this.takeTurn(sessionId)
    this.running++
    this.queued++
    let waiting = true
    const stop = new AbortController()
    const stoppable: Stoppable = { stop }
    let stoppables = this.stoppable.get(sessionId)
    if (!stoppables) {
      stoppables = new Set()
      this.stoppable.set(sessionId, stoppables)
    }
    stoppables.add(stoppable)
    let live: LiveSession | undefined
    let lease: SessionLease | undefined
    let recorder: Recorder | undefined
    try {
      const session = await this.getSession(sessionId, options.owner)
      // Checked on every turn, not only when the session was made: a user who has left the group
      // that a source is kept to (or whose token lost it) stops querying it at once.
      if (options.owner !== undefined) {
        const refused = this.refusedSources(session, { owner: options.owner, ...options.user })
        if (refused.length > 0) {
          throw new ForbiddenError(
            `This session queries ${refused.length === 1 ? 'a source' : 'sources'} you may no longer use (${refused.join(', ')})`,
            {
              hint: "Ask the server's admin for access to the source again (its entry in ANALYST_SOURCES), or start a new session without it.",
            },
          )
        }
      }
      // The first question names the session, as soon as it is asked.
      if (options.names && session.title === UNTITLED)
        await this.options.history.updateSession(sessionId, { title: label.slice(0, 120) })
      const signals = [options.signal, stop.signal].filter((s): s is AbortSignal => s !== undefined)
      await untilAborted(turn.ready, AbortSignal.any(signals))
      if (this.closed) throw new ShuttingDownError()
      const replicaStops = this.replicaStops
      lease = await SessionLease.acquire(this.options.history, sessionId, this.replica, {
        ttlMs: this.leaseMs,
        signal: AbortSignal.any(signals),
        // A Stop asked on another replica while this one's listening connection was down.
        ...(replicaStops ? { onRenew: (held) => replicaStops.check(sessionId, held.atMs) } : {}),
      })
      stoppable.leasedAtMs = lease.atMs
      if (this.closed) throw new ShuttingDownError()
      // Another replica answered in this session since this one did, or the session has new host
      // tables: the kernel here is stale.
      const stale = this.stale.delete(sessionId)
      if (stale || (lease.previous !== null && lease.previous !== this.replica)) await this.close(sessionId)
      const signal = AbortSignal.any([...signals, lease.signal])
      let opening = this.live.get(sessionId)
      if (!opening) {
        const [model, datasets, steps] = await Promise.all([
          this.options.model(session.model).catch((error: unknown) => {
            if (options.needsModel) throw error
            return missingModel(error)
          }),
          this.options.history.datasets(sessionId),
          this.options.history.steps(sessionId),
        ])
        const replaying = steps.filter((step) => step.success).length
        const paused = this.paused.has(sessionId)
        const rerun = replaying ? ` re-running ${replaying} earlier cell(s)` : ''
        yield {
          type: 'preparing',
          message: paused
            ? `This session was paused to free memory; its state will be rebuilt${rerun ? `:${rerun}` : ''}…`
            : rerun
              ? `Starting the sandbox for this session and${rerun}…`
              : 'Starting the sandbox for this session…',
          model: model.spec,
          datasets: datasets.length,
          replaying,
          ...(paused ? { paused: 'memory' as const } : {}),
        }
        const started = Date.now()
        if (!this.live.get(sessionId)) await this.options.budget?.admit(session.owner ?? null)
        opening = this.live.get(sessionId) ?? this.open(sessionId, model, session)
        live = await opening
        this.paused.delete(sessionId)
        this.options.observer?.sandboxOpened?.(Date.now() - started)
        yield { type: 'ready', replayed: live.replayed }
      } else {
        live = await opening
      }
      clearTimeout(live.idleTimer)
      this.residents.get(sessionId)?.touch()
      if (options.needsModel && isMissingModel(live.model)) {
        // Opened without a model, for a caller's cells. The question needs one: its error says what
        // to set; once there is one, the session reopens with it (its cells replayed).
        const model = await this.options.model(session.model)
        await this.close(sessionId)
        live = await this.open(sessionId, model, session)
      }
      if (live.model.spec && session.model !== live.model.spec)
        await this.options.history.updateSession(sessionId, { model: live.model.spec })
      const stores = { history: this.options.history, blobs: this.options.blobs }
      recorder = await Recorder.start(stores, live.analyst, live.sandbox, label)
      stoppable.runId = recorder.run.id
      this.queued--
      waiting = false
      yield { type: 'run-start', runId: recorder.run.id, queued: turn.queued || lease.waited }
      const model = live.model.spec
      const observe = this.options.observer?.event
      const running = work(live, recorder, signal)
      let ended = false
      try {
        for (let next = await running.next(); ; next = await running.next()) {
          if (next.done) {
            ended = true
            return next.value
          }
          observe?.(next.value, { sessionId, model })
          yield next.value
        }
      } finally {
        // The caller stopped listening: the work ends too (and records why).
        if (!ended) await running.return(undefined as never)
      }
    } finally {
      // A run whose end waits for the store to come back keeps its session until it is recorded.
      const pending = recorder?.pending
      if (pending) void pending.finally(() => lease?.release())
      else await lease?.release()
      stoppables.delete(stoppable)
      if (stoppables.size === 0 && this.stoppable.get(sessionId) === stoppables)
        this.stoppable.delete(sessionId)
      this.running--
      if (waiting) this.queued--
      if (this.endTurn(sessionId, turns, turn) && live) this.scheduleIdle(live)
    }
  }

  /** A place in the session's line (questions, cells, a restart): taken before anything is awaited. */
  private takeTurn(sessionId: string): { turns: Turns; turn: Turn } {
    let turns = this.turns.get(sessionId)
    if (!turns) {
      turns = new Turns()
      this.turns.set(sessionId, turns)
    }
    return { turns, turn: turns.take() }
  }

  /** Gives the place up; true when the line is empty now. */
  private endTurn(sessionId: string, turns: Turns, turn: Turn): boolean {
    turn.release()
    if (turns.pending > 0) return false
    if (this.turns.get(sessionId) === turns) this.turns.delete(sessionId)
    return true
  }

  /**
   * Room in the memory budget for a question in this session, said before its answer streams: a
   * live session has it; another may pause idle ones for it, or is refused (CapacityError).
   */
  async admit(sessionId: string, owner: string | null): Promise<void> {
    if (this.live.has(sessionId)) return
    await this.options.budget?.admit(owner)
  }

  /** Ends an idle session's sandbox to free memory; its next question rebuilds it, and says so. */
  private async pause(sessionId: string): Promise<void> {
    if (this.turns.get(sessionId)?.pending) return
    this.paused.add(sessionId)
    await this.close(sessionId)
  }

  /** The live session in the memory budget, until it closes. */
  private budgeted(sessionId: string, session: StoredSession) {
    const budget = this.options.budget
    if (!budget) return
    this.residents.get(sessionId)?.remove()
    this.residents.set(
      sessionId,
      budget.add({
        owner: session.owner ?? null,
        describe: () => `session ${sessionId} ("${session.title}")`,
        busy: () => (this.turns.get(sessionId)?.pending ?? 0) > 0,
        evict: () => this.pause(sessionId),
      }),
    )
  }

  private open(sessionId: string, model: ModelChoice, session: StoredSession): Promise<LiveSession> {
    const opening = LiveSession.open(
      {
        history: this.options.history,
        blobs: this.options.blobs,
        provider: this.options.provider,
        sandbox: this.options.sandbox ?? {},
        defaultLimits: this.options.defaultLimits,
        analyst: this.options.analyst ?? {},
        python: this.options.python,
        cacheDir: this.options.cacheDir,
        sources: this.options.sources,
        largeFiles: this.options.largeFiles,
        templates: this.options.templates,
      },
      sessionId,
      model,
    )
    this.live.set(sessionId, opening)
    this.starting.add(opening)
    opening.then(
      () => {
        this.starting.delete(opening)
        if (this.live.get(sessionId) === opening) this.budgeted(sessionId, session)
      },
      () => {
        this.starting.delete(opening)
        if (this.live.get(sessionId) === opening) this.live.delete(sessionId)
      },
    )
    return opening
  }

  private scheduleIdle(live: LiveSession) {
    const idleMs = this.options.idleMs ?? 15 * 60_000
    if (idleMs <= 0 || this.closed) return
    clearTimeout(live.idleTimer)
    live.idleTimer = setTimeout(() => {
      // A question that arrived meanwhile keeps the session open.
      if (!this.turns.get(live.sessionId)?.pending) void this.close(live.sessionId)
    }, idleMs)
    live.idleTimer.unref()
  }

  /** A file of the live session's sandbox (e.g. an artifact a step just saved). */
  async readFile(sessionId: string, path: string): Promise<Uint8Array> {
    const live = await this.live.get(sessionId)?.catch(() => undefined)
    if (!live) throw new NotFoundError(`Session ${sessionId} has no sandbox open`)
    return live.sandbox.files.read(path, { format: 'bytes' })
  }

  // ------------------------------------------------------------------ what sessions produced

  /** The latest artifact of that name, with its content as a stream. */
  async openArtifact(
    sessionId: string,
    name: string,
    owner?: string | null,
  ): Promise<{ artifact: StoredArtifact; content: Readable }> {
    await this.getSession(sessionId, owner)
    const artifact = (await this.options.history.artifacts(sessionId)).filter((a) => a.name === name).at(-1)
    const content = artifact ? await this.options.blobs.get(artifact.sha256) : undefined
    if (!artifact || !content) throw new NotFoundError(`No file ${name} in this session`)
    return { artifact, content }
  }

  /** A data file of the session as it was added (its stored blob). */
  async openDataset(
    sessionId: string,
    name: string,
    owner?: string | null,
  ): Promise<{ dataset: StoredDataset; content: Readable }> {
    await this.getSession(sessionId, owner)
    const dataset = (await this.options.history.datasets(sessionId)).find((d) => d.name === name)
    const content = dataset?.sha256 ? await this.options.blobs.get(dataset.sha256) : undefined
    if (!dataset || !content) throw new NotFoundError(`No data file ${name} in this session`)
    return { dataset, content }
  }

  async export(sessionId: string, format: ExportFormat, owner?: string | null): Promise<string> {
    const history = await this.sessionHistory(sessionId, owner)
    const language = sessionLanguage(history.session, this.options.analyst?.language)
    return exportSession(history, format, this.options.blobs, language)
  }

  // ------------------------------------------------------------------ lifetime

  /**
   * After a crash: runs that were being answered are marked interrupted (their sessions can go
   * on). With replicas, only those whose replica's lease lapsed: the others' runs go on.
   */
  recoverInterrupted(): Promise<number> {
    return this.options.history.markInterrupted({ lapsed: this.options.history.shared })
  }

  /**
   * What replicas do now and then: runs of replicas that died (their lease lapsed) are marked
   * interrupted, and sandboxes of sessions that another replica took over are let go.
   */
  async sweep(): Promise<void> {
    await this.options.history.markInterrupted({ lapsed: true })
    await this.replicaStops?.forgetExpired()
    const idle = [...this.live.keys()].filter((id) => !this.turns.get(id)?.pending)
    const holders = await this.options.history.leaseHolders(idle)
    for (const id of idle) {
      const holder = holders.get(id)
      if (holder && holder !== this.replica && !this.turns.get(id)?.pending) await this.close(id)
    }
  }

  /**
   * A run as it goes: the steps committed after `afterStepId` (all of them by default), then each
   * new one as it is committed (by whichever replica answers), then the run once it has ended.
   * For a client that lost its stream and reconnects, perhaps to another replica.
   */
  async *watchRun(
    sessionId: string,
    runId: string,
    options: { owner?: string | null; afterStepId?: number; signal?: AbortSignal; pollMs?: number } = {},
  ): AsyncGenerator<RunWatchEvent> {
    let after = options.afterStepId ?? 0
    for (;;) {
      const history = await this.sessionHistory(sessionId, options.owner)
      const run = history.runs.find((r) => r.id === runId)
      if (!run) throw new NotFoundError(`No run ${runId} in session ${sessionId}`)
      for (const step of run.steps) {
        if (step.id <= after) continue
        after = step.id
        yield { type: 'step', step }
      }
      if (run.status !== 'running') {
        yield { type: 'run-end', run }
        return
      }
      await untilAborted(new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250)), options.signal)
    }
  }

  /**
   * Stops taking questions and lets those in progress finish, until `graceMs`; then ends the rest
   * (recorded as interrupted), releases their leases, and shuts down.
   */
  async drain(graceMs: number): Promise<void> {
    this.closed = true
    const deadline = Date.now() + graceMs
    while (this.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    for (const stoppables of this.stoppable.values())
      for (const { stop } of stoppables)
        stop.abort(new ShuttingDownError('The server stopped before the answer'))
    const cut = Date.now() + 10_000
    while (this.running > 0 && Date.now() < cut) await new Promise((r) => setTimeout(r, 50))
    await this.shutdown()
  }

  /**
   * The session's sandbox if it is open in this process (its kernel holds the session's tables),
   * after the owner check; undefined when it is not.
   */
  async openSandbox(sessionId: string, owner?: string | null): Promise<Sandbox | undefined> {
    return (await this.sandboxOf(sessionId, owner)).sandbox
  }

  /**
   * As openSandbox, but a sandbox still starting (made, its cells replayed) is said at once, with
   * the promise of it: a door can say why its answer waits.
   */
  async sandboxOf(
    sessionId: string,
    owner?: string | null,
  ): Promise<{ sandbox: Promise<Sandbox | undefined>; starting: boolean }> {
    await this.getSession(sessionId, owner)
    const opening = this.live.get(sessionId)
    return {
      sandbox: opening
        ? opening.then((live) => live.sandbox).catch(() => undefined)
        : Promise.resolve(undefined),
      starting: opening !== undefined && this.starting.has(opening),
    }
  }

  /**
   * Stops a run of the session as a person asks for it (the web UI's Stop): its cell is
   * interrupted (the kernel's state kept), its model call ends, and it is recorded as stopped
   * (StoppedError's reason), with the step that was running as far as it got. With `runId`, that
   * run (a question or a cell); without, every question and cell of the session, waiting or
   * running. Over a shared store the Stop reaches the replica that runs the session too
   * (replica-stops.ts). Says how many it stopped (none when they had ended already), counting the
   * other replica's once it answered; `pending` when it did not answer in time.
   */
  async stop(
    sessionId: string,
    options: { owner?: string | null; runId?: string } = {},
  ): Promise<StopOutcome> {
    await this.getSession(sessionId, options.owner)
    const stopped = this.stopHere(sessionId, options.runId !== undefined ? { runId: options.runId } : {})
    // The run named was here: nothing to ask of the others (and one replica asks nobody).
    if (!this.replicaStops || (options.runId !== undefined && stopped > 0)) return { stopped }
    try {
      return await this.replicaStops.request(sessionId, options.runId, stopped)
    } catch (error) {
      // The store away: what stopped here did; with nothing stopped, the 503 says to try again.
      if (stopped > 0 && isOutage(error)) return { stopped }
      throw error
    }
  }

  /** Stops the session's questions and cells in this process; how many. */
  private stopHere(sessionId: string, which: StopWhich): number {
    let stopped = 0
    for (const entry of this.stoppable.get(sessionId) ?? []) {
      if (which.runId !== undefined && entry.runId !== which.runId) continue
      if (which.leased && entry.leasedAtMs === undefined) continue
      // A Stop asked before this run took the lease was for the run before it.
      if (which.askedAtMs !== undefined && (entry.leasedAtMs ?? 0) > which.askedAtMs) continue
      if (entry.stop.signal.aborted) continue
      entry.stop.abort(new StoppedError())
      stopped++
    }
    return stopped
  }

  /**
   * Restarts the session's kernel, as a person asks for it: its sandbox ends now, and the next
   * question or cell starts a new one and rebuilds the state by replaying the session's cells that
   * ran without error (the count it says). Refused while a question or cell is running. With
   * replicas, the session's lease is taken and given back at once: a replica that answers in the
   * session holds it (refused too), and one that keeps a kernel for it sees another's name on it,
   * and lets that kernel go (at its sweep; its next turn would start a new one anyway).
   */
  async restartKernel(sessionId: string, owner?: string | null): Promise<{ replaying: number }> {
    await this.getSession(sessionId, owner)
    const running = () =>
      new ConflictError('A question or cell is running in this session', {
        hint: 'Stop it first (or wait for it to end), then restart the kernel.',
      })
    if (this.turns.get(sessionId)?.pending) throw running()
    // The session's turn: a question or cell asked here meanwhile waits for the restart (it would
    // share the lease below, which this gives back, and lose its kernel).
    const { turns, turn } = this.takeTurn(sessionId)
    try {
      const grant = await this.options.history.acquireLease(sessionId, this.replica, this.leaseMs)
      if (!grant.acquired) throw running()
      try {
        await this.close(sessionId)
      } finally {
        // The store briefly away: given back once it is (the lease lapses meanwhile anyway).
        await unlessUnreachable(() => this.options.history.releaseLease(sessionId, this.replica))
      }
    } finally {
      this.endTurn(sessionId, turns, turn)
    }
    const steps = await this.options.history.steps(sessionId)
    return { replaying: steps.filter((step) => step.success).length }
  }

  /** Ends a live session's sandbox (its history stays in the store). */
  async close(sessionId: string): Promise<void> {
    const opening = this.live.get(sessionId)
    if (!opening) return
    this.live.delete(sessionId)
    this.residents.get(sessionId)?.remove()
    this.residents.delete(sessionId)
    const live = await opening.catch(() => undefined)
    await live?.close()
  }

  /** Stops taking questions and ends every live session's sandbox. */
  async shutdown(): Promise<void> {
    this.closed = true
    clearInterval(this.sweeper)
    this.replicaStops?.close()
    await Promise.all([...this.live.keys()].map((id) => this.close(id)))
  }
}
