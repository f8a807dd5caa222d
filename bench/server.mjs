#!/usr/bin/env node
// `analyst serve` under load: N concurrent sessions, each uploading the sample data and asking a
// scripted 3-step question over SSE, against real servers on 127.0.0.1 with real sandboxes, in
// three set-ups in one run: one replica over SQLite, one over PostgreSQL, and two over one
// PostgreSQL behind a round-robin proxy. Baseline in the same run: one session alone (SQLite).
// Then the cost of PostgreSQL per committed step, against SQLite, on the store alone.
// Usage: node bench/server.mjs [--quick]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, request as httpRequest } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../dist/server/index.js'
import { PostgresHistoryStore } from '../dist/store/postgres/store.js'
import { SqliteHistoryStore } from '../dist/store/sqlite/store.js'
import { startPostgres } from '../dist/test/support/postgres.js'
import { responder } from './sessions.mjs'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const CONCURRENT = quick ? 10 : 50
const SALES = readFileSync(new URL('../examples/sales.csv', import.meta.url))

const STEPS = [
  "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(df.shape)",
  "print(df.groupby('region').order_value.sum().round(2))",
  'print(round(df.order_value.mean(), 2))',
]

const responderModel = () => responder(STEPS, 'Mean order value: 692.91.')

async function session(url) {
  const opened = performance.now()
  const { id } = await (await fetch(`${url}/api/sessions`, { method: 'POST', body: '{}' })).json()
  const form = new FormData()
  form.append('file', new Blob([SALES]), 'sales.csv')
  const uploaded = await fetch(`${url}/api/sessions/${id}/files`, { method: 'POST', body: form })
  if (uploaded.status !== 201) throw new Error(`upload failed: ${uploaded.status}`)
  const started = performance.now()
  const response = await fetch(`${url}/api/sessions/${id}/ask`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question: 'What is the mean order value?' }),
  })
  let firstEvent
  let answered
  let text = ''
  const decoder = new TextDecoder()
  for await (const chunk of response.body) {
    firstEvent ??= performance.now() - started
    text += decoder.decode(chunk, { stream: true })
    if (text.includes('event: done')) answered = performance.now() - started
    if (text.includes('event: failed'))
      throw new Error(`failed: ${text.slice(text.indexOf('event: failed'), 400)}`)
  }
  if (!answered) throw new Error('no answer')
  // whole: from creating the session to the answer, its upload included
  return { firstEvent, answered, whole: performance.now() - opened }
}

