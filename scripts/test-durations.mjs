#!/usr/bin/env node
// `node scripts/test-durations.mjs`: writes test/durations.json, how long each test file took in
// the last whole run here (vitest keeps that in its results cache under node_modules/.vite). The
// test sequencer (test/support/sequencer.ts) starts the longest files first with it on a fresh
// clone, which has no cache. Run it after a whole `npm test` on a quiet machine.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const cacheRoot = join(root, 'node_modules/.vite/vitest')
const found = readdirSync(cacheRoot, { recursive: true, encoding: 'utf8' }).filter((name) =>
  name.endsWith('results.json'),
)
if (found.length === 0) {
  process.stderr.write('No vitest results cache: run the whole suite first (npm test).\n')
  process.exit(1)
}
const { results } = JSON.parse(readFileSync(join(cacheRoot, found[0]), 'utf8'))
const seconds = Object.fromEntries(
  results
    .filter(([, result]) => result.duration > 0)
    .map(([key, result]) => [key, Math.round(result.duration / 100) / 10])
    .sort(([a], [b]) => (a < b ? -1 : 1)),
)
writeFileSync(join(root, 'test/durations.json'), `${JSON.stringify(seconds, null, 2)}\n`)
process.stdout.write(`test/durations.json: ${Object.keys(seconds).length} files\n`)
