/**
 * The tables, as Kysely sees them, and the numbered migrations that make them: one list that
 * SQLite and PostgreSQL both run, written with Kysely's schema builder; the few differences are
 * asked of `Dialect`.
 * @module
 */
import { type ColumnDefinitionBuilder, type ColumnType, type Generated, type Kysely, sql } from 'kysely'
import { AnalystError } from '../../errors.js'

export interface SessionsTable {
  id: string
  title: string
  owner: string | null
  model: string | null
  status: string
  created_at: string
  updated_at: string
  /** Since migration 7: the names of the host's sources it queries (JSON array), null for none. */
  sources: string | null
  /** Since migration 9: the template its sandbox starts from (a name or id), null for the engine's default. */
  template: string | null
  /** Since migration 10: the id of the built template the name pointed at when it was made (null: none, or an engine's own template). */
  template_id: string | null
  /** Since migration 10: the language its cells are in (python, r), null for sessions made before. */
  language: string | null
}

export interface DatasetsTable {
  id: Generated<number>
  session_id: string
  name: string
  /** '' for datasets with no host path (uploads, and every dataset since blobs). */
  source_path: string
  bytes: number
  profile: string
  created_at: string
  /** Since migration 3: the blob of the content. */
  sha256: string | null
}

export interface RunsTable {
  id: string
  session_id: string
  seq: number
  question: string
  answer: string | null
  incomplete: ColumnType<number, number | undefined, number>
  unsupported: ColumnType<string, string | undefined, string>
  status: string
  error: string | null
  input_tokens: ColumnType<number, number | undefined, number>
  output_tokens: ColumnType<number, number | undefined, number>
  total_tokens: ColumnType<number, number | undefined, number>
  started_at: string
  finished_at: string | null
}

export interface StepsTable {
  id: Generated<number>
  run_id: string
  session_id: string
  step: number
  code: string
  stdout: string
  stderr: string
  error: string | null
  results: string
  violations: string | null
  success: number
  duration_ms: number
  input_tokens: ColumnType<number, number | undefined, number>
  output_tokens: ColumnType<number, number | undefined, number>
  created_at: string
  /** Since migration 2: the model's words around the code. */
  prose: string | null
  /** Since migration 6: a tool call's name and arguments as JSON (the step's code is a comment). */
  tool: ColumnType<string | null, string | null | undefined, string | null>
  /** Since migration 7: the queries its sql() calls ran (JSON), null for none. */
  queries: ColumnType<string | null, string | null | undefined, string | null>
  /** Since migration 13: why a step did not end (its run stopped while it ran), null when it ended. */
  stopped: ColumnType<string | null, string | null | undefined, string | null>
}

export interface ArtifactsTable {
  id: Generated<number>
  session_id: string
  step_id: number | null
  name: string
  kind: string
  size: number
  mime_type: string
  sha256: string
  created_at: string
}

export interface MessagesTable {
  session_id: string
  seq: number
  message: string
}

export interface BlockedTable {
  id: Generated<number>
  session_id: string
  step_id: number | null
  source: string
  rule: string
  message: string
  created_at: string
}

/** Since migration 5: who answers a session's questions now (one replica at a time). */
export interface SessionLeasesTable {
  session_id: string
  /** The replica that holds (or last held) the lease. */
  holder: string
  /** Milliseconds since the epoch, by the database's clock; 0 once released. */
  expires_at: number
}

/** Since migration 14: a Stop asked on one replica for a run on another, until it is answered or expires. */
export interface StopRequestsTable {
  id: string
  session_id: string
  /** The run to stop; null: whatever runs in the session when the request is heard. */
  run_id: string | null
  /** The replica that asked. */
  asked_by: string
  /** The replica that held the session's lease when it was asked (null: none did). */
  holder: string | null
  /** Milliseconds since the epoch, by the database's clock. */
  requested_at: number
  expires_at: number
  /** Runs stopped for it, summed over the replicas that heard it. */
  stopped: ColumnType<number, number | undefined, number>
  /** 1 once `holder` has answered (the asker waits for that). */
  answered: ColumnType<number, number | undefined, number>
}

/** Since migration 5: blobs kept in the database, in chunks (a store without shared files). */
export interface BlobsTable {
  sha256: string
  size: number
  created_at: string
}

