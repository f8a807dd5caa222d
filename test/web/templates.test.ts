/**
 * The web UI's environment picker, in Debian's Chromium: a new session offers the templates built
 * on the server (with their base, Python and packages), and the session made with the one chosen
 * runs its code there (the trixie test template: Python 3.13, not the host's 3.11).
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ScriptedModel } from '../../src/models/scripted.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { hasChromium, launchChromium } from '../support/chromium.js'
import { canMakeTemplates, TEMPLATE_HOME, TRIXIE, trixieTemplate } from '../support/templates.js'

const WEB = resolve('dist/web/index.html')

describe.skipIf(!hasChromium || !canMakeTemplates)('web UI: the environment picker, in Chromium', () => {
  let home: string
  let server: RunningServer | undefined
  let context: BrowserContext | undefined
  let page: Page

  beforeAll(async () => {
    if (!existsSync(WEB)) throw new Error('dist/web is missing: run `npm run build` first')
    await trixieTemplate()
    home = mkdtempSync(join(tmpdir(), 'analyst-web-templates-'))
    // The sandbox's uid reads the template: its folders are open to it.
    chmodSync(home, 0o755)
    symlinkSync(join(TEMPLATE_HOME, 'templates'), join(home, 'templates'))
    const model = new ScriptedModel([
      { text: 'Checking the Python.', code: 'import sys\nprint("python", "%d.%d" % sys.version_info[:2])' },
      { text: 'This is Python 3.13.' },
    ])
    server = await startServer({
      host: '127.0.0.1',
      port: 0,
      home,
      tokens: [],
      model: async () => ({ model, spec: 'scripted:s', provider: 'custom', modelId: 's', mode: 'tools' }),
      provider: new LocalProvider({ poolSize: 0, home }),
    })
    context = await launchChromium(join(home, 'profile'))
    page = context.pages()[0] ?? (await context.newPage())
    page.setDefaultTimeout(60_000)
  }, 600_000)

  afterAll(async () => {
    await context?.close()
    await server?.close()
    if (home) rmSync(home, { recursive: true, force: true })
  })

  it('offers the templates, and the session made with the one chosen runs in it', async () => {
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(server?.url as string)
    const picker = page.getByRole('combobox', { name: 'Template' })
    await picker.waitFor()
    await picker.selectOption(TRIXIE)
    await expect
      .poll(() => page.locator('.template-picker p').textContent())
      .toMatch(/^debian:trixie · Python 3\.13.* · .*pandas 2\./)

    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    await box.fill('Which Python is this?')
    await box.press('Enter')
    await page.locator('.answer', { hasText: 'This is Python 3.13' }).waitFor()
    const run = page.locator('.run').first()
    if ((await run.locator('.output').count()) === 0)
      await run.getByRole('button', { name: /Step 1/ }).click()
    await expect.poll(() => run.locator('.output').first().textContent()).toContain('python 3.13')
    // The session exists: the picker is gone.
    expect(await page.getByRole('combobox', { name: 'Template' }).count()).toBe(0)
    expect(errors).toEqual([])
  }, 240_000)
})
