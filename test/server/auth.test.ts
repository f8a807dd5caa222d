/**
 * Sign-in end to end over HTTP: the real server (SQLite) and a real OpenID Connect provider
 * (oidc-provider on 127.0.0.1) with users in groups, walked through by an HTTP client with a
 * cookie jar as a browser would. What a user gets (their name, groups, a CSRF token, API keys,
 * shares, the admin API) and every refusal: outside the allowed groups, a forged or replayed
 * state, an answer from another issuer or for another client (audience), an expired or idle session, a cross-site post, another
 * user's session, artifacts and exports, a revoked key, a disabled user.
 */
import { sign as cryptoSign, generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { hashSecret } from '../../src/server/auth/secrets.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import type { SqlHistoryStore } from '../../src/store/index.js'
import { freePort } from '../../src/test/support/ports.js'
import {
  type Browser,
  CookieJar,
  call as callAt,
  followSignIn,
  type Me,
  type RunningIdentityProvider,
  request,
  signIn as signInAt,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'

const SALES = resolve('examples/sales.csv')
const TOKEN = 'script-token-of-analyst-token'
const USERS = {
  alice: { name: 'Alice Analyst', email: 'alice@example.com', groups: ['analysts', 'analyst-admins'] },
  bob: { name: 'Bob Builder', email: 'bob@example.com', groups: ['analysts'] },
  eve: { name: 'Eve Outsider', email: 'eve@example.com', groups: ['contractors'] },
}

let idp: RunningIdentityProvider
let server: RunningServer
let base: string
let home: string
const provider = new LocalProvider({ poolSize: 0 })

async function json<T>(response: Response): Promise<T> {
  const text = await response.text()
  return (text ? JSON.parse(text) : undefined) as T
}

const signIn = (login: keyof typeof USERS, next = '/') => signInAt(base, login, next)
/** A state-changing call as the web UI makes it: the cookie, the CSRF token, this origin. */
const call = (browser: Browser, path: string, method: string, body?: unknown) =>
  callAt(browser, `${base}${path}`, method, body)
const get = (browser: Browser, path: string) => request(browser.jar, `${base}${path}`)
const bearer = (secret: string, path: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${secret}` } })

/** A session of `browser`'s with a run whose step saved a file: what exports and artifacts show. */
async function sessionWithArtifact(browser: Browser): Promise<string> {
  const created = await call(browser, '/api/sessions', 'POST', { title: 'Revenue' })
  expect(created.status).toBe(201)
  const { id } = await json<{ id: string }>(created)
  const { history, blobs } = server.stores
  const run = await history.startRun(id, 'How much revenue?')
  const blob = await blobs.put(Buffer.from('region,revenue\nwest,10\n'))
  await history.commitStep({
    runId: run.id,
    sessionId: id,
    step: { step: 1, code: "df.to_csv('out.csv')", stdout: '', stderr: '', results: [], durationMs: 3 },
    artifacts: [
      { name: 'out.csv', kind: 'file', mimeType: 'text/csv', size: blob.size, sha256: blob.sha256 },
    ],
    blocked: [],
  })
  await history.finishRun(run.id, {
    answer: 'Revenue is 10.',
    incomplete: false,
    unsupportedNumbers: [],
    usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
  })
  return id
}

const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** How far sign-in's clock is ahead of the real one: expiry without waiting. */
let skewMs = 0

function settings(issuer: string, extra: Record<string, string> = {}) {
  const env = signInSettingsFor(idp, base, {
    ANALYST_OIDC_ISSUER: issuer,
    ANALYST_OIDC_ALLOWED_GROUPS: 'analysts',
    ANALYST_OIDC_ADMIN_GROUPS: 'analyst-admins',
    ...extra,
  })
  // The cache kept longer than the clock ever moves here: what it refuses, it refuses from its copy.
  return { ...env, clock: () => Date.now() + skewMs, cacheTtlMs: 30 * DAY_MS }
}

beforeAll(async () => {
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  idp = await startIdentityProvider({
    users: USERS,
    redirectUris: [`${base}/auth/callback`],
    postLogoutRedirectUris: [`${base}/`],
  })
  home = mkdtempSync(join(tmpdir(), 'analyst-auth-'))
  server = await startServer({ port, home, tokens: [TOKEN], provider, signin: settings(idp.issuer) })
}, 60_000)

afterAll(async () => {
  await server?.close()
  await idp?.stop()
  await provider.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

describe('sign-in through the identity provider', () => {
  it('signs a user in: their name, email, groups and admin flag; an HttpOnly SameSite=Lax cookie', async () => {
    const jar = new CookieJar()
    const login = await request(jar, `${base}/auth/login?next=/%23/sessions`)
    expect(login.status).toBe(302)
    const to = new URL(login.headers.get('location') as string)
    expect(to.origin).toBe(idp.issuer)
    expect(to.searchParams.get('code_challenge_method')).toBe('S256')
    expect(to.searchParams.get('redirect_uri')).toBe(`${base}/auth/callback`)
    expect(to.searchParams.get('state')).toBeTruthy()
    expect(to.searchParams.get('nonce')).toBeTruthy()
    const callback = await followSignIn(jar, to.href, 'alice', { stopAt: `${base}/auth/callback` })
    const answered = await request(jar, callback.url)
    expect(answered.status).toBe(302)
    expect(answered.headers.get('location')).toBe('/#/sessions')
    const cookie = answered.headers.getSetCookie().find((line) => line.startsWith('analyst_session='))
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).toMatch(/Path=\//)
    expect(cookie).not.toMatch(/Secure/) // plain http on loopback; `__Host-` and Secure behind TLS
    const me = await json<Me>(await request(jar, `${base}/api/me`))
    expect(me.user).toMatchObject({ name: 'Alice Analyst', email: 'alice@example.com', admin: true })
    expect(me.user.groups).toEqual(['analysts', 'analyst-admins'])
    expect(me.csrfToken).toMatch(/^[\w-]{43}$/)
    const bob = await signIn('bob')
    expect(bob.me.user).toMatchObject({ name: 'Bob Builder', admin: false })
    expect(bob.me.user.id).not.toBe(me.user.id)
  })

  it('signs the same person in as the same user, with a new cookie each time', async () => {
    const first = await signIn('bob')
    const second = await signIn('bob')
    expect(second.me.user.id).toBe(first.me.user.id)
    expect(second.jar.get(base, 'analyst_session')).not.toBe(first.jar.get(base, 'analyst_session'))
    expect(second.me.csrfToken).not.toBe(first.me.csrfToken)

    // Signing in again in a browser that has a cookie ends that cookie's session (no fixation):
    // a cookie planted before sign-in is worth nothing after it.
    const planted = first.jar.get(base, 'analyst_session') as string
    const { url } = await followSignIn(first.jar, `${base}/auth/login`, 'bob')
    expect(url).toBe(`${base}/`)
    const fresh = first.jar.get(base, 'analyst_session')
    expect(fresh).not.toBe(planted)
    const stale = new CookieJar()
    stale.set(base, 'analyst_session', planted)
    expect((await request(stale, `${base}/api/me`)).status).toBe(401)
    expect((await request(first.jar, `${base}/api/me`)).status).toBe(200)
  })

  it('keeps users signed in when the provider rotates its keys, and signs the next one in with the new key', async () => {
    // Alice's sign-in has just had the provider's keys fetched (and cached by openid-client).
    const alice = await signIn('alice')
    const kid = idp.rotateKeys()
    expect((await get(alice, '/api/me')).status).toBe(200)
    const bob = await signIn('bob')
    const found = await server.stores.auth.getBrowserSession(
      hashSecret(bob.jar.get(base, 'analyst_session') as string),
    )
    const header = JSON.parse(
      Buffer.from((found?.session.idToken ?? '').split('.')[0] as string, 'base64url').toString(),
    ) as { kid: string }
    expect(header.kid).toBe(kid)
    expect((await get(alice, '/api/me')).status).toBe(200)
  })

  it('goes back only to paths of this server (no open redirect)', async () => {
    for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      const jar = new CookieJar()
      const { url } = await followSignIn(jar, `${base}/auth/login?next=${encodeURIComponent(next)}`, 'bob')
      expect(url).toBe(`${base}/`)
    }
  })

  it('answers 401 with WWW-Authenticate to nobody, and /api/me says nobody is signed in', async () => {
    const me = await fetch(`${base}/api/me`)
    expect(me.status).toBe(401)
    expect(me.headers.get('www-authenticate')).toMatch(/^Bearer/)
    expect(me.headers.get('link')).toBe('</auth/login>; rel="login"')
    expect(await json(me)).toMatchObject({ error: { code: 'unauthorized' } })
    const sessions = await fetch(`${base}/api/sessions`)
    expect(sessions.status).toBe(401)
    expect((await json<{ error: { message: string; hint: string } }>(sessions)).error.hint).toMatch(
      /\/auth\/login/,
    )
  })

  it('signs out: the cookie no longer works, and the browser goes to the provider to end its session', async () => {
    const bob = await signIn('bob')
    const out = await call(bob, '/auth/logout', 'POST')
    expect(out.status).toBe(200)
    const { redirect } = await json<{ redirect: string }>(out)
    expect(new URL(redirect).origin).toBe(idp.issuer)
    expect(new URL(redirect).searchParams.get('post_logout_redirect_uri')).toBe(`${base}/`)
    expect(new URL(redirect).searchParams.get('id_token_hint')).toBeTruthy()
    expect((await get(bob, '/api/me')).status).toBe(401)
  })
})

describe('refusals at sign-in', () => {
  it('refuses a user outside the allowed groups, and records it', async () => {
    const jar = new CookieJar()
    const { response } = await followSignIn(jar, `${base}/auth/login`, 'eve')
    expect(response.status).toBe(403)
    const body = await json<{ error: { code: string; message: string } }>(response)
    expect(body.error.code).toBe('forbidden')
    expect(body.error.message).toMatch(/eve@example.com may not use this Analyst: not in an allowed group/)
    expect(jar.get(base, 'analyst_session')).toBeUndefined()
    expect((await request(jar, `${base}/api/me`)).status).toBe(401)
    const audit = await server.stores.auth.audit({ limit: 20 })
    expect(
      audit.find((e) => e.action === 'sign-in-refused' && e.detail?.email === 'eve@example.com'),
    ).toBeTruthy()
  })

  it('refuses a forged state, and a callback replayed after it was used', async () => {
    const jar = new CookieJar()
    const { url } = await followSignIn(jar, `${base}/auth/login`, 'bob', { stopAt: `${base}/auth/callback` })
    const forged = new URL(url)
    forged.searchParams.set('state', 'forged-by-an-attacker')
    const refused = await request(jar, forged.href)
    expect(refused.status).toBe(401)
    expect((await json<{ error: { message: string } }>(refused)).error.message).toMatch(/state/i)
    expect(jar.get(base, 'analyst_session')).toBeUndefined()

    // A real answer, used once; replayed (with the same login cookie) it finds nothing.
    const again = new CookieJar()
    const real = await followSignIn(again, `${base}/auth/login`, 'bob', { stopAt: `${base}/auth/callback` })
    const loginCookie = again.get(base, 'analyst_login') as string
    expect((await request(again, real.url)).status).toBe(302)
    const replay = new CookieJar()
    replay.set(base, 'analyst_login', loginCookie)
    const replayed = await request(replay, real.url)
    expect(replayed.status).toBe(400)
    expect((await json<{ error: { message: string } }>(replayed)).error.message).toMatch(/already used/)
    expect(replay.get(base, 'analyst_session')).toBeUndefined()
    // Without the browser's login cookie (someone else's callback URL), nothing either.
    expect((await request(new CookieJar(), real.url)).status).toBe(400)
  })

  it('refuses an answer from another issuer than the one configured', async () => {
    // A provider whose discovery document names it as the issuer, but whose endpoints are the
    // real provider's: the ID tokens it hands over say iss = the real provider.
    const metadata = await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()
    const port = await freePort()
    const impostor = `http://127.0.0.1:${port}`
    const http: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ ...metadata, issuer: impostor }))
    })
    await new Promise<void>((done) => http.listen(port, '127.0.0.1', done))
    const otherHome = mkdtempSync(join(tmpdir(), 'analyst-auth-'))
    const appPort = await freePort()
    const other = await startServer({
      port: appPort,
      home: otherHome,
      provider,
      signin: { ...(settings(impostor) as NonNullable<ReturnType<typeof settings>>), publicUrl: base },
    })
    try {
      const jar = new CookieJar()
      const login = await request(jar, `${other.url}/auth/login`)
      const { url } = await followSignIn(jar, login.headers.get('location') as string, 'bob', {
        stopAt: `${base}/auth/callback`,
      })
      // The provider sends the browser to the redirect URI registered (base); it is the other app's answer.
      const callback = new URL(url)
      const answered = await request(jar, `${other.url}/auth/callback${callback.search}`)
      expect(answered.status).toBe(401)
      expect((await json<{ error: { message: string } }>(answered)).error.message).toMatch(/iss/)
    } finally {
      await other.close()
      http.close()
      rmSync(otherHome, { recursive: true, force: true })
    }
  })

  it('refuses an ID token made for another client (audience), and takes the same token made for this one', async () => {
    // A provider of our own making, since a real one names only the client that asked: its
    // discovery, keys and token endpoint, the ID token signed with its key for `audience`.
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const jwk = { ...(publicKey.export({ format: 'jwk' }) as object), kid: 'k1', use: 'sig', alg: 'RS256' }
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    let audience = ''
    let nonce = ''
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const idToken = () => {
      const now = Math.floor(Date.now() / 1000)
      const body = `${b64({ alg: 'RS256', kid: 'k1', typ: 'JWT' })}.${b64({
        iss: issuer,
        aud: audience,
        sub: 'mallory',
        name: 'Mallory',
        email: 'mallory@example.com',
        email_verified: true,
        groups: ['analysts'],
        nonce,
        iat: now,
        exp: now + 300,
      })}`
      return `${body}.${cryptoSign('sha256', Buffer.from(body), privateKey).toString('base64url')}`
    }
    const http: Server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json')
      const path = new URL(req.url ?? '/', issuer).pathname
      if (path === '/.well-known/openid-configuration')
        res.end(
          JSON.stringify({
            issuer,
            authorization_endpoint: `${issuer}/auth`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
          }),
        )
      else if (path === '/jwks') res.end(JSON.stringify({ keys: [jwk] }))
      else if (path === '/token')
        res.end(
          JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 300, id_token: idToken() }),
        )
      else res.writeHead(404).end('{}')
    })
    await new Promise<void>((done) => http.listen(port, '127.0.0.1', done))
    const otherHome = mkdtempSync(join(tmpdir(), 'analyst-auth-'))
    const appPort = await freePort()
    const otherBase = `http://127.0.0.1:${appPort}`
    const other = await startServer({
      port: appPort,
      home: otherHome,
      provider,
      signin: { ...settings(issuer), publicUrl: otherBase },
    })
    /** One sign-in through the made-up provider: its answer at the callback. */
    const attempt = async () => {
      const jar = new CookieJar()
      const login = await request(jar, `${otherBase}/auth/login`)
      const asked = new URL(login.headers.get('location') as string)
      expect(asked.origin).toBe(issuer)
      nonce = asked.searchParams.get('nonce') as string
      const state = asked.searchParams.get('state') as string
      return request(jar, `${otherBase}/auth/callback?code=c0de&state=${encodeURIComponent(state)}`)
    }
    try {
      audience = 'another-client'
      const refused = await attempt()
      expect(refused.status).toBe(401)
      expect((await json<{ error: { message: string } }>(refused)).error.message).toMatch(/aud/)
      expect(refused.headers.getSetCookie().some((line) => line.startsWith('analyst_session='))).toBe(false)
      // The same token, signed the same way, made for this server's client: it signs Mallory in.
      audience = idp.clientId
      const taken = await attempt()
      expect(taken.status).toBe(302)
      expect(taken.headers.getSetCookie().some((line) => line.startsWith('analyst_session='))).toBe(true)
    } finally {
      await other.close()
      http.close()
      rmSync(otherHome, { recursive: true, force: true })
    }
  })

  it('ends a session that passed its absolute expiry, and one idle too long', async () => {
    const db = (server.stores.history as SqlHistoryStore).db
    try {
      // Used every 11 hours (under the 12 h idle limit), from the cache: still ended after 7 days.
      const expired = await signIn('bob')
      while (skewMs < 7 * DAY_MS - 11 * HOUR_MS) {
        skewMs += 11 * HOUR_MS
        expect((await get(expired, '/api/sessions')).status).toBe(200)
      }
      skewMs = 7 * DAY_MS + 60_000
      const refused = await get(expired, '/api/sessions')
      expect(refused.status).toBe(401)
      expect((await json<{ error: { message: string } }>(refused)).error.message).toBe(
        'Your sign-in has ended',
      )

      skewMs = 0
      const idle = await signIn('bob')
      const hash = hashSecret(idle.jar.get(base, 'analyst_session') as string)
      expect((await get(idle, '/api/me')).status).toBe(200)
      skewMs = 12 * HOUR_MS + 60_000
      expect((await get(idle, '/api/me')).status).toBe(401)
      expect(
        await db.selectFrom('browser_sessions').select('hash').where('hash', '=', hash).execute(),
      ).toHaveLength(0)
    } finally {
      skewMs = 0
    }
  })
})

