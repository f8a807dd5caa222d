#!/usr/bin/env node
// A/B of the E2B SDK round trip: `runCode('1 + 1')` through the official SDK against two builds of
// `analyst serve` (two dist folders, e.g. a copy of main's and this branch's), each in its own
// process, measured in alternating rounds so that both see the same moments of a busy machine.
// Each server has a fresh sandbox and one whose workspace holds 200 files written through
// `files.write` and 10,000 written by a cell.
// Usage: node bench/e2b-ab.mjs <distA> <distB> [--rounds N] [--trips N]
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Sandbox as E2BSandbox } from '@e2b/code-interpreter'
import { machine, percentile, table } from './util.mjs'

const TOKEN = 'bench-token'
const option = (name, fallback) => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}

/** The server side: one dist's `analyst serve` with a warm pool of one. */
async function serve(dist) {
  const { LocalProvider } = await import(pathToFileURL(join(dist, 'index.js')).href)
  const { startServer } = await import(pathToFileURL(join(dist, 'server/index.js')).href)
  const home = mkdtempSync(join(tmpdir(), 'analyst-bench-e2b-ab-'))
  const provider = new LocalProvider({ poolSize: 1 })
  const server = await startServer({ port: 0, home, tokens: [TOKEN], provider })
  await provider.warm()
  process.on('message', async (message) => {
    if (message === 'warm') {
      await provider.warm()
      process.send('warm')
    } else if (message === 'cpu') {
      const { user, system } = process.cpuUsage()
      process.send({ cpu: user + system })
    } else if (message === 'close') {
      await server.close()
      await provider.close()
      rmSync(home, { recursive: true, force: true })
      process.exit(0)
    }
  })
  process.send({ url: server.url })
}

const serveAt = process.argv.indexOf('--serve')
if (serveAt !== -1) {
  await serve(process.argv[serveAt + 1])
} else {
  const dists = process.argv.slice(2, 4).map((dist) => resolve(dist))
  if (dists.length !== 2)
    throw new Error('Usage: node bench/e2b-ab.mjs <distA> <distB> [--rounds N] [--trips N]')
  const rounds = option('--rounds', 20)
  const trips = option('--trips', 25)
  const sides = []
  for (const dist of dists) {
    const child = fork(fileURLToPath(import.meta.url), ['--serve', dist], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    })
    const reply = () => new Promise((done) => child.once('message', done))
    const { url } = await reply()
    const warm = async () => {
      child.send('warm')
      await reply()
    }
    const connection = { apiUrl: url, sandboxUrl: url, apiKey: TOKEN, timeoutMs: 3_600_000 }
    const fresh = await E2BSandbox.create(connection)
    await warm()
    const filled = await E2BSandbox.create(connection)
    await warm()
    for (let i = 0; i < 200; i++) await filled.files.write(`small/f${i}.txt`, 'x')
    const made = await filled.runCode(
      `import os
for i in range(10_000):
    folder = f'many/{i // 1000}'
    if i % 1000 == 0: os.makedirs(folder, exist_ok=True)
    open(f'{folder}/{i}.txt', 'w').close()`,
      { timeoutMs: 600_000 },
    )
    if (made.error) throw new Error(`writing the files: ${made.error.value}`)
    /** The server's CPU time so far, in microseconds (less bent by a busy machine than wall time). */
    const cpu = async () => {
      child.send('cpu')
      return (await reply()).cpu
    }
    sides.push({ dist, child, cpu, sandboxes: { fresh, filled }, times: { fresh: [], filled: [] }, cpuUs: 0 })
  }
  const onePlusOne = async (sandbox) => {
    if ((await sandbox.runCode('1 + 1')).text !== '2') throw new Error('wrong answer from the SDK')
  }
  for (const side of sides)
    for (let i = 0; i < 50; i++) for (const s of Object.values(side.sandboxes)) await onePlusOne(s)
  const loads = []
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const cpuBefore = await side.cpu()
      for (const kind of ['fresh', 'filled']) {
        for (let i = 0; i < trips; i++) {
          const start = performance.now()
          await onePlusOne(side.sandboxes[kind])
          side.times[kind].push(performance.now() - start)
        }
      }
      side.cpuUs += (await side.cpu()) - cpuBefore
    }
    loads.push(loadavg()[0])
  }
  const ms = (value) => `${value.toFixed(2)} ms`
  const [a, b] = sides
  const rows = []
  for (const kind of ['fresh', 'filled']) {
    for (const side of sides) {
      rows.push([
        `${side === a ? 'A' : 'B'} ${kind}`,
        String(side.times[kind].length),
        ms(percentile(side.times[kind], 50)),
        ms(percentile(side.times[kind], 99)),
      ])
    }
  }
  const ratio = (kind) => (percentile(b.times[kind], 50) / percentile(a.times[kind], 50)).toFixed(3)
  console.log(`E2B SDK \`runCode('1 + 1')\`, A/B in ${rounds} alternating rounds of ${trips} per sandbox (${machine()}, load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)})
A: ${a.dist}
B: ${b.dist}

${table(['server, sandbox', 'n', 'p50', 'p99'], rows)}

B/A at p50: fresh ${ratio('fresh')}, filled ${ratio('filled')}

The server's CPU time per round trip: A ${(a.cpuUs / a.times.fresh.length / 2).toFixed(0)} µs, B ${(b.cpuUs / b.times.fresh.length / 2).toFixed(0)} µs (B/A ${(b.cpuUs / a.cpuUs).toFixed(3)})`)
  for (const side of sides) {
    await side.sandboxes.fresh.kill()
    await side.sandboxes.filled.kill()
    side.child.send('close')
  }
}
