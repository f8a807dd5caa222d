#!/usr/bin/env node
// A Stop across replicas: two servers (A and B, in this process) over one PostgreSQL database. A
// person's cell sleeps on A; the Stop is POSTed to B (it reaches A through the store and NOTIFY),
// or, as the baseline in the same run, to A itself. Measured: from the Stop's POST to the end of
// the cell's request on A (its 409, once the run is recorded as stopped). Interleaved B, A, B, A…
// so that load falls on both alike.
// Usage: node bench/replica-stop.mjs [--quick]   (built dist/ first: npm run build)
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../dist/server/index.js'
import { startPostgres } from '../dist/test/support/postgres.js'
import { responder } from './sessions.mjs'
import { machine, percentile, table } from './util.mjs'

const ROUNDS = process.argv.includes('--quick') ? 5 : 20

const post = (url, body) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

async function runningRun(url, id) {
  for (;;) {
    const detail = await (await fetch(`${url}/api/sessions/${id}`)).json()
    if (detail.runs.at(-1)?.status === 'running') return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** One sleeping cell on A, stopped through `via`: ms from the Stop's POST to the cell's end. */
async function stopOnce(a, via, id) {
  const cell = post(`${a}/api/sessions/${id}/cells`, { code: 'import time\ntime.sleep(60)' })
  await runningRun(a, id)
  // Past the run's start, into the kernel: the Stop interrupts the cell, not its setting up.
  await new Promise((resolve) => setTimeout(resolve, 100))
  const started = performance.now()
  const answer = await (await post(`${via}/api/sessions/${id}/stop`, {})).json()
  const response = await cell
  await response.text()
  const ms = performance.now() - started
  if (response.status !== 409 || answer.stopped !== 1)
    throw new Error(`not stopped: the cell answered ${response.status}, the Stop ${JSON.stringify(answer)}`)
  return ms
}

const cluster = await startPostgres()
const homes = []
const servers = []
const load = [loadavg()[0]]
try {
  const databaseUrl = await cluster.createDatabase()
  // Cells only: the model is never asked.
  const model = responder([], 'Nothing to do.')
  const choice = async () => ({
    model,
    spec: 'bench:responder',
    provider: 'custom',
    modelId: 'r',
    mode: 'tools',
  })
  for (const name of ['a', 'b']) {
    const home = mkdtempSync(join(tmpdir(), `analyst-bench-stop-${name}-`))
    homes.push(home)
    servers.push(await startServer({ port: 0, home, tokens: [], databaseUrl, model: choice }))
  }
  const [a, b] = servers.map((server) => server.url)
  const { id } = await (await post(`${a}/api/sessions`, {})).json()
  // The sandbox started once, before the timing.
  await (await post(`${a}/api/sessions/${id}/cells`, { code: 'x = 1' })).text()
  const remote = []
  const local = []
  for (let round = 0; round < ROUNDS; round++) {
    remote.push(await stopOnce(a, b, id))
    local.push(await stopOnce(a, a, id))
  }
  load.push(loadavg()[0])
  const row = (name, values) => [
    name,
    percentile(values, 50).toFixed(1),
    percentile(values, 90).toFixed(1),
    Math.max(...values).toFixed(1),
    (percentile(values, 50) / percentile(local, 50)).toFixed(2),
  ]
  console.log(`## Stop across replicas (${machine()})\n`)
  console.log(`${ROUNDS} stops each, interleaved; load ${load.map((l) => l.toFixed(1)).join(' → ')}.\n`)
  console.log(
    table(
      ['Stop POSTed to', 'p50 ms', 'p90 ms', 'max ms', 'p50 / local'],
      [row('B, the cell on A (NOTIFY)', remote), row('A itself (baseline)', local)],
    ),
  )
} finally {
  for (const server of servers) await server.close()
  for (const home of homes) rmSync(home, { recursive: true, force: true })
  await cluster.stop()
}
