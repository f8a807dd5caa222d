#!/usr/bin/env node
// The web UI opening a big session: 200 steps (50 questions of 4 steps) with 50 charts and 50
// grids, in Chromium (playwright-core, Debian's /usr/bin/chromium), against `analyst serve`'s
// server on 127.0.0.1. The chart and the table are real kernel output (one cell run once, in the
// local sandbox); the sessions are written through the store's API, as the session service records
// steps. Timed in the browser with Performance timings: the navigation's domInteractive, the
// session's JSON (resource timing), the page's own mark `analyst:session-shown` (set in an effect
// after the session's runs are rendered), Largest Contentful Paint, then the time a click on a
// step takes to open it. Baseline in the same run: a session of one question, opened in turns with
// the big one (the page's own start on the machine as it is). Goal: interactive in ≤ 1 s.
// Usage: node bench/webui.mjs [--quick]   (run `npm run build` first)
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { LocalProvider, Sandbox } from '../dist/index.js'
import { startServer } from '../dist/server/index.js'
import { openStores } from '../dist/store/index.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const QUESTIONS = 50
const OPENS = quick ? 3 : 7

// One chart and one table, as the kernel makes them.
const provider = new LocalProvider({ poolSize: 0 })
const sandbox = await Sandbox.create({ provider })
const made = await sandbox.runCode(
  [
    'import numpy as np, pandas as pd, matplotlib.pyplot as plt',
    "sales = pd.DataFrame({'region': list('NESWC') * 40, 'value': np.arange(200) * 1.5})",
    "sales.groupby('region')['value'].sum().plot.bar(title='Value by region')",
    'plt.show()',
    "sales.groupby('region').describe()",
  ].join('\n'),
  { timeoutMs: 120_000 },
)
await sandbox.kill()
await provider.close()
if (made.error) throw new Error(`${made.error.name}: ${made.error.value}`)
const chart = made.results.find((result) => result.png)
const frame = made.results.find((result) => result.data)
if (!chart || !frame) throw new Error('the cell made no chart or no table')

const home = mkdtempSync(join(tmpdir(), 'analyst-bench-webui-'))
const stores = await openStores(home, {})
const png = Buffer.from(chart.png, 'base64')
const { sha256, size } = await stores.blobs.put(png)

/** A session of `questions` questions of 4 steps each: a read, a chart, a table, a number. */
async function seed(title, questions) {
  const session = await stores.history.createSession({ title, owner: null })
  let steps = 0
  for (let q = 1; q <= questions; q++) {
    const run = await stores.history.startRun(session.id, `Question ${q}: value by region, and the table`)
    const step = async (code, results, stdout, artifacts = []) =>
      stores.history.commitStep({
        runId: run.id,
        sessionId: session.id,
        step: { step: ++steps, code, stdout, stderr: '', results, durationMs: 120 },
        artifacts,
        blocked: [],
      })
    await step("sales = pd.read_csv('data/sales.csv')\nprint(sales.shape)", [], '(200, 2)\n')
    const image = `step-${steps + 1}-chart-1.png`
    await step(
      "sales.groupby('region')['value'].sum().plot.bar(title='Value by region')",
      [{ isMainResult: false, chart: chart.chart, image }],
      '',
      [{ name: image, kind: 'image', mimeType: 'image/png', size, sha256 }],
    )
    await step(
      "sales.groupby('region').describe()",
      [
        {
          isMainResult: true,
          text: frame.text,
          data: frame.data,
          // The kernel that kept it is gone (as after a restart): the grid says so.
          frame: { id: `gone-${q}`, rows: 5, columns: Object.keys(frame.data).length },
        },
      ],
      '',
    )
    await step("print(sales['value'].mean().round(2))", [], '149.25\n')
    await stores.history.finishRun(run.id, {
      answer: `The mean value is 149.25; the chart and the table of question ${q} show it by region.`,
      incomplete: false,
      unsupportedNumbers: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    })
  }
  return { id: session.id, steps }
}
const big = await seed('A long analysis', QUESTIONS)
// The baseline, opened in turns with the big one: the page's own start on this machine now.
const small = await seed('A short analysis', 1)
await stores.close()

const server = await startServer({
  host: '127.0.0.1',
  port: 0,
  home,
  // No tokens: sessions are nobody's, as the one written above (the server listens on 127.0.0.1).
  tokens: [],
  model: async () => {
    throw new Error('no model: this benchmark asks nothing')
  },
  provider: new LocalProvider({ poolSize: 0 }),
})
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
})
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })

