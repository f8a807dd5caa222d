/**
 * Template builds and their logs in the history database, so that every replica over it answers
 * for a build that one of them runs: plain Kysely queries, the same on SQLite and PostgreSQL.
 * Heartbeats are stamped by the database's clock (replicas' clocks may differ; the database's is one).
 * @module
 */
import { type Kysely, type Selectable, sql } from 'kysely'
import { ConflictError, RateLimitError } from '../../errors.js'
import type {
  StoredTemplateBuild,
  TemplateBuildChanges,
  TemplateBuildLogLine,
  TemplateBuildStatus,
  TemplateBuildStore,
} from '../types.js'
import type { Database, TemplateBuildsTable } from './schema.js'
import { now, type SqlRuntime } from './store.js'

/** The statuses of a build that has not ended. */
const UNDER_WAY = ['waiting', 'building']

const json = (text: string | null) => (text === null ? undefined : JSON.parse(text))

/**
 * A second build of a name under way, as the unique index of migration 12 refuses it (PostgreSQL
 * names the index, SQLite the column): a ConflictError; any other error as it was.
 */
function busy(error: unknown, name: string): never {
  if (/template_builds_one_per_name|UNIQUE constraint failed: template_builds\.name/.test(String(error)))
    throw new ConflictError(`A build of "${name}" is under way already (on this replica or another)`, {
      hint: 'Wait for it to end, or cancel it first.',
    })
  throw error
}

/** Any number: the key of the advisory lock under which a build is counted against the cap and taken. */
const CAP_LOCK = 7_350_212

function toBuild(row: Selectable<TemplateBuildsTable> & { beat_ms_ago: number | null }): StoredTemplateBuild {
  return {
    id: row.id,
    name: row.name,
    owner: row.owner,
    status: row.status as TemplateBuildStatus,
    ...(row.replica !== null ? { replica: row.replica } : {}),
    ...(row.beat_ms_ago !== null ? { beatMsAgo: Number(row.beat_ms_ago) } : {}),
    cancelRequested: Number(row.cancel_requested) === 1,
    ...(row.progress !== null ? { progress: json(row.progress) } : {}),
    ...(row.reason !== null ? { reason: json(row.reason) } : {}),
    ...(row.template !== null ? { template: json(row.template) } : {}),
    ...(row.request !== null ? { request: json(row.request) } : {}),
    createdAt: row.created_at,
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
  }
}

/** Builds that a replica took and that wait for their turn. */
async function countWaiting(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('template_builds')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'waiting')
    .where('replica', 'is not', null)
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}

export class SqlTemplateBuildStore implements TemplateBuildStore {
  readonly specificationVersion = 'v1'

  constructor(
    private readonly db: Kysely<Database>,
    private readonly runtime: Pick<SqlRuntime, 'nowMs' | 'rowLocks'>,
  ) {}

