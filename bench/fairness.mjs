#!/usr/bin/env node
// CPU shared fairly (issue #37): while four sandboxes spin at 100% CPU, a fifth session's `1 + 1`
// and a scripted 3-step question over `analyst serve`'s HTTP API, against the same on the quiet
// machine in the same run; and a cold create forked from the zygote at that load, against a spawned
// one at the same load. Sandboxes sit under the server's parent cgroup at a CPU weight below the
// server's (src/sandbox/local/cgroup.ts); a sandbox weighs as much as the server while it starts,
// and a cell that has been busy for a while joins the batch class (cpu.idle). The `1 + 1` rounds
// under the spinners alternate between the spinners in the batch class, as the server puts them,
// and the spinners taken out of it by hand (weights alone, as before), in the same run.
// Usage: node bench/fairness.mjs [--quick]   (root for the cgroups; run `npm run build` first)
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { CGROUPS_MARK, getRuntime } from '../dist/sandbox/local/runtime.js'
import { startServer } from '../dist/server/index.js'
import { askOverHttp, newSession, responder } from './sessions.mjs'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const N = { round: quick ? 100 : 300, questions: quick ? 3 : 8, fork: quick ? 5 : 12, spawn: quick ? 3 : 6 }
const SPINNERS = 4
const SALES = readFileSync(new URL('../examples/sales.csv', import.meta.url))
const STEPS = [
  "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(df.shape)",
  "print(df.groupby('region').order_value.sum().round(2))",
  'print(round(df.order_value.mean(), 2))',
]
const load = () => loadavg()[0].toFixed(1)

const responderModel = () => responder(STEPS, 'Mean order value: 692.91.')

const home = mkdtempSync(join(tmpdir(), 'analyst-fairness-'))
const provider = new LocalProvider({ poolSize: 0 })
const spawning = new LocalProvider({ poolSize: 0, coldStart: 'spawn' })
const model = responderModel()
const server = await startServer({
  port: 0,
  home,
  tokens: [],
  provider,
  model: async () => ({ model, spec: 'bench:responder', provider: 'custom', modelId: 'r', mode: 'tools' }),
})

async function ask(id) {
  const asked = await askOverHttp(server.url, id, 'What is the mean order value?')
  if (!asked.ok) throw new Error(`no answer: ${asked.text.slice(-300)}`)
  return asked.ms
}

async function rounds(sandbox, n) {
  const times = []
  for (let i = 0; i < n; i++) {
    const start = performance.now()
    const run = await sandbox.runCode('1 + 1')
    times.push(performance.now() - start)
    if (run.text !== '2') throw new Error(`1 + 1 gave ${run.text}`)
  }
  return times
}

async function creates(from, n) {
  const times = []
  for (let i = 0; i < n; i++) {
    const start = performance.now()
    const sandbox = await Sandbox.create({ provider: from })
    times.push(performance.now() - start)
    await sandbox.kill()
  }
  return times
}

async function measure(sandbox, session, withRounds = true) {
  const round = withRounds ? await rounds(sandbox, N.round) : []
  const questions = []
  for (let i = 0; i < N.questions; i++) questions.push(await ask(session))
  const fork = await creates(provider, N.fork)
  const spawn = await creates(spawning, N.spawn)
  return { round, questions, fork, spawn, load: load() }
}

// Warm: the zygote, the session's sandbox and its first question (its replay-free open).
const fifth = await Sandbox.create({ provider })
const session = await newSession(server.url, SALES, 'sales.csv')
await ask(session)
await creates(provider, 2)

