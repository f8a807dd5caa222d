/**
 * The SQLite file: opened in WAL mode, its schema brought up to date by numbered migrations
 * (PRAGMA user_version holds the number applied).
 * @module
 */
import Database from 'better-sqlite3'

export type Db = Database.Database

/** Each entry upgrades the schema by one version. Never edit a shipped entry: add a new one. */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    owner TEXT,
    model TEXT,
    status TEXT NOT NULL DEFAULT 'idle',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX sessions_owner ON sessions (owner, updated_at);

  CREATE TABLE datasets (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    source_path TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    profile TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (session_id, name)
  );

  CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    question TEXT NOT NULL,
    answer TEXT,
    incomplete INTEGER NOT NULL DEFAULT 0,
    unsupported TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL,
    error TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    finished_at TEXT
  );
  CREATE INDEX runs_session ON runs (session_id, seq);

  CREATE TABLE steps (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    code TEXT NOT NULL,
    stdout TEXT NOT NULL,
    stderr TEXT NOT NULL,
    error TEXT,
    results TEXT NOT NULL,
    violations TEXT,
    success INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
  );
  CREATE INDEX steps_session ON steps (session_id, id);

  CREATE TABLE artifacts (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    step_id INTEGER REFERENCES steps (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mime_type TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE INDEX artifacts_session ON artifacts (session_id, name, id);

  CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
  );
  `,
  // 2: attempts the guard or the sandbox stopped, for operators to review.
  `
  CREATE TABLE blocked (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    step_id INTEGER REFERENCES steps (id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    rule TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE INDEX blocked_session ON blocked (session_id, id);
  ALTER TABLE steps ADD COLUMN prose TEXT;
  `,
]

export const SCHEMA_VERSION = MIGRATIONS.length

export function openDatabase(path: string): Db {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL') // with WAL: a committed step survives a crash of the process
  db.pragma('foreign_keys = ON')
  db.pragma('busy_timeout = 5000')
  migrate(db)
  return db
}

export function migrate(db: Db) {
  const current = db.pragma('user_version', { simple: true }) as number
  if (current > MIGRATIONS.length) {
    throw new Error(
      `The history database is newer (schema ${current}) than this Analyst knows (${MIGRATIONS.length}); upgrade Analyst.`,
    )
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version] as string)
      db.pragma(`user_version = ${version + 1}`)
    })()
  }
}
