#!/usr/bin/env node
// E2B-compatible API benchmark: the official SDK (@e2b/code-interpreter) against `analyst serve` on
// loopback, `1 + 1` round trips and Sandbox.create from the warm pool, beside the same through
// Analyst's library in the same run (the baseline: what the HTTP layer adds is the difference), and
// the files calls that carry envd's details (list, getInfo) beside a plain read of the same file.
// The server runs in a child process (this file with --serve), as it would for a real client.
// Usage: node bench/e2b.mjs [--quick] [--warmup N]   (run `npm run build` first; `npm run bench` does)
//        node bench/e2b.mjs --ab <distA> <distB> [--rounds N] [--trips N] [--warmup N]   (two builds in turns)
// --warmup: trips before the timed ones (see WARMUP); the first ones are reported apart, as cold.
import { fork } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox as E2BSandbox } from '@e2b/code-interpreter'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { machine, percentile, serveE2B, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const option = (name, fallback) => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
/**
 * Trips before the timed ones. V8 tiers up the server's and the SDK's code over the first few
 * thousand trips: the server's CPU per trip fell from 1.3-1.9 ms in the first 1,000 to 0.45-0.65 ms
 * after 3,000 (2026-12-07, load 10-16). The first trips are timed apart, as a cold server's.
 */
const WARMUP = option('--warmup', quick ? 1500 : 3000)
const COLD = 200
const N = { roundTrip: quick ? 200 : 1000, create: quick ? 10 : 30, files: quick ? 50 : 200, warmup: 50 }

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

const TOKEN = 'bench-token'

/**
 * The CPU time of `pid`'s descendants in µs (the sandboxes' kernels, the zygote, the jail): the
 * kernel side of a trip, from /proc (clock ticks, 100 a second here).
 */
function descendantsCpuUs(pid) {
  const parents = new Map()
  const ticks = new Map()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const fields = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1].split(' ')
      parents.set(Number(name), Number(fields[1]))
      ticks.set(Number(name), Number(fields[11]) + Number(fields[12]))
    } catch {} // gone meanwhile
  }
  let total = 0
  for (const [at, used] of ticks) {
    let up = parents.get(at)
    while (up !== undefined && up > 1 && up !== pid) up = parents.get(up)
    if (up === pid) total += used
  }
  return total * 10_000
}

/**
 * The server in a child process (this file with --serve [dist]): its URL, a refill of its warm pool
 * (each create refills it in the background: waited for, so no kernel starts while timing), and
 * its CPU time so far in microseconds (less bent by a busy machine than wall time).
 */
async function serverChild(args = []) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', ...args], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  const reply = () => new Promise((done) => child.once('message', done))
  const { url } = await reply()
  const ask = async (message) => {
    child.send(message)
    return reply()
  }
  return { child, url, warm: () => ask('warm'), cpu: async () => (await ask('cpu')).cpu }
}

/**
 * `--ab <distA> <distB>`: `runCode('1 + 1')` through the SDK against two builds of `analyst serve`
 * (e.g. a copy of main's dist and a branch's), each in its own process, in alternating rounds so
 * that both meet the same moments of a busy machine; with each server's CPU time per round trip.
 * Each server has a fresh sandbox and one holding 200 files written through `files.write` and
 * 10,000 written by a cell.
 */
