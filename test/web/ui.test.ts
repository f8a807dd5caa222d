/**
 * The web UI end to end: the real server (a scripted model, the real sandbox) and Debian's
 * Chromium driven by playwright-core. Upload a file, see its profile, ask, watch the code and a
 * chart arrive, read the answer, ask a follow-up by its key, reload, find the session and open it
 * again; shape its chart and find the edit kept (on reload, in the exports); reach the exports,
 * the session panel, its files and Restart kernel by key. The wheel over a chart scrolls the page
 * (Ctrl with it zooms the chart, no further out than its data).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { ModelChoice } from '../../src/models/index.js'
import { ScriptedModel } from '../../src/models/scripted.js'
import type { BarChart, PointChart } from '../../src/sandbox/charts.js'
import { AnalystError } from '../../src/sandbox/errors.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import { PERSON_CELL, type SessionDetail } from '../../src/server/types.js'
import { VEGA_LITE_MIME } from '../../src/store/export/chart-spec.js'
import { hasChromium, launchChromium } from '../support/chromium.js'

const SALES = resolve('examples/sales.csv')
/** Vega draws a bar mark as paths in its `mark-rect` group. */
const BARS = '.chart-canvas svg .mark-rect path'
const WEB = resolve('dist/web/index.html')
const TOKEN = 'web-test-token'

const CHART_CODE = [
  'import pandas as pd',
  "sales = pd.read_csv('data/sales.csv')",
  'print(len(sales), "orders")',
  "by_region = sales.groupby('region')['order_value'].sum().round(2)",
  'print(by_region)',
  "by_region.plot.bar(title='Revenue by region')",
].join('\n')

function scriptedModel(): ModelChoice {
  const model = new ScriptedModel([
    { text: 'Summing revenue by region and plotting it.', code: CHART_CODE },
    {
      text: 'There are **400 orders**. Revenue by region is in the chart above; the West grew 12.5% (a number no output shows).\n\nFollow-ups:\n- And as a table?\n- Which segment orders most?',
    },
    { text: 'The regions as a table:', code: 'by_region.sort_values(ascending=False).reset_index()' },
    { text: 'The table above lists the regions from the most revenue to the least.' },
  ])
  return { model, spec: 'scripted:script', provider: 'custom', modelId: 'script', mode: 'tools' }
}