/** What Chromium sends for a navigation. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'

describe('refusals to a browser', () => {
  it('sends a signed-out browser from a page to the sign-in and back; API routes and programs keep JSON', async () => {
    const page = '/s/some-share?view=steps'
    const asked = await fetch(`${base}${page}`, { headers: { accept: BROWSER_ACCEPT }, redirect: 'manual' })
    expect(asked.status).toBe(302)
    const location = asked.headers.get('location') as string
    expect(location).toBe(`/auth/login?next=${encodeURIComponent(page)}`)
    const jar = new CookieJar()
    const { url, response } = await followSignIn(jar, `${base}${location}`, 'bob')
    expect(url).toBe(`${base}${page}`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/text\/html/)

    // A program asking for the same page (fetch sends */*), and a browser asking an API route.
    const program = await fetch(`${base}${page}`, { redirect: 'manual' })
    expect(program.status).toBe(401)
    expect(await json(program)).toMatchObject({
      error: { code: 'unauthorized', message: 'Sign-in is required' },
    })
    const api = await fetch(`${base}/api/sessions`, {
      headers: { accept: BROWSER_ACCEPT },
      redirect: 'manual',
    })
    expect(api.status).toBe(401)
    expect(await json(api)).toMatchObject({ error: { code: 'unauthorized' } })
  })

  it('shows a refused sign-in to a browser as a page that says why, its text escaped', async () => {
    const jar = new CookieJar()
    const { url } = await followSignIn(jar, `${base}/auth/login`, 'eve', { stopAt: `${base}/auth/callback` })
    const refused = await request(jar, url, { headers: { accept: BROWSER_ACCEPT } })
    expect(refused.status).toBe(403)
    expect(refused.headers.get('content-type')).toMatch(/text\/html/)
    const page = await refused.text()
    expect(page).toContain('eve@example.com may not use this Analyst: not in an allowed group')
    expect(page).toContain('<a href="/auth/login">')

    // The provider's own refusal, with markup in its description: shown as text, not run.
    const description = encodeURIComponent('<script>alert(1)</script>')
    const byProvider = await fetch(
      `${base}/auth/callback?error=access_denied&error_description=${description}`,
      {
        headers: { accept: BROWSER_ACCEPT },
      },
    )
    expect(byProvider.status).toBe(403)
    const text = await byProvider.text()
    expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(text).not.toContain('<script>')
  })
})

