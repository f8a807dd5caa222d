/**
 * `analyst mcp` end to end, as Claude Desktop runs it: the built command spawned over stdio by the
 * official MCP client, a real sandbox (bubblewrap, Python), a fake OpenAI-compatible model server
 * for ask_analyst, the history in a temporary ANALYST_HOME.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, lastObservation, startFakeOpenAI } from '../support/fake-openai.js'
import { askAnalyst, callTool, PROTOCOL_ERROR_CASES, TOOL_NAMES, textOf } from '../support/mcp.js'
import { alive, descendants } from '../support/processes.js'
import { waitFor } from '../support/wait.js'

const BIN = resolve('dist/cli/bin.js')
const SALES = resolve('examples/sales.csv')
let dir: string
let allowed: string
let model: FakeOpenAI | undefined
const clients: Client[] = []

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'analyst-mcp-stdio-'))
  allowed = mkdtempSync(join(tmpdir(), 'analyst-mcp-allowed-'))
  writeFileSync(join(allowed, 'targets.csv'), 'region,target\nNorth,100\nSouth,80\nEast,90\nWest,70\n')
})
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
  rmSync(allowed, { recursive: true, force: true })
})
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close()
  await model?.close()
  model = undefined
})

const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  HOME: dir,
  ANALYST_HOME: join(dir, 'home'),
  // No model found by chance: no local Ollama.
  OLLAMA_HOST: '127.0.0.1:9',
  ...extra,
})

/** `analyst mcp ARGS` spawned and connected, as an MCP client does it. */
async function connect(args: string[], extraEnv: Record<string, string> = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', ...args],
    env: env(extraEnv),
    cwd: dir,
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (chunk) => {
    stderr += String(chunk)
  })
  const client = new Client({ name: 'stdio-test', version: '1.0.0' })
  clients.push(client)
  await client.connect(transport)
  return { client, transport, stderr: () => stderr }
}

const analyst = promisify(execFile)

/** The ids of the sessions in the history, as `analyst history` lists them. */
async function sessionIds(): Promise<string[]> {
  const { stdout } = await analyst(process.execPath, [BIN, 'history', '--json'], { env: env() })
  return (JSON.parse(stdout) as Array<{ id: string }>).map((s) => s.id)
}

