/**
 * The admin page in a real browser (Debian's Chromium through playwright-core), against the real
 * server and a real OpenID Connect provider: an admin signs in, sees a session that an
 * ANALYST_TOKEN token made before sign-in, and gives it to a user; from then on it is that user's
 * (listed for them, gone from the token's sessions), and the users table counts it and lists it.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { freePort } from '../../src/test/support/ports.js'
import { hasChromium, launchChromium } from '../support/chromium.js'
import {
  type RunningIdentityProvider,
  request,
  signIn,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'

const WEB = resolve('dist/web/index.html')
const TOKEN = 'a-token-from-before-sign-in'

describe.skipIf(!hasChromium)('the admin page in Chromium', () => {
  let home: string
  let profileDir: string
  let idp: RunningIdentityProvider
  let server: RunningServer | undefined
  let context: BrowserContext | undefined
  let page: Page
  let base: string
  const provider = new LocalProvider({ poolSize: 0 })

  beforeAll(async () => {
    if (!existsSync(WEB)) throw new Error('dist/web is missing: run `npm run build` first')
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    idp = await startIdentityProvider({
      users: {
        alice: { name: 'Alice Admin', email: 'alice@example.com', groups: ['analysts', 'analyst-admins'] },
        bob: { name: 'Bob Builder', email: 'bob@example.com', groups: ['analysts'] },
      },
      redirectUris: [`${base}/auth/callback`],
    })
    home = mkdtempSync(join(tmpdir(), 'analyst-admin-home-'))
    profileDir = mkdtempSync(join(tmpdir(), 'analyst-admin-chromium-'))
    server = await startServer({
      port,
      home,
      provider,
      tokens: [TOKEN],
      signin: signInSettingsFor(idp, base, {
        ANALYST_OIDC_ALLOWED_GROUPS: 'analysts',
        ANALYST_OIDC_ADMIN_GROUPS: 'analyst-admins',
      }),
    })
    context = await launchChromium(profileDir)
    page = context.pages()[0] ?? (await context.newPage())
    page.setDefaultTimeout(45_000)
  }, 120_000)

  afterAll(async () => {
    await context?.close()
    await server?.close()
    await idp?.stop()
    await provider.close()
    rmSync(home, { recursive: true, force: true })
    rmSync(profileDir, { recursive: true, force: true })
  })

  it("gives a token's session to a user, who then has it; the token no longer does", async ({
    onTestFailed,
  }) => {
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    onTestFailed(async () => {
      const shot = join(tmpdir(), 'analyst-web-admin-failed.png')
      await page.screenshot({ path: shot }).catch(() => undefined)
      process.stderr.write(
        `[admin test] failed at ${page.url()}; screenshot: ${shot}; errors: ${JSON.stringify(errors)}\n`,
      )
    })
    const byToken = (path: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${TOKEN}` } })
    // Bob has signed in once (so he is a user); a script made a session with the token before.
    const bob = await signIn(base, 'bob')
    const made = await byToken('/api/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Quarterly revenue' }),
    })
    expect(made.status).toBe(201)
    const { id } = (await made.json()) as { id: string }

    await page.goto(`${base}/#/admin`)
    await page.waitForURL((url) => url.origin === idp.issuer)
    await page.locator('input[name=login]').fill('alice')
    await page.locator('input[name=password]').fill('any password')
    await page.locator('button[type=submit]').click()
    await page.waitForURL((url) => url.origin === base && url.hash === '#/admin')

    const unowned = page.getByRole('region', { name: 'Sessions no user owns' })
    const row = unowned.getByRole('row', { name: /Quarterly revenue/ })
    await row.waitFor()
    expect(await row.textContent()).toContain('token ')
    const give = row.getByRole('button', { name: 'Give' })
    expect(await give.isDisabled()).toBe(true)
    await row
      .getByRole('combobox', { name: 'Give Quarterly revenue to' })
      .selectOption({ label: 'Bob Builder (bob@example.com)' })
    await give.click()
    await unowned.getByText('None.').waitFor()

    // Bob's now: listed for him and open to him; the token's sessions no longer have it.
    const users = page.getByRole('region', { name: 'Users' })
    await expect
      .poll(
        async () =>
          await users
            .getByRole('row', { name: /Bob Builder/ })
            .locator('td')
            .nth(3)
            .textContent(),
      )
      .toBe('1')
    // The admin sees which sessions Bob has (titles, not their content).
    await users.getByRole('button', { name: 'Sessions of Bob Builder' }).click()
    await users.getByRole('list', { name: "Bob Builder's sessions" }).getByText('Quarterly revenue').waitFor()
    expect((await request(bob.jar, `${base}/api/me`)).status).toBe(200)
    const mine = (await (await request(bob.jar, `${base}/api/sessions`)).json()) as Array<{ id: string }>
    expect(mine.map((session) => session.id)).toEqual([id])
    expect((await request(bob.jar, `${base}/api/sessions/${id}`)).status).toBe(200)
    const theirs = (await (await byToken('/api/sessions')).json()) as Array<{ id: string }>
    expect(theirs.map((session) => session.id)).not.toContain(id)
    expect((await byToken(`/api/sessions/${id}`)).status).toBe(404)
    const audit = (await server?.stores.auth.audit({ limit: 20 })) ?? []
    expect(audit.find((entry) => entry.action === 'session-assigned')?.target).toBe(id)
    expect(errors).toEqual([])
  })
})
