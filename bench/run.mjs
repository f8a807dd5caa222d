#!/usr/bin/env node
// `npm run bench`: runs every benchmark and appends what it measured to bench/RESULTS.md.
// Each benchmark is a script that prints a markdown section; `--quick` is passed through.
// RESULTS.md opens with the table of latest figures (kept by hand), then "## Journal of runs":
// new sections go at the end of the file, so always below the table.
import { spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs'

const args = process.argv.slice(2)
const only = args.filter((arg) => !arg.startsWith('--'))
const benches = readdirSync(new URL('.', import.meta.url))
  .filter((name) => name.endsWith('.mjs') && !['run.mjs', 'util.mjs'].includes(name))
  .filter((name) => only.length === 0 || only.some((wanted) => name.startsWith(wanted)))
const sections = []
for (const name of benches) {
  process.stderr.write(`[bench] ${name}\n`)
  const result = spawnSync(
    process.execPath,
    [new URL(name, import.meta.url).pathname, ...args.filter((a) => a.startsWith('--'))],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  if (result.status !== 0) {
    process.stderr.write(`[bench] ${name} failed (exit ${result.status})\n`)
    process.exitCode = 1
    continue
  }
  process.stdout.write(`${result.stdout}\n`)
  sections.push(result.stdout.trim())
}
const results = new URL('RESULTS.md', import.meta.url).pathname
const JOURNAL = '## Journal of runs'
if (sections.length > 0 && !args.includes('--no-record')) {
  if (!existsSync(results)) appendFileSync(results, '# Benchmark results\n\n## Latest figures\n')
  if (!readFileSync(results, 'utf8').split('\n').includes(JOURNAL)) appendFileSync(results, `\n${JOURNAL}\n`)
  const when = `${new Date().toISOString().slice(0, 16).replace('T', ', ')} UTC`
  appendFileSync(results, `\n## Run of ${when}\n\n${sections.join('\n\n')}\n`)
  process.stderr.write(`[bench] appended to ${results}: update its "Latest figures" table\n`)
}
