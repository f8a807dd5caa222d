/**
 * A Stop that reaches a run on another replica: two `analyst serve` processes over one PostgreSQL
 * database, as behind a load balancer that sends the page's question to A and its Stop to B. The
 * run on A ends as a Stop on A would end it: "Stopped." in the store and a `stopped` event on A's
 * stream (a person's cell: a 409), the step that was running kept, and the kernel's state kept
 * (a variable set before is there at the next cell, with no replay; a question's stopped cell
 * keeps what it set). B's answer counts the run A stopped. A Stop that found nothing leaves nothing behind
 * that stops the next run.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import {
  type FakeOpenAI,
  lastObservation,
  type ScriptEntry,
  startFakeOpenAI,
} from '../support/fake-openai.js'
import { startServe } from '../support/serve.js'
import { askOverSse, type SseEvent } from '../support/sse.js'
import { waitFor } from '../support/wait.js'

interface Replica {
  url: string
  home: string
  kill(): void
  alive(): boolean
  stderr(): string
}

// Its own server, not the run's shared one: the last case stops it for a while.
let cluster: PostgresCluster
let databaseUrl: string

let model: FakeOpenAI
const script: ScriptEntry[] = []
const replicas: Replica[] = []
let a: Replica
let b: Replica

async function serve(name: string, databaseUrl: string): Promise<Replica> {
  const home = mkdtempSync(join(tmpdir(), `analyst-stop-${name}-`))
  const { child, url, stderr } = await startServe(['--database-url', databaseUrl], {
    PATH: process.env.PATH ?? '',
    ANALYST_HOME: home,
    ANALYST_MODEL: 'openai-compatible:fake',
    ANALYST_BASE_URL: model.url,
    // Long, so that only the NOTIFY can bring the Stop in time (a renewal comes every 10 s).
    ANALYST_LEASE_MS: '30000',
    ANALYST_POOL_SIZE: '0',
    NO_COLOR: '1',
  })
  const replica = {
    url,
    home,
    stderr,
    kill: () => child.kill('SIGKILL'),
    alive: () => child.exitCode === null && child.signalCode === null,
  }
  replicas.push(replica)
  return replica
}

async function newSession(replica: Replica): Promise<string> {
  const response = await fetch(`${replica.url}/api/sessions`, { method: 'POST', body: '{}' })
  return ((await response.json()) as { id: string }).id
}

async function detail(replica: Replica, id: string): Promise<SessionDetail> {
  return (await (await fetch(`${replica.url}/api/sessions/${id}`)).json()) as SessionDetail
}

function stop(replica: Replica, id: string, body: { runId?: string } = {}) {
  return fetch(`${replica.url}/api/sessions/${id}/stop`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

function cell(replica: Replica, id: string, code: string) {
  return fetch(`${replica.url}/api/sessions/${id}/cells`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code }),
  })
}

/**
 * A next question on A runs `code`, which prints 42 when the kernel kept its state, in the same
 * kernel: no replay (the kernel was interrupted, not restarted).
 */
async function expectStateOnA(id: string, code: string) {
  script.push({ code }, (request) => ({
    content: lastObservation(request).includes('42') ? 'Kept.' : `Lost: ${lastObservation(request)}`,
  }))
  const next = await askOverSse(a.url, id, 'Is the state kept?')
  expect(next.some((e) => e.event === 'preparing')).toBe(false)
  expect(next.find((e) => e.event === 'done')?.data).toMatchObject({ result: { answer: 'Kept.' } })
}

/** A new session on A with x = 41, then a person's cell that sleeps, once its run has started (as B sees it). */
async function sleepingCellOnA(): Promise<{ id: string; running: Promise<Response> }> {
  const id = await newSession(a)
  expect((await cell(a, id, 'x = 41')).status).toBe(200)
  const running = cell(a, id, 'import time\ntime.sleep(120)')
  await waitFor(async () => (await detail(b, id)).runs.at(-1)?.status === 'running', {
    what: "the cell's run to start on A",
    timeoutMs: 60_000,
  })
  return { id, running }
}

beforeAll(async () => {
  cluster = await startPostgres()
  databaseUrl = await cluster.createDatabase()
  model = await startFakeOpenAI(script)
  ;[a, b] = await Promise.all([serve('a', databaseUrl), serve('b', databaseUrl)])
}, 180_000)

afterAll(async () => {
  for (const replica of replicas) {
    replica.kill()
    rmSync(replica.home, { recursive: true, force: true })
  }
  await model?.close()
  await cluster?.stop()
})

