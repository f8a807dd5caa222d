import { readdirSync, readFileSync, writeFileSync } from 'node:fs'

const rows = []
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
  rows.push(`| ${f.replace(/\.json$/, '').replaceAll('_', '/')} | ${p} | ${t - p} |`)
}
const md = `| file | pass | fail |\n|---|---|---|\n${rows.join('\n')}\n\n**${pass} of ${total} pass**\n`
writeFileSync('tally.md', md)
writeFileSync('tally.json', JSON.stringify({ pass, total, rows }, null, 1))
console.log(md)