describe('what a cookie may do', () => {
  it('refuses a cross-site form post with the cookie, and a post without the CSRF token; changes nothing', async () => {
    const bob = await signIn('bob')
    const before = await json<unknown[]>(await get(bob, '/api/sessions'))
    const crossSite = await request(bob.jar, `${base}/api/sessions`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'title=pwned',
    })
    expect(crossSite.status).toBe(403)
    expect(await json(crossSite)).toMatchObject({ error: { code: 'forbidden' } })
    const forgedToken = await request(bob.jar, `${base}/api/sessions`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'x-csrf-token': bob.me.csrfToken },
      body: '{}',
    })
    expect(forgedToken.status).toBe(403)
    const noToken = await request(bob.jar, `${base}/api/sessions`, {
      method: 'POST',
      headers: { origin: base, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(noToken.status).toBe(403)
    expect((await json<{ error: { hint: string } }>(noToken)).error.hint).toMatch(/X-CSRF-Token/)
    const otherSite = await request(bob.jar, `${base}/api/sessions`, {
      method: 'POST',
      headers: { 'sec-fetch-site': 'cross-site', 'x-csrf-token': bob.me.csrfToken },
      body: '{}',
    })
    expect(otherSite.status).toBe(403)
    expect(await json<unknown[]>(await get(bob, '/api/sessions'))).toEqual(before)
    expect((await call(bob, '/api/sessions', 'POST', {})).status).toBe(201)
  })

  it("keeps users' sessions, artifacts and exports apart: another user's is a 404, admins included", async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    const id = await sessionWithArtifact(bob)
    expect((await get(bob, `/api/sessions/${id}/artifacts/out.csv`)).status).toBe(200)
    expect((await get(bob, `/api/sessions/${id}/export?format=py`)).status).toBe(200)
    for (const path of [
      `/api/sessions/${id}`,
      `/api/sessions/${id}/artifacts/out.csv`,
      `/api/sessions/${id}/export?format=py`,
    ]) {
      const refused = await get(alice, path)
      expect(refused.status).toBe(404)
      expect(await json(refused)).toMatchObject({ error: { code: 'not_found' } })
    }
    expect((await call(alice, `/api/sessions/${id}`, 'DELETE')).status).toBe(404)
    expect((await call(alice, `/api/sessions/${id}/share`, 'POST', {})).status).toBe(404)
    const listed = await json<Array<{ id: string }>>(await get(alice, '/api/sessions'))
    expect(listed.map((s) => s.id)).not.toContain(id)
    expect((await get(bob, `/api/sessions/${id}`)).status).toBe(200)
    // An ANALYST_TOKEN token is an owner of its own, as before.
    expect((await bearer(TOKEN, `/api/sessions/${id}`)).status).toBe(404)
    const mine = await bearer(TOKEN, '/api/sessions', { method: 'POST', body: '{}' })
    expect(mine.status).toBe(201)
  })
})

