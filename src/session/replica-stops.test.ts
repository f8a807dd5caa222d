import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { LocalStopFeed, SqlStopRequests, type StopFeed } from '../store/sql/stop-requests.js'
import { SqliteHistoryStore } from '../store/sqlite/store.js'
import type { StopNotice } from '../store/types.js'
import { ReplicaStops, type StopWhich } from './replica-stops.js'

/** A feed whose notices go unheard, as while a replica's listening connection is down. */
class DeafFeed extends LocalStopFeed implements StopFeed {
  override committed(_notice: StopNotice): void {}
}

let dir: string
let history: SqliteHistoryStore
let sessionId: string
const opened: ReplicaStops[] = []

function replica(name: string, stops: SqlStopRequests, stopHere: (which: StopWhich) => number) {
  const calls: StopWhich[] = []
  const replicaStops = new ReplicaStops(stops, {
    replica: name,
    ttlMs: 60_000,
    stopHere: (_sessionId, which) => {
      calls.push(which)
      return stopHere(which)
    },
    has: () => true,
  })
  opened.push(replicaStops)
  return { replicaStops, calls }
}

const later = () => new Promise((resolve) => setTimeout(resolve, 5))

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-replica-stops-'))
  history = await SqliteHistoryStore.open(join(dir, 'analyst.db'))
  sessionId = (await history.createSession({ title: 't' })).id
})

afterEach(async () => {
  for (const replicaStops of opened.splice(0)) replicaStops.close()
  await history.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('ReplicaStops', () => {
  it('the holder that heard the request stops the run and answers; the asker counts it', async () => {
    const stops = new SqlStopRequests(history.db, history.runtime)
    const a = replica('a', stops, () => 1)
    const b = replica('b', stops, () => 0)
    await history.acquireLease(sessionId, 'a', 60_000)
    expect(await b.replicaStops.request(sessionId, 'run-1', 0)).toEqual({ stopped: 1 })
    expect(a.calls).toEqual([{ runId: 'run-1' }])
    expect(b.calls).toEqual([])
  })

  it('a holder that heard nothing finds the request at its renewal, once; not one asked before its holding', async () => {
    const stops = new SqlStopRequests(history.db, history.runtime, new DeafFeed())
    const a = replica('a', stops, () => 1)
    const early = await stops.request({ sessionId, runId: null, from: 'b', ttlMs: 60_000 })
    await later()
    const grant = await history.acquireLease(sessionId, 'a', 60_000)
    if (!grant.acquired) throw new Error('not acquired')
    await later()
    const asked = await stops.request({ sessionId, runId: null, from: 'b', ttlMs: 60_000 })
    expect(asked.holder).toBe('a')
    await a.replicaStops.check(sessionId, grant.atMs)
    expect(a.calls).toEqual([{ askedAtMs: asked.requestedAt, leased: true }])
    expect(await stops.answered(asked.id)).toBe(1)
    // The one asked before this holding is not its run's: never answered by it, then expired.
    expect(await stops.answered(early.id)).toBeUndefined()
    await a.replicaStops.check(sessionId, grant.atMs)
    expect(a.calls).toHaveLength(1)
  })

  it('a holder that does not answer: the asker says pending, and the request expires', async () => {
    const stops = new SqlStopRequests(history.db, history.runtime, new DeafFeed())
    const b = replica('b', stops, () => 0)
    await history.acquireLease(sessionId, 'a', 60_000)
    expect(await b.replicaStops.request(sessionId, undefined, 0)).toEqual({ stopped: 0, pending: true })
    const short = await stops.request({ sessionId, runId: null, from: 'b', ttlMs: 1 })
    await later()
    expect((await stops.pending(sessionId, 0)).map((r) => r.id)).not.toContain(short.id)
    expect(await stops.forgetExpired()).toBe(1)
  })

  it('nobody holds the session: the asker does not wait', async () => {
    const stops = new SqlStopRequests(history.db, history.runtime, new DeafFeed())
    const b = replica('b', stops, () => 0)
    expect(await b.replicaStops.request(sessionId, undefined, 2)).toEqual({ stopped: 2 })
  })
})
