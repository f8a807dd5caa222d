/**
 * History: sessions, their data, questions (runs), steps, artifacts and the conversation as the
 * model saw it, in one SQLite file under ANALYST_HOME. Files are stored once, by content.
 * Every write is its own transaction: a crash loses at most the step in flight.
 * @module
 */
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { Usage, Violation } from '../agent/events.js'
import type { DatasetProfile } from '../data/index.js'
import type {
  ArtifactView,
  BlockedAttempt,
  DatasetInfo,
  ResultView,
  RunStatus,
  RunView,
  SessionDetail,
  SessionStatus,
  SessionSummary,
  StepView,
} from '../server/types.js'
import { type Db, openDatabase } from './db.js'

/** Where Analyst keeps what it keeps between runs: ANALYST_HOME, else ~/.analyst. */
export function analystHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.ANALYST_HOME || join(homedir(), '.analyst')
}

const now = () => new Date().toISOString()
/** stdout and stderr are kept up to this many characters per step. */
export const PREVIEW_CHARS = 64 * 1024

function preview(text: string): string {
  return text.length > PREVIEW_CHARS
    ? `${text.slice(0, PREVIEW_CHARS)}\n… [${text.length - PREVIEW_CHARS} more characters not kept]`
    : text
}

/** A step as it is stored: the API's view, with results naming their image instead of linking it. */
export type StepInput = Omit<StepView, 'results' | 'artifacts'> & {
  /** Results without their images (those are artifacts; `image` names them). */
  results: Array<Omit<ResultView, 'image'> & { image?: string }>
  usage?: Usage
}

export type StoredStep = StepInput & {
  id: number
  runId: string
  success: boolean
  createdAt: string
}

export interface StoredArtifact {
  id: number
  stepId: number | null
  name: string
  kind: 'file' | 'image'
  size: number
  mimeType: string
  sha256: string
}

export interface SessionStats {
  questions: number
  executions: number
  successful: number
  failed: number
  /** successful / executions, 0 to 1; null without executions. */
  successRate: number | null
  totalDurationMs: number
  meanDurationMs: number | null
  usage: Usage
}

interface SessionRow {
  id: string
  title: string
  owner: string | null
  model: string | null
  status: SessionStatus
  created_at: string
  updated_at: string
}

export class Store {
  private constructor(
    readonly db: Db,
    readonly home: string,
  ) {}

  static open(home: string = analystHome()): Store {
    mkdirSync(home, { recursive: true, mode: 0o700 })
    return new Store(openDatabase(join(home, 'analyst.db')), home)
  }

  close() {
    this.db.close()
  }

  // ------------------------------------------------------------------ sessions

