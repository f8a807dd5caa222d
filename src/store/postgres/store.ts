/**
 * The history in PostgreSQL (ANALYST_DATABASE_URL), shared by every replica of `analyst serve`:
 * the same store and migrations as SQLite's, over node-postgres. The schema's version is a row of
 * `analyst_schema`; an advisory lock keeps two replicas that start at once from both migrating.
 * @module
 */
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { AnalystError } from '../../errors.js'
import { guarded } from '../sql/guarded.js'
import { type AnyDb, type Database, migrate, type SchemaVersion } from '../sql/schema.js'
import { SqlHistoryStore } from '../sql/store.js'
import { classifyPostgresError } from './unavailable.js'

/** Any number: the key of the advisory lock that migrations take. */
const MIGRATION_LOCK = 0x616e6c73

const postgresVersion: SchemaVersion = {
  async lock(db: AnyDb) {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(db)
    await sql`create table if not exists analyst_schema (version integer not null)`.execute(db)
  },
  async read(db: AnyDb): Promise<number> {
    const exists = await sql<{ t: string | null }>`select to_regclass('analyst_schema') as t`.execute(db)
    if (!exists.rows[0]?.t) return 0
    const { rows } = await sql<{ version: number }>`select version from analyst_schema`.execute(db)
    return rows[0]?.version ?? 0
  },
  async write(db: AnyDb, version: number): Promise<void> {
    await sql`delete from analyst_schema`.execute(db)
    await sql`insert into analyst_schema (version) values (${version})`.execute(db)
  },
}

/** 64-bit integers (counts, sizes, times in ms) as numbers: they stay far below 2^53 here. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return Number
    return pg.types.getTypeParser(oid, format)
  },
}

/** The URL without its password, for messages. */
function shown(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'the database URL'
  }
}

export class PostgresHistoryStore extends SqlHistoryStore {
  private constructor(db: Kysely<Database>) {
    super(db, {
      provider: 'postgres',
      shared: true,
      nowMs: sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`,
      rowLocks: true,
      snapshotIsolation: 'repeatable read',
      version: postgresVersion,
    })
  }

  /** Connects, and brings the schema up to date (one replica at a time). */
  static async open(url: string, options: { poolSize?: number } = {}): Promise<PostgresHistoryStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      types,
      connectionTimeoutMillis: 10_000,
    })
    // An idle connection that breaks must not crash the process: the pool replaces it.
    pool.on('error', () => {})
    // Nor one that is checked out between two queries (a transaction's, on a loaded machine) when
    // PostgreSQL stops: pg emits the error on the client, which has no listener while it is out;
    // its next query fails (a 503), and the pool drops it when it is released.
    pool.on('connect', (client) => client.on('error', () => {}))
    // Every query's failure is read first: a database that went away is a 503, not a 500 (unavailable.ts).
    const db = new Kysely<Database>({
      dialect: guarded(new PostgresDialect({ pool }), classifyPostgresError),
    })
    try {
      await migrate(db, { serial: 'serial', binary: 'bytea' }, postgresVersion)
    } catch (error) {
      await db.destroy()
      if (AnalystError.isInstance(error)) throw error
      throw new AnalystError(
        `Cannot open the PostgreSQL database ${shown(url)}: ${(error as Error).message}`,
        {
          hint: 'Check ANALYST_DATABASE_URL (postgres://user:password@host:port/database) and that the server is up.',
          cause: error,
        },
      )
    }
    return new PostgresHistoryStore(db)
  }
}