describe('API keys', () => {
  it('makes a key shown once; it works as Bearer, as E2B_API_KEY and at /mcp; revoked, it stops', async () => {
    const bob = await signIn('bob')
    const made = await call(bob, '/api/keys', 'POST', { label: 'laptop', expiresInDays: 30 })
    expect(made.status).toBe(201)
    const key = await json<{ id: string; key: string; label: string; expiresAt: string }>(made)
    expect(key.key).toMatch(/^ak_[\w-]{43}$/)
    expect(Date.parse(key.expiresAt)).toBeGreaterThan(Date.now() + 29 * 86_400_000)
    const listed = await json<Array<Record<string, unknown>>>(await get(bob, '/api/keys'))
    expect(listed).toEqual([
      {
        id: key.id,
        label: 'laptop',
        createdAt: expect.any(String),
        lastUsedAt: null,
        expiresAt: key.expiresAt,
      },
    ])
    expect(JSON.stringify(listed)).not.toContain(key.key)

    // The key is Bob: it sees his sessions, and needs no CSRF token.
    const id = await sessionWithArtifact(bob)
    const viaKey = await bearer(key.key, `/api/sessions/${id}`)
    expect(viaKey.status).toBe(200)
    const me = await json<Me>(await bearer(key.key, '/api/me'))
    expect(me.user.id).toBe(bob.me.user.id)
    expect(me.csrfToken).toBeNull()
    expect((await bearer(key.key, '/api/sessions', { method: 'POST', body: '{}' })).status).toBe(201)
    expect((await bearer(key.key, `/api/sessions/${id}/artifacts/out.csv`)).status).toBe(200)
    expect((await json<Array<Record<string, unknown>>>(await get(bob, '/api/keys')))[0]?.lastUsedAt).toEqual(
      expect.any(String),
    )
    const e2b = await fetch(`${base}/v2/sandboxes`, { headers: { 'x-api-key': key.key } })
    expect(e2b.status).toBe(200)
    const mcp = await bearer(key.key, '/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    })
    expect(mcp.status).toBe(200)

    // Another user cannot revoke it; Bob can.
    const alice = await signIn('alice')
    expect((await call(alice, `/api/keys/${key.id}`, 'DELETE')).status).toBe(404)
    expect((await call(bob, `/api/keys/${key.id}`, 'DELETE')).status).toBe(204)
    const revoked = await bearer(key.key, `/api/sessions/${id}`)
    expect(revoked.status).toBe(401)
    expect(revoked.headers.get('www-authenticate')).toMatch(/invalid_token/)
    expect((await fetch(`${base}/v2/sandboxes`, { headers: { 'x-api-key': key.key } })).status).toBe(401)
    expect((await bearer(key.key, '/mcp', { method: 'POST', body: '{}' })).status).toBe(401)
    const actions = (await server.stores.auth.audit({ actor: bob.me.user.id })).map((e) => e.action)
    expect(actions).toEqual(expect.arrayContaining(['key-created', 'key-revoked', 'sign-in']))
  })

  it('refuses keys to a token, and a key past its expiry', async () => {
    const byToken = await bearer(TOKEN, '/api/keys', { method: 'POST', body: JSON.stringify({ label: 'x' }) })
    expect(byToken.status).toBe(403)
    const bob = await signIn('bob')
    const key = await json<{ id: string; key: string }>(
      await call(bob, '/api/keys', 'POST', { label: 'short' }),
    )
    const db = (server.stores.history as SqlHistoryStore).db
    await db
      .updateTable('api_keys')
      .set({ expires_at: '2000-01-01T00:00:00.000Z' })
      .where('id', '=', key.id)
      .execute()
    expect((await bearer(key.key, '/api/sessions')).status).toBe(401)
  })

  it('refuses a key from the moment it expires, though its identity is cached', async () => {
    const bob = await signIn('bob')
    const key = await json<{ id: string; key: string; expiresAt: string }>(
      await call(bob, '/api/keys', 'POST', { label: 'a day', expiresInDays: 1 }),
    )
    try {
      expect((await bearer(key.key, '/api/sessions')).status).toBe(200)
      skewMs = Date.parse(key.expiresAt) - Date.now() - 60_000
      expect((await bearer(key.key, '/api/sessions')).status).toBe(200)
      skewMs = Date.parse(key.expiresAt) - Date.now() + 1_000
      const refused = await bearer(key.key, '/api/sessions')
      expect(refused.status).toBe(401)
      expect(refused.headers.get('www-authenticate')).toMatch(/invalid_token/)
      expect((await json<{ error: { message: string } }>(refused)).error.message).toMatch(/expired/)
      expect((await bearer(key.key, '/mcp', { method: 'POST', body: '{}' })).status).toBe(401)
    } finally {
      skewMs = 0
    }
    // Nothing was revoked: the key is listed, with the expiry it passed.
    const listed = await json<Array<{ id: string; expiresAt: string }>>(await get(bob, '/api/keys'))
    expect(listed.find((k) => k.id === key.id)?.expiresAt).toBe(key.expiresAt)
  })
})

describe('admins', () => {
  it('alone remove templates; anyone signed in lists them', async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    expect((await get(bob, '/api/templates')).status).toBe(200)
    const refused = await call(bob, '/api/templates/modern', 'DELETE')
    expect(refused.status).toBe(403)
    expect((await json<{ error: { message: string } }>(refused)).error.message).toMatch(/Only administrators/)
    // Alice may: there is no such template here, so she is told that.
    expect((await call(alice, '/api/templates/modern', 'DELETE')).status).toBe(404)
    // A build is refused to anyone while the server does not allow builds, with how to allow them.
    const build = await call(alice, '/api/templates', 'POST', { name: 'x', spec: { base: 'debian:trixie' } })
    expect(build.status).toBe(403)
    expect(JSON.stringify(await json(build))).toMatch(/--allow-template-builds/)
  })

  it("see each user's runs and tokens by model", async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    const before = await json<Array<{ id: string; activity: { runs: number } }>>(
      await get(alice, '/api/admin/users'),
    )
    const runsBefore = before.find((u) => u.id === bob.me.user.id)?.activity.runs ?? 0
    await sessionWithArtifact(bob)
    const users = await json<
      Array<{
        id: string
        activity: { runs: number; tokens: { model: string | null; totalTokens: number }[] }
        quotas: Record<string, number>
      }>
    >(await get(alice, '/api/admin/users'))
    const listed = users.find((u) => u.id === bob.me.user.id)
    expect(listed?.activity.runs).toBe(runsBefore + 1)
    expect(listed?.activity.tokens.find((row) => row.model === null)?.totalTokens).toBeGreaterThanOrEqual(2)
    expect(listed?.quotas).toEqual({})

    // Which sessions Bob has, by title (their content stays his: /api/sessions/:id is a 404).
    const sessions = await json<Array<{ id: string; title: string; questions: number }>>(
      await get(alice, `/api/admin/users/${bob.me.user.id}/sessions`),
    )
    const revenue = sessions.find((session) => session.title === 'Revenue')
    expect(revenue?.questions).toBe(1)
    expect((await get(alice, `/api/sessions/${revenue?.id}`)).status).toBe(404)
    expect((await get(bob, `/api/admin/users/${bob.me.user.id}/sessions`)).status).toBe(403)
    expect((await get(alice, '/api/admin/users/no-such-user/sessions')).status).toBe(404)
  })

  it('list users and the audit log; disabling a user stops their cookie and keys at once', async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    const key = await json<{ key: string }>(await call(bob, '/api/keys', 'POST', { label: 'ci' }))
    expect((await get(bob, '/api/admin/users')).status).toBe(403)
    expect((await get(bob, '/api/admin/audit')).status).toBe(403)
    const users = await json<
      Array<{ id: string; name: string; admin: boolean; usage: { sessions: number } }>
    >(await get(alice, '/api/admin/users'))
    expect(users.map((u) => u.name).sort()).toEqual(['Alice Analyst', 'Bob Builder'])
    expect(users.find((u) => u.name === 'Bob Builder')?.usage.sessions).toBeGreaterThan(0)

    const disabled = await call(alice, `/api/admin/users/${bob.me.user.id}/disable`, 'POST')
    expect(disabled.status).toBe(200)
    expect(await json(disabled)).toMatchObject({ disabled: true })
    expect((await get(bob, '/api/me')).status).toBe(401)
    expect((await bearer(key.key, '/api/sessions')).status).toBe(401)
    // Signing in again does not get round it.
    const { response } = await followSignIn(new CookieJar(), `${base}/auth/login`, 'bob')
    expect(response.status).toBe(403)

    expect((await call(alice, `/api/admin/users/${bob.me.user.id}/enable`, 'POST')).status).toBe(200)
    expect((await bearer(key.key, '/api/sessions')).status).toBe(200)
    expect((await get(bob, '/api/me')).status).toBe(401) // the browser sessions ended; keys only paused
    expect((await call(alice, `/api/admin/users/${alice.me.user.id}/disable`, 'POST')).status).toBe(400)

    const audit = await json<Array<{ action: string; actor?: string; target?: string }>>(
      await get(alice, '/api/admin/audit?limit=50'),
    )
    expect(audit.find((e) => e.action === 'user-disabled')).toMatchObject({
      actor: alice.me.user.id,
      target: bob.me.user.id,
    })
    expect(audit.find((e) => e.action === 'user-enabled')).toBeTruthy()
  })
  it("assign a token-owned session to a user, recorded in the audit log; never a user's own", async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    const made = await bearer(TOKEN, '/api/sessions', {
      method: 'POST',
      body: JSON.stringify({ title: 'Before sign-in' }),
    })
    expect(made.status).toBe(201)
    const { id } = await json<{ id: string }>(made)
    expect((await get(bob, `/api/sessions/${id}`)).status).toBe(404)

    const listed = await json<Array<{ id: string; title: string; owner: { token: string } | null }>>(
      await get(alice, '/api/admin/sessions'),
    )
    expect(listed.find((s) => s.id === id)).toMatchObject({
      title: 'Before sign-in',
      owner: { token: expect.any(String) },
    })
    expect((await get(bob, '/api/admin/sessions')).status).toBe(403)
    expect(
      (await call(bob, `/api/admin/sessions/${id}/assign`, 'POST', { userId: bob.me.user.id })).status,
    ).toBe(403)
    expect((await call(alice, `/api/admin/sessions/${id}/assign`, 'POST', { userId: 'nobody' })).status).toBe(
      404,
    )
    expect(
      (await call(alice, '/api/admin/sessions/no-such/assign', 'POST', { userId: bob.me.user.id })).status,
    ).toBe(404)
    const bad = await call(alice, `/api/admin/sessions/${id}/assign`, 'POST', { user: bob.me.user.id })
    expect(bad.status).toBe(400)
    expect(await json(bad)).toMatchObject({ error: { code: 'invalid_request' } })

    const assigned = await call(alice, `/api/admin/sessions/${id}/assign`, 'POST', { userId: bob.me.user.id })
    expect(assigned.status).toBe(200)
    expect(await json(assigned)).toEqual({ id, userId: bob.me.user.id })
    expect((await get(bob, `/api/sessions/${id}`)).status).toBe(200)
    expect((await bearer(TOKEN, `/api/sessions/${id}`)).status).toBe(404)
    expect(
      (await json<Array<{ id: string }>>(await get(alice, '/api/admin/sessions'))).map((s) => s.id),
    ).not.toContain(id)
    // Bob's now: not moved to another user, though assigning it to Bob again is no error.
    const taken = await call(alice, `/api/admin/sessions/${id}/assign`, 'POST', { userId: alice.me.user.id })
    expect(taken.status).toBe(409)
    expect(
      (await call(alice, `/api/admin/sessions/${id}/assign`, 'POST', { userId: bob.me.user.id })).status,
    ).toBe(200)
    const audit = await json<Array<{ action: string; actor?: string; target?: string; detail?: unknown }>>(
      await get(alice, '/api/admin/audit?limit=50'),
    )
    expect(audit.filter((e) => e.action === 'session-assigned')).toEqual([
      expect.objectContaining({
        actor: alice.me.user.id,
        target: id,
        detail: { userId: bob.me.user.id, from: { token: expect.any(String) } },
      }),
    ])
  })
})