  createSession(options: {
    id?: string
    title: string
    owner?: string | null
    model?: string
  }): SessionSummary {
    const id = options.id ?? randomUUID()
    const at = now()
    this.db
      .prepare(
        'INSERT INTO sessions (id, title, owner, model, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(id, options.title, options.owner ?? null, options.model ?? null, 'idle', at, at)
    return this.summary(id) as SessionSummary
  }

  private row(id: string, owner?: string | null): SessionRow | undefined {
    const row = this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined
    if (!row) return undefined
    // A session belongs to the token that made it; others do not see it at all.
    if (owner !== undefined && row.owner !== owner) return undefined
    return row
  }

  /** The session, if it exists and (when `owner` is given) belongs to that owner. */
  summary(id: string, owner?: string | null): SessionSummary | undefined {
    const row = this.row(id, owner)
    if (!row) return undefined
    const questions = (
      this.db.prepare('SELECT count(*) AS n FROM runs WHERE session_id = ?').get(id) as { n: number }
    ).n
    return {
      id: row.id,
      title: row.title,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      status: row.status,
      questions,
      model: row.model ?? undefined,
    }
  }

  listSessions(options: { owner?: string | null; limit?: number } = {}): SessionSummary[] {
    const rows = (
      options.owner === undefined
        ? this.db
            .prepare('SELECT id FROM sessions ORDER BY updated_at DESC LIMIT ?')
            .all(options.limit ?? 1000)
        : this.db
            .prepare('SELECT id FROM sessions WHERE owner IS ? ORDER BY updated_at DESC LIMIT ?')
            .all(options.owner, options.limit ?? 1000)
    ) as Array<{ id: string }>
    return rows.map((row) => this.summary(row.id) as SessionSummary)
  }

  /** Finds a session by its id or a unique prefix of it (as the CLI accepts). */
  resolveId(prefix: string, owner?: string | null): string | undefined {
    const rows = this.db
      .prepare("SELECT id, owner FROM sessions WHERE id LIKE ? || '%' LIMIT 2")
      .all(prefix) as Array<{
      id: string
      owner: string | null
    }>
    const visible = rows.filter((row) => owner === undefined || row.owner === owner)
    return visible.length === 1 ? visible[0]?.id : undefined
  }

  updateSession(id: string, changes: { status?: SessionStatus; title?: string; model?: string }) {
    const row = this.row(id)
    if (!row) return
    this.db
      .prepare('UPDATE sessions SET status = ?, title = ?, model = ?, updated_at = ? WHERE id = ?')
      .run(changes.status ?? row.status, changes.title ?? row.title, changes.model ?? row.model, now(), id)
  }

  deleteSession(id: string) {
    this.db.prepare('DELETE FROM sessions WHERE id = ?').run(id)
  }

  /** After a crash: what was running is now interrupted (and can be continued). */
  markInterrupted(): number {
    return this.db.transaction(() => {
      const at = now()
      const runs = this.db
        .prepare(
          "UPDATE runs SET status = 'interrupted', error = 'The server stopped while this question was being answered.', finished_at = ? WHERE status = 'running'",
        )
        .run(at).changes
      this.db
        .prepare("UPDATE sessions SET status = 'interrupted', updated_at = ? WHERE status = 'running'")
        .run(at)
      return runs
    })()
  }

  // ------------------------------------------------------------------ datasets

  addDataset(
    sessionId: string,
    dataset: { name: string; sourcePath: string; bytes: number; profile: DatasetProfile },
  ) {
    this.db
      .prepare(
        'INSERT INTO datasets (session_id, name, source_path, bytes, profile, created_at) VALUES (?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT (session_id, name) DO UPDATE SET source_path = excluded.source_path, bytes = excluded.bytes, profile = excluded.profile',
      )
      .run(sessionId, dataset.name, dataset.sourcePath, dataset.bytes, JSON.stringify(dataset.profile), now())
    this.touch(sessionId)
  }

  datasets(sessionId: string): Array<DatasetInfo & { sourcePath: string }> {
    const rows = this.db
      .prepare('SELECT name, source_path, bytes, profile FROM datasets WHERE session_id = ? ORDER BY id')
      .all(sessionId) as Array<{ name: string; source_path: string; bytes: number; profile: string }>
    return rows.map((row) => ({
      name: row.name,
      sourcePath: row.source_path,
      bytes: row.bytes,
      profile: JSON.parse(row.profile),
    }))
  }

  // ------------------------------------------------------------------ runs and steps

  startRun(sessionId: string, question: string): string {
    const id = randomUUID()
    this.db.transaction(() => {
      const seq = (
        this.db
          .prepare('SELECT coalesce(max(seq), 0) + 1 AS n FROM runs WHERE session_id = ?')
          .get(sessionId) as { n: number }
      ).n
      this.db
        .prepare(
          "INSERT INTO runs (id, session_id, seq, question, status, started_at) VALUES (?, ?, ?, ?, 'running', ?)",
        )
        .run(id, sessionId, seq, question, now())
      this.db
        .prepare("UPDATE sessions SET status = 'running', updated_at = ? WHERE id = ?")
        .run(now(), sessionId)
    })()
    return id
  }

  finishRun(
    runId: string,
    outcome: { answer: string; incomplete: boolean; unsupportedNumbers: string[]; usage: Usage },
  ) {
    this.db.transaction(() => {
      this.db
        .prepare(
          "UPDATE runs SET answer = ?, incomplete = ?, unsupported = ?, status = 'done', input_tokens = ?, output_tokens = ?, total_tokens = ?, finished_at = ? WHERE id = ?",
        )
        .run(
          outcome.answer,
          outcome.incomplete ? 1 : 0,
          JSON.stringify(outcome.unsupportedNumbers),
          outcome.usage.inputTokens,
          outcome.usage.outputTokens,
          outcome.usage.totalTokens,
          now(),
          runId,
        )
      this.settleSession(runId)
    })()
  }

  failRun(runId: string, error: string, status: Extract<RunStatus, 'failed' | 'interrupted'> = 'failed') {
    this.db.transaction(() => {
      this.db
        .prepare('UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?')
        .run(status, error, now(), runId)
      this.settleSession(runId)
    })()
  }

  private settleSession(runId: string) {
    this.db
      .prepare(
        "UPDATE sessions SET status = 'idle', updated_at = ? WHERE id = (SELECT session_id FROM runs WHERE id = ?)",
      )
      .run(now(), runId)
  }

  addStep(runId: string, sessionId: string, step: StepInput): number {
    const info = this.db
      .prepare(
        'INSERT INTO steps (run_id, session_id, step, code, stdout, stderr, error, results, violations, success, duration_ms, input_tokens, output_tokens, created_at, prose) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        runId,
        sessionId,
        step.step,
        step.code,
        preview(step.stdout),
        preview(step.stderr),
        step.error ? JSON.stringify(step.error) : null,
        JSON.stringify(step.results),
        step.violations ? JSON.stringify(step.violations) : null,
        !step.error && !step.violations?.length ? 1 : 0,
        step.durationMs,
        step.usage?.inputTokens ?? 0,
        step.usage?.outputTokens ?? 0,
        now(),
        step.text ?? null,
      )
    this.touch(sessionId)
    return Number(info.lastInsertRowid)
  }

  steps(sessionId: string): StoredStep[] {
    const rows = this.db
      .prepare('SELECT * FROM steps WHERE session_id = ? ORDER BY id')
      .all(sessionId) as Array<Record<string, unknown>>
    return rows.map((row) => ({
      id: row.id as number,
      runId: row.run_id as string,
      step: row.step as number,
      code: row.code as string,
      text: (row.prose as string | null) ?? undefined,
      stdout: row.stdout as string,
      stderr: row.stderr as string,
      error: row.error ? JSON.parse(row.error as string) : undefined,
      results: JSON.parse(row.results as string),
      violations: row.violations ? JSON.parse(row.violations as string) : undefined,
      durationMs: row.duration_ms as number,
      usage: {
        inputTokens: row.input_tokens as number,
        outputTokens: row.output_tokens as number,
        totalTokens: (row.input_tokens as number) + (row.output_tokens as number),
      },
      success: row.success === 1,
      createdAt: row.created_at as string,
    }))
  }

  // ------------------------------------------------------------------ artifacts

  blobPath(sha256: string): string {
    return join(this.home, 'blobs', sha256.slice(0, 2), sha256)
  }

  /** Stores a file's content once (by its hash) and records it for the session. */
  addArtifact(
    sessionId: string,
    stepId: number | null,
    artifact: { name: string; kind: 'file' | 'image'; mimeType: string; bytes: Uint8Array },
  ): StoredArtifact {
    const sha256 = createHash('sha256').update(artifact.bytes).digest('hex')
    const path = this.blobPath(sha256)
    if (!existsSync(path)) {
      mkdirSync(join(this.home, 'blobs', sha256.slice(0, 2)), { recursive: true })
      const temporary = `${path}.${process.pid}.tmp`
      writeFileSync(temporary, artifact.bytes)
      renameSync(temporary, path)
    }
    const info = this.db
      .prepare(
        'INSERT INTO artifacts (session_id, step_id, name, kind, size, mime_type, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        sessionId,
        stepId,
        artifact.name,
        artifact.kind,
        artifact.bytes.length,
        artifact.mimeType,
        sha256,
        now(),
      )
    return {
      id: Number(info.lastInsertRowid),
      stepId,
      name: artifact.name,
      kind: artifact.kind,
      size: artifact.bytes.length,
      mimeType: artifact.mimeType,
      sha256,
    }
  }

  artifacts(sessionId: string): StoredArtifact[] {
    const rows = this.db
      .prepare(
        'SELECT id, step_id, name, kind, size, mime_type, sha256 FROM artifacts WHERE session_id = ? ORDER BY id',
      )
      .all(sessionId) as Array<Record<string, unknown>>
    return rows.map((row) => ({
      id: row.id as number,
      stepId: row.step_id as number | null,
      name: row.name as string,
      kind: row.kind as 'file' | 'image',
      size: row.size as number,
      mimeType: row.mime_type as string,
      sha256: row.sha256 as string,
    }))
  }

  /** The latest version of the named artifact, with the path of its content. */
  artifact(sessionId: string, name: string): (StoredArtifact & { path: string }) | undefined {
    const found = this.artifacts(sessionId)
      .filter((artifact) => artifact.name === name)
      .at(-1)
    return found ? { ...found, path: this.blobPath(found.sha256) } : undefined
  }

  // ------------------------------------------------------------------ blocked attempts

  addBlocked(
    sessionId: string,
    stepId: number | null,
    attempt: { source: 'guard' | 'sandbox'; rule: string; message: string },
  ) {
    this.db
      .prepare(
        'INSERT INTO blocked (session_id, step_id, source, rule, message, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(sessionId, stepId, attempt.source, attempt.rule, attempt.message, now())
  }

  blocked(sessionId: string): BlockedAttempt[] {
    const rows = this.db
      .prepare(
        'SELECT b.source, b.rule, b.message, b.created_at, s.step, r.seq FROM blocked b ' +
          'LEFT JOIN steps s ON s.id = b.step_id LEFT JOIN runs r ON r.id = s.run_id WHERE b.session_id = ? ORDER BY b.id',
      )
      .all(sessionId) as Array<{
      source: 'guard' | 'sandbox'
      rule: string
      message: string
      created_at: string
      step: number | null
      seq: number | null
    }>
    return rows.map((row) => ({
      question: row.seq ?? undefined,
      step: row.step ?? undefined,
      source: row.source,
      rule: row.rule,
      message: row.message,
      at: row.created_at,
    }))
  }

  // ------------------------------------------------------------------ the model's conversation

  appendMessages(sessionId: string, messages: unknown[]) {
    this.db.transaction(() => {
      const start = (
        this.db
          .prepare('SELECT coalesce(max(seq), 0) AS n FROM messages WHERE session_id = ?')
          .get(sessionId) as { n: number }
      ).n
      const insert = this.db.prepare('INSERT INTO messages (session_id, seq, message) VALUES (?, ?, ?)')
      messages.forEach((message, index) => {
        insert.run(sessionId, start + index + 1, JSON.stringify(message))
      })
    })()
  }

  messages(sessionId: string): unknown[] {
    const rows = this.db
      .prepare('SELECT message FROM messages WHERE session_id = ? ORDER BY seq')
      .all(sessionId) as Array<{ message: string }>
    return rows.map((row) => JSON.parse(row.message))
  }

  // ------------------------------------------------------------------ views

  private touch(sessionId: string) {
    this.db.prepare('UPDATE sessions SET updated_at = ? WHERE id = ?').run(now(), sessionId)
  }

  /** Everything about a session, in the shape of the HTTP API. */
  detail(id: string, urlFor: (name: string) => string, owner?: string | null): SessionDetail | undefined {
    const summary = this.summary(id, owner)
    if (!summary) return undefined
    const artifacts = this.artifacts(id)
    const view = (artifact: StoredArtifact): ArtifactView => ({
      name: artifact.name,
      size: artifact.size,
      mimeType: artifact.mimeType,
      url: urlFor(artifact.name),
    })
    const steps = this.steps(id)
    const runs = this.db.prepare('SELECT * FROM runs WHERE session_id = ? ORDER BY seq').all(id) as Array<
      Record<string, unknown>
    >
    const runViews: RunView[] = runs.map((run) => ({
      id: run.id as string,
      question: run.question as string,
      answer: (run.answer as string | null) ?? undefined,
      incomplete: run.incomplete === 1,
      unsupportedNumbers: JSON.parse(run.unsupported as string),
      status: run.status as RunStatus,
      error: (run.error as string | null) ?? undefined,
      startedAt: run.started_at as string,
      finishedAt: (run.finished_at as string | null) ?? undefined,
      usage: {
        inputTokens: run.input_tokens as number,
        outputTokens: run.output_tokens as number,
        totalTokens: run.total_tokens as number,
      },
      steps: steps
        .filter((step) => step.runId === run.id)
        .map(
          (step): StepView => ({
            step: step.step,
            code: step.code,
            text: step.text,
            stdout: step.stdout,
            stderr: step.stderr,
            error: step.error,
            results: step.results.map((result) => {
              const image = result.image
                ? artifacts.find((a) => a.name === result.image && a.stepId === step.id)
                : undefined
              return { ...result, image: image ? view(image) : undefined }
            }),
            artifacts: artifacts.filter((a) => a.stepId === step.id && a.kind === 'file').map(view),
            violations: step.violations,
            durationMs: step.durationMs,
          }),
        ),
    }))
    return {
      ...summary,
      datasets: this.datasets(id).map(({ sourcePath: _, ...dataset }) => dataset),
      runs: runViews,
      blocked: this.blocked(id),
    }
  }

  stats(id: string): SessionStats {
    const steps = this.steps(id).filter((step) => !step.violations?.length)
    const successful = steps.filter((step) => step.success).length
    const totalDurationMs = steps.reduce((sum, step) => sum + step.durationMs, 0)
    const usage = this.db
      .prepare(
        'SELECT coalesce(sum(input_tokens), 0) AS i, coalesce(sum(output_tokens), 0) AS o, coalesce(sum(total_tokens), 0) AS t, count(*) AS n FROM runs WHERE session_id = ?',
      )
      .get(id) as { i: number; o: number; t: number; n: number }
    return {
      questions: usage.n,
      executions: steps.length,
      successful,
      failed: steps.length - successful,
      successRate: steps.length > 0 ? successful / steps.length : null,
      totalDurationMs,
      meanDurationMs: steps.length > 0 ? totalDurationMs / steps.length : null,
      usage: { inputTokens: usage.i, outputTokens: usage.o, totalTokens: usage.t },
    }
  }
}
