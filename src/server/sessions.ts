/**
 * Live analyses of the server: one sandbox and one analyst session per stored session while it is
 * in use, opened from the store on demand (its cells re-run, so a restart or another server can
 * continue it), questions queued one after another, closed when idle.
 * @module
 */
import type { AgentEvent, AskResult } from '../agent/index.js'
import { type OpenedAnalysis, openAnalysis } from '../agent/open.js'
import { formatProfiles } from '../data/index.js'
import type { ModelChoice } from '../models/index.js'
import type { CreateOpts } from '../sandbox/index.js'
import { Recorder } from '../store/recorder.js'
import { loadHistory } from '../store/resume.js'
import type { Store } from '../store/store.js'

export interface SessionManagerOptions {
  store: Store
  /** The model, resolved when first needed; throws when none is configured. */
  model: () => Promise<ModelChoice>
  sandbox?: CreateOpts
  /** Close a live analysis after this long without questions. @default 15 minutes */
  idleMs?: number
  maxSteps?: number
  cellTimeoutMs?: number
}

interface Live {
  opened: OpenedAnalysis
  recorder: Recorder
  /** The question being answered (and those queued behind it). */
  queue: Promise<unknown>
  pending: number
  idleTimer?: NodeJS.Timeout
}

export class SessionManager {
  private readonly live = new Map<string, Promise<Live>>()
  private closed = false

  constructor(private readonly options: SessionManagerOptions) {}

  /** Questions waiting or running, in all sessions. */
  get busy(): number {
    return this.running
  }
  private running = 0

  private async open(sessionId: string): Promise<Live> {
    const { store } = this.options
    const history = loadHistory(store, sessionId)
    const model = await this.options.model()
    const opened = await openAnalysis({
      model,
      data: history.data,
      sessionId,
      history: history.messages,
      evidence: history.evidence,
      replay: history.cells,
      maxSteps: this.options.maxSteps,
      cellTimeoutMs: this.options.cellTimeoutMs,
      nameImage: (step, index) => `step-${step}-chart-${index}.png`,
      sandbox: this.options.sandbox,
    })
    return {
      opened,
      recorder: new Recorder(store, opened.session, opened.sandbox),
      queue: Promise.resolve(),
      pending: 0,
    }
  }

  private get(sessionId: string): Promise<Live> {
    let live = this.live.get(sessionId)
    if (!live) {
      live = this.open(sessionId)
      this.live.set(sessionId, live)
      live.catch(() => this.live.delete(sessionId))
    }
    return live
  }

  /** Makes a newly uploaded file visible to a live analysis (a closed one reads it when it opens). */
  async addData(sessionId: string, path: string, name: string) {
    const live = this.live.get(sessionId)
    if (!live) return
    const { opened } = await live
    await opened.sandbox.files.addData(path, name)
    opened.session.setDataDescription(
      formatProfiles(this.options.store.datasets(sessionId).map((d) => d.profile)),
    )
  }

  /**
   * Answers a question in its session, after the ones before it. `onEvent` sees every event;
   * `onQueued` is told whether the question had to wait. Aborting stops the model call and the cell.
   */
  async ask(
    sessionId: string,
    question: string,
    onEvent: (event: AgentEvent) => void | Promise<void>,
    options: {
      signal?: AbortSignal
      /** Called at once when the session's sandbox has to be started (or rebuilt) first. */
      onPreparing?: () => void
      onStart?: (runId: string, queued: boolean) => void
    } = {},
  ): Promise<AskResult> {
    if (this.closed) throw new Error('The server is shutting down')
    this.running++
    try {
      if (!this.live.has(sessionId)) options.onPreparing?.()
      const live = await this.get(sessionId)
      clearTimeout(live.idleTimer)
      const queued = live.pending > 0
      live.pending++
      const turn = live.queue.then(async () => {
        options.signal?.throwIfAborted()
        const runId = live.recorder.start(question)
        options.onStart?.(runId, queued)
        try {
          let result: AskResult | undefined
          for await (const event of live.opened.session.ask(question, { signal: options.signal })) {
            await live.recorder.handle(event)
            await onEvent(event)
            if (event.type === 'done') result = event.result
          }
          return result as AskResult
        } catch (error) {
          live.recorder.fail(error, options.signal?.aborted ? 'interrupted' : 'failed')
          throw error
        }
      })
      live.queue = turn.catch(() => {})
      try {
        return await turn
      } finally {
        live.pending--
        if (live.pending === 0) this.scheduleIdle(sessionId, live)
      }
    } finally {
      this.running--
    }
  }

  private scheduleIdle(sessionId: string, live: Live) {
    live.idleTimer = setTimeout(() => void this.close(sessionId), this.options.idleMs ?? 15 * 60_000)
    live.idleTimer.unref()
  }

  /** Ends a session's sandbox (its history stays in the store). */
  async close(sessionId: string) {
    const live = this.live.get(sessionId)
    if (!live) return
    this.live.delete(sessionId)
    try {
      const { opened, idleTimer } = await live
      clearTimeout(idleTimer)
      await opened.close()
    } catch {
      // it never opened
    }
  }

  /** Stops taking questions and closes every sandbox. */
  async shutdown() {
    this.closed = true
    await Promise.all([...this.live.keys()].map((id) => this.close(id)))
  }
}
