/**
 * Sign-in across replicas: two servers over one PostgreSQL store (a throwaway cluster), as behind
 * a load balancer (one public URL). A browser signed in on one is signed in on the other. Each
 * replica serves keys and cookies from its identity cache, kept here for an hour: an admin
 * disables a user, a key is revoked, a browser signs out on one replica, and that replica refuses
 * at once, the other as soon as the store's notice reaches it (not when the hour is up).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { freePort } from '../../src/test/support/ports.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import {
  CookieJar,
  followSignIn,
  type RunningIdentityProvider,
  request,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'

const USERS = {
  alice: { name: 'Alice Admin', email: 'alice@example.com', groups: ['staff', 'admins'] },
  bob: { name: 'Bob', email: 'bob@example.com', groups: ['staff'] },
  carol: { name: 'Carol', email: 'carol@example.com', groups: ['staff'] },
}
/** Longer than any test (its clock moves too): a refusal is the notice's doing, not the cache's expiry. */
const CACHE_TTL_MS = 30 * 24 * 3_600_000
/** The notice crosses one local PostgreSQL: it comes in milliseconds; this is the deadline. */
const NOTICE = { timeout: 5_000, interval: 20 }

let cluster: SharedPostgres
let idp: RunningIdentityProvider
const replicas: RunningServer[] = []
const homes: string[] = []
const provider = new LocalProvider({ poolSize: 0 })
let publicUrl: string
let databaseUrl: string
/** How far both replicas' sign-in clock is ahead of the real one. */
let skewMs = 0
const HOUR_MS = 3_600_000

beforeAll(async () => {
  cluster = await sharedPostgres()
  databaseUrl = await cluster.createDatabase()
  const ports = [await freePort(), await freePort()]
  publicUrl = `http://127.0.0.1:${ports[0]}`
  idp = await startIdentityProvider({ users: USERS, redirectUris: [`${publicUrl}/auth/callback`] })
  const env = signInSettingsFor(idp, publicUrl, {
    ANALYST_OIDC_ALLOWED_DOMAINS: 'example.com',
    ANALYST_OIDC_ADMIN_GROUPS: 'admins',
  })
  const settings = { ...env, cacheTtlMs: CACHE_TTL_MS, clock: () => Date.now() + skewMs }
  for (const port of ports) {
    const home = mkdtempSync(join(tmpdir(), 'analyst-replica-'))
    homes.push(home)
    replicas.push(await startServer({ port, home, databaseUrl, provider, tokens: [], signin: settings }))
  }
}, 120_000)

afterAll(async () => {
  for (const replica of replicas) await replica.close()
  await idp?.stop()
  await provider.close()
  for (const home of homes) rmSync(home, { recursive: true, force: true })
})

/** Signs in at the first replica; the same cookie, sent to the second, as a load balancer would. */
async function signIn(login: keyof typeof USERS) {
  const jar = new CookieJar()
  await followSignIn(jar, `${publicUrl}/auth/login`, login)
  const cookie = jar.get(publicUrl, 'analyst_session') as string
  expect(cookie).toBeTruthy()
  const [a, b] = replicas.map((r) => r.url) as [string, string]
  jar.set(b, 'analyst_session', cookie)
  const me = (await (await request(jar, `${b}/api/me`)).json()) as { user: { id: string }; csrfToken: string }
  return { jar, me, a, b }
}

/** SQL straight to the database, past the store: it tells no replica anything. */
async function behindTheStoresBack(text: string, values: unknown[]) {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query(text, values)
  } finally {
    await client.end()
  }
}

const post = (who: { jar: CookieJar; me: { csrfToken: string } }, url: string, init: RequestInit = {}) =>
  request(who.jar, url, {
    ...init,
    method: init.method ?? 'POST',
    headers: { origin: publicUrl, 'x-csrf-token': who.me.csrfToken, 'content-type': 'application/json' },
  })