describe('shares', () => {
  it('shares a session read-only by link, without its data unless allowed; forks it; revokes at once', async () => {
    const alice = await signIn('alice')
    const bob = await signIn('bob')
    const id = await sessionWithArtifact(alice)
    const form = new FormData()
    form.append('file', new Blob([readFileSync(SALES)]), 'sales.csv')
    const uploaded = await request(alice.jar, `${base}/api/sessions/${id}/files`, {
      method: 'POST',
      body: form,
      headers: { origin: base, 'x-csrf-token': alice.me.csrfToken },
    })
    expect(uploaded.status).toBe(201)

    const shared = await call(alice, `/api/sessions/${id}/share`, 'POST', {})
    expect(shared.status).toBe(201)
    const share = await json<{ id: string; url: string }>(shared)
    expect(share.url).toBe(`${base}/s/${share.id}`)
    expect((await get(bob, `/s/${share.id}`)).status).toBe(200) // the web UI's page

    const view = await json<{
      share: { allowFiles: boolean }
      session: {
        title: string
        runs: Array<{ answer: string; steps: Array<{ code: string; artifacts: Array<{ url: string }> }> }>
        datasets: Array<Record<string, unknown>>
      }
    }>(await get(bob, `/api/shared/${share.id}`))
    expect(view.session.title).toBe('Revenue')
    expect(view.session.runs[0]?.answer).toBe('Revenue is 10.')
    expect(view.session.runs[0]?.steps[0]?.code).toBe("df.to_csv('out.csv')")
    expect(view.session.datasets).toEqual([{ name: 'sales.csv', bytes: expect.any(Number) }])
    const artifact = view.session.runs[0]?.steps[0]?.artifacts[0]?.url as string
    expect(artifact).toBe(`/api/shared/${share.id}/artifacts/out.csv`)
    const file = await get(bob, artifact)
    expect(file.status).toBe(200)
    expect(await file.text()).toBe('region,revenue\nwest,10\n')
    // Read-only: the share is no key to the session itself.
    expect((await get(bob, `/api/sessions/${id}`)).status).toBe(404)
    expect((await call(bob, `/api/sessions/${id}/share`, 'DELETE')).status).toBe(404)
    expect((await call(bob, `/api/shared/${share.id}/fork`, 'POST')).status).toBe(403)
    // The data file itself: its owner downloads it as uploaded; through the share, not yet.
    const own = await get(alice, `/api/sessions/${id}/files/sales.csv`)
    expect(own.status).toBe(200)
    expect(own.headers.get('content-disposition')).toContain('attachment')
    expect(Buffer.from(await own.arrayBuffer()).equals(readFileSync(SALES))).toBe(true)
    expect((await get(bob, `/api/sessions/${id}/files/sales.csv`)).status).toBe(404)
    expect((await get(bob, `/api/shared/${share.id}/files/sales.csv`)).status).toBe(403)

    // The owner allows the data files: the profile shows, and a fork is Bob's own, with the data.
    expect((await call(alice, `/api/sessions/${id}/share`, 'POST', { allowFiles: true })).status).toBe(201)
    const withFiles = await json<{ session: { datasets: Array<{ profile?: { rows: number } }> } }>(
      await get(bob, `/api/shared/${share.id}`),
    )
    expect(withFiles.session.datasets[0]?.profile?.rows).toBe(400)
    const viewed = await get(bob, `/api/shared/${share.id}/files/sales.csv`)
    expect(viewed.status).toBe(200)
    expect(Buffer.from(await viewed.arrayBuffer()).equals(readFileSync(SALES))).toBe(true)
    expect((await get(bob, `/api/shared/${share.id}/files/nope.csv`)).status).toBe(404)
    const forked = await call(bob, `/api/shared/${share.id}/fork`, 'POST')
    expect(forked.status).toBe(201)
    const { id: copy } = await json<{ id: string }>(forked)
    const detail = await json<{ runs: Array<{ answer: string }>; datasets: Array<{ name: string }> }>(
      await get(bob, `/api/sessions/${copy}`),
    )
    expect(detail.runs.map((r) => r.answer)).toEqual(['Revenue is 10.'])
    expect(detail.datasets.map((d) => d.name)).toEqual(['sales.csv'])
    expect((await get(bob, `/api/sessions/${copy}/artifacts/out.csv`)).status).toBe(200)
    expect((await get(alice, `/api/sessions/${copy}`)).status).toBe(404)

    expect((await call(alice, `/api/sessions/${id}/share`, 'DELETE')).status).toBe(204)
    expect((await get(bob, `/api/shared/${share.id}`)).status).toBe(404)
    expect((await get(bob, artifact)).status).toBe(404)
    expect((await fetch(`${base}/api/shared/${share.id}`)).status).toBe(401)
  })
})
