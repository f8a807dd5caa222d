#!/usr/bin/env node
import { loadavg } from 'node:os'
// Sandboxes in a template (Debian trixie, Python 3.13) against the host's, in the same run, turn
// about, no pool: create, create + first pandas cell, and idle memory (PSS) over many sandboxes.
// Host sandboxes fork from the host's zygote (the default as root) and, as a baseline, spawn; a
// template's fork from its own zygote (root of a user namespace only: src/sandbox/local/zygote.ts)
// and, as a baseline, spawn.
// Usage: node bench/template.mjs [--quick] [--template NAME] [--dist DIR]   (root; `npm run build`
// first; the template from ANALYST_HOME, default the tests' trixie template in .cache/analyst-home;
// --dist: another build, e.g. a scratch worktree's dist/, for runs in turns against this one)
import { join, resolve } from 'node:path'
import { descendants, machine, percentile, pssKiB, table } from './util.mjs'

const distAt = process.argv.indexOf('--dist')
const dist = distAt > 0 ? resolve(process.argv[distAt + 1]) : join(import.meta.dirname, '..', 'dist')
const { LocalProvider, Sandbox } = await import(join(dist, 'index.js'))
const { stopZygotes } = await import(join(dist, 'sandbox', 'local', 'zygote.js'))

if (process.geteuid?.() !== 0) {
  console.log('### Sandboxes in a template\n\nSkipped: needs root (per-sandbox uids, the zygote).')
  process.exit(0)
}
const quick = process.argv.includes('--quick')
const named = process.argv.indexOf('--template')
const template = named > 0 ? process.argv[named + 1] : 'test-trixie'
const home = process.env.ANALYST_HOME || join(import.meta.dirname, '..', '.cache', 'analyst-home')
const N = { create: quick ? 5 : 15, idle: quick ? 10 : 30 }
const PANDAS = "import pandas as pd\nint(pd.DataFrame({'a': [1, 2, 3]}).a.sum())"
const load = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(', ')
const loadBefore = load()

const paths = {
  'host, forked': { provider: new LocalProvider({ poolSize: 0, coldStart: 'fork', home }) },
  'host, spawned': { provider: new LocalProvider({ poolSize: 0, coldStart: 'spawn', home }) },
  [`template ${template}, forked`]: {
    provider: new LocalProvider({ poolSize: 0, coldStart: 'fork', home }),
    template,
  },
  [`template ${template}, spawned`]: {
    provider: new LocalProvider({ poolSize: 0, coldStart: 'spawn', home }),
    template,
  },
}
const create = ({ provider, template }) => Sandbox.create({ provider, ...(template ? { template } : {}) })

// The zygote starts, and the template is probed, once: not part of any create measured.
for (const path of Object.values(paths)) await (await create(path)).kill()

const times = Object.fromEntries(Object.keys(paths).map((name) => [name, { create: [], ready: [] }]))
for (let i = 0; i < N.create; i++) {
  for (const [name, path] of Object.entries(paths)) {
    const start = performance.now()
    const sandbox = await create(path)
    const created = performance.now()
    const run = await sandbox.runCode(PANDAS)
    const ready = performance.now()
    if (run.text !== '6') throw new Error(`${name}: pandas cell gave ${run.text ?? run.error?.value}`)
    times[name].create.push(created - start)
    times[name].ready.push(ready - start)
    await sandbox.kill()
  }
}

// Forked creates two ways: after the zygote was idle (it makes the jail shell of the next sandbox
// then: analyst_zygote.py), and back to back (each created as soon as the one before is killed,
// before the zygote may have made it).
const pace = Object.fromEntries(
  Object.keys(paths)
    .filter((name) => name.endsWith('forked'))
    .map((name) => [name, { idle: [], backToBack: [] }]),
)
for (let i = 0; i < N.create; i++) {
  for (const name of Object.keys(pace)) {
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const kind of ['idle', 'backToBack']) {
      const start = performance.now()
      const sandbox = await create(paths[name])
      pace[name][kind].push(performance.now() - start)
      await sandbox.kill()
    }
  }
}

const idle = {}
for (const [name, path] of Object.entries(paths)) {
  // Only this path's zygote runs while it is measured, started before (it is not a sandbox's).
  await stopZygotes()
  if (name.endsWith('forked')) await (await create(path)).kill()
  const before = pssKiB(descendants())
  const sandboxes = []
  for (let i = 0; i < N.idle; i++) sandboxes.push(await create(path))
  for (const sandbox of sandboxes) await sandbox.runCode('import pandas, matplotlib.pyplot')
  idle[name] = (pssKiB(descendants()) - before) / 1024 / N.idle
  await Promise.all(sandboxes.map((sandbox) => sandbox.kill()))
}
await stopZygotes()
await Promise.all(Object.values(paths).map(({ provider }) => provider.close()))

const p = (values, q) => percentile(values, q).toFixed(0)
const base = 'host, forked'
const rows = Object.keys(paths).map((name) => [
  name,
  `${p(times[name].create, 50)} / ${p(times[name].create, 99)}`,
  `${p(times[name].ready, 50)} / ${p(times[name].ready, 99)}`,
  `${idle[name].toFixed(1)} MiB`,
  `${(percentile(times[name].create, 50) / percentile(times[base].create, 50)).toFixed(2)}× / ${(idle[name] / idle[base]).toFixed(2)}×`,
])
console.log(
  [
    `### Sandboxes in a template against the host's (${machine()}${quick ? ', quick run' : ''}${distAt > 0 ? `, ${dist}` : ''})`,
    '',
    `${N.create} creates per path, turn about, each killed before the next; then ${N.idle} idle sandboxes per path (pandas and pyplot imported). Goals for a template: create ≤ 50 ms p50, idle ≤ 16 MiB PSS. Load average before/after: ${loadBefore} / ${load()}.`,
    '',
    table(
      [
        'path',
        'create p50 / p99 (ms)',
        'create + pandas cell p50 / p99 (ms)',
        'idle PSS per sandbox',
        'create / idle vs host forked',
      ],
      rows,
    ),
    '',
    `Forked creates after the zygote was idle 300 ms (it has made the next sandbox's jail shell) and back to back (the next create as soon as the one before is killed), turn about; create p50 / p99 (ms):`,
    '',
    table(
      ['path', 'after idle', 'back to back'],
      Object.entries(pace).map(([name, { idle, backToBack }]) => [
        name,
        `${p(idle, 50)} / ${p(idle, 99)}`,
        `${p(backToBack, 50)} / ${p(backToBack, 99)}`,
      ]),
    ),
  ].join('\n'),
)