describe.skipIf(!hasChromium)('web UI in Chromium', () => {
  let home: string
  let profileDir: string
  let server: RunningServer | undefined
  let context: BrowserContext | undefined
  let page: Page

  beforeAll(async () => {
    if (!existsSync(WEB)) throw new Error('dist/web is missing: run `npm run build` first')
    home = mkdtempSync(join(tmpdir(), 'analyst-web-home-'))
    profileDir = mkdtempSync(join(tmpdir(), 'analyst-web-chromium-'))
    const model = scriptedModel()
    server = await startServer({
      host: '127.0.0.1',
      port: 0,
      home,
      model: async () => model,
      tokens: [TOKEN],
      provider: new LocalProvider({ poolSize: 0 }),
    })
    context = await launchChromium(profileDir)
    page = context.pages()[0] ?? (await context.newPage())
    page.setDefaultTimeout(45_000)
  }, 120_000)

  afterAll(async () => {
    await context?.close()
    await server?.close()
    rmSync(home, { recursive: true, force: true })
    rmSync(profileDir, { recursive: true, force: true })
  })

  it('uploads, asks, shows the chart and answer, and finds the session after a reload', async ({
    onTestFailed,
  }) => {
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    page.on('console', (message) => {
      // The first request's 401 (before the token is entered) is expected.
      if (message.type() === 'error' && !message.text().includes('401')) errors.push(message.text())
    })
    onTestFailed(async () => {
      const shot = join(tmpdir(), 'analyst-web-ui-failed.png')
      await page.screenshot({ path: shot }).catch(() => undefined)
      process.stderr.write(`[web test] failed; screenshot: ${shot}; page errors: ${JSON.stringify(errors)}\n`)
    })
    const url = server?.url as string
    await page.goto(url)

    // The server needs a token: the page asks for it once.
    await page.getByRole('textbox', { name: 'Access token' }).waitFor()
    await page.screenshot({ path: join(tmpdir(), 'analyst-web-ui-token.png') })
    await page.getByRole('textbox', { name: 'Access token' }).fill(TOKEN)
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('heading', { name: 'Ask your data a question' }).waitFor()

    // Upload, then the profile: the file's columns and their types.
    await page.setInputFiles('input[type=file]', SALES)
    await page.locator('.dataset-name', { hasText: 'sales.csv' }).waitFor()
    const profile = page.locator('table.columns')
    await profile.waitFor()
    for (const column of ['order_id', 'customer_segment', 'order_value']) {
      await profile.locator('td.column-name', { hasText: column }).first().waitFor()
    }
    expect(await profile.textContent()).toContain('float64')
    await page.screenshot({ path: join(tmpdir(), 'analyst-web-ui-profile.png') })
    // The file downloads as it was uploaded, with the token the page holds.
    const download = page.getByRole('link', { name: 'Download sales.csv', exact: true })
    await download.waitFor()
    const downloaded = await page.evaluate(
      async (href) => {
        const response = await fetch(href as string)
        return { status: response.status, body: await response.text() }
      },
      await download.getAttribute('href'),
    )
    expect(downloaded).toEqual({ status: 200, body: readFileSync(SALES, 'utf8') })

    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    // Ask; the step streams in with its code, then the chart, then the answer.
    const question = 'Which region brings the most revenue?'
    await box.fill(question)
    await box.press('Enter')
    await page.locator('pre.code', { hasText: "groupby('region')" }).waitFor()
    expect(await page.locator('pre.code .hljs-string').count()).toBeGreaterThan(0)
    // The chart is drawn from its data: bars with their values on hover, a table of them, the PNG behind.
    const figure = page.locator('figure.chart').first()
    const bars = figure.locator(BARS)
    await bars.first().waitFor()
    const barCount = await bars.count()
    expect(barCount).toBeGreaterThanOrEqual(2)
    expect(await figure.locator('.chart-canvas svg .role-title-text').textContent()).toBe('Revenue by region')
    await bars.first().hover()
    await expect
      .poll(() => page.locator('#vg-tooltip-element.visible').textContent())
      .toMatch(/East.*55,?045\.86/)
    await figure.screenshot({ path: join(tmpdir(), 'analyst-web-ui-chart.png') })
    await figure.getByRole('tab', { name: 'Values' }).click()
    await expect.poll(() => figure.locator('table.data tbody tr').count()).toBe(barCount)
    await figure.getByRole('tab', { name: 'Image' }).click()
    const chart = figure.locator('img.chart-image')
    await expect.poll(() => chart.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(100)
    const answer = page.locator('.answer').first()
    await answer.locator('strong', { hasText: '400 orders' }).waitFor()
    await expect.poll(() => answer.locator('mark.unsupported').first().textContent()).toBe('12.5%')
    await expect.poll(() => page.locator('pre.output.stdout').first().textContent()).toContain('400 orders')

    await page.screenshot({ path: join(tmpdir(), 'analyst-web-ui-answer.png') })

    // The model suggested follow-ups with its answer (not in the answer's text), each with its
    // key, which `?` lists; the key asks one. In the same session: the kernel still has
    // by_region; its table is rendered.
    const followUps = page.getByRole('navigation', { name: 'Follow-up questions' })
    const suggested = await followUps
      .getByRole('button')
      .evaluateAll((buttons) => buttons.map((b) => [b.getAttribute('aria-keyshortcuts'), b.textContent]))
    expect(suggested).toEqual([
      ['1', '1And as a table?'],
      ['2', '2Which segment orders most?'],
    ])
    await followUps.getByRole('button', { name: 'And as a table?', exact: true }).waitFor()
    await followUps.screenshot({ path: join(tmpdir(), 'analyst-web-ui-follow-ups.png') })
    expect(await answer.textContent()).not.toContain('Follow-ups')
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    await page.keyboard.press('?')
    const keys = page.getByRole('dialog', { name: 'Keys' })
    expect(await keys.getByRole('row', { name: /^1, 2, 3 / }).textContent()).toContain('follow-up question')
    await page.keyboard.press('Escape')
    await keys.waitFor({ state: 'detached' })
    await page.keyboard.press('1')
    await expect
      .poll(() => page.locator('.run').nth(1).locator('.question').textContent())
      .toBe('And as a table?')
    const table = page.locator('.run').nth(1).locator('table.data')
    await table.waitFor()
    await expect.poll(() => table.locator('th').allTextContents()).toContain('order_value')
    await page.locator('.answer', { hasText: 'from the most revenue to the least' }).waitFor()
    // Exports download with the token in the link.
    for (const [name, check] of [
      ['Notebook', '"cells"'],
      ['Python', "groupby('region')"],
      ['HTML report', '<html'],
    ]) {
      const href = (await page.getByRole('link', { name }).getAttribute('href')) as string
      expect(href).toContain(`token=${TOKEN}`)
      const response = await page.request.get(new URL(href, url).href)
      expect(response.status()).toBe(200)
      expect(await response.text()).toContain(check)
    }

    // Reload at the start page: the session is in the side list; open it again.
    await page.goto(url)
    await page.reload()
    const link = page.locator('.session-link', { hasText: question })
    await link.waitFor()
    await link.click()
    await page.locator('.run').nth(1).waitFor()
    await page.locator('.dataset-name', { hasText: 'sales.csv' }).waitFor()
    const firstRun = page.locator('.run').first()
    await expect.poll(() => firstRun.locator('.question').textContent()).toBe(question)
    await page.screenshot({ path: join(tmpdir(), 'analyst-web-ui-reopened.png') })
    const stepHead = firstRun.getByRole('button', { name: /Step 1/ })
    await stepHead.click()
    await firstRun.locator('pre.code', { hasText: "groupby('region')" }).waitFor()
    // Stored with its data: drawn again, and its image is there behind it.
    const storedFigure = firstRun.locator('figure.chart').first()
    await storedFigure.locator(BARS).first().waitFor()
    await storedFigure.getByRole('tab', { name: 'Image' }).click()
    const storedChart = storedFigure.locator('img.chart-image')
    await expect
      .poll(() => storedChart.evaluate((img: HTMLImageElement) => img.naturalWidth))
      .toBeGreaterThan(100)
    await firstRun.locator('mark.unsupported', { hasText: '12.5%' }).waitFor()

    await firstRun.locator('.answer').scrollIntoViewIfNeeded()
    const shot = join(tmpdir(), 'analyst-web-ui.png')
    await page.screenshot({ path: shot, fullPage: false })
    process.stderr.write(`[web test] screenshot: ${shot}\n`)
    expect(errors).toEqual([])
  }, 240_000)

  it('shapes a chart: another type and title, PNG, SVG and CSV, and Copy as code that draws it again', async () => {
    // The session from the test above, reopened: its chart drawn from its data.
    const sessionId = decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')
    const api = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${server?.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      })
      expect(response.status, path).toBe(200)
      return response.json()
    }
    const detail = async () => (await api(`/api/sessions/${encodeURIComponent(sessionId)}`)) as SessionDetail
    const shown = (await detail()).runs[0]?.steps[0]?.results.find((r) => r.chart)?.chart as BarChart
    expect(shown.type).toBe('bar')
    const figure = page.locator('.run').first().locator('figure.chart').first()
    await figure.getByRole('tab', { name: 'Chart' }).click()
    await figure.locator(BARS).first().waitFor()

    // The wheel over a chart scrolls the conversation, the chart as it was; with Ctrl it zooms.
    const canvas = figure.locator('.chart-canvas svg')
    // Sorted: Vega redraws the labels in another order.
    const labels = async () => (await canvas.locator('.role-axis-label text').allTextContents()).sort()
    const drawn = await labels()
    const scrolled = () =>
      figure.evaluate((element) => {
        for (let box = element.parentElement; box; box = box.parentElement)
          if (box.scrollHeight > box.clientHeight && getComputedStyle(box).overflowY !== 'visible')
            return box.scrollTop
        return document.scrollingElement?.scrollTop ?? 0
      })
    const top = await scrolled()
    await canvas.hover()
    await page.mouse.wheel(0, top > 0 ? -120 : 120)
    await expect.poll(scrolled).not.toBe(top)
    expect(await labels()).toEqual(drawn)
    /** Ctrl and the wheel over the chart: up zooms in, down out. */
    const zoom = async (deltaY: number) => {
      await canvas.hover()
      await page.keyboard.down('Control')
      await page.mouse.wheel(0, deltaY)
      await page.keyboard.up('Control')
    }
    await zoom(-240)
    await expect.poll(labels).not.toEqual(drawn)
    await canvas.dblclick()
    await expect.poll(labels).toEqual(drawn)
    // Zoomed in, then out far past the data: the zoom stops at the data's extent, as first drawn.
    await zoom(-240)
    await expect.poll(labels).not.toEqual(drawn)
    await zoom(2400)
    await expect.poll(labels).toEqual(drawn)

    // Another type, another title: the chart is drawn again from the edited spec, and the edit is
    // kept with the step's result.
    await figure.getByLabel('Chart type').selectOption('line')
    await figure.locator('.chart-canvas svg .mark-line path').waitFor()
    await figure.getByText('Titles').click()
    const titleBox = figure.getByRole('textbox', { name: 'Chart title' })
    await titleBox.fill('Revenue, as a line')
    await titleBox.press('Tab')
    const title = figure.locator('.chart-canvas svg .role-title-text')
    await expect.poll(() => title.textContent()).toBe('Revenue, as a line')
    const edit = { mark: 'line', title: 'Revenue, as a line' }
    await expect
      .poll(async () => (await detail()).runs[0]?.steps[0]?.results.find((r) => r.chart)?.chartEdit)
      .toEqual(edit)
    await figure.getByRole('status').filter({ hasText: 'Kept with the step' }).waitFor()

    // Drawn so again when the page opens, and carried by the notebook and the HTML report.
    await page.reload()
    await figure.locator('.chart-canvas svg .mark-line path').waitFor()
    await expect.poll(() => title.textContent()).toBe('Revenue, as a line')
    expect(await figure.getByLabel('Chart type').inputValue()).toBe('line')
    const exported = async (format: string) => {
      const response = await fetch(
        `${server?.url}/api/sessions/${encodeURIComponent(sessionId)}/export?format=${format}`,
        { headers: { authorization: `Bearer ${TOKEN}` } },
      )
      return response.text()
    }
    const notebook = JSON.parse(await exported('ipynb')) as { cells: { outputs?: { data?: object }[] }[] }
    const specs = notebook.cells
      .flatMap((cell) => cell.outputs ?? [])
      .map(
        (output) =>
          (output.data as Record<string, { title?: string; layer?: { mark: { type: string } }[] }>)?.[
            VEGA_LITE_MIME
          ],
      )
      .filter(Boolean)
    expect([specs[0]?.title, specs[0]?.layer?.[0]?.mark.type]).toEqual([edit.title, 'line'])
    const block = /class="chart-spec">([^<]*)<\/script>/.exec(await exported('html'))?.[1] as string
    expect(JSON.parse(block)).toEqual(specs[0])

    // Bad edits are refused with the reason: a mark that is not one of the four or a field that is
    // not an edit (400), a result with no chart (409), a step that is not there (404).
    const put = async (path: string, body: unknown) => {
      const response = await fetch(`${server?.url}/api/sessions/${encodeURIComponent(sessionId)}${path}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      return [response.status, ((await response.json()) as { error?: { message: string } }).error?.message]
    }
    const runs = (await detail()).runs
    const chartAt = `/runs/${runs[0]?.id}/steps/1/results/${runs[0]?.steps[0]?.results.findIndex((r) => r.chart)}/chart`
    expect(await put(chartAt, { mark: 'pie' })).toEqual([400, expect.stringContaining('mark')])
    expect(await put(chartAt, { colour: 'red' })).toEqual([400, expect.stringContaining('colour')])
    expect(await put(`/runs/${runs[1]?.id}/steps/1/results/0/chart`, { title: 'x' })).toEqual([
      409,
      expect.stringContaining('no chart'),
    ])
    expect(await put(`/runs/${runs[0]?.id}/steps/9/results/0/chart`, { title: 'x' })).toEqual([
      404,
      expect.stringContaining('No result'),
    ])

    // Downloads: a PNG, an SVG that parses with the new title, the values as CSV.
    const download = async (name: string) => {
      const [file] = await Promise.all([
        page.waitForEvent('download'),
        figure.getByRole('button', { name }).click(),
      ])
      return readFileSync(await file.path())
    }
    const png = await download('PNG')
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    expect(png.length).toBeGreaterThan(5_000)
    const svg = (await download('SVG')).toString('utf8')
    const parsed = await page.evaluate((text) => {
      const doc = new DOMParser().parseFromString(text, 'image/svg+xml')
      return { root: doc.documentElement.nodeName, error: doc.querySelector('parsererror') !== null }
    }, svg)
    expect(parsed).toEqual({ root: 'svg', error: false })
    expect(svg).toContain('Revenue, as a line')
    const csv = (await download('CSV')).toString('utf8').trim().split('\r\n')
    expect(csv[0]?.split(',').slice(0, 3)).toEqual([
      'group',
      shown.x_label ?? 'label',
      shown.y_label ?? 'value',
    ])
    expect(csv.slice(1).map((line) => line.split(',').slice(1, 3))).toEqual(
      shown.elements.map((bar) => [bar.label, String(Number(bar.value.toPrecision(12)))]),
    )

    // Copy as code, run as the person's cell: its figure's chart data is the edited chart's.
    await figure.getByRole('button', { name: 'Copy as code' }).click()
    const code = (await figure.locator('pre.code.copied').textContent()) as string
    expect(code).toContain('ax.plot(')
    const cell = (await api(`/api/sessions/${encodeURIComponent(sessionId)}/cells`, {
      method: 'POST',
      body: JSON.stringify({ code }),
    })) as { error?: unknown }
    expect(cell.error).toBeUndefined()
    const ran = (await detail()).runs.at(-1)
    expect(ran?.question).toBe(PERSON_CELL)
    const redrawn = ran?.steps[0]?.results.find((r) => r.chart)?.chart as PointChart
    expect([redrawn.type, redrawn.title]).toEqual(['line', 'Revenue, as a line'])
    expect(redrawn.elements[0]?.points).toEqual(shown.elements.map((bar) => [bar.label, bar.value]))
  }, 120_000)

  it('reaches the exports, the session panel, its files and Restart kernel by key', async () => {
    const focused = () =>
      page.evaluate(() => {
        const element = document.activeElement as HTMLElement | null
        return element?.getAttribute('aria-label') ?? element?.textContent?.trim()
      })
    const press = async (key: string) => {
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
      await page.keyboard.press(key)
    }
    await press('e')
    await expect.poll(focused).toBe('Notebook')
    await press('f')
    await expect.poll(focused).toBe('Preview data/sales.csv')
    await press('s')
    await expect.poll(focused).toBe('Session')
    await press('Shift+R')
    const panel = page.getByRole('complementary', { name: 'Session' })
    await panel.getByRole('status').filter({ hasText: 'rebuilt by replay' }).waitFor()
  }, 60_000)

  it('shows why a question failed before it started, with the hint', async () => {
    const unconfigured = await startServer({
      host: '127.0.0.1',
      port: 0,
      home: mkdtempSync(join(home, 'unconfigured-')),
      model: async () => {
        throw new AnalystError('No model is configured', { hint: 'Set ANALYST_MODEL.' })
      },
    })
    try {
      await page.goto(unconfigured.url)
      const box = page.getByRole('textbox', { name: 'Question', exact: true })
      await box.fill('How many orders?')
      await box.press('Enter')
      // Once the stream ends the page reloads the session: the unstored run stays, with its error.
      await page.locator('.session-link', { hasText: 'How many orders?' }).waitFor()
      const alert = page.locator('.run .alert')
      await alert.waitFor()
      expect(await alert.textContent()).toContain('No model is configured')
      expect(await alert.textContent()).toContain('Set ANALYST_MODEL.')
      await expect.poll(() => page.locator('.question').textContent()).toBe('How many orders?')
    } finally {
      await unconfigured.close()
    }
  }, 60_000)
})
