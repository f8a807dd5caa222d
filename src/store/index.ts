/**
 * Where sessions are kept: the `HistoryStore` and `BlobStore` specification, the embedded default
 * (SQLite and files under ANALYST_HOME), a session's records put together, and exports.
 * @module
 */
import { mkdir } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { FileBlobStore } from './files/blobs.js'
import { SqliteEvalStore } from './sqlite/evals.js'
import { SqliteHistoryStore } from './sqlite/store.js'
import type { BlobStore, EvalStore, HistoryStore } from './types.js'

export { FileBlobStore } from './files/blobs.js'
export { loadSessionHistory, loadSessionStats, type SessionStats, sessionStats } from './history.js'
export { SqliteEvalStore } from './sqlite/evals.js'
export { PREVIEW_CHARS, SqliteHistoryStore } from './sqlite/store.js'
export type * from './types.js'

/** Where Analyst keeps what it keeps between runs: ANALYST_HOME, else ~/.analyst. */
export function analystHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.ANALYST_HOME || join(homedir(), '.analyst')
}

export interface Stores {
  history: HistoryStore
  blobs: BlobStore
  /** Eval runs and their results, in the same database as the history. */
  evals: EvalStore
  /** Closes both. */
  close(): Promise<void>
}

/** The embedded default: `analyst.db` (SQLite) and `blobs/` in the home folder (ANALYST_BLOB_DIR may move the blobs). */
export async function openStores(
  home: string = analystHome(),
  env: NodeJS.ProcessEnv = process.env,
): Promise<Stores> {
  await mkdir(home, { recursive: true, mode: 0o700 })
  const history = await SqliteHistoryStore.open(join(home, 'analyst.db'))
  const blobs = new FileBlobStore(env.ANALYST_BLOB_DIR || join(home, 'blobs'))
  return { history, blobs, evals: new SqliteEvalStore(history.db), close: () => history.close() }
}