  async createTemplateBuild(input: {
    id: string
    name: string
    owner: string | null
    replica?: string
    request?: Record<string, unknown>
    maxWaiting?: number
  }): Promise<StoredTemplateBuild> {
    const row = {
      id: input.id,
      name: input.name,
      owner: input.owner,
      status: 'waiting',
      replica: input.replica ?? null,
      heartbeat_at: input.replica ? this.runtime.nowMs : null,
      progress: null,
      reason: null,
      template: null,
      request: input.request ? JSON.stringify(input.request) : null,
      created_at: now(),
      finished_at: null,
    }
    await this.#underCap(input.replica ? input.maxWaiting : undefined, (trx) =>
      trx.insertInto('template_builds').values(row).execute(),
    ).catch((error: unknown) => busy(error, input.name))
    return (await this.getTemplateBuild(input.id)) as StoredTemplateBuild
  }

  async claimTemplateBuild(id: string, replica: string, maxWaiting?: number): Promise<boolean> {
    const result = await this.#underCap(maxWaiting, (trx) =>
      trx
        .updateTable('template_builds')
        .set({ replica, heartbeat_at: this.runtime.nowMs })
        .where('id', '=', id)
        .where('replica', 'is', null)
        .where('status', '=', 'waiting')
        .executeTakeFirst(),
    ).catch(async (error: unknown) => busy(error, (await this.getTemplateBuild(id))?.name ?? 'this template'))
    return Number(result.numUpdatedRows) === 1
  }

  /**
   * Runs `write` (which adds one waiting build) only while fewer than `max` builds wait, counted and
   * written in one transaction. PostgreSQL's read committed lets two such transactions count the
   * same rows, so there they take one advisory lock first; SQLite serializes its writers already.
   */
  async #underCap<T>(max: number | undefined, write: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    if (max === undefined) return write(this.db)
    return this.db.transaction().execute(async (trx) => {
      if (this.runtime.rowLocks) await sql`select pg_advisory_xact_lock(${CAP_LOCK})`.execute(trx)
      const waiting = await countWaiting(trx)
      if (waiting >= max)
        throw new RateLimitError(`${waiting} template builds are waiting already`, {
          hint: 'Try again when one has finished.',
          retryAfterSeconds: 60,
        })
      return write(trx)
    })
  }

  async countWaitingTemplateBuilds(): Promise<number> {
    return countWaiting(this.db)
  }

  async getTemplateBuild(id: string): Promise<StoredTemplateBuild | undefined> {
    const row = await this.db
      .selectFrom('template_builds')
      .selectAll()
      .select(sql<number | null>`${this.runtime.nowMs} - heartbeat_at`.as('beat_ms_ago'))
      .where('id', '=', id)
      .executeTakeFirst()
    return row ? toBuild(row) : undefined
  }

  async updateTemplateBuild(id: string, changes: TemplateBuildChanges): Promise<void> {
    await this.db
      .updateTable('template_builds')
      .set({
        ...(changes.status ? { status: changes.status } : {}),
        ...(changes.progress ? { progress: JSON.stringify(changes.progress) } : {}),
        ...(changes.reason ? { reason: JSON.stringify(changes.reason) } : {}),
        ...(changes.template ? { template: JSON.stringify(changes.template) } : {}),
        ...(changes.finished ? { finished_at: now() } : {}),
      })
      .where('id', '=', id)
      .execute()
  }

  async appendTemplateBuildLog(id: string, from: number, lines: TemplateBuildLogLine[]): Promise<void> {
    if (lines.length === 0) return
    await this.db
      .insertInto('template_build_logs')
      .values(lines.map((line, i) => ({ build_id: id, seq: from + i, line: JSON.stringify(line) })))
      .onConflict((oc) => oc.columns(['build_id', 'seq']).doNothing())
      .execute()
  }

  async templateBuildLog(id: string, offset: number, limit: number): Promise<TemplateBuildLogLine[]> {
    const rows = await this.db
      .selectFrom('template_build_logs')
      .select('line')
      .where('build_id', '=', id)
      .where('seq', '>=', offset)
      .orderBy('seq')
      .limit(limit)
      .execute()
    return rows.map((row) => JSON.parse(row.line))
  }

  async requestTemplateBuildCancel(id: string): Promise<boolean> {
    const result = await this.db
      .updateTable('template_builds')
      .set({ cancel_requested: 1 })
      .where('id', '=', id)
      .where('status', 'in', UNDER_WAY)
      .executeTakeFirst()
    return Number(result.numUpdatedRows) === 1
  }

  async beatTemplateBuilds(replica: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return []
    await this.db
      .updateTable('template_builds')
      .set({ heartbeat_at: this.runtime.nowMs })
      .where('replica', '=', replica)
      .where('id', 'in', ids)
      .execute()
    const rows = await this.db
      .selectFrom('template_builds')
      .select('id')
      .where('id', 'in', ids)
      .where('cancel_requested', '=', 1)
      .execute()
    return rows.map((row) => row.id)
  }

  async failLapsedTemplateBuilds(lapseMs: number, reason: string): Promise<number> {
    const result = await this.db
      .updateTable('template_builds')
      .set({ status: 'error', reason: JSON.stringify({ message: reason }), finished_at: now() })
      .where('status', 'in', UNDER_WAY)
      .where('replica', 'is not', null)
      .where('heartbeat_at', '<', sql<number>`${this.runtime.nowMs} - ${Math.round(lapseMs)}`)
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }

  async forgetTemplateBuilds(before: string): Promise<number> {
    const result = await this.db
      .deleteFrom('template_builds')
      .where((eb) =>
        eb.or([
          eb('finished_at', '<', before),
          eb.and([eb('replica', 'is', null), eb('status', '=', 'waiting'), eb('created_at', '<', before)]),
        ]),
      )
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }
}
