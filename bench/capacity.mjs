#!/usr/bin/env node
// Sessions held per GB at the memory budget (issue #37): live sessions are opened one after
// another (create, upload the sample data, a one-step question) against `analyst serve`'s HTTP API
// until the budget first pauses an idle one (or refuses a question); that count is what the budget
// holds. Then, with 90% of that many live, the p99 of a question in them.
// Usage: ANALYST_MEMORY_BUDGET=2G node bench/capacity.mjs [--max N]   (root; `npm run build` first)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { LocalProvider } from '../dist/index.js'
import { startServer } from '../dist/server/index.js'
import { askOverHttp, newSession, responder } from './sessions.mjs'
import { machine, percentile, table } from './util.mjs'

if (process.geteuid?.() !== 0) {
  console.log('### Capacity\n\nSkipped: the memory budget needs cgroups (root).')
  process.exit(0)
}
const at = process.argv.indexOf('--max')
const MAX = at > 0 ? Number(process.argv[at + 1]) : 5000
const SALES = readFileSync(new URL('../examples/sales.csv', import.meta.url))
const STEPS = ["import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(len(df))"]
const MiB = 1024 ** 2

const home = mkdtempSync(join(tmpdir(), 'analyst-capacity-'))
const provider = new LocalProvider({ poolSize: 0 })
const model = responder(STEPS, 'There are 400 rows.')
const server = await startServer({
  port: 0,
  home,
  tokens: [],
  provider,
  idleMs: 0,
  model: async () => ({ model, spec: 'bench:responder', provider: 'custom', modelId: 'r', mode: 'tools' }),
})

const ask = (id) => askOverHttp(server.url, id, 'How many rows?')

async function open() {
  const id = await newSession(server.url, SALES, 'sales.csv')
  return { id, ...(await ask(id)) }
}

const loadBefore = loadavg()[0].toFixed(1)
const ids = []
let stopped = 'the --max given'
for (let i = 0; i < MAX; i++) {
  const before = server.service.liveSessions
  const opened = await open()
  if (opened.status === 503) {
    stopped = 'a refusal (503)'
    break
  }
  if (!opened.ok) throw new Error(`question failed: ${opened.text.slice(-300)}`)
  if (server.service.liveSessions <= before) {
    stopped = 'the first pause of an idle session'
    break
  }
  ids.push(opened.id)
}
const held = server.service.liveSessions
const memory = provider.memoryUse()
// 90% of it live: the sessions opened last (the first may have been paused), a question in each of 30.
const live = ids.slice(-Math.floor(held * 0.9))
for (const id of ids.slice(0, ids.length - live.length))
  await fetch(`${server.url}/api/sessions/${id}`, { method: 'DELETE' })
const times = []
for (let i = 0; i < 30; i++) {
  const asked = await ask(live[Math.floor(Math.random() * live.length)])
  if (!asked.ok) throw new Error(`question at 90% failed: ${asked.status} ${asked.text.slice(-300)}`)
  times.push(asked.ms)
}
await server.close()
await provider.close()
rmSync(home, { recursive: true, force: true })

const gib = memory.budgetBytes / 1024 ** 3
console.log(`### Capacity: live sessions at the memory budget, ${machine()}\n`)
console.log(
  table(
    ['measure', 'value'],
    [
      ['memory budget (ANALYST_MEMORY_BUDGET)', `${gib.toFixed(2)} GiB`],
      [`live sessions held (until ${stopped})`, String(held)],
      ['sessions per GiB of budget', (held / gib).toFixed(1)],
      [
        'memory per live session (the parent cgroup / sessions)',
        `${(memory.usedBytes / held / MiB).toFixed(1)} MiB`,
      ],
      [
        `a question at 90% (${live.length} live), p50 / p99`,
        `${percentile(times, 50).toFixed(0)} / ${percentile(times, 99).toFixed(0)} ms`,
      ],
      [
        'on this machine at the default budget (80% of its memory), projected',
        // Only a run the budget stopped says how many fit; one stopped by --max says nothing of it.
        stopped === 'the --max given'
          ? '(stopped by --max)'
          : String(Math.floor((held / gib) * 0.8 * (totalmem() / 1024 ** 3))),
      ],
    ],
  ),
)
console.log(
  `\nLoad average ${loadBefore} → ${loadavg()[0].toFixed(1)}; each session opened with a one-step pandas question.`,
)