async function ab() {
  const at = process.argv.indexOf('--ab')
  const given = process.argv.slice(at + 1, at + 3)
  if (given.length !== 2 || given.some((dist) => dist.startsWith('--')))
    throw new Error('Usage: node bench/e2b.mjs --ab <distA> <distB> [--rounds N] [--trips N] [--warmup N]')
  const dists = given.map((dist) => resolve(dist))
  const rounds = option('--rounds', 20)
  const trips = option('--trips', 25)
  const sides = []
  for (const dist of dists) {
    const { child, url, warm, cpu } = await serverChild([dist])
    const connection = { apiUrl: url, sandboxUrl: url, apiKey: TOKEN, timeoutMs: 3_600_000 }
    const fresh = await E2BSandbox.create(connection)
    await warm()
    const filled = await E2BSandbox.create(connection)
    await warm()
    for (let i = 0; i < 200; i++) await filled.files.write(`small/f${i}.txt`, 'x')
    const made = await filled.runCode(
      `import os
for i in range(10_000):
    folder = f'many/{i // 1000}'
    if i % 1000 == 0: os.makedirs(folder, exist_ok=True)
    open(f'{folder}/{i}.txt', 'w').close()`,
      { timeoutMs: 600_000 },
    )
    if (made.error) throw new Error(`writing the files: ${made.error.value}`)
    sides.push({
      dist,
      child,
      cpu,
      sandboxes: { fresh, filled },
      times: { fresh: [], filled: [] },
      cpuUs: 0,
      kernelUs: 0,
    })
  }
  const onePlusOne = async (sandbox) => {
    if ((await sandbox.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the SDK')
  }
  // Each server warmed up in its turn (V8 tiers its code up), its first trips timed as a cold server's.
  for (const side of sides) {
    side.cold = []
    for (let i = 0; i < WARMUP / 2; i++)
      for (const s of Object.values(side.sandboxes)) {
        const start = performance.now()
        await onePlusOne(s)
        if (side.cold.length < COLD) side.cold.push(performance.now() - start)
      }
  }
  const loads = []
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const cpuBefore = await side.cpu()
      const kernelBefore = descendantsCpuUs(side.child.pid)
      for (const kind of ['fresh', 'filled']) {
        for (let i = 0; i < trips; i++) {
          const start = performance.now()
          await onePlusOne(side.sandboxes[kind])
          side.times[kind].push(performance.now() - start)
        }
      }
      side.cpuUs += (await side.cpu()) - cpuBefore
      side.kernelUs += descendantsCpuUs(side.child.pid) - kernelBefore
    }
    loads.push(loadavg()[0])
  }
  const ms = (value) => `${value.toFixed(2)} ms`
  const [a, b] = sides
  const rows = []
  for (const kind of ['fresh', 'filled']) {
    for (const side of sides) {
      rows.push([
        `${side === a ? 'A' : 'B'} ${kind}`,
        String(side.times[kind].length),
        ms(percentile(side.times[kind], 50)),
        ms(percentile(side.times[kind], 99)),
      ])
    }
  }
  const ratio = (kind) => (percentile(b.times[kind], 50) / percentile(a.times[kind], 50)).toFixed(3)
  console.log(`E2B SDK \`runCode('1 + 1')\`, A/B in ${rounds} alternating rounds of ${trips} per sandbox (${machine()}, load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)})
A: ${a.dist}
B: ${b.dist}

${table(['server, sandbox', 'n', 'p50', 'p99'], rows)}

B/A at p50: fresh ${ratio('fresh')}, filled ${ratio('filled')}

Cold, the first ${COLD} trips after each server's start (before ${WARMUP} of warm-up; one server after the other, not in turns): A ${ms(percentile(a.cold, 50))}, B ${ms(percentile(b.cold, 50))} p50

The server's CPU time per round trip: A ${(a.cpuUs / a.times.fresh.length / 2).toFixed(0)} µs, B ${(b.cpuUs / b.times.fresh.length / 2).toFixed(0)} µs (B/A ${(b.cpuUs / a.cpuUs).toFixed(3)})
The kernel side's (the server's descendants: kernels, zygote): A ${(a.kernelUs / a.times.fresh.length / 2).toFixed(0)} µs, B ${(b.kernelUs / b.times.fresh.length / 2).toFixed(0)} µs (B/A ${(b.kernelUs / a.kernelUs).toFixed(3)})`)
  for (const side of sides) {
    await side.sandboxes.fresh.kill()
    await side.sandboxes.filled.kill()
    side.child.send('close')
  }
}