describe('sign-in over two replicas and one PostgreSQL', () => {
  it('knows a browser signed in on the other replica, and stops a disabled user at once on both', async () => {
    const bob = await signIn('bob')
    const alice = await signIn('alice')
    const { a, b } = bob
    // Bob makes a key on replica B; it works on A.
    const made = await post(bob, `${b}/api/keys`, { body: JSON.stringify({ label: 'script' }) })
    expect(made.status).toBe(201)
    const { key } = (await made.json()) as { key: string }
    const withKey = (url: string) =>
      fetch(`${url}/api/sessions`, { headers: { authorization: `Bearer ${key}` } })
    expect((await withKey(a)).status).toBe(200)
    expect((await withKey(b)).status).toBe(200)
    expect((await request(bob.jar, `${a}/api/me`)).status).toBe(200)
    expect((await request(bob.jar, `${b}/api/me`)).status).toBe(200)

    // Both replicas answer from their cache: a change made past the store (no notice) goes
    // unseen. So the refusals below come from the notice of the admin's change.
    await behindTheStoresBack('update users set disabled = 1 where id = $1', [bob.me.user.id])
    expect((await withKey(a)).status).toBe(200)
    expect((await withKey(b)).status).toBe(200)
    expect((await request(bob.jar, `${b}/api/me`)).status).toBe(200)
    await behindTheStoresBack('update users set disabled = 0 where id = $1', [bob.me.user.id])

    // Alice disables Bob on replica A: A refuses him at once, B as soon as the notice comes.
    const disabled = await post(alice, `${a}/api/admin/users/${bob.me.user.id}/disable`)
    expect(disabled.status).toBe(200)
    expect((await withKey(a)).status).toBe(401)
    await expect.poll(async () => (await withKey(b)).status, NOTICE).toBe(401)
    await expect.poll(async () => (await request(bob.jar, `${b}/api/me`)).status, NOTICE).toBe(401)
    // The audit entry is in the shared store, seen from either replica.
    const audit = (await (await request(alice.jar, `${b}/api/admin/audit`)).json()) as Array<{
      action: string
    }>
    expect(audit.map((e) => e.action)).toContain('user-disabled')
  })

  it('stops a revoked key and a signed-out browser on the other replica, though both were cached there', async () => {
    const carol = await signIn('carol')
    const { a, b } = carol
    const made = await post(carol, `${a}/api/keys`, { body: JSON.stringify({ label: 'ci' }) })
    const { id, key } = (await made.json()) as { id: string; key: string }
    const withKey = (url: string) =>
      fetch(`${url}/api/sessions`, { headers: { authorization: `Bearer ${key}` } })
    expect((await withKey(a)).status).toBe(200)
    expect((await withKey(b)).status).toBe(200)

    expect((await post(carol, `${a}/api/keys/${id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await withKey(a)).status).toBe(401)
    await expect.poll(async () => (await withKey(b)).status, NOTICE).toBe(401)

    // Signed out on B: the same cookie, which A has cached, stops working on A.
    expect((await request(carol.jar, `${a}/api/me`)).status).toBe(200)
    const cookie = carol.jar.get(a, 'analyst_session') as string
    expect((await post(carol, `${b}/auth/logout`)).status).toBe(200)
    const onA = () => fetch(`${a}/api/me`, { headers: { cookie: `analyst_session=${cookie}` } })
    await expect.poll(async () => (await onA()).status, NOTICE).toBe(401)
  })

  it('does not end a browser session as idle on one replica while it is in use on the other', async () => {
    const carol = await signIn('carol')
    const { a, b } = carol
    const me = (url: string) => request(carol.jar, `${url}/api/me`)
    try {
      expect((await me(a)).status).toBe(200)
      expect((await me(b)).status).toBe(200)
      // Used on A only for a while: B's copy says it was last used 13 hours ago (idle after 12).
      skewMs = 7 * HOUR_MS
      expect((await me(a)).status).toBe(200)
      skewMs = 13 * HOUR_MS
      expect((await me(b)).status).toBe(200) // B asked the store, which knows A's use
      // Idle on both for 12 hours more: ended, on either.
      skewMs = 26 * HOUR_MS
      expect((await me(a)).status).toBe(401)
      await expect.poll(async () => (await me(b)).status, NOTICE).toBe(401)
    } finally {
      skewMs = 0
    }
  })
})