export interface BlobChunksTable {
  /** The blob's SHA-256, or `part-<uuid>` while it is being written. */
  blob: string
  seq: number
  data: Uint8Array
}

/** Since migration 5: requests per token and minute, for the rate quota of all replicas. */
export interface RequestCountsTable {
  owner: string
  minute: number
  n: number
}

/** Since migration 11: template builds that API clients asked for, so that any replica answers for one. */
export interface TemplateBuildsTable {
  id: string
  name: string
  owner: string | null
  /** waiting, building, ready, error or cancelled. */
  status: string
  /** The replica that runs it; null while it is only requested (E2B's POST /v3/templates). */
  replica: string | null
  /** Milliseconds since the epoch, by the database's clock: the runner's last sign of life. */
  heartbeat_at: number | null
  /** 1 once a client asked to cancel it: the runner reads it with its heartbeat. */
  cancel_requested: ColumnType<number, number | undefined, number>
  /** JSON: the step under way { step, total, title }. */
  progress: string | null
  /** JSON: why it failed { message, step }. */
  reason: string | null
  /** JSON: what a client sees of the template it made. */
  template: string | null
  /** JSON: what the request carried for its build (E2B's resources). */
  request: string | null
  created_at: string
  finished_at: string | null
}

/** Since migration 11: a build's log, one row per line, numbered from 0 (the offset clients page by). */
export interface TemplateBuildLogsTable {
  build_id: string
  seq: number
  /** JSON: { timestamp, level, message, step }. */
  line: string
}

/** Since migration 4: runs of a benchmark (`analyst eval`). */
export interface EvalRunsTable {
  id: string
  dataset: string
  model: string
  settings: string
  status: string
  elapsed_ms: ColumnType<number, number | undefined, number>
  created_at: string
  updated_at: string
}

/** Since migration 4: one row per question of an eval run. */
export interface EvalResultsTable {
  run_id: string
  question_id: number
  status: string
  session_id: string | null
  correct: number
  detail: string
  updated_at: string
}

/** Since migration 8: people who signed in (OpenID Connect). */
export interface UsersTable {
  id: string
  issuer: string
  subject: string
  name: string
  email: string | null
  /** JSON array. */
  groups: string
  admin: number
  disabled: number
  created_at: string
  last_seen_at: string | null
}

/** Since migration 8: signed-in browsers, by the SHA-256 of their cookie's secret. */
export interface BrowserSessionsTable {
  hash: string
  user_id: string
  csrf_token: string
  id_token: string | null
  created_at: string
  last_used_at: string
  expires_at: string
}

/** Since migration 8: sign-ins under way (state, nonce, PKCE verifier), by the SHA-256 of the browser's cookie. */
export interface LoginAttemptsTable {
  hash: string
  /** JSON: what the callback checks the provider's answer against. */
  data: string
  expires_at: string
}

/** Since migration 8: personal API keys, by the SHA-256 of their secret. */
export interface ApiKeysTable {
  id: string
  user_id: string
  label: string
  hash: string
  created_at: string
  last_used_at: string | null
  expires_at: string | null
}

/** Since migration 8: read-only links to sessions. */
export interface SharesTable {
  id: string
  session_id: string
  allow_files: number
  created_by: string
  created_at: string
}

/** Since migration 8: sign-ins, keys, shares and admin actions. */
export interface AuditTable {
  id: Generated<number>
  at: string
  action: string
  actor: string | null
  target: string | null
  detail: string | null
}

/**
 * Since migration 12: files kept for templates in the database, so that every replica reaches
 * them: the tar of an E2B COPY step's files (`copy:<owner key>:<files hash>`, expired after a
 * while) and a built template's export (`template:<id>`, under the name it was built as).
 */
export interface TemplateFilesTable {
  key: string
  /** A template's name, for its export; null for a COPY's files. */
  name: string | null
  size: number
  /** The content's SHA-256, checked as it is read back. */
  sha256: string
  created_at: string
}

/** Since migration 12: a template file's content in chunks, numbered from 0 (as blob_chunks). */
export interface TemplateFileChunksTable {
  /** The file's key, or `part-<uuid>` while it is being written. */
  file: string
  seq: number
  data: Uint8Array
}

