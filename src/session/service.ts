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
import type { AskResult, StepRecord, Violation } from '../agent/index.js'
import { InvalidArgumentError, NotFoundError, ShuttingDownError } from '../errors.js'
import type { ModelChoice } from '../models/index.js'
import type { FindPython } from '../python.js'
import type { Execution, SandboxCreateOptions, SandboxProvider } from '../sandbox/index.js'
import { type ExportFormat, exportSession } from '../store/export/index.js'
import {
  type BlobStore,
  type HistoryStore,
  loadSessionHistory,
  type SessionHistory,
  type StoredArtifact,
  type StoredDataset,
  type StoredSession,
} from '../store/index.js'
import { type DataFileInput, profileInputs, sandboxFiles } from './datasets.js'
import type { SessionEvent } from './events.js'
import { type AnalystSettings, LiveSession } from './live.js'
import { Recorder } from './recorder.js'
import { Turns, untilAborted } from './turns.js'

/** The title of a session until its first question names it. */
export const UNTITLED = 'New session'

/** What a cell run with `runCell` did. */
export interface CellResult {
  runId: string
  /** Absent when the guard stopped the code. */
  execution?: Execution
  violations: Violation[]
}

export interface SessionServiceOptions {
  history: HistoryStore
  blobs: BlobStore
  /** The one provider every session's sandbox comes from. */
  provider: SandboxProvider
  /** Settings of every sandbox (isolation, network, limits, envs). */
  sandbox?: Omit<SandboxCreateOptions, 'data' | 'signal'>
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
}

export class SessionService {
  private readonly live = new Map<string, Promise<LiveSession>>()
  private readonly turns = new Map<string, Turns>()
  private closed = false
  private running = 0

  constructor(private readonly options: SessionServiceOptions) {}

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

  // ------------------------------------------------------------------ sessions

