/**
 * Sign-in across replicas: two servers over one PostgreSQL store (a throwaway cluster), as behind
 * a load balancer (one public URL). A browser signed in on one is signed in on the other; an admin
 * disables a user on one and the other refuses that user's cookie and API key at the next request.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { signInSettingsFromEnv } from '../../src/server/auth/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { freePort } from '../../src/test/support/ports.js'
import { type PostgresCluster, startPostgres } from '../../src/test/support/postgres.js'
import {
  CookieJar,
  followSignIn,
  type RunningIdentityProvider,
  request,
  startIdentityProvider,
} from '../support/identity-provider.js'

const USERS = {
  alice: { name: 'Alice Admin', email: 'alice@example.com', groups: ['staff', 'admins'] },
  bob: { name: 'Bob', email: 'bob@example.com', groups: ['staff'] },
}

let cluster: PostgresCluster
let idp: RunningIdentityProvider
const replicas: RunningServer[] = []
const homes: string[] = []
const provider = new LocalProvider({ poolSize: 0 })
let publicUrl: string

beforeAll(async () => {
  cluster = await startPostgres()
  const databaseUrl = await cluster.createDatabase()
  const ports = [await freePort(), await freePort()]
  publicUrl = `http://127.0.0.1:${ports[0]}`
  idp = await startIdentityProvider({ users: USERS, redirectUris: [`${publicUrl}/auth/callback`] })
  const settings = signInSettingsFromEnv({
    ANALYST_OIDC_ISSUER: idp.issuer,
    ANALYST_OIDC_CLIENT_ID: idp.clientId,
    ANALYST_OIDC_CLIENT_SECRET: idp.clientSecret,
    ANALYST_PUBLIC_URL: publicUrl,
    ANALYST_OIDC_SCOPES: 'openid email profile groups',
    ANALYST_OIDC_ALLOWED_DOMAINS: 'example.com',
    ANALYST_OIDC_ADMIN_GROUPS: 'admins',
  })
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
  await cluster?.stop()
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

describe('sign-in over two replicas and one PostgreSQL', () => {
  it('knows a browser signed in on the other replica, and stops a disabled user at once on both', async () => {
    const bob = await signIn('bob')
    const alice = await signIn('alice')
    const { a, b } = bob
    // Bob makes a key on replica B; it works on A.
    const made = await request(bob.jar, `${b}/api/keys`, {
      method: 'POST',
      headers: { origin: publicUrl, 'x-csrf-token': bob.me.csrfToken, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'script' }),
    })
    expect(made.status).toBe(201)
    const { key } = (await made.json()) as { key: string }
    const withKey = (url: string) =>
      fetch(`${url}/api/sessions`, { headers: { authorization: `Bearer ${key}` } })
    expect((await withKey(a)).status).toBe(200)
    expect((await request(bob.jar, `${a}/api/me`)).status).toBe(200)

    // Alice disables Bob on replica A: replica B refuses him at his next request.
    const disabled = await request(alice.jar, `${a}/api/admin/users/${bob.me.user.id}/disable`, {
      method: 'POST',
      headers: { origin: publicUrl, 'x-csrf-token': alice.me.csrfToken },
    })
    expect(disabled.status).toBe(200)
    expect((await request(bob.jar, `${b}/api/me`)).status).toBe(401)
    expect((await withKey(b)).status).toBe(401)
    expect((await withKey(a)).status).toBe(401)
    // The audit entry is in the shared store, seen from either replica.
    const audit = (await (await request(alice.jar, `${b}/api/admin/audit`)).json()) as Array<{
      action: string
    }>
    expect(audit.map((e) => e.action)).toContain('user-disabled')
  })
})
