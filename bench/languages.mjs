#!/usr/bin/env node
// R contexts: `1 + 1` in a sandbox's R context (Analyst's own R kernel, behind the Python kernel,
// in the jail) against Jupyter's raw client (jupyter_client's BlockingKernelClient over ZMQ) on
// IRkernel (Debian's r-cran-irkernel, its kernelspec `ir`), on the same machine, taking turns.
// Also the first cell of a new R context (R's start) for each. Goal: ≤ 1× the raw client at p50.
// Usage: node bench/languages.mjs [--quick]   (run `npm run build` first; `npm run bench` does)
import { spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { createInterface } from 'node:readline'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const ROUNDS = quick ? 5 : 10
const PER_ROUND = quick ? 40 : 100

// The raw client: one IRkernel, `1 + 1` executed and its reply and idle status awaited, as a
// client that wants the result does. Times in ms, one line per request from stdin.
const RAW = `
import sys, time
from jupyter_client.manager import start_new_kernel
started = time.perf_counter()
km, kc = start_new_kernel(kernel_name='ir')
first = time.perf_counter()
def run(code):
    msg_id = kc.execute(code)
    result = None
    while True:
        msg = kc.get_iopub_msg(timeout=30)
        if msg['parent_header'].get('msg_id') != msg_id:
            continue
        if msg['msg_type'] in ('execute_result', 'display_data'):  # IRkernel displays its values
            result = msg['content']['data']['text/plain']
        if msg['msg_type'] == 'status' and msg['content']['execution_state'] == 'idle':
            return result
assert run('1 + 1') == '[1] 2'
print('start %.3f' % ((time.perf_counter() - started) * 1000), flush=True)
for line in sys.stdin:
    n = int(line)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        assert run('1 + 1') == '[1] 2'
        times.append((time.perf_counter() - t) * 1000)
    print(' '.join('%.4f' % x for x in times), flush=True)
kc.stop_channels()
km.shutdown_kernel(now=True)
`

function rawClient() {
  const child = spawn('/usr/bin/python3', ['-c', RAW], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })
  const waiting = []
  lines.on('line', (line) => waiting.shift()?.resolve(line))
  // A client that fails says so on stderr, and the benchmark stops instead of waiting.
  child.on('exit', (code) => {
    for (const wait of waiting.splice(0)) wait.reject(new Error(`the raw client exited (${code})`))
  })
  const next = () => new Promise((resolve, reject) => waiting.push({ resolve, reject }))
  return {
    started: next().then((line) => Number(line.split(' ')[1])),
    async run(n) {
      const reply = next()
      child.stdin.write(`${n}\n`)
      return (await reply).split(' ').map(Number)
    },
    close: () => child.stdin.end(),
  }
}

const load = [loadavg()[0].toFixed(1)]
const provider = new LocalProvider({ poolSize: 0 })
const sandbox = await Sandbox.create({ provider })
await sandbox.runCode('1', { language: 'python' }) // the Python kernel is up: the next cell starts R
let t = performance.now()
const first = await sandbox.runCode('1 + 1', { language: 'r' })
const analystStart = performance.now() - t
if (first.results[0]?.text !== '[1] 2') throw new Error(`unexpected R result: ${JSON.stringify(first)}`)
const raw = rawClient()
const rawStart = await raw.started

const analyst = []
const jupyter = []
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < PER_ROUND; i++) {
    t = performance.now()
    const execution = await sandbox.runCode('1 + 1', { language: 'r' })
    analyst.push(performance.now() - t)
    if (execution.results[0]?.text !== '[1] 2') throw new Error('unexpected R result')
  }
  jupyter.push(...(await raw.run(PER_ROUND)))
}
raw.close()
await sandbox.kill()
await provider.close()
load.push(loadavg()[0].toFixed(1))

const ms = (value) => `${value.toFixed(2)} ms`
const stats = (values) => `${ms(percentile(values, 50))} / ${ms(percentile(values, 99))}`
const ratio = percentile(analyst, 50) / percentile(jupyter, 50)
console.log(`### R contexts: \`1 + 1\` against Jupyter's raw client on IRkernel, ${machine()}

${ROUNDS} rounds of ${PER_ROUND} cells each way, taking turns; load ${load.join(' → ')}.

${table(
  ['client', '`1 + 1` p50 / p99', 'p50 vs raw', 'first cell (R starts)'],
  [
    ['jupyter_client BlockingKernelClient on IRkernel 1.3.2 (ZMQ)', stats(jupyter), '1.00×', ms(rawStart)],
    [
      "Analyst's R context (its own kernel behind the Python kernel, in the jail)",
      stats(analyst),
      `${ratio.toFixed(2)}×`,
      ms(analystStart),
    ],
  ],
)}

Goal ≤ 1× the raw client at p50: ${ratio <= 1 ? 'met' : 'not met'}. The raw client's first cell
counts the kernel's start and its ZMQ handshake; Analyst's counts the R process starting inside a
running sandbox.`)
