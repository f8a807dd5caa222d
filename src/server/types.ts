/**
 * The HTTP API's shapes: what `analyst serve` returns and streams, and what the web UI reads.
 * The web UI imports these types; keep them plain JSON.
 * @module
 */
import type { AskResult, Violation } from '../agent/events.js'
import type { DatasetProfile } from '../data/index.js'

export type SessionStatus = 'idle' | 'running' | 'interrupted'

export interface SessionSummary {
  id: string
  title: string
  /** ISO 8601. */
  createdAt: string
  updatedAt: string
  status: SessionStatus
  questions: number
  model?: string
}

export interface DatasetInfo {
  /** The code reads it at data/<name>. */
  name: string
  bytes: number
  profile: DatasetProfile
}

export interface ArtifactView {
  name: string
  size: number
  mimeType: string
  /** GET this (with the token) for the content. */
  url: string
}

export interface ResultView {
  isMainResult: boolean
  text?: string
  /** A table as { column: values }: render this, never raw HTML from the sandbox. */
  data?: Record<string, unknown[]>
  /** A chart: the artifact name its image is stored under. */
  image?: ArtifactView
  /** The data behind a chart (E2B's `Result.chart`, see src/sandbox/charts.ts): the web UI draws it. */
  chart?: unknown
}

export interface StepView {
  step: number
  code: string
  /** What the model wrote around the code (its reasoning for the step), if anything. */
  text?: string
  stdout: string
  stderr: string
  error?: { name: string; value: string; traceback: string }
  results: ResultView[]
  artifacts: ArtifactView[]
  violations?: Violation[]
  durationMs: number
}

export type RunStatus = 'running' | 'done' | 'failed' | 'interrupted'

export interface RunView {
  id: string
  question: string
  answer?: string
  incomplete: boolean
  unsupportedNumbers: string[]
  status: RunStatus
  /** Why a failed run failed. */
  error?: string
  startedAt: string
  finishedAt?: string
  usage: { inputTokens: number; outputTokens: number; totalTokens: number }
  steps: StepView[]
}

/** Something the guard or the sandbox stopped: recorded for operators. */
export interface BlockedAttempt {
  /** Which step of which question (1-based), when known. */
  question?: number
  step?: number
  source: 'guard' | 'sandbox'
  /** The guard's rule, or the kind of sandbox limit (network, filesystem, memory, time, process…). */
  rule: string
  message: string
  at: string
}

export interface SessionDetail extends SessionSummary {
  datasets: DatasetInfo[]
  runs: RunView[]
  blocked: BlockedAttempt[]
}

/**
 * Server-sent events of POST /api/sessions/:id/ask: `event: <type>` with JSON `data`. The agent's
 * events (see AgentEvent) plus these; `done` carries what `analyst ask --json` prints.
 */
export type StreamOnlyEvent =
  /** Sent first when the session's sandbox must be started (or rebuilt from history) before the question. */
  | { type: 'preparing'; message: string }
  | { type: 'run-start'; runId: string; queued: boolean }
  | { type: 'failed'; message: string; hint?: string }
  | { type: 'done'; result: AskResult }

export interface ApiError {
  error: { message: string; hint?: string }
}