  createSession(
    input: { title?: string; owner?: string | null; model?: string } = {},
  ): Promise<StoredSession> {
    return this.options.history.createSession({ ...input, title: input.title?.trim() || UNTITLED })
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
    await this.getSession(sessionId, options.owner)
    const profiles = await profileInputs(files, { python: this.options.python, signal: options.signal })
    const datasets: StoredDataset[] = []
    for (const [index, file] of files.entries()) {
      const profile = profiles[index] as StoredDataset['profile']
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
    if (live) await live.addData(await sandboxFiles(datasets, this.filesContext(options.signal)))
    return datasets
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
    options: { owner?: string | null; signal?: AbortSignal } = {},
  ): AsyncGenerator<SessionEvent, AskResult> {
    const text = question.trim()
    if (!text) throw new InvalidArgumentError('The question is empty')
    return this.inTurn(sessionId, text, { ...options, names: true }, async function* (live, recorder) {
      let result: AskResult | undefined
      try {
        for await (const event of live.analyst.ask(text, { signal: options.signal })) {
          await recorder.handle(event)
          if (event.type === 'done') result = event.result
          yield event
        }
      } catch (error) {
        await recorder.fail(error, options.signal?.aborted ? 'interrupted' : 'failed')
        throw error
      } finally {
        // The caller stopped listening before the end: the run did not finish.
        if (!result)
          await recorder.fail(new Error('The question was abandoned before its answer'), 'interrupted')
      }
      if (!result) throw new Error('The analysis ended without a result')
      return result
    })
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
      signal?: AbortSignal
      timeoutMs?: number
      /** Names the run in the history, e.g. the tool that sent the cell. @default 'run_python' */
      label?: string
      /** Each event as it happens (preparing, ready, run-start, stdout…). */
      onEvent?: (event: SessionEvent) => void
    } = {},
  ): Promise<CellResult> {
    if (!code.trim()) throw new InvalidArgumentError('The code is empty')
    const running = this.inTurn(
      sessionId,
      options.label ?? 'run_python',
      options,
      async function* (live, recorder) {
        const started = Date.now()
        try {
          const violations = (await live.check?.(code)) ?? []
          const execution =
            violations.length > 0
              ? undefined
              : await live.sandbox.runCode(code, { timeoutMs: options.timeoutMs, signal: options.signal })
          const record: StepRecord = {
            step: 1,
            code,
            execution: execution?.toJSON(),
            artifacts: execution?.artifacts ?? [],
            violations: violations.length > 0 ? violations : undefined,
            durationMs: Date.now() - started,
          }
          live.analyst.noteCell(code, execution, violations)
          await recorder.handle({ type: 'step-end', step: 1, record })
          await recorder.finishCell()
          yield { type: 'step-end', step: 1, record } satisfies SessionEvent
          return { runId: recorder.run.id, execution, violations }
        } catch (error) {
          await recorder.fail(error, options.signal?.aborted ? 'interrupted' : 'failed')
          throw error
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
   * order they came), with its sandbox open (started and its state rebuilt first when need be)
   * and a run recorded for it.
   */
  private async *inTurn<T>(
    sessionId: string,
    label: string,
    options: { owner?: string | null; signal?: AbortSignal; names?: boolean },
    work: (live: LiveSession, recorder: Recorder) => AsyncGenerator<SessionEvent, T>,
  ): AsyncGenerator<SessionEvent, T> {
    if (this.closed) throw new ShuttingDownError()
    // A place in line at once, before anything is awaited.
    let turns = this.turns.get(sessionId)
    if (!turns) {
      turns = new Turns()
      this.turns.set(sessionId, turns)
    }
    const turn = turns.take()
    this.running++
    let live: LiveSession | undefined
    try {
      const session = await this.getSession(sessionId, options.owner)
      // The first question names the session, as soon as it is asked.
      if (options.names && session.title === UNTITLED)
        await this.options.history.updateSession(sessionId, { title: label.slice(0, 120) })
      let opening = this.live.get(sessionId)
      if (!opening) {
        const [model, datasets, steps] = await Promise.all([
          this.options.model(session.model),
          this.options.history.datasets(sessionId),
          this.options.history.steps(sessionId),
        ])
        const replaying = steps.filter((step) => step.success).length
        yield {
          type: 'preparing',
          message: replaying
            ? `Starting the sandbox for this session and re-running ${replaying} earlier cell(s)…`
            : 'Starting the sandbox for this session…',
          model: model.spec,
          datasets: datasets.length,
          replaying,
        }
        opening = this.live.get(sessionId) ?? this.open(sessionId, model)
        live = await opening
        yield { type: 'ready', replayed: live.replayed }
      } else {
        live = await opening
      }
      clearTimeout(live.idleTimer)
      await untilAborted(turn.ready, options.signal)
      if (session.model !== live.model.spec)
        await this.options.history.updateSession(sessionId, { model: live.model.spec })
      const stores = { history: this.options.history, blobs: this.options.blobs }
      const recorder = await Recorder.start(stores, live.analyst, live.sandbox, label)
      yield { type: 'run-start', runId: recorder.run.id, queued: turn.queued }
      return yield* work(live, recorder)
    } finally {
      turn.release()
      this.running--
      if (turns.pending === 0) {
        this.turns.delete(sessionId)
        if (live) this.scheduleIdle(live)
      }
    }
  }

  private open(sessionId: string, model: ModelChoice): Promise<LiveSession> {
    const opening = LiveSession.open(
      {
        history: this.options.history,
        blobs: this.options.blobs,
        provider: this.options.provider,
        sandbox: this.options.sandbox ?? {},
        analyst: this.options.analyst ?? {},
        python: this.options.python,
        cacheDir: this.options.cacheDir,
      },
      sessionId,
      model,
    )
    this.live.set(sessionId, opening)
    opening.catch(() => {
      if (this.live.get(sessionId) === opening) this.live.delete(sessionId)
    })
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

  async export(sessionId: string, format: ExportFormat, owner?: string | null): Promise<string> {
    return exportSession(await this.sessionHistory(sessionId, owner), format, this.options.blobs)
  }

  // ------------------------------------------------------------------ lifetime

  /** After a crash: runs that were being answered are marked interrupted (their sessions can go on). */
  recoverInterrupted(): Promise<number> {
    return this.options.history.markInterrupted()
  }

  /** Ends a live session's sandbox (its history stays in the store). */
  async close(sessionId: string): Promise<void> {
    const opening = this.live.get(sessionId)
    if (!opening) return
    this.live.delete(sessionId)
    const live = await opening.catch(() => undefined)
    await live?.close()
  }

  /** Stops taking questions and ends every live session's sandbox. */
  async shutdown(): Promise<void> {
    this.closed = true
    await Promise.all([...this.live.keys()].map((id) => this.close(id)))
  }
}
