// Tallies the per-file vitest reports in out/ into tally.md and tally.json, with the upstream commits
// that the set-up wrote beside the suites (ci/COMMIT, e2b/COMMIT), and lists every test that did not
// pass with the first line of its failure in failures.txt, for sorting into what is claimed and what is not.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'

const commit = (dir) =>
  existsSync(`${dir}/COMMIT`) ? readFileSync(`${dir}/COMMIT`, 'utf8').trim() : 'unknown'
const commits = { 'e2b-dev/code-interpreter': commit('ci'), 'e2b-dev/E2B': commit('e2b') }
const rows = []
const failures = []
let pass = 0,
  total = 0
for (const f of readdirSync('out')
  .filter((f) => f.endsWith('.json'))
  .sort()) {
  const r = JSON.parse(readFileSync(`out/${f}`, 'utf8'))
  const p = r.numPassedTests,
    t = r.numTotalTests
  pass += p
  total += t
  const name = f.replace(/\.json$/, '').replaceAll('_', '/')
  rows.push(`| ${name} | ${p} | ${t - p} |`)
  for (const file of r.testResults) {
    if (file.message && file.assertionResults.length === 0)
      failures.push(`${name}: the file failed: ${file.message.split('\n')[0]}`)
    for (const a of file.assertionResults)
      if (a.status !== 'passed')
        failures.push(
          `${name} :: ${a.fullName} [${a.status}] ${(a.failureMessages[0] ?? '').split('\n')[0].slice(0, 200)}`,
        )
  }
}
const at = Object.entries(commits)
  .map(([repo, sha]) => `${repo} ${sha}`)
  .join(', ')
const md = `Suites at ${at}.\n\n| file | pass | fail |\n|---|---|---|\n${rows.join('\n')}\n\n**${pass} of ${total} pass**\n`
writeFileSync('tally.md', md)
writeFileSync('tally.json', JSON.stringify({ pass, total, commits, rows }, null, 1))
writeFileSync('failures.txt', `${failures.join('\n')}\n`)
console.log(md)
