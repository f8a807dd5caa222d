#!/usr/bin/env node
// Template builds: a cold build of the shipped `modern` recipe (Debian trixie's analysis stack,
// mmdebstrap and apt from Debian's archive, no cache) and its cached rebuild (the same spec: the
// same id, nothing run), in a fresh ANALYST_HOME. The baseline of the cold build is its own base
// step (mmdebstrap of trixie with python3 alone), measured in the same run.
// Usage: node bench/templates.mjs   (root only; needs Debian's archive; run `npm run build` first)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTemplate, formatBytes } from '../dist/templates/build.js'
import { recipePath } from '../dist/templates/recipes.js'
import { loadAverage, machine, table } from './util.mjs'

if (process.geteuid?.() !== 0) {
  console.log('### Template builds\n\nSkipped: building a template needs root.')
  process.exit(0)
}
const load = loadAverage
const loadBefore = load()
const home = mkdtempSync(join(tmpdir(), 'analyst-bench-templates-'))
const s = (ms) => `${(ms / 1000).toFixed(1)} s`
try {
  const steps = []
  const cold = await buildTemplate(recipePath('modern'), {
    home,
    env: {},
    onProgress: (event) => {
      if (event.type === 'step-end') steps.push(event)
      if (event.type === 'step-end')
        process.stderr.write(`[templates] ${event.title.slice(0, 60)}: ${s(event.elapsedMs)}\n`)
    },
  })
  const base = steps[0]
  const rebuilds = []
  for (let i = 0; i < 5; i++) {
    const again = await buildTemplate(recipePath('modern'), { home, env: {} })
    if (!again.cached || again.template.id !== cold.template.id)
      throw new Error('the rebuild was not from the cache')
    rebuilds.push(again.elapsedMs)
  }
  rebuilds.sort((a, b) => a - b)
  const median = rebuilds[Math.floor(rebuilds.length / 2)]
  const { template } = cold
  console.log(`### Template builds (${machine()})

${table(
  ['measure', 'time', 'against'],
  [
    [
      'cold `modern` build (no cache)',
      s(cold.elapsedMs),
      `${(cold.elapsedMs / base.elapsedMs).toFixed(2)}× its base step alone (mmdebstrap trixie + python3: ${s(base.elapsedMs)})`,
    ],
    [
      'of which the apt step',
      s(steps[1].elapsedMs),
      `${(steps[1].elapsedMs / cold.elapsedMs).toFixed(2)}× the cold build`,
    ],
    [
      'cached rebuild (same spec, p50 of 5)',
      `${median} ms`,
      `${(median / cold.elapsedMs).toFixed(5)}× the cold build`,
    ],
  ],
)}

Size ${formatBytes(template.sizeBytes)}; Python ${template.python.version}; ${Object.entries(
    template.packages,
  )
    .map(([name, version]) => `${name} ${version}`)
    .join(', ')}. Load ${loadBefore} → ${load()}.`)
} finally {
  rmSync(home, { recursive: true, force: true })
}
