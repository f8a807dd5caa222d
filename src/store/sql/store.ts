/**
 * The history in a SQL database through Kysely: what SQLite and PostgreSQL share (all of it but
 * opening the connection, the schema's version, and the database's clock). Every write is its own
 * transaction: a crash loses at most the step in flight.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { type ExpressionBuilder, type Kysely, type RawBuilder, type Selectable, sql } from 'kysely'
import { AnalystError } from '../../errors.js'
import { joinFollowUps, splitFollowUps } from '../../follow-ups.js'
import type {
  HistoryStore,
  LeaseGrant,
  OwnerActivity,
  OwnerUsage,
  RunOutcome,
  SessionStatus,
  StepCommit,
  StoredArtifact,
  StoredBlocked,
  StoredChartEdit,
  StoredDataset,
  StoredResult,
  StoredRun,
  StoredSession,
  StoredStep,
} from '../types.js'
import {
  type Database,
  type RunsTable,
  SCHEMA_VERSION,
  type SchemaVersion,
  type SessionsTable,
} from './schema.js'

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

/** The stored answer and the follow-ups kept at its end. */
function answerOf(stored: string | null): Pick<StoredRun, 'answer' | 'followUps'> {
  if (stored === null) return {}
  const { answer, followUps } = splitFollowUps(stored)
  return followUps.length ? { answer, followUps } : { answer: stored }
}

function toRun(row: Selectable<RunsTable>): StoredRun {
  return {
    id: row.id,
    sessionId: row.session_id,
    seq: row.seq,
    question: row.question,
    ...answerOf(row.answer),
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
    ...(row.sources ? { sources: JSON.parse(row.sources) as string[] } : {}),
    ...(row.template ? { template: row.template } : {}),
    ...(row.template_id ? { templateId: row.template_id } : {}),
    ...(row.language ? { language: row.language } : {}),
    status: row.status as SessionStatus,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    questions: Number(row.questions ?? 0),
  }
}

/** What a dialect tells the shared store at run time. */
export interface SqlRuntime {
  provider: string
  shared: boolean
  /** Milliseconds since the epoch by the database's clock: replicas' clocks may differ, the database's is one. */
  nowMs: RawBuilder<number>
  /** Whether `select … for update` locks rows (PostgreSQL); SQLite serializes its writers anyway. */
  rowLocks: boolean
  /**
   * The isolation of `snapshot`'s transaction where each statement would otherwise see a moment
   * of its own (PostgreSQL's read committed). SQLite's transaction reads one moment already.
   */
  snapshotIsolation?: 'repeatable read'
  version: SchemaVersion
}

export class SqlHistoryStore implements HistoryStore {
  readonly specificationVersion = 'v1'
  readonly provider: string
  readonly shared: boolean

  constructor(
    readonly db: Kysely<Database>,
    readonly runtime: SqlRuntime,
  ) {
    this.provider = runtime.provider
    this.shared = runtime.shared
  }

  async close(): Promise<void> {
    await this.db.destroy()
  }

