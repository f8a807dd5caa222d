/**
 * The MCP server over the session service, through the official client on the SDK's in-memory
 * transport: a mock sandbox and a scripted model (no kernel), a real SQLite store. What every
 * transport shares: the tools, their errors, the resources and their notifications, progress and
 * cancellation, the session's record.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { LanguageModel } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { ModelConfigError } from '../../src/errors.js'
import { AllowedFolders, McpConnection } from '../../src/mcp/index.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import { SessionService } from '../../src/session/index.js'
import { type MockCell, MockSandboxProvider } from '../../src/test/mock-sandbox.js'
import { askAnalyst, callTool, PROTOCOL_ERROR_CASES, TOOL_NAMES, textOf } from '../support/mcp.js'
import { openTestService, type TestService } from '../support/service.js'
import { waitFor } from '../support/wait.js'

const SALES = resolve('examples/sales.csv')
/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='

/** Mock cells: `plot` makes a chart, `save` a file, `boom` raises; anything else echoes. */
const cell: MockCell = (code) => {
  if (code.includes('plot'))
    return [{ type: 'result', isMainResult: false, bundle: { 'image/png': PNG, 'text/plain': '<Figure>' } }]
  if (code.includes('save'))
    return [
      {
        type: 'artifact',
        artifact: { name: 'out/table.csv', path: '/home/user/out/table.csv', size: 13, mimeType: 'text/csv' },
      },
    ]
  if (code.includes('boom'))
    return [
      { type: 'error', name: 'NameError', value: "name 'boom' is not defined", traceback: 'Traceback…' },
    ]
  return [{ type: 'stdout', text: `ran: ${code}\n` }]
}

interface Setup {
  test: TestService
  service: SessionService
  client: Client
  connection: McpConnection
  mock: MockSandboxProvider
  dir: string
}

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function connect(
  options: {
    model?: LanguageModel
    /** Replaces the service's model function (e.g. one that finds none). */
    noModel?: boolean
    allow?: boolean
    data?: string[]
    heartbeatMs?: number
    /** The language the door's sessions are in (`analyst mcp --language r`). */
    language?: 'r'
  } = {},
): Promise<Setup> {
  const mock = new MockSandboxProvider(cell)
  const test = await openTestService({
    provider: mock,
    model: options.model ?? new ScriptedModel([]),
    ...(options.language ? { analyst: { language: options.language } } : {}),
  })
  cleanups.push(() => test.close())
  const service = options.noModel
    ? new SessionService({
        history: test.stores.history,
        blobs: test.stores.blobs,
        provider: mock,
        model: async () => {
          throw new ModelConfigError('No model is configured', { hint: 'Pass --model provider:model.' })
        },
        cacheDir: join(test.home, 'cache'),
        idleMs: 0,
      })
    : test.service
  if (options.noModel) cleanups.push(() => service.shutdown())
  const dir = mkdtempSync(join(tmpdir(), 'analyst-mcp-allowed-'))
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
  const folders = options.allow ? await AllowedFolders.open([dir]) : AllowedFolders.none
  const connection = await McpConnection.open(service, {
    folders,
    data: options.data,
    heartbeatMs: options.heartbeatMs,
  })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await connection.server.connect(serverSide)
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  await client.connect(clientSide)
  cleanups.push(async () => {
    await client.close()
    await connection.end()
  })
  return { test, service, client, connection, mock, dir }
}

