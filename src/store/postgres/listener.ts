/**
 * One replica's LISTEN connection to PostgreSQL, outside the pool, shared by the feeds that hear
 * other replicas (sign-in changes, Stops). A connection is live only once it has heard its own
 * probe (one that cannot hear, through a pooler in transaction mode, never is); while it is down,
 * what is notified is heard by nobody here, so each loss and each reconnection is told to the
 * feeds (`onState`), which then read the store instead. It reconnects with a backoff.
 * @module
 */
import { randomUUID } from 'node:crypto'
import pg from 'pg'

/** The listening connection's application_name: an operator sees it in pg_stat_activity (and a test can cut it). */
export const FEED_NAME = 'analyst-feed'
/** Payloads that start so are probes, on any channel: never a change (every replica's start would be one). */
const PROBE = 'probe:'
const RETRY_MIN_MS = 250
/** How long a new connection may take to hear its own probe. */
const PROBE_MS = 5_000
const RETRY_MAX_MS = 10_000

/** The connection listens but does not hear: not live, and retried, rather than a replica that cannot start. */
class Unheard extends Error {}

export class PostgresListener {
  #client: pg.Client | undefined
  #live = false
  #closed = false
  #retry: NodeJS.Timeout | undefined
  #delayMs = RETRY_MIN_MS
  readonly #heard = new Map<string, Set<(payload: string) => void>>()
  readonly #states = new Set<(live: boolean) => void>()

  private constructor(
    private readonly url: string,
    private readonly channels: readonly string[],
  ) {}

  /**
   * Listening before it returns: a replica that cannot connect fails at start, as the store does.
   * One whose connection cannot hear (a pooler in transaction mode) starts, not live, and retries.
   */
  static async open(url: string, channels: readonly string[]): Promise<PostgresListener> {
    const listener = new PostgresListener(url, channels)
    await listener.#connect().catch((error: unknown) => {
      if (!(error instanceof Unheard)) throw error
      listener.#reconnect()
    })
    return listener
  }

  get live(): boolean {
    return this.#live
  }

  /** Each payload notified on `channel` (one of those it listens on), as it comes. */
  on(channel: string, listener: (payload: string) => void): () => void {
    let set = this.#heard.get(channel)
    if (!set) {
      set = new Set()
      this.#heard.set(channel, set)
    }
    set.add(listener)
    return () => set.delete(listener)
  }

  /** Told each loss (false) and each (re)connection (true): what was notified meanwhile was heard by nobody here. */
  onState(listener: (live: boolean) => void): () => void {
    this.#states.add(listener)
    return () => this.#states.delete(listener)
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#live = false
    clearTimeout(this.#retry)
    const client = this.#client
    this.#client = undefined
    await client?.end().catch(() => {})
    this.#heard.clear()
    this.#states.clear()
  }

  #tell(live: boolean) {
    for (const listener of this.#states) listener(live)
  }

  async #connect(): Promise<void> {
    // keepAlive: a connection that died silently (a failover, a cut network) is noticed.
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
      application_name: FEED_NAME,
    })
    let probed: (() => void) | undefined
    const probe = `${PROBE}${randomUUID()}`
    client.on('notification', (message) => {
      const payload = message.payload ?? ''
      if (payload.startsWith(PROBE)) {
        if (payload === probe) probed?.()
        return
      }
      for (const listener of this.#heard.get(message.channel) ?? []) listener(payload)
    })
    client.on('error', () => this.#lost(client))
    client.on('end', () => this.#lost(client))
    try {
      await client.connect()
      for (const channel of this.channels) await client.query(`listen ${channel}`)
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
      await client.query('select pg_notify($1, $2)', [this.channels[0], probe])
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
    this.#tell(true)
  }

  #lost(client: pg.Client) {
    if (client !== this.#client || this.#closed) return
    this.#client = undefined
    this.#live = false
    this.#tell(false)
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