export interface Database {
  users: UsersTable
  browser_sessions: BrowserSessionsTable
  login_attempts: LoginAttemptsTable
  api_keys: ApiKeysTable
  shares: SharesTable
  audit: AuditTable
  session_leases: SessionLeasesTable
  stop_requests: StopRequestsTable
  blobs: BlobsTable
  blob_chunks: BlobChunksTable
  request_counts: RequestCountsTable
  sessions: SessionsTable
  datasets: DatasetsTable
  runs: RunsTable
  steps: StepsTable
  artifacts: ArtifactsTable
  messages: MessagesTable
  blocked: BlockedTable
  eval_runs: EvalRunsTable
  eval_results: EvalResultsTable
  template_builds: TemplateBuildsTable
  template_build_logs: TemplateBuildLogsTable
  template_files: TemplateFilesTable
  template_file_chunks: TemplateFileChunksTable
}

/** What differs between dialects in the migrations. */
export interface Dialect {
  /** The column type of an auto-incremented integer key (SQLite `integer`, PostgreSQL `serial`). */
  serial: 'integer' | 'serial'
  /** The column type of bytes (SQLite `blob`, PostgreSQL `bytea`). */
  binary: 'blob' | 'bytea'
}

/** Migrations run on a schema that is still being made: Kysely's advice is to type it loosely. */
// biome-ignore lint/suspicious/noExplicitAny: the schema a migration sees is the one it is making
export type AnyDb = Kysely<any>
type Migration = (db: AnyDb, dialect: Dialect) => Promise<void>
type Column = (column: ColumnDefinitionBuilder) => ColumnDefinitionBuilder

/** An auto-incremented integer key, as the dialect spells it. */
function serialKey(dialect: Dialect): Column {
  return (c) => (dialect.serial === 'integer' ? c.primaryKey().autoIncrement() : c.primaryKey())
}

