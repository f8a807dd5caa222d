/**
 * `--modal-tool`, `--gpu` and `--image` on every door that runs the analyst: `analyst serve` (as
 * users run it, through real HTTP on 127.0.0.1), `analyst mcp` (spawned over stdio by the official
 * MCP client), `analyst eval` and `analyst ask`; with the fake Modal (src/test/modal-control-plane.ts)
 * for the functions and the sandboxes, and a fake OpenAI-compatible model server for the model.
 * And the mistakes each door says clearly.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Analyst, type AskResult } from '../../src/agent/index.js'
import { ask } from '../../src/cli/commands/ask.js'
import { evalCommand } from '../../src/cli/commands/eval.js'
import { UsageError } from '../../src/cli/errors.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import type { Sandbox } from '../../src/sandbox/index.js'
import type { SessionDetail } from '../../src/server/types.js'
import { loadSessionHistory, openStores } from '../../src/store/index.js'
import { type FakeModal, startFakeModal } from '../../src/test/support/modal-control-plane.js'
import { makeSet } from '../eval/support.js'
import {
  type ChatRequest,
  type FakeOpenAI,
  lastObservation,
  startFakeOpenAI,
} from '../support/fake-openai.js'
import { askAnalyst, textOf } from '../support/mcp.js'
import { startServe } from '../support/serve.js'
import { askOverSse } from '../support/sse.js'

const BIN = resolve('dist/cli/bin.js')
const SALES = resolve('examples/sales.csv')
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 5, 5, 5])
const PAINT = JSON.stringify({ args: ['a red bicycle'] })

let fake: FakeModal
let dir: string
const models: FakeOpenAI[] = []

beforeAll(async () => {
  fake = await startFakeModal()
  fake.deployFunction('sd', 'paint', (args) => ({ prompt: args[0], width: 512, image: PNG }))
  // The SDK reads its server from the environment when a client is made (in-process doors).
  process.env.MODAL_SERVER_URL = fake.url
  dir = mkdtempSync(join(tmpdir(), 'analyst-modal-doors-'))
})
afterAll(async () => {
  delete process.env.MODAL_SERVER_URL
  await fake?.close()
  rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  for (const model of models.splice(0)) await model.close()
})

/** A model that calls the function, then answers with what it returned. */
async function paintingModel(): Promise<FakeOpenAI> {
  const model = await startFakeOpenAI([
    { toolCalls: [{ name: 'modal_sd_paint', arguments: PAINT }] },
    (request) => ({
      content: lastObservation(request).includes('"width": 512')
        ? 'The picture is 512 pixels wide.'
        : 'The call did not come back.',
    }),
  ])
  models.push(model)
  return model
}

/** The names of the tools a model request offered. */
const offered = (request: ChatRequest | undefined) =>
  (request?.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name)

/** The environment of a door: its own home, the fake Modal's credentials and address, the model server. */
function doorEnv(name: string, model?: FakeOpenAI): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    ANALYST_HOME: join(dir, name),
    NO_COLOR: '1',
    OLLAMA_HOST: '127.0.0.1:9',
    MODAL_TOKEN_ID: fake.tokenId,
    MODAL_TOKEN_SECRET: fake.tokenSecret,
    MODAL_SERVER_URL: fake.url,
    ...(model ? { ANALYST_MODEL: 'openai-compatible:fake', ANALYST_BASE_URL: model.url } : {}),
  }
}

