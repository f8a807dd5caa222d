/**
 * The grid over a frame the kernel keeps, in Chromium (playwright-core) against the real server,
 * a scripted model and the real kernel: a 100,000-row DataFrame result is sorted and filtered in
 * the kernel and its pages checked against pandas; the selection downloads as CSV and XLSX and
 * reads back; a bad column or filter is a 400 with the reason; a closed kernel's table is a 410.
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { ScriptedModel } from '../../src/models/scripted.js'
import type { RunningServer } from '../../src/server/index.js'
import type { SessionDetail } from '../../src/server/types.js'
import { hasChromium } from '../support/chromium.js'
import { startWebWorkspace, type WebWorkspace } from '../support/web-workspace.js'

const MAKE = [
  'import numpy as np',
  'import pandas as pd',
  'rng = np.random.default_rng(7)',
  "big = pd.DataFrame({'id': np.arange(100_000), 'value': rng.normal(size=100_000).round(4), 'group': rng.choice(list('abcde'), 100_000)})",
].join('\n')

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
  const model = new ScriptedModel([
    { text: 'A big table.', code: `${MAKE}\nbig` },
    { text: 'There are 100,000 rows.' },
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

  it('sorts and filters the whole frame in the kernel; the pages match pandas', async () => {
    const grid = page.getByRole('region', { name: 'Table' })
    await expect.poll(() => grid.getByRole('status').textContent()).toBe('Rows 1–25 of 100000')
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
    await expect.poll(() => grid.getByRole('status').textContent()).toBe(`Rows 1–25 of ${count} (of 100000)`)
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

    // Copy as code: a pandas cell that gives the same rows.
    await grid.getByRole('button', { name: 'Copy as code' }).click()
    const code = (await grid.locator('pre.copied').textContent()) as string
    expect(code).toContain(`table.query(${JSON.stringify(filter)})`)
    expect(code).toContain('sort_values("value", ascending=False)')
  }, 90_000)

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
    await server?.service.close(sessionId)
    const gone = await get(rows)
    expect(gone.status).toBe(410)
    expect(((await gone.json()) as { error: { hint: string } }).error.hint).toContain('Run its step again')
  }, 60_000)
})