/** Opens a session's page and reads its timings. */
async function open(session) {
  const page = await context.newPage()
  await page.goto(`${server.url}/#/s/${encodeURIComponent(session.id)}`)
  await page.waitForFunction(() => performance.getEntriesByName('analyst:session-shown').length > 0, null, {
    timeout: 60_000,
  })
  // The largest paint of the page's main content (Chromium's Largest Contentful Paint).
  const lcp = await page.evaluate(
    () =>
      new Promise((resolve) => {
        new PerformanceObserver((list) => resolve(list.getEntries().at(-1)?.startTime ?? 0)).observe({
          type: 'largest-contentful-paint',
          buffered: true,
        })
        setTimeout(() => resolve(0), 5000)
      }),
  )
  const timing = await page.evaluate((id) => {
    const navigation = performance.getEntriesByType('navigation')[0]
    const shown = performance.getEntriesByName('analyst:session-shown')[0]
    const detail = performance
      .getEntriesByType('resource')
      .find((entry) => entry.name.endsWith(`/api/sessions/${encodeURIComponent(id)}`))
    const script = performance
      .getEntriesByType('resource')
      .find((entry) => /\/assets\/index-.*\.js$/.test(entry.name))
    return {
      domInteractive: navigation.domInteractive,
      script: script?.responseEnd ?? 0,
      detail: detail?.responseEnd ?? 0,
      detailAsked: detail?.startTime ?? 0,
      resources: performance
        .getEntriesByType('resource')
        .map((entry) => [
          entry.name.replace(location.origin, ''),
          Math.round(entry.startTime),
          Math.round(entry.responseEnd),
        ]),
      detailBytes: detail?.encodedBodySize ?? 0,
      shown: shown.startTime,
      steps: document.querySelectorAll('.step').length,
      charts: document.querySelectorAll('.run figure.chart').length,
      grids: document.querySelectorAll('.frame-grid, .grid-gone').length,
      nodes: document.getElementsByTagName('*').length,
    }
  }, session.id)
  // Interactive: a click on a step's head opens it, timed from the click to the next frame.
  const head = page.locator('.step-head').nth(2)
  const clicked = await head.evaluate(
    (element) =>
      new Promise((resolve) => {
        const start = performance.now()
        element.click()
        requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start)))
      }),
  )
  const asked = performance.now()
  await (await fetch(`${server.url}/api/sessions/${encodeURIComponent(session.id)}`)).arrayBuffer()
  await page.close()
  return { ...timing, lcp, clicked, alone: performance.now() - asked }
}

const opens = []
const baseline = []
for (let i = 0; i < OPENS; i++) {
  opens.push(await open(big))
  baseline.push(await open(small))
}
await browser.close()
await server.close()
rmSync(home, { recursive: true, force: true })

const ms = (v) => `${v.toFixed(0)} ms`
const p50 = (list, key) =>
  percentile(
    list.map((one) => one[key]),
    50,
  )
const row = (label, key, against = '') => [
  label,
  ms(p50(opens, key)),
  ms(Math.max(...opens.map((one) => one[key]))),
  ms(p50(baseline, key)),
  against,
]
const first = opens[0]
if (process.argv.includes('--debug')) console.log(opens.map((open) => open.resources))
console.log(`\n## Web UI: a 200-step session opens (${machine()})\n`)
console.log(
  `${QUESTIONS} questions, ${big.steps} steps, 50 charts, 50 grids, against a session of 1 question (4 steps) opened in turns with it; ${OPENS} opens; drawn at the mark: ${first.steps} steps, ${first.charts} charts, ${first.grids} grids, ${first.nodes} DOM nodes; load ${loadavg()[0].toFixed(1)}\n`,
)
console.log(
  table(
    ['measure', 'p50', 'max', '1-question session p50', 'against'],
    [
      row('the page script received', 'script'),
      row('domInteractive (the page)', 'domInteractive'),
      row("the session's JSON asked for", 'detailAsked'),
      row(`the session's JSON received (${(first.detailBytes / 1024).toFixed(0)} KB)`, 'detail'),
      row("the session's JSON alone, asked from Node (no browser)", 'alone'),
      row(
        'the session shown (mark after its paint)',
        'shown',
        `goal ≤ 1000 ms; ${(p50(opens, 'shown') / p50(baseline, 'shown')).toFixed(2)}× the 1-question session`,
      ),
      row('largest contentful paint', 'lcp'),
      row('a click on a step to the next frame', 'clicked'),
    ],
  ),
)
