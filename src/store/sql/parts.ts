/**
 * Parts: content that a writer puts in chunks under a temporary key (`part-<uuid>`) and moves to
 * its own key when it is whole (blobs.ts, template-files.ts), so that readers see all of it or
 * none. A writer killed mid-write leaves its part's chunks, which no record names. On PostgreSQL the
 * writer holds an advisory lock on its part while it writes (PostgreSQL lets it go with the
 * writer's connection), so `forgetPartial` tells a dead writer's part from a live one without any
 * clock; on SQLite (one process) every part but this process's own is a dead writer's.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import type { Database } from './schema.js'
import type { SqlRuntime } from './store.js'

/** The tables of chunks: the same columns but for the name of the key (a blob's hash, a template file's key). */
export const CHUNK_KEY = { blob_chunks: 'blob', template_file_chunks: 'file' } as const
export type ChunkTable = keyof typeof CHUNK_KEY

/** The first part of a part key; every part key sorts between this and PART_END (an index range, not LIKE). */
const PART = 'part-'
const PART_END = 'part.'
/** Any number: the class of the advisory locks a writer holds on its part (the other key is the part's hash). */
const PART_LOCK = 7_350_213
/** Any number: the lock under which one replica at a time forgets partial content. */
const SWEEP_LOCK = 7_350_214
/** The parts this process is writing, in any table: no sweep takes them, whatever the database. */
const writing = new Set<string>()

/**
 * Runs `write` with a new part key, on one connection that holds the part's lock on PostgreSQL (the
 * lock lives and dies with it); the part's chunks that `write` did not move are gone after.
 */
export async function withPart<T>(
  db: Kysely<Database>,
  runtime: Pick<SqlRuntime, 'rowLocks'>,
  table: ChunkTable,
  write: (db: Kysely<Database>, part: string) => Promise<T>,
): Promise<T> {
  const part = `${PART}${randomUUID()}`
  const written = async (db: Kysely<Database>) => {
    writing.add(part)
    try {
      return await write(db, part)
    } finally {
      // One shape for both tables: typed as blob_chunks. Not deleted (a connection that broke): a
      // later start's sweep takes them, and the error that broke it is the one to say.
      await db
        .deleteFrom(table as 'blob_chunks')
        .where(CHUNK_KEY[table] as 'blob', '=', part)
        .execute()
        .catch(() => {})
      writing.delete(part)
    }
  }
  if (!runtime.rowLocks) return written(db)
  return db.connection().execute(async (db) => {
    await sql`select pg_advisory_lock(${PART_LOCK}, hashtext(${part}))`.execute(db)
    try {
      return await written(db)
    } finally {
      // A connection that broke took its lock with it: the error that broke it is the one to say.
      await sql`select pg_advisory_unlock(${PART_LOCK}, hashtext(${part}))`.execute(db).catch(() => {})
    }
  })
}

/** Forgets up to `limit` parts of `table` whose writers are gone; how many. */
export async function forgetPartial(
  db: Kysely<Database>,
  runtime: Pick<SqlRuntime, 'rowLocks'>,
  table: ChunkTable,
  limit: number,
): Promise<number> {
  const key = CHUNK_KEY[table] as 'blob'
  return db.transaction().execute(async (trx) => {
    // Two replicas that start at once: one sweeps, the other finds nothing left.
    if (runtime.rowLocks) await sql`select pg_advisory_xact_lock(${SWEEP_LOCK})`.execute(trx)
    const parts = await trx
      .selectFrom(table as 'blob_chunks')
      .select(`${key} as part` as 'blob as part')
      .distinct()
      .where(key, '>=', PART)
      .where(key, '<', PART_END)
      .limit(limit)
      .execute()
    let forgotten = 0
    for (const { part } of parts) {
      if (writing.has(part)) continue
      if (runtime.rowLocks) {
        // Its writer's lock: held, the writer is alive; free, the writer is gone (held until commit).
        const free = await sql<{
          free: boolean
        }>`select pg_try_advisory_xact_lock(${PART_LOCK}, hashtext(${part})) as free`.execute(trx)
        if (!free.rows[0]?.free) continue
      }
      await trx
        .deleteFrom(table as 'blob_chunks')
        .where(key, '=', part)
        .execute()
      forgotten++
    }
    return forgotten
  })
}