/** The CLI run to its end, asynchronously (the fakes answering it live in this process). */
function cli(args: string[], env: Record<string, string>) {
  return promisify(execFile)(process.execPath, [BIN, ...args], { cwd: dir, env, timeout: 120_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  )
}

describe('analyst serve --modal-tool --gpu --image', () => {
  it('offers the function to every session, records its call as a step, and makes sandboxes with the GPU and image', async () => {
    const model = await paintingModel()
    const before = fake.calls.length
    const { child, url } = await startServe(
      [
        '--sandbox',
        'modal',
        '--gpu',
        'T4',
        '--image',
        'registry.example/torch:2',
        '--modal-tool',
        'sd/paint=paints',
      ],
      { ...doorEnv('serve', model), ANALYST_POOL_SIZE: '0' },
    )
    const exited = new Promise((r) => child.once('exit', r))
    try {
      const { id } = (await (await fetch(`${url}/api/sessions`, { method: 'POST', body: '{}' })).json()) as {
        id: string
      }
      const form = new FormData()
      form.append('file', new Blob([readFileSync(SALES)]), 'sales.csv')
      expect((await fetch(`${url}/api/sessions/${id}/files`, { method: 'POST', body: form })).status).toBe(
        201,
      )
      const events = await askOverSse(url, id, 'Paint a red bicycle')
      expect(events.find((e) => e.event === 'answer')?.data.text).toBe('The picture is 512 pixels wide.')
      expect(events).toContainEqual(
        expect.objectContaining({ event: 'stdout', data: expect.objectContaining({ step: 1 }) }),
      )
      // An openai-compatible model works in text mode by default: with --modal-tool, in tools mode.
      expect(offered(model.requests[0])).toEqual(['run_python', 'modal_sd_paint'])

      // Replayed from the store as the API gives it: the call, its result, its file.
      const detail = (await (await fetch(`${url}/api/sessions/${id}`)).json()) as SessionDetail
      const step = detail.runs[0]?.steps[0]
      expect(step?.code).toBe(`# modal_sd_paint(${PAINT})`)
      expect(step?.stdout).toContain('saved as modal_sd_paint-image.png')
      expect(step?.artifacts.map((a) => a.name)).toEqual(['modal_sd_paint-image.png'])
      const file = await fetch(`${url}${step?.artifacts[0]?.url}`)
      expect(new Uint8Array(await file.arrayBuffer())).toEqual(PNG)

      const calls = fake.calls.slice(before)
      const image = calls.find((call) => call.method === 'ImageGetOrCreate')
      expect(image?.request.image.dockerfileCommands).toEqual(['FROM registry.example/torch:2'])
      const created = calls.find((call) => call.method === 'SandboxCreate')
      expect(created?.request.definition.resources.gpuConfig).toMatchObject({ gpuType: 'T4', count: 1 })
    } finally {
      child.kill('SIGTERM')
      await exited
    }
  }, 120_000)

  it('says what is wrong with a malformed or undeployed function, or a GPU on an engine without', async () => {
    const env = doorEnv('serve-mistakes')
    const malformed = await cli(['serve', '--port', '0', '--modal-tool', 'paint'], env)
    expect(malformed).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('"paint" is not a Modal function'),
    })
    expect(malformed.stderr).toContain('--modal-tool APP/FUNCTION')
    const absent = await cli(['serve', '--port', '0', '--modal-tool', 'sd/absent'], env)
    expect(absent).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('No function absent is deployed in the Modal app sd'),
    })
    const noCredentials = await cli(['serve', '--port', '0', '--modal-tool', 'sd/paint'], {
      ...env,
      MODAL_TOKEN_ID: '',
      MODAL_TOKEN_SECRET: '',
    })
    expect(noCredentials).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('Modal credentials are not set'),
    })
    const gpu = await cli(['serve', '--port', '0', '--sandbox', 'local', '--gpu', 'T4'], env)
    expect(gpu).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('The local engine cannot give a GPU'),
    })
    expect(gpu.stderr).not.toMatch(/at .*\.js:\d+/) // no stack trace
  }, 120_000)
})

describe('analyst mcp --modal-tool', () => {
  it("offers the function to ask_analyst's model, and says when one is not deployed", async () => {
    const model = await paintingModel()
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--data', SALES, '--sandbox', 'modal', '--modal-tool', 'sd/paint'],
      env: doorEnv('mcp', model),
      cwd: dir,
      stderr: 'pipe',
    })
    const client = new Client({ name: 'modal-doors', version: '1.0.0' })
    await client.connect(transport)
    try {
      const { result } = await askAnalyst(client, 'Paint a red bicycle')
      expect(textOf(result)).toContain('The picture is 512 pixels wide.')
      expect(offered(model.requests[0])).toEqual(['run_python', 'modal_sd_paint'])
    } finally {
      await client.close()
    }
    const absent = await cli(['mcp', '--modal-tool', 'sd/absent'], doorEnv('mcp'))
    expect(absent).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('No function absent is deployed'),
    })
  }, 120_000)
})

