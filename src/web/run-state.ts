/**
 * What the conversation shows of one question: built from a stored `RunView`, or event by event
 * from the ask stream. Both give the same shape, so one component renders past and live runs.
 * Results are untrusted sandbox output: only text, tables (`data`) and images are kept, never HTML.
 * @module
 */
import type { Violation } from '../agent/events.js'
import { executionFix, phraseFix } from '../fixes.js'
import { type Chart, parseChart } from '../sandbox/charts.js'
import type { ArtifactView, ResultView, RunStatus, RunView, StepView, StoredQuery } from '../server/types.js'
import type { ChartEdit } from '../store/export/chart-spec.js'
import type { StreamEvent } from './api.js'
import { artifactUrl } from './api.js'

export interface UiImage {
  /** A data: URI (streamed results) or an API path that needs the token (stored images). */
  src: string
  /** True for an API path. */
  api: boolean
  alt: string
}

export interface UiResult {
  isMainResult: boolean
  text?: string
  data?: Record<string, unknown[]>
  image?: UiImage
  /** The data behind a chart, drawn by the UI (the image is the fallback). */
  chart?: Chart
  /** The whole DataFrame as the kernel keeps it, for the grid to page (stored results only). */
  frame?: { id: string; rows: number; columns: number }
  /** A person's edit of the chart, kept with the result (stored results only). */
  chartEdit?: ChartEdit
}

export interface UiStep {
  step: number
  /** What the model said around the code. */
  prose?: string
  code: string
  stdout: string
  stderr: string
  error?: { name: string; value: string; traceback: string }
  results: UiResult[]
  artifacts: ArtifactView[]
  violations?: Violation[]
  /** What its sql() calls ran on the host's sources. */
  queries?: StoredQuery[]
  durationMs?: number
  running: boolean
  /** It was running when the run was stopped (or its stream lost): it did not end. */
  stopped?: boolean
}

export interface UiRun {
  id?: string
  question: string
  status: RunStatus
  steps: UiStep[]
  /** The model's reply as it streams in, before it turns out to be code or the answer. */
  draft: string
  answer?: string
  /** Questions to ask next, suggested with the answer. */
  followUps?: string[]
  incomplete: boolean
  unsupportedNumbers: string[]
  error?: string
  hint?: string
  /** The step the model is on, and the cap. */
  step?: number
  maxSteps?: number
  totalTokens?: number
  /** Waiting for an earlier question of the session to finish. */
  queued?: boolean
  /** What the server says of the session before the run (it was paused to free memory). */
  notice?: string
}

export function newRun(question: string): UiRun {
  return { question, status: 'running', steps: [], draft: '', incomplete: false, unsupportedNumbers: [] }
}

function imageOfStored(result: ResultView): UiImage | undefined {
  if (!result.image) return undefined
  return { src: result.image.url, api: true, alt: result.image.name }
}

function fromStoredStep(step: StepView): UiStep {
  return {
    step: step.step,
    prose: step.text,
    code: step.code,
    stdout: step.stdout,
    stderr: step.stderr,
    error: step.error,
    queries: step.queries,
    results: step.results.map((result) => ({
      isMainResult: result.isMainResult,
      text: result.text,
      data: isTable(result.data) ? result.data : undefined,
      image: imageOfStored(result),
      chart: parseChart(result.chart),
      frame: result.frame,
      chartEdit: result.chartEdit,
    })),
    artifacts: step.artifacts,
    violations: step.violations,
    durationMs: step.durationMs,
    running: false,
    ...(step.stopped ? { stopped: true } : {}),
  }
}

export function fromStored(run: RunView): UiRun {
  return {
    id: run.id,
    question: run.question,
    status: run.status,
    steps: run.steps.map(fromStoredStep),
    draft: '',
    answer: run.answer,
    followUps: run.followUps,
    incomplete: run.incomplete,
    unsupportedNumbers: run.unsupportedNumbers,
    error: run.error,
    totalTokens: run.usage.totalTokens,
  }
}

/**
 * What a step's traceback may not say of its error: Analyst's words on it (a MemoryError's limit,
 * added after Python raised it) and the setting that fixes it, for the web's reader.
 */
export function errorNote(error: { name: string; value: string; traceback?: string }): string | undefined {
  const unsaid = error.traceback && error.value && !error.traceback.includes(error.value)
  const parts = [unsaid ? `${error.name}: ${error.value}` : undefined, phraseFix(executionFix(error), 'http')]
  return parts.filter((part) => part !== undefined).join(' ') || undefined
}

/** A table is `{ column: values[] }`; anything else from the sandbox is not rendered as one. */
export function isTable(data: unknown): data is Record<string, unknown[]> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return false
  return Object.values(data).every(Array.isArray)
}

