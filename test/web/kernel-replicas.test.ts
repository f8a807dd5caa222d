/**
 * A kernel restart done through another replica reaches a page's open grid, in Chromium: two
 * servers (A and B) over one PostgreSQL database, each with its own home and real sandboxes; a
 * page on A shows a table of A's kernel, a person in another browser restarts the kernel through
 * B, and A's page, as it comes back into view, says the table is not in the kernel now (B took the
 * session's lease and gave it back: A's route reads that), and A lets its kernel go.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ScriptedModel } from '../../src/models/scripted.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { hasChromium, launchChromium } from '../support/chromium.js'

const TOKEN = 'replica-token'

interface Replica {
  server: RunningServer
  provider: LocalProvider
  home: string
}

async function replica(databaseUrl: string): Promise<Replica> {
  const home = mkdtempSync(join(tmpdir(), 'analyst-kernel-replica-'))
  const provider = new LocalProvider({ poolSize: 0 })
  const model = new ScriptedModel([])
  const choice = {
    model,
    spec: 'scripted:script',
    provider: 'custom',
    modelId: 'script',
    mode: 'tools',
  } as const
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    home,
    databaseUrl,
    // The sweep (every half of it) lets a kernel go soon after another replica took the session.
    leaseMs: 2000,
    model: async () => choice,
    tokens: [TOKEN],
    provider,
  })
  return { server, provider, home }
}

async function browser(dir: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await launchChromium(dir)
  await context.addInitScript((value) => localStorage.setItem('analyst.token', value), TOKEN)
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(30_000)
  return { context, page }
}

describe.skipIf(!hasChromium)('a kernel restart through another replica', () => {
  const replicas: Replica[] = []
  const contexts: BrowserContext[] = []
  const dirs: string[] = []

  beforeAll(async () => {
    const databaseUrl = await (await sharedPostgres()).createDatabase()
    replicas.push(await replica(databaseUrl), await replica(databaseUrl))
  }, 120_000)

  afterAll(async () => {
    for (const context of contexts) await context.close()
    for (const { server, provider, home } of replicas) {
      await server.close()
      await provider.close()
      rmSync(home, { recursive: true, force: true })
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  const profile = () => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-kernel-replica-chromium-'))
    dirs.push(dir)
    return dir
  }

  it("reaches the open grid of a page on the other replica as it comes back into view; that replica's kernel goes", async () => {
    const [a, b] = replicas as [Replica, Replica]
    const here = await browser(profile())
    contexts.push(here.context)
    const { page } = here
    await page.goto(a.server.url)
    await page.getByRole('radio', { name: 'Code' }).check()
    await page.getByRole('textbox', { name: 'Cell', exact: true }).click()
    await page.keyboard.insertText("import pandas as pd\npd.DataFrame({'k': range(30)})")
    await page.keyboard.press('ControlOrMeta+Enter')
    const grid = page
      .getByRole('article', { name: 'A cell you ran' })
      .last()
      .getByRole('region', { name: 'Table' })
    await grid.getByRole('status').filter({ hasText: 'Rows 1–25 of 30' }).waitFor()
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
    const id = decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')
    expect(await a.server.service.openSandbox(id)).toBeTruthy()

    // Another browser, on B: the session's page there, and its Restart.
    const there = await browser(profile())
    contexts.push(there.context)
    await there.page.goto(`${b.server.url}/#/s/${encodeURIComponent(id)}`)
    await there.page.getByRole('button', { name: 'Restart kernel' }).click()
    await there.page.getByText('The kernel restarted.').waitFor()

    // A's page comes back into view (Playwright's pages all keep the focus: this one's is real
    // from here, and it goes to another tab and back).
    const cdp = await here.context.newCDPSession(page)
    await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false })
    await page.bringToFront()
    const away = await here.context.newPage()
    await expect.poll(() => page.evaluate(() => document.hasFocus())).toBe(false)
    await page.bringToFront()
    await away.close()
    const said = grid
      .getByRole('alert')
      .filter({ hasText: 'This table is not in the kernel now (it was restarted, paused or closed since)' })
    await said.waitFor()
    expect(await said.getByRole('button', { name: 'Run its step again' }).count()).toBe(1)
    await cdp.detach()
    // A lets its kernel go (its sweep saw B's name on the session's lease).
    await expect.poll(async () => await a.server.service.openSandbox(id)).toBeUndefined()
  }, 120_000)
})
