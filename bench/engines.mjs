#!/usr/bin/env node
// Sandbox engines side by side: create, a `1 + 1` round trip and a pandas cell (p50/p99) on the
// local engine and on the Jupyter engine (a real Jupyter Server on 127.0.0.1, with and without
// TCP_NODELAY on its kernel sockets). On the same server in the same run, two baselines for the
// Jupyter engine's round trip: a raw WebSocket client speaking the protocol with nothing else,
// and @jupyterlab/services (Jupyter's own client library) over `ws`. The modal engine runs against
// the fake Modal of the tests (src/test/modal-control-plane.ts: Modal's gRPC protocol on 127.0.0.1,
// each exec a local bubblewrap jail): what it shows is the engine's own cost over the protocol
// (the kernel through an exec's stdin/stdout, the workspace listing after each cell), not Modal's
// network or scheduling.
// Usage: node bench/engines.mjs [--quick]   (run `npm run build` first; `npm run bench` does)
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { JupyterProvider } from '../dist/sandbox/jupyter/index.js'
import { kernelSettingsCode } from '../dist/sandbox/jupyter/prelude.js'
import { decodeV1, encodeV1, V1_PROTOCOL } from '../dist/sandbox/jupyter/wire.js'
import { ModalProvider } from '../dist/sandbox/modal/index.js'
import { startJupyterServer } from '../dist/test/support/jupyter-server.js'
import { startFakeModal } from '../dist/test/support/modal-control-plane.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const N = { create: quick ? 3 : 8, roundTrip: quick ? 100 : 400, pandas: quick ? 20 : 80 }
const PANDAS_SETUP =
  "import pandas as pd, numpy as np\ndf = pd.DataFrame({'g': np.arange(100_000) % 7, 'v': np.random.rand(100_000)})"
const PANDAS_CELL = "df.groupby('g')['v'].agg(['mean', 'sum', 'count'])"

async function timed(fn) {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

async function repeat(n, fn) {
  const times = []
  for (let i = 0; i < n; i++) times.push(await timed(fn))
  return times
}

const ms = (value) => `${value.toFixed(1)} ms`
const stats = (times) => `${ms(percentile(times, 50))} / ${ms(percentile(times, 99))}`

/** create, 1 + 1 and the pandas cell through Analyst's Sandbox on one provider. */
async function measureEngine(provider) {
  const creates = []
  for (let i = 0; i < N.create; i++) {
    let sandbox
    creates.push(await timed(async () => (sandbox = await Sandbox.create({ provider }))))
    await sandbox.kill()
  }
  const sandbox = await Sandbox.create({ provider })
  try {
    await sandbox.runCode('1 + 1')
    const roundTrips = await repeat(N.roundTrip, async () => {
      const execution = await sandbox.runCode('1 + 1')
      if (execution.text !== '2') throw new Error(`1 + 1 gave ${execution.text}`)
    })
    await sandbox.runCode(PANDAS_SETUP)
    const pandas = await repeat(N.pandas, async () => {
      const execution = await sandbox.runCode(PANDAS_CELL)
      if (!execution.results[0]?.data) throw new Error('no DataFrame data')
    })
    return { creates, roundTrips, pandas }
  } finally {
    await sandbox.kill()
  }
}

/**
 * The least a client can do: one WebSocket, one execute_request, wait for its reply and idle. In
 * the v1 binary form (the server passes the kernel's messages through) or the JSON form (the
 * server parses each message and serializes it again); on a kernel as it comes, or with the
 * settings the engine's prelude gives its kernels (kernelSettingsCode), to tell the engine's own
 * cost from what those settings save.
 */
async function rawWebSocket(server, { v1, tuned = false }) {
  const headers = { Authorization: `token ${server.token}`, 'Content-Type': 'application/json' }
  const kernel = await (
    await fetch(new URL('api/kernels', server.url), { method: 'POST', headers, body: '{"name":"python3"}' })
  ).json()
  const socket = new WebSocket(
    `${server.url.replace('http', 'ws')}api/kernels/${kernel.id}/channels?session_id=${randomUUID()}`,
    v1 ? [V1_PROTOCOL] : [],
    { headers, perMessageDeflate: false },
  )
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
  socket._socket.setNoDelay(true)
  const waiting = new Map()
  socket.on('message', (data) => {
    const message = v1 ? decodeV1(data) : JSON.parse(data.toString())
    const entry = waiting.get(message.parent_header?.msg_id)
    if (!entry) return
    const type = message.header.msg_type
    if (type === 'execute_reply') entry.reply = true
    if (type === 'status' && message.content.execution_state === 'idle') entry.idle = true
    if (entry.reply && entry.idle) entry.resolve()
  })
  const execute = (code, silent = false) =>
    new Promise((resolve) => {
      const id = randomUUID()
      waiting.set(id, { resolve })
      const message = {
        header: {
          msg_id: id,
          msg_type: 'execute_request',
          username: '',
          session: 's',
          version: '5.3',
          date: '',
        },
        parent_header: {},
        metadata: {},
        content: { code, silent, store_history: !silent, user_expressions: {}, allow_stdin: false },
        channel: 'shell',
      }
      socket.send(v1 ? encodeV1(message) : JSON.stringify(message))
    })
  if (tuned) await execute(kernelSettingsCode(), true)
  return {
    execute,
    close: async () => {
      socket.close()
      await fetch(new URL(`api/kernels/${kernel.id}`, server.url), { method: 'DELETE', headers })
    },
  }
}

/** Jupyter's own client library, as JupyterLab uses it. */
async function jupyterlabServices(server) {
  const { KernelManager, ServerConnection } = await import('@jupyterlab/services')
  const serverSettings = ServerConnection.makeSettings({
    baseUrl: server.url,
    wsUrl: server.url.replace('http', 'ws'),
    token: server.token,
    WebSocket,
    appendToken: true,
  })
  // It logs its connections on the console; this bench's stdout is its report.
  const { log, debug } = console
  console.log = console.debug = () => {}
  const manager = new KernelManager({ serverSettings })
  const kernel = await manager.startNew({ name: 'python3' })
  return {
    execute: (code) => kernel.requestExecute({ code }).done,
    close: async () => {
      await kernel.shutdown()
      manager.dispose()
      Object.assign(console, { log, debug })
    },
  }
}

/** The engine, the raw client and @jupyterlab/services on one server, taking turns each round. */
async function roundTrips(server, provider) {
  const sandbox = await Sandbox.create({ provider })
  const clients = {
    engine: {
      execute: async (code) => {
        if ((await sandbox.runCode(code)).text !== '2') throw new Error('1 + 1 is not 2')
      },
      close: () => sandbox.kill(),
    },
    raw: await rawWebSocket(server, { v1: true }),
    rawTuned: await rawWebSocket(server, { v1: true, tuned: true }),
    rawJson: await rawWebSocket(server, { v1: false }),
  }
  try {
    clients.services = await jupyterlabServices(server)
  } catch (error) {
    process.stderr.write(`[bench] @jupyterlab/services: ${error.message}\n`)
  }
  const names = Object.keys(clients)
  const times = Object.fromEntries(names.map((name) => [name, []]))
  for (const name of names) await clients[name].execute('1 + 1')
  for (let i = 0; i < N.roundTrip; i++) {
    // A different order each round, so that no client always follows the same one.
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length]
      times[name].push(await timed(() => clients[name].execute('1 + 1')))
    }
  }
  for (const client of Object.values(clients)) await client.close()
  return times
}

