/**
 * Sign-in changes across replicas: each change is a NOTIFY on one channel, sent inside the
 * transaction that makes it (so it goes out if and only if it commits), and every replica LISTENs
 * on a connection of its own, outside the pool. While that connection is down the feed is not
 * `live` (a cache must keep nothing), and on every loss and every reconnection it says `all`:
 * what was committed meanwhile was heard by nobody here. A connection is live only once it has
 * heard its own probe: one that cannot hear (a pooler in transaction mode) never is.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import { LocalAuthFeed } from '../sql/auth-feed.js'
import type { Database } from '../sql/schema.js'
import type { AuthChange } from '../types.js'

/** The channel: used by sign-in's cache only. */
export const AUTH_CHANNEL = 'analyst_auth'
/** The listening connection's application_name. */
export const AUTH_FEED_NAME = 'analyst-auth-feed'
const RETRY_MIN_MS = 250
/** How long a new connection may take to hear its own probe. */
const PROBE_MS = 5_000
const RETRY_MAX_MS = 10_000

/** `kind:id`; anything else is read as `all`, the safe reading. */
export function parseAuthChange(payload: string | undefined): AuthChange {
  const at = payload?.indexOf(':') ?? -1
  const kind = payload?.slice(0, at)
  if (payload && at > 0 && (kind === 'key' || kind === 'user' || kind === 'session'))
    return { kind, id: payload.slice(at + 1) }
  return { kind: 'all' }
}

/** The connection listens but does not hear: not live, and retried, rather than a replica that cannot start. */
class Unheard extends Error {}

export class PostgresAuthFeed extends LocalAuthFeed {
  #client: pg.Client | undefined
  #live = false
  #closed = false
  #retry: NodeJS.Timeout | undefined
  #delayMs = RETRY_MIN_MS

  private constructor(private readonly url: string) {
    super()
  }

  /**
   * Listening before it returns: a replica that cannot connect fails at start, as the store does.
   * One whose connection cannot hear (a pooler in transaction mode) starts, not live, and retries.
   */
  static async open(url: string): Promise<PostgresAuthFeed> {
    const feed = new PostgresAuthFeed(url)
    await feed.#connect().catch((error: unknown) => {
      if (!(error instanceof Unheard)) throw error
      feed.#reconnect()
    })
    return feed
  }

  override get live(): boolean {
    return this.#live
  }

  override async announce(trx: Kysely<Database>, change: AuthChange): Promise<void> {
    const payload = change.kind === 'all' ? 'all' : `${change.kind}:${change.id}`
    await sql`select pg_notify(${AUTH_CHANNEL}, ${payload})`.execute(trx)
  }

  override async close(): Promise<void> {
    this.#closed = true
    this.#live = false
    clearTimeout(this.#retry)
    const client = this.#client
    this.#client = undefined
    await client?.end().catch(() => {})
    await super.close()
  }

  async #connect(): Promise<void> {
    // keepAlive: a connection that died silently (a failover, a cut network) is noticed.
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
      // Named, so that an operator sees it in pg_stat_activity (and a test can cut it).
      application_name: AUTH_FEED_NAME,
    })
    let probed: (() => void) | undefined
    const probe = `probe:${randomUUID()}`
    client.on('notification', (message) => {
      if (message.channel !== AUTH_CHANNEL) return
      // Probes are no change: every replica's start would otherwise empty every cache.
      if (message.payload?.startsWith('probe:')) {
        if (message.payload === probe) probed?.()
        return
      }
      this.emit(parseAuthChange(message.payload))
    })
    client.on('error', () => this.#lost(client))
    client.on('end', () => this.#lost(client))
    try {
      await client.connect()
      await client.query(`listen ${AUTH_CHANNEL}`)
      let timer: NodeJS.Timeout | undefined
      const heard = new Promise<void>((resolve, reject) => {
        probed = resolve
        timer = setTimeout(
          () =>
            reject(
              new Unheard(`the listening connection did not hear its own NOTIFY within ${PROBE_MS / 1000} s`),
            ),
          PROBE_MS,
        )
      })
      await client.query('select pg_notify($1, $2)', [AUTH_CHANNEL, probe])
      await heard.finally(() => clearTimeout(timer))
    } catch (error) {
      await client.end().catch(() => {})
      throw error
    }
    if (this.#closed) {
      await client.end().catch(() => {})
      return
    }
    this.#client = client
    this.#live = true
    this.#delayMs = RETRY_MIN_MS
    this.emit({ kind: 'all' })
  }

  #lost(client: pg.Client) {
    if (client !== this.#client || this.#closed) return
    this.#client = undefined
    this.#live = false
    this.emit({ kind: 'all' })
    client.end().catch(() => {})
    this.#reconnect()
  }

  #reconnect() {
    if (this.#closed) return
    this.#retry = setTimeout(() => {
      this.#connect().catch(() => this.#reconnect())
    }, this.#delayMs)
    this.#retry.unref()
    this.#delayMs = Math.min(this.#delayMs * 2, RETRY_MAX_MS)
  }
}