describe('the MCP server', () => {
  it('lists its tools with JSON Schema inputs and names the session after the client', async () => {
    const { client, test, connection } = await connect()
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    const run = tools.find((t) => t.name === 'run_python')
    expect(run?.inputSchema).toMatchObject({
      type: 'object',
      properties: { code: { type: 'string' }, timeout_ms: { type: 'integer' } },
      required: ['code'],
    })
    expect(client.getInstructions()).toContain('list_data')
    await waitFor(
      async () =>
        (await test.stores.history.getSession(connection.sessionId))?.title === 'MCP session (test-client)',
      { what: 'the session to be named after the client' },
    )
  })

  it('runs cells: output as text, a chart as image content, an exception as a tool error; each recorded', async () => {
    const { client, test, connection } = await connect()
    const first = await callTool(client, 'run_python', { code: 'x = 1' })
    expect(first.isError).toBe(false)
    expect(textOf(first)).toContain('ran: x = 1')
    const chart = await callTool(client, 'run_python', { code: 'plot()' })
    expect(chart.content).toContainEqual({ type: 'image', data: PNG, mimeType: 'image/png' })
    expect(textOf(chart)).toContain(`analyst://sessions/${connection.sessionId}/artifacts/cell-2-chart-1.png`)
    const failed = await callTool(client, 'run_python', { code: 'boom' })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toContain("NameError: name 'boom' is not defined")
    const runs = await test.stores.history.runs(connection.sessionId)
    expect(runs.map((r) => [r.question, r.status])).toEqual([
      ['run_python', 'done'],
      ['run_python', 'done'],
      ['run_python', 'done'],
    ])
  })

  it('blocks a hostile cell with the reason, runs nothing, and the session goes on', async () => {
    const { client, mock, test, connection } = await connect()
    const blocked = await callTool(client, 'run_python', {
      code: "import subprocess\nsubprocess.run(['cat', '/etc/shadow'])",
    })
    expect(blocked.isError).toBe(true)
    expect(textOf(blocked)).toMatch(/Nothing ran: the guard stopped this code[\s\S]*subprocess/)
    expect(mock.calls).toHaveLength(0)
    const next = await callTool(client, 'run_python', { code: 'y = 2' })
    expect(textOf(next)).toContain('ran: y = 2')
    expect((await test.stores.history.blocked(connection.sessionId)).map((b) => b.source)).toEqual(['guard'])
  })

  it('answers bad arguments as tool errors, never a crash', async () => {
    const { client } = await connect()
    const empty = await callTool(client, 'run_python', { code: '' })
    expect(empty.isError).toBe(true)
    expect(textOf(empty)).toMatch(/Invalid arguments for tool run_python/)
    const timeout = await callTool(client, 'run_python', { code: 'x', timeout_ms: -5 })
    expect(timeout.isError).toBe(true)
    // The server still answers.
    expect((await client.listTools()).tools.length).toBe(5)
  })

  it('lists and profiles the data files with the text ask uses', async () => {
    const { client } = await connect({ data: [SALES] })
    const listed = textOf(await callTool(client, 'list_data'))
    expect(listed).toMatch(/data\/sales\.csv {2}csv, \d+ bytes, \d+ rows × \d+ columns: /)
    const profile = textOf(await callTool(client, 'profile_data', { name: 'data/sales.csv' }))
    expect(profile).toContain("pd.read_csv('data/sales.csv'")
    const missing = await callTool(client, 'profile_data', { name: 'nope.csv' })
    expect(missing.isError).toBe(true)
    expect(textOf(missing)).toContain(
      "No data file nope.csv in this session\nThe session's files: sales.csv.",
    )
  })

  it('profiles the data files in R terms for an R session', async () => {
    const { client } = await connect({ data: [SALES], language: 'r' })
    const profile = textOf(await callTool(client, 'profile_data', { name: 'data/sales.csv' }))
    expect(profile).toContain('readr::read_csv("data/sales.csv"')
    expect(profile).not.toContain('pd.read_csv')
  })

  it('adds data only from an allowed folder: outside paths and links out of it are refused with the reason', async () => {
    const { client, dir, mock } = await connect({ allow: true })
    mkdirSync(join(dir, 'sub'))
    writeFileSync(join(dir, 'sub', 'targets.csv'), 'region,target\nNorth,100\nSouth,80\n')
    symlinkSync(SALES, join(dir, 'escape.csv'))
    // Offered: the data files of the folder, not the link that leads out of it.
    const listed = textOf(await callTool(client, 'list_data'))
    expect(listed).toMatch(new RegExp(`Files add_data can add:\\n${join(dir, 'sub', 'targets.csv')}$`))

    const outside = await callTool(client, 'add_data', { path: SALES })
    expect(outside.isError).toBe(true)
    expect(textOf(outside)).toContain(
      `${SALES} is outside the folders the user allowed\nFiles can be added from: ${dir}`,
    )
    const dotdot = await callTool(client, 'add_data', { path: `sub/../../${SALES.split('/').pop()}` })
    expect(dotdot.isError).toBe(true)
    const link = await callTool(client, 'add_data', { path: 'escape.csv' })
    expect(link.isError).toBe(true)
    expect(textOf(link)).toContain('is outside the folders the user allowed')

    const added = await callTool(client, 'add_data', { path: 'sub/targets.csv' })
    expect(added.isError).toBeFalsy()
    expect(textOf(added)).toContain('Added: the code reads it at data/targets.csv.')
    expect(textOf(added)).toContain('region')
    expect(textOf(await callTool(client, 'list_data'))).toContain('data/targets.csv')
    // A live sandbox gets it at once.
    await callTool(client, 'run_python', { code: 'x = 1' })
    expect(mock.sandboxes[0]?.data).toEqual(['targets.csv'])
  })

  it('refuses add_data when no folder was allowed, saying how to allow one', async () => {
    const { client } = await connect()
    const refused = await callTool(client, 'add_data', { path: SALES })
    expect(refused.isError).toBe(true)
    expect(textOf(refused)).toContain(
      'No folder is open to add_data\nThe user can allow one when starting the server (--allow-dir DIR).',
    )
  })

  it("lists and reads the session's files as resources, and says when the list changes", async () => {
    const { client, connection } = await connect()
    let changes = 0
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changes++
    })
    expect((await client.listResources()).resources).toEqual([])
    await callTool(client, 'run_python', { code: 'x = 1' })
    await callTool(client, 'run_python', { code: 'save()' })
    await callTool(client, 'run_python', { code: 'plot()' })
    await waitFor(() => changes === 2, { what: () => `two list-changed notifications (got ${changes})` })
    const { resources } = await client.listResources()
    const base = `analyst://sessions/${connection.sessionId}/artifacts`
    expect(resources).toEqual([
      expect.objectContaining({ uri: `${base}/out/table.csv`, name: 'out/table.csv', mimeType: 'text/csv' }),
      expect.objectContaining({ uri: `${base}/cell-3-chart-1.png`, mimeType: 'image/png' }),
    ])
    const { resourceTemplates } = await client.listResourceTemplates()
    expect(resourceTemplates[0]?.uriTemplate).toBe('analyst://sessions/{session}/artifacts/{+name}')
    // The mock sandbox keeps a saved file's name as its content.
    expect((await client.readResource({ uri: `${base}/out/table.csv` })).contents).toEqual([
      { uri: `${base}/out/table.csv`, mimeType: 'text/csv', text: 'out/table.csv' },
    ])
    expect((await client.readResource({ uri: `${base}/cell-3-chart-1.png` })).contents).toEqual([
      { uri: `${base}/cell-3-chart-1.png`, mimeType: 'image/png', blob: PNG },
    ])
  })

  it('ask_analyst: the whole loop, with progress as steps finish, seeing the earlier cells', async () => {
    const model = new ScriptedModel([{ code: 'print(x + 1)' }, { text: 'x + 1 is 2, and 99 more.' }])
    const { client, connection, test } = await connect({ model })
    await callTool(client, 'run_python', { code: 'x = 1' })
    const { result, progress } = await askAnalyst(client, 'What is x + 1?')
    expect(result.isError).toBeFalsy()
    const answer = textOf(result)
    expect(answer).toMatch(/^x \+ 1 is 2, and 99 more\./)
    expect(answer).toContain('Numbers in the answer that no output of the session shows (check them): 99')
    expect(answer).toContain('Step 1 ran:\n```python\nprint(x + 1)\n```')
    expect(progress).toEqual(
      expect.arrayContaining([
        'Step 1 of at most 8: the model is writing code…',
        'Step 1: running the code…',
        'Step 1 ran',
      ]),
    )
    // The model was told of the cell the client ran.
    expect(JSON.stringify(model.calls[0]?.prompt)).toContain('x = 1')
    const runs = await test.stores.history.runs(connection.sessionId)
    expect(runs.map((r) => r.question)).toEqual(['run_python', 'What is x + 1?'])
  })

  it('ask_analyst without a model says what to set, and run_python still works', async () => {
    const { client } = await connect({ noModel: true })
    const ran = await callTool(client, 'run_python', { code: 'x = 1' })
    expect(ran.isError).toBe(false)
    const { result: asked } = await askAnalyst(client, 'x?')
    expect(asked.isError).toBe(true)
    expect(textOf(asked)).toBe('No model is configured\nPass --model provider:model.')
    const again = await callTool(client, 'run_python', { code: 'y = 2' })
    expect(textOf(again)).toContain('ran: y = 2')
  })

  it('ask_analyst stops when the client cancels, keeps the client informed while it waits, and records the run as interrupted', async () => {
    let calls = 0
    // A model that answers nothing until its request is aborted.
    const hanging: LanguageModelV3 = {
      specificationVersion: 'v3',
      provider: 'test',
      modelId: 'hanging',
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error('not used')),
      doStream: (options: LanguageModelV3CallOptions) => {
        calls++
        return new Promise((_, reject) => {
          options.abortSignal?.addEventListener('abort', () => reject(options.abortSignal?.reason))
        })
      },
    }
    const { client, test, connection } = await connect({ model: hanging, heartbeatMs: 50 })
    const controller = new AbortController()
    const progress: string[] = []
    const asking = askAnalyst(client, 'Wait for it.', { signal: controller.signal, progress })
    // Heartbeats repeat the last message while the model is silent.
    await waitFor(() => progress.filter((m) => m.includes('the model is writing code')).length >= 3, {
      what: () => `heartbeats (got ${JSON.stringify(progress)})`,
    })
    controller.abort(new Error('the user pressed stop'))
    await expect(asking).rejects.toThrow(/the user pressed stop/)
    await waitFor(
      async () => (await test.stores.history.runs(connection.sessionId))[0]?.status === 'interrupted',
      { what: 'the run to be recorded as interrupted' },
    )
    expect(calls).toBe(1)
    // The session takes the next call.
    const next = await callTool(client, 'run_python', { code: 'z = 3' })
    expect(textOf(next)).toContain('ran: z = 3')
  })

  describe('answers protocol errors as the spec has them', () => {
    for (const { name, run } of PROTOCOL_ERROR_CASES)
      it(name, async () => {
        const { client, connection } = await connect()
        await run(client, connection.sessionId)
        // The connection goes on.
        expect(textOf(await callTool(client, 'run_python', { code: 'x = 1' }))).toContain('ran: x = 1')
      })
  })

  it('ending a connection stops its sandbox; a session that ran nothing leaves no record', async () => {
    const used = await connect()
    await callTool(used.client, 'run_python', { code: 'x = 1' })
    await used.connection.end()
    expect(used.mock.sandboxes[0]?.killed).toBe(true)
    expect(await used.test.stores.history.getSession(used.connection.sessionId)).toBeTruthy()

    const idle = await connect()
    await idle.client.listTools()
    await idle.connection.end()
    expect(await idle.test.stores.history.getSession(idle.connection.sessionId)).toBeUndefined()
  })
})