describe('a Stop sent to another replica than the one running the session', () => {
  beforeEach(() => {
    script.length -= model.remaining()
  })

  it("stops A's question from B: Stopped. on A's stream and in the store, the step kept, the kernel's state kept", async () => {
    const id = await newSession(a)
    script.push({ code: 'x = 41' }, { content: 'Set.' })
    await askOverSse(a.url, id, 'Set x.')
    script.push({ code: "import time\ny = 1\nprint('sleeping', flush=True)\ntime.sleep(120)" })
    let runId: string | undefined
    let answered: Promise<unknown> | undefined
    const events = await askOverSse(a.url, id, 'Sleep.', {}, (event) => {
      if (event.event === 'run-start') runId = event.data.runId as string
      if (event.event === 'stdout' && runId)
        answered = stop(b, id, { runId }).then(async (response) => [response.status, await response.json()])
    })
    expect(await answered).toEqual([200, { stopped: 1 }])
    expect(events.at(-1)).toEqual({ event: 'stopped', data: { type: 'stopped', message: 'Stopped.' } })
    const stopped = (await detail(b, id)).runs.at(-1)
    expect(stopped).toMatchObject({ status: 'interrupted', error: 'Stopped.' })
    expect(stopped?.steps.at(-1)).toMatchObject({ stdout: 'sleeping\n', stopped: expect.any(String) })

    // The next question, on A: x from before and y from the stopped cell.
    await expectStateOnA(id, 'print(x + y)')
  }, 120_000)

  it("stops a person's cell on A from B (no run named): a 409 on A, Stopped. in the store, the state kept", async () => {
    const { id, running } = await sleepingCellOnA()
    const response = await stop(b, id)
    expect([response.status, await response.json()]).toEqual([200, { stopped: 1 }])
    const ran = await running
    expect(ran.status).toBe(409)
    expect((await ran.json()) as unknown).toMatchObject({ error: { message: 'Stopped.' } })
    const stopped = (await detail(b, id)).runs.at(-1)
    expect(stopped).toMatchObject({ status: 'interrupted', error: 'Stopped.' })

    // The next question, on A: x from before.
    await expectStateOnA(id, 'print(x + 1)')
  }, 120_000)

  it('a Stop that found nothing running stops no later run; a stranger session is a 404', async () => {
    const id = await newSession(a)
    const response = await stop(b, id)
    expect([response.status, await response.json()]).toEqual([200, { stopped: 0 }])
    script.push({ code: "import time\ntime.sleep(1)\nprint('slept')" }, { content: 'Done.' })
    const events: SseEvent[] = await askOverSse(a.url, id, 'Sleep a second.')
    expect(events.at(-1)?.event).toBe('done')
    expect((await stop(b, 'no-such-session')).status).toBe(404)
  }, 120_000)

  it("a Stop's notice heard late (after the run it was for, a new run holding the session) leaves the new run alone", async () => {
    const { id, running } = await sleepingCellOnA()
    // What B would have sent for the run before this one: asked 10 s ago, what ran then, A holding.
    const db = new pg.Client({ connectionString: databaseUrl })
    await db.connect()
    try {
      const [{ now }] = (await db.query('select (extract(epoch from now()) * 1000)::bigint as now')).rows
      const request = {
        id: 'late',
        sessionId: id,
        runId: null,
        from: 'b',
        holder: null,
        requestedAt: Number(now) - 10_000,
      }
      await db.query('select pg_notify($1, $2)', [
        'analyst_stop',
        JSON.stringify({ type: 'request', request }),
      ])
    } finally {
      await db.end()
    }
    // A hears its notices in order: the late one first, then this Stop, which finds the cell still running.
    const response = await stop(b, id)
    expect([response.status, await response.json()]).toEqual([200, { stopped: 1 }])
    expect((await running).status).toBe(409)
  }, 120_000)

  it('the database away for a while: the Stop is a 503, no replica falls, and once it is back the Stop reaches A', async () => {
    const { id, running } = await sleepingCellOnA()
    await cluster.halt()
    const refused = await stop(b, id)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBeTruthy()
    await cluster.resume()
    // Heard at once if A listens again by then, else found at A's next renewal of its lease.
    const answered = await waitFor(
      async () => {
        const response = await stop(b, id)
        return response.status === 200 ? ((await response.json()) as unknown) : undefined
      },
      { what: 'B to answer a Stop once the database is back', timeoutMs: 60_000, intervalMs: 250 },
    )
    expect([{ stopped: 1 }, { stopped: 0, pending: true }]).toContainEqual(answered)
    const ran = await running
    expect(ran.status).toBe(409)
    expect((await detail(b, id)).runs.at(-1)).toMatchObject({ status: 'interrupted', error: 'Stopped.' })
    expect([a.alive(), b.alive()]).toEqual([true, true])
    await expectStateOnA(id, 'print(x + 1)')
  }, 180_000)
})