const load = [
  loadavg()
    .map((value) => value.toFixed(1))
    .join(', '),
]
const recordDir = mkdtempSync(join(tmpdir(), 'analyst-bench-records-'))
const rows = []
const local = await measureEngine(new LocalProvider({ poolSize: 0 }))
rows.push(['local (cold create, no pool)', local])
let baselines
for (const nodelay of [true, false]) {
  const server = await startJupyterServer({ nodelay })
  try {
    const provider = new JupyterProvider({ url: server.url, token: server.token, recordDir })
    process.removeAllListeners('warning') // the engine's notice about isolation, once per provider
    const engine = await measureEngine(provider)
    rows.push([`jupyter, server ${nodelay ? 'with' : 'without'} TCP_NODELAY`, engine])
    if (nodelay) baselines = await roundTrips(server, provider)
  } finally {
    await server.stop()
  }
}
rmSync(recordDir, { recursive: true, force: true })
{
  const fake = await startFakeModal()
  process.env.MODAL_SERVER_URL = fake.url
  try {
    process.removeAllListeners('warning')
    const provider = new ModalProvider({ tokenId: fake.tokenId, tokenSecret: fake.tokenSecret })
    rows.push(['modal, against the fake Modal on 127.0.0.1', await measureEngine(provider)])
  } finally {
    await fake.close()
  }
}
load.push(
  loadavg()
    .map((value) => value.toFixed(1))
    .join(', '),
)

const ratio = (a, b) => `${(percentile(a, 50) / percentile(b, 50)).toFixed(2)}×`
const out = []
out.push(`### Sandbox engines: local, Jupyter and Modal (${machine()})`)
out.push('')
out.push(
  `Create (then kill) ${N.create} times, \`1 + 1\` ${N.roundTrip} times, a pandas group-by on 100,000 rows (\`data\` included) ${N.pandas} times, through \`Sandbox\`. The Jupyter Server is Debian's (jupyter_server 1.23, ipykernel 6.17) on 127.0.0.1, started by the bench. Load average before/after: ${load.join(' / ')} (a shared 2-core machine: other work stretches p99).`,
)
out.push('')
out.push(
  table(
    ['engine', 'create p50 / p99', '`1 + 1` p50 / p99', 'pandas cell p50 / p99'],
    rows.map(([name, r]) => [name, stats(r.creates), stats(r.roundTrips), stats(r.pandas)]),
  ),
)
out.push('')
out.push(
  '`1 + 1` round trip on the same server (with TCP_NODELAY), the clients taking turns in each of the rounds, each on a kernel of its own:',
)
out.push('')
const baselineRows = [
  ['raw WebSocket client, v1 binary form (the protocol and nothing else)', stats(baselines.raw), '1.00×'],
  [
    "raw WebSocket client, v1 form, kernel with the engine's settings",
    stats(baselines.rawTuned),
    ratio(baselines.rawTuned, baselines.raw),
  ],
  ['raw WebSocket client, JSON form', stats(baselines.rawJson), ratio(baselines.rawJson, baselines.raw)],
  [
    "Analyst's jupyter engine (v1 form; results, artifacts scan, caps; its prelude's kernel settings)",
    stats(baselines.engine),
    ratio(baselines.engine, baselines.raw),
  ],
]
if (baselines.services) {
  baselineRows.push([
    '@jupyterlab/services 7.6.6 over ws',
    stats(baselines.services),
    ratio(baselines.services, baselines.raw),
  ])
}
out.push(table(['client', 'p50 / p99', 'p50 vs raw'], baselineRows))
process.stdout.write(`${out.join('\n')}\n`)
