#!/usr/bin/env node
// The analysis loop's own overhead per step: everything but the model's latency and the code's
// run time. A scripted model answers at once and a mock sandbox runs nothing; the time each spends
// is measured and subtracted. Usage: node bench/agent.mjs [--quick]
import { Analyst } from '../dist/agent/index.js'
import { Sandbox } from '../dist/sandbox/index.js'
import { MockSandboxProvider, ScriptedModel } from '../dist/test/index.js'
import { machine, percentile, table } from './util.mjs'

const quick = process.argv.includes('--quick')
const questions = quick ? 30 : 150
const stepsPerQuestion = 4

const provider = new MockSandboxProvider((code) => [
  { type: 'stdout', text: `   segment  value\n0  A        ${code.length}.5\n` },
  { type: 'result', bundle: { 'text/plain': '813.05' }, isMainResult: true },
])
const sandbox = await Sandbox.create({ provider })

async function measure(mode, stream) {
  const overheads = []
  for (let q = 0; q < questions; q++) {
    const script = [
      ...Array.from({ length: stepsPerQuestion - 1 }, (_, i) => ({
        code: `import pandas as pd\nx${i} = ${i}\nprint(x${i})`,
      })),
      { text: 'The answer is 813.05.' },
    ]
    const scripted = new ScriptedModel(script)
    let modelMs = 0
    const timed =
      (fn) =>
      async (...args) => {
        const start = performance.now()
        try {
          return await fn(...args)
        } finally {
          modelMs += performance.now() - start
        }
      }
    const model = {
      specificationVersion: 'v3',
      provider: 'bench',
      modelId: 'scripted',
      supportedUrls: {},
      doGenerate: timed((o) => scripted.doGenerate(o)),
      doStream: timed((o) => scripted.doStream(o)),
    }
    const session = new Analyst({ model, mode, sandbox, dataDescription: 'data/x.csv', stream })
    const sandboxBefore = provider.calls.length
    const start = performance.now()
    for await (const _ of session.ask('What is the value?')) {
      // consume
    }
    const elapsed = performance.now() - start
    const steps = stepsPerQuestion
    if (provider.calls.length - sandboxBefore !== steps - 1) throw new Error('unexpected number of cells')
    overheads.push((elapsed - modelMs) / steps)
  }
  return overheads.slice(Math.floor(questions / 5)) // the first fifth warms up the JIT
}

const rows = []
for (const [mode, stream] of [
  ['tools', false],
  ['tools', true],
  ['text', false],
  ['text', true],
]) {
  const values = await measure(mode, stream)
  rows.push([
    `${mode}, ${stream ? 'streaming' : 'not streaming'}`,
    percentile(values, 50).toFixed(3),
    percentile(values, 99).toFixed(3),
  ])
}
await sandbox.kill()
console.log(
  [
    `### Analysis loop overhead per step (${machine()}${quick ? ', quick run' : ''})`,
    '',
    `Scripted model answering at once, mock sandbox running nothing; model time measured and subtracted. ${questions} questions of ${stepsPerQuestion} steps each. Target ≤ 5 ms p50.`,
    '',
    table(['mode', 'p50 ms/step', 'p99 ms/step'], rows),
  ].join('\n'),
)
