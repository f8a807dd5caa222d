#!/usr/bin/env node
// MCP benchmark: a `1 + 1` run_python round trip through `analyst mcp` over stdio (the official
// client spawning the built command, as Claude Desktop does), against the same cell in the same run
// through the library (`sandbox.runCode`), analyst/ai's runCell (the guard first) and the session
// service in process (the guard, and the cell recorded in SQLite, as MCP does it). What is left
// over the last is the protocol's own cost: JSON-RPC over pipes, another process.
// Usage: node bench/mcp.mjs [--quick]   (run `npm run build` first; `npm run bench` does)
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { runCell } from '../dist/integrations/ai.js'
import { AllowedFolders, McpConnection } from '../dist/mcp/index.js'
import { SessionService } from '../dist/session/index.js'
import { openStores } from '../dist/store/index.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const N = quick ? 100 : 500
const WARMUP = 30
const CELL = '1 + 1'

async function timed(fn) {
  for (let i = 0; i < WARMUP; i++) await fn()
  const times = []
  for (let i = 0; i < N; i++) {
    const start = performance.now()
    await fn()
    times.push(performance.now() - start)
  }
  return times
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const loadBefore = load()

// The library: one sandbox, runCode; then runCell (the guard, then runCode).
const provider = new LocalProvider({ poolSize: 0 })
const sandbox = await Sandbox.create({ provider })
const library = await timed(async () => {
  const execution = await sandbox.runCode(CELL)
  if (execution.text !== '2') throw new Error(`1 + 1 gave ${execution.text}`)
})
const guarded = await timed(async () => {
  const output = await runCell(sandbox, CELL)
  if (output.text !== '[result] 2') throw new Error(`1 + 1 gave ${output.text}`)
})
await sandbox.kill()

// The session service in process, over a real SQLite history in a temporary home.
const dir = mkdtempSync(join(tmpdir(), 'analyst-bench-mcp-'))
const stores = await openStores(join(dir, 'service'), { HOME: dir })
const service = new SessionService({
  history: stores.history,
  blobs: stores.blobs,
  provider,
  model: async () => {
    throw new Error('no model in this benchmark')
  },
  cacheDir: join(dir, 'cache'),
  idleMs: 0,
})
const session = await service.createSession({ title: 'bench' })
const recorded = await timed(async () => {
  const cell = await service.runCell(session.id, CELL)
  if (cell.execution?.text !== '2') throw new Error(`1 + 1 gave ${cell.execution?.text}`)
})

/** 30 warm-up calls, then N timed, of run_python through an MCP client. */
const runPython = (client) =>
  timed(async () => {
    const result = await client.callTool({ name: 'run_python', arguments: { code: CELL } })
    if (result.content[0]?.text !== '[result] 2') throw new Error(`1 + 1 gave ${JSON.stringify(result)}`)
  })

// MCP in process: the same server on the SDK's in-memory transport (no pipes, no other process).
const connection = await McpConnection.open(service, { folders: AllowedFolders.none })
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
await connection.server.connect(serverSide)
const inMemory = new Client({ name: 'bench', version: '1.0.0' })
await inMemory.connect(clientSide)
const inProcess = await runPython(inMemory)
await inMemory.close()
await service.shutdown()
await stores.close()
await provider.close()

// MCP over stdio: `analyst mcp` in a temporary ANALYST_HOME.
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [new URL('../dist/cli/bin.js', import.meta.url).pathname, 'mcp'],
  env: { PATH: process.env.PATH ?? '', HOME: dir, ANALYST_HOME: join(dir, 'home') },
  cwd: dir,
  stderr: 'ignore',
})
const client = new Client({ name: 'bench', version: '1.0.0' })
await client.connect(transport)
const mcp = await runPython(client)
await client.close()
rmSync(dir, { recursive: true, force: true })

const ms = (v) => `${v.toFixed(3)} ms`
const rows = [
  ['library: sandbox.runCode', library],
  ['library: runCell (guard, then runCode)', guarded],
  ['session service: runCell (guard, recorded)', recorded],
  ['MCP in process: run_python (in-memory transport)', inProcess],
  ['MCP stdio: run_python (analyst mcp)', mcp],
].map(([name, times]) => [
  name,
  ms(percentile(times, 50)),
  ms(percentile(times, 99)),
  `${(percentile(times, 50) / percentile(library, 50)).toFixed(2)}×`,
])
process.stdout.write(
  `### MCP: run_python round trip over stdio (${machine()})\n\n` +
    `\`${CELL}\` on a warm kernel, ${N} calls each after ${WARMUP} untimed; the baseline is sandbox.runCode in the same run. ` +
    `Load average before/after (shared machine): ${loadBefore} / ${load()}.\n\n` +
    `${table(['path', 'p50', 'p99', 'p50 / runCode p50'], rows)}\n`,
)
