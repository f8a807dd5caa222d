/**
 * Named sources for signed-in users: an ANALYST_SOURCES entry kept to groups of the identity
 * provider's, or to users by email, is listed and given only to them; a share of a session over
 * such a source can be continued ("fork") only by someone who may use it too; an MCP client picks
 * sources with /mcp?sources=, checked the same way; a user who leaves the group stops querying
 * the source in the sessions they made with it. A real server, a real OpenID Connect provider,
 * the real MCP client, real jails, SQLite sources.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { parseSourcesFile } from '../../src/sources/index.js'
import { freePort } from '../../src/test/support/ports.js'
import {
  type Browser,
  call as callAt,
  type RunningIdentityProvider,
  signIn as signInAt,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'
import { callTool, textOf } from '../support/mcp.js'

const USERS = {
  alice: { name: 'Alice', email: 'alice@example.com', groups: ['analysts', 'finance'] },
  // Leaves finance halfway through a test (the provider reads the groups at each sign-in).
  carol: { name: 'Carol', email: 'carol@example.com', groups: ['analysts', 'finance'] },
  bob: { name: 'Bob', email: 'Bob@Example.com', groups: ['analysts'] },
}

let idp: RunningIdentityProvider
let server: RunningServer
let base: string
let home: string
const provider = new LocalProvider({ poolSize: 0 })

const signIn = (login: keyof typeof USERS) => signInAt(base, login)
const call = (browser: Browser, path: string, method = 'GET', body?: unknown) =>
  callAt(browser, `${base}${path}`, method, body)

const clients: Client[] = []

/** A personal API key of the signed-in user, as a script or an MCP client would use it. */
async function keyOf(browser: Browser): Promise<string> {
  const made = await call(browser, '/api/keys', 'POST', { label: 'mcp' })
  expect(made.status).toBe(201)
  return ((await made.json()) as { key: string }).key
}

/** An MCP client of /mcp with this key, asking for these sources. */
async function mcp(key: string, sources: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp?sources=${sources}`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  })
  const client = new Client({ name: 'sources-test', version: '1.0.0' })
  clients.push(client)
  await client.connect(transport)
  return client
}

const names = async (browser: Browser) =>
  ((await (await call(browser, '/api/sources')).json()) as { name: string }[]).map((source) => source.name)

beforeAll(async () => {
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  idp = await startIdentityProvider({ users: USERS, redirectUris: [`${base}/auth/callback`] })
  home = mkdtempSync(join(tmpdir(), 'analyst-sources-signin-'))
  const file = (name: string) => {
    const path = join(home, `${name}.db`)
    const db = new Database(path)
    db.exec(`CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)`)
    db.close()
    return `sqlite:${path}`
  }
  const named = parseSourcesFile(
    JSON.stringify({
      ledger: { url: file('ledger'), groups: ['finance'] },
      crm: { url: file('crm'), users: ['bob@example.com'] },
      shared: { url: file('shared') },
    }),
    {},
  )
  const signin = signInSettingsFor(idp, base, { ANALYST_OIDC_ALLOWED_GROUPS: 'analysts' })
  server = await startServer({
    port,
    home,
    tokens: ['a-token-of-the-server-long-enough'],
    provider,
    signin,
    sources: { named },
  })
}, 60_000)

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {})
  await server?.close()
  await idp?.stop()
  await provider.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

describe('named sources for signed-in users', () => {
  it('lists and gives a source kept to a group or an email only to its users', async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    expect(await names(alice)).toEqual(['ledger', 'shared'])
    // An email matches whatever its case.
    expect(await names(bob)).toEqual(['crm', 'shared'])
    const made = await call(alice, '/api/sessions', 'POST', { sources: ['ledger'] })
    expect(made.status).toBe(201)
    expect(await made.json()).toMatchObject({ sources: ['ledger'] })
    const refused = await call(bob, '/api/sessions', 'POST', { sources: ['ledger'] })
    expect(refused.status).toBe(404)
    expect(((await refused.json()) as { error: { message: string; hint: string } }).error).toMatchObject({
      message: 'There is no source named "ledger"',
      hint: expect.stringContaining('crm, shared'),
    })
  })

  it('continues a shared session only for someone who may use its sources', async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    const share = async (sources: string[]) => {
      const { id } = (await (await call(alice, '/api/sessions', 'POST', { sources })).json()) as {
        id: string
      }
      const shared = await call(alice, `/api/sessions/${id}/share`, 'POST', {})
      expect(shared.status).toBe(201)
      return ((await shared.json()) as { id: string }).id
    }
    const overLedger = await share(['ledger'])
    const forked = await call(bob, `/api/shared/${overLedger}/fork`, 'POST')
    expect(forked.status).toBe(403)
    expect(((await forked.json()) as { error: { message: string } }).error.message).toMatch(
      /queries a source you may not use \(ledger\)/,
    )
    // Bob can still read the shared view; he just cannot query the ledger through it.
    expect((await call(bob, `/api/shared/${overLedger}`)).status).toBe(200)
    const overShared = await share(['shared'])
    const copy = await call(bob, `/api/shared/${overShared}/fork`, 'POST')
    expect(copy.status).toBe(201)
    const { id } = (await copy.json()) as { id: string }
    expect(await (await call(bob, `/api/sessions/${id}`)).json()).toMatchObject({ sources: ['shared'] })
  })

  it('gives an MCP client the sources it names in /mcp?sources=, as the caller may use them', async () => {
    const alice = await mcp(await keyOf(await signIn('alice')), 'ledger,shared')
    const listed = textOf(await callTool(alice, 'list_data'))
    expect(listed).toContain('ledger')
    expect(listed).toContain('shared')
    const ran = await callTool(alice, 'run_python', {
      code: 'print(sql("SELECT n + 41 AS n FROM t", "ledger").n[0])',
    })
    expect(ran.isError).toBeFalsy()
    expect(textOf(ran)).toContain('42')
    // Bob is not in finance: the ledger does not exist for him, and the client is told what he may
    // use (in the JSON-RPC error that the SDK quotes).
    await expect(mcp(await keyOf(await signIn('bob')), 'ledger')).rejects.toThrow(
      /There is no source named \\"ledger\\". The sources you may use are: crm, shared/,
    )
  }, 60_000)

  it('stops a user who left the group from querying its source in the sessions they made', async () => {
    const carol = await signIn('carol')
    const client = await mcp(await keyOf(carol), 'ledger')
    const query = { code: 'print(sql("SELECT count(*) AS c FROM t").c[0])' }
    expect(textOf(await callTool(client, 'run_python', query))).toContain('1')
    const made = await call(carol, '/api/sessions', 'POST', { sources: ['ledger'] })
    const { id } = (await made.json()) as { id: string }

    USERS.carol.groups = ['analysts']
    try {
      // Her next sign-in brings her new groups to the store, and so to her key and to every replica.
      const again = await signIn('carol')
      expect(again.me.user.groups).toEqual(['analysts'])
      const refused = await callTool(client, 'run_python', query)
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toMatch(/queries a source you may no longer use \(ledger\)/)
      const asked = await call(again, `/api/sessions/${id}/ask`, 'POST', { question: 'How many rows?' })
      expect(await asked.text()).toMatch(/event: failed\ndata: .*you may no longer use \(ledger\)/)
      // What she may still use works as before.
      expect(await names(again)).toEqual(['shared'])
    } finally {
      USERS.carol.groups = ['analysts', 'finance']
    }
  }, 60_000)
})
