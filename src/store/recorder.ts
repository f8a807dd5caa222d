/**
 * Writes an analysis to the store as it happens: the question when it starts, each step when it
 * ends (with its charts and files), the answer and the model's conversation when it is done.
 * @module
 */
import type { AgentEvent, AnalystSession, StepRecord } from '../agent/index.js'
import type { Sandbox } from '../sandbox/index.js'
import { sandboxBlocks } from './blocked.js'
import type { StepInput, Store } from './store.js'

/** The stored form of a step's results: text and table data; images become artifacts. */
function storedResults(record: StepRecord): {
  results: StepInput['results']
  images: Array<{ name: string; png: string }>
} {
  const results: StepInput['results'] = []
  const images: Array<{ name: string; png: string }> = []
  for (const result of (record.execution?.results ?? []) as Array<Record<string, unknown>>) {
    const png = typeof result.png === 'string' ? result.png : undefined
    const stored: StepInput['results'][number] = { isMainResult: Boolean(result.isMainResult) }
    if (typeof result.text === 'string') stored.text = result.text
    if (result.data && typeof result.data === 'object') stored.data = result.data as Record<string, unknown[]>
    if (result.chart && typeof result.chart === 'object') stored.chart = result.chart
    if (png) {
      const name = record.images?.[images.length] ?? `step-${record.step}-chart-${images.length + 1}.png`
      images.push({ name, png })
      stored.image = name
    }
    results.push(stored)
  }
  return { results, images }
}

export class Recorder {
  private runId: string | undefined
  private messagesBefore = 0

  constructor(
    private readonly store: Store,
    private readonly session: AnalystSession,
    private readonly sandbox: Sandbox,
  ) {}

  get sessionId(): string {
    return this.session.sessionId
  }

  /** Call before asking. */
  start(question: string): string {
    this.messagesBefore = this.session.messages.length
    this.runId = this.store.startRun(this.sessionId, question)
    return this.runId
  }

  async handle(event: AgentEvent) {
    if (!this.runId) return
    if (event.type === 'step-end') await this.step(event.record)
    if (event.type === 'done') {
      this.store.finishRun(this.runId, event.result)
      this.store.appendMessages(this.sessionId, this.session.messages.slice(this.messagesBefore))
      this.runId = undefined
    }
  }

  private async step(record: StepRecord) {
    const runId = this.runId as string
    const { results, images } = storedResults(record)
    const execution = record.execution
    const stepId = this.store.addStep(runId, this.sessionId, {
      step: record.step,
      code: record.code,
      text: record.text,
      stdout: execution?.logs.stdout.join('') ?? '',
      stderr: execution?.logs.stderr.join('') ?? '',
      error: execution?.error,
      results,
      violations: record.violations,
      durationMs: record.durationMs,
      usage: record.usage,
    })
    for (const violation of record.violations ?? []) {
      this.store.addBlocked(this.sessionId, stepId, {
        source: 'guard',
        rule: violation.rule,
        message: violation.message,
      })
    }
    for (const block of sandboxBlocks(execution?.error, execution?.logs.stderr.join('') ?? '')) {
      this.store.addBlocked(this.sessionId, stepId, { source: 'sandbox', ...block })
    }
    for (const image of images) {
      this.store.addArtifact(this.sessionId, stepId, {
        name: image.name,
        kind: 'image',
        mimeType: 'image/png',
        bytes: Buffer.from(image.png, 'base64'),
      })
    }
    for (const artifact of record.artifacts) {
      const bytes = await this.sandbox.files.read(artifact.name, { format: 'bytes' }).catch(() => undefined)
      if (bytes) {
        this.store.addArtifact(this.sessionId, stepId, {
          name: artifact.name,
          kind: 'file',
          mimeType: artifact.mimeType,
          bytes,
        })
      }
    }
  }

  /** The question ended without an answer: an error, a cancellation, a crash. */
  fail(error: unknown, status: 'failed' | 'interrupted' = 'failed') {
    if (!this.runId) return
    this.store.failRun(this.runId, error instanceof Error ? error.message : String(error), status)
    // Keep the conversation valid for a later question: what the model saw, minus a dangling turn.
    this.store.appendMessages(this.sessionId, this.session.messages.slice(this.messagesBefore))
    this.runId = undefined
  }
}