const serveAt = process.argv.indexOf('--serve')
if (serveAt !== -1) {
  await serveE2B(process.argv[serveAt + 1] ?? fileURLToPath(new URL('../dist', import.meta.url)), TOKEN)
} else if (process.argv.includes('--ab')) {
  await ab()
} else {
  const { child, url, warm: warmRemote } = await serverChild()
  process.env.E2B_API_URL = url
  process.env.E2B_SANDBOX_URL = url
  process.env.E2B_API_KEY = TOKEN
  const provider = new LocalProvider({ poolSize: 1 })
  try {
    // Round trips on a warm kernel: the SDK over HTTP, then the library in process.
    const remote = await E2BSandbox.create()
    await warmRemote()
    const coldTrips = await repeat(COLD, async () => {
      if ((await remote.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the SDK')
    })
    for (let i = 0; i < WARMUP; i++) await remote.runCode('1 + 1')
    const sdkTrips = await repeat(N.roundTrip, async () => {
      if ((await remote.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the SDK')
    })
    // Files: a read is the baseline; list and getInfo also read each entry's metadata (xattrs).
    for (let i = 0; i < 20; i++) await remote.files.write(`bench/f${i}.txt`, 'x'.repeat(100))
    for (let i = 0; i < N.warmup; i++) await remote.files.list('bench')
    const fileCalls = { read: [], list: [], getInfo: [] }
    for (let i = 0; i < N.files; i++) {
      fileCalls.read.push(await time(() => remote.files.read('bench/f0.txt')))
      fileCalls.list.push(await time(() => remote.files.list('bench')))
      fileCalls.getInfo.push(await time(() => remote.files.getInfo('bench/f0.txt')))
    }
    await remote.kill()

    // The cost of a cell beside the workspace's size: `1 + 1` in a sandbox whose workspace fills,
    // in turns with a fresh sandbox's (the baseline, in the same moments of a busy machine).
    const longLived = { timeoutMs: 3_600_000 }
    const filled = await E2BSandbox.create(longLived)
    await warmRemote()
    const fresh = await E2BSandbox.create(longLived)
    await warmRemote()
    const onePlusOne = async (sandbox) => {
      if ((await sandbox.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the SDK')
    }
    for (let i = 0; i < N.warmup; i++) {
      await onePlusOne(filled)
      await onePlusOne(fresh)
    }
    const byFiles = []
    const measure = async (files) => {
      const times = { filled: [], fresh: [] }
      for (let i = 0; i < N.roundTrip / 2; i++) {
        times.fresh.push(await time(() => onePlusOne(fresh)))
        times.filled.push(await time(() => onePlusOne(filled)))
      }
      byFiles.push([files, times])
    }
    await measure('nothing')
    for (let i = 0; i < 200; i++) await filled.files.write(`small/f${i}.txt`, 'x')
    await measure('200 small files written through `files.write`')
    let written = 0
    for (const total of [2_000, 10_000, 100_000]) {
      // Empty files in folders of 1,000, as an unzipped dataset has them.
      const cell = `import os
for i in range(${written}, ${total}):
    folder = f'many/{i // 1000}'
    if i % 1000 == 0: os.makedirs(folder, exist_ok=True)
    open(f'{folder}/{i}.txt', 'w').close()`
      const made = await filled.runCode(cell, { timeoutMs: 600_000 })
      if (made.error) throw new Error(`writing the files: ${made.error.value}`)
      written = total
      for (let i = 0; i < N.warmup; i++) await onePlusOne(filled)
      await measure(`${total.toLocaleString('en')} files written by a cell`)
    }
    await filled.kill()
    await fresh.kill()

    await provider.warm()
    const local = await Sandbox.create({ provider })
    await provider.warm()
    for (let i = 0; i < WARMUP; i++) await local.runCode('1 + 1')
    const libraryTrips = await repeat(N.roundTrip, async () => {
      if ((await local.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the library')
    })
    await local.kill()

    // Create from the warm pool: refilled (untimed) before each create, killed (untimed) after.
    const sdkCreates = []
    const libraryCreates = []
    for (let i = 0; i < N.create; i++) {
      await warmRemote()
      let made
      sdkCreates.push(await time(async () => (made = await E2BSandbox.create())))
      await made.kill()
      await provider.warm()
      libraryCreates.push(await time(async () => (made = await Sandbox.create({ provider }))))
      await made.kill()
    }

    const ms = (value) => `${value.toFixed(2)} ms`
    const row = (name, times) => [
      name,
      String(times.length),
      ms(percentile(times, 50)),
      ms(percentile(times, 99)),
    ]
    const p50 = (times) => percentile(times, 50)
    const load = loadavg()[0].toFixed(1)
    console.log(`### E2B-compatible API (${machine()}, load average ${load} when it ended)

The official JS SDK (@e2b/code-interpreter 2.8.0, e2b 2.51.0), unchanged, against \`analyst serve\` in
another process on 127.0.0.1, beside Analyst's library calling a local provider in process.

${table(
  ['operation', 'n', 'p50', 'p99'],
  [
    row(`SDK \`runCode("1 + 1")\`, after ${WARMUP} trips`, sdkTrips),
    row(`SDK \`runCode("1 + 1")\`, the first ${COLD} after the server's start (cold)`, coldTrips),
    row(`library \`runCode("1 + 1")\`, after ${WARMUP} trips`, libraryTrips),
    row('SDK `Sandbox.create()` (warm pool)', sdkCreates),
    row('library `Sandbox.create()` (warm pool)', libraryCreates),
    row('SDK `files.read` (one 100-byte file)', fileCalls.read),
    row('SDK `files.list` (20 files, with metadata)', fileCalls.list),
    row('SDK `files.getInfo` (with metadata)', fileCalls.getInfo),
  ],
)}

\`runCode("1 + 1")\` through the SDK in one sandbox as its workspace fills, in turns with a fresh
sandbox's (goals: within 0.2 ms of the fresh sandbox's p50 with 100,000 files; ≤ 2 ms p50):

${table(
  ["the sandbox's workspace holds", 'n', 'p50', 'p99', 'a fresh sandbox in turns: p50', 'difference at p50'],
  byFiles.map(([files, times]) => [
    files,
    String(times.filled.length),
    ms(p50(times.filled)),
    ms(percentile(times.filled, 99)),
    ms(p50(times.fresh)),
    ms(p50(times.filled) - p50(times.fresh)),
  ]),
)}

A detailed \`files.list\` takes ${(p50(fileCalls.list) / p50(fileCalls.read)).toFixed(2)}× a read at p50, \`getInfo\` ${(p50(fileCalls.getInfo) / p50(fileCalls.read)).toFixed(2)}×.

HTTP and the SDK add ${ms(p50(sdkTrips) - p50(libraryTrips))} to a round trip and ${ms(p50(sdkCreates) - p50(libraryCreates))} to a create at p50 (goals: round trip ≤ 3 ms, create ≤ 20 ms at p50; E2B's cloud gives ~150 ms for a create, their figure, not measured here).`)
  } finally {
    await provider.close()
    child.send('close')
  }
}
