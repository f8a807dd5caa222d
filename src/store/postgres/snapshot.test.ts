/**
 * A session's history read from PostgreSQL in one snapshot, on one connection. The compose stack's
 * Jupyter test got a 500 on GET /api/sessions/:id: "timeout exceeded when trying to connect", from
 * the replica that had not run the question. The read asked the pool for a connection per table at
 * once, so it opened new ones; inside podman's network the lookup of the database's name stalls
 * now and then (for 5 s when aardvark-dns drops a query as a container starts, once for 40 s), and
 * the pool's open connection answered in 2 ms meanwhile. Here a proxy stalls every new connection
 * to the database as that network did, and connections already open keep working.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SharedPostgres, sharedPostgres } from '../../test/support/shared-postgres.js'
import { loadSessionHistory } from '../history.js'
import type { HistoryStore } from '../types.js'
import { PostgresHistoryStore } from './store.js'

/** A TCP proxy to the database that can stop passing new connections (they wait, unanswered). */
async function startProxy(
  port: number,
): Promise<{ port: number; stallNew: boolean; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const proxy = {
    port: 0,
    stallNew: false,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    if (proxy.stallNew) return // accepted, never answered: a connect lost on the way
    const upstream = connect(port, '127.0.0.1')
    sockets.add(upstream)
    client.pipe(upstream).pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  proxy.port = (server.address() as { port: number }).port
  return proxy
}

async function sessionWithARun(history: HistoryStore): Promise<{ id: string; runId: string }> {
  const session = await history.createSession({ title: 'read while the network stalls' })
  const run = await history.startRun(session.id, 'What is x?')
  await history.commitStep({
    runId: run.id,
    sessionId: session.id,
    step: { step: 1, code: 'x = 1\nprint(x)', stdout: '1\n', stderr: '', results: [], durationMs: 1 },
    artifacts: [],
    blocked: [],
  })
  return { id: session.id, runId: run.id }
}

let cluster: SharedPostgres
beforeAll(async () => {
  cluster = await sharedPostgres()
}, 120_000)
afterAll(async () => {})

describe("PostgreSQL: a session's history in one snapshot", () => {
  it('is read over the connection the pool has open while new connections stall', async () => {
    const url = new URL(await cluster.createDatabase())
    const proxy = await startProxy(Number(url.port))
    url.port = String(proxy.port)
    const history = await PostgresHistoryStore.open(url.toString())
    try {
      const { id } = await sessionWithARun(history)
      // One connection open and idle, as the replicas' sweep keeps one; then the network stalls.
      await history.getSession(id)
      proxy.stallNew = true
      const loaded = await loadSessionHistory(history, id)
      expect(loaded?.runs.map((run) => run.steps.map((step) => step.stdout))).toEqual([['1\n']])
    } finally {
      proxy.stallNew = false
      await history.close()
      await proxy.close()
    }
  }, 60_000)

  it('sees one moment: a run another replica ends meanwhile shows with all its steps or not at all', async () => {
    const url = await cluster.createDatabase()
    const [reader, writer] = await Promise.all([
      PostgresHistoryStore.open(url),
      PostgresHistoryStore.open(url),
    ])
    try {
      const { id, runId } = await sessionWithARun(writer)
      const seen = await reader.snapshot(async (at) => {
        const before = await at.runs(id)
        // The other replica commits a second step and ends the run, after the snapshot began.
        await writer.commitStep({
          runId,
          sessionId: id,
          step: { step: 2, code: 'print(x + 1)', stdout: '2\n', stderr: '', results: [], durationMs: 1 },
          artifacts: [],
          blocked: [],
        })
        await writer.finishRun(runId, {
          answer: 'x is 1.',
          incomplete: false,
          unsupportedNumbers: [],
          usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        })
        return { before, after: await at.runs(id), steps: await at.steps(id) }
      })
      expect(seen.before.map((run) => run.status)).toEqual(['running'])
      expect(seen.after.map((run) => run.status)).toEqual(['running'])
      expect(seen.steps.map((step) => step.step)).toEqual([1])
      // Outside it, the run has ended with both its steps.
      const now = await loadSessionHistory(reader, id)
      expect(now?.runs.map((run) => [run.status, run.steps.length])).toEqual([['done', 2]])
    } finally {
      await Promise.all([reader.close(), writer.close()])
    }
  }, 60_000)
})