const quiet = await measure(fifth, session)
const spinners = await Promise.all(Array.from({ length: SPINNERS }, () => Sandbox.create({ provider })))
const spinning = spinners.map((sandbox) =>
  sandbox.runCode('while True:\n    pass', { timeoutMs: 3_600_000 }).catch(() => {}),
)
await new Promise((resolve) => setTimeout(resolve, 3000)) // the load average catches up a little
// The spinners' cpu.idle files: the server sets them once a cell has used its CPU (backend.ts).
const idleFiles = spinners.flatMap((sandbox) =>
  readFileSync(join(getRuntime().own, `sb-${sandbox.sandboxId}`, CGROUPS_MARK), 'utf8')
    .split('\n')
    .filter((dir) => dir.includes('/cpu/'))
    .map((dir) => join(dir, 'cpu.idle'))
    .filter((file) => existsSync(file)),
)
const batched = () =>
  idleFiles.length > 0 && idleFiles.every((file) => readFileSync(file, 'utf8').trim() === '1')
for (const deadline = Date.now() + 120_000; !batched() && Date.now() < deadline; )
  await new Promise((resolve) => setTimeout(resolve, 100))
if (!batched())
  throw new Error(`The spinners did not join the batch class (${idleFiles.length} cpu.idle files)`)
const setBatch = (on) => {
  for (const file of idleFiles) writeFileSync(file, on ? '1' : '0')
}
// Alternated in slices, so that the other helpers' load falls on both sides alike.
const weightsOnly = []
const batchRounds = []
for (let slice = 0; slice < 6; slice++) {
  setBatch(slice % 2 === 1)
  ;(slice % 2 === 1 ? batchRounds : weightsOnly).push(...(await rounds(fifth, Math.ceil(N.round / 3))))
}
setBatch(true)
const busy = { ...(await measure(fifth, session, false)), round: batchRounds }
await Promise.all(spinners.map((sandbox) => sandbox.kill()))
await Promise.all(spinning)
await fifth.kill()
await server.close()
await provider.close()
await spawning.close()
rmSync(home, { recursive: true, force: true })

const ms = (value) => `${value.toFixed(1)} ms`
const p = (values, q) => percentile(values, q)
const rows = [
  ['`1 + 1` in a fifth sandbox, p50', ms(p(quiet.round, 50)), ms(p(busy.round, 50)), ''],
  ['`1 + 1` p99 (goal < 10 ms while 4 spin)', ms(p(quiet.round, 99)), ms(p(busy.round, 99)), ''],
  [
    '`1 + 1` p50, the spinners out of the batch class (weights alone)',
    '',
    ms(p(weightsOnly, 50)),
    `batch class: ${(p(busy.round, 50) / p(weightsOnly, 50)).toFixed(2)}×`,
  ],
  [
    '`1 + 1` p99, the spinners out of the batch class (weights alone)',
    '',
    ms(p(weightsOnly, 99)),
    `batch class: ${(p(busy.round, 99) / p(weightsOnly, 99)).toFixed(2)}×`,
  ],
  [
    'a 3-step question over HTTP, p50 (goal ≤ 2× quiet)',
    ms(p(quiet.questions, 50)),
    ms(p(busy.questions, 50)),
    `${(p(busy.questions, 50) / p(quiet.questions, 50)).toFixed(2)}× quiet`,
  ],
  [
    'cold create forked from the zygote, p50 (goal ≤ 0.1× a spawn at load)',
    ms(p(quiet.fork, 50)),
    ms(p(busy.fork, 50)),
    `${(p(busy.fork, 50) / p(busy.spawn, 50)).toFixed(3)}× a spawn under the same load`,
  ],
  ['cold create spawned (bubblewrap + Python), p50', ms(p(quiet.spawn, 50)), ms(p(busy.spawn, 50)), ''],
]
console.log(`### CPU fairness: ${SPINNERS} sandboxes spinning, ${machine()}\n`)
console.log(table(['measure', 'quiet', `${SPINNERS} spinning`, 'ratio'], rows))
console.log(
  `\n${N.round} rounds of \`1 + 1\` quiet, ${batchRounds.length} with the spinners in the batch class and ${weightsOnly.length} out of it (alternated in slices), ${N.questions} questions, ${N.fork} forks and ${N.spawn} spawns per side; load average ${quiet.load} quiet, ${busy.load} with the spinners (1 min).`,
)
