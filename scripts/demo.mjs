#!/usr/bin/env node
// `npm run demo`: asks Analyst about the sample data in examples/ with the configured model; with
// none configured, replays recorded model replies through the same loop and the real sandbox.
import { spawnSync } from 'node:child_process'
import { resolveModel } from '../dist/models/index.js'

const root = new URL('..', import.meta.url).pathname
const question =
  'What is the average order value by customer segment, and how does revenue develop over the year?'
const args = ['dist/cli/bin.js', 'ask', question, '--data', 'examples/sales.csv']

let configured = true
try {
  await resolveModel()
} catch {
  configured = false
}
if (!configured) {
  process.stderr.write(
    '\nNo model is configured (set ANALYST_MODEL or OPENAI_API_KEY, or run Ollama), so this demo replays\n' +
      'RECORDED model replies from examples/demo-replies.json. The code still runs for real in the sandbox.\n\n',
  )
  args.push('--replay', 'examples/demo-replies.json')
}
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
process.exit(result.status ?? 1)
