#!/usr/bin/env node
// E2B-compatible API benchmark: the official SDK (@e2b/code-interpreter) against `analyst serve` on
// loopback, `1 + 1` round trips and Sandbox.create from the warm pool, beside the same through
// Analyst's library in the same run (the baseline: what the HTTP layer adds is the difference).
// Usage: node bench/e2b.mjs [--quick]   (run `npm run build` first; `npm run bench` does)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox as E2BSandbox } from '@e2b/code-interpreter'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { startServer } from '../dist/server/index.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const N = { roundTrip: quick ? 200 : 1000, create: quick ? 10 : 30, warmup: 50 }

async function time(fn) {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

async function repeat(n, fn) {
  const times = []
  for (let i = 0; i < n; i++) times.push(await time(fn))
  return times
}

const home = mkdtempSync(join(tmpdir(), 'analyst-bench-e2b-'))
const provider = new LocalProvider({ poolSize: 1 })
const token = 'bench-token'
const server = await startServer({ port: 0, home, tokens: [token], sandbox: { provider } })
process.env.E2B_API_URL = server.url
process.env.E2B_SANDBOX_URL = server.url
process.env.E2B_API_KEY = token

try {
  // Round trips on a warm kernel: the SDK over HTTP, then the library in process.
  // Each create refills the pool in the background: wait for it, so no kernel starts while timing.
  await provider.warm()
  const remote = await E2BSandbox.create()
  await provider.warm()
  for (let i = 0; i < N.warmup; i++) await remote.runCode('1 + 1')
  const sdkTrips = await repeat(N.roundTrip, async () => {
    if ((await remote.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the SDK')
  })
  await remote.kill()

  await provider.warm()
  const local = await Sandbox.create({ provider })
  await provider.warm()
  for (let i = 0; i < N.warmup; i++) await local.runCode('1 + 1')
  const libraryTrips = await repeat(N.roundTrip, async () => {
    if ((await local.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the library')
  })
  await local.kill()

  // Create from the warm pool: refilled (untimed) before each create, killed (untimed) after.
  const sdkCreates = []
  const libraryCreates = []
  for (let i = 0; i < N.create; i++) {
    await provider.warm()
    let made
    sdkCreates.push(await time(async () => (made = await E2BSandbox.create())))
    await made.kill()
    await provider.warm()
    libraryCreates.push(await time(async () => (made = await Sandbox.create({ provider }))))
    await made.kill()
  }

  const ms = (value) => `${value.toFixed(2)} ms`
  const row = (name, times) => [name, String(times.length), ms(percentile(times, 50)), ms(percentile(times, 99))]
  const p50 = (times) => percentile(times, 50)
  console.log(`### E2B-compatible API (${machine()})

The official JS SDK (@e2b/code-interpreter 2.8.0, e2b 2.51.0), unchanged, against \`analyst serve\` on
127.0.0.1, beside Analyst's library calling the same local provider in the same process.

${table(
  ['operation', 'n', 'p50', 'p99'],
  [
    row('SDK `runCode("1 + 1")`', sdkTrips),
    row('library `runCode("1 + 1")`', libraryTrips),
    row('SDK `Sandbox.create()` (warm pool)', sdkCreates),
    row('library `Sandbox.create()` (warm pool)', libraryCreates),
  ],
)}

HTTP and the SDK add ${ms(p50(sdkTrips) - p50(libraryTrips))} to a round trip and ${ms(p50(sdkCreates) - p50(libraryCreates))} to a create at p50 (goals: round trip ≤ 3 ms, create ≤ 20 ms at p50; E2B's cloud gives ~150 ms for a create, their figure, not measured here).`)
} finally {
  await server.close()
  await provider.close()
  rmSync(home, { recursive: true, force: true })
}
