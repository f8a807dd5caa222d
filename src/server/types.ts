/**
 * The HTTP API's shapes: what `analyst serve` returns and streams, and what the web UI reads.
 * The web UI imports these types; keep them plain JSON.
 * @module
 */
import type { AskResult, Violation } from '../agent/events.js'
import type { DatasetProfile } from '../data/index.js'
import type { ServiceEvent } from '../session/events.js'
import type { RunStatus, SessionStatus, StoredChartEdit, StoredQuery, StoredRun } from '../store/types.js'

export type { RunStatus, SessionStatus, StoredQuery }

/** The question of a run that is a person's own cell (POST /api/sessions/:id/cells), not the model's. */
export const PERSON_CELL = 'A cell run by a person'

/** What POST /api/sessions/:id/cells answers: the run it was recorded as, and how it went. */
export interface CellView {
  runId: string
  /** Why the guard refused it (nothing ran). */
  violations: Violation[]
  /** The exception it raised. */
  error?: { name: string; value: string }
}

export interface SessionSummary {
  id: string
  title: string
  /** ISO 8601. */
  createdAt: string
  updatedAt: string
  status: SessionStatus
  questions: number
  model?: string
  /** The host's sources its code queries with sql(), by name. */
  sources: string[]
  /** The template its sandbox starts from; absent: the server's default. */
  template?: string
}

/** A source GET /api/sources lists: what a session may be given by name. */
export interface SourceInfo {
  name: string
  kind: 'postgres' | 'mysql' | 'sqlite' | 'duckdb' | 'file'
  /** New sessions get it when they name no sources. */
  default: boolean
  /** Its tables, columns and keys, as the model is told them. */
  description?: string
  /** Why it cannot be reached now. */
  error?: string
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
  /** The whole DataFrame, kept by the kernel: page it at /api/sessions/:id/results/:frameId/rows. */
  frame?: { id: string; rows: number; columns: number }
  /** A person's edit of the chart (mark, titles): the page draws it, the exports carry it. */
  chartEdit?: StoredChartEdit
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
  /** The queries its sql() calls ran on the host's sources. */
  queries?: StoredQuery[]
  durationMs: number
  /** Why it did not end (its run was stopped while it ran): its output is what it had shown by then. */
  stopped?: string
}

/** A question and its answer: the stored run, with its steps as views. */
export interface RunView extends Omit<StoredRun, 'sessionId' | 'seq'> {
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
 * events (see AgentEvent), the session service's (`preparing`, `ready`, `run-start`), and these;
 * `done` carries what `analyst ask --json` prints.
 */
export type StreamOnlyEvent =
  | ServiceEvent
  | { type: 'failed'; message: string; hint?: string }
  /** A person stopped it (POST /api/sessions/:id/stop); the run is recorded as interrupted with this reason. */
  | { type: 'stopped'; message: string }
  | { type: 'done'; result: AskResult }

/**
 * Server-sent events of GET /api/sessions/:id/runs/:runId/events, for a client that lost its
 * stream (perhaps to a replica that died) and reconnects, to any replica: each committed step
 * (`id:` is the step's id: send it back as Last-Event-ID to resume after it), then the run's end.
 */
export type RunWatchStreamEvent =
  | { type: 'step'; runId: string; step: StepView }
  | { type: 'run-end'; run: RunView }

export interface ApiError {
  /** `code`: what kind of refusal (unauthorized, forbidden, not_found…), for programs. */
  error: { code?: string; message: string; hint?: string }
}

/** GET /api/shared/:shareId: a session shared read-only (its data files only if the owner allows it). */
export interface SharedSessionView {
  share: { id: string; allowFiles: boolean; createdAt: string }
  session: Omit<SessionDetail, 'datasets' | 'blocked'> & {
    /** Each file's profile (columns, sample rows) only when the owner allows its data files. */
    datasets: Array<{ name: string; bytes: number; profile?: DatasetInfo['profile'] }>
  }
}

/** A template GET /api/templates lists: what a session can be created in. */
export interface TemplateView {
  /** Its hash (hex sha256). */
  id: string
  /** Its first name (or the id's start when it has none). */
  name: string
  names: string[]
  /** host, debian:<suite>, or an OCI image. */
  base: string
  languages: string[]
  /** The Python its kernels run (e.g. 3.13.5). */
  python: string
  /** The main packages and their versions. */
  packages: Record<string, string>
  sizeBytes: number
  createdAt: string
}

/** A template build (POST /api/templates, GET /api/templates/builds/:id). */
export interface TemplateBuildView {
  id: string
  name: string
  status: 'waiting' | 'building' | 'ready' | 'error' | 'cancelled'
  /** The step that runs (1-based) of how many. */
  progress?: { step: number; total: number; title: string }
  /** Why it failed, and at which step (0-based) of the spec's. */
  reason?: { message: string; step?: number }
  template?: TemplateView
  createdAt: string
  finishedAt?: string
}
