// Benchmark: the whole `analyst profile` process (node dist/cli/bin.js, started directly) on a 1 GiB
// CSV and a 100 MiB one, against the plain pattern's get_data_schema (pandas nrows=5 for the
// columns, then a full read_csv to count the rows) on the same files in the same run.
// Run after `npm run build`: node bench/profile.mjs [--quick] [--keep] [--runs N]
// Prints a markdown section. The files are generated under /tmp, removed afterwards unless --keep.
// --quick: a 256 MiB file instead of both, 3 runs.
import { spawnSync } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { machine, table } from './util.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const BIN = join(ROOT, 'dist/cli/bin.js')
const DIR = '/tmp/analyst-bench-profile'
const PYTHON = '/usr/bin/python3'
const args = process.argv.slice(2)
const quick = args.includes('--quick')
const keep = args.includes('--keep')
const runs = Number(args[args.indexOf('--runs') + 1]) || (quick ? 3 : 7)
const MiB = 1024 * 1024

const REGIONS = ['North', 'South', 'East', 'West', 'Central']
const NOTES = ['', 'ok', 'late delivery', '"damaged, returned"', 'gift', 'NA']

/** A CSV of about `bytes` bytes: ints, floats, dates as text, booleans, text (some quoted, some missing). */
async function generate(path, bytes) {
  if (existsSync(path) && statSync(path).size >= bytes) return
  mkdirSync(dirname(path), { recursive: true })
  const out = createWriteStream(path)
  let written = 0
  let id = 0
  let seed = 42
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648
  }
  const header = 'id,date,region,price,quantity,discount,returned,note\n'
  out.write(header)
  written += header.length
  while (written < bytes) {
    let chunk = ''
    for (let i = 0; i < 20_000; i++) {
      id++
      const date = `2023-${String(1 + (id % 12)).padStart(2, '0')}-${String(1 + (id % 28)).padStart(2, '0')}`
      const discount = random() < 0.1 ? '' : (random() * 0.3).toFixed(3)
      const returned = random() < 0.05 ? 'True' : 'False'
      const note = NOTES[Math.floor(random() * NOTES.length)]
      chunk += `${id},${date},${REGIONS[id % 5]},${(random() * 1000).toFixed(2)},${1 + Math.floor(random() * 20)},${discount},${returned},${note}\n`
    }
    written += chunk.length
    if (!out.write(chunk)) await new Promise((resolve) => out.once('drain', resolve))
  }
  await new Promise((resolve) => out.end(resolve))
}

/** Wall seconds, CPU seconds (user + system) and peak RSS of one process. */
function measure(command, commandArgs) {
  const start = process.hrtime.bigint()
  const result = spawnSync('/usr/bin/time', ['-f', '%U %S %M', command, ...commandArgs], {
    encoding: 'utf8',
    maxBuffer: 64 * MiB,
  })
  const wall = Number(process.hrtime.bigint() - start) / 1e9
  if (result.status !== 0) throw new Error(`${command} ${commandArgs.join(' ')} failed: ${result.stderr}`)
  const [user, system, rssKb] = result.stderr.trim().split('\n').pop().split(' ').map(Number)
  return { wall, cpu: user + system, rssMb: rssKb / 1024, stdout: result.stdout }
}

const BASELINE = `
import sys, pandas as pd
path = sys.argv[1]
columns = list(pd.read_csv(path, nrows=5).columns)
rows = len(pd.read_csv(path))
print(rows)
`

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

export async function benchProfile() {
  if (!existsSync(BIN)) throw new Error('Build first: npm run build')
  const cases = quick
    ? [{ name: 'CSV', path: join(DIR, 'quick.csv'), bytes: 256 * MiB }]
    : [
        { name: 'CSV', path: join(DIR, 'medium.csv'), bytes: 100 * MiB },
        { name: 'CSV', path: join(DIR, 'big.csv'), bytes: 1024 * MiB },
      ]
  const results = []
  for (const c of cases) {
    await generate(c.path, c.bytes)
    spawnSync('cat', [c.path], { stdio: 'ignore' }) // the page cache, warm for both sides alike
    const profiles = []
    for (let i = 0; i < runs; i++)
      profiles.push(measure(process.execPath, [BIN, 'profile', c.path, '--json']))
    const profile = JSON.parse(profiles[profiles.length - 1].stdout)[0]
    const base = measure(PYTHON, ['-c', BASELINE, c.path])
    results.push({
      ...c,
      size: statSync(c.path).size,
      wall: median(profiles.map((p) => p.wall)),
      best: Math.min(...profiles.map((p) => p.wall)),
      cpu: median(profiles.map((p) => p.cpu)),
      rss: Math.max(...profiles.map((p) => p.rssMb)),
      baseline: base,
      rows: profile.rows,
      estimated: Boolean(profile.rowsEstimated),
      actualRows: Number(base.stdout.trim()),
    })
  }
  if (!keep) rmSync(DIR, { recursive: true, force: true })
  return results
}

function report(results, loadBefore, loadAfter) {
  const rows = results.map((r) => {
    const accuracy = r.estimated
      ? `${r.rows.toLocaleString('en-US')} (estimate, ${(((r.rows - r.actualRows) / r.actualRows) * 100).toFixed(2)}% off)`
      : `${r.rows.toLocaleString('en-US')} (exact)`
    return [
      `${r.name} ${(r.size / MiB).toFixed(0)} MiB`,
      `${r.wall.toFixed(3)} s (best ${r.best.toFixed(3)})`,
      `${r.cpu.toFixed(2)} s`,
      `${r.rss.toFixed(0)} MB`,
      `${r.baseline.wall.toFixed(2)} s`,
      `${r.baseline.rssMb.toFixed(0)} MB`,
      `${(r.baseline.wall / r.wall).toFixed(1)}×`,
      accuracy,
      r.actualRows.toLocaleString('en-US'),
    ]
  })
  return [
    `### Profile: analyst profile vs get_data_schema (${machine()})`,
    '',
    `The whole \`node dist/cli/bin.js profile FILE --json\` process, median of ${runs} runs, page cache warm; the baseline (pandas \`nrows=5\`, then a full \`read_csv\` to count rows) once, same files, same run. Load average before/after: ${loadBefore} / ${loadAfter} (other work on this 2-core machine stretches wall times; CPU time is less affected).`,
    '',
    table(
      [
        'file',
        'profile wall',
        'profile CPU',
        'profile peak RSS',
        'baseline wall',
        'baseline peak RSS',
        'speed-up',
        'rows reported',
        'rows (pandas)',
      ],
      rows,
    ),
  ].join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const before = loadavg()
  const results = await benchProfile()
  console.log(report(results, before, loadavg()))
}