describe('analyst eval --modal-tool', () => {
  it('offers the function for every question, keeps it with the run, and refuses it in text mode', async () => {
    const set = makeSet()
    const model = await paintingModel()
    const env = { ...process.env, ...doorEnv('eval', model) }
    const out: string[] = []
    const stdout = { write: (text: string) => out.push(text) } as unknown as NodeJS.WritableStream
    const stderr = { write: () => true } as unknown as NodeJS.WritableStream
    const common = { concurrency: 1, json: true, cwd: dir, env, stdout, stderr, interactive: false }
    try {
      const code = await evalCommand({
        ...common,
        dir: set.dir,
        ids: [0],
        model: 'openai-compatible:fake',
        modalTool: ['sd/paint'],
      })
      expect(code).toBe(0)
      expect(offered(model.requests[0])).toEqual(['run_python', 'modal_sd_paint'])
      const report = JSON.parse(out.join('')) as { runId: string; results: Array<{ sessionId: string }> }
      const stores = await openStores(env.ANALYST_HOME as string, env)
      try {
        const history = await loadSessionHistory(stores.history, report.results[0]?.sessionId as string)
        expect(history?.runs[0]?.steps[0]?.code).toBe(`# modal_sd_paint(${PAINT})`)
        expect((await stores.evals.getEvalRun(report.runId))?.settings).toMatchObject({
          modalTools: ['sd/paint'],
        })
      } finally {
        await stores.close()
      }
      // A resumed run keeps the functions it began with.
      await expect(evalCommand({ ...common, resume: report.runId, modalTool: ['sd/paint'] })).rejects.toThrow(
        /leave out --modal-tool/,
      )
      // Text mode offers no tools: said before any run is recorded.
      const runs = async () => {
        const stores = await openStores(env.ANALYST_HOME as string, env)
        const count = (await stores.evals.listEvalRuns()).length
        await stores.close()
        return count
      }
      const recorded = await runs()
      const refused = await evalCommand({
        ...common,
        dir: set.dir,
        ids: [0],
        model: 'openai-compatible:fake',
        mode: 'text',
        modalTool: ['sd/paint'],
      }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(UsageError)
      expect((refused as UsageError).message).toMatch(/--modal-tool needs --mode tools/)
      expect(await runs()).toBe(recorded)
    } finally {
      set.remove()
    }
  }, 120_000)
})

describe('analyst ask --modal-tool', () => {
  /** `analyst ask` as the command line passes it, in a home of its own. */
  const askOptions = (home: string) => ({
    question: 'Paint a red bicycle',
    data: [SALES],
    maxSteps: 4,
    vision: false,
    json: true,
    timeoutMs: 30_000,
    guard: true,
    stream: true,
    isolation: 'sandbox' as const,
    cwd: dir,
    env: { ...process.env, ...doorEnv(home) },
  })

  it('calls the function in a Modal sandbox and prints the call as a step of the answer', async () => {
    const replies = join(dir, 'paint-replies.json')
    writeFileSync(
      replies,
      JSON.stringify([
        { toolCall: { name: 'modal_sd_paint', input: PAINT } },
        { code: "import os\nprint(os.path.getsize('modal_sd_paint-image.png'))" },
        { text: 'The picture file has 11 bytes.' },
      ]),
    )
    const out: string[] = []
    const code = await ask({
      ...askOptions('ask-paint'),
      sandbox: 'modal',
      modalTool: ['sd/paint'],
      replay: replies,
      outputDir: join(dir, 'ask-output'),
      stdout: { write: (text: string) => out.push(text) } as unknown as NodeJS.WritableStream,
      stderr: { write: () => true } as unknown as NodeJS.WritableStream,
    })
    expect(code).toBe(0)
    const result = JSON.parse(out.join('')) as Omit<AskResult, 'artifacts'> & {
      artifacts: Array<{ name: string; savedPath?: string }>
    }
    expect(result.answer).toBe('The picture file has 11 bytes.')
    expect(result.steps[0]).toMatchObject({
      tool: { name: 'modal_sd_paint', input: { args: ['a red bicycle'] } },
      execution: { logs: { stdout: [expect.stringContaining('"width": 512')] } },
      artifacts: [expect.objectContaining({ name: 'modal_sd_paint-image.png', size: 11 })],
    })
    expect(result.steps[1]?.execution?.logs.stdout).toEqual(['11\n'])
    // The file the function returned, saved beside the answer like a chart.
    const saved = result.artifacts.find((a) => a.name === 'modal_sd_paint-image.png')?.savedPath
    expect(saved).toContain(join(dir, 'ask-output'))
    expect(new Uint8Array(readFileSync(saved as string))).toEqual(PNG)
  }, 120_000)

  it('refuses text mode and malformed functions before anything starts', async () => {
    const common = askOptions('ask')
    await expect(ask({ ...common, mode: 'text', modalTool: ['sd/paint'] })).rejects.toThrow(
      /--modal-tool needs --mode tools/,
    )
    await expect(ask({ ...common, modalTool: ['sd'] })).rejects.toThrow(/"sd" is not a Modal function/)
  })

  it('a library caller who gives tools in text mode is told, not silently ignored', async () => {
    const tool = {
      name: 'modal_sd_paint',
      description: 'paints',
      inputSchema: {},
      call: async () => ({ observation: '', files: [] }),
    }
    expect(
      () =>
        new Analyst({
          model: new ScriptedModel([]),
          mode: 'text',
          // Never reached: the refusal comes first.
          sandbox: {} as Sandbox,
          dataDescription: '',
          tools: [tool],
        }),
    ).toThrow(/modal_sd_paint need a model that calls tools/)
  })
})
