#!/usr/bin/env node
// The grid's paging over a frame the kernel keeps (src/session/frames.ts): a 10,000,000-row
// DataFrame result, its first page, and a page sorted by a float column, against pandas'
// sort_values + iloc timed inside the same kernel in the same run.
// Usage: node bench/grid.mjs [--quick]   (run `npm run build` first)
import { LocalProvider, Sandbox } from '../dist/index.js'
import { framePage } from '../dist/session/frames.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const ROWS = quick ? 1_000_000 : 10_000_000
const N = { first: quick ? 10 : 30, sorted: quick ? 3 : 7 }

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
for (let i = 0; i < N.first; i++) first.push(await time(() => framePage(sandbox, frame.id, { offset: 0, limit: 50 })))
const deep = []
for (let i = 0; i < N.first; i++)
  deep.push(await time(() => framePage(sandbox, frame.id, { offset: ROWS - 50, limit: 50 })))
const sorted = []
const pandas = []
for (let i = 0; i < N.sorted; i++) {
  sorted.push(await time(() => framePage(sandbox, frame.id, { sort: '-value', offset: 1000, limit: 50 })))
  const run = await sandbox.runCode(
    "import time as _t\n_s = _t.perf_counter()\n_p = big.sort_values('value', ascending=False, kind='stable').iloc[1000:1050]\nprint((_t.perf_counter() - _s) * 1000)",
    { timeoutMs: 120_000 },
  )
  pandas.push(Number(run.logs.stdout.join('').trim()))
}
await sandbox.kill()
await provider.close()

const ms = (v) => `${v.toFixed(2)} ms`
const p50 = (v) => percentile(v, 50)
console.log(`\n## Grid paging over a kept frame (${machine()})\n`)
console.log(`${ROWS.toLocaleString('en')} rows (int64, float64, int64); load ${(await import('node:os')).loadavg()[0].toFixed(1)}\n`)
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
    ],
  ),
)
