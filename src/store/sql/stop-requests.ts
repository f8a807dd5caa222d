/**
 * Stops across replicas, in the SQL store (`StopRequests`): a request is a row that the replica
 * holding the session answers. How replicas are told of it is the feed's job: PostgreSQL's NOTIFY
 * (postgres/stop-feed.ts), or, in one process (SQLite), this process's listeners after the commit.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import type { StopNotice, StopRequest, StopRequests } from '../types.js'
import type { Database } from './schema.js'
import type { SqlRuntime } from './store.js'

/** How notices of Stops reach the replicas. */
export interface StopFeed {
  /** Inside the writing transaction: tells other replicas, when (and only if) it commits. */
  announce(trx: Kysely<Database>, notice: StopNotice): Promise<void>
  /** After the commit: tells this process's listeners, where the announcement does not come back. */
  committed(notice: StopNotice): void
  subscribe(listener: (notice: StopNotice) => void): () => void
  readonly live: boolean
}

/** One process: nothing to announce, this process's listeners told after the commit. */
export class LocalStopFeed implements StopFeed {
  readonly #listeners = new Set<(notice: StopNotice) => void>()
  get live(): boolean {
    return true
  }
  async announce(_trx: Kysely<Database>, _notice: StopNotice): Promise<void> {}
  committed(notice: StopNotice): void {
    for (const listener of this.#listeners) listener(notice)
  }
  subscribe(listener: (notice: StopNotice) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}

export class SqlStopRequests implements StopRequests {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly runtime: SqlRuntime,
    private readonly feed: StopFeed = new LocalStopFeed(),
  ) {}

  get live(): boolean {
    return this.feed.live
  }

  subscribe(listener: (notice: StopNotice) => void): () => void {
    return this.feed.subscribe(listener)
  }

  async request(input: {
    sessionId: string
    runId: string | null
    from: string
    ttlMs: number
  }): Promise<StopRequest> {
    const id = randomUUID()
    const now = this.runtime.nowMs
    const request = await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .insertInto('stop_requests')
        .values((eb) => ({
          id,
          session_id: input.sessionId,
          run_id: input.runId,
          asked_by: input.from,
          // The live holder, read in the same statement: the one replica the asker waits for.
          holder: eb
            .selectFrom('session_leases')
            .select('holder')
            .where('session_id', '=', input.sessionId)
            .where('expires_at', '>', now),
          requested_at: now,
          expires_at: sql<number>`${now} + ${Math.round(input.ttlMs)}`,
        }))
        .returning(['holder', 'requested_at'])
        .executeTakeFirstOrThrow()
      const request: StopRequest = {
        id,
        sessionId: input.sessionId,
        runId: input.runId,
        from: input.from,
        holder: row.holder,
        requestedAt: Number(row.requested_at),
      }
      await this.feed.announce(trx, { type: 'request', request })
      return request
    })
    this.feed.committed({ type: 'request', request })
    return request
  }

  async answer(id: string, stopped: number, options: { holder: boolean }): Promise<void> {
    if (!options.holder) {
      if (stopped > 0)
        await this.db
          .updateTable('stop_requests')
          .set({ stopped: sql<number>`stopped + ${stopped}` })
          .where('id', '=', id)
          .execute()
      return
    }
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('stop_requests')
        .set({ stopped: sql<number>`stopped + ${stopped}`, answered: 1 })
        .where('id', '=', id)
        .execute()
      await this.feed.announce(trx, { type: 'answer', id })
    })
    this.feed.committed({ type: 'answer', id })
  }

  async answered(id: string): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('stop_requests')
      .select(['stopped', 'answered'])
      .where('id', '=', id)
      .executeTakeFirst()
    return row && Number(row.answered) === 1 ? Number(row.stopped) : undefined
  }

  async pending(sessionId: string, sinceMs: number): Promise<StopRequest[]> {
    const rows = await this.db
      .selectFrom('stop_requests')
      .select(['id', 'session_id', 'run_id', 'asked_by', 'holder', 'requested_at'])
      .where('session_id', '=', sessionId)
      .where('answered', '=', 0)
      .where('requested_at', '>=', Math.floor(sinceMs))
      .where('expires_at', '>', this.runtime.nowMs)
      .orderBy('requested_at')
      .execute()
    return rows.map((row) => ({
      id: row.id,
      sessionId: row.session_id,
      runId: row.run_id,
      from: row.asked_by,
      holder: row.holder,
      requestedAt: Number(row.requested_at),
    }))
  }

  async forgetExpired(): Promise<number> {
    const result = await this.db
      .deleteFrom('stop_requests')
      .where('expires_at', '<=', this.runtime.nowMs)
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
