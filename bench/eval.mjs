#!/usr/bin/env node
// `analyst eval`'s own cost per question: every InfiAgent-DABench question answered by an instant
// scripted model (recorded replies: one cell that reads the question's table, then an answer), so
// what is measured is the harness: sessions, data, sandboxes, cells, scoring and the store. The
// command runs at concurrency 1 and 2, each over all 257 questions; the baseline, in the same run,
// is `analyst ask` started once per question with the same replies, what a shell loop would do.
// Usage: node bench/eval.mjs [--quick] [--baseline N]
//   --quick: 40 questions per eval run, 8 for the baseline. --baseline N: questions for the baseline
//   (default 30, spread over the set; it costs a whole process and a cold kernel per question).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { benchmarkPrompt, loadEvalSet } from '../dist/eval/index.js'
import { machine, percentile, table } from './util.mjs'

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const baselineCount = Number(args[args.indexOf('--baseline') + 1]) || (quick ? 8 : 30)
const BIN = resolve(new URL('../dist/cli/bin.js', import.meta.url).pathname)
const ROOT = new URL('..', import.meta.url).pathname
const DABENCH = [
  process.env.DABENCH_DIR,
  join(ROOT, '../shared/datasets/dabench'),
  '/work/shared/datasets/dabench',
].find((dir) => dir && existsSync(join(dir, 'tables')))
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

if (!DABENCH) {
  console.log(
    '### analyst eval: harness cost per question\n\nSkipped: InfiAgent-DABench not found (set DABENCH_DIR).',
  )
  process.exit(0)
}

const set = await loadEvalSet(DABENCH)
const questions = quick ? set.questions.slice(0, 40) : set.questions
const work = mkdtempSync(join(tmpdir(), 'analyst-bench-eval-'))
const CELL =
  "import os\nimport pandas as pd\ndf = pd.read_csv('data/' + os.listdir('data')[0])\nprint(df.shape)"
const replies = [{ code: CELL }, { text: 'The table is read.\n@answer[1]' }]
writeFileSync(join(work, 'eval-replies.json'), JSON.stringify({ '*': replies }))
writeFileSync(join(work, 'ask-replies.json'), JSON.stringify(replies))

function analyst(argv, home) {
  const started = performance.now()
  const result = spawnSync(process.execPath, [BIN, ...argv], {
    cwd: work,
    env: { ...process.env, ANALYST_HOME: home, NO_COLOR: '1' },
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  })
  const wall = (performance.now() - started) / 1000
  if (result.status !== 0 && result.status !== 1) {
    throw new Error(`analyst ${argv[0]} failed (exit ${result.status}): ${result.stderr.slice(-2000)}`)
  }
  return { wall, stdout: result.stdout }
}

function evalRun(concurrency) {
  const home = join(work, `home-eval-${concurrency}`)
  const ids = quick ? ['--limit', String(questions.length)] : []
  const { wall, stdout } = analyst(
    [
      'eval',
      DABENCH,
      '--replay',
      join(work, 'eval-replies.json'),
      '--concurrency',
      String(concurrency),
      '--json',
      ...ids,
    ],
    home,
  )
  const report = JSON.parse(stdout)
  if (report.results.length !== questions.length || report.errors > 0)
    throw new Error(
      `eval at concurrency ${concurrency}: ${report.results.length} results, ${report.errors} crashed`,
    )
  return { wall, perQuestion: report.results.map((r) => r.durationMs / 1000) }
}

function baseline() {
  const home = join(work, 'home-ask')
  const step = Math.max(1, Math.floor(questions.length / baselineCount))
  const sample = questions.filter((_, index) => index % step === 0).slice(0, baselineCount)
  const walls = sample.map(
    (question) =>
      analyst(
        [
          'ask',
          benchmarkPrompt(question),
          '--data',
          join(set.tablesDir, question.fileName),
          '--replay',
          join(work, 'ask-replies.json'),
          '--json',
          '--output-dir',
          join(work, 'ask-output'),
        ],
        home,
      ).wall,
  )
  return { walls, total: walls.reduce((a, b) => a + b, 0) }
}

const before = loadavg()
let rows
try {
  const ask = baseline()
  const askPer = ask.total / ask.walls.length
  const one = evalRun(1)
  const two = evalRun(2)
  const fmt = (s) => s.toFixed(2)
  const minutes = (s) => `${Math.floor(s / 60)} min ${String(Math.round(s % 60)).padStart(2, '0')} s`
  rows = [
    [
      `\`analyst ask\` once per question (${ask.walls.length} questions)`,
      fmt(askPer),
      fmt(percentile(ask.walls, 50)),
      `${minutes(askPer * questions.length)} (projected)`,
      '1.0×',
    ],
    ...[
      ['`analyst eval`, concurrency 1', one],
      ['`analyst eval`, concurrency 2', two],
    ].map(([label, run]) => [
      label,
      fmt(run.wall / questions.length),
      fmt(percentile(run.perQuestion, 50)),
      minutes(run.wall),
      `${(askPer / (run.wall / questions.length)).toFixed(1)}×`,
    ]),
  ]
} finally {
  rmSync(work, { recursive: true, force: true })
}
console.log(
  [
    `### analyst eval: harness cost per question (${machine()}${quick ? ', quick run' : ''})`,
    '',
    `${questions.length} InfiAgent-DABench questions, each in its own session and sandbox, answered by an instant scripted model (one cell that reads the table, then an answer line). Wall time of the whole command; "s/question" is that divided by the questions, "p50 in-run" the median time one question took inside the run (sandbox start, data, cell, scoring, store). Baseline in the same run: \`analyst ask\` started once per question with the same replies. Goal: all 257 under 3 minutes. Load average before/after: ${before} / ${loadavg()} (2 cores, shared).`,
    '',
    table(['what', 's/question', 'p50 in-run s', `all ${questions.length}`, 'vs ask'], rows),
  ].join('\n'),
)
