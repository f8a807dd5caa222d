/**
 * The web UI with the server's sources, in Debian's Chromium: a new session offers the sources
 * (their descriptions one click away), the one ticked is the session's, the step shows the query
 * its sql() ran, and the session, opened again, names its source.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ScriptedModel } from '../../src/models/scripted.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { parseSourcesFile } from '../../src/sources/index.js'
import { hasChromium, launchChromium } from '../support/chromium.js'

const WEB = resolve('dist/web/index.html')

describe.skipIf(!hasChromium)('web UI with sources, in Chromium', () => {
  let home: string
  let server: RunningServer | undefined
  let context: BrowserContext | undefined
  let page: Page

  beforeAll(async () => {
    if (!existsSync(WEB)) throw new Error('dist/web is missing: run `npm run build` first')
    home = mkdtempSync(join(tmpdir(), 'analyst-web-sources-'))
    const db = join(home, 'shop.db')
    execFileSync('/usr/bin/python3', [
      '-c',
      "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL)'); c.executemany('INSERT INTO orders VALUES (?, ?, ?)', [(1, 'north', 10), (2, 'south', 5.5), (3, 'north', 2)]); c.commit()",
      db,
    ])
    const model = new ScriptedModel([
      {
        text: 'Summing in SQL.',
        code: "totals = sql('SELECT region, SUM(amount) AS total FROM orders GROUP BY region ORDER BY region', source='shop')\nprint(totals.to_string(index=False))",
      },
      { text: 'North sells 12, south 5.5.' },
    ])
    server = await startServer({
      host: '127.0.0.1',
      port: 0,
      home,
      tokens: [],
      model: async () => ({ model, spec: 'scripted:s', provider: 'custom', modelId: 's', mode: 'tools' }),
      provider: new LocalProvider({ poolSize: 0 }),
      sources: {
        named: parseSourcesFile(
          JSON.stringify({
            shop: { url: `sqlite:${db}` },
            other: { url: `sqlite:${join(home, 'missing.db')}` },
          }),
        ),
      },
    })
    context = await launchChromium(join(home, 'profile'))
    page = context.pages()[0] ?? (await context.newPage())
    page.setDefaultTimeout(45_000)
  }, 120_000)

  afterAll(async () => {
    await context?.close()
    await server?.close()
    rmSync(home, { recursive: true, force: true })
  })

  it('offers the sources, queries the one ticked, shows the query, and keeps it with the session', async () => {
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(server?.url as string)
    const sources = page.getByRole('region', { name: 'Data sources' })
    const shop = sources.getByRole('checkbox', { name: 'Use shop' })
    await shop.waitFor()
    // Neither is a default: nothing is ticked until the user says so.
    expect(await shop.isChecked()).toBe(false)
    // The one that cannot be opened says why.
    await sources.locator('.source', { hasText: 'other' }).locator('.badge.error').waitFor()
    await sources.locator('.source', { hasText: 'shop' }).locator('summary .dataset-name').click()
    await expect
      .poll(() => sources.locator('.source', { hasText: 'shop' }).locator('pre').textContent())
      .toContain('shop')
    await shop.check()

    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    await box.fill('Sales by region?')
    await box.press('Enter')
    await page.locator('.answer', { hasText: 'North sells 12' }).waitFor()
    const run = page.locator('.run').first()
    if ((await run.locator('.query').count()) === 0) await run.getByRole('button', { name: /Step 1/ }).click()
    await expect
      .poll(() => run.locator('.query summary').first().textContent())
      .toMatch(/^sql\(\) on shop: 2 rows in \d+ ms$/)
    await run.locator('.query summary').first().click()
    await expect.poll(() => run.locator('.query pre').first().textContent()).toContain('GROUP BY region')
    await page.screenshot({ path: join(tmpdir(), 'analyst-web-sources.png') })

    // Opened again: the session names its source, and offers no choice.
    await page.reload()
    await page.locator('.answer', { hasText: 'North sells 12' }).waitFor()
    await expect
      .poll(() => sources.locator('.sources-title').textContent())
      .toContain('Sources its code queries')
    await expect.poll(() => sources.locator('.dataset-name').allTextContents()).toEqual(['shop'])
    expect(await sources.getByRole('checkbox').count()).toBe(0)
    expect(errors).toEqual([])
  }, 240_000)
})
