/**
 * Accessibility and small screens in Chromium (playwright-core), against the real server, a real
 * OpenID Connect provider and the real kernel: axe-core finds no serious or critical violation on
 * any page (a session with a chart, a table and an error; its shared page; admin; keys; a refused
 * sign-in), nor on the session's panel opened as a sheet at 390×844 (which holds the keyboard
 * until Esc or a press outside it, after which the focus is back on its button; a press in the key
 * list over it leaves it open), in the light and the dark theme; focus always shows; at 390×844 the pages never
 * scroll sideways. The shared page shows the chart as its owner retitled it, read-only.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { ModelChoice } from '../../src/models/index.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { freePort } from '../../src/test/support/ports.js'
import { seriousViolations, sidewaysOverflow, unseenFocus } from '../support/axe.js'
import { hasChromium, launchChromium } from '../support/chromium.js'
import {
  type RunningIdentityProvider,
  signInSettingsFor,
  startIdentityProvider,
} from '../support/identity-provider.js'

const WEB = resolve('dist/web/index.html')
const SALES = resolve('examples/sales.csv')
const EDITED_TITLE = 'Revenue by region, as its owner titled it'

function scriptedModel(): ModelChoice {
  const model = new ScriptedModel([
    {
      text: 'Revenue by region, as a chart.',
      code: [
        'import pandas as pd',
        "sales = pd.read_csv('data/sales.csv')",
        "sales.groupby('region')['order_value'].sum().plot.bar(title='Revenue by region')",
      ].join('\n'),
    },
    { text: 'The largest orders.', code: "sales.nlargest(20, 'order_value')" },
    { text: 'A column that is not there.', code: "sales['no_such_column'].sum()" },
    { text: 'The West brings the most revenue; the chart and the table above show it.' },
  ])
  return { model, spec: 'scripted:script', provider: 'custom', modelId: 'script', mode: 'tools' }
}

describe.skipIf(!hasChromium)('accessibility and small screens in Chromium', () => {
  let home: string
  let profileDir: string
  let idp: RunningIdentityProvider
  let server: RunningServer | undefined
  let context: BrowserContext | undefined
  let page: Page
  let base: string
  const provider = new LocalProvider({ poolSize: 0 })
  /** Every page to check, once the session exists: its name and its address. */
  const pages: { name: string; url: string }[] = []

  beforeAll(async () => {
    if (!existsSync(WEB)) throw new Error('dist/web is missing: run `npm run build` first')
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    idp = await startIdentityProvider({
      users: { alice: { name: 'Alice Admin', email: 'alice@example.com', groups: ['analysts', 'admins'] } },
      redirectUris: [`${base}/auth/callback`],
    })
    home = mkdtempSync(join(tmpdir(), 'analyst-a11y-home-'))
    profileDir = mkdtempSync(join(tmpdir(), 'analyst-a11y-chromium-'))
    const model = scriptedModel()
    server = await startServer({
      port,
      home,
      provider,
      model: async () => model,
      tokens: [],
      signin: signInSettingsFor(idp, base, {
        ANALYST_OIDC_ALLOWED_GROUPS: 'analysts',
        ANALYST_OIDC_ADMIN_GROUPS: 'admins',
      }),
    })
    context = await launchChromium(profileDir)
    page = context.pages()[0] ?? (await context.newPage())
    page.setDefaultTimeout(45_000)

    // Signed in, a session with a chart, a table and an error, shared by link.
    await page.goto(base)
    await page.waitForURL((url) => url.origin === idp.issuer)
    await page.locator('input[name=login]').fill('alice')
    await page.locator('input[name=password]').fill('any password')
    await page.locator('button[type=submit]').click()
    await page.waitForURL((url) => url.origin === base)
    await page.setInputFiles('input[type=file]', SALES)
    await page.locator('.dataset-name', { hasText: 'sales.csv' }).waitFor()
    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    await box.fill('Which region brings the most revenue?')
    await box.press('Enter')
    await page.locator('.answer', { hasText: 'The West brings the most revenue' }).waitFor()
    await page.locator('.step-error').waitFor()
    // The owner retitles the chart: kept with the step, the shared page shows it so.
    const figure = page.locator('.run figure.chart').first()
    await figure.getByText('Titles', { exact: true }).click()
    await figure.getByRole('textbox', { name: 'Chart title' }).fill(EDITED_TITLE)
    await figure.getByRole('textbox', { name: 'Chart title' }).press('Tab')
    await figure.getByRole('status').filter({ hasText: 'Kept with the step' }).waitFor()
    await page.getByRole('button', { name: 'Share' }).click()
    const link = page.getByRole('dialog', { name: 'Share' }).getByRole('textbox', { name: 'Link' })
    await link.waitFor()
    const session = page.url()
    pages.push(
      { name: 'session', url: session },
      { name: 'shared', url: await link.inputValue() },
      { name: 'admin', url: `${base}/#/admin` },
      { name: 'keys', url: `${base}/#/keys` },
      { name: 'refused sign-in', url: `${base}/auth/callback?error=access_denied` },
    )
  }, 180_000)

  afterAll(async () => {
    await context?.close()
    await server?.close()
    await idp?.stop()
    await provider.close()
    rmSync(home, { recursive: true, force: true })
    rmSync(profileDir, { recursive: true, force: true })
  })

  /** Opens a page and waits for what it is for to be drawn. */
  async function open(name: string, url: string) {
    await page.goto('about:blank')
    await page.goto(url)
    if (name === 'session') {
      await page.locator('.run figure.chart').first().waitFor()
      // The chart drawn by Vega (loaded with the first chart), and its tools, are checked too.
      await page.locator('.run figure.chart .chart-canvas svg .mark-rect path').first().waitFor()
      // Every step open: the code, the table, the error's traceback are all checked.
      const closed = page.locator('.step-head[aria-expanded=false]')
      while ((await closed.count()) > 0) await closed.first().click()
      await page.locator('.run pre.output.error').waitFor()
    } else if (name === 'shared') await page.locator('.run .answer').waitFor()
    else if (name === 'admin') await page.getByRole('region', { name: 'Users' }).waitFor()
    else if (name === 'keys') await page.getByRole('button', { name: 'Make a key' }).waitFor()
    else await page.getByRole('heading', { name: 'Not allowed' }).waitFor()
  }

  it('has no serious or critical axe violation on any page, in either theme; focus shows', async () => {
    const found: Record<string, unknown> = {}
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme })
      for (const { name, url } of pages) {
        await open(name, url)
        const violations = await seriousViolations(page)
        if (violations.length) found[`${name} (${colorScheme})`] = violations
      }
    }
    expect(found).toEqual({})
    await page.emulateMedia({ colorScheme: 'light' })
    await open('session', pages[0]?.url as string)
    expect(await unseenFocus(page, 25)).toEqual([])
  }, 180_000)

  it("shows the owner's chart on the shared page as it was shaped, read-only", async () => {
    await open('shared', pages[1]?.url as string)
    const figure = page.locator('.run figure.chart').first()
    await expect
      .poll(() => figure.locator('.chart-canvas svg .role-title-text').textContent())
      .toBe(EDITED_TITLE)
    expect(await figure.getByLabel('Chart type').count()).toBe(0)
    expect(await figure.getByText('Titles', { exact: true }).count()).toBe(0)
    await figure.getByRole('button', { name: 'Copy as code' }).waitFor()
  }, 60_000)

  it('at 390×844 the open Session sheet holds the keyboard, Esc or a press outside closes it, and axe finds nothing serious', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      await page.goto('about:blank')
      await page.goto(pages[0]?.url as string)
      const toggle = page.getByRole('button', { name: 'Session', exact: true })
      const panel = page.getByRole('complementary', { name: 'Session' })
      const inPanel = () => panel.evaluate((element) => element.contains(document.activeElement))
      const found: Record<string, unknown> = {}
      for (const colorScheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme })
        // Opened by its button, then by its key.
        if (colorScheme === 'light') await toggle.click()
        else {
          await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
          await page.keyboard.press('s')
        }
        await panel.getByRole('button', { name: 'Restart kernel' }).waitFor()
        await expect.poll(inPanel).toBe(true)
        const violations = await seriousViolations(page)
        if (violations.length) found[colorScheme] = violations
        await page.screenshot({ path: join(tmpdir(), `analyst-a11y-390-sheet-${colorScheme}.png`) })
        // Tab and Shift+Tab go round the sheet's controls, each with its focus shown.
        expect(await unseenFocus(page, 12)).toEqual([])
        expect(await inPanel()).toBe(true)
        for (let i = 0; i < 12; i++) await page.keyboard.press('Shift+Tab')
        expect(await inPanel()).toBe(true)
        expect(await page.locator('main').evaluate((main) => (main as HTMLElement).inert)).toBe(true)
        // Closed by Esc (the focus back on its button), then by a press on the page outside it.
        if (colorScheme === 'light') {
          await page.keyboard.press('Escape')
          await panel.waitFor({ state: 'hidden' })
          await expect.poll(() => toggle.evaluate((button) => button === document.activeElement)).toBe(true)
        } else {
          // A press inside the key list, opened over the sheet, leaves the sheet open (the key
          // from the sheet itself: Shift+Tab may have left the focus in its file field).
          await panel.focus()
          await page.keyboard.press('?')
          const keys = page.getByRole('dialog', { name: 'Keys' })
          await keys.getByRole('heading', { name: 'Keys' }).click()
          await page.keyboard.press('Escape')
          await keys.waitFor({ state: 'detached' })
          expect(await panel.isVisible()).toBe(true)
          // A press outside closes it, and the focus goes back to its button.
          await page.mouse.click(195, 40)
          await panel.waitFor({ state: 'hidden' })
          await expect.poll(() => toggle.evaluate((button) => button === document.activeElement)).toBe(true)
        }
        expect(await page.locator('main').evaluate((main) => (main as HTMLElement).inert)).toBe(false)
      }
      expect(found).toEqual({})
    } finally {
      await page.emulateMedia({ colorScheme: 'light' })
      await page.setViewportSize({ width: 1280, height: 900 })
    }
  }, 120_000)

  it('never scrolls sideways at 390×844', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      const wide: Record<string, number> = {}
      for (const { name, url } of pages) {
        await open(name, url)
        const overflow = await sidewaysOverflow(page)
        if (overflow > 0) wide[name] = overflow
        await page.screenshot({ path: join(tmpdir(), `analyst-a11y-390-${name.replace(/\W+/g, '-')}.png`) })
      }
      expect(wide).toEqual({})
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 })
    }
  }, 120_000)
})
