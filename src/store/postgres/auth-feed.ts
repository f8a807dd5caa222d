/**
 * Sign-in changes across replicas: each change is a NOTIFY on one channel, sent inside the
 * transaction that makes it (so it goes out if and only if it commits), and every replica hears
 * it on its listening connection (listener.ts). While that connection is down the feed is not
 * `live` (a cache must keep nothing), and on every loss and every reconnection it says `all`:
 * what was committed meanwhile was heard by nobody here.
 * @module
 */
import { type Kysely, sql } from 'kysely'
import { LocalAuthFeed } from '../sql/auth-feed.js'
import type { Database } from '../sql/schema.js'
import type { AuthChange } from '../types.js'
import { FEED_NAME, type PostgresListener } from './listener.js'

/** The channel: used by sign-in's cache only. */
export const AUTH_CHANNEL = 'analyst_auth'
/** The listening connection's application_name (it carries other feeds too). */
export const AUTH_FEED_NAME = FEED_NAME

/** `kind:id`; anything else is read as `all`, the safe reading. */
export function parseAuthChange(payload: string | undefined): AuthChange {
  const at = payload?.indexOf(':') ?? -1
  const kind = payload?.slice(0, at)
  if (payload && at > 0 && (kind === 'key' || kind === 'user' || kind === 'session'))
    return { kind, id: payload.slice(at + 1) }
  return { kind: 'all' }
}

export class PostgresAuthFeed extends LocalAuthFeed {
  readonly #unsubscribe: Array<() => void>

  /** Over a listener that listens on AUTH_CHANNEL. */
  constructor(private readonly listener: PostgresListener) {
    super()
    this.#unsubscribe = [
      listener.on(AUTH_CHANNEL, (payload) => this.emit(parseAuthChange(payload))),
      listener.onState(() => this.emit({ kind: 'all' })),
    ]
  }

  override get live(): boolean {
    return this.listener.live
  }

  override async announce(trx: Kysely<Database>, change: AuthChange): Promise<void> {
    const payload = change.kind === 'all' ? 'all' : `${change.kind}:${change.id}`
    await sql`select pg_notify(${AUTH_CHANNEL}, ${payload})`.execute(trx)
  }

  /** Stops hearing; the listener is its owner's to close. */
  override async close(): Promise<void> {
    for (const unsubscribe of this.#unsubscribe) unsubscribe()
    await super.close()
  }
}
