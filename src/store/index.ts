/**
 * Where sessions are kept: the `HistoryStore` and `BlobStore` specification, the embedded default
 * (SQLite and files under ANALYST_HOME), PostgreSQL for replicas, a session's records put
 * together, and exports.
 * @module
 */
import { mkdir } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { AnalystError } from '../errors.js'
import { FileBlobStore } from './files/blobs.js'
import { SqlAuthStore } from './sql/auth.js'
import { SqlBlobStore } from './sql/blobs.js'
import { SqlEvalStore } from './sql/evals.js'
import { SqlStopRequests } from './sql/stop-requests.js'
import { SqlTemplateBuildStore } from './sql/template-builds.js'
import { SqlTemplateFileStore } from './sql/template-files.js'
import { SqliteHistoryStore } from './sqlite/store.js'
import type {
  AuthStore,
  BlobStore,
  EvalStore,
  HistoryStore,
  StopRequests,
  TemplateBuildStore,
  TemplateFileStore,
} from './types.js'

export { FileBlobStore } from './files/blobs.js'
export { loadSessionHistory, loadSessionStats, type SessionStats, sessionStats } from './history.js'
export { SqlAuthStore } from './sql/auth.js'
export { SqlBlobStore } from './sql/blobs.js'
export { SqlEvalStore } from './sql/evals.js'
export { SCHEMA_VERSION } from './sql/schema.js'
export { SqlStopRequests } from './sql/stop-requests.js'
export { PREVIEW_CHARS, SqlHistoryStore } from './sql/store.js'
export { SqlTemplateBuildStore } from './sql/template-builds.js'
export { SqlTemplateFileStore } from './sql/template-files.js'
export { SqliteHistoryStore } from './sqlite/store.js'
export type * from './types.js'

/** A user's sessions belong to `user:<id>` (a token's to its hash, which has no colon). */
export function userOwner(userId: string): string {
  return `user:${userId}`
}

/** Where Analyst keeps what it keeps between runs: ANALYST_HOME, else ~/.analyst. */
export function analystHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.ANALYST_HOME || join(homedir(), '.analyst')
}

export interface Stores {
  history: HistoryStore
  blobs: BlobStore
  /** Eval runs and their results, in the same database as the history. */
  evals: EvalStore
  /** Users, browser sessions, API keys, shares and the audit log, in the same database. */
  auth: AuthStore
  /** Template builds and their logs, in the same database: any replica answers for a build. */
  templateBuilds: TemplateBuildStore
  /** Files templates need on every replica (COPY uploads, built templates' exports), in the same database. */
  templateFiles: TemplateFileStore
  /** Stops asked on one replica for a run on another, in the same database. */
  stops: StopRequests
  /** Closes both. */
  close(): Promise<void>
}

/**
 * The stores the environment names: PostgreSQL at ANALYST_DATABASE_URL (blobs in it too, unless
 * ANALYST_BLOB_DIR names a folder every replica shares); else the embedded default, `analyst.db`
 * (SQLite) and `blobs/` in the home folder (ANALYST_BLOB_DIR may move the blobs).
 */
export async function openStores(
  home: string = analystHome(),
  env: NodeJS.ProcessEnv = process.env,
): Promise<Stores> {
  if (env.ANALYST_DATABASE_URL) {
    // Loaded only when asked for: the embedded default needs no PostgreSQL client.
    const { PostgresHistoryStore } = await import('./postgres/store.js')
    const { AUTH_CHANNEL, PostgresAuthFeed } = await import('./postgres/auth-feed.js')
    const { PostgresListener } = await import('./postgres/listener.js')
    const { PostgresStopFeed, STOP_CHANNEL } = await import('./postgres/stop-feed.js')
    const history = await PostgresHistoryStore.open(env.ANALYST_DATABASE_URL)
    // Sign-in changes and Stops reach every replica (LISTEN/NOTIFY) on one connection of its own.
    const listener = await PostgresListener.open(env.ANALYST_DATABASE_URL, [
      AUTH_CHANNEL,
      STOP_CHANNEL,
    ]).catch(async (error: unknown) => {
      await history.close()
      throw new AnalystError(
        `Cannot listen for other replicas' changes in PostgreSQL: ${(error as Error).message}`,
        {
          hint: 'Check that ANALYST_DATABASE_URL allows one more connection: LISTEN needs its own, to the server itself or through a pooler in session mode (not transaction mode).',
          cause: error,
        },
      )
    })
    const feed = new PostgresAuthFeed(listener)
    const blobs = env.ANALYST_BLOB_DIR
      ? new FileBlobStore(env.ANALYST_BLOB_DIR)
      : new SqlBlobStore(history.db, history.runtime, 'postgres')
    return {
      history,
      blobs,
      evals: new SqlEvalStore(history.db),
      auth: new SqlAuthStore(history.db, feed),
      templateBuilds: new SqlTemplateBuildStore(history.db, history.runtime),
      templateFiles: new SqlTemplateFileStore(history.db, history.runtime),
      stops: new SqlStopRequests(history.db, history.runtime, new PostgresStopFeed(listener)),
      close: async () => {
        await feed.close()
        await listener.close()
        await history.close()
      },
    }
  }
  await mkdir(home, { recursive: true, mode: 0o700 })
  const history = await SqliteHistoryStore.open(join(home, 'analyst.db'))
  const blobs = new FileBlobStore(env.ANALYST_BLOB_DIR || join(home, 'blobs'))
  return {
    history,
    blobs,
    evals: new SqlEvalStore(history.db),
    auth: new SqlAuthStore(history.db),
    templateBuilds: new SqlTemplateBuildStore(history.db, history.runtime),
    templateFiles: new SqlTemplateFileStore(history.db, history.runtime),
    stops: new SqlStopRequests(history.db, history.runtime),
    close: () => history.close(),
  }
}
