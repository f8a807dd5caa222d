/**
 * The history in one SQLite file (WAL): the embedded default, through Kysely over better-sqlite3.
 * @module
 */
import BetterSqlite3 from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { DiskFullError, isDiskFull } from '../../errors.js'
import { guarded } from '../sql/guarded.js'
import { type AnyDb, type Database, migrate, type SchemaVersion } from '../sql/schema.js'
import { SqlHistoryStore } from '../sql/store.js'

/** SQLite keeps the schema's version in PRAGMA user_version (as Analyst always has). */
/** SQLITE_FULL (the disk under the file is full): said as such, a 507; the transaction was rolled back. */
function classifySqliteError(error: unknown): unknown {
  if (!isDiskFull(error) || DiskFullError.isInstance(error)) return error
  return new DiskFullError(
    "The server's disk is full: the database could not record this (nothing was lost)",
    {
      cause: error,
    },
  )
}

const sqliteVersion: SchemaVersion = {
  async read(db: AnyDb): Promise<number> {
    const { rows } = await sql<{ user_version: number }>`PRAGMA user_version`.execute(db)
    return rows[0]?.user_version ?? 0
  },
  async write(db: AnyDb, version: number): Promise<void> {
    await sql.raw(`PRAGMA user_version = ${Number(version)}`).execute(db)
  },
}

export class SqliteHistoryStore extends SqlHistoryStore {
  private constructor(
    db: Kysely<Database>,
    /** The file, for tests and `doctor`. */
    readonly path: string,
  ) {
    super(db, {
      provider: 'sqlite',
      shared: false,
      nowMs: sql<number>`cast(unixepoch('subsec') * 1000 as integer)`,
      rowLocks: false,
      version: sqliteVersion,
    })
  }

  /** Opens (creating and migrating as needed) the database file. */
  static async open(path: string): Promise<SqliteHistoryStore> {
    const database = new BetterSqlite3(path)
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = NORMAL') // with WAL: a committed step survives a crash of the process
    database.pragma('foreign_keys = ON')
    database.pragma('busy_timeout = 5000')
    const db = new Kysely<Database>({
      dialect: guarded(new SqliteDialect({ database }), classifySqliteError),
    })
    try {
      await migrate(db, { serial: 'integer', binary: 'blob' }, sqliteVersion)
    } catch (error) {
      await db.destroy()
      throw error
    }
    return new SqliteHistoryStore(db, path)
  }
}