/** Each entry upgrades the schema by one version. Never edit a shipped entry: add a new one. */
export const MIGRATIONS: Migration[] = [
  // 1: sessions, their data, runs, steps, artifacts and the model's conversation.
  async (db, dialect) => {
    const key: Column = (c) =>
      dialect.serial === 'integer' ? c.primaryKey().autoIncrement() : c.primaryKey()
    const session: Column = (c) => c.notNull().references('sessions.id').onDelete('cascade')
    await db.schema
      .createTable('sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('owner', 'text')
      .addColumn('model', 'text')
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('idle'))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('sessions_owner').on('sessions').columns(['owner', 'updated_at']).execute()
    await db.schema
      .createTable('datasets')
      .addColumn('id', dialect.serial, key)
      .addColumn('session_id', 'text', session)
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('source_path', 'text', (c) => c.notNull())
      .addColumn('bytes', 'integer', (c) => c.notNull())
      .addColumn('profile', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('datasets_session_name', ['session_id', 'name'])
      .execute()
    await db.schema
      .createTable('runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', session)
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('question', 'text', (c) => c.notNull())
      .addColumn('answer', 'text')
      .addColumn('incomplete', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('unsupported', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('input_tokens', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('output_tokens', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('total_tokens', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute()
    await db.schema.createIndex('runs_session').on('runs').columns(['session_id', 'seq']).execute()
    await db.schema
      .createTable('steps')
      .addColumn('id', dialect.serial, key)
      .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
      .addColumn('session_id', 'text', session)
      .addColumn('step', 'integer', (c) => c.notNull())
      .addColumn('code', 'text', (c) => c.notNull())
      .addColumn('stdout', 'text', (c) => c.notNull())
      .addColumn('stderr', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('results', 'text', (c) => c.notNull())
      .addColumn('violations', 'text')
      .addColumn('success', 'integer', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('input_tokens', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('output_tokens', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('steps_session').on('steps').columns(['session_id', 'id']).execute()
    await db.schema
      .createTable('artifacts')
      .addColumn('id', dialect.serial, key)
      .addColumn('session_id', 'text', session)
      .addColumn('step_id', 'integer', (c) => c.references('steps.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('mime_type', 'text', (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createIndex('artifacts_session')
      .on('artifacts')
      .columns(['session_id', 'name', 'id'])
      .execute()
    await db.schema
      .createTable('messages')
      .addColumn('session_id', 'text', session)
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('messages_pk', ['session_id', 'seq'])
      .execute()
  },
  // 2: attempts the guard or the sandbox stopped, for operators to review; the model's words per step.
  async (db, dialect) => {
    await db.schema
      .createTable('blocked')
      .addColumn('id', dialect.serial, serialKey(dialect))
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
      .addColumn('step_id', 'integer', (c) => c.references('steps.id').onDelete('cascade'))
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('rule', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('blocked_session').on('blocked').columns(['session_id', 'id']).execute()
    await db.schema.alterTable('steps').addColumn('prose', 'text').execute()
  },
  // 3: a dataset's content is a blob, so a session resumes from the store alone.
  async (db) => {
    await db.schema.alterTable('datasets').addColumn('sha256', 'text').execute()
  },
  // 4: benchmark runs (`analyst eval`) and each question's result; a question's session may be
  // deleted on its own, its result stays.
  async (db) => {
    await db.schema
      .createTable('eval_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('dataset', 'text', (c) => c.notNull())
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('settings', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('elapsed_ms', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('eval_results')
      .addColumn('run_id', 'text', (c) => c.notNull().references('eval_runs.id').onDelete('cascade'))
      .addColumn('question_id', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.references('sessions.id').onDelete('set null'))
      .addColumn('correct', 'integer', (c) => c.notNull())
      .addColumn('detail', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('eval_results_pk', ['run_id', 'question_id'])
      .execute()
  },
  // 5: replicas: a lease per session, blobs in the database, request counts for quotas.
  async (db, dialect) => {
    await db.schema
      .createTable('session_leases')
      .addColumn('session_id', 'text', (c) => c.primaryKey().references('sessions.id').onDelete('cascade'))
      .addColumn('holder', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('blobs')
      .addColumn('sha256', 'text', (c) => c.primaryKey())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('blob_chunks')
      .addColumn('blob', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('data', dialect.binary, (c) => c.notNull())
      .addPrimaryKeyConstraint('blob_chunks_pk', ['blob', 'seq'])
      .execute()
    await db.schema
      .createTable('request_counts')
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('minute', 'bigint', (c) => c.notNull())
      .addColumn('n', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('request_counts_pk', ['owner', 'minute'])
      .execute()
    await db.schema.createIndex('runs_status').on('runs').columns(['status', 'session_id']).execute()
  },
  // 6: the tool a step called (--modal-tool): its files are written back when the session reopens.
  async (db) => {
    await db.schema.alterTable('steps').addColumn('tool', 'text').execute()
  },
  // 7: the sources a session queries by name (serve's ANALYST_SOURCES), opened again when it
  // reopens, and the queries each step ran on them.
  async (db) => {
    await db.schema.alterTable('sessions').addColumn('sources', 'text').execute()
    await db.schema.alterTable('steps').addColumn('queries', 'text').execute()
  },
  // 8: teams: users (OpenID Connect), their browser sessions and API keys (secrets as hashes),
  // read-only shares of sessions, and the audit log. A session's owner is then `user:<id>`.
  async (db, dialect) => {
    const user: Column = (c) => c.notNull().references('users.id').onDelete('cascade')
    await db.schema
      .createTable('users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('issuer', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('email', 'text')
      .addColumn('groups', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'text')
      .addUniqueConstraint('users_identity', ['issuer', 'subject'])
      .execute()
    await db.schema
      .createTable('browser_sessions')
      .addColumn('hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', user)
      .addColumn('csrf_token', 'text', (c) => c.notNull())
      .addColumn('id_token', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('browser_sessions_user').on('browser_sessions').column('user_id').execute()
    await db.schema
      .createTable('login_attempts')
      .addColumn('hash', 'text', (c) => c.primaryKey())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', user)
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .addColumn('expires_at', 'text')
      .execute()
    await db.schema.createIndex('api_keys_user').on('api_keys').columns(['user_id', 'created_at']).execute()
    await db.schema
      .createTable('shares')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) =>
        c.notNull().unique().references('sessions.id').onDelete('cascade'),
      )
      .addColumn('allow_files', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('audit')
      .addColumn('id', dialect.serial, serialKey(dialect))
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('actor', 'text')
      .addColumn('target', 'text')
      .addColumn('detail', 'text')
      .execute()
    await db.schema.createIndex('audit_actor').on('audit').columns(['actor', 'id']).execute()
  },
  // 9: the template a session's sandbox starts from (--template), so that a replay, here or on
  // another replica, runs its cells in the same environment.
  async (db) => {
    await db.schema.alterTable('sessions').addColumn('template', 'text').execute()
  },
  // 10: the template's id (a name moves to the newest build; the session keeps its own) and the
  // session's language, so that continuing it needs neither --template nor --language again.
  async (db) => {
    await db.schema.alterTable('sessions').addColumn('template_id', 'text').execute()
    await db.schema.alterTable('sessions').addColumn('language', 'text').execute()
  },
  // 11: template builds and their logs, so that a build's status, log and cancel reach it from
  // any replica (E2B's SDK polls behind a load balancer without affinity).
  async (db) => {
    await db.schema
      .createTable('template_builds')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('owner', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('replica', 'text')
      .addColumn('heartbeat_at', 'bigint')
      .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('progress', 'text')
      .addColumn('reason', 'text')
      .addColumn('template', 'text')
      .addColumn('request', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute()
    await db.schema
      .createIndex('template_builds_status')
      .on('template_builds')
      .columns(['status', 'replica'])
      .execute()
    await db.schema
      .createTable('template_build_logs')
      .addColumn('build_id', 'text', (c) => c.notNull().references('template_builds.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('line', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('template_build_logs_pk', ['build_id', 'seq'])
      .execute()
  },
  // 12: templates across replicas: the files of E2B's COPY steps and built templates' exports,
  // in chunks, so that a build or a sandbox on any replica finds them; and one build per name
  // under way, over every replica (the replica that claims a second one meets the index).
  async (db, dialect) => {
    await db.schema
      .createTable('template_files')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text')
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('template_files_name').on('template_files').columns(['name']).execute()
    await db.schema
      .createTable('template_file_chunks')
      .addColumn('file', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('data', dialect.binary, (c) => c.notNull())
      .addPrimaryKeyConstraint('template_file_chunks_pk', ['file', 'seq'])
      .execute()
    // Builds of one name under way before the upgrade, on two replicas: the older ones fail.
    const underWay = sql`replica is not null and status in ('waiting', 'building')`
    await sql`update template_builds set status = 'error', finished_at = ${new Date().toISOString()},
      reason = ${JSON.stringify({ message: 'another build of this name was under way' })}
      where ${underWay} and exists (select 1 from template_builds later
        where later.name = template_builds.name and later.replica is not null
        and later.status in ('waiting', 'building') and later.id > template_builds.id)`.execute(db)
    await sql`create unique index template_builds_one_per_name on template_builds (name) where ${underWay}`.execute(
      db,
    )
  },
  // 13: a step its run was stopped in (a person's Stop, a lost connection) is kept with its output
  // so far, and why it did not end.
  async (db) => {
    await db.schema.alterTable('steps').addColumn('stopped', 'text').execute()
  },
  // 14: a Stop reaches a run on another replica: the request is kept until the replica that holds
  // the session answers it (told at once by NOTIFY, or finding it when it renews its lease).
  async (db) => {
    await db.schema
      .createTable('stop_requests')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
      .addColumn('run_id', 'text')
      .addColumn('asked_by', 'text', (c) => c.notNull())
      .addColumn('holder', 'text')
      .addColumn('requested_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('stopped', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('answered', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
    await db.schema
      .createIndex('stop_requests_session')
      .on('stop_requests')
      .columns(['session_id', 'requested_at'])
      .execute()
  },
]

export const SCHEMA_VERSION = MIGRATIONS.length

/** Where a dialect keeps the schema's version, and how it keeps two processes from migrating at once. */
export interface SchemaVersion {
  /** Called first in the migration's transaction: waits until no other process migrates. */
  lock?(db: AnyDb): Promise<void>
  read(db: AnyDb): Promise<number>
  write(db: AnyDb, version: number): Promise<void>
}

/** Applies the migrations after the current version, all in one transaction (a crash applies none). */
export async function migrate(db: Kysely<Database>, dialect: Dialect, version: SchemaVersion): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await version.lock?.(trx)
    const current = await version.read(trx)
    if (current > MIGRATIONS.length) {
      throw new AnalystError(
        `The history database is newer (schema ${current}) than this Analyst knows (${MIGRATIONS.length})`,
        { hint: 'Upgrade Analyst, or point ANALYST_HOME or ANALYST_DATABASE_URL elsewhere.' },
      )
    }
    for (let next = current; next < MIGRATIONS.length; next++) {
      await (MIGRATIONS[next] as Migration)(trx, dialect)
      await version.write(trx, next + 1)
    }
  })
}
