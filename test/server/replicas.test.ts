/**
 * `analyst serve` as replicas: two processes (A and B), each with its own ANALYST_HOME (no shared
 * disk), over one PostgreSQL database, with a fake OpenAI-compatible model and real sandboxes.
 * Any replica serves any request: state is rebuilt where a session moves, a session's questions
 * are answered one after the other across replicas, a client watching a run reconnects to the
 * other replica, and a replica killed with -9 mid-run leaves an interrupted run that goes on
 * elsewhere with every committed step kept. A template build started on A is polled and cancelled
 * through B, and its template starts sandboxes on B; a second build of its name is refused on B;
 * E2B's COPY files uploaded to A are found by the build started on B. A template built with the
 * CLI on a host with the database, or found in a replica's home at its start, reaches the others; a
 * replica started with --template brings it first; a removal on one reaches the others' copies;
 * a replica killed with -9 while it shares a template or stores an upload leaves no half that
 * another reads, and the next start forgets its chunks (not those of a live replica's upload).
 * And PostgreSQL restarted under a burst: requests meet a
 * 503 with Retry-After, not a 500, the runs it cut off end as interrupted, and all answers again.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buffer } from 'node:stream/consumers'
import { promisify } from 'node:util'
import parsePrometheus from 'parse-prometheus-text-format'
import pg from 'pg'
import { create as createTar } from 'tar'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import { commitTemplate } from '../../src/test/support/templates.js'
import {
  type ChatMessage,
  type ChatRequest,
  type FakeOpenAI,
  type FakeReply,
  lastObservation,
  type ScriptEntry,
  startFakeOpenAI,
} from '../support/fake-openai.js'
import { askOverSse, readSse, type SseEvent } from '../support/sse.js'
import { waitFor } from '../support/wait.js'

const BIN = resolve('dist/cli/bin.js')
// Long enough that a replica stalled by a loaded machine keeps its lease; short enough for the kill -9 case.
const LEASE_MS = 5000

interface Replica {
  name: string
  child: ChildProcess
  url: string
  home: string
  stderr: () => string
}

let cluster: PostgresCluster
let databaseUrl: string
let model: FakeOpenAI
/** The model's replies, read in order: each test appends its own, and the replicas ask in turn. */
const script: ScriptEntry[] = []
const replicas: Replica[] = []

function serve(
  name: string,
  env: Record<string, string> = {},
  prepare?: (home: string) => void,
): Promise<Replica> {
  const home = mkdtempSync(join(tmpdir(), `analyst-replica-${name}-`))
  prepare?.(home)
  const args = ['serve', '--port', '0', '--database-url', databaseUrl, '--allow-template-builds']
  const child = spawn(process.execPath, [BIN, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      ANALYST_HOME: home,
      ANALYST_MODEL: 'openai-compatible:fake',
      ANALYST_BASE_URL: model.url,
      ANALYST_LEASE_MS: String(LEASE_MS),
      ANALYST_POOL_SIZE: '0',
      NO_COLOR: '1',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let output = ''
  return new Promise((resolvePromise, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const url = output.match(/serving on (http:\/\/\S+)/)?.[1]
      if (url) {
        const replica = { name, child, url, home, stderr: () => output }
        replicas.push(replica)
        resolvePromise(replica)
      }
    })
    child.once('exit', (code) => {
      rmSync(home, { recursive: true, force: true })
      reject(new Error(`replica ${name} exited ${code}: ${output}`))
    })
  })
}

const exited = (child: ChildProcess) =>
  new Promise<unknown>((r) =>
    child.exitCode !== null || child.signalCode !== null ? r(child.exitCode) : child.once('exit', r),
  )

async function newSession(replica: Replica): Promise<string> {
  const response = await fetch(`${replica.url}/api/sessions`, { method: 'POST', body: '{}' })
  return ((await response.json()) as { id: string }).id
}

async function detail(replica: Replica, id: string): Promise<SessionDetail> {
  return (await (await fetch(`${replica.url}/api/sessions/${id}`)).json()) as SessionDetail
}

/** The run's answer; a run that ended otherwise fails with the events it sent, to say why. */
function answer(events: SseEvent[]): string | undefined {
  const done = events.find((e) => e.event === 'done')
  if (!done) throw new Error(`No answer; the run sent: ${JSON.stringify(events).slice(0, 2000)}`)
  return (done.data.result as { answer?: string } | undefined)?.answer
}

