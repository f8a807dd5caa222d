/**
 * Writes a run to the store as it happens: the question when it starts, each step when it ends
 * (with its charts and files as blobs, and what the guard or the sandbox stopped, in one commit),
 * the answer and the model's conversation when it is done, or why it ended without one.
 * @module
 */
import type { AgentEvent, Analyst, AskResult, StepRecord } from '../agent/index.js'
import { isDiskFull, StoreUnavailableError } from '../errors.js'
import type { Sandbox } from '../sandbox/index.js'
import type { ArtifactInput, BlobStore, HistoryStore, StoredResult, StoredRun } from '../store/index.js'
import { sandboxBlocks } from './blocked.js'
import { unlessUnreachable } from './outage.js'
import { UnfinishedStep } from './unfinished-step.js'

/** A kept frame's handle from a result's extra MIME types (sandbox output: checked, not trusted). */
export function frameOf(extra: unknown): StoredResult['frame'] {
  const frame = (extra as Record<string, unknown> | undefined)?.['analyst/frame'] as
    | Record<string, unknown>
    | undefined
  if (!frame || typeof frame.id !== 'string' || !/^[\w-]{1,64}$/.test(frame.id)) return undefined
  return { id: frame.id, rows: Number(frame.rows) || 0, columns: Number(frame.columns) || 0 }
}

/** The stored form of a step's results: text, table and chart data; images become artifacts. */
function storedResults(record: StepRecord): {
  results: StoredResult[]
  images: Array<{ name: string; png: string }>
} {
  const results: StoredResult[] = []
  const images: Array<{ name: string; png: string }> = []
  for (const result of (record.execution?.results ?? []) as Array<Record<string, unknown>>) {
    const png = typeof result.png === 'string' ? result.png : undefined
    const stored: StoredResult = { isMainResult: Boolean(result.isMainResult) }
    if (typeof result.text === 'string') stored.text = result.text
    if (result.data && typeof result.data === 'object') stored.data = result.data as Record<string, unknown[]>
    if (result.chart && typeof result.chart === 'object') stored.chart = result.chart
    const frame = frameOf(result.extra)
    if (frame) stored.frame = frame
    if (png) {
      const name = record.images?.[images.length] ?? `step-${record.step}-chart-${images.length + 1}.png`
      images.push({ name, png })
      stored.image = name
    }
    results.push(stored)
  }
  return { results, images }
}

/** Why a step's file was refused. */
const DISK_FULL = "the server's disk is full (its operator frees space under ANALYST_HOME)"

export class Recorder {
  private messagesBefore: number

  private constructor(
    private readonly stores: { history: HistoryStore; blobs: BlobStore },
    private readonly analyst: Analyst,
    private readonly sandbox: Sandbox,
    readonly run: StoredRun,
  ) {
    this.messagesBefore = analyst.messages.length
  }

  /** Records the question as a new run of the session; call just before asking it. */
  static async start(
    stores: { history: HistoryStore; blobs: BlobStore },
    analyst: Analyst,
    sandbox: Sandbox,
    question: string,
  ): Promise<Recorder> {
    const run = await stores.history.startRun(analyst.sessionId, question)
    return new Recorder(stores, analyst, sandbox, run)
  }

  private ended = false
  /** The step running now, kept as far as it got if the run ends before it does. */
  private readonly unfinished = new UnfinishedStep()

  async handle(event: AgentEvent) {
    if (this.ended) return
    this.unfinished.see(event)
    if (event.type === 'step-end') await this.step(event.record)
    if (event.type === 'done') await this.finish(event.result)
  }

  private async finish(result: AskResult) {
    this.ended = true
    await this.stores.history.finishRun(this.run.id, result)
    await this.saveMessages()
  }

  /** A run of one cell that a caller wrote: it ends with that cell, without an answer. */
  async finishCell() {
    this.ended = true
    await this.stores.history.finishRun(this.run.id, {
      answer: '',
      incomplete: false,
      unsupportedNumbers: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    })
    await this.saveMessages()
  }

  private async saveMessages() {
    await this.stores.history.appendMessages(
      this.analyst.sessionId,
      this.analyst.messages.slice(this.messagesBefore),
    )
  }

