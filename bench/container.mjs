#!/usr/bin/env node
// The container's cost: the same measures on the host and inside the image, in one run, turn
// about: create with no pool (create + `1 + 1`), a `1 + 1` round trip on a warm kernel, and a
// burst of 50 sandboxes (20 with --quick) made at once, each running a pandas cell. Both sides run as uid 1000 (the
// image's user), so both take the unprivileged path (no zygote fork, no per-sandbox uid): the
// ratio is the container's alone. Inside, podman runs with the README's flags. The host side runs in
// a CPU cgroup of its own, as the container does (cpu-group.mjs says why); a third side, the host
// in this process's cgroup as the bench ran before 2026-12-03, shows what that grouping does.
// Usage: node bench/container.mjs [--quick]   (after npm run image; root, to run as uid 1000)
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { groupCpuMs, inCpuGroup } from './cpu-group.mjs'
import { machine, percentile, table } from './util.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const quick = process.argv.includes('--quick')
const N = { create: quick ? 5 : 15, roundTrip: quick ? 200 : 1000, burst: quick ? 20 : 50 }
const PANDAS = "import pandas as pd\npd.DataFrame({'a': [1, 2, 3]}).a.sum()"

/** One side's measures, in this process: `--inner <dist>` (the host's dist/ or the image's). */
async function inner(dist) {
  const { LocalProvider, Sandbox } = await import(join(dist, 'index.js'))
  const provider = new LocalProvider({ poolSize: 0 })
  const create = []
  for (let i = 0; i < N.create; i++) {
    const start = performance.now()
    const sandbox = await Sandbox.create({ provider })
    if ((await sandbox.runCode('1 + 1')).text !== '2') throw new Error('wrong answer')
    create.push(performance.now() - start)
    await sandbox.kill()
  }
  const warm = await Sandbox.create({ provider })
  for (let i = 0; i < 50; i++) await warm.runCode('1 + 1')
  const roundTrip = []
  for (let i = 0; i < N.roundTrip; i++) {
    const start = performance.now()
    await warm.runCode('1 + 1')
    roundTrip.push(performance.now() - start)
  }
  await warm.kill()
  const cpuBefore = groupCpuMs()
  const started = performance.now()
  const answered = await Promise.all(
    Array.from({ length: N.burst }, async () => {
      const sandbox = await Sandbox.create({ provider })
      try {
        if ((await sandbox.runCode(PANDAS)).text !== '6') throw new Error('wrong answer')
        return performance.now() - started
      } finally {
        await sandbox.kill()
      }
    }),
  )
  const burstMs = performance.now() - started
  const burstCpuMs = groupCpuMs() - cpuBefore
  await provider.close?.()
  return { create, roundTrip, burst: answered, burstMs, burstCpuMs }
}

if (process.argv[2] === '--inner') {
  process.stdout.write(`${JSON.stringify(await inner(resolve(process.argv[3])))}\n`)
  process.exit(0)
}

const ROOT = resolve(HERE, '..')
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version
const IMAGE = `localhost/analyst:${VERSION}`
const FLAGS = [
  '--runtime',
  'runc',
  '--ulimit',
  'nofile=20000:20000',
  '--ulimit',
  'nproc=32768:32768',
  '--cap-drop',
  'ALL',
  '--read-only',
  '--security-opt',
  'unmask=/proc/*',
]
const extra = quick ? ['--quick'] : []

