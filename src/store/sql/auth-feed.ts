/**
 * The feed of sign-in changes (`AuthChanges`) that the SQL auth store writes to. This one is for a
 * single process (SQLite): a change reaches this process's listeners once it is committed, and
 * there is no other replica to tell. PostgreSQL's feed (postgres/auth-feed.ts) adds NOTIFY.
 * @module
 */
import type { Kysely } from 'kysely'
import type { AuthChange, AuthChanges } from '../types.js'
import type { Database } from './schema.js'

export interface AuthFeed extends AuthChanges {
  /** Inside the writing transaction: tells other replicas, when (and only if) it commits. */
  announce(trx: Kysely<Database>, change: AuthChange): Promise<void>
  /** After the commit: tells this process's listeners. */
  emit(change: AuthChange): void
  close(): Promise<void>
}

export class LocalAuthFeed implements AuthFeed {
  readonly #listeners = new Set<(change: AuthChange) => void>()

  get live(): boolean {
    return true
  }

  subscribe(listener: (change: AuthChange) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  async announce(_trx: Kysely<Database>, _change: AuthChange): Promise<void> {}

  emit(change: AuthChange): void {
    for (const listener of this.#listeners) listener(change)
  }

  async close(): Promise<void> {
    this.#listeners.clear()
  }
}