/** A proxy on 127.0.0.1 that sends each request to the next replica in turn (streams included). */
function roundRobin(urls) {
  let next = 0
  const proxy = createServer((req, res) => {
    const target = new URL(urls[next++ % urls.length])
    const forward = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
        agent: false, // a connection per request: no reuse of a socket the replica is closing
      },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers)
        reply.pipe(res)
      },
    )
    forward.on('error', () => res.destroy())
    req.pipe(forward)
  })
  proxy.keepAliveTimeout = 65_000 // longer than the client keeps an idle connection
  return new Promise((resolve) =>
    proxy.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${proxy.address().port}`,
        close: () => new Promise((r) => proxy.close(r)),
      }),
    ),
  )
}

/** `count` sessions at once against `replicas` servers over one store (SQLite when no URL). */
async function round(count, { replicas = 1, databaseUrl } = {}) {
  const homes = []
  const servers = []
  const model = responderModel()
  try {
    for (let i = 0; i < replicas; i++) {
      const home = mkdtempSync(join(tmpdir(), 'analyst-bench-server-'))
      homes.push(home)
      servers.push(
        await startServer({
          port: 0,
          home,
          tokens: [],
          databaseUrl,
          model: async () => ({
            model,
            spec: 'bench:responder',
            provider: 'custom',
            modelId: 'responder',
            mode: 'tools',
          }),
        }),
      )
    }
    const proxy = replicas > 1 ? await roundRobin(servers.map((server) => server.url)) : undefined
    try {
      const url = proxy?.url ?? servers[0].url
      const started = performance.now()
      const results = await Promise.all(Array.from({ length: count }, () => session(url)))
      const wall = (performance.now() - started) / 1000
      return { results, wall }
    } finally {
      await proxy?.close()
    }
  } finally {
    for (const server of servers) await server.close()
    for (const home of homes) rmSync(home, { recursive: true, force: true })
  }
}

/** Milliseconds per committed step on the store alone: one writer, then 10 at once. */
async function commitCost(history, steps) {
  const session = await history.createSession({ title: 'bench' })
  const run = await history.startRun(session.id, 'q')
  const commit = (step) =>
    history.commitStep({
      runId: run.id,
      sessionId: session.id,
      step: {
        step,
        code: "print(df.groupby('region').order_value.sum().round(2))",
        text: 'Summing by region.',
        stdout: 'region\nEast 1.0\nNorth 2.0\nSouth 3.0\nWest 4.0\n',
        stderr: '',
        results: [{ isMainResult: true, text: '4' }],
        durationMs: 12,
        usage: { inputTokens: 900, outputTokens: 60, totalTokens: 960 },
      },
      artifacts: [],
      blocked: [],
    })
  const times = []
  for (let i = 0; i < steps; i++) {
    const started = performance.now()
    await commit(i + 1)
    times.push(performance.now() - started)
  }
  const started = performance.now()
  await Promise.all(
    Array.from({ length: 10 }, async (_, writer) => {
      for (let i = 0; i < steps / 10; i++) await commit(1000 + writer * steps + i)
    }),
  )
  const concurrentMs = (performance.now() - started) / steps
  return { p50: percentile(times, 50), p99: percentile(times, 99), concurrentMs }
}

const loadBefore = loadavg()
const postgres = await startPostgres({ durable: true })
try {
  const alone = await round(1)
  const setups = [
    ['1 replica, SQLite', await round(CONCURRENT)],
    ['1 replica, PostgreSQL', await round(CONCURRENT, { databaseUrl: await postgres.createDatabase() })],
    [
      '2 replicas, PostgreSQL, round-robin proxy',
      await round(CONCURRENT, { replicas: 2, databaseUrl: await postgres.createDatabase() }),
    ],
  ]
  const baseline = alone.results[0]
  const seconds = (ms) => (ms / 1000).toFixed(2)
  const rows = setups.map(([label, { results, wall }]) => {
    const first = results.map((r) => r.firstEvent)
    const answer = results.map((r) => r.answered)
    return [
      label,
      (CONCURRENT / wall).toFixed(2),
      seconds(percentile(first, 50)),
      seconds(percentile(first, 99)),
      seconds(percentile(answer, 50)),
      seconds(percentile(answer, 99)),
      `${(percentile(answer, 50) / baseline.answered).toFixed(1)}×`,
      seconds(
        percentile(
          results.map((r) => r.whole),
          50,
        ),
      ),
    ]
  })

  const STEPS = quick ? 100 : 500
  const home = mkdtempSync(join(tmpdir(), 'analyst-bench-commit-'))
  const sqlite = await SqliteHistoryStore.open(join(home, 'analyst.db'))
  const pg = await PostgresHistoryStore.open(await postgres.createDatabase())
  let costs
  try {
    costs = [
      ['SQLite (WAL, synchronous=NORMAL)', await commitCost(sqlite, STEPS)],
      ['PostgreSQL 127.0.0.1 (defaults: fsync, synchronous_commit on)', await commitCost(pg, STEPS)],
    ]
  } finally {
    await sqlite.close()
    await pg.close()
    rmSync(home, { recursive: true, force: true })
  }
  const [, lite] = costs[0]
  const [, postgresCost] = costs[1]
  console.log(
    [
      `### Server under load: SQLite, PostgreSQL, two replicas (${machine()}${quick ? ', quick run' : ''})`,
      '',
      `${CONCURRENT} sessions at once, each creating a session, uploading examples/sales.csv and asking a scripted 3-step question over SSE (real sandboxes, a warm pool of 2 per replica). PostgreSQL is a local cluster with its default durability; blobs are in it. The two replicas run in this one Node process (one event loop between them) behind a round-robin proxy, over one database. Baseline: one session alone over SQLite, in the same run: first event ${seconds(baseline.firstEvent)} s, answer ${seconds(baseline.answered)} s. Times to the first event and to the answer start when the question is sent; answers/s counts the whole load, uploads included. Load average before / after (a shared machine stretches wall times): ${loadBefore.map((n) => n.toFixed(1)).join(' ')} / ${loadavg()
        .map((n) => n.toFixed(1))
        .join(' ')}.`,
      '',
      table(
        [
          '',
          'answers/s',
          'first event p50 s',
          'first event p99 s',
          'answer p50 s',
          'answer p99 s',
          'answer p50 vs alone',
          'whole session p50 s (upload included)',
        ],
        rows,
      ),
      '',
      `Cost per committed step on the store alone (${STEPS} typical steps (code, prose, output, a result), one writer, then 10 writers at once):`,
      '',
      table(
        ['store', 'p50 ms', 'p99 ms', 'ms per step, 10 writers'],
        costs.map(([label, cost]) => [
          label,
          cost.p50.toFixed(3),
          cost.p99.toFixed(3),
          cost.concurrentMs.toFixed(3),
        ]),
      ),
      '',
      `- PostgreSQL costs ${(postgresCost.p50 - lite.p50).toFixed(2)} ms more per committed step than SQLite at p50 (${(postgresCost.p50 / lite.p50).toFixed(1)}×); a step of the scripted question spends about ${seconds(baseline.answered / 3)} s in model, sandbox and streaming.`,
    ].join('\n'),
  )
} finally {
  await postgres.stop()
}
