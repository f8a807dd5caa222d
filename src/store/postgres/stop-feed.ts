/**
 * Notices of Stops across replicas: each is a NOTIFY on one channel, sent inside the transaction
 * that records it, and heard on the replica's listening connection (listener.ts). While that is
 * down the feed is not `live`: the replica holding a session then finds its requests in the store
 * when it renews its lease, and an asker reads the answer there.
 * @module
 */
import { type Kysely, sql } from 'kysely'
import { z } from 'zod'
import type { Database } from '../sql/schema.js'
import { LocalStopFeed } from '../sql/stop-requests.js'
import type { StopNotice } from '../types.js'
import type { PostgresListener } from './listener.js'

export const STOP_CHANNEL = 'analyst_stop'

const StopNoticeSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('answer'), id: z.string() }),
  z.object({
    type: z.literal('request'),
    request: z.object({
      id: z.string(),
      sessionId: z.string(),
      runId: z.string().nullable(),
      from: z.string(),
      holder: z.string().nullable(),
      requestedAt: z.number(),
    }),
  }),
])

/** A notice as sent; anything else (a newer replica's kind, a broken payload) is none. */
export function parseStopNotice(payload: string): StopNotice | undefined {
  try {
    const notice = StopNoticeSchema.safeParse(JSON.parse(payload))
    return notice.success ? notice.data : undefined
  } catch {
    return undefined
  }
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
