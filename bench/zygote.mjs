#!/usr/bin/env node
// Cold start without a pool: sandboxes forked from the zygote (coldStart 'fork') against
// today's path (a bubblewrap and a Python each, 'spawn'), measured in the same run, turn about.
// Create to ready-for-pandas (create, then a first pandas cell), and idle memory over many sandboxes.
// Usage: node bench/zygote.mjs [--quick]   (root only; run `npm run build` first; `npm run bench` does)
import { loadavg } from 'node:os'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { stopZygotes } from '../dist/sandbox/local/zygote.js'
import { descendants, machine, percentile, pssKiB, table } from './util.mjs'

if (process.geteuid?.() !== 0) {
  console.log('### Zygote\n\nSkipped: forking from the zygote needs root.')
  process.exit(0)
}
const quick = process.argv.includes('--quick')
const N = { create: quick ? 5 : 15, idle: quick ? 10 : 50 }
const PANDAS = "import pandas as pd\npd.DataFrame({'a': [1, 2, 3]}).a.sum()"
const load = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(', ')
const loadBefore = load()

const providers = {
  spawn: new LocalProvider({ poolSize: 0, coldStart: 'spawn' }),
  fork: new LocalProvider({ poolSize: 0, coldStart: 'fork' }),
}

// The zygote starts once, on the first fork: not part of any create measured.
const warmup = await Sandbox.create({ provider: providers.fork })
await warmup.kill()

const times = { spawn: { create: [], ready: [] }, fork: { create: [], ready: [] } }
for (let i = 0; i < N.create; i++) {
  for (const mode of ['fork', 'spawn']) {
    const start = performance.now()
    const sandbox = await Sandbox.create({ provider: providers[mode] })
    const created = performance.now()
    const run = await sandbox.runCode(PANDAS)
    const ready = performance.now()
    if (run.text !== '6') throw new Error(`${mode}: pandas cell gave ${run.text ?? run.error?.value}`)
    times[mode].create.push(created - start)
    times[mode].ready.push(ready - start)
    await sandbox.kill()
  }
}

// Idle memory: proportional set size of every process this Node process started (util.mjs), minus
// what ran before, per sandbox. So the fork path pays for its zygote and launchers here.
const idle = {}
for (const mode of ['fork', 'spawn']) {
  if (mode === 'spawn') await stopZygotes()
  const before = pssKiB(descendants())
  const sandboxes = []
  for (let i = 0; i < N.idle; i++) sandboxes.push(await Sandbox.create({ provider: providers[mode] }))
  for (const sandbox of sandboxes) await sandbox.runCode('import pandas, matplotlib.pyplot')
  const after = pssKiB(descendants())
  idle[mode] = (after - before) / 1024 / N.idle
  await Promise.all(sandboxes.map((sandbox) => sandbox.kill()))
}
await stopZygotes()

const p50 = (values) => percentile(values, 50)
const p99 = (values) => percentile(values, 99)
const ratio = (a, b) => `${(a / b).toFixed(2)}×`
const rows = [
  [
    'create, no pool',
    `${p50(times.fork.create).toFixed(0)} / ${p99(times.fork.create).toFixed(0)}`,
    `${p50(times.spawn.create).toFixed(0)} / ${p99(times.spawn.create).toFixed(0)}`,
    ratio(p50(times.fork.create), p50(times.spawn.create)),
    '≤ 50 ms',
  ],
  [
    'create + first pandas cell (ready for pandas)',
    `${p50(times.fork.ready).toFixed(0)} / ${p99(times.fork.ready).toFixed(0)}`,
    `${p50(times.spawn.ready).toFixed(0)} / ${p99(times.spawn.ready).toFixed(0)}`,
    ratio(p50(times.fork.ready), p50(times.spawn.ready)),
    '',
  ],
  [
    `idle PSS per sandbox, pandas and pyplot imported, over ${N.idle}`,
    `${idle.fork.toFixed(1)} MiB`,
    `${idle.spawn.toFixed(1)} MiB`,
    ratio(idle.fork, idle.spawn),
    '≤ 16 MiB',
  ],
]
console.log(
  [
    `### Zygote against today's cold start (${machine()}${quick ? ', quick run' : ''})`,
    '',
    `${N.create} creates per path, turn about, each killed before the next; then ${N.idle} idle sandboxes per path. Load average before/after: ${loadBefore} / ${load()} (a machine shared with other agents' test runs: times are stretched, the ratios are the point).`,
    '',
    table(['what', 'fork p50 / p99 (ms)', 'spawn p50 / p99 (ms)', 'fork / spawn', 'goal'], rows),
  ].join('\n'),
)
