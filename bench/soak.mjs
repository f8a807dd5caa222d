#!/usr/bin/env node
// The soak (issue #37): 30 minutes of churn at 16 people at once against `analyst serve` with the
// fake OpenAI-compatible model, each person over and over creating a session, uploading the sample
// data, asking three questions and deleting it; every minute the server's RSS, open files and
// sockets, processes, sandbox cgroups, temporary folders and database handles, and its heap after a
// full collection (test/support/heap-probe.mjs) beside what V8 keeps committed. Goal: the counts
// return to their baseline, and RSS grows by no more than 10% after the first five minutes.
// It runs test/server/soak.test.ts for longer (the fake model and the sampling live in test/support,
// in TypeScript); CI runs that file's one-minute version.
// Usage: node bench/soak.mjs [--minutes N] [--people N]   (run `npm run build` first)
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { machine, table } from './util.mjs'

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name)
  return at > 0 ? Number(process.argv[at + 1]) : fallback
}
const minutes = arg('--minutes', 30)
const people = arg('--people', 16)
const dir = mkdtempSync(join(tmpdir(), 'analyst-soak-report-'))
const report = join(dir, 'soak.json')
const ran = spawnSync('npx', ['vitest', 'run', 'test/server/soak.test.ts'], {
  env: {
    ...process.env,
    ANALYST_SOAK_SECONDS: String(minutes * 60),
    ANALYST_SOAK_PEOPLE: String(people),
    ANALYST_SOAK_SAMPLE_SECONDS: '60',
    ANALYST_SOAK_REPORT: report,
  },
  stdio: ['ignore', 'inherit', 'inherit'],
})
const result = JSON.parse(readFileSync(report, 'utf8'))
rmSync(dir, { recursive: true, force: true })

const settled = (s, when) => ({ ...s, atSeconds: `${(s.atSeconds / 60).toFixed(1)} (${when}, settled)` })
const rows = [
  ...result.samples.filter((s) => s.atSeconds < result.middle.atSeconds),
  settled(result.middle, 'halfway'),
  ...result.samples.filter((s) => s.atSeconds > result.middle.atSeconds),
  settled(result.after, 'end'),
].map((s) => [
  typeof s.atSeconds === 'number' ? (s.atSeconds / 60).toFixed(1) : s.atSeconds,
  s.rssMiB,
  s.heapUsedMiB,
  s.heapTotalMiB,
  s.fds,
  s.sockets,
  s.processes,
  s.cgroups,
  s.tempFolders,
  s.databaseFiles,
  s.cycles,
  s.failures,
])
const atFive = result.samples.find((s) => s.atSeconds >= 300) ?? result.samples[1] ?? result.baseline
const growth = (result.after.rssMiB / atFive.rssMiB - 1) * 100
const heapGrowth = (result.after.heapUsedMiB / result.middle.heapUsedMiB - 1) * 100
const signed = (value) => `${value >= 0 ? '+' : ''}${value.toFixed(1)}%`
console.log(`### Soak: ${minutes} min at ${people} people, ${machine()}\n`)
console.log(
  table(
    [
      'minute',
      'RSS MiB',
      'heap after GC MiB',
      'heap committed MiB',
      'fds',
      'sockets',
      'processes',
      'cgroups',
      'temp folders',
      'db handles',
      'cycles',
      'failed',
    ],
    rows,
  ),
)
console.log(
  `\nRSS after the churn against minute ${(atFive.atSeconds / 60).toFixed(0)}: ${signed(growth)} (goal ≤ 10%); the heap after a full collection, every session gone, at the end against halfway: ${signed(heapGrowth)} (${result.middle.heapUsedMiB} → ${result.after.heapUsedMiB} MiB; ${result.baseline.heapUsedMiB} MiB before the churn). Counts against the baseline: processes ${result.after.processes}/${result.baseline.processes}, cgroups ${result.after.cgroups}/${result.baseline.cgroups}, temporary folders ${result.after.tempFolders}/${result.baseline.tempFolders}, fds ${result.after.fds}/${result.baseline.fds}, database handles ${result.after.databaseFiles}/${result.baseline.databaseFiles}. ${result.failures.length} failed cycles${result.failures.length ? `: ${[...new Set(result.failures)].slice(0, 3).join(' | ')}` : ''}. The test's checks: ${ran.status === 0 ? 'passed' : 'FAILED'}.`,
)
