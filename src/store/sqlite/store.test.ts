/**
 * The SQLite store: the shared suites (history, eval runs), then what only the file shows: WAL, the
 * schema's version, reopening, and a database written by an earlier Analyst (schema 2) brought up
 * to date.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { describeAuthStoreConformance } from '../auth.case.js'
import { describeStoreConformance } from '../conformance.case.js'
import { describeEvalStoreConformance } from '../evals.case.js'
import { openStores } from '../index.js'
import { SqlBlobStore } from '../sql/blobs.js'
import { SCHEMA_VERSION } from '../sql/schema.js'
import { describeTemplateBuildStoreConformance } from '../template-builds.case.js'
import { SqliteHistoryStore } from './store.js'

/** The embedded stores over a fresh home folder, removed on close. */
async function openTemporary() {
  const home = mkdtempSync(join(tmpdir(), 'analyst-store-'))
  const stores = await openStores(home, {})
  return {
    ...stores,
    close: async () => {
      await stores.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

describeStoreConformance({ name: 'sqlite + files', open: openTemporary })
describeEvalStoreConformance({ name: 'sqlite', open: openTemporary })
describeAuthStoreConformance({ name: 'sqlite', open: openTemporary })
describeTemplateBuildStoreConformance({ name: 'sqlite', open: openTemporary })

describeStoreConformance({
  name: 'sqlite + blobs in the database',
  async open() {
    const home = mkdtempSync(join(tmpdir(), 'analyst-store-'))
    const history = await SqliteHistoryStore.open(join(home, 'analyst.db'))
    return {
      history,
      blobs: new SqlBlobStore(history.db, history.runtime),
      close: async () => {
        await history.close()
        rmSync(home, { recursive: true, force: true })
      },
    }
  },
})

/** The schema as Analyst shipped it before this store (PRAGMA user_version 2), verbatim. */
const LEGACY_MIGRATIONS: string[] = [
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

describe('SQLite file', () => {
  let home: string
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'analyst-sqlite-'))
  })
  afterEach(() => rmSync(home, { recursive: true, force: true }))

  it('is in WAL mode at the latest schema, and keeps what it holds when reopened', async () => {
    const path = join(home, 'analyst.db')
    let store = await SqliteHistoryStore.open(path)
    const { rows } = await sql<{ journal_mode: string }>`PRAGMA journal_mode`.execute(store.db)
    expect(rows[0]?.journal_mode).toBe('wal')
    const session = await store.createSession({ title: 'kept' })
    await store.close()
    store = await SqliteHistoryStore.open(path)
    expect((await store.getSession(session.id))?.title).toBe('kept')
    await store.close()
    const raw = new Database(path)
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    raw.close()
  })

  it('refuses a database from a newer Analyst, saying what to do', async () => {
    const path = join(home, 'analyst.db')
    const raw = new Database(path)
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`)
    raw.close()
    await expect(SqliteHistoryStore.open(path)).rejects.toMatchObject({
      message: expect.stringMatching(/newer/),
      hint: expect.stringMatching(/Upgrade Analyst/),
    })
  })

  it("upgrades an earlier Analyst's database; its datasets still resume from their host paths", async () => {
    const path = join(home, 'analyst.db')
    const raw = new Database(path)
    for (const [index, migration] of LEGACY_MIGRATIONS.entries()) {
      raw.exec(migration)
      raw.pragma(`user_version = ${index + 1}`)
    }
    const csv = join(home, 'old.csv')
    writeFileSync(csv, 'a\n1\n')
    const at = new Date().toISOString()
    raw
      .prepare(
        "INSERT INTO sessions (id, title, status, created_at, updated_at) VALUES ('s1', 'old', 'idle', ?, ?)",
      )
      .run(at, at)
    raw
      .prepare(
        'INSERT INTO datasets (session_id, name, source_path, bytes, profile, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('s1', 'old.csv', csv, 4, JSON.stringify({ name: 'old.csv', path: csv }), at)
    raw
      .prepare(
        "INSERT INTO runs (id, session_id, seq, question, status, started_at) VALUES ('r1', 's1', 1, 'q', 'done', ?)",
      )
      .run(at)
    raw.close()

    const store = await SqliteHistoryStore.open(path)
    try {
      expect(await store.datasets('s1')).toMatchObject([
        { name: 'old.csv', sourcePath: csv, sha256: undefined },
      ])
      expect((await store.getSession('s1'))?.questions).toBe(1)
      const run = await store.startRun('s1', 'next')
      expect(run.seq).toBe(2)
      // New steps and blocked attempts go into the old tables.
      await store.commitStep({
        runId: run.id,
        sessionId: 's1',
        step: { step: 1, code: 'x', stdout: '', stderr: '', results: [], durationMs: 1 },
        artifacts: [],
        blocked: [{ source: 'guard', rule: 'network', message: 'no' }],
      })
      expect(await store.blocked('s1')).toMatchObject([{ question: 2, step: 1, rule: 'network' }])
    } finally {
      await store.close()
    }
  })
})
