/**
 * MCP at /mcp on `analyst serve`, through the official client's Streamable HTTP transport over
 * real HTTP on 127.0.0.1: the bearer tokens, sessions owned by their token, the Origin check,
 * uploads into an MCP session, and the session's end (DELETE, idle) stopping its sandbox. A mock
 * sandbox where no kernel is needed; the real one where its processes are watched.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { ScriptedModel } from '../../src/models/scripted.js'
import { Sandbox, type SandboxProvider } from '../../src/sandbox/index.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { ownerOf, type RunningServer, startServer } from '../../src/server/index.js'
import { MockSandboxProvider } from '../../src/test/mock-sandbox.js'
import { callTool, PROTOCOL_ERROR_CASES, textOf } from '../support/mcp.js'
import { alive, descendants, waitingShells } from '../support/processes.js'
import { waitFor } from '../support/wait.js'

const TOKENS = ['token-alice', 'token-bob']
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function serve(
  provider: SandboxProvider,
  options: { idleMs?: number; allowDirs?: string[] } = {},
): Promise<RunningServer> {
  const home = mkdtempSync(join(tmpdir(), 'analyst-mcp-http-'))
  const model = new ScriptedModel([{ text: 'An answer.' }])
  const server = await startServer({
    port: 0,
    home,
    tokens: TOKENS,
    provider,
    idleMs: options.idleMs,
    allowDirs: options.allowDirs,
    model: async () => ({ model, spec: 'scripted:http', provider: 'custom', modelId: 'http', mode: 'tools' }),
  })
  cleanups.push(async () => {
    await server.close()
    rmSync(home, { recursive: true, force: true })
  })
  return server
}

/** A client of /mcp with this token (none: no Authorization header). */
async function connect(server: RunningServer, token?: string, sessionId?: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
    sessionId,
  })
  const client = new Client({ name: 'http-test', version: '1.0.0' })
  cleanups.push(() => client.close())
  await client.connect(transport)
  return { client, transport }
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
}

