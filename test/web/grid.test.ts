/**
 * The grid over a frame the kernel keeps, in Chromium (playwright-core) against the real server,
 * a scripted model and the real kernel: a 100,000-row DataFrame result is sorted and filtered in
 * the kernel and its pages checked against pandas, without adding to the kernel's execution
 * count; the selection downloads as CSV, XLSX and Parquet (streamed) and reads back; while a cell
 * holds the kernel, the grid waits for it with Stop at hand and serves pages it has from the
 * browser; a cell started elsewhere is told by the server, and its end refreshes the pages kept;
 * the server keeps one waiting request per grid and tab, and a grid's request that its own older one
 * replaced there (the older let through last) asks again; column statistics no longer wanted are
 * dropped, and shown ones hide again; Code mode's highlighted editor passes axe in the dark theme;
 * a bad column or filter is a 400 with the reason; a closed kernel's table is a 410. The find box
 * searches a long session, its runs not drawn yet too, and axe finds nothing serious with it open.
 * A kernel restart reaches the open grids: this page's at once, another tab's at once, another
 * browser's when the page comes back into view.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import type { FileChooser, Page, Route } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { ScriptedModel } from '../../src/models/scripted.js'
import type { Sandbox } from '../../src/sandbox/index.js'
import { ownerOf } from '../../src/server/auth/secrets.js'
import { frameRoutes, latestOf } from '../../src/server/frames.js'
import type { RunningServer } from '../../src/server/index.js'
import type { SessionDetail } from '../../src/server/types.js'
import { framePage, kernelVariables } from '../../src/session/frames.js'
import type { SessionService } from '../../src/session/index.js'
import { seriousViolations } from '../support/axe.js'
import { hasChromium } from '../support/chromium.js'
import { readSse } from '../support/sse.js'
import { openBrowser, startWebWorkspace, type WebWorkspace } from '../support/web-workspace.js'

const MAKE = [
  'import numpy as np',
  'import pandas as pd',
  'rng = np.random.default_rng(7)',
  "big = pd.DataFrame({'id': np.arange(100_000), 'value': rng.normal(size=100_000).round(4), 'group': rng.choice(list('abcde'), 100_000)})",
].join('\n')

/** The scripted model, which thinks (holding no kernel) while `thinking` is unsettled. */
class ThinkingModel extends ScriptedModel {
  thinking: Promise<void> | undefined
  /** Calls that came while it thinks. */
  pondering = 0
  override async doStream(options: Parameters<ScriptedModel['doStream']>[0]) {
    if (this.thinking) {
      this.pondering++
      await this.thinking
    }
    return super.doStream(options)
  }
}

/** What pandas says, on the host's Python with the same seed. */
function pandas(expression: string): unknown {
  const script = `${MAKE}\nimport json, sys\nprint(json.dumps(${expression}))`
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script], { encoding: 'utf8' }))
}

