/**
 * The history in one SQLite file (WAL): the embedded default, through Kysely over better-sqlite3.
 * Every write is its own transaction: a crash loses at most the step in flight.
 * @module
 */
import { randomUUID } from 'node:crypto'
import BetterSqlite3 from 'better-sqlite3'
import { Kysely, type Selectable, SqliteDialect, sql } from 'kysely'
import type {
  HistoryStore,
  RunOutcome,
  SessionStatus,
  StepCommit,
  StoredArtifact,
  StoredBlocked,
  StoredDataset,
  StoredRun,
  StoredSession,
  StoredStep,
} from '../types.js'
import { type Database, migrate, type RunsTable, type SessionsTable, sqliteVersion } from './schema.js'

let last = 0
/** Now, as ISO 8601; never the same instant twice in one process, so "newest first" has no ties. */
export function now(): string {
  last = Math.max(Date.now(), last + 1)
  return new Date(last).toISOString()
}

/** stdout and stderr are kept up to this many characters per step. */
export const PREVIEW_CHARS = 64 * 1024

function preview(text: string): string {
  return text.length > PREVIEW_CHARS
    ? `${text.slice(0, PREVIEW_CHARS)}\n… [${text.length - PREVIEW_CHARS} more characters not kept]`
    : text
}

const INTERRUPTED = 'The server stopped while this question was being answered.'

function toRun(row: Selectable<RunsTable>): StoredRun {
  return {
    id: row.id,
    sessionId: row.session_id,
    seq: row.seq,
    question: row.question,
    answer: row.answer ?? undefined,
    incomplete: row.incomplete === 1,
    unsupportedNumbers: JSON.parse(row.unsupported),
    status: row.status as StoredRun['status'],
    error: row.error ?? undefined,
    startedAt: row.started_at,
    finishedAt: row.finished_at ?? undefined,
    usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens, totalTokens: row.total_tokens },
  }
}

function toSession(row: Selectable<SessionsTable> & { questions: number | null }): StoredSession {
  return {
    id: row.id,
    title: row.title,
    owner: row.owner,
    model: row.model ?? undefined,
    status: row.status as SessionStatus,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    questions: Number(row.questions ?? 0),
  }
}

export class SqliteHistoryStore implements HistoryStore {
  readonly specificationVersion = 'v1'
  readonly provider = 'sqlite'

  private constructor(
    readonly db: Kysely<Database>,
    /** The file, for tests and `doctor`. */
    readonly path: string,
  ) {}