function hostSide() {
  const home = mkdtempSync(join(tmpdir(), 'analyst-bench-container-'))
  chmodSync(home, 0o777)
  try {
    const run = spawnSync(
      process.execPath,
      [join(HERE, 'container.mjs'), '--inner', join(ROOT, 'dist'), ...extra],
      {
        uid: 1000,
        gid: 1000,
        env: { PATH: process.env.PATH, HOME: home, TMPDIR: home, ANALYST_HOME: home },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    )
    if (run.status !== 0) throw new Error(`host side failed: ${run.stderr}`)
    return JSON.parse(run.stdout.trim().split('\n').at(-1))
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

/** The host side in a CPU cgroup of its own, like the container's; throws where none can be made. */
function host() {
  const { value, grouped } = inCpuGroup('analyst-bench-host', hostSide)
  if (!grouped)
    throw new Error(
      'no CPU cgroup could be made for the host side: run as root on cgroup v1, or v2 with the cpu controller',
    )
  return value
}

function container() {
  const run = spawnSync(
    'podman',
    [
      'run',
      '--rm',
      ...FLAGS,
      '-v',
      `${HERE}:/bench:ro`,
      '--entrypoint',
      'node',
      IMAGE,
      '/bench/container.mjs',
      '--inner',
      '/opt/analyst-server/dist',
      ...extra,
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  )
  if (run.status !== 0) throw new Error(`container side failed: ${run.stderr}`)
  return JSON.parse(run.stdout.trim().split('\n').at(-1))
}

if (spawnSync('podman', ['image', 'exists', IMAGE]).status !== 0) {
  console.log(`### The container's cost\n\nSkipped: no ${IMAGE} (npm run image first).`)
  process.exit(0)
}
const load = () =>
  loadavg()
    .map((value) => value.toFixed(1))
    .join(', ')
const loadBefore = load()
// Turn about: the machine's other work falls on every side alike. Three rounds in a full run, so
// that the burst's figures (one per round) have a median.
const rounds = quick ? 2 : 3
const runs = { host: [], container: [], ungrouped: [] }
for (let i = 0; i < rounds; i++) {
  runs.host.push(host())
  runs.container.push(container())
  runs.ungrouped.push(hostSide())
}
const SIDES = ['host', 'container', 'ungrouped']
const merged = (side, key) => runs[side].flatMap((run) => run[key])
const cells = ([h, c, u], digits) => [
  `${h.toFixed(digits)} ms`,
  `${c.toFixed(digits)} ms`,
  `${(c / h).toFixed(2)}×`,
  u === undefined ? 'n/a' : `${u.toFixed(digits)} ms (${(c / u).toFixed(2)}×)`,
]
const row = (name, key) => [
  name,
  ...cells(
    SIDES.map((side) => percentile(merged(side, key), 50)),
    1,
  ),
]
/** One figure per round (the burst's wall and CPU time): their median. */
const perRound = (name, key, sides = SIDES) => [
  name,
  ...cells(
    SIDES.map((side) =>
      sides.includes(side)
        ? percentile(
            runs[side].map((run) => run[key]),
            50,
          )
        : undefined,
    ),
    0,
  ),
]
const listed = (side, key) => runs[side].map((run) => Math.round(run[key])).join(', ')
const size = spawnSync('podman', ['image', 'inspect', '--format', '{{.Size}}', IMAGE], {
  encoding: 'utf8',
}).stdout.trim()
console.log(`### The container's cost (${machine()})\n`)
console.log(
  table(
    [
      'measure (p50, or the median of the rounds; every side as uid 1000)',
      'host, own CPU cgroup',
      'container',
      'container / host',
      'host in the root CPU cgroup (container / it)',
    ],
    [
      row('create, no pool (create + `1 + 1`)', 'create'),
      row('`1 + 1` round trip, warm kernel', 'roundTrip'),
      row(`burst of ${N.burst} sandboxes: one answer (create + pandas cell)`, 'burst'),
      perRound(`burst of ${N.burst}: all answered`, 'burstMs'),
      // The root cgroup's CPU time is the whole machine's: no figure for the ungrouped side.
      perRound(`burst of ${N.burst}: CPU time of the side's cgroup`, 'burstCpuMs', ['host', 'container']),
    ],
  ),
)
console.log(
  `\nBurst per round (ms, wall): host ${listed('host', 'burstMs')}; container ${listed('container', 'burstMs')}; host in the root cgroup ${listed('ungrouped', 'burstMs')}. CPU (ms): host ${listed('host', 'burstCpuMs')}; container ${listed('container', 'burstCpuMs')}.`,
)
console.log(
  `\nImage ${IMAGE}: ${Math.round(Number(size) / 1e6)} MB (podman image inspect). Goal ≤ 1.1× on each row. Load ${loadBefore} → ${load()}.`,
)
