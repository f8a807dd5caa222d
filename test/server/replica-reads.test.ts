/**
 * GET /api/sessions/:id on one replica while the other works on the session: two `analyst serve`
 * processes over one PostgreSQL database, each read answered 200 with a whole session, whether
 * the other replica is starting the session's sandbox, replaying its cells, running a turn or has
 * just finished one. (The compose stack's Jupyter test once got a 500 from the replica that had
 * not run the question; this puts the same reads under many turns.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { type FakeOpenAI, type ScriptEntry, startFakeOpenAI } from '../support/fake-openai.js'
import { startServe } from '../support/serve.js'
import { askOverSse } from '../support/sse.js'

interface Replica {
  name: string
  url: string
  home: string
  stop(): void
  stderr(): string
}

let cluster: SharedPostgres
let model: FakeOpenAI
const script: ScriptEntry[] = []
const replicas: Replica[] = []

async function serve(name: string, databaseUrl: string): Promise<Replica> {
  const home = mkdtempSync(join(tmpdir(), `analyst-reads-${name}-`))
  const { child, url, stderr } = await startServe(['--database-url', databaseUrl], {
    PATH: process.env.PATH ?? '',
    ANALYST_HOME: home,
    ANALYST_MODEL: 'openai-compatible:fake',
    ANALYST_BASE_URL: model.url,
    ANALYST_LEASE_MS: '5000',
    ANALYST_POOL_SIZE: '0',
    NO_COLOR: '1',
  })
  const replica = { name, url, home, stderr, stop: () => child.kill('SIGKILL') }
  replicas.push(replica)
  return replica
}

/**
 * Reads the session from `replica` over and over until `during` settles, and a few times after;
 * resolves to what each read that was not a 200 with the session's runs said.
 */
async function readWhile(replica: Replica, id: string, during: Promise<unknown>): Promise<string[]> {
  const failures: string[] = []
  let settled = false
  const done = during.finally(() => {
    settled = true
  })
  const readOnce = async () => {
    const response = await fetch(`${replica.url}/api/sessions/${id}`)
    const text = await response.text()
    if (response.status !== 200) failures.push(`${replica.name} ${response.status}: ${text}`)
    else if (!Array.isArray((JSON.parse(text) as SessionDetail).runs))
      failures.push(`${replica.name}: no runs in ${text}`)
  }
  while (!settled) await readOnce()
  for (let i = 0; i < 20; i++) await readOnce()
  await done
  return failures
}

beforeAll(async () => {
  cluster = await sharedPostgres()
  const databaseUrl = await cluster.createDatabase()
  model = await startFakeOpenAI(script)
  await Promise.all([serve('a', databaseUrl), serve('b', databaseUrl)])
}, 180_000)

afterAll(async () => {
  for (const replica of replicas) {
    replica.stop()
    rmSync(replica.home, { recursive: true, force: true })
  }
  await model?.close()
})

describe("a replica's reads of a session the other is answering", () => {
  it('are answered whole while the other starts, replays and runs its turns', async () => {
    const [a, b] = replicas as [Replica, Replica]
    const failures: string[] = []
    for (let round = 0; round < 6; round++) {
      const id = (
        (await (await fetch(`${a.url}/api/sessions`, { method: 'POST', body: '{}' })).json()) as {
          id: string
        }
      ).id
      // B answers the first question (a new sandbox); A answers the second (B's cells replayed first).
      script.push({ code: `x = ${round}\nprint(x)` }, { content: 'Set.' })
      const first = askOverSse(b.url, id, 'Set x.')
      failures.push(...(await readWhile(a, id, first)))
      script.push({ code: 'print(x + 1)' }, { content: 'Read.' })
      const second = askOverSse(a.url, id, 'Read x.')
      failures.push(...(await readWhile(b, id, second)))
      const seen = (await (await fetch(`${b.url}/api/sessions/${id}`)).json()) as SessionDetail
      expect(seen.runs.map((run) => [run.status, run.answer])).toEqual([
        ['done', 'Set.'],
        ['done', 'Read.'],
      ])
    }
    if (failures.length > 0) {
      const logs = replicas.map((replica) => `${replica.name} logged:\n${replica.stderr().slice(-4000)}`)
      throw new Error(
        `${failures.length} reads failed:\n${failures.slice(0, 5).join('\n')}\n${logs.join('\n')}`,
      )
    }
  }, 240_000)
})
