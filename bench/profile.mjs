// Benchmark: `analyst profile` on a 1 GiB CSV (and a 100 MiB one) against the plain pattern's
// get_data_schema (pandas nrows=5 for the columns, then a full read_csv to count the rows), in the
// same run. Run after `npm run build`: node bench/profile.mjs [--keep] [--runs N]
// Prints a markdown table; the files are generated under /tmp and removed afterwards unless --keep.
import { spawnSync } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const BIN = join(ROOT, 'dist/cli/bin.js')
const DIR = '/tmp/analyst-bench-profile'
const PYTHON = '/usr/bin/python3'
const args = process.argv.slice(2)
const keep = args.includes('--keep')
const runs = Number(args[args.indexOf('--runs') + 1]) || 5

const CATEGORIES = ['North', 'South', 'East', 'West', 'Central']
const NOTES = ['', 'ok', 'late delivery', '"damaged, returned"', 'gift', 'NA']

/** A CSV of `bytes` bytes (about): ints, floats, dates and text, some quoted with commas, some missing. */
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
      const day = 1 + (id % 28)
      const month = 1 + (id % 12)
      const discount = random() < 0.1 ? '' : (random() * 0.3).toFixed(3)
      chunk += `${id},2023-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')},${CATEGORIES[id % 5]},${(random() * 1000).toFixed(2)},${1 + Math.floor(random() * 20)},${discount},${random() < 0.05 ? 'True' : 'False'},${NOTES[Math.floor(random() * NOTES.length)]}\n`
    }
    written += chunk.length
    if (!out.write(chunk)) await new Promise((resolve) => out.once('drain', resolve))
  }
  await new Promise((resolve) => out.end(resolve))
}

function time(command, commandArgs) {
  const start = process.hrtime.bigint()
  const result = spawnSync('/usr/bin/time', ['-f', '%M', command, ...commandArgs], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  })
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`)
  const rssKb = Number(result.stderr.trim().split('\n').pop())
  return { seconds, rssMb: rssKb / 1024, stdout: result.stdout }
}

const BASELINE = `
import sys, pandas as pd
path = sys.argv[1]
columns = list(pd.read_csv(path, nrows=5).columns)
rows = len(pd.read_csv(path))
print(rows)
`

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

export async function benchProfile() {
  if (!existsSync(BIN)) throw new Error('Build first: npm run build')
  const cases = [
    { name: '100 MiB CSV', path: join(DIR, 'medium.csv'), bytes: 100 * 1024 * 1024 },
    { name: '1 GiB CSV', path: join(DIR, 'big.csv'), bytes: 1024 * 1024 * 1024 },
  ]
  const rows = []
  for (const c of cases) {
    await generate(c.path, c.bytes)
    // Warm the page cache for both sides alike.
    spawnSync('cat', [c.path], { stdio: 'ignore' })
    const profiles = []
    let last
    for (let i = 0; i < runs; i++) {
      last = time(process.execPath, [BIN, 'profile', c.path, '--json'])
      profiles.push(last)
    }
    const profile = JSON.parse(last.stdout)[0]
    const base = time(PYTHON, ['-c', BASELINE, c.path])
    const actualRows = Number(base.stdout.trim())
    const seconds = median(profiles.map((p) => p.seconds))
    rows.push({
      name: c.name,
      size: statSync(c.path).size,
      seconds,
      rss: Math.max(...profiles.map((p) => p.rssMb)),
      baseline: base.seconds,
      baselineRss: base.rssMb,
      rows: profile.rows,
      estimated: Boolean(profile.rowsEstimated),
      actualRows,
    })
  }
  if (!keep) rmSync(DIR, { recursive: true, force: true })
  return rows
}

function table(rows) {
  const lines = [
    '| file | analyst profile (median of ' +
      runs +
      ') | peak RSS | get_data_schema (nrows=5 + full read_csv) | peak RSS | speed-up | rows reported | actual rows |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  for (const r of rows) {
    const error = r.estimated
      ? ` (estimate, ${(((r.rows - r.actualRows) / r.actualRows) * 100).toFixed(2)}% off)`
      : ' (exact)'
    lines.push(
      `| ${r.name} (${(r.size / 2 ** 20).toFixed(0)} MiB) | ${r.seconds.toFixed(3)} s | ${r.rss.toFixed(0)} MB | ${r.baseline.toFixed(2)} s | ${r.baselineRss.toFixed(0)} MB | ${(r.baseline / r.seconds).toFixed(1)}× | ${r.rows.toLocaleString('en-US')}${error} | ${r.actualRows.toLocaleString('en-US')} |`,
    )
  }
  return lines.join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  console.log(
    `Machine: ${cpus().length} cores, ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM; node ${process.version}; ${new Date().toISOString().slice(0, 10)}\n`,
  )
  console.log(table(await benchProfile()))
}
