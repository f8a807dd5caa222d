#!/usr/bin/env node
// `analyst serve` under load: N concurrent sessions, each uploading the sample data and asking a
// scripted 3-step question over SSE, against a real server on 127.0.0.1 with real sandboxes.
// Baseline in the same run: one session alone. Usage: node bench/server.mjs [--quick]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../dist/server/index.js'
import { ScriptedModel } from '../dist/test/index.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const CONCURRENT = quick ? 10 : 50
const SALES = readFileSync(new URL('../examples/sales.csv', import.meta.url))

const STEPS = [
  "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\nprint(df.shape)",
  "print(df.groupby('region').order_value.sum().round(2))",
  'print(round(df.order_value.mean(), 2))',
]

/** A model shared by all sessions: its reply depends only on how many tool results the prompt holds. */
function responder() {
  const next = (prompt) => {
    const done = prompt.filter((message) => message.role === 'tool').length
    return done < STEPS.length ? { code: STEPS[done] } : { text: 'Mean order value: 692.91.' }
  }
  const once = (options) => new ScriptedModel([next(options.prompt)])
  return {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: 'responder',
    supportedUrls: {},
    doGenerate: (options) => once(options).doGenerate(options),
    doStream: (options) => once(options).doStream(options),
  }
}

async function session(url) {
  const { id } = await (await fetch(`${url}/api/sessions`, { method: 'POST', body: '{}' })).json()
  const form = new FormData()
  form.append('file', new Blob([SALES]), 'sales.csv')
  const uploaded = await fetch(`${url}/api/sessions/${id}/files`, { method: 'POST', body: form })
  if (uploaded.status !== 201) throw new Error(`upload failed: ${uploaded.status}`)
  const started = performance.now()
  const response = await fetch(`${url}/api/sessions/${id}/ask`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question: 'What is the mean order value?' }),
  })
  let firstEvent
  let answered
  let text = ''
  const decoder = new TextDecoder()
  for await (const chunk of response.body) {
    firstEvent ??= performance.now() - started
    text += decoder.decode(chunk, { stream: true })
    if (text.includes('event: done')) answered = performance.now() - started
    if (text.includes('event: failed'))
      throw new Error(`failed: ${text.slice(text.indexOf('event: failed'), 400)}`)
  }
  if (!answered) throw new Error('no answer')
  return { firstEvent, answered }
}

async function round(count) {
  const home = mkdtempSync(join(tmpdir(), 'analyst-bench-server-'))
  const model = responder()
  const server = await startServer({
    port: 0,
    home,
    tokens: [],
    model: async () => ({
      model,
      spec: 'bench:responder',
      provider: 'custom',
      modelId: 'responder',
      mode: 'tools',
    }),
  })
  try {
    const started = performance.now()
    const results = await Promise.all(Array.from({ length: count }, () => session(server.url)))
    const wall = (performance.now() - started) / 1000
    return { results, wall }
  } finally {
    await server.close()
    rmSync(home, { recursive: true, force: true })
  }
}

const alone = await round(1)
const loaded = await round(CONCURRENT)
const first = loaded.results.map((r) => r.firstEvent)
const answer = loaded.results.map((r) => r.answered)
const baseline = alone.results[0]
const row = (label, values, base) => [
  label,
  (percentile(values, 50) / 1000).toFixed(2),
  (percentile(values, 99) / 1000).toFixed(2),
  `${(percentile(values, 50) / base).toFixed(1)}×`,
]
console.log(
  [
    `### Server under load (${machine()}${quick ? ', quick run' : ''})`,
    '',
    `${CONCURRENT} sessions at once, each creating a session, uploading examples/sales.csv and asking a scripted 3-step question over SSE (real sandboxes, warm pool of 2). Baseline: one session alone, in the same run: first event ${(baseline.firstEvent / 1000).toFixed(2)} s, answer ${(baseline.answered / 1000).toFixed(2)} s.`,
    '',
    table(
      ['', 'p50 s', 'p99 s', 'p50 vs alone'],
      [
        row('time to first event', first, baseline.firstEvent),
        row('time to the answer', answer, baseline.answered),
      ],
    ),
    '',
    `- Throughput: ${(CONCURRENT / loaded.wall).toFixed(2)} answered questions per second (${CONCURRENT} in ${loaded.wall.toFixed(1)} s, uploads included).`,
  ].join('\n'),
)
