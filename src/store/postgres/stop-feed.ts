/**
 * Notices of Stops across replicas: each is a NOTIFY on one channel, sent inside the transaction
 * that records it, and heard on the replica's listening connection (listener.ts). While that is
 * down the feed is not `live`: the replica holding a session then finds its requests in the store
 * when it renews its lease, and an asker reads the answer there.
 * @module
 */
import { type Kysely, sql } from 'kysely'
import type { Database } from '../sql/schema.js'
import { LocalStopFeed } from '../sql/stop-requests.js'
import type { StopNotice } from '../types.js'
import type { PostgresListener } from './listener.js'

export const STOP_CHANNEL = 'analyst_stop'

/** A notice as sent; anything else (a newer replica's kind, a broken payload) is none. */
export function parseStopNotice(payload: string): StopNotice | undefined {
  try {
    const notice = JSON.parse(payload) as Partial<StopNotice> & Record<string, unknown>
    if (notice.type === 'answer' && typeof notice.id === 'string') return { type: 'answer', id: notice.id }
    const request =
      notice.type === 'request' ? (notice.request as Record<string, unknown> | undefined) : undefined
    const text = (value: unknown) => typeof value === 'string'
    const orNull = (value: unknown) => value === null || text(value)
    if (
      request &&
      text(request.id) &&
      text(request.sessionId) &&
      text(request.from) &&
      orNull(request.runId) &&
      orNull(request.holder)
    )
      return {
        type: 'request',
        request: {
          id: request.id as string,
          sessionId: request.sessionId as string,
          runId: request.runId as string | null,
          from: request.from as string,
          holder: request.holder as string | null,
        },
      }
  } catch {}
  return undefined
}

export class PostgresStopFeed extends LocalStopFeed {
  /** Over a listener that listens on STOP_CHANNEL. */
  constructor(private readonly listener: PostgresListener) {
    super()
    listener.on(STOP_CHANNEL, (payload) => {
      const notice = parseStopNotice(payload)
      if (notice) super.committed(notice)
    })
  }

  override get live(): boolean {
    return this.listener.live
  }

  override async announce(trx: Kysely<Database>, notice: StopNotice): Promise<void> {
    await sql`select pg_notify(${STOP_CHANNEL}, ${JSON.stringify(notice)})`.execute(trx)
  }

  /** The NOTIFY comes back to this replica's connection too: told once, when it is heard. */
  override committed(): void {}
}