let a: Replica
let b: Replica

beforeAll(async () => {
  cluster = await startPostgres()
  databaseUrl = await cluster.createDatabase()
  model = await startFakeOpenAI(script)
  ;[a, b] = await Promise.all([serve('a'), serve('b')])
}, 180_000)

afterAll(async () => {
  for (const replica of replicas) {
    replica.child.kill('SIGKILL')
    await exited(replica.child)
    rmSync(replica.home, { recursive: true, force: true })
  }
  await model?.close()
  await cluster?.stop()
})

describe('analyst serve replicas over PostgreSQL', () => {
  // Each test's replies only: the unread ones of a test that failed midway are dropped.
  beforeEach(() => {
    script.length -= model.remaining()
  })

  it("a follow-up asked on B uses a variable from A's question: B rebuilds the state, A lets its sandbox go", async () => {
    script.push({ code: 'x = 41' }, { content: 'Set.' })
    const id = await newSession(a)
    expect(answer(await askOverSse(a.url, id, 'Set x.'))).toBe('Set.')
    script.push({ code: 'print(x + 1)' }, (request) => ({
      content: lastObservation(request).includes('42') ? 'x + 1 is 42.' : 'x is gone.',
    }))
    const events = await askOverSse(b.url, id, 'What is x + 1?')
    expect(events.find((e) => e.event === 'preparing')?.data).toMatchObject({ replaying: 1 })
    expect(answer(events)).toBe('x + 1 is 42.')
    // The session is B's now: A's sweep lets its sandbox go.
    await waitFor(
      async () => {
        const metrics = await (await fetch(`${a.url}/metrics`)).text()
        return /^analyst_live_sessions 0$/m.test(metrics)
      },
      { what: "A to let go of the session's sandbox" },
    )
    const stored = await detail(a, id)
    expect(stored.runs.map((run) => [run.status, run.answer])).toEqual([
      ['done', 'Set.'],
      ['done', 'x + 1 is 42.'],
    ])
  }, 120_000)

  it('two questions to one session sent to A and B at once are answered one after the other', async () => {
    const id = await newSession(a)
    // Serialized, the replicas ask the model in this order, whichever goes first.
    script.push(
      { code: "import time\nprint('one', flush=True)\ntime.sleep(1)" },
      { content: 'First.' },
      { code: "print('two')" },
      { content: 'Second.' },
    )
    const [fromA, fromB] = await Promise.all([
      askOverSse(a.url, id, 'Question A'),
      askOverSse(b.url, id, 'Question B'),
    ])
    expect([answer(fromA), answer(fromB)].sort()).toEqual(['First.', 'Second.'])
    const queued = [fromA, fromB].map((events) => events.find((e) => e.event === 'run-start')?.data.queued)
    expect(queued.sort()).toEqual([false, true])
    const [first, second] = (await detail(b, id)).runs
    expect(first?.status).toBe('done')
    expect(second?.status).toBe('done')
    expect(Date.parse(second?.startedAt as string)).toBeGreaterThanOrEqual(
      Date.parse(first?.finishedAt as string),
    )
  }, 120_000)

  it('a client watching a run on A reconnects to B and gets the remaining steps as they are committed', async () => {
    const id = await newSession(a)
    script.push(
      { code: "import time\nprint('step 1', flush=True)" },
      { code: "time.sleep(1.5)\nprint('step 2')" },
      { code: "time.sleep(1.5)\nprint('step 3')" },
      { content: 'Three steps.' },
    )
    const controller = new AbortController()
    let runId: string | undefined
    const first = await fetch(`${a.url}/api/sessions/${id}/ask`, {
      method: 'POST',
      body: JSON.stringify({ question: 'Three steps, slowly.', keepRunning: true }),
      signal: controller.signal,
    })
    for await (const event of readSse(first)) {
      if (event.event === 'run-start') runId = event.data.runId as string
      if (event.event === 'step-end') break // the connection drops after the first step
    }
    controller.abort()
    expect(runId).toBeDefined()
    const watched = await fetch(`${b.url}/api/sessions/${id}/runs/${runId}/events`)
    expect(watched.status).toBe(200)
    const events: SseEvent[] = []
    for await (const event of readSse(watched)) events.push(event)
    const steps = events
      .filter((e) => e.event === 'step')
      .map((e) => (e.data.step as { stdout: string }).stdout)
    expect(steps).toEqual(['step 1\n', 'step 2\n', 'step 3\n'])
    expect(events.at(-1)?.data).toMatchObject({
      type: 'run-end',
      run: { status: 'done', answer: 'Three steps.' },
    })
    expect((await fetch(`${b.url}/api/sessions/${id}/runs/nope/events`)).status).toBe(404)
  }, 120_000)

  it("a template build started on A is polled to success with its log through B (ours and E2B's status route), and cancelled from B", async () => {
    const post = (replica: Replica, spec: Record<string, unknown>, name: string) =>
      fetch(`${replica.url}/api/templates`, { method: 'POST', body: JSON.stringify({ name, spec }) })
    const started = await post(a, { base: 'host', env: { BUILT_ON: 'a' } }, 'replica-env')
    expect(started.status).toBe(202)
    const { id } = (await started.json()) as { id: string }
    type Polled = { status: string; log: Array<{ message: string }> }
    const polled = await waitFor(
      async () => {
        const response = await fetch(`${b.url}/api/templates/builds/${id}`)
        expect(response.status).toBe(200)
        const body = (await response.json()) as Polled
        return body.status === 'ready' || body.status === 'error' ? body : undefined
      },
      { what: 'the build to end, seen from B' },
    )
    expect(polled.status, JSON.stringify(polled.log)).toBe('ready')
    const messages = polled.log.map((line) => line.message)
    expect(messages[0]).toBe('Building template "replica-env"')
    expect(messages.at(-1)).toMatch(/^Template "replica-env" is ready/)
    // E2B's status with log paging, as the SDK polls it, from B too.
    const page = (await (
      await fetch(`${b.url}/templates/replica-env/builds/${id}/status?logsOffset=1&limit=2`, {
        headers: { 'x-api-key': 'any' },
      })
    ).json()) as { status: string; logEntries: Array<{ message: string }> }
    expect(page.status).toBe('ready')
    expect(page.logEntries.map((entry) => entry.message)).toEqual(messages.slice(1, 3))

    // Built on A, started through B (its home has no templates): B brings it from the database.
    expect(messages).toContainEqual(expect.stringMatching(/^Shared with the other replicas/))
    const created = await fetch(`${b.url}/v2/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': 'any', 'content-type': 'application/json' },
      body: JSON.stringify({ templateID: 'replica-env' }),
    })
    const sandbox = (await created.json()) as { sandboxID: string }
    expect(created.status, JSON.stringify(sandbox)).toBe(201)
    await fetch(`${b.url}/sandboxes/${sandbox.sandboxID}`, {
      method: 'DELETE',
      headers: { 'x-api-key': 'any' },
    })
    const made = await fetch(`${b.url}/api/sessions`, {
      method: 'POST',
      body: JSON.stringify({ template: 'replica-env' }),
    })
    const session = (await made.json()) as { id: string }
    expect(made.status, JSON.stringify(session)).toBe(201)
    script.push({ code: "import os\nprint('built on', os.environ.get('BUILT_ON'))" }, (request) => ({
      content: lastObservation(request).includes('built on a') ? 'Built on A.' : 'Not in the template.',
    }))
    expect(answer(await askOverSse(b.url, session.id, 'Where was it built?'))).toBe('Built on A.')

    // A build that would hang (pip waits on an index that never answers), started on A, cancelled from B: A stops it.
    const sockets = new Set<Socket>()
    const silent = createServer((socket) => void sockets.add(socket))
    await new Promise<void>((listening) => silent.listen(0, '127.0.0.1', listening))
    const index = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/simple`
    const slow = await post(
      a,
      { base: 'host', pip: { packages: ['nothing==1'], 'index-url': index } },
      'replica-slow',
    )
    const slowId = ((await slow.json()) as { id: string }).id
    await waitFor(
      async () =>
        ((await (await fetch(`${b.url}/api/templates/builds/${slowId}`)).json()) as Polled).status ===
        'building',
      { what: 'the slow build to start' },
    )
    // One build of a name at a time, over both replicas.
    const twice = await post(b, { base: 'host' }, 'replica-slow')
    expect([twice.status, ((await twice.json()) as { error: { message: string } }).error.message]).toEqual([
      409,
      'A build of "replica-slow" is under way already (on this replica or another)',
    ])
    expect((await fetch(`${b.url}/api/templates/builds/${slowId}`, { method: 'DELETE' })).status).toBe(204)
    const cancelled = await waitFor(
      async () => {
        const body = (await (await fetch(`${b.url}/api/templates/builds/${slowId}`)).json()) as Polled & {
          reason?: { message: string }
        }
        return body.status === 'building' ? undefined : body
      },
      { what: 'the cancel to reach A' },
    )
    expect(cancelled).toMatchObject({ status: 'cancelled', reason: { message: 'the build was cancelled' } })
    for (const socket of sockets) socket.destroy()
    silent.close()
  }, 120_000)

  it('templates built with the CLI, or found in a home at start, reach every replica; --template brings its template before the pool; a removal reaches the copies', async () => {
    // A replica started with a template no replica has: it stops at once and says why, without a
    // stack (started now, checked at the end: its start overlaps the rest).
    const refused = serve('e', { ANALYST_TEMPLATE: 'replica-none' }).catch((error: Error) => error)
    // analyst template build on a host with the replicas' database configured: shared as it is built.
    const host = mkdtempSync(join(tmpdir(), 'analyst-replica-host-'))
    writeFileSync(join(host, 'spec.json'), JSON.stringify({ base: 'host', env: { BUILT_BY: 'cli' } }))
    const built = await promisify(execFile)(
      process.execPath,
      [BIN, 'template', 'build', join(host, 'spec.json'), '--name', 'replica-cli', '--quiet'],
      {
        env: {
          PATH: process.env.PATH ?? '',
          ANALYST_HOME: host,
          ANALYST_DATABASE_URL: databaseUrl,
          NO_COLOR: '1',
        },
      },
    ).finally(() => rmSync(host, { recursive: true, force: true }))
    expect(built.stdout, built.stderr).toMatch(/shared with the replicas over ANALYST_DATABASE_URL/)
    // C: started with it as the default template (its pool's), which its home lacks; its home holds
    // a template built there before (by the CLI without the database, or an image's import).
    const c = await serve('c', { ANALYST_TEMPLATE: 'replica-cli' }, (home) =>
      commitTemplate(home, 'c'.repeat(64), {
        name: 'replica-local',
        manifest: { base: { kind: 'host' }, hasRootfs: false, env: { BUILT_BY: 'c' } },
      }),
    )
    const made = await fetch(`${c.url}/api/sessions`, { method: 'POST', body: '{}' })
    expect(made.status).toBe(201)
    expect((await detail(c, ((await made.json()) as { id: string }).id)).template).toBe('replica-cli')
    // C shares its own after start: B brings it.
    const createOn = async (replica: Replica, template: string) =>
      (await fetch(`${replica.url}/api/sessions`, { method: 'POST', body: JSON.stringify({ template }) }))
        .status
    await waitFor(async () => (await createOn(b, 'replica-local')) === 201, {
      what: "C's template to reach B",
    })
    // Removed on C: B drops its copy at its next create there, and refuses it.
    expect((await fetch(`${c.url}/api/templates/replica-local`, { method: 'DELETE' })).status).toBe(204)
    await waitFor(async () => (await createOn(b, 'replica-local')) === 404, {
      what: 'the removal to reach B',
    })
    const listed = (await (await fetch(`${b.url}/api/templates`)).json()) as Array<{ names: string[] }>
    expect(listed.flatMap((template) => template.names)).not.toContain('replica-local')
    c.child.kill('SIGKILL')
    // Removed through a replica that never held it (E2B's DELETE /templates/ID on B): from the database.
    const e2bDelete = () =>
      fetch(`${b.url}/templates/replica-cli`, { method: 'DELETE', headers: { 'x-api-key': 'any' } })
    expect((await e2bDelete()).status).toBe(204)
    expect((await fetch(`${b.url}/api/templates/replica-cli`)).status).toBe(404)
    expect((await e2bDelete()).status).toBe(404)
    expect(String(await refused)).toMatch(
      /No template "replica-none" is built here .*, nor in the database the replicas share/,
    )
    expect(String(await refused)).not.toMatch(/\n\s+at /)
  }, 120_000)

  it("kill -9 of a replica while it shares a template and stores an upload: no replica reads the half, the next start forgets its chunks (not a live writer's) and shares it whole", async () => {
    const db = new pg.Client({ connectionString: databaseUrl })
    // Each upload's record held still by a transaction that writes the same record first.
    const holdD = new pg.Client({ connectionString: databaseUrl })
    const holdB = new pg.Client({ connectionString: databaseUrl })
    await Promise.all([db.connect(), holdD.connect(), holdB.connect()])
    const count = async (query: string) => Number((await db.query(query)).rows[0].n)
    // Chunks of a file or blob not yet committed (the store's part keys), and the locks of their writers.
    const parts = () =>
      count(`select count(*) as n from template_file_chunks where file >= 'part-' and file < 'part.'`)
    const blobParts = async () =>
      (
        await db.query(
          `select distinct blob from blob_chunks where blob >= 'part-' and blob < 'part.' order by blob`,
        )
      ).rows.map((row) => row.blob as string)
    const writers = () =>
      count(`select count(*) as n from pg_locks where locktype = 'advisory' and classid = 7350213`)
    const template = (home: string) =>
      commitTemplate(home, 'd'.repeat(64), {
        name: 'replica-half',
        manifest: { base: { kind: 'host' }, hasRootfs: false, env: { BUILT_BY: 'd' } },
      })
    /**
     * A CSV of three chunks or so, uploaded to a new session on the replica, its record held by
     * `hold` (the upload's writer waits there with every chunk written, as a slow commit would).
     */
    const upload = async (replica: Replica, fill: string, hold: pg.Client) => {
      const csv = `x\n${`${fill.repeat(99)}\n`.repeat(7000)}`
      const sha256 = createHash('sha256').update(csv).digest('hex')
      await hold.query('begin')
      await hold.query(`insert into blobs (sha256, size, created_at) values ($1, 0, 'held')`, [sha256])
      const form = new FormData()
      form.append('file', new Blob([csv]), `${fill}.csv`)
      const id = await newSession(replica)
      const response = fetch(`${replica.url}/api/sessions/${id}/files`, { method: 'POST', body: form })
      // D's never answers (it is killed), nor B's when the test fails before it is let go.
      response.catch(() => {})
      return { id, csv, sha256, response }
    }
    try {
      // The records held still: D writes every chunk of its share and of its upload, then waits
      // to commit them; so does B's upload (B lives on), through F's start.
      await db.query('begin')
      await db.query('lock table template_files in exclusive mode')
      const d = await serve('d', {}, template)
      await waitFor(async () => (await parts()) > 0, { what: "D's share to write its chunks" })
      const dead = await upload(d, 'd', holdD)
      const [deadPart] = await waitFor(
        async () => {
          const written = await blobParts()
          return written.length === 1 ? written : undefined
        },
        { what: "D's upload to write its chunks" },
      )
      const live = await upload(b, 'b', holdB)
      const livePart = await waitFor(async () => (await blobParts()).find((part) => part !== deadPart), {
        what: "B's upload to write its chunks",
      })
      // Whole or not at all: neither upload is a dataset yet.
      expect((await detail(b, live.id)).datasets).toEqual([])
      d.child.kill('SIGKILL')
      await exited(d.child)
      // Its writers go on to find their connection gone (a backend notices a killed client when it
      // answers it, not while it waits for a lock), and roll back.
      await db.query('rollback')
      await holdD.query('rollback')
      // D's connection is gone with its locks (B's upload's stays); its chunks stay, and no replica takes them.
      await waitFor(async () => (await writers()) === 1, { what: "D's connection to close" })
      expect(await parts()).toBeGreaterThan(0)
      expect(await count(`select count(*) as n from template_files where name = 'replica-half'`)).toBe(0)
      const createOn = async (replica: Replica) =>
        (
          await fetch(`${replica.url}/api/sessions`, {
            method: 'POST',
            body: JSON.stringify({ template: 'replica-half' }),
          })
        ).status
      expect(await createOn(b)).toBe(404)
      // Started again with the same home's template: the start forgets the halves, then shares it whole.
      const f = await serve('f', {}, template)
      await waitFor(async () => (await createOn(b)) === 201, { what: "F's share to reach B" })
      // D's chunks went at F's start (F's own share's went as it committed); B's upload's stayed.
      await waitFor(async () => (await parts()) === 0, { what: "D's chunks to be forgotten" })
      expect(await blobParts()).toEqual([livePart])
      expect(await count(`select count(*) as n from blobs where sha256 = '${dead.sha256}'`)).toBe(0)
      await holdB.query('rollback')
      expect((await live.response).status).toBe(201)
      expect(
        await count(`select sum(length(data)) as n from blob_chunks where blob = '${live.sha256}'`),
      ).toBe(live.csv.length)
      expect(await blobParts()).toEqual([])
      f.child.kill('SIGKILL')
    } finally {
      await Promise.all([db.end(), holdD.end(), holdB.end()])
    }
  }, 120_000)

  it("E2B's COPY: the files hash asked of B, the files uploaded to A, the build started on B finds them", async () => {
    const e2b = { 'x-api-key': 'any', 'content-type': 'application/json' }
    const requested = await fetch(`${a.url}/v3/templates`, {
      method: 'POST',
      headers: e2b,
      body: JSON.stringify({ name: 'replica-copy' }),
    })
    expect(requested.status).toBe(202)
    const { buildID } = (await requested.json()) as { buildID: string }
    const hash = createHash('sha256').update('replica-copy files').digest('hex')
    const asked = (await (
      await fetch(`${b.url}/templates/replica-copy/files/${hash}`, { headers: e2b })
    ).json()) as { present: boolean; url: string }
    expect(asked.present).toBe(false)
    // The upload URL names B; a load balancer without affinity sends the PUT to A.
    const put = new URL(asked.url)
    const context = mkdtempSync(join(tmpdir(), 'analyst-replica-copy-'))
    writeFileSync(join(context, 'greeting.txt'), 'hello from A\n')
    const body = await buffer(createTar({ cwd: context, gzip: true }, ['greeting.txt']))
    rmSync(context, { recursive: true, force: true })
    const uploaded = await fetch(`${a.url}${put.pathname}${put.search}`, { method: 'PUT', body })
    expect(uploaded.status, await uploaded.text()).toBeLessThan(300)
    expect(
      (
        (await (await fetch(`${b.url}/templates/replica-copy/files/${hash}`, { headers: e2b })).json()) as {
          present: boolean
        }
      ).present,
    ).toBe(true)
    // The host's Python takes no files: the build fails there, after B unpacked them.
    const started = await fetch(`${b.url}/v2/templates/replica-copy/builds/${buildID}`, {
      method: 'POST',
      headers: e2b,
      body: JSON.stringify({
        fromTemplate: 'code-interpreter-v1',
        steps: [{ type: 'COPY', args: ['greeting.txt', '/opt/greeting.txt'], filesHash: hash, force: false }],
      }),
    })
    expect(started.status, await started.text()).toBe(202)
    const status = await waitFor(
      async () => {
        const polled = (await (
          await fetch(`${a.url}/templates/replica-copy/builds/${buildID}/status`, { headers: e2b })
        ).json()) as { status: string; reason?: { message: string } }
        return polled.status === 'error' || polled.status === 'ready' ? polled : undefined
      },
      { what: 'the COPY build to end' },
    )
    expect(status.reason?.message).toMatch(/files cannot be copied in over the host's Python/)
  }, 120_000)

  it('kill -9 of A mid-run: B marks the run interrupted when the lease lapses, and the session goes on there', async () => {
    const id = await newSession(a)
    script.push(
      { code: "kept = 'yes'\nprint('kept')" },
      { code: "import time\nprint('waiting', flush=True)\ntime.sleep(120)" },
    )
    let runId: string | undefined
    let killed = false
    const gone = exited(a.child)
    await askOverSse(a.url, id, 'Keep, then wait.', {}, (event) => {
      if (event.event === 'run-start') runId = event.data.runId as string
      if (event.event === 'stdout' && String(event.data.text).includes('waiting'))
        killed = a.child.kill('SIGKILL')
    }).catch(() => undefined)
    expect(killed).toBe(true)
    await gone
    // A client that was watching on A reconnects to B: the committed step, then the run's end.
    const watched: SseEvent[] = []
    for await (const event of readSse(await fetch(`${b.url}/api/sessions/${id}/runs/${runId}/events`)))
      watched.push(event)
    expect(watched.map((e) => e.event)).toEqual(['step', 'run-end'])
    expect(watched[1]?.data).toMatchObject({ run: { status: 'interrupted' } })
    const stored = await detail(b, id)
    expect(stored.status).toBe('interrupted')
    expect(stored.runs[0]?.steps.map((step) => step.stdout)).toEqual(['kept\n'])

    script.push({ code: 'print(kept)' }, (request) => ({
      content: lastObservation(request).includes('yes') ? 'Still kept.' : 'Lost.',
    }))
    expect(answer(await askOverSse(b.url, id, 'Go on.'))).toBe('Still kept.')
    expect((await detail(b, id)).runs.map((run) => run.status)).toEqual(['interrupted', 'done'])
  }, 120_000)

  it('quotas count over every replica: 429 with Retry-After and the limit; /metrics parses', async () => {
    const sessions = ((await (await fetch(`${b.url}/api/sessions`)).json()) as unknown[]).length
    const c = await serve('c', { ANALYST_QUOTA_SESSIONS: String(sessions + 1) })
    expect((await fetch(`${c.url}/api/sessions`, { method: 'POST', body: '{}' })).status).toBe(201)
    // The sessions made on A and B count too.
    const over = await fetch(`${c.url}/api/sessions`, { method: 'POST', body: '{}' })
    expect([over.status, over.headers.get('retry-after')]).toEqual([429, '60'])
    expect(((await over.json()) as { error: { message: string } }).error.message).toBe(
      `Over the quota of ${sessions + 1} sessions for this token`,
    )
    const families = parsePrometheus(await (await fetch(`${b.url}/metrics`)).text())
    const names = families.map((family) => family.name)
    for (const name of [
      'analyst_live_sessions',
      'analyst_runs_in_progress',
      'analyst_questions_queued',
      'analyst_pool_size',
      'analyst_pool_hits',
      'analyst_sandbox_create_seconds',
      'analyst_cell_seconds',
      'analyst_model_latency_seconds',
      'analyst_model_tokens_total',
      'analyst_blocked_total',
      'analyst_http_requests_total',
    ])
      expect(names).toContain(name)
    c.child.kill('SIGKILL')
  }, 120_000)

  it('SIGTERM drains: the run in progress finishes, new questions and /readyz get 503, the lease is released', async () => {
    const d = await serve('d')
    const id = await newSession(d)
    script.push(
      { code: "import time\nprint('working', flush=True)\ntime.sleep(4)" },
      { content: 'Finished.' },
    )
    const gone = exited(d.child)
    let stopped: Promise<unknown> | undefined
    const asked = askOverSse(d.url, id, 'Work a while.', {}, (event) => {
      if (event.event === 'stdout' && String(event.data.text).includes('working')) {
        d.child.kill('SIGTERM')
        stopped = (async () => {
          await waitFor(async () => (await fetch(`${d.url}/readyz`)).status === 503, { what: 'D to drain' })
          const refused = await fetch(`${d.url}/api/sessions/${id}/ask`, {
            method: 'POST',
            body: JSON.stringify({ question: 'More?' }),
          })
          return refused.status
        })()
      }
    })
    expect(answer(await asked)).toBe('Finished.')
    expect(await stopped).toBe(503)
    expect(await gone).toBe(0)
    // Released, not left to lapse: B takes the session at once.
    script.push({ content: 'Here.' })
    const events = await askOverSse(b.url, id, 'Still there?')
    expect(events.find((e) => e.event === 'run-start')?.data.queued).toBe(false)
    expect(answer(events)).toBe('Here.')
  }, 120_000)

  it('PostgreSQL restarted mid-burst: 503 + Retry-After meanwhile, both replicas up, cut-off runs interrupted, all back within 10 s', async () => {
    const asks = (message: ChatMessage, question: string) =>
      message.role === 'user' && JSON.stringify(message.content).includes(question)
    // Steps of this question so far: the observations (tool results, or user turns without tools) since it was asked.
    const steps = (request: ChatRequest) =>
      request.messages
        .slice(request.messages.findLastIndex((m) => asks(m, 'Two steps.')) + 1)
        .filter((m) => m.role === 'tool' || m.role === 'user').length
    // Any order, any session: step 1 commits at once, step 2 is still running when the database stops.
    const burst: ScriptEntry = (request) =>
      request.messages.some((m) => asks(m, 'Again.'))
        ? { content: 'Answered again.' }
        : ([
            { code: "print('committed', flush=True)" },
            // Long enough that the first run to sleep is still asleep when the fourth starts and
            // the database stops: at 6 s, one run ended first under load (a done, no cut-off).
            { code: "import time\nprint('sleeping', flush=True)\ntime.sleep(15)" },
            { content: 'Both steps.' },
          ][Math.min(steps(request), 2)] as FakeReply)
    script.push(...Array.from({ length: 12 }, () => burst))
    // A was killed by the kill -9 test (when it ran): two live replicas, A started again.
    if (a.child.exitCode !== null || a.child.signalCode !== null) a = await serve('a')
    const ids = await Promise.all([a, b, a, b].map(newSession))
    const sleeping = new Set<string>()
    const seen: string[] = []
    const asked = ids.map((id, i) =>
      askOverSse([a, b][i % 2]?.url as string, id, 'Two steps.', {}, (event) => {
        seen.push(`${i}:${event.event}`)
        if (event.event === 'stdout' && String(event.data.text).includes('sleeping')) sleeping.add(id)
      }),
    )
    // Awaited below; a failure before then is not also an unhandled rejection.
    for (const asking of asked) asking.catch(() => {})
    await waitFor(() => sleeping.size === ids.length, {
      what: () => `the 4 runs at step 2 (events: ${seen.join(' ')})`,
    })
    await cluster.halt()

    // The outage: every request that needs the database is refused at once with 503 and Retry-After.
    const mcpInitialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-03-26',
        capabilities: {},
        clientInfo: { name: 'fault', version: '1' },
      },
    }
    for (const replica of [a, b]) {
      const requests: Array<[string, RequestInit]> = [
        ['/api/sessions', {}],
        ['/api/sessions', { method: 'POST', body: '{}' }],
        [`/api/sessions/${ids[0]}`, {}],
        [`/api/sessions/${ids[1]}/ask`, { method: 'POST', body: JSON.stringify({ question: 'Now?' }) }],
        [
          '/mcp',
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body: JSON.stringify(mcpInitialize),
          },
        ],
      ]
      for (const [path, init] of requests) {
        const response = await fetch(`${replica.url}${path}`, init)
        const body = await response.text()
        expect([path, response.status, response.headers.get('retry-after')], body).toEqual([path, 503, '5'])
        expect(body).toMatch(/database is unavailable/)
      }
    }
    // The runs in flight end when their next step cannot be recorded: said to their clients.
    for (const events of await Promise.all(asked)) {
      expect(events.map((e) => e.event)).not.toContain('done')
      expect(events.at(-1)).toMatchObject({ event: 'failed', data: { message: /database is unavailable/ } })
    }
    for (const replica of [a, b]) {
      expect(replica.child.exitCode).toBeNull()
      expect((await fetch(`${replica.url}/healthz`)).status).toBe(200)
    }

    await cluster.resume()
    // Within 10 s of the database being back: both replicas answer, each cut-off run is recorded
    // as interrupted with its reason, and its committed step is there.
    const runs = await waitFor(
      async () => {
        const details = await Promise.all(
          ids.map(async (id, i) => {
            const response = await fetch(`${[a, b][(i + 1) % 2]?.url}/api/sessions/${id}`)
            return response.status === 200 ? ((await response.json()) as SessionDetail) : undefined
          }),
        )
        const all = details.map((d) => d?.runs[0])
        // The other replica's sweep may mark a run first, with the lapsed lease's plain reason; the
        // replica that ran it writes the database's reason over it once it can.
        return all.every(
          (run) => run?.status === 'interrupted' && /database became unreachable/.test(run.error ?? ''),
        )
          ? all
          : undefined
      },
      // 10 s is the promise, met in every run seen; the deadline leaves room for a loaded machine.
      { what: 'the cut-off runs to be recorded as interrupted, with the reason', timeoutMs: 20_000 },
    )
    for (const run of runs) {
      expect(run?.error).toMatch(/database became unreachable/)
      expect(run?.steps.map((step) => step.stdout)).toEqual(['committed\n'])
    }
    // And the sessions go on, on either replica.
    const again = await Promise.all(
      ids.slice(0, 2).map((id, i) => askOverSse([b, a][i]?.url as string, id, 'Again.')),
    )
    for (const events of again) expect(answer(events)).toBe('Answered again.')
  }, 120_000)
})
