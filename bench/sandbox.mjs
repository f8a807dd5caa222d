#!/usr/bin/env node
// Sandbox benchmark: create (pool and cold), a `1 + 1` round trip, a pandas cell, memory per idle
// sandbox, each against the plain pattern (a fresh python3 per execution) measured in the same run.
// Usage: node bench/sandbox.mjs [--quick]   (run `npm run build` first; `npm run bench` does)
import { execFileSync, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { findPython } from '../dist/sandbox/local/index.js'
import { getRuntime } from '../dist/sandbox/local/runtime.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const N = {
  pool: quick ? 10 : 30,
  cold: quick ? 3 : 6,
  roundTrip: quick ? 200 : 1000,
  plain: quick ? 5 : 10,
  idle: quick ? 5 : 10,
}

async function time(fn) {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

const python = (await findPython()).executable

// The plain pattern: a fresh interpreter per execution, inheriting the host's environment.
function plain(code) {
  const start = performance.now()
  execFileSync(python, ['-c', code], { stdio: 'ignore' })
  return performance.now() - start
}
const plainBare = Array.from({ length: N.plain }, () => plain('print(1 + 1)'))
const plainPandas = Array.from({ length: N.plain }, () => plain('import pandas as pd\nprint(1 + 1)'))

// Create from a warm pool: the pool is refilled (untimed) before each create.
const pooled = new LocalProvider({ poolSize: 1 })
const poolTimes = []
for (let i = 0; i < N.pool; i++) {
  await pooled.warm()
  let sandbox
  poolTimes.push(await time(async () => (sandbox = await Sandbox.create({ provider: pooled }))))
  await sandbox.kill()
}
await pooled.close()

// Cold create: nothing started in advance (the kernel imports pandas and matplotlib).
const cold = new LocalProvider({ poolSize: 0 })
const coldTimes = []
for (let i = 0; i < N.cold; i++) {
  let sandbox
  coldTimes.push(await time(async () => (sandbox = await Sandbox.create({ provider: cold }))))
  await sandbox.kill()
}

// Round trips on a warm kernel.
const sandbox = await Sandbox.create({ provider: cold })
for (let i = 0; i < 50; i++) await sandbox.runCode('1 + 1')
const roundTrips = []
for (let i = 0; i < N.roundTrip; i++) roundTrips.push(await time(() => sandbox.runCode('1 + 1')))
const pandasCells = []
for (let i = 0; i < N.plain * 5; i++)
  pandasCells.push(await time(() => sandbox.runCode('import pandas as pd\nprint(1 + 1)')))
await sandbox.kill()

// Memory of idle sandboxes: the proportional set size (shared pages split between sharers) of
// every process of each sandbox, found by its uid (root) or its jail's PID namespace.
function pssKiB(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+)/m)?.[1] ?? 0)
  } catch {
    return 0
  }
}
function rssKiB(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)/m)?.[1] ?? 0)
  } catch {
    return 0
  }
}
const idle = await Promise.all(Array.from({ length: N.idle }, () => Sandbox.create({ provider: cold })))
await Promise.all(idle.map((s) => s.runCode('import pandas, matplotlib.pyplot')))
const uids = new Set(
  idle.map((s) => {
    const work = `${getRuntime().own}/sb-${s.sandboxId}/work`
    return Number(spawnSync('stat', ['-c', '%u', work], { encoding: 'utf8' }).stdout.trim())
  }),
)
let pss = 0
let rss = 0
for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
  try {
    const uid = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1])
    if (!uids.has(uid)) continue
  } catch {
    continue
  }
  pss += pssKiB(pid)
  rss += rssKiB(pid)
}
await Promise.all(idle.map((s) => s.kill()))
const pssPerSandboxMiB = pss / 1024 / N.idle
const rssPerSandboxMiB = rss / 1024 / N.idle

const p50 = (values) => percentile(values, 50)
const p99 = (values) => percentile(values, 99)
const rows = [
  ['create from the warm pool', p50(poolTimes), p99(poolTimes), 'target ≤ 10 ms p50'],
  ['create cold (jail + pandas + pyplot)', p50(coldTimes), p99(coldTimes), ''],
  ['`1 + 1` round trip, warm kernel', p50(roundTrips), p99(roundTrips), 'target ≤ 2 ms p50'],
  ['`import pandas; print(1 + 1)`, warm kernel', p50(pandasCells), p99(pandasCells), ''],
  ['plain pattern: fresh python3, `print(1 + 1)`', p50(plainBare), p99(plainBare), 'baseline'],
  ['plain pattern: fresh python3 with pandas', p50(plainPandas), p99(plainPandas), 'baseline'],
]
const speedup = p50(plainPandas) / p50(pandasCells)
const fit = Math.floor((8 * 1024) / pssPerSandboxMiB)
const lines = [
  `### Sandbox (${machine()}${quick ? ', quick run' : ''})`,
  '',
  table(
    ['what', 'p50 ms', 'p99 ms', ''],
    rows.map(([what, a, b, note]) => [what, a.toFixed(2), b.toFixed(2), note]),
  ),
  '',
  `- Per execution with pandas: **${speedup.toFixed(0)}×** faster than a fresh python3 with pandas (target ≥ 100×); a bare \`1 + 1\` round trip is ${(p50(plainBare) / p50(roundTrips)).toFixed(0)}× faster than a fresh python3 without pandas.`,
  `- Idle sandbox (pandas and pyplot imported): ${pssPerSandboxMiB.toFixed(0)} MiB PSS (${rssPerSandboxMiB.toFixed(0)} MiB RSS) over ${N.idle} sandboxes: about **${fit}** fit in 8 GiB.`,
  `- Reference, not measured here: E2B starts a cloud sandbox in about 150 ms.`,
]
console.log(lines.join('\n'))