  /** Opens (creating and migrating as needed) the database file. */
  static async open(path: string): Promise<SqliteHistoryStore> {
    const database = new BetterSqlite3(path)
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = NORMAL') // with WAL: a committed step survives a crash of the process
    database.pragma('foreign_keys = ON')
    database.pragma('busy_timeout = 5000')
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) })
    try {
      await migrate(db, { serial: 'integer' }, sqliteVersion)
    } catch (error) {
      await db.destroy()
      throw error
    }
    return new SqliteHistoryStore(db, path)
  }

  async close(): Promise<void> {
    await this.db.destroy()
  }

  /** A session's rows of a table, in the order they were written. */
  private bySession<T extends 'datasets' | 'steps' | 'artifacts'>(table: T, sessionId: string) {
    return this.db
      .selectFrom(table as 'steps')
      .selectAll()
      .where('session_id', '=', sessionId)
      .orderBy('id')
      .execute() as Promise<Selectable<Database[T]>[]>
  }

  // ------------------------------------------------------------------ sessions

  /** Sessions with their number of questions. */
  private sessions() {
    return this.db
      .selectFrom('sessions')
      .selectAll('sessions')
      .select((eb) =>
        eb
          .selectFrom('runs')
          .select(eb.fn.countAll<number>().as('n'))
          .whereRef('runs.session_id', '=', 'sessions.id')
          .as('questions'),
      )
  }

  async createSession(input: {
    id?: string
    title: string
    owner?: string | null
    model?: string
  }): Promise<StoredSession> {
    const at = now()
    const row = {
      id: input.id ?? randomUUID(),
      title: input.title,
      owner: input.owner ?? null,
      model: input.model ?? null,
      status: 'idle',
      created_at: at,
      updated_at: at,
    }
    await this.db.insertInto('sessions').values(row).execute()
    return toSession({ ...row, questions: 0 })
  }

  async getSession(id: string, owner?: string | null): Promise<StoredSession | undefined> {
    const row = await this.sessions().where('id', '=', id).executeTakeFirst()
    // A session belongs to the token that made it; others do not see it at all.
    if (!row || (owner !== undefined && row.owner !== owner)) return undefined
    return toSession(row)
  }

  async listSessions(options: { owner?: string | null; limit?: number } = {}): Promise<StoredSession[]> {
    let query = this.sessions()
    if (options.owner !== undefined) query = query.where('owner', 'is', options.owner)
    const rows = await query
      .orderBy('updated_at', 'desc')
      .limit(options.limit ?? 1000)
      .execute()
    return rows.map(toSession)
  }

  async resolveSessionId(prefix: string, owner?: string | null): Promise<string | undefined> {
    const rows = await this.db
      .selectFrom('sessions')
      .select(['id', 'owner'])
      .where(sql<boolean>`substr(id, 1, ${prefix.length}) = ${prefix}`)
      .limit(2)
      .execute()
    const visible = rows.filter((row) => owner === undefined || row.owner === owner)
    return visible.length === 1 ? visible[0]?.id : undefined
  }

  async updateSession(
    id: string,
    changes: { status?: SessionStatus; title?: string; model?: string },
  ): Promise<void> {
    await this.db
      .updateTable('sessions')
      .set({
        ...(changes.status ? { status: changes.status } : {}),
        ...(changes.title ? { title: changes.title } : {}),
        ...(changes.model ? { model: changes.model } : {}),
        updated_at: now(),
      })
      .where('id', '=', id)
      .execute()
  }

  async deleteSession(id: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('id', '=', id).execute()
  }

  async markInterrupted(): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const at = now()
      const result = await trx
        .updateTable('runs')
        .set({ status: 'interrupted', error: INTERRUPTED, finished_at: at })
        .where('status', '=', 'running')
        .executeTakeFirst()
      await trx
        .updateTable('sessions')
        .set({ status: 'interrupted', updated_at: at })
        .where('status', '=', 'running')
        .execute()
      return Number(result.numUpdatedRows)
    })
  }

  private async touch(sessionId: string) {
    await this.db.updateTable('sessions').set({ updated_at: now() }).where('id', '=', sessionId).execute()
  }

  // ------------------------------------------------------------------ datasets

  async putDataset(sessionId: string, dataset: Omit<StoredDataset, 'createdAt'>): Promise<void> {
    const values = {
      source_path: dataset.sourcePath ?? '',
      bytes: dataset.bytes,
      profile: JSON.stringify(dataset.profile),
      sha256: dataset.sha256 ?? null,
    }
    await this.db
      .insertInto('datasets')
      .values({ session_id: sessionId, name: dataset.name, created_at: now(), ...values })
      .onConflict((oc) => oc.columns(['session_id', 'name']).doUpdateSet(values))
      .execute()
    await this.touch(sessionId)
  }

  async datasets(sessionId: string): Promise<StoredDataset[]> {
    const rows = await this.bySession('datasets', sessionId)
    return rows.map((row) => ({
      name: row.name,
      bytes: row.bytes,
      sha256: row.sha256 ?? undefined,
      sourcePath: row.source_path || undefined,
      profile: JSON.parse(row.profile),
      createdAt: row.created_at,
    }))
  }

  // ------------------------------------------------------------------ runs

  async startRun(sessionId: string, question: string): Promise<StoredRun> {
    const id = randomUUID()
    const at = now()
    await this.db.transaction().execute(async (trx) => {
      const { n } = await trx
        .selectFrom('runs')
        .select(sql<number>`coalesce(max(seq), 0) + 1`.as('n'))
        .where('session_id', '=', sessionId)
        .executeTakeFirstOrThrow()
      await trx
        .insertInto('runs')
        .values({ id, session_id: sessionId, seq: n, question, status: 'running', started_at: at })
        .execute()
      await trx
        .updateTable('sessions')
        .set({ status: 'running', updated_at: at })
        .where('id', '=', sessionId)
        .execute()
    })
    const row = await this.db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    return toRun(row)
  }

  async finishRun(runId: string, outcome: RunOutcome): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('runs')
        .set({
          answer: outcome.answer,
          incomplete: outcome.incomplete ? 1 : 0,
          unsupported: JSON.stringify(outcome.unsupportedNumbers),
          status: 'done',
          input_tokens: outcome.usage.inputTokens,
          output_tokens: outcome.usage.outputTokens,
          total_tokens: outcome.usage.totalTokens,
          finished_at: now(),
        })
        .where('id', '=', runId)
        .execute()
      await settle(trx, runId)
    })
  }

  async failRun(runId: string, error: string, status: 'failed' | 'interrupted' = 'failed'): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('runs')
        .set({ status, error, finished_at: now() })
        .where('id', '=', runId)
        .execute()
      await settle(trx, runId)
    })
  }

  async runs(sessionId: string): Promise<StoredRun[]> {
    const rows = await this.db
      .selectFrom('runs')
      .selectAll()
      .where('session_id', '=', sessionId)
      .orderBy('seq')
      .execute()
    return rows.map(toRun)
  }

  // ------------------------------------------------------------------ steps, artifacts, blocked

  async commitStep(commit: StepCommit): Promise<number> {
    const { step, sessionId } = commit
    const at = now()
    return this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('steps')
        .values({
          run_id: commit.runId,
          session_id: sessionId,
          step: step.step,
          code: step.code,
          prose: step.text ?? null,
          stdout: preview(step.stdout),
          stderr: preview(step.stderr),
          error: step.error ? JSON.stringify(step.error) : null,
          results: JSON.stringify(step.results),
          violations: step.violations ? JSON.stringify(step.violations) : null,
          success: !step.error && !step.violations?.length ? 1 : 0,
          duration_ms: Math.round(step.durationMs),
          input_tokens: step.usage?.inputTokens ?? 0,
          output_tokens: step.usage?.outputTokens ?? 0,
          created_at: at,
        })
        .executeTakeFirstOrThrow()
      const stepId = Number(inserted.insertId)
      for (const artifact of commit.artifacts) {
        await trx
          .insertInto('artifacts')
          .values({
            session_id: sessionId,
            step_id: stepId,
            name: artifact.name,
            kind: artifact.kind,
            size: artifact.size,
            mime_type: artifact.mimeType,
            sha256: artifact.sha256,
            created_at: at,
          })
          .execute()
      }
      for (const block of commit.blocked) {
        await trx
          .insertInto('blocked')
          .values({ session_id: sessionId, step_id: stepId, ...block, created_at: at })
          .execute()
      }
      await trx.updateTable('sessions').set({ updated_at: at }).where('id', '=', sessionId).execute()
      return stepId
    })
  }

  async steps(sessionId: string): Promise<StoredStep[]> {
    const rows = await this.bySession('steps', sessionId)
    return rows.map((row) => ({
      id: row.id,
      runId: row.run_id,
      sessionId: row.session_id,
      step: row.step,
      code: row.code,
      text: row.prose ?? undefined,
      stdout: row.stdout,
      stderr: row.stderr,
      error: row.error ? JSON.parse(row.error) : undefined,
      results: JSON.parse(row.results),
      violations: row.violations ? JSON.parse(row.violations) : undefined,
      durationMs: row.duration_ms,
      usage: {
        inputTokens: row.input_tokens,
        outputTokens: row.output_tokens,
        totalTokens: row.input_tokens + row.output_tokens,
      },
      success: row.success === 1,
      createdAt: row.created_at,
    }))
  }

  async artifacts(sessionId: string): Promise<StoredArtifact[]> {
    const rows = await this.bySession('artifacts', sessionId)
    return rows.map((row) => ({
      id: row.id,
      sessionId: row.session_id,
      stepId: row.step_id,
      name: row.name,
      kind: row.kind as StoredArtifact['kind'],
      size: row.size,
      mimeType: row.mime_type,
      sha256: row.sha256,
      createdAt: row.created_at,
    }))
  }

  async blocked(sessionId: string): Promise<StoredBlocked[]> {
    const rows = await this.db
      .selectFrom('blocked as b')
      .leftJoin('steps as s', 's.id', 'b.step_id')
      .leftJoin('runs as r', 'r.id', 's.run_id')
      .select(['b.source', 'b.rule', 'b.message', 'b.created_at', 's.step', 'r.seq'])
      .where('b.session_id', '=', sessionId)
      .orderBy('b.id')
      .execute()
    return rows.map((row) => ({
      question: row.seq ?? undefined,
      step: row.step ?? undefined,
      source: row.source as StoredBlocked['source'],
      rule: row.rule,
      message: row.message,
      at: row.created_at,
    }))
  }

  // ------------------------------------------------------------------ the model's conversation

  async appendMessages(sessionId: string, messages: unknown[]): Promise<void> {
    if (messages.length === 0) return
    await this.db.transaction().execute(async (trx) => {
      const { n } = await trx
        .selectFrom('messages')
        .select(sql<number>`coalesce(max(seq), 0)`.as('n'))
        .where('session_id', '=', sessionId)
        .executeTakeFirstOrThrow()
      await trx
        .insertInto('messages')
        .values(
          messages.map((message, index) => ({
            session_id: sessionId,
            seq: n + index + 1,
            message: JSON.stringify(message),
          })),
        )
        .execute()
    })
  }

  async messages(sessionId: string): Promise<unknown[]> {
    const rows = await this.db
      .selectFrom('messages')
      .select('message')
      .where('session_id', '=', sessionId)
      .orderBy('seq')
      .execute()
    return rows.map((row) => JSON.parse(row.message))
  }
}

/** A run ended: its session is idle again. */
async function settle(trx: Kysely<Database>, runId: string) {
  await trx
    .updateTable('sessions')
    .set({ status: 'idle', updated_at: now() })
    .where('id', '=', trx.selectFrom('runs').select('session_id').where('id', '=', runId))
    .execute()
}
