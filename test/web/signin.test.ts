/**
 * Sign-in in a real browser: Debian's Chromium (playwright-core) against the real server and a
 * real OpenID Connect provider (oidc-provider on 127.0.0.1). The page sends the browser to the
 * provider, the user logs in there, the callback brings them back, the UI shows their name; they
 * make an API key (shown once); then sign out, at the provider too. A signed-out browser opening
 * a share link is sent to sign in by the server and brought back; a refused sign-in is a page that
 * says why. A user shares a session with the Share button; a colleague opens the link, reads it,
 * and continues from there in a session of their own.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { LocalProvider } from '../../src/sandbox/local/index.js'
import { userOwner } from '../../src/server/auth/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { freePort } from '../../src/test/support/ports.js'
import { hasChromium, launchChromium } from '../support/chromium.js'
import {
  type RunningIdentityProvider,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'

const WEB = resolve('dist/web/index.html')
const SALES = resolve('examples/sales.csv')

describe.skipIf(!hasChromium)('sign-in in Chromium', () => {
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
        alice: { name: 'Alice Analyst', email: 'alice@example.com', groups: ['analysts'] },
        bob: { name: 'Bob Builder', email: 'bob@example.com', groups: ['analysts'] },
        eve: { name: 'Eve Outsider', email: 'eve@example.com', groups: ['contractors'] },
      },
      redirectUris: [`${base}/auth/callback`],
      postLogoutRedirectUris: [`${base}/`],
    })
    home = mkdtempSync(join(tmpdir(), 'analyst-signin-home-'))
    profileDir = mkdtempSync(join(tmpdir(), 'analyst-signin-chromium-'))
    server = await startServer({
      port,
      home,
      provider,
      tokens: [],
      signin: signInSettingsFor(idp, base, { ANALYST_OIDC_ALLOWED_GROUPS: 'analysts' }),
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

  it('redirects to the provider, comes back signed in with the name shown, makes a key, signs out', async ({
    onTestFailed,
  }) => {
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    onTestFailed(async () => {
      const shot = join(tmpdir(), 'analyst-web-signin-failed.png')
      await page.screenshot({ path: shot }).catch(() => undefined)
      process.stderr.write(
        `[signin test] failed at ${page.url()}; screenshot: ${shot}; errors: ${JSON.stringify(errors)}\n`,
      )
    })

    // Nobody is signed in: the page sends the browser to the provider's login form.
    await page.goto(`${base}/#/keys`)
    await page.waitForURL((url) => url.origin === idp.issuer)
    await page.locator('input[name=login]').fill('alice')
    await page.locator('input[name=password]').fill('any password')
    await page.locator('button[type=submit]').click()

    // Back through the callback, to the page asked for, signed in.
    await page.waitForURL((url) => url.origin === base && url.hash === '#/keys')
    await expect.poll(() => page.locator('.account-name').textContent()).toBe('Alice Analyst')
    const cookies = await context?.cookies(base)
    const session = cookies?.find((cookie) => cookie.name === 'analyst_session')
    expect(session?.httpOnly).toBe(true)
    expect(session?.sameSite).toBe('Lax')

    // An API key: its secret shown this once, the key listed without it.
    await page.getByRole('textbox', { name: 'Label' }).fill('laptop')
    await page.getByRole('button', { name: 'Make a key' }).click()
    const secret = (await page.locator('.new-key .secret').textContent()) as string
    expect(secret).toMatch(/^ak_/)
    await page.locator('table.keys td', { hasText: 'laptop' }).waitFor()
    expect(await page.locator('table.keys').textContent()).not.toContain(secret)
    const withKey = await fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${secret}` } })
    expect(((await withKey.json()) as { user: { name: string } }).user.name).toBe('Alice Analyst')

    // Sign out: the provider asks to confirm, then sends the browser back, signed out.
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL((url) => url.origin === idp.issuer)
    await page.locator('button[name=logout]').click()
    // Back at Analyst with no sign-in: the page sends the browser to the provider's login again.
    await page.waitForURL((url) => url.origin === idp.issuer && url.pathname.startsWith('/interaction/'))
    const me = await context?.request.get(`${base}/api/me`)
    expect(me?.status()).toBe(401)
    expect(errors).toEqual([])
  })

  it('sends a signed-out browser from a share link to sign in and back; shows a refused sign-in as a page', async ({
    onTestFailed,
  }) => {
    onTestFailed(async () => {
      const shot = join(tmpdir(), 'analyst-web-signin-share-failed.png')
      await page.screenshot({ path: shot }).catch(() => undefined)
      process.stderr.write(`[signin test] failed at ${page.url()}; screenshot: ${shot}\n`)
    })
    await context?.clearCookies()
    const link = `${base}/s/a-share-link`
    const answers = new Map<string, number>()
    page.on('response', (response) => answers.set(response.url(), response.status()))
    await page.goto(link)
    await page.waitForURL((url) => url.origin === idp.issuer)
    // The server sent it on (a redirect), before any page of the UI loaded.
    expect(answers.get(link)).toBe(302)
    expect(answers.get(`${base}/auth/login?next=${encodeURIComponent('/s/a-share-link')}`)).toBe(302)
    await page.locator('input[name=login]').fill('alice')
    await page.locator('input[name=password]').fill('any password')
    await page.locator('button[type=submit]').click()
    await page.waitForURL(link)
    // Signed in, the shared page asks for the link (made up here): not found, rather than sign in.
    await page.getByText('This link does not exist any more').waitFor()
    expect(answers.get(`${base}/api/shared/a-share-link`)).toBe(404)

    // Eve is in no allowed group: the callback answers a page, not JSON.
    await context?.clearCookies()
    await page.goto(`${base}/auth/login`)
    await page.waitForURL((url) => url.origin === idp.issuer)
    await page.locator('input[name=login]').fill('eve')
    await page.locator('input[name=password]').fill('any password')
    await page.locator('button[type=submit]').click()
    await page.waitForURL((url) => url.origin === base && url.pathname === '/auth/callback')
    await expect
      .poll(() => page.locator('body').textContent())
      .toContain('eve@example.com may not use this Analyst: not in an allowed group')
    expect(await page.getByRole('link', { name: 'Sign in again' }).getAttribute('href')).toBe('/auth/login')
  })

  it('shares a session with the Share button; a colleague reads it by its link and continues from there', async ({
    onTestFailed,
  }) => {
    onTestFailed(async () => {
      const shot = join(tmpdir(), 'analyst-web-share-failed.png')
      await page.screenshot({ path: shot }).catch(() => undefined)
      process.stderr.write(`[signin test] failed at ${page.url()}; screenshot: ${shot}\n`)
    })
    const signInAs = async (login: string) => {
      await page.waitForURL((url) => url.origin === idp.issuer)
      await page.locator('input[name=login]').fill(login)
      await page.locator('input[name=password]').fill('any password')
      await page.locator('button[type=submit]').click()
    }
    await context?.clearCookies()
    await page.goto(`${base}/`)
    await signInAs('alice')
    await expect.poll(() => page.locator('.account-name').textContent()).toBe('Alice Analyst')
    // Alice's session with one answered question (recorded as a run would record it).
    const me = (await (await page.request.get(`${base}/api/me`)).json()) as { user: { id: string } }
    const history = server?.stores.history
    if (!history) throw new Error('no server')
    const session = await history.createSession({ title: 'Revenue by region', owner: userOwner(me.user.id) })
    const run = await history.startRun(session.id, 'Which region sells most?')
    await history.finishRun(run.id, {
      answer: 'The west sells most.',
      incomplete: false,
      unsupportedNumbers: [],
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    })

    await page.goto(`${base}/#/s/${session.id}`)
    await page.getByText('The west sells most.').waitFor()
    await page.setInputFiles('input[type=file]', SALES)
    await page.locator('.dataset-name', { hasText: 'sales.csv' }).waitFor()
    await page.getByRole('button', { name: 'Share' }).click()
    const dialog = page.getByRole('dialog', { name: 'Share' })
    const link = dialog.getByRole('textbox', { name: 'Link' })
    await expect.poll(() => link.inputValue()).toMatch(new RegExp(`^${base}/s/`))
    const url = await link.inputValue()
    // The viewers may have the data file too.
    await dialog.getByRole('checkbox').check()
    const shareId = url.slice(`${base}/s/`.length)
    await expect
      .poll(
        async () =>
          (await (await page.request.get(`${base}/api/shared/${shareId}`)).json()).share?.allowFiles,
      )
      .toBe(true)

    // Bob, signed in by the link, reads it and continues from there: a session of his own.
    await context?.clearCookies()
    await page.goto(url)
    await signInAs('bob')
    await page.waitForURL(url)
    await page.getByText('The west sells most.').waitFor()
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Revenue by region')
    // The data file downloads from the shared page, as uploaded.
    const download = page.getByRole('link', { name: 'sales.csv' })
    await download.waitFor()
    const downloaded = await page.evaluate(
      async (href) => (await fetch(href as string)).text(),
      await download.getAttribute('href'),
    )
    expect(downloaded).toBe(readFileSync(SALES, 'utf8'))
    await page.getByRole('button', { name: 'Continue from here' }).click()
    await page.waitForURL((to) => to.origin === base && to.hash.startsWith('#/s/') && to.pathname === '/')
    const forked = decodeURIComponent(new URL(page.url()).hash.slice('#/s/'.length))
    expect(forked).not.toBe(session.id)
    await page.getByText('The west sells most.').waitFor()
    const bob = (await (await page.request.get(`${base}/api/me`)).json()) as { user: { id: string } }
    expect((await history.getSession(forked))?.owner).toBe(userOwner(bob.user.id))
    expect((await history.getSession(session.id))?.owner).toBe(userOwner(me.user.id))
  })
})
