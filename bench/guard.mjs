// Benchmark: the static guard (src/guard) on a typical analysis cell, a 300-line cell and a hostile
// cell, against two baselines measured in the same run: tree-sitter's parse alone (what the checker
// adds on top of parsing) and CPython's own ast.parse of the same code (the cost of a real Python
// parser in Python). Run after `npm run build`: node bench/guard.mjs [--quick]
// Prints a markdown section.
import { spawnSync } from 'node:child_process'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const RUNS = quick ? 200 : 1000
const PYTHON = '/usr/bin/python3'

const TYPICAL = `import pandas as pd
import numpy as np
import matplotlib.pyplot as plt
from scipy import stats

df = pd.read_csv('data/insurance.csv')
df['bmi_cat'] = pd.cut(df['bmi'], bins=[0, 18.5, 25, 30, 100], labels=['under', 'normal', 'over', 'obese'])
summary = df.groupby(['region', 'smoker']).agg(n=('charges', 'size'), mean=('charges', 'mean'))
print(summary.round(2))
r, p = stats.pearsonr(df['age'], df['charges'])
print(f'r={r:.3f}, p={p:.3g}')
fig, ax = plt.subplots(figsize=(8, 5))
df.boxplot(column='charges', by='smoker', ax=ax)
plt.savefig('charges.png', dpi=120)
df.to_csv('clean.csv', index=False)
`

const HOSTILE = `import pandas as pd
reader = open
data = reader('/etc/passwd').read()
exec("import socket\\nsocket.create_connection(('example.com', 80))")
m = __import__('so' + 'cket')
().__class__.__mro__[1].__subclasses__()
`

const LARGE = Array.from({ length: 20 }, (_, i) => TYPICAL.replaceAll('df', `df${i}`)).join('\n')

const { checkCode } = await import('../dist/guard/index.js')
const { pythonParser } = await import('../dist/guard/parser.js')

const t0 = performance.now()
await checkCode('x = 1')
const initMs = performance.now() - t0
const parser = await pythonParser()

function time(fn, runs) {
  const samples = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    fn()
    samples.push(performance.now() - start)
  }
  return samples
}

async function timeAsync(fn, runs) {
  const samples = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await fn()
    samples.push(performance.now() - start)
  }
  return samples
}

/** CPython's ast.parse of the same code, median of `runs`, in ms (timed inside Python). */
function cpythonParseMs(code, runs) {
  const script = `import ast, json, sys, time
code = sys.stdin.read()
samples = []
for _ in range(${runs}):
    t = time.perf_counter(); ast.parse(code); samples.append((time.perf_counter() - t) * 1000)
samples.sort()
print(json.dumps(samples[len(samples) // 2]))`
  const result = spawnSync(PYTHON, ['-c', script], { input: code, encoding: 'utf8' })
  if (result.status !== 0) throw new Error(result.stderr)
  return Number(result.stdout)
}

const rows = []
for (const [name, code] of [
  ['typical cell (15 lines)', TYPICAL],
  ['hostile cell (6 lines, one exec string)', HOSTILE],
  ['large cell (300 lines)', LARGE],
]) {
  const runs = name.startsWith('large') ? Math.ceil(RUNS / 10) : RUNS
  // Warm up the JIT on this input first.
  await timeAsync(() => checkCode(code), 20)
  const check = await timeAsync(() => checkCode(code), runs)
  const parse = time(() => parser.parse(code).delete(), runs)
  const cpython = cpythonParseMs(code, runs)
  const p50 = percentile(check, 50)
  rows.push([
    name,
    `${p50.toFixed(3)} ms`,
    `${percentile(check, 95).toFixed(3)} ms`,
    `${percentile(parse, 50).toFixed(3)} ms`,
    `${(p50 / percentile(parse, 50)).toFixed(1)}×`,
    `${cpython.toFixed(3)} ms`,
    `${(p50 / cpython).toFixed(1)}×`,
  ])
}

const violations = await checkCode(HOSTILE)
const rules = [...new Set(violations.map((v) => v.rule))].join(', ')
const load = loadavg()
  .map((n) => n.toFixed(1))
  .join(', ')
const header = ['cell', 'check p50', 'check p95', 'tree-sitter parse p50', 'check / parse']
header.push('CPython ast.parse p50', 'check / ast.parse')
process.stdout.write(`### Guard: checkCode (${machine()})

First call, including loading the WASM runtime and the Python grammar: ${initMs.toFixed(1)} ms.
The hostile cell yields ${violations.length} violations (${rules}).
Baselines in the same run: tree-sitter's parse alone, and CPython 3.11's ast.parse (timed inside Python).
Load average at the end (shared machine; p95 is mostly other processes): ${load}.

${table(header, rows)}
`)