  /** `stopped`: why the step did not end (it is kept with its output so far, never replayed). */
  private async step(record: StepRecord, stopped?: string) {
    const { history, blobs } = this.stores
    const { results, images } = storedResults(record)
    const execution = record.execution
    const artifacts: ArtifactInput[] = []
    // A file that does not fit on the server's disk is refused for this step; the step is kept.
    const refused: string[] = []
    const kept = async (name: string, bytes: Uint8Array) => {
      try {
        return await blobs.put(bytes)
      } catch (error) {
        if (!isDiskFull(error)) throw error
        refused.push(name)
        return undefined
      }
    }
    for (const image of images) {
      const blob = await kept(image.name, Buffer.from(image.png, 'base64'))
      if (blob) artifacts.push({ name: image.name, kind: 'image', mimeType: 'image/png', ...blob })
    }
    for (const artifact of record.artifacts) {
      const bytes = await this.sandbox.files.read(artifact.name, { format: 'bytes' }).catch(() => undefined)
      if (!bytes) continue // removed again by a later cell: nothing to keep
      const blob = await kept(artifact.name, bytes)
      if (blob) artifacts.push({ name: artifact.name, kind: 'file', mimeType: artifact.mimeType, ...blob })
    }
    const diskFull = refused.length > 0 ? `[not kept: ${refused.join(', ')}: ${DISK_FULL}]\n` : ''
    if (diskFull) {
      // The step as the user sees it says so: its stderr, live and stored, and its files without
      // them; the analyst tells the model (record.refused) before its next call.
      execution?.logs.stderr.push(diskFull)
      record.artifacts = record.artifacts.filter((artifact) => !refused.includes(artifact.name))
      record.refused = refused.map((name) => ({ name, reason: DISK_FULL }))
    }
    const stderr = execution?.logs.stderr.join('') ?? ''
    await history.commitStep({
      runId: this.run.id,
      sessionId: this.analyst.sessionId,
      step: {
        step: record.step,
        code: record.code,
        text: record.text,
        tool: record.tool,
        stdout: execution?.logs.stdout.join('') ?? '',
        stderr,
        error: execution?.error,
        results,
        violations: record.violations,
        queries: execution?.queries,
        durationMs: record.durationMs,
        usage: record.usage,
        ...(stopped ? { stopped } : {}),
      },
      artifacts,
      blocked: [
        ...(record.violations ?? []).map((v) => ({
          source: 'guard' as const,
          rule: v.rule,
          message: v.message,
        })),
        ...sandboxBlocks(execution?.error, stderr).map((block) => ({ source: 'sandbox' as const, ...block })),
        ...refused.map((name) => ({
          source: 'sandbox' as const,
          rule: 'disk',
          message: `${name} was not kept: ${DISK_FULL}`,
        })),
      ],
    })
  }

  /**
   * How the run's end is being recorded, when the store was unreachable as it ended: settles once
   * it is recorded (or given up). Undefined when it was recorded at once.
   */
  pending?: Promise<boolean>

  /**
   * The question ended without an answer: an error, a cancellation, a crash. A run cut off by the
   * store going away is interrupted, with that reason, recorded once the store is back (outage.ts).
   */
  async fail(error: unknown, status: 'failed' | 'interrupted' = 'failed') {
    if (this.ended) return
    this.ended = true
    const message = error instanceof Error ? error.message : String(error)
    const storeGone = StoreUnavailableError.isInstance(error)
    const reason = storeGone
      ? `Interrupted: the database became unreachable while this question was being answered (${message}); the steps before it were kept.`
      : message
    let unfinished = this.unfinished.take()
    const recording = await unlessUnreachable(async () => {
      // The step that was running, as far as it got (once, the store retried): a reload shows it
      // as the live page did.
      if (unfinished) await this.step(unfinished, reason)
      unfinished = undefined
      await this.stores.history.failRun(this.run.id, reason, storeGone ? 'interrupted' : status)
      // Keep the conversation valid for a later question: what the model saw, minus a dangling turn.
      await this.saveMessages()
    })
    this.pending = recording?.later
  }
}
