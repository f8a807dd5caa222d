/**
 * Eval runs and their results in the history database, beside the sessions their questions were
 * asked in: plain Kysely queries (an upsert on the primary key), the same on SQLite and PostgreSQL.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { type Kysely, type Selectable, sql } from 'kysely'
import type { EvalResultInput, EvalRunStatus, EvalStore, StoredEvalResult, StoredEvalRun } from '../types.js'
import type { Database, EvalRunsTable } from './schema.js'
import { now } from './store.js'

function toRun(row: Selectable<EvalRunsTable>): StoredEvalRun {
  return {
    id: row.id,
    dataset: row.dataset,
    model: row.model,
    settings: JSON.parse(row.settings),
    status: row.status as EvalRunStatus,
    elapsedMs: Number(row.elapsed_ms),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

export class SqlEvalStore implements EvalStore {
  readonly specificationVersion = 'v1'

  constructor(private readonly db: Kysely<Database>) {}

  async createEvalRun(input: {
    id?: string
    dataset: string
    model: string
    settings: Record<string, unknown>
  }): Promise<StoredEvalRun> {
    const at = now()
    const row = {
      id: input.id ?? randomUUID(),
      dataset: input.dataset,
      model: input.model,
      settings: JSON.stringify(input.settings),
      status: 'running',
      elapsed_ms: 0,
      created_at: at,
      updated_at: at,
    }
    await this.db.insertInto('eval_runs').values(row).execute()
    return toRun(row)
  }

  async getEvalRun(id: string): Promise<StoredEvalRun | undefined> {
    const row = await this.db.selectFrom('eval_runs').selectAll().where('id', '=', id).executeTakeFirst()
    return row ? toRun(row) : undefined
  }

  async resolveEvalRunId(prefix: string): Promise<string | undefined> {
    const rows = await this.db
      .selectFrom('eval_runs')
      .select('id')
      .where(sql<boolean>`substr(id, 1, ${prefix.length}) = ${prefix}`)
      .limit(2)
      .execute()
    return rows.length === 1 ? rows[0]?.id : undefined
  }

  async listEvalRuns(options: { limit?: number } = {}): Promise<StoredEvalRun[]> {
    const rows = await this.db
      .selectFrom('eval_runs')
      .selectAll()
      .orderBy('created_at', 'desc')
      .limit(options.limit ?? 100)
      .execute()
    return rows.map(toRun)
  }

  async updateEvalRun(id: string, changes: { status?: EvalRunStatus; elapsedMs?: number }): Promise<void> {
    await this.db
      .updateTable('eval_runs')
      .set({
        ...(changes.status ? { status: changes.status } : {}),
        ...(changes.elapsedMs !== undefined ? { elapsed_ms: Math.round(changes.elapsedMs) } : {}),
        updated_at: now(),
      })
      .where('id', '=', id)
      .execute()
  }

  async putEvalResult(runId: string, result: EvalResultInput): Promise<void> {
    const values = {
      status: result.status,
      session_id: result.sessionId ?? null,
      correct: result.correct ? 1 : 0,
      detail: JSON.stringify(result.detail ?? null),
      updated_at: now(),
    }
    await this.db
      .insertInto('eval_results')
      .values({ run_id: runId, question_id: result.questionId, ...values })
      .onConflict((oc) => oc.columns(['run_id', 'question_id']).doUpdateSet(values))
      .execute()
  }

  async evalResults(runId: string): Promise<StoredEvalResult[]> {
    const rows = await this.db
      .selectFrom('eval_results')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('question_id')
      .execute()
    return rows.map((row) => ({
      runId: row.run_id,
      questionId: Number(row.question_id),
      status: row.status as StoredEvalResult['status'],
      sessionId: row.session_id ?? undefined,
      correct: row.correct === 1,
      detail: JSON.parse(row.detail),
      updatedAt: row.updated_at,
    }))
  }
}