describe('analyst mcp over stdio', () => {
  it('serves one recorded session: state across calls, charts as images, a hostile cell blocked, files as resources, data from allowed folders only', async () => {
    const { client, transport } = await connect(['--data', SALES, '--allow-dir', allowed])
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)

    const first = await callTool(client, 'run_python', {
      code: "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\ntotal = round(df['order_value'].sum(), 2)",
    })
    expect(first.isError, textOf(first)).toBe(false)
    const second = await callTool(client, 'run_python', { code: 'print(len(df), total > 0)' })
    expect(textOf(second)).toContain('[stdout]\n400 True')

    // The sandbox runs in processes of this server, jailed.
    const server = transport.pid as number
    const kernel = descendants(server)
    expect(kernel.some((p) => p.cmd.includes('bwrap'))).toBe(true)

    const chart = await callTool(client, 'run_python', {
      code: "import matplotlib.pyplot as plt\ndf.groupby('region')['order_value'].sum().plot.bar()\nplt.show()",
    })
    expect(chart.isError, textOf(chart)).toBe(false)
    const image = chart.content.find((c) => c.type === 'image') as
      | { data: string; mimeType: string }
      | undefined
    expect(image?.mimeType).toBe('image/png')
    expect(
      Buffer.from(image?.data ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG')

    const hostile = await callTool(client, 'run_python', {
      code: "import socket\nsocket.create_connection(('93.184.216.34', 80))",
    })
    expect(hostile.isError).toBe(true)
    expect(textOf(hostile)).toContain('Nothing ran: the guard stopped this code.')
    const after = await callTool(client, 'run_python', { code: 'total > 0' })
    expect(textOf(after)).toContain('[result] True')

    // A file the code saves: a resource, announced, listed and read.
    let changed = false
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changed = true
    })
    await callTool(client, 'run_python', { code: "df.head(3).to_csv('top.csv', index=False)" })
    await waitFor(() => changed, { what: 'a list-changed notification' })
    const { resources } = await client.listResources()
    const top = resources.find((r) => r.name === 'top.csv')
    expect(top?.mimeType).toBe('text/csv')
    const read = await client.readResource({ uri: top?.uri as string })
    expect((read.contents[0] as { text: string }).text.split('\n')[0]).toBe(
      'order_id,order_date,customer_segment,region,product,quantity,unit_price,discount,order_value',
    )
    expect(resources.some((r) => r.mimeType === 'image/png')).toBe(true)

    const outside = await callTool(client, 'add_data', { path: SALES })
    expect(outside.isError).toBe(true)
    expect(textOf(outside)).toContain('is outside the folders the user allowed')
    const added = await callTool(client, 'add_data', { path: join(allowed, 'targets.csv') })
    expect(added.isError, textOf(added)).toBeFalsy()
    const targets = await callTool(client, 'run_python', {
      code: "pd.read_csv('data/targets.csv')['target'].sum()",
    })
    expect(textOf(targets)).toContain('[result] 340')

    // The client leaves: the server ends, and with it every process of the sandbox.
    await client.close()
    clients.splice(0)
    await waitFor(() => kernel.every((p) => !alive(p.pid)), {
      what: () => `the sandbox's processes to end (${JSON.stringify(kernel.filter((p) => alive(p.pid)))})`,
    })

    // The session is in the history like any other, and exports.
    const { stdout } = await analyst(process.execPath, [BIN, 'history', '--json'], { env: env() })
    const sessions = JSON.parse(stdout) as Array<{ id: string; title: string }>
    const session = sessions.find((s) => s.title === 'MCP session (stdio-test)')
    expect(session).toBeTruthy()
    const exported = await analyst(
      process.execPath,
      [BIN, 'export', session?.id as string, '--format', 'py'],
      {
        env: env(),
      },
    )
    expect(exported.stdout).toContain("df.head(3).to_csv('top.csv', index=False)")
  }, 180_000)

  it('ask_analyst runs the whole loop with the configured model, seeing the cells run before', async () => {
    model = await startFakeOpenAI([
      (request) => {
        // The earlier run_python cell is part of the conversation.
        expect(JSON.stringify(request.messages)).toContain('x = 41')
        return { code: 'print(x + 1)' }
      },
      (request) => ({ content: `x + 1 is ${lastObservation(request).match(/\d+/)?.[0]}.` }),
    ])
    const { client } = await connect(['--data', SALES], {
      ANALYST_MODEL: 'openai-compatible:fake',
      ANALYST_BASE_URL: model.url,
    })
    await callTool(client, 'run_python', { code: 'x = 41' })
    const { result, progress } = await askAnalyst(client, 'What is x + 1?')
    expect(result.isError, textOf(result)).toBeFalsy()
    expect(textOf(result)).toMatch(/^x \+ 1 is 42\./)
    expect(textOf(result)).toContain('print(x + 1)')
    expect(progress).toContain('Step 1 ran')
    expect(model.remaining()).toBe(0)
  }, 120_000)

  it('without a model, ask_analyst says how to configure one and run_python works', async () => {
    const { client } = await connect([])
    const asked = await callTool(client, 'ask_analyst', { question: 'Anything?' })
    expect(asked.isError).toBe(true)
    expect(textOf(asked)).toContain('No model is configured')
    expect(textOf(asked)).toContain('ANALYST_MODEL')
    const ran = await callTool(client, 'run_python', { code: '6 * 7' })
    expect(textOf(ran)).toContain('[result] 42')
  }, 120_000)

  it('refuses to start with a data file it cannot read or a folder that is not there, saying why', async () => {
    const bad = join(dir, 'bad.csv')
    writeFileSync(bad, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0, 1, 2, 3]))
    const failure = await analyst(process.execPath, [BIN, 'mcp', '--data', bad], { env: env() }).catch(
      (error: { code: number; stdout: string; stderr: string }) => error,
    )
    expect(failure).toMatchObject({ code: 2, stdout: '' })
    expect((failure as { stderr: string }).stderr).toContain('bad.csv cannot be read as data')
    const missing = await analyst(process.execPath, [BIN, 'mcp', '--allow-dir', join(dir, 'nope')], {
      env: env(),
    }).catch((error: { code: number; stderr: string }) => error)
    expect(missing).toMatchObject({ code: 2 })
    expect((missing as { stderr: string }).stderr).toContain('is not a folder')
  }, 60_000)

  describe('answers protocol errors as the spec has them', () => {
    for (const { name, run } of PROTOCOL_ERROR_CASES)
      it(name, async () => {
        const before = new Set(await sessionIds())
        const { client } = await connect([])
        // The session that this server made when it started.
        const sessionId = await waitFor(async () => (await sessionIds()).find((id) => !before.has(id)), {
          what: 'the new MCP session in the history',
        })
        await run(client, sessionId)
        // The server goes on.
        expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
      }, 60_000)
  })
})