/** The prose around the code of a reply in text mode: the fenced blocks taken out. */
export function proseOf(text: string): string {
  return text
    .replace(/```[^\n]*\n[\s\S]*?(```|$)/g, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

function streamedImage(result: Record<string, unknown>, alt: string): UiImage | undefined {
  if (typeof result.png === 'string') return { src: `data:image/png;base64,${result.png}`, api: false, alt }
  if (typeof result.jpeg === 'string')
    return { src: `data:image/jpeg;base64,${result.jpeg}`, api: false, alt }
  // An SVG in <img> runs no script: it is shown as an image, never inlined into the page.
  if (typeof result.svg === 'string')
    return { src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(result.svg)}`, api: false, alt }
  return undefined
}

function updateStep(run: UiRun, number: number, change: (step: UiStep) => UiStep): UiRun {
  const index = run.steps.findIndex((step) => step.step === number)
  if (index === -1) return run
  const steps = run.steps.slice()
  steps[index] = change(steps[index] as UiStep)
  return { ...run, steps }
}

/** The run after one event of the ask stream. */
export function applyEvent(run: UiRun, event: StreamEvent, sessionId: string): UiRun {
  switch (event.type) {
    case 'preparing':
      return event.paused ? { ...run, notice: event.message } : run
    case 'run-start':
      return { ...run, id: event.runId, queued: event.queued }
    case 'step-start':
      return {
        ...run,
        queued: false,
        step: event.step,
        maxSteps: event.maxSteps,
        draft: '',
        steps: run.steps.map((step) => (step.running ? { ...step, running: false } : step)),
      }
    case 'model-text-delta':
      return { ...run, draft: run.draft + event.delta }
    case 'model-text':
      return { ...run, draft: event.text }
    case 'code': {
      const step: UiStep = {
        step: event.step,
        prose: proseOf(run.draft) || undefined,
        code: event.code,
        stdout: '',
        stderr: '',
        results: [],
        artifacts: [],
        running: true,
      }
      return { ...run, draft: '', steps: [...run.steps.filter((s) => s.step !== event.step), step] }
    }
    case 'guard':
      return updateStep(run, event.step, (step) => ({
        ...step,
        violations: event.violations,
        running: false,
      }))
    case 'stdout':
      return updateStep(run, event.step, (step) => ({ ...step, stdout: step.stdout + event.text }))
    case 'stderr':
      return updateStep(run, event.step, (step) => ({ ...step, stderr: step.stderr + event.text }))
    case 'result': {
      const raw = event.result as unknown as Record<string, unknown>
      return updateStep(run, event.step, (step) => {
        const image = streamedImage(raw, `Chart from step ${event.step}`)
        const result: UiResult = {
          isMainResult: Boolean(raw.isMainResult),
          text: typeof raw.text === 'string' ? raw.text : undefined,
          data: isTable(raw.data) ? raw.data : undefined,
          image,
          chart: parseChart(raw.chart),
        }
        return { ...step, results: [...step.results, result] }
      })
    }
    case 'error':
      return updateStep(run, event.step, (step) => ({ ...step, error: event.error }))
    case 'artifact': {
      const { artifact } = event
      const view: ArtifactView = {
        name: artifact.name,
        size: artifact.size,
        mimeType: artifact.mimeType,
        url: artifactUrl(sessionId, artifact.name),
      }
      return updateStep(run, event.step, (step) => ({
        ...step,
        artifacts: [...step.artifacts.filter((a) => a.name !== view.name), view],
      }))
    }
    case 'observation':
      return updateStep(run, event.step, (step) => ({ ...step, running: false }))
    case 'step-end': {
      const { record } = event
      // Files the server could not keep (its disk full) are not offered: the step's stderr, as the
      // recorder wrote it, says which and why, as the stored step will.
      const refused = new Set((record.refused ?? []).map((file) => file.name))
      return updateStep(run, event.step, (step) => ({
        ...step,
        running: false,
        durationMs: record.durationMs,
        queries: record.execution?.queries,
        ...(refused.size > 0
          ? {
              artifacts: step.artifacts.filter((artifact) => !refused.has(artifact.name)),
              stderr: record.execution?.logs.stderr.join('') ?? step.stderr,
            }
          : {}),
      }))
    }
    case 'usage':
      return { ...run, totalTokens: event.total.totalTokens }
    case 'answer':
      return {
        ...run,
        draft: '',
        answer: event.text,
        followUps: event.followUps,
        incomplete: event.incomplete,
        unsupportedNumbers: event.unsupportedNumbers,
      }
    case 'failed':
      return {
        ...run,
        status: 'failed',
        draft: '',
        error: event.message,
        hint: event.hint,
        steps: stopped(run),
      }
    case 'stopped':
      return endRun(run, event.message)
    case 'done': {
      const { result } = event
      const durations = new Map(result.steps.map((step) => [step.step, step.durationMs]))
      return {
        ...run,
        status: 'done',
        draft: '',
        answer: result.answer,
        followUps: result.followUps,
        incomplete: result.incomplete,
        unsupportedNumbers: result.unsupportedNumbers,
        totalTokens: result.usage.totalTokens,
        steps: run.steps.map((step) => ({
          ...step,
          running: false,
          durationMs: durations.get(step.step) ?? step.durationMs,
        })),
      }
    }
    default:
      return run
  }
}

function stopped(run: UiRun): UiStep[] {
  return run.steps.map((step) => (step.running ? { ...step, running: false, stopped: true } : step))
}

/** The stream ended without `done` or `failed` (the connection dropped, or the user stopped it). */
export function endRun(run: UiRun, reason?: string): UiRun {
  if (run.status !== 'running') return run
  return { ...run, status: 'interrupted', draft: '', error: reason, steps: stopped(run) }
}

/**
 * Carries what only the live run knew over to the stored run: the model's prose; and of a run
 * this page stopped (or lost), why, and the step that was running then, where the store does not
 * have it (a server that kept no step that did not end), so the code that was stopped stays in sight.
 */
export function mergeLive(stored: UiRun, live: UiRun | undefined): UiRun {
  if (!live || live.id !== stored.id) return stored
  const prose = new Map(live.steps.map((step) => [step.step, step.prose]))
  const steps = stored.steps.map((step) => ({ ...step, prose: step.prose ?? prose.get(step.step) }))
  if (stored.status !== 'interrupted' || live.status !== 'interrupted') return { ...stored, steps }
  const kept = new Set(stored.steps.map((step) => step.step))
  return {
    ...stored,
    // The server's reason is what it saw ("the client disconnected"); the page knows it was a Stop.
    error: live.error ?? stored.error,
    steps: [...steps, ...live.steps.filter((step) => step.stopped && !kept.has(step.step))],
  }
}