describe.skipIf(!hasChromium)('the grid in Chromium', () => {
  let web: WebWorkspace | undefined
  let server: RunningServer | undefined
  let home: string
  let page: Page
  let sessionId: string
  let frameId: string
  const model = new ThinkingModel([
    { text: 'A big table.', code: `${MAKE}\nbig` },
    { text: 'There are 100,000 rows.' },
    // Asked while the grid pages: the model thinks, and no cell holds the kernel.
    { text: 'Thought it over.' },
    // The keyboard's path: a question stopped while its cell runs, then one answered with a table.
    {
      text: 'This takes a while.',
      code: "import time\nprint('counting', flush=True)\nfor _ in range(600): time.sleep(0.1)",
    },
    {
      text: 'The orders.',
      code: "import pandas as pd\norders = pd.read_csv('data/sales.csv')\norders[['order_id', 'region', 'order_value']]",
    },
    { text: 'Those are the orders.' },
  ])
  const get = (path: string) => (web as WebWorkspace).get(path)

  beforeAll(async () => {
    web = await startWebWorkspace('grid', model)
    ;({ server, page, home } = web)
    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    await box.fill('Make a big table')
    await box.press('Enter')
    await page.locator('.answer', { hasText: 'There are 100,000 rows.' }).waitFor()
    sessionId = decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')
    const detail = (await (await get(`/api/sessions/${sessionId}`)).json()) as SessionDetail
    frameId = detail.runs[0]?.steps[0]?.results.find((result) => result.frame)?.frame?.id as string
    expect(frameId).toBeTruthy()
  }, 120_000)

  afterAll(() => web?.close())

  const column = (name: string) =>
    page.evaluate((index) => {
      const grid = document.querySelector('.frame-grid table') as HTMLTableElement
      return Array.from(grid.tBodies[0]?.rows ?? []).map((row) => row.cells[index]?.textContent ?? '')
    }, ['id', 'value', 'group'].indexOf(name))

  /** Runs `code` as a person's cell, written in Code mode's editor. */
  const runInCodeMode = async (code: string) => {
    await page.getByRole('radio', { name: 'Code' }).check()
    const editor = page.getByRole('textbox', { name: 'Cell', exact: true })
    await editor.click()
    await page.keyboard.press('ControlOrMeta+a')
    await page.keyboard.press('Delete')
    await page.keyboard.insertText(code)
    await page.keyboard.press('ControlOrMeta+Enter')
  }

  /**
   * A person's cell (Code mode) that holds the kernel until the file `name` is in the workspace;
   * back once the cell runs in the kernel.
   */
  const hold = async (name: string) => {
    await runInCodeMode(
      `import os, time\nwhile not os.path.exists(${JSON.stringify(name)}): time.sleep(0.05)`,
    )
    await expect.poll(async () => (await server?.service.openSandbox(sessionId))?.runningCells).toBe(1)
  }

  /**
   * A cell started elsewhere (an MCP client's, through the session service) that holds the kernel
   * until the file `name` is in the workspace; back once it runs. Its end, and the kernel.
   */
  const holdElsewhere = async (name: string) => {
    const kernel = (await server?.service.openSandbox(sessionId)) as Sandbox
    const ended = server?.service.runCell(
      sessionId,
      `import os, time\nopen('holding-${name}', 'w').close()\nwhile not os.path.exists(${JSON.stringify(name)}): time.sleep(0.05)`,
      { timeoutMs: 300_000 },
    )
    await expect.poll(() => kernel.files.exists(`holding-${name}`)).toBe(true)
    return { kernel, ended }
  }

  /** The session kernel's execution count, by running a cell of nothing (which adds one). */
  const executionCount = async () =>
    (await (await server?.service.openSandbox(sessionId))?.runCode('None'))?.executionCount ?? -1

  it('sorts and filters the whole frame in the kernel; the pages match pandas', async () => {
    const grid = page.getByRole('region', { name: 'Table' })
    await expect.poll(() => grid.getByRole('status').textContent()).toBe('Rows 1–25 of 100,000')
    const countBefore = await executionCount()
    // By keyboard: the column's sort button, twice, is descending.
    const sortValue = grid.getByRole('button', { name: 'value' })
    await sortValue.focus()
    await page.keyboard.press('Enter')
    await expect
      .poll(() => column('value'))
      .toEqual(
        (pandas("big.sort_values('value', kind='stable')['value'].head(25).tolist()") as number[]).map(
          String,
        ),
      )
    await page.keyboard.press('Enter')
    await expect.poll(() => grid.locator('th[aria-sort=descending]').textContent()).toContain('value')
    const filter = "group == 'c' and value > 1"
    await grid.getByRole('textbox', { name: 'Filter (a pandas query)' }).fill(filter)
    await grid.getByRole('textbox', { name: 'Filter (a pandas query)' }).press('Enter')
    const expected = pandas(
      `big.query("${filter}").sort_values('value', ascending=False, kind='stable')[['id', 'value']].head(50).values.tolist()`,
    ) as [number, number][]
    const count = pandas(`len(big.query("${filter}"))`) as number
    await expect
      .poll(() => grid.getByRole('status').textContent())
      .toBe(`Rows 1–25 of ${count.toLocaleString('en-US')} (of 100,000)`)
    expect(await column('id')).toEqual(expected.slice(0, 25).map(([id]) => String(id)))
    await grid.getByRole('button', { name: 'Next' }).click()
    await expect.poll(() => column('id')).toEqual(expected.slice(25, 50).map(([id]) => String(id)))
    expect(new Set(await column('group'))).toEqual(new Set(['c']))

    // The selection downloads whole, as CSV and as XLSX, and reads back as pandas has it.
    const csvHref = (await grid.getByRole('link', { name: 'CSV' }).getAttribute('href')) as string
    const csv = await page.request.get(new URL(csvHref, server?.url).href)
    expect(csv.status()).toBe(200)
    const csvLines = (await csv.text()).trim().split('\n')
    expect(csvLines[0]).toBe('id,value,group')
    expect(csvLines.length - 1).toBe(count)
    expect(csvLines[1]?.split(',')[0]).toBe(String(expected[0]?.[0]))
    const xlsxHref = (await grid.getByRole('link', { name: 'XLSX' }).getAttribute('href')) as string
    const xlsx = await page.request.get(new URL(xlsxHref, server?.url).href)
    const file = join(home, 'table.xlsx')
    writeFileSync(file, await xlsx.body())
    const back = execFileSync(
      '/usr/bin/python3',
      [
        '-c',
        `import pandas as pd, json; t = pd.read_excel(${JSON.stringify(file)}); print(json.dumps([len(t), t['id'].head(3).tolist()]))`,
      ],
      { encoding: 'utf8' },
    )
    expect(JSON.parse(back)).toEqual([count, expected.slice(0, 3).map(([id]) => id)])
    const parquetHref = (await grid.getByRole('link', { name: 'Parquet' }).getAttribute('href')) as string
    const parquet = await page.request.get(new URL(parquetHref, server?.url).href)
    expect(parquet.headers()['content-type']).toBe('application/vnd.apache.parquet')
    const bytes = await parquet.body()
    const read = (await parquetReadObjects({
      file: new Uint8Array(bytes).buffer,
    })) as { id: bigint; value: number; group: string }[]
    expect(read.length).toBe(count)
    expect(read.slice(0, 50).map((row) => [Number(row.id), row.value])).toEqual(expected)
    expect(new Set(read.map((row) => row.group))).toEqual(new Set(['c']))

    // Pages, statistics and downloads ran in the kernel as no cell of the session's.
    expect(await executionCount()).toBe(countBefore + 1)

    // Copy as code: a pandas cell that gives the same rows.
    await grid.getByRole('button', { name: 'Copy as code' }).click()
    const code = (await grid.locator('pre.copied').textContent()) as string
    expect(code).toContain(`table.query(${JSON.stringify(filter)})`)
    expect(code).toContain('sort_values("value", ascending=False)')
  }, 90_000)

  it('while a cell holds the kernel: the grid waits with Stop at hand, keeps its rows, flips back to pages it has without a request, and gets the new page when the cell ends; a cell started elsewhere is told by the server', async () => {
    const grid = page.getByRole('region', { name: 'Table' }).first()
    const status = () => grid.getByRole('status').textContent()
    const filter = "group == 'c' and value > 1"
    const count = pandas(`len(big.query("${filter}"))`) as number
    const ids = pandas(
      `big.query("${filter}").sort_values('value', ascending=False, kind='stable')['id'].head(100).tolist()`,
    ) as number[]
    const rowsFrom = (from: number) =>
      `Rows ${from}–${from + 24} of ${count.toLocaleString('en-US')} (of 100,000)`
    // The first test left page 2 of the filtered, sorted table: page 1 is fetched too.
    await grid.getByRole('button', { name: 'Previous' }).click()
    await expect.poll(status).toBe(rowsFrom(1))
    const asked: string[] = []
    page.on('request', (request) => {
      if (request.url().includes(`/results/${frameId}/rows?`)) asked.push(request.url())
    })
    const waitingNote = grid.getByText('Waiting for the running cell…')

    await hold('go-1')
    // Pages fetched since the last cell ended come from the browser, with no request.
    await grid.getByRole('button', { name: 'Next' }).click()
    await expect.poll(status).toBe(rowsFrom(26))
    await grid.getByRole('button', { name: 'Previous' }).click()
    await expect.poll(status).toBe(rowsFrom(1))
    await grid.getByRole('button', { name: 'Next' }).click()
    await expect.poll(status).toBe(rowsFrom(26))
    expect(asked).toEqual([])
    // A page not fetched yet waits for the cell, saying so, with the rows it has still shown.
    await grid.getByRole('button', { name: 'Next' }).click()
    await waitingNote.waitFor()
    await expect.poll(() => asked.length).toBe(1)
    expect(await status()).toBe(rowsFrom(26))
    expect(await column('id')).toEqual(ids.slice(25, 50).map(String))
    // The server keeps one waiting request per grid: a newer one replaces it, and one whose
    // browser went is dropped, both at once and neither reaching the kernel (seen by a spy on the
    // sandbox's runCode; these pages are of one row, the browser's of 25).
    const sandbox = (await server?.service.openSandbox(sessionId)) as Sandbox
    const kernelAsked: number[] = []
    const runCode = sandbox.runCode.bind(sandbox)
    sandbox.runCode = ((code, options) => {
      const offset = /offset\\":(\d+),\\"limit\\":1\}/.exec(code)?.[1]
      if (offset) kernelAsked.push(Number(offset))
      return runCode(code, options)
    }) as Sandbox['runCode']
    const said = (answer: Promise<unknown>) =>
      answer.then(
        () => 'answered',
        (error: Error) => error.message,
      )
    const pageAt = (offset: number) => (signal: AbortSignal) =>
      framePage(sandbox, frameId, { offset, limit: 1 }, signal)
    const browserGone = new AbortController()
    const replaced = said(latestOf('a grid', new AbortController().signal, pageAt(1)))
    const newest = said(latestOf('a grid', new AbortController().signal, pageAt(2)))
    const gone = said(latestOf('another grid', browserGone.signal, pageAt(3)))
    browserGone.abort()
    expect(await replaced).toBe('A newer request of this table replaced this one')
    expect(await gone).toBe('The browser stopped waiting for this table')
    // The cell ends (the test writes the file it waits on): the pages come.
    await sandbox.files.write('go-1', '')
    await expect.poll(status).toBe(rowsFrom(51))
    expect(await column('id')).toEqual(ids.slice(50, 75).map(String))
    await waitingNote.waitFor({ state: 'detached' })
    expect(await newest).toBe('answered')
    expect(kernelAsked).toEqual([2])
    delete (sandbox as { runCode?: unknown }).runCode

    // Stop works from the grid: the cell is interrupted, and the page it waited for comes.
    await hold('never')
    await grid.getByRole('button', { name: 'Next' }).click()
    await waitingNote.waitFor()
    await grid.getByRole('button', { name: 'Stop the cell' }).click()
    await expect.poll(status).toBe(rowsFrom(76))
    expect(await column('id')).toEqual(ids.slice(75, 100).map(String))
    await expect.poll(() => server?.service.busy).toBe(0)
    // And the page has seen its cell end (it reads the session again first): a cell started next
    // is not this page's (under two busy loops the page still counted its own as running).
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
    const detail = (await (await get(`/api/sessions/${sessionId}`)).json()) as SessionDetail
    expect(detail.runs.at(-1)?.status).toBe('interrupted')

    // A cell started elsewhere (an MCP client's, through the session service): the grid learns
    // from the server that its page waits for it, and says so (with no Stop: it is stopped where
    // it was started).
    const { kernel, ended: elsewhere } = await holdElsewhere('go-2')
    await grid.getByRole('button', { name: 'Previous' }).click()
    await waitingNote.waitFor()
    expect(await grid.getByText('started in another tab or client').count()).toBe(1)
    expect(await grid.getByRole('button', { name: 'Stop the cell' }).count()).toBe(0)
    expect(await status()).toBe(rowsFrom(76))
    // Column statistics asked for, then another page: the browser stops waiting for them.
    const statsDropped = page.waitForEvent('requestfailed', (request) =>
      request.url().includes(`/results/${frameId}/columns?`),
    )
    const statsAsked = page.waitForRequest((request) =>
      request.url().includes(`/results/${frameId}/columns?`),
    )
    await grid.getByRole('button', { name: 'Column stats' }).click()
    await statsAsked
    await grid.getByRole('button', { name: 'Previous' }).click()
    await statsDropped
    // Two tabs on one table keep a waiting request each; a tab's newer request replaces its own.
    const rowsPath = `${server?.url}/api/sessions/${sessionId}/results/${frameId}/rows?limit=1&offset=`
    const asTab = (tab: string, offset: number, accept = 'application/json') =>
      fetch(`${rowsPath}${offset}`, {
        headers: { authorization: 'Bearer grid-token', 'analyst-client': tab, accept },
      })
    const older = readSse(await asTab('tab-a', 1, 'text/event-stream'))
    expect((await older.next()).value?.event).toBe('waiting')
    const otherTab = asTab('tab-b', 2)
    const newer = asTab('tab-a', 3)
    expect((await older.next()).value).toMatchObject({ event: 'failed', data: { status: 409 } })
    // The cell ends: the page comes, the note goes, and the pages kept from before it are asked again.
    await kernel.files.write('go-2', '')
    await elsewhere
    expect(((await (await otherTab).json()) as { offset: number }).offset).toBe(2)
    expect(((await (await newer).json()) as { offset: number }).offset).toBe(3)
    expect((await asTab('bad tab', 1)).status).toBe(400)
    await expect.poll(status).toBe(rowsFrom(26))
    await waitingNote.waitFor({ state: 'detached' })
    await grid.getByRole('button', { name: 'Next' }).click()
    await expect.poll(status).toBe(rowsFrom(51))
    const askedBefore = asked.length
    await grid.getByRole('button', { name: 'Next' }).click()
    await expect.poll(status).toBe(rowsFrom(76))
    expect(asked.slice(askedBefore).some((url) => url.includes('offset=75'))).toBe(true)
    // Column statistics are a toggle: shown under each column's name, then hidden again.
    const statsButton = grid.getByRole('button', { name: 'Column stats' })
    await statsButton.click()
    await expect.poll(() => grid.locator('.column-stats').count()).toBe(3)
    expect(await statsButton.getAttribute('aria-pressed')).toBe('true')
    await statsButton.click()
    await expect.poll(() => grid.locator('.column-stats').count()).toBe(0)
    expect(await statsButton.getAttribute('aria-pressed')).toBe('false')
    // Code mode's editor holds the last cell, highlighted: in the dark theme too, axe finds nothing serious.
    expect(await page.locator('.composer .cm-content span').count()).toBeGreaterThan(0)
    await page.emulateMedia({ colorScheme: 'dark' })
    const inDark = await seriousViolations(page)
    await page.emulateMedia({ colorScheme: 'light' })
    expect(inDark).toEqual([])
    page.removeAllListeners('request')
  }, 120_000)

  it('waits only while a cell holds the kernel, not behind a run a dead replica left marked running nor a question whose model thinks; column statistics that wait say so', async () => {
    const grid = page.getByRole('region', { name: 'Table' }).first()
    const status = () => grid.getByRole('status').textContent()
    const waitingNote = grid.getByText('Waiting for the running cell…')
    /** What the server answers a grid's request that could take an event stream. */
    const answerType = async () => {
      const response = await fetch(
        `${server?.url}/api/sessions/${sessionId}/results/${frameId}/rows?limit=1`,
        {
          headers: { authorization: 'Bearer grid-token', accept: 'text/event-stream' },
        },
      )
      await response.body?.cancel()
      return response.headers.get('content-type')
    }
    // Whether the grid's waiting note has shown since the page loaded, however briefly.
    await page.addInitScript(() => {
      const seen = window as { noteSeen?: boolean }
      seen.noteSeen = false
      new MutationObserver(() => {
        if (document.querySelector('.grid-waiting')) seen.noteSeen = true
      }).observe(document, { childList: true, subtree: true })
    })
    const noteSeen = () => page.evaluate(() => (window as { noteSeen?: boolean }).noteSeen)

    // A run that its replica left marked running when it died (its lease lapsed): no kernel runs
    // it, so the page that loads with it in the session pages at once, saying no wait.
    const { history } = (server as RunningServer).stores
    const stale = await history.startRun(sessionId, 'Asked on a replica that died')
    expect(await answerType()).toMatch(/^application\/json/)
    await page.reload()
    await expect.poll(status).toBe('Rows 1–25 of 100,000')
    expect(await noteSeen()).toBe(false)
    await history.failRun(stale.id, 'Its replica died', 'interrupted')

    // A question whose model thinks holds no kernel: the grid's next page comes at once.
    let thought = () => {}
    model.thinking = new Promise((resolve) => {
      thought = resolve
    })
    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    await box.fill('Think it over')
    await box.press('Enter')
    await expect.poll(() => model.pondering).toBe(1)
    expect(await answerType()).toMatch(/^application\/json/)
    await grid.getByRole('button', { name: 'Next' }).click()
    await expect.poll(status).toBe('Rows 26–50 of 100,000')
    expect(await noteSeen()).toBe(false)
    model.thinking = undefined
    thought()
    await page.locator('.answer', { hasText: 'Thought it over.' }).waitFor()

    // Column statistics asked for while a cell holds the kernel say that they wait, with Stop at
    // hand, and come when it ends.
    await hold('go-3')
    expect(await answerType()).toMatch(/^text\/event-stream/)
    await grid.getByRole('button', { name: 'Column stats' }).click()
    await waitingNote.waitFor()
    expect(await grid.getByRole('button', { name: 'Stop the cell' }).count()).toBe(1)
    await (await server?.service.openSandbox(sessionId))?.files.write('go-3', '')
    await expect.poll(() => grid.locator('.column-stats').count()).toBe(3)
    await waitingNote.waitFor({ state: 'detached' })
    // Each column's type and nulls; a number's range and mean, or a text's distinct values.
    expect(await grid.locator('.column-stats').allTextContents()).toEqual([
      expect.stringMatching(/^int64 · 0 nulls0 to 99,999, mean 49,999\.5/),
      expect.stringMatching(/^float64 · 0 nulls-?\d.* to \d.*, mean -?0\.\d+$/),
      expect.stringMatching(/^object · 0 nulls5 distinct[a-e] \(\d{1,2},\d{3}\)/),
    ])
    // Each line of the statistics stands level with the same line of the other columns (the text
    // column's top values wrapped, and stood its lines apart from the numbers'), at 390 px too.
    const lineTops = () =>
      grid
        .locator('.column-stats')
        .evaluateAll((all) =>
          all.map((stats) =>
            Array.from(stats.children, (line) => Math.round(line.getBoundingClientRect().top)),
          ),
        )
    const level = (tops: number[][]) =>
      tops.map((lines) => lines.map((top, at) => top - (tops[0]?.[at] ?? 0)))
    expect(level(await lineTops())).toEqual([
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ])
    // The header stays in view while the rows scroll in their box.
    expect(
      await grid.locator('.table-wrap').evaluate((wrap) => {
        wrap.scrollTop = wrap.scrollHeight
        const head = (wrap.querySelector('th') as HTMLElement).getBoundingClientRect().top
        const offset = Math.round(head - wrap.getBoundingClientRect().top - wrap.clientTop)
        wrap.scrollTop = 0
        return { scrolled: wrap.scrollHeight > wrap.clientHeight, offset }
      }),
    ).toEqual({ scrolled: true, offset: 0 })
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      expect(level(await lineTops())).toEqual([
        [0, 0, 0],
        [0, 0, 0],
        [0, 0, 0],
      ])
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 })
    }

    // A download being made holds the kernel as a cell does (an XLSX file is made whole): a page
    // asked for meanwhile waits for it, saying so, and comes after (the download's part is held
    // here, by a spy on the sandbox's runCode, until the page says it waits).
    const kernel = (await server?.service.openSandbox(sessionId)) as Sandbox
    /** Holds the kernel's requests whose code has `marker` until released; how many came. */
    const holdRequests = (marker: string) => {
      let release = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      const held = { count: 0, release, end: () => {} }
      const runCode = kernel.runCode.bind(kernel)
      kernel.runCode = (async (code, options) => {
        if (code.includes(marker)) {
          held.count++
          await released
        }
        return runCode(code, options)
      }) as Sandbox['runCode']
      held.end = () => {
        release()
        delete (kernel as { runCode?: unknown }).runCode
      }
      return held
    }
    const part = holdRequests('csv-part')
    const downloadNote = grid.getByText('Waiting for the download of this table…')
    try {
      const download = fetch(
        `${server?.url}/api/sessions/${sessionId}/results/${frameId}/rows?format=csv&filter=${encodeURIComponent('id < 3')}`,
        { headers: { authorization: 'Bearer grid-token' } },
      )
      await expect.poll(() => part.count).toBe(1)
      await grid.getByRole('button', { name: 'Next' }).click()
      await downloadNote.waitFor()
      part.release()
      expect((await (await download).text()).trim().split('\n')).toHaveLength(4)
      await expect.poll(status).toBe('Rows 51–75 of 100,000')
      await downloadNote.waitFor({ state: 'detached' })
    } finally {
      part.end()
    }

    // Rows not of the selection asked for are marked so: dimmed and "Loading…" while its page
    // comes (held here by the spy), and said to be from before a filter that failed.
    const foot = () => grid.locator('.table-foot').textContent()
    const rows = grid.locator('.grid-rows')
    const pageHeld = holdRequests('\\"kind\\":\\"rows\\"')
    try {
      await grid.getByRole('button', { name: 'Next' }).click()
      await expect.poll(() => pageHeld.count).toBe(1)
      await expect.poll(foot).toContain('Loading…')
      expect(await rows.getAttribute('aria-busy')).toBe('true')
      expect(await rows.getAttribute('class')).toBe('grid-rows stale')
      pageHeld.release()
      await expect.poll(status).toBe('Rows 76–100 of 100,000')
      await expect.poll(() => rows.getAttribute('class')).toBe('grid-rows')
      expect(await foot()).not.toContain('Loading…')
    } finally {
      pageHeld.end()
    }
    const filterBox = grid.getByRole('textbox', { name: 'Filter (a pandas query)' })
    await filterBox.fill('nope > 1')
    await filterBox.press('Enter')
    await grid.getByRole('alert').filter({ hasText: "The filter 'nope > 1' does not work" }).waitFor()
    expect(await foot()).toContain('(the rows from before the change)')
    expect(await rows.getAttribute('class')).toBe('grid-rows stale')
    await filterBox.fill('')
    await filterBox.press('Enter')
    await expect.poll(status).toBe('Rows 1–25 of 100,000')
    await expect.poll(() => rows.getAttribute('class')).toBe('grid-rows')
  }, 90_000)

  it("a page's request that its own older one replaced at the server (the older let through late, as on a busy server) asks again and gets its rows", async () => {
    const grid = page.getByRole('region', { name: 'Table' }).first()
    const status = () => grid.getByRole('status').textContent()
    await expect.poll(status).toBe('Rows 1–25 of 100,000')
    // A cell started elsewhere holds the kernel: the page's requests wait for it at the server,
    // and the grid re-asks nothing on its own when it ends (a cell of this page's would move its
    // cellsEnded, and the re-ask then would hide what this test looks at).
    const { kernel, ended: elsewhere } = await holdElsewhere('go-r')
    // The older request (page 2) is held in the browser, as a busy server holds one it has not
    // read yet; the page then asks for another selection, aborting the older one.
    const isOlder = (url: URL) =>
      url.pathname.endsWith(`/results/${frameId}/rows`) && url.searchParams.get('offset') === '25'
    let held: (route: Route) => void = () => {}
    const olderHeld = new Promise<Route>((resolve) => {
      held = resolve
    })
    const holdOlder = (route: Route) => held(route)
    await page.route(isOlder, holdOlder)
    const waitingNote = grid.getByText('Waiting for the running cell…')
    try {
      await grid.getByRole('button', { name: 'Next' }).click()
      const older = await olderHeld
      const filterBox = grid.getByRole('textbox', { name: 'Filter (a pandas query)' })
      await filterBox.fill('id >= 99990')
      await filterBox.press('Enter')
      // The newer request waits at the server (it said so: the cell is not this page's).
      await waitingNote.waitFor()
      // Now the older one reaches the server, last, with the page's headers: it replaces the newer.
      const olderAnswer = older.fetch().then((response) => response.text())
      const replacedSaid = grid
        .getByRole('alert')
        .filter({ hasText: 'A newer request of this table replaced this one' })
      // The grid asks again (its request replaces the older, which is told so); before the fix it
      // said the 409 and kept the rows from before.
      const first = await Promise.race([
        olderAnswer.then((text) => (/"status":409/.test(text) ? 'the older was replaced' : text)),
        replacedSaid.waitFor().then(() => 'the grid said the 409'),
      ])
      expect(first).toBe('the older was replaced')
      await older.abort().catch(() => undefined)
      await kernel.files.write('go-r', '')
      await elsewhere
      await expect.poll(status).toBe('Rows 1–10 of 10 (of 100,000)')
      expect(await column('id')).toEqual(Array.from({ length: 10 }, (_, i) => String(99_990 + i)))
      expect(await grid.getByRole('alert').count()).toBe(0)
      await waitingNote.waitFor({ state: 'detached' })
      await filterBox.fill('')
      await filterBox.press('Enter')
      await expect.poll(status).toBe('Rows 1–25 of 100,000')
    } finally {
      await page.unroute(isOlder, holdOlder)
      await kernel.files.write('go-r', '').catch(() => undefined)
    }
  }, 60_000)

  it('a page asked for while the kernel starts follows what holds it until its answer: a cell that starts once the kernel has started', async () => {
    const sandbox = (await server?.service.openSandbox(sessionId)) as Sandbox
    expect(sandbox).toBeTruthy()
    // The session's kernel "starts" until `started` hands over its sandbox (the service's
    // sandboxOf, as it answers while the kernel starts and replays the session's cells).
    let started: (sandbox: Sandbox) => void = () => {}
    const opening = new Promise<Sandbox | undefined>((resolve) => {
      started = resolve
    })
    const routes = frameRoutes({
      service: { sandboxOf: async () => ({ sandbox: opening, starting: true }) } as unknown as SessionService,
      ownerOf: () => null,
    })
    // Another request of the host's (not a cell) holds the kernel until `go-v`: the page's request
    // waits behind it, and a cell started meanwhile comes before it.
    const runCode = sandbox.runCode.bind(sandbox)
    sandbox.runCode = (code, options) =>
      runCode(
        code.includes('print_variables')
          ? `import os, time\nwhile not os.path.exists('go-v'): time.sleep(0.05)\n${code}`
          : code,
        options,
      )
    try {
      const variables = kernelVariables(sandbox)
      await expect.poll(() => sandbox.runningCells).toBe(1)
      const response = await routes.request(`/api/sessions/${sessionId}/results/${frameId}/rows?limit=1`, {
        headers: { accept: 'text/event-stream' },
      })
      const events = readSse(response)
      const next = async () => (await events.next()).value
      expect(await next()).toEqual({
        event: 'waiting',
        data: { reason: 'starting', message: "Rebuilding the session's state…" },
      })
      started(sandbox)
      // Started: no cell holds the kernel (the page's note goes).
      expect((await next())?.data.reason).toBe('answering')
      // A cell starts while the request waits: the request waits for it, and says so.
      const cell = runCode("import os, time\nwhile not os.path.exists('go-c'): time.sleep(0.05)")
      expect((await next())?.data.reason).toBe('cell')
      await sandbox.files.write('go-v', '')
      expect((await variables).length).toBeGreaterThan(0)
      await sandbox.files.write('go-c', '')
      expect((await cell).error).toBeUndefined()
      const rest = []
      for await (const event of events) rest.push(event)
      expect(rest.at(-1)).toEqual({
        event: 'answer',
        data: { rows: 100_000, offset: 0, data: expect.objectContaining({ id: [0] }) },
      })
      expect(rest.slice(0, -1).map((event) => event.data.reason)).toEqual(
        rest.length > 1 ? ['answering'] : [],
      )
    } finally {
      delete (sandbox as { runCode?: unknown }).runCode
      await Promise.all(['go-v', 'go-c'].map((name) => sandbox.files.remove(name).catch(() => undefined)))
    }
  }, 60_000)

  /**
   * Presses a page's key (`u`, `a`) until `focused` holds: on a loaded machine the key may come
   * before the page has settled, and the focus then lands on nothing (what is typed next is lost).
   */
  const pressUntilFocused = (key: string, focused: () => Promise<boolean>) =>
    expect
      .poll(
        async () => {
          if (await focused()) return true
          await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
          await page.keyboard.press(key)
          return focused()
        },
        { interval: 500 },
      )
      .toBe(true)

  it('goes the whole path by keyboard: upload, ask, stop, open a step, edit, run, sort the grid, download', async () => {
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    await page.keyboard.press('?')
    const keys = page.getByRole('dialog', { name: 'Keys' })
    expect(await keys.textContent()).toContain('Stop the question or cell that is running')
    // Esc closes the list wherever the focus is: on a loaded machine it may come before the
    // list has moved the focus to its Close button.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    await page.keyboard.press('Escape')
    await keys.waitFor({ state: 'detached' })
    await page.keyboard.press('n')
    await page.getByRole('heading', { name: 'Ask your data a question' }).waitFor()
    // u goes to Add files. On a loaded machine the new page may still be settling when u comes
    // (the focus then lands on a field a later render replaces): press it again, as a person
    // would on seeing no focus there, until the focus is on Add files.
    const addFiles = page.locator('.add-files input[type=file]')
    let chooser: FileChooser | undefined
    const chosen = (next: FileChooser) => {
      chooser ??= next
    }
    page.on('filechooser', chosen)
    const onAddFiles = () => addFiles.evaluate((input) => input === document.activeElement)
    await pressUntilFocused('u', onAddFiles)
    // Enter there opens the file chooser. On a loaded machine it did not come in 3 runs of 11, the
    // focus seen on Add files before the key: playwright-core turns on the chooser's interception
    // when the first listener is added, without waiting for it (Page's updateSubscription), so the
    // key may come first. The listener is added before the focus moves, and Enter pressed again.
    await expect
      .poll(
        async () => {
          if (chooser) return true
          if (!(await onAddFiles())) {
            await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
            await page.keyboard.press('u')
          }
          await page.keyboard.press('Enter')
          return false
        },
        { interval: 2000 },
      )
      .toBe(true)
    page.off('filechooser', chosen)
    await (chooser as FileChooser).setFiles(resolve('examples/sales.csv'))
    await page.locator('.dataset-name', { hasText: 'sales.csv' }).waitFor()

    // a goes to the question box (in Ask mode). On a loaded machine the key may come before the
    // page has settled, and the first letters typed went nowhere ("ake a while" was asked): press
    // it until the focus is there, and check what was typed before Enter.
    const questionBox = page.getByRole('textbox', { name: 'Question' })
    const inQuestionBox = () =>
      page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Question')
    await pressUntilFocused('a', inQuestionBox)
    await page.keyboard.type('Take a while')
    await expect.poll(() => questionBox.inputValue()).toBe('Take a while')
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'running the code' }).waitFor()
    const stoppedRun = page.getByRole('article', { name: 'Question: Take a while' })
    await page.keyboard.press('Escape')
    await stoppedRun.getByRole('alert').filter({ hasText: 'The analysis was interrupted' }).waitFor()
    // The server recorded a Stop (not "the client disconnected"), and kept the step it stopped
    // with its output so far: a reload or another tab shows it as this page does.
    const stoppedPath = `/api/sessions/${decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')}`
    const storedStop = ((await (await get(stoppedPath)).json()) as SessionDetail).runs.find(
      (run) => run.question === 'Take a while',
    )
    expect(storedStop).toMatchObject({ status: 'interrupted', error: 'Stopped.' })
    // (Its output so far is kept too, as service.test.ts checks: here the Stop may come before it.)
    expect(storedStop?.steps.map((step) => [step.stopped, step.code.includes("print('counting'")])).toEqual([
      ['Stopped.', true],
    ])

    // The focus is still in the question box.
    await page.keyboard.type('The orders')
    await page.keyboard.press('Enter')
    await page.locator('.answer', { hasText: 'Those are the orders.' }).waitFor()
    // The stopped question, as the store has it now, keeps what the page saw: a Stop, and the
    // step it stopped.
    expect(await stoppedRun.getByRole('alert').textContent()).toBe('The analysis was interrupted: Stopped.')
    expect(await stoppedRun.getByRole('region', { name: 'Step 1' }).locator('.badge').textContent()).toBe(
      'stopped',
    )
    const run = page.getByRole('article', { name: 'Question: The orders' })
    const head = run.locator('.step-head')
    if ((await head.getAttribute('aria-expanded')) === 'false') {
      await head.focus()
      await page.keyboard.press('Enter')
    }
    await run.getByRole('button', { name: 'Edit' }).focus()
    await page.keyboard.press('Enter')
    await run.getByRole('textbox', { name: 'Code of step 1' }).waitFor()
    await page.keyboard.press('ControlOrMeta+End')
    await page.keyboard.type(".query('order_value > 100')")
    await page.keyboard.press('ControlOrMeta+Enter')
    const mine = page.getByRole('article', { name: 'A cell you ran' }).last()
    const grid = mine.getByRole('region', { name: 'Table' })
    await grid.getByRole('status').filter({ hasText: 'Rows 1–25 of' }).waitFor()
    const sessionPath = `/api/sessions/${decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')}`
    const stored = (await (await get(sessionPath)).json()) as SessionDetail
    const rows = stored.runs.at(-1)?.steps[0]?.results.find((result) => result.frame)?.frame?.rows as number
    expect(rows).toBe(
      pandas("len(__import__('pandas').read_csv('examples/sales.csv').query('order_value > 100'))"),
    )
    await expect
      .poll(() => grid.getByRole('status').textContent())
      .toBe(`Rows 1–25 of ${rows.toLocaleString('en-US')}`)
    await grid.getByRole('button', { name: 'order_value' }).focus()
    await page.keyboard.press('Enter')
    await expect.poll(() => grid.locator('th[aria-sort=ascending]').textContent()).toContain('order_value')
    await grid.getByRole('link', { name: 'CSV' }).focus()
    const download = page.waitForEvent('download')
    await page.keyboard.press('Enter')
    const csv = readFileSync((await (await download).path()) as string, 'utf8')
      .trim()
      .split('\n')
    // A filtered frame's index is the row numbers it kept, not labels: no column of its own.
    expect(csv[0]).toBe('order_id,region,order_value')
    expect(csv.length - 1).toBe(rows)
    const values = csv.slice(1).map((line) => Number(line.split(',').at(-1)))
    expect(values).toEqual([...values].sort((a, b) => a - b))
    expect(Math.min(...values)).toBeGreaterThan(100)
  }, 120_000)

  it('finds in a long session, runs not drawn yet too: n of m, Enter and Shift+Enter go to each match, drawn, opened and highlighted; axe finds nothing serious', async () => {
    // 14 questions, each with a table (tall stand-ins): only the first few and the last are drawn at first.
    const { history } = (server as RunningServer).stores
    const session = await history.createSession({ title: 'A long analysis', owner: ownerOf('grid-token') })
    const texts: Record<
      number,
      { question?: string; code?: string; stdout?: string; header?: string; answer?: string }
    > = {
      1: { question: 'Where is the Zephyr?' },
      7: { code: '# The wind\nzephyr = 1\nprint(zephyr)' },
      8: { stdout: 'zephyr wind\n' },
      9: { header: 'zephyr_speed' },
      10: { answer: 'The zephyr blows from the west.' },
    }
    let steps = 0
    for (let q = 0; q < 14; q++) {
      const said = texts[q] ?? {}
      const run = await history.startRun(session.id, said.question ?? `Question ${q}`)
      await history.commitStep({
        runId: run.id,
        sessionId: session.id,
        step: {
          step: ++steps,
          code: said.code ?? `table_${q} = make(${q})`,
          stdout: said.stdout ?? '',
          stderr: '',
          results: [
            {
              isMainResult: true,
              text: 'a table',
              data: { [said.header ?? 'region']: ['N', 'S'], value: [1, 2] },
            },
          ],
          durationMs: 100,
        },
        artifacts: [],
        blocked: [],
      })
      await history.finishRun(run.id, {
        answer: said.answer ?? `Answer ${q}.`,
        incomplete: false,
        unsupportedNumbers: [],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      })
    }
    await page.goto(`${server?.url}/#/s/${encodeURIComponent(session.id)}`)
    await page.getByRole('heading', { name: 'A long analysis' }).waitFor()
    const runsShown = page.locator('.conversation > *')
    await expect.poll(() => page.locator('.conversation > .deferred').count()).toBeGreaterThan(5)
    expect(await page.locator('.conversation article', { hasText: 'zephyr wind' }).count()).toBe(0)

    const highlighted = () =>
      page.evaluate(() => {
        const range = [...(CSS.highlights.get('analyst-find') ?? [])][0] as Range | undefined
        const element = range?.startContainer.parentElement
        if (!range || !element) return null
        const run = [...(document.querySelector('.conversation')?.children ?? [])].indexOf(
          element.closest('article') as Element,
        )
        const part = element.closest('.question, .step-code, .output, th, .answer') as HTMLElement | null
        return { text: range.toString(), run, part: part?.tagName === 'TH' ? 'th' : part?.className }
      })
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    await page.keyboard.press('/')
    const box = page.getByRole('searchbox', { name: 'Find in this session' })
    await expect.poll(() => box.evaluate((input) => input === document.activeElement)).toBe(true)
    await page.keyboard.type('zephyr')
    const count = page.getByRole('search').getByRole('status')
    await expect.poll(() => count.textContent()).toBe('1 of 6')
    await expect.poll(highlighted).toEqual({ text: 'Zephyr', run: 1, part: 'question' })
    const matches = [
      { text: 'zephyr', run: 7, part: 'step-code' },
      { text: 'zephyr', run: 7, part: 'step-code' },
      { text: 'zephyr', run: 8, part: 'output stdout' },
      { text: 'zephyr', run: 9, part: 'th' },
      { text: 'zephyr', run: 10, part: 'answer' },
    ]
    for (const [n, expected] of matches.entries()) {
      await page.keyboard.press('Enter')
      await expect.poll(() => count.textContent()).toBe(`${n + 2} of 6`)
      await expect.poll(highlighted).toEqual(expected)
    }
    // Its step opened, its run drawn.
    expect(await runsShown.nth(8).locator('.step-head').getAttribute('aria-expanded')).toBe('true')
    await page.keyboard.press('Shift+Enter')
    await expect.poll(() => count.textContent()).toBe('5 of 6')
    await expect.poll(highlighted).toEqual({ text: 'zephyr', run: 9, part: 'th' })
    await page.keyboard.press('Enter')
    await page.keyboard.press('Enter')
    await expect.poll(() => count.textContent()).toBe('1 of 6')

    const found: Record<string, unknown> = {}
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme })
      const violations = await seriousViolations(page)
      if (violations.length) found[colorScheme] = violations
    }
    await page.emulateMedia({ colorScheme: 'light' })
    expect(found).toEqual({})
    await page.keyboard.press('Escape')
    await box.waitFor({ state: 'detached' })
    expect(await highlighted()).toBeNull()
  }, 60_000)

  it('a table whose first page fails says why and "No rows shown", not Loading… for ever', async () => {
    const shown = decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')
    const detail = await (await get(`/api/sessions/${shown}`)).json()
    // The tables on the page before: theirs pages pass, a new table's fail.
    const known = new Set<string>()
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk)
      else if (value && typeof value === 'object') {
        const frame = (value as { frame?: { id?: unknown } }).frame
        if (typeof frame?.id === 'string') known.add(frame.id)
        Object.values(value).forEach(walk)
      }
    }
    walk(detail)
    // The server answers the new table's pages with an error, as one behind a proxy does while
    // it restarts: the first page never comes.
    const rowsOf = (url: URL) => /\/results\/([^/]+)\/rows$/.exec(url.pathname)?.[1]
    const isNewRows = (url: URL) => {
      const rid = rowsOf(url)
      return rid !== undefined && !known.has(decodeURIComponent(rid))
    }
    const failing = (route: Route) =>
      route.fulfill({
        status: 502,
        contentType: 'application/json',
        body: JSON.stringify({ error: { message: 'The server is restarting' } }),
      })
    await page.route(isNewRows, failing)
    try {
      await runInCodeMode("import pandas as pd\npd.DataFrame({'first_page': [1, 2, 3]})")
      const grid = page
        .getByRole('article', { name: 'A cell you ran' })
        .filter({ hasText: 'first_page' })
        .getByRole('region', { name: 'Table' })
      await grid.getByText('No rows shown').waitFor()
      expect(await grid.getByRole('alert').textContent()).toBe('The server is restarting')
      expect(await grid.getByText('Loading…').count()).toBe(0)
    } finally {
      await page.unroute(isNewRows, failing)
    }
  }, 60_000)

  it('answers a bad column or filter with a 400 that says why, and a table the kernel lost with a 410', async () => {
    const rows = `/api/sessions/${sessionId}/results/${frameId}/rows`
    const badSort = await get(`${rows}?sort=nope`)
    expect(badSort.status).toBe(400)
    expect(((await badSort.json()) as { error: { message: string } }).error.message).toContain(
      "no column 'nope'",
    )
    const badFilter = await get(`${rows}?filter=${encodeURIComponent('value >')}`)
    expect(badFilter.status).toBe(400)
    expect(((await badFilter.json()) as { error: { message: string } }).error.message).toContain(
      'does not work',
    )
    expect(
      (await fetch(`${server?.url}${rows}`, { headers: { authorization: 'Bearer other' } })).status,
    ).toBe(401)
    // More rows than an XLSX sheet holds: a 400 that says what to do, before any byte.
    const tall = await (await server?.service.openSandbox(sessionId))?.runCode(
      "import pandas as pd\npd.DataFrame({'n': range(1_048_576)})",
    )
    const tallFrame = tall?.results.find((result) => result.extra?.['analyst/frame'])?.extra?.[
      'analyst/frame'
    ]
    const tallId = (tallFrame as { id: string } | undefined)?.id
    expect(tallId).toBeTruthy()
    const xlsx = await get(`/api/sessions/${sessionId}/results/${tallId}/rows?format=xlsx`)
    expect(xlsx.status).toBe(400)
    expect(((await xlsx.json()) as { error: { message: string } }).error.message).toBe(
      'An XLSX sheet holds at most 1,048,575 rows under its header, and this table has 1,048,576: filter it, or download it as CSV or Parquet',
    )
    await server?.service.close(sessionId)
    const gone = await get(rows)
    expect(gone.status).toBe(410)
    expect(((await gone.json()) as { error: { hint: string } }).error.hint).toContain('Run its step again')
  }, 60_000)

  it('a restart of the kernel tells an open grid at once that its table is gone, with Run its step again', async () => {
    // A session of its own (the first one's replay would wait for files its held cells wanted).
    await page.goto(`${server?.url}/#/`)
    await page.getByRole('heading', { name: 'Ask your data a question' }).waitFor()
    await runInCodeMode("import pandas as pd\npd.DataFrame({'n': range(30)})")
    const mine = page.getByRole('article', { name: 'A cell you ran' }).last()
    const grid = mine.getByRole('region', { name: 'Table' })
    await grid.getByRole('status').filter({ hasText: 'Rows 1–25 of 30' }).waitFor()
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Restart kernel' }).click()
    // No cell runs after the restart: the grid hears it from the page, not at its next request,
    // and keeps its rows (dimmed) until the next cell rebuilds the state.
    const said = grid.getByRole('alert').filter({ hasText: 'This table is not in the kernel now' })
    await said.waitFor({ timeout: 15_000 })
    expect(await said.getByRole('button', { name: 'Run its step again' }).count()).toBe(1)
    expect(await grid.locator('.grid-rows.stale tbody tr').count()).toBe(25)
    const restarted = decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')
    expect(await server?.service.openSandbox(restarted)).toBeUndefined()
  }, 90_000)

  it("a restart in another tab reaches this page's open grid at once, and one in another browser when this page comes back into view", async () => {
    // A session of its own, with a table, open in two tabs of this browser.
    await page.goto(`${server?.url}/#/`)
    await page.getByRole('heading', { name: 'Ask your data a question' }).waitFor()
    await runInCodeMode("import pandas as pd\npd.DataFrame({'m': range(40)})")
    const tableOf = (tab: Page) =>
      tab.getByRole('article', { name: 'A cell you ran' }).last().getByRole('region', { name: 'Table' })
    const grid = tableOf(page)
    await grid.getByRole('status').filter({ hasText: 'Rows 1–25 of 40' }).waitFor()
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
    const shown = page.url()
    const id = decodeURIComponent(/#\/s\/(.+)$/.exec(shown)?.[1] ?? '')
    const kernelAsked: string[] = []
    page.on('request', (request) => {
      if (request.url().endsWith(`/api/sessions/${encodeURIComponent(id)}/kernel`))
        kernelAsked.push(request.url())
    })
    const lostSaid = (words: string) =>
      grid.getByRole('alert').filter({ hasText: `This table is not in the kernel now (${words})` })
    const otherTab = await page.context().newPage()
    let otherBrowser: Awaited<ReturnType<typeof openBrowser>> | undefined
    try {
      await otherTab.goto(shown)
      await tableOf(otherTab).getByRole('status').filter({ hasText: 'Rows 1–25 of 40' }).waitFor()
      // Restarted in the other tab: this one's grid says so at once, with no request of its own.
      await otherTab.getByRole('button', { name: 'Restart kernel' }).click()
      await lostSaid('it was restarted').waitFor()
      expect(
        await lostSaid('it was restarted').getByRole('button', { name: 'Run its step again' }).count(),
      ).toBe(1)
      expect(await grid.locator('.grid-rows.stale tbody tr').count()).toBe(25)
      expect(kernelAsked).toEqual([])

      // Its step run again here: the table is back (the kernel started, its cells replayed).
      await lostSaid('it was restarted').getByRole('button', { name: 'Run its step again' }).click()
      await expect.poll(() => page.getByRole('article', { name: 'A cell you ran' }).count()).toBe(2)
      await grid.getByRole('status').filter({ hasText: 'Rows 1–25 of 40' }).waitFor()
      await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
      await expect.poll(() => grid.getByRole('alert').count()).toBe(0)
      expect(await server?.service.openSandbox(id)).toBeTruthy()

      // Restarted in another browser: nothing reaches this page while no one looks at it (nothing
      // is asked), and it learns so as it comes back into view. Playwright's pages all keep the
      // focus; this one's is real from here: it goes to another tab and back.
      otherBrowser = await openBrowser('grid-other', 'grid-token')
      const elsewhere = otherBrowser.page
      await elsewhere.goto(shown)
      await elsewhere.getByRole('button', { name: 'Restart kernel' }).click()
      await expect.poll(async () => await server?.service.openSandbox(id)).toBeUndefined()
      expect(kernelAsked).toEqual([])
      const cdp = await page.context().newCDPSession(page)
      await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false })
      await page.bringToFront()
      const away = await page.context().newPage()
      await expect.poll(() => page.evaluate(() => document.hasFocus())).toBe(false)
      expect(await grid.getByRole('alert').count()).toBe(0)
      await page.bringToFront()
      await away.close()
      const said = lostSaid('it was restarted, paused or closed since')
      await said.waitFor()
      expect(await said.getByRole('button', { name: 'Run its step again' }).count()).toBe(1)
      expect(await grid.locator('.grid-rows.stale tbody tr').count()).toBe(25)
      // Asked as it came back (once, or twice where focus and visibility came apart on a busy machine).
      expect(kernelAsked.length).toBeGreaterThan(0)
      await cdp.detach()
      // The state it reads is the owner's only.
      const other = await fetch(`${server?.url}/api/sessions/${encodeURIComponent(id)}/kernel`, {
        headers: { authorization: 'Bearer other' },
      })
      expect(other.status).toBe(401)
    } finally {
      page.removeAllListeners('request')
      await otherTab.close()
      await otherBrowser?.close()
    }
  }, 120_000)
})
