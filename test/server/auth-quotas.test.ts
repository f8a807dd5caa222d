/**
 * Quotas of signed-in users, over the real server and a real OpenID Connect provider: a user's
 * API keys and browser session count against one quota (sessions, requests per minute, at /api
 * and /mcp alike), each user and each ANALYST_TOKEN token has its own, and a user's own limits
 * are set by their email; the admin API shows the limits that apply to each user.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { freePort } from '../../src/test/support/ports.js'
import {
  type Browser,
  call,
  type RunningIdentityProvider,
  request,
  signIn,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'

const TOKEN = 'a-script-token'
let idp: RunningIdentityProvider
let server: RunningServer
let base: string
let home: string
const provider = new LocalProvider({ poolSize: 0 })

beforeAll(async () => {
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  idp = await startIdentityProvider({
    users: {
      alice: { name: 'Alice Admin', email: 'alice@example.com', groups: ['analysts', 'analyst-admins'] },
      bob: { name: 'Bob Builder', email: 'bob@example.com', groups: ['analysts'] },
      carol: { name: 'Carol Coder', email: 'carol@example.com', groups: ['analysts'] },
    },
    redirectUris: [`${base}/auth/callback`],
  })
  home = mkdtempSync(join(tmpdir(), 'analyst-auth-quotas-'))
  server = await startServer({
    port,
    home,
    provider,
    tokens: [TOKEN],
    // Bob's own limits, by his email in another case than the provider's.
    quotas: {
      default: { sessions: 2 },
      users: { 'BOB@Example.com': { sessions: 3 }, 'carol@example.com': { requestsPerMinute: 6 } },
    },
    signin: signInSettingsFor(idp, base, {
      ANALYST_OIDC_ALLOWED_GROUPS: 'analysts',
      ANALYST_OIDC_ADMIN_GROUPS: 'analyst-admins',
    }),
  })
}, 60_000)

afterAll(async () => {
  await server?.close()
  await idp?.stop()
  await provider.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

const bearer = (secret: string, path: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${secret}` } })
const newSession = {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ title: 'by key' }),
}
async function keyOf(browser: Browser): Promise<string> {
  const made = await call(browser, `${base}/api/keys`, 'POST', { label: 'script' })
  expect(made.status).toBe(201)
  return ((await made.json()) as { key: string }).key
}
async function message(response: Response): Promise<string> {
  return ((await response.json()) as { error: { message: string } }).error.message
}

describe('quotas of signed-in users', () => {
  it("counts a user's keys and browser session as one; other users and tokens have their own", async () => {
    const alice = await signIn(base, 'alice')
    const key = await keyOf(alice)
    expect((await call(alice, `${base}/api/sessions`, 'POST', {})).status).toBe(201)
    expect((await bearer(key, '/api/sessions', newSession)).status).toBe(201)
    // Two sessions made, one each way: the quota of 2 is full for the browser and the key alike.
    const byBrowser = await call(alice, `${base}/api/sessions`, 'POST', {})
    expect(byBrowser.status).toBe(429)
    expect(byBrowser.headers.get('retry-after')).toBeTruthy()
    expect(await message(byBrowser)).toBe('Over the quota of 2 sessions for your account')
    const byKey = await bearer(key, '/api/sessions', newSession)
    expect(byKey.status).toBe(429)
    // A second key of hers is no way round it.
    expect((await bearer(await keyOf(alice), '/api/sessions', newSession)).status).toBe(429)

    // Bob's quota (3, by his email) and the token's (the default, 2) are their own.
    const bob = await signIn(base, 'bob')
    for (let i = 0; i < 3; i++) expect((await call(bob, `${base}/api/sessions`, 'POST', {})).status).toBe(201)
    expect(await message(await call(bob, `${base}/api/sessions`, 'POST', {}))).toBe(
      'Over the quota of 3 sessions for your account',
    )
    expect((await bearer(TOKEN, '/api/sessions', newSession)).status).toBe(201)

    // The admin API shows the limits that apply to each.
    const users = (await (await request(alice.jar, `${base}/api/admin/users`)).json()) as Array<{
      email: string
      usage: { sessions: number }
      quotas: Record<string, number>
    }>
    const byEmail = Object.fromEntries(users.map((user) => [user.email, user]))
    expect(byEmail['alice@example.com']?.quotas).toEqual({ sessions: 2 })
    expect(byEmail['alice@example.com']?.usage.sessions).toBe(2)
    expect(byEmail['bob@example.com']?.quotas).toEqual({ sessions: 3 })
  })

  it("counts a user's requests per minute over browser, key and /mcp together", async () => {
    const carol = await signIn(base, 'carol')
    const key = await keyOf(carol)
    // In one minute of the clock (a new minute starts the count again: then try once more).
    for (let attempt = 0; attempt < 3; attempt++) {
      const minute = Math.floor(Date.now() / 60_000)
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) {
        statuses.push((await request(carol.jar, `${base}/api/sessions`)).status)
        statuses.push((await bearer(key, '/api/sessions')).status)
      }
      const mcp = await bearer(key, '/mcp', { method: 'POST', body: '{}' })
      if (Math.floor(Date.now() / 60_000) !== minute) continue
      // Six of the minute's requests pass, whichever way they came; then both ways are refused.
      expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(6)
      expect(statuses.slice(-2)).toEqual([429, 429])
      expect(mcp.status).toBe(429)
      expect(await message(mcp)).toBe('Over the quota of 6 requests per minute for your account')
      // Bob's minute is his own.
      const bob = await signIn(base, 'bob')
      expect((await request(bob.jar, `${base}/api/sessions`)).status).toBe(200)
      return
    }
    throw new Error('three attempts in a row crossed a minute')
  })
})
