/**
 * A kernel restart done through another replica reaches a page's open grid, in Chromium: two
 * servers (A and B) over one PostgreSQL database, each with its own home and real sandboxes; a
 * page on A shows a table of A's kernel, a person in another browser restarts the kernel through
 * B, and A's page, as it comes back into view, says the table is not in the kernel now (B took the
 * session's lease and gave it back: A's route reads that), and A lets its kernel go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ScriptedModel } from '../../src/models/scripted.js'
import { sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { hasChromium } from '../support/chromium.js'
import { openBrowser, startWebServer } from '../support/web-workspace.js'

type Replica = Awaited<ReturnType<typeof startWebServer>>
type Browser = Awaited<ReturnType<typeof openBrowser>>

describe.skipIf(!hasChromium)('a kernel restart through another replica', () => {
  const replicas: Replica[] = []
  const browsers: Browser[] = []

  beforeAll(async () => {
    const databaseUrl = await (await sharedPostgres()).createDatabase()
    // The sweep (every half of the lease) lets a kernel go soon after another replica took the session.
    const options = { databaseUrl, leaseMs: 2000 }
    replicas.push(
      await startWebServer('replica', new ScriptedModel([]), options),
      await startWebServer('replica', new ScriptedModel([]), options),
    )
  }, 120_000)

  afterAll(async () => {
    for (const browser of browsers) await browser.close()
    for (const replica of replicas) await replica.close()
  })

  const browser = async () => {
    const opened = await openBrowser('kernel-replica', (replicas[0] as Replica).token)
    browsers.push(opened)
    return opened
  }

  it("reaches the open grid of a page on the other replica as it comes back into view; that replica's kernel goes", async () => {
    const [a, b] = replicas as [Replica, Replica]
    const here = await browser()
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
    const there = await browser()
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
