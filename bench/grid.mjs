#!/usr/bin/env node
// The grid's paging over a frame the kernel keeps (src/session/frames.ts): a 10,000,000-row
// DataFrame result, its first page, and a page sorted by a float column, against pandas'
// sort_values + iloc timed inside the same kernel in the same run; the next page of the same sort
// (the kernel keeps the last selection). Then downloads as CSV and Parquet, streamed part by part,
// of frames of two sizes (1,000,000 and 5,000,000 rows; --quick: 200,000 and 1,000,000): the
// server's memory (RSS) at its peak while it sends, against the file, so a growth with the rows
// shows; an XLSX of more rows than a sheet holds is refused before any byte.
// Usage: node --expose-gc bench/grid.mjs [--quick] [--downloads]   (run `npm run build` first;
// --downloads: the downloads alone)
import { LocalProvider, Sandbox } from '../dist/index.js'
import { frameFile, framePage } from '../dist/session/frames.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const downloadsOnly = process.argv.includes('--downloads')
const SIZES = quick ? [200_000, 1_000_000] : [1_000_000, 5_000_000]
const ROWS = downloadsOnly ? (SIZES.at(-1) ?? 0) : quick ? 1_000_000 : 10_000_000
// The downloads alone: no paging measured.
const N = downloadsOnly ? { first: 0, sorted: 0 } : { first: quick ? 10 : 30, sorted: quick ? 3 : 7 }

const provider = new LocalProvider({ poolSize: 0 })
const sandbox = await Sandbox.create({ provider, limits: { memoryBytes: 4 * 1024 ** 3 } })
const made = await sandbox.runCode(
  [
    'import numpy as np, pandas as pd',
    'rng = np.random.default_rng(1)',
    `big = pd.DataFrame({'id': np.arange(${ROWS}), 'value': rng.normal(size=${ROWS}), 'group': rng.integers(0, 100, ${ROWS})})`,
    'big',
  ].join('\n'),
  { timeoutMs: 300_000 },
)
if (made.error) throw new Error(`${made.error.name}: ${made.error.value}`)
const frame = made.results.find((result) => result.extra?.['analyst/frame'])?.extra['analyst/frame']
if (!frame) throw new Error('the result has no kept frame')

async function time(fn) {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

const first = []
for (let i = 0; i < N.first; i++)
  first.push(await time(() => framePage(sandbox, frame.id, { offset: 0, limit: 50 })))
const deep = []
for (let i = 0; i < N.first; i++)
  deep.push(await time(() => framePage(sandbox, frame.id, { offset: ROWS - 50, limit: 50 })))
const sorted = []
const pandas = []
const nextSorted = []
for (let i = 0; i < N.sorted; i++) {
  // Each sort differs from the last (the kernel keeps only the last selection): a cold sort.
  const descending = i % 2 === 0
  sorted.push(
    await time(() =>
      framePage(sandbox, frame.id, { sort: descending ? '-value' : 'value', offset: 1000, limit: 50 }),
    ),
  )
  nextSorted.push(
    await time(() =>
      framePage(sandbox, frame.id, { sort: descending ? '-value' : 'value', offset: 1050, limit: 50 }),
    ),
  )
  const run = await sandbox.runCode(
    `import time as _t\n_s = _t.perf_counter()\n_p = big.sort_values('value', ascending=${descending ? 'False' : 'True'}, kind='stable').iloc[1000:1050]\nprint((_t.perf_counter() - _s) * 1000)`,
    { timeoutMs: 120_000 },
  )
  pandas.push(Number(run.logs.stdout.join('').trim()))
}

// Downloads of each size, read as a client would and dropped: the server's peak RSS.
const downloads = []
for (const size of SIZES) {
  const made = await sandbox.runCode(
    `big.head(${size}).assign(group=lambda f: 'g' + f['group'].astype(str))`,
    { timeoutMs: 600_000 },
  )
  const kept = made.results.find((result) => result.extra?.['analyst/frame'])?.extra['analyst/frame']
  if (!kept) throw new Error(`no kept frame of ${size} rows: ${made.error?.value}`)
  for (const format of ['csv', 'parquet']) {
    globalThis.gc?.()
    const before = process.memoryUsage().rss
    let peak = before
    let bytes = 0
    const started = performance.now()
    for await (const part of await frameFile(sandbox, kept.id, { sort: '-value' }, format)) {
      bytes += part.length
      peak = Math.max(peak, process.memoryUsage().rss)
    }
    downloads.push({ size, format, bytes, ms: performance.now() - started, grew: peak - before })
  }
  if (size > 1_048_576) {
    const refused = await frameFile(sandbox, kept.id, {}, 'xlsx').then(
      () => 'sent (not refused)',
      (error) => `refused: ${error.message}`,
    )
    downloads.push({ size, format: 'xlsx', said: refused })
  }
}
await sandbox.kill()
await provider.close()

const ms = (v) => `${v.toFixed(2)} ms`
const p50 = (v) => percentile(v, 50)
console.log(`\n## Grid paging over a kept frame (${machine()})\n`)
console.log(
  `${ROWS.toLocaleString('en')} rows (int64, float64, int64); load ${(await import('node:os')).loadavg()[0].toFixed(1)}\n`,
)
if (!downloadsOnly)
  console.log(
    table(
      ['measure', 'p50', 'p99', 'against'],
      [
        ['first page (50 rows)', ms(p50(first)), ms(percentile(first, 99)), 'goal ≤ 50 ms'],
        ['last page (50 rows)', ms(p50(deep)), ms(percentile(deep, 99)), ''],
        [
          'page sorted by value, descending',
          ms(p50(sorted)),
          ms(percentile(sorted, 99)),
          `pandas sort_values + iloc in the same kernel ${ms(p50(pandas))}: ${(p50(sorted) / p50(pandas)).toFixed(2)}× (goal ≤ 1.5×)`,
        ],
        ['the next page of that sort', ms(p50(nextSorted)), ms(percentile(nextSorted, 99)), ''],
      ],
    ),
  )
const mb = (v) => `${(v / 1024 ** 2).toFixed(1)} MB`
console.log('\nDownloads sorted by value, streamed (the server process), each size in its turn:\n')
console.log(
  table(
    ['rows', 'format', 'file', 'time', 'server RSS growth at peak'],
    downloads.map((d) =>
      d.said
        ? [d.size.toLocaleString('en'), d.format, d.said, '', '']
        : [d.size.toLocaleString('en'), d.format, mb(d.bytes), ms(d.ms), mb(d.grew)],
    ),
  ),
)