function post(server: RunningServer, headers: Record<string, string>, body: unknown = initialize) {
  return fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKENS[0]}`,
      ...headers,
    },
    body: JSON.stringify(body),
  })
}

describe('MCP over Streamable HTTP on analyst serve', () => {
  it('needs a token; a session is its token’s, recorded under it, and takes uploads', async () => {
    const mock = new MockSandboxProvider()
    const server = await serve(mock)
    await expect(connect(server)).rejects.toMatchObject({ code: 401 })
    await expect(connect(server, 'token-mallory')).rejects.toMatchObject({ code: 401 })

    const { client, transport } = await connect(server, TOKENS[0])
    const sessionId = transport.sessionId as string
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('run_python')
    const ran = await callTool(client, 'run_python', { code: 'x = 1' })
    expect(textOf(ran)).toContain('ran 5 characters')

    // The MCP session is an Analyst session of Alice's.
    const session = await waitFor(
      async () => {
        const found = await server.stores.history.getSession(sessionId)
        return found?.title === 'MCP session (http-test)' ? found : undefined
      },
      { what: 'the session to be named after its client' },
    )
    expect(session.owner).toBe(ownerOf(TOKENS[0] as string))

    // Bob cannot use it, nor see it.
    const bob = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKENS[1]}` } },
      sessionId,
    })
    cleanups.push(() => bob.close())
    await expect(
      post(
        server,
        { authorization: `Bearer ${TOKENS[1]}`, 'mcp-session-id': sessionId },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/list',
        },
      ),
    ).resolves.toMatchObject({ status: 404 })
    await bob.start()
    await expect(bob.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' })).rejects.toMatchObject({
      code: 404,
    })

    // Data comes through an upload to the same session, with the same token.
    const form = new FormData()
    form.append('file', new Blob([readFileSync(resolve('examples/sales.csv'))]), 'sales.csv')
    const upload = await fetch(`${server.url}/api/sessions/${sessionId}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS[0]}` },
      body: form,
    })
    expect(upload.status).toBe(201)
    expect(textOf(await callTool(client, 'list_data'))).toContain('data/sales.csv')
    expect(mock.sandboxes[0]?.data).toEqual(['sales.csv'])
  })

  it('tells a client without a token that one is needed (RFC 6750), and offers no OAuth to discover', async () => {
    const server = await serve(new MockSandboxProvider())
    const refused = await connect(server).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StreamableHTTPError)
    expect(refused).toMatchObject({ code: 401, message: expect.stringContaining('A token is required') })
    expect((refused as Error).message).toContain('Send Authorization: Bearer <token>')

    const missing = await post(server, { authorization: '' })
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="analyst"')
    // As the client reads the challenge: a bearer token, wrong here, and no resource metadata to follow.
    const wrong = await post(server, { authorization: 'Bearer token-mallory' })
    expect(extractWWWAuthenticateParams(wrong)).toEqual({
      error: 'invalid_token',
      resourceMetadataUrl: undefined,
      scope: undefined,
    })
    // Where an OAuth client looks next (RFC 9728, RFC 8414): nothing, said in JSON, not the web UI's page.
    await expect(discoverOAuthProtectedResourceMetadata(`${server.url}/mcp`)).rejects.toThrow(
      'Resource server does not implement OAuth 2.0 Protected Resource Metadata',
    )
    await expect(discoverAuthorizationServerMetadata(server.url)).resolves.toBeUndefined()
    const metadata = await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`)
    expect(metadata.status).toBe(404)
    expect(await metadata.json()).toMatchObject({
      error: { message: 'No route GET /.well-known/oauth-protected-resource/mcp' },
    })
  })

  it('adds data from a folder given with serve --allow-dir, and from nowhere else', async () => {
    const allowed = mkdtempSync(join(tmpdir(), 'analyst-mcp-http-allowed-'))
    cleanups.push(async () => rmSync(allowed, { recursive: true, force: true }))
    writeFileSync(join(allowed, 'targets.csv'), 'region,target\nNorth,100\n')
    const mock = new MockSandboxProvider()
    const server = await serve(mock, { allowDirs: [allowed] })
    const { client } = await connect(server, TOKENS[0])
    const outside = await callTool(client, 'add_data', { path: resolve('examples/sales.csv') })
    expect(outside.isError).toBe(true)
    expect(textOf(outside)).toContain('is outside the folders the user allowed')
    const added = await callTool(client, 'add_data', { path: join(allowed, 'targets.csv') })
    expect(added.isError, textOf(added)).toBeFalsy()
    expect(textOf(await callTool(client, 'list_data'))).toContain('data/targets.csv')
  })

  it('refuses browser origins of other hosts (DNS rebinding), and takes those of this machine', async () => {
    const server = await serve(new MockSandboxProvider())
    const evil = await post(server, { origin: 'http://attacker.example:8787' })
    expect(evil.status).toBe(403)
    expect(((await evil.json()) as { error: { message: string } }).error.message).toContain(
      'origin http://attacker.example:8787 may not use this server',
    )
    const local = await post(server, { origin: 'http://localhost:6274' })
    expect(local.status).toBe(200)
    expect(local.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/)
    // Not initialize, and no session: a clear 400.
    const stray = await post(server, {}, { jsonrpc: '2.0', id: 2, method: 'tools/list' })
    expect(stray.status).toBe(400)
  })

  it('ends a session after its idle time: its sandbox stops, its id is gone', async () => {
    const mock = new MockSandboxProvider()
    const server = await serve(mock, { idleMs: 300 })
    const { client, transport } = await connect(server, TOKENS[0])
    await callTool(client, 'run_python', { code: 'x = 1' })
    await waitFor(() => mock.sandboxes[0]?.killed, { what: 'the idle session to stop its sandbox' })
    const late = await post(
      server,
      { 'mcp-session-id': transport.sessionId as string },
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/list',
      },
    )
    expect(late.status).toBe(404)
    // It ran a cell: it stays in the history.
    expect(await server.stores.history.getSession(transport.sessionId as string)).toBeTruthy()
  })

  it('ends a session on DELETE: the processes of its sandbox end', async () => {
    const provider = new LocalProvider({ poolSize: 0 })
    cleanups.push(async () => provider.close())
    const server = await serve(provider)
    const { client, transport } = await connect(server, TOKENS[0])
    // One sandbox first: where sandboxes are forked, the zygote it starts outlives sessions.
    await (await Sandbox.create({ provider })).kill()
    const before = new Set(descendants().map((p) => p.pid))
    const ran = await callTool(client, 'run_python', { code: 'import os\n1 + 1' })
    expect(textOf(ran)).toContain('[result] 2')
    // Not the jail shell that the zygote makes for the next sandbox once it is idle: no sandbox's.
    const now = descendants()
    const shells = waitingShells(now)
    const kernel = now.filter((p) => !before.has(p.pid) && !shells.has(p.pid))
    // A jail of its own, spawned (bwrap) or forked from the zygote (analyst_zygote.py).
    expect(kernel.some((p) => /bwrap|analyst_zygote/.test(p.cmd))).toBe(true)
    await transport.terminateSession()
    await waitFor(() => kernel.every((p) => !alive(p.pid)), {
      what: () => `the sandbox's processes to end (${JSON.stringify(kernel.filter((p) => alive(p.pid)))})`,
    })
    expect(server.service.busy).toBe(0)
  }, 120_000)

  describe('answers protocol errors as the spec has them', () => {
    for (const { name, run } of PROTOCOL_ERROR_CASES)
      it(name, async () => {
        const server = await serve(new MockSandboxProvider())
        const { client, transport } = await connect(server, TOKENS[0])
        await run(client, transport.sessionId as string)
        // The session goes on.
        expect(textOf(await callTool(client, 'run_python', { code: 'x = 1' }))).toContain('ran 5 characters')
      })
  })
})
