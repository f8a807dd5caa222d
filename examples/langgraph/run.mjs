#!/usr/bin/env node
// node examples/langgraph/run.mjs ["question"] [--data FILE]... [--replay [FILE]] [--json]
//
// Runs the LangGraph analyst (graph.mjs) on Analyst's sandbox. The model: OpenAI's, through
// @langchain/openai (npm install @langchain/openai; OPENAI_API_KEY, OPENAI_MODEL, and OPENAI_BASE_URL
// for any OpenAI-compatible server, e.g. a local one), or with --replay
// (or no key) recorded replies played by LangChain's fake chat model. The code runs for real.
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { FakeListChatModel } from '@langchain/core/utils/testing'
import { Sandbox } from 'analyst'
import { describeData } from 'analyst/langchain'
import { buildAnalystGraph } from './graph.mjs'

const here = new URL('.', import.meta.url).pathname
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    data: { type: 'string', multiple: true },
    replay: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
})
const question = positionals[0] ?? 'What is the total order value by region, largest first?'
const data = values.data ?? [`${here}../sales.csv`]
const replay = values.replay ?? (process.env.OPENAI_API_KEY ? undefined : `${here}replies.json`)

async function chooseModel() {
  if (replay) {
    if (!values.replay)
      process.stderr.write(
        'No OPENAI_API_KEY: replaying RECORDED model replies (the code still runs for real).\n',
      )
    return new FakeListChatModel({ responses: JSON.parse(readFileSync(replay, 'utf8')) })
  }
  try {
    const { ChatOpenAI } = await import('@langchain/openai')
    return new ChatOpenAI({ model: process.env.OPENAI_MODEL ?? 'gpt-4.1-mini' })
  } catch {
    process.stderr.write('Install the OpenAI integration first: npm install @langchain/openai\n')
    process.exit(2)
  }
}

const model = await chooseModel()
const sandbox = await Sandbox.create({ data })
try {
  const graph = buildAnalystGraph({ model, sandbox })
  const state = await graph.invoke({ question, data: await describeData(data) })
  if (values.json) {
    const { code, output, error, iterations, answer, images } = state
    const charts = images.length
    process.stdout.write(`${JSON.stringify({ question, code, output, error, iterations, answer, charts })}\n`)
  } else {
    const tries = `${state.iterations} ${state.iterations === 1 ? 'try' : 'tries'}`
    process.stdout.write(`${state.answer}\n\nThe code (${tries}):\n${state.code}\n`)
  }
} finally {
  await sandbox.kill()
}