  async checkReady(): Promise<void> {
    const version = await this.runtime.version.read(this.db)
    if (version !== SCHEMA_VERSION)
      throw new AnalystError(
        `The database's schema is ${version}; this Analyst runs schema ${SCHEMA_VERSION}`,
      )
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
    sources?: string[]
    template?: string
    templateId?: string
    language?: string
  }): Promise<StoredSession> {
    const at = now()
    const row = {
      id: input.id ?? randomUUID(),
      title: input.title,
      owner: input.owner ?? null,
      model: input.model ?? null,
      sources: input.sources?.length ? JSON.stringify(input.sources) : null,
      template: input.template ?? null,
      template_id: input.templateId ?? null,
      language: input.language ?? null,
      status: 'idle',
      created_at: at,
      updated_at: at,
    }
    await this.db.insertInto('sessions').values(row).execute()
    return toSession({ ...row, questions: 0 })
  }

  async snapshot<T>(read: (store: HistoryStore) => Promise<T>): Promise<T> {
    let transaction = this.db.transaction()
    const isolation = this.runtime.snapshotIsolation
    if (isolation) transaction = transaction.setIsolationLevel(isolation).setAccessMode('read only')
    return transaction.execute((trx) => read(new SqlHistoryStore(trx, this.runtime)))
  }

  async getSession(id: string, owner?: string | null): Promise<StoredSession | undefined> {
    const row = await this.sessions().where('id', '=', id).executeTakeFirst()
    // A session belongs to the token that made it; others do not see it at all.
    if (!row || (owner !== undefined && row.owner !== owner)) return undefined
    return toSession(row)
  }

  async listSessions(options: { owner?: string | null; limit?: number } = {}): Promise<StoredSession[]> {
    let query = this.sessions()
    if (options.owner !== undefined) query = query.where(ownedBy(options.owner))
    const rows = await query
      .orderBy('updated_at', 'desc')
      .limit(options.limit ?? 1000)
      .execute()
    return rows.map(toSession)
  }

  async changeSessionOwner(id: string, from: string | null, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable('sessions')
      .set({ owner: to })
      .where('id', '=', id)
      .where(ownedBy(from))
      .executeTakeFirst()
    return Number(result.numUpdatedRows) > 0
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

  async markInterrupted(options: { lapsed?: boolean } = {}): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const lapsed = trx
        .selectFrom('session_leases')
        .select('session_id')
        .where('expires_at', '<', this.runtime.nowMs)
      const at = now()
      let runs = trx
        .updateTable('runs')
        .set({ status: 'interrupted', error: INTERRUPTED, finished_at: at })
        .where('status', '=', 'running')
      let sessions = trx
        .updateTable('sessions')
        .set({ status: 'interrupted', updated_at: at })
        .where('status', '=', 'running')
      if (options.lapsed) {
        runs = runs.where('session_id', 'in', lapsed)
        sessions = sessions.where('id', 'in', lapsed)
      }
      const result = await runs.executeTakeFirst()
      await sessions.execute()
      return Number(result.numUpdatedRows)
    })
  }

  // ------------------------------------------------------------------ leases

  async acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<LeaseGrant> {
    return this.db.transaction().execute(async (trx) => {
      let before = trx
        .selectFrom('session_leases')
        .select(['holder', 'expires_at'])
        .where('session_id', '=', sessionId)
      if (this.runtime.rowLocks) before = before.forUpdate()
      const previous = await before.executeTakeFirst()
      const expires = sql<number>`${this.runtime.nowMs} + ${Math.round(ttlMs)}`
      const taken = await trx
        .insertInto('session_leases')
        .values({ session_id: sessionId, holder, expires_at: expires })
        .onConflict((oc) =>
          oc
            .column('session_id')
            .doUpdateSet({ holder, expires_at: expires })
            .where((eb) =>
              eb.or([
                eb('session_leases.holder', '=', holder),
                eb('session_leases.expires_at', '<', this.runtime.nowMs),
              ]),
            ),
        )
        .returning(['holder', this.runtime.nowMs.as('at')])
        .executeTakeFirst()
      if (!taken) {
        const current = await trx
          .selectFrom('session_leases')
          .select(['holder', sql<number>`expires_at - ${this.runtime.nowMs}`.as('left')])
          .where('session_id', '=', sessionId)
          .executeTakeFirstOrThrow()
        return { acquired: false, holder: current.holder, expiresInMs: Math.max(0, Number(current.left)) }
      }
      let interrupted = 0
      if (previous && previous.holder !== holder) {
        // The last holder lapsed without ending its run: that run is over.
        const at = now()
        const result = await trx
          .updateTable('runs')
          .set({ status: 'interrupted', error: INTERRUPTED, finished_at: at })
          .where('session_id', '=', sessionId)
          .where('status', '=', 'running')
          .executeTakeFirst()
        interrupted = Number(result.numUpdatedRows)
      }
      return { acquired: true, previous: previous?.holder ?? null, interrupted, atMs: Number(taken.at) }
    })
  }

  async renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    const result = await this.db
      .updateTable('session_leases')
      .set({ expires_at: sql<number>`${this.runtime.nowMs} + ${Math.round(ttlMs)}` })
      .where('session_id', '=', sessionId)
      .where('holder', '=', holder)
      .where('expires_at', '>', this.runtime.nowMs)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) === 1
  }

  async releaseLease(sessionId: string, holder: string): Promise<void> {
    // The row stays, with its holder: the next holder learns who changed the session last.
    await this.db
      .updateTable('session_leases')
      .set({ expires_at: 0 })
      .where('session_id', '=', sessionId)
      .where('holder', '=', holder)
      .execute()
  }

  async leaseHolders(sessionIds: string[]): Promise<Map<string, string>> {
    if (sessionIds.length === 0) return new Map()
    const rows = await this.db
      .selectFrom('session_leases')
      .select(['session_id', 'holder'])
      .where('session_id', 'in', sessionIds)
      .execute()
    return new Map(rows.map((row) => [row.session_id, row.holder]))
  }

  // ------------------------------------------------------------------ quotas

  async ownerUsage(owner: string | null): Promise<OwnerUsage> {
    // One statement: one connection, one moment (three at once took three of the pool's).
    const mine = this.db.selectFrom('sessions').select('id').where(ownedBy(owner))
    const usage = await this.db
      .selectNoFrom((eb) => [
        eb
          .selectFrom('sessions')
          .select((count) => count.fn.countAll<number>().as('n'))
          .where(ownedBy(owner))
          .as('sessions'),
        eb
          .selectFrom('runs')
          .select((count) => count.fn.countAll<number>().as('n'))
          .where('status', '=', 'running')
          .where('session_id', 'in', mine)
          .as('runs'),
        eb
          .selectFrom('datasets')
          .select((sum) => sum.fn.coalesce(sum.fn.sum<number>('bytes'), sql<number>`0`).as('n'))
          .where('session_id', 'in', mine)
          .as('data'),
      ])
      .executeTakeFirstOrThrow()
    return {
      sessions: Number(usage.sessions),
      runningRuns: Number(usage.runs),
      dataBytes: Number(usage.data),
    }
  }

  async ownerActivity(owner: string | null): Promise<OwnerActivity> {
    const rows = await this.db
      .selectFrom('runs')
      .innerJoin('sessions', 'sessions.id', 'runs.session_id')
      .where((eb) => (owner === null ? eb('sessions.owner', 'is', null) : eb('sessions.owner', '=', owner)))
      .groupBy('sessions.model')
      .select((eb) => [
        'sessions.model as model',
        eb.fn.countAll<number>().as('runs'),
        eb.fn.sum<number>('runs.input_tokens').as('input'),
        eb.fn.sum<number>('runs.output_tokens').as('output'),
        eb.fn.sum<number>('runs.total_tokens').as('total'),
      ])
      .execute()
    const tokens = rows
      .map((row) => ({
        model: row.model,
        runs: Number(row.runs),
        inputTokens: Number(row.input ?? 0),
        outputTokens: Number(row.output ?? 0),
        totalTokens: Number(row.total ?? 0),
      }))
      .sort((a, b) => b.totalTokens - a.totalTokens || String(a.model).localeCompare(String(b.model)))
    return { runs: tokens.reduce((sum, row) => sum + row.runs, 0), tokens }
  }

  async countRequest(owner: string, minute: number): Promise<number> {
    const row = await this.db
      .insertInto('request_counts')
      .values({ owner, minute, n: 1 })
      .onConflict((oc) =>
        oc.columns(['owner', 'minute']).doUpdateSet({ n: sql<number>`request_counts.n + 1` }),
      )
      .returning('n')
      .executeTakeFirstOrThrow()
    // Now and then, forget minutes long past.
    if (Math.random() < 0.01)
      await this.db
        .deleteFrom('request_counts')
        .where('minute', '<', minute - 5)
        .execute()
    return Number(row.n)
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
          answer: joinFollowUps(outcome.answer, outcome.followUps),
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
      const { id: stepId } = await trx
        .insertInto('steps')
        .values({
          run_id: commit.runId,
          session_id: sessionId,
          step: step.step,
          code: step.code,
          prose: step.text ?? null,
          tool: step.tool ? JSON.stringify(step.tool) : null,
          stdout: preview(step.stdout),
          stderr: preview(step.stderr),
          error: step.error ? JSON.stringify(step.error) : null,
          results: JSON.stringify(step.results),
          violations: step.violations ? JSON.stringify(step.violations) : null,
          queries: step.queries?.length ? JSON.stringify(step.queries) : null,
          stopped: step.stopped ?? null,
          success: !step.error && !step.violations?.length && !step.stopped ? 1 : 0,
          duration_ms: Math.round(step.durationMs),
          input_tokens: step.usage?.inputTokens ?? 0,
          output_tokens: step.usage?.outputTokens ?? 0,
          created_at: at,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
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
      tool: row.tool ? JSON.parse(row.tool) : undefined,
      stdout: row.stdout,
      stderr: row.stderr,
      error: row.error ? JSON.parse(row.error) : undefined,
      results: JSON.parse(row.results),
      violations: row.violations ? JSON.parse(row.violations) : undefined,
      ...(row.queries ? { queries: JSON.parse(row.queries) } : {}),
      ...(row.stopped ? { stopped: row.stopped } : {}),
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

  async setChartEdit(
    sessionId: string,
    stepId: number,
    index: number,
    edit?: StoredChartEdit,
  ): Promise<boolean> {
    // Read and written back in one transaction, the row locked where rows lock (two edits of one
    // step's charts at once both stay); the results' JSON carries the edit (no column).
    return this.db.transaction().execute(async (trx) => {
      let read = trx
        .selectFrom('steps')
        .select('results')
        .where('id', '=', stepId)
        .where('session_id', '=', sessionId)
      if (this.runtime.rowLocks) read = read.forUpdate()
      const row = await read.executeTakeFirst()
      if (!row) return false
      const results = JSON.parse(row.results) as StoredResult[]
      const result = results[index]
      if (!result) return false
      if (edit) result.chartEdit = edit
      else delete result.chartEdit
      await trx
        .updateTable('steps')
        .set({ results: JSON.stringify(results) })
        .where('id', '=', stepId)
        .execute()
      return true
    })
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

/** Sessions of that owner (`is` takes only null in PostgreSQL). */
function ownedBy(owner: string | null) {
  return (eb: ExpressionBuilder<Database, 'sessions'>) =>
    owner === null ? eb('owner', 'is', null) : eb('owner', '=', owner)
}

/** A run ended: its session is idle again. */
async function settle(trx: Kysely<Database>, runId: string) {
  await trx
    .updateTable('sessions')
    .set({ status: 'idle', updated_at: now() })
    .where('id', '=', trx.selectFrom('runs').select('session_id').where('id', '=', runId))
    .execute()
}
