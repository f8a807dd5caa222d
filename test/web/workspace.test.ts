/**
 * The page as a workspace, in Chromium (playwright-core) against the real server, a scripted model
 * and the real kernel: a person edits a step's code and runs it (a cell of their own, in the
 * history, the export and the model's next prompt), runs the steps below an edit again, writes a
 * cell in Code mode, sees the guard's refusal and a cell's error beside the code, stops a cell
 * with Esc without losing the kernel's state; the session's side panel lists the kernel's
 * variables and the workspace's files (preview, download, a file dropped in), restarts the kernel
 * (its state rebuilt by replay), and is a sheet at 390×844.
 */
import { readFileSync } from 'node:fs'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { ScriptedModel } from '../../src/models/scripted.js'
import { PERSON_CELL, type SessionDetail } from '../../src/server/types.js'
import { sidewaysOverflow } from '../support/axe.js'
import { hasChromium } from '../support/chromium.js'
import { startWebWorkspace, type WebWorkspace } from '../support/web-workspace.js'

describe.skipIf(!hasChromium)('the workspace in Chromium', () => {
  let web: WebWorkspace | undefined
  let page: Page
  let sessionId: string
  /** What the model saw when asked the question after the person's cells. */
  let laterPrompt = ''

  const model = new ScriptedModel([
    { text: 'Setting x.', code: 'x = 41\nprint("x is", x)' },
    { text: 'x is 41.' },
    { text: 'One more than x.', code: 'y = x + 1' },
    { text: 'Ten times that.', code: 'print("ten y:", y * 10)' },
    { text: 'That is ten times y.' },
    (prompt) => {
      laterPrompt = JSON.stringify(prompt)
      return { text: 'I saw your cells.' }
    },
  ])

  const api = async <T>(path: string): Promise<T> => {
    const response = await (web as WebWorkspace).get(path)
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`)
    return (response.headers.get('content-type')?.includes('json') ? response.json() : response.text()) as T
  }
  const ask = async (question: string, answer: string) => {
    const box = page.getByRole('textbox', { name: 'Question', exact: true })
    await box.fill(question)
    await box.press('Enter')
    await page.locator('.answer', { hasText: answer }).waitFor()
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
  }
  /** Replaces everything in a CodeMirror editor by typing, as a person would. */
  const typeInto = async (label: string, code: string) => {
    const editor = page.getByRole('textbox', { name: label, exact: true })
    await editor.waitFor()
    await editor.click()
    await page.keyboard.press('ControlOrMeta+a')
    await page.keyboard.press('Delete')
    await page.keyboard.type(code)
  }
  /** Opens a step (a live step is open already) and its editor. */
  const editStep = async (step: ReturnType<Page['locator']>) => {
    const head = step.locator('.step-head')
    if ((await head.getAttribute('aria-expanded')) === 'false') await head.click()
    await step.getByRole('button', { name: 'Edit' }).click()
  }
  const personRuns = () => page.getByRole('article', { name: 'A cell you ran' })

  beforeAll(async () => {
    web = await startWebWorkspace('workspace', model)
    page = web.page
    await ask('Set x', 'x is 41.')
    sessionId = decodeURIComponent(/#\/s\/(.+)$/.exec(page.url())?.[1] ?? '')
  }, 120_000)

  afterAll(() => web?.close())

  it("edits a step and runs it as the person's cell: output, history, export, the model's next prompt", async () => {
    const step = page.getByRole('region', { name: 'Step 1' }).first()
    await editStep(step)
    await typeInto('Code of step 1', 'x = 42\nprint("twice x is", x * 2)')
    await page.keyboard.press('ControlOrMeta+Enter')
    await step.getByRole('status').filter({ hasText: 'Ran as a new cell' }).waitFor()
    await personRuns().last().locator('pre.output.stdout', { hasText: 'twice x is 84' }).waitFor()
    // The step's own output is still there, as it was.
    expect(await step.locator('pre.output.stdout').textContent()).toContain('x is 41')

    const detail = await api<SessionDetail>(`/api/sessions/${sessionId}`)
    const person = detail.runs.filter((run) => run.question === PERSON_CELL)
    expect(person.map((run) => run.steps[0]?.code)).toEqual(['x = 42\nprint("twice x is", x * 2)'])
    expect(person[0]?.steps[0]?.stdout).toContain('twice x is 84')
    const { cells } = await api<{ cells: { source: string | string[] }[] }>(
      `/api/sessions/${sessionId}/export?format=ipynb`,
    )
    const sources = cells.map((cell) => (Array.isArray(cell.source) ? cell.source.join('') : cell.source))
    expect(sources).toContain(`## ${PERSON_CELL}\n`)
    expect(sources).toContain('x = 42\nprint("twice x is", x * 2)')
  }, 60_000)

  it('shows a refused cell and a failed cell beside the code; Code mode runs a cell without the model', async () => {
    const step = page.getByRole('region', { name: 'Step 1' }).first()
    await typeInto('Code of step 1', "import socket\nsocket.create_connection(('example.com', 80))")
    await step.getByRole('button', { name: 'Run', exact: false }).first().click()
    const refused = step.getByRole('alert')
    await refused.filter({ hasText: 'The guard refused this cell' }).waitFor()
    expect(await refused.textContent()).toMatch(/network|socket/i)
    await typeInto('Code of step 1', 'print("before")\n1 / 0')
    await page.keyboard.press('ControlOrMeta+Enter')
    await step.getByRole('alert').filter({ hasText: 'ZeroDivisionError: division by zero' }).waitFor()
    expect(await step.locator('pre.output.stdout').first().textContent()).toContain('x is 41')
    await step.getByRole('button', { name: 'Done' }).click()

    // Code mode: a cell of one's own, in the same kernel (x is 42 since the edit).
    await page.getByRole('radio', { name: 'Code' }).check()
    await typeInto('Cell', 'print("x plus one is", x + 1)')
    await page.keyboard.press('ControlOrMeta+Enter')
    await personRuns().last().locator('pre.output.stdout', { hasText: 'x plus one is 43' }).waitFor()
    expect(model.remaining).toBe(4)
  }, 60_000)

  it('stops a cell with Esc and keeps the kernel state', async () => {
    const before = await personRuns().count()
    await typeInto('Cell', 'import time\nfor _ in range(600): time.sleep(0.1)')
    await page.keyboard.press('ControlOrMeta+Enter')
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor()
    // No restart while a cell runs: a 409 that says to stop it first.
    await expect.poll(() => web?.server.service.busy).toBeGreaterThan(0)
    const restart = await fetch(`${web?.server.url}/api/sessions/${sessionId}/restart`, {
      method: 'POST',
      headers: { authorization: 'Bearer workspace-token' },
    })
    expect(restart.status).toBe(409)
    expect(((await restart.json()) as { error: { hint: string } }).error.hint).toContain('Stop it first')
    await page.keyboard.press('Escape')
    await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
    await expect.poll(() => personRuns().count()).toBe(before + 1)
    await typeInto('Cell', 'print("still", x)')
    await page.keyboard.press('ControlOrMeta+Enter')
    await personRuns().last().locator('pre.output.stdout', { hasText: 'still 42' }).waitFor()
    // Recorded as a Stop (not "the client disconnected"), with the cell it stopped kept, marked so.
    const detail = await api<SessionDetail>(`/api/sessions/${sessionId}`)
    const stopped = detail.runs.find((run) => run.status === 'interrupted' && run.question === PERSON_CELL)
    expect(stopped).toMatchObject({ error: 'Stopped.' })
    expect(stopped?.steps.map((step) => [step.code, step.stopped])).toEqual([
      ['import time\nfor _ in range(600): time.sleep(0.1)', 'Stopped.'],
    ])
    const shown = page.getByRole('article', { name: 'A cell you ran' }).nth(before)
    expect(await shown.getByRole('region', { name: 'Step 1' }).locator('.badge').textContent()).toBe(
      'stopped',
    )
  }, 60_000)

  it('a Stop that the server sent on to the replica running the cell (pending) leaves the cell to end there as Stopped.', async () => {
    const before = await personRuns().count()
    const cellFailed: string[] = []
    const onFailed = (request: { url(): string }) => {
      if (request.url().endsWith('/cells')) cellFailed.push(request.url())
    }
    page.on('requestfailed', onFailed)
    // Another replica runs the cell, and its holder has not answered yet: what that replica's B says.
    const answered = new Promise<void>((resolve) => {
      void page.route('**/stop', async (route) => {
        await route.fulfill({ json: { stopped: 0, pending: true } })
        resolve()
      })
    })
    try {
      await typeInto('Cell', 'import time\nfor _ in range(600): time.sleep(0.1)')
      await page.keyboard.press('ControlOrMeta+Enter')
      await expect.poll(() => web?.server.service.busy).toBeGreaterThan(0)
      await page.keyboard.press('Escape')
      await answered
      // The page has handled the answer (two frames later); a page that closed its request would have by now.
      await page.evaluate(
        () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))),
      )
      expect(cellFailed).toEqual([])
      expect(web?.server.service.busy).toBeGreaterThan(0)
      // The holder finds the request (at its lease's renewal): the cell ends there, as a Stop.
      expect(await web?.server.service.stop(sessionId)).toEqual({ stopped: 1 })
      await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'detached' })
      await expect.poll(() => personRuns().count()).toBe(before + 1)
      const detail = await api<SessionDetail>(`/api/sessions/${sessionId}`)
      expect(detail.runs.filter((run) => run.question === PERSON_CELL).at(-1)).toMatchObject({
        status: 'interrupted',
        error: 'Stopped.',
      })
    } finally {
      page.off('requestfailed', onFailed)
      await page.unroute('**/stop')
    }
  }, 60_000)

  it('runs the steps below an edit again, in order; the model sees the cells at the next question', async () => {
    await page.getByRole('radio', { name: 'Ask' }).check()
    await ask('Ten times one more', 'That is ten times y.')
    const run = page.getByRole('article', { name: 'Question: Ten times one more' })
    const first = run.getByRole('region', { name: 'Step 1' })
    await editStep(first)
    const count = await personRuns().count()
    await typeInto('Code of step 1', 'y = x + 100')
    await first.getByRole('button', { name: 'Run below' }).click()
    await first.getByRole('status').filter({ hasText: 'Ran 2 cells' }).waitFor()
    await expect.poll(() => personRuns().count()).toBe(count + 2)
    expect(await personRuns().last().locator('pre.output.stdout').textContent()).toContain('ten y: 1420')

    await ask('What did I run?', 'I saw your cells.')
    expect(laterPrompt).toContain('y = x + 100')
    expect(laterPrompt).toContain('ten y: 1420')
    // The cell stopped before: the model is told it did not finish (the kernel may hold part of it).
    expect(laterPrompt).toContain('The run was stopped before it finished')
  }, 90_000)

  it("lists the kernel's variables after a cell: name, type, a frame's shape and memory", async () => {
    await page.getByRole('radio', { name: 'Code' }).check()
    await typeInto(
      'Cell',
      "import numpy as np\nimport pandas as pd\nframe = pd.DataFrame({'a': np.arange(1000)})\nwide = np.zeros((1_000_000, 3))",
    )
    await page.keyboard.press('ControlOrMeta+Enter')
    const panel = page.getByRole('complementary', { name: 'Session' }).locator('details.variables')
    const row = (name: string) => panel.getByRole('row', { name: new RegExp(`^${name} `) })
    await row('frame').waitFor()
    expect(await row('frame').locator('td').allTextContents()).toEqual([
      'frame',
      'DataFrame',
      '1,000 × 1',
      '7.9 KB',
    ])
    expect(await row('y').locator('td').allTextContents()).toEqual(['y', 'int', '', ''])
    expect(await panel.textContent()).not.toContain('np')
    // The table fits the panel (its memory column was cut off at the panel's edge).
    const sidePanel = page.getByRole('complementary', { name: 'Session' })
    expect(await sidePanel.evaluate((element) => element.scrollWidth - element.clientWidth)).toBe(0)
    // Beside a wide shape, a name or type of one word stays whole (it was cut to 'Data / Fram / e').
    await row('wide').waitFor()
    const linesOf = (name: string) =>
      row(name)
        .locator('td')
        .evaluateAll((cells) =>
          cells.slice(0, 2).map((cell) => {
            const range = document.createRange()
            range.selectNodeContents(cell)
            return new Set(Array.from(range.getClientRects(), (rect) => Math.round(rect.top))).size
          }),
        )
    expect(await linesOf('frame')).toEqual([1, 1])
    expect(await linesOf('wide')).toEqual([1, 1])
    expect(await row('wide').locator('td').allTextContents()).toEqual([
      'wide',
      'ndarray',
      '1,000,000 × 3',
      '23 MB',
    ])
  }, 60_000)

  it('shows the files of the workspace: a preview, a download, and a file dropped in goes to data/', async () => {
    const panel = page.getByRole('complementary', { name: 'Session' })
    await typeInto('Cell', "open('notes.txt', 'w').write('hello from the kernel\\n' * 3)")
    await page.keyboard.press('ControlOrMeta+Enter')
    await panel.getByRole('button', { name: 'Preview notes.txt' }).click()
    await panel.locator('pre.file-preview', { hasText: 'hello from the kernel' }).waitFor()
    const download = page.waitForEvent('download')
    await panel.getByRole('link', { name: 'Download notes.txt' }).click()
    expect(readFileSync((await (await download).path()) as string, 'utf8')).toBe(
      'hello from the kernel\n'.repeat(3),
    )

    await panel.locator('.drop-zone').evaluate((zone) => {
      const dropped = new DataTransfer()
      dropped.items.add(new File(['a,b\n1,2\n3,4\n'], 'dropped.csv', { type: 'text/csv' }))
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dropped, bubbles: true, cancelable: true }))
    })
    await panel.getByRole('button', { name: 'Preview data/dropped.csv' }).click()
    await panel.locator('pre.file-preview', { hasText: '3,4' }).waitFor()
    const detail = await api<SessionDetail>(`/api/sessions/${sessionId}`)
    expect(detail.datasets.map((dataset) => dataset.name)).toContain('dropped.csv')
    await typeInto('Cell', "print(open('data/dropped.csv').read().count(','))")
    await page.keyboard.press('ControlOrMeta+Enter')
    await personRuns()
      .last()
      .locator('pre.output.stdout', { hasText: /^3\s*$/ })
      .waitFor()
  }, 60_000)

  it("restarts the kernel; the next cell finds the state rebuilt by replay, a table's page waits for it saying so, and a table the replay could not make again (its step failed then, or before) says so", async () => {
    const { service, stores } = (web as WebWorkspace).server
    // Two tables: one that the replay makes again, one that it cannot (its step reads a file that
    // the host wrote, which the new kernel's workspace lacks).
    await (await service.openSandbox(sessionId))?.files.write('from-host.csv', 'n\n1\n2\n')
    await typeInto('Cell', "import pandas as pd\npd.read_csv('from-host.csv')")
    await page.keyboard.press('ControlOrMeta+Enter')
    const tables = page.getByRole('region', { name: 'Table' })
    await expect.poll(() => tables.count()).toBe(1)
    await typeInto('Cell', 'frame.head(30)')
    await page.keyboard.press('ControlOrMeta+Enter')
    // By its step, not its place: the other table, once found gone, is no longer a region.
    const kept = personRuns().filter({ hasText: 'frame.head(30)' }).getByRole('region', { name: 'Table' })
    const status = () => kept.getByRole('status').textContent()
    await expect.poll(status).toBe('Rows 1–25 of 30')
    // A third, from a step that failed after showing it: a failed step is not replayed.
    await typeInto('Cell', "display(frame.head(3))\nraise ValueError('after its table')")
    await page.keyboard.press('ControlOrMeta+Enter')
    const failedFirst = personRuns().filter({ hasText: 'after its table' })
    await expect
      .poll(() => failedFirst.getByRole('region', { name: 'Table' }).getByRole('status').textContent())
      .toBe('Rows 1–3 of 3')

    const panel = page.getByRole('complementary', { name: 'Session' })
    await panel.getByRole('button', { name: 'Restart kernel' }).click()
    await panel.getByRole('status').filter({ hasText: 'rebuilt by replay' }).waitFor()
    expect(await service.openSandbox(sessionId)).toBeUndefined()
    await panel.getByText('No variables').waitFor()
    // The open tables hear it at once, before any cell: not in the kernel now, their rows kept.
    await kept.getByRole('alert').filter({ hasText: 'This table is not in the kernel now' }).waitFor()
    expect(await kept.getByRole('button', { name: 'Run its step again' }).count()).toBe(1)
    // The next cell starts a kernel and replays the session's cells; held here at its start (the
    // store's read of the session), the table's next page waits for it and says why.
    const { history } = stores
    const snapshot = history.snapshot.bind(history)
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    history.snapshot = (async (read) => {
      await gate
      return snapshot(read)
    }) as typeof history.snapshot
    const rebuilding = kept.getByText("Rebuilding the session's state…")
    try {
      await typeInto('Cell', 'print("after the restart", x, y, frame.shape)')
      await page.keyboard.press('ControlOrMeta+Enter')
      await expect.poll(async () => (await service.sandboxOf(sessionId)).starting).toBe(true)
      await kept.getByRole('button', { name: 'Next' }).click()
      await rebuilding.waitFor()
    } finally {
      delete (history as { snapshot?: unknown }).snapshot
      release()
    }
    // The replay made the table again: the page comes (the kernel's new id stands for the old).
    await expect.poll(status).toBe('Rows 26–30 of 30')
    await rebuilding.waitFor({ state: 'detached' })
    expect(await kept.locator('tbody tr').first().textContent()).toBe('25')
    await personRuns()
      .last()
      .locator('pre.output.stdout', { hasText: 'after the restart 42 142 (1000, 1)' })
      .waitFor()
    // The other is gone for good, and says so, with its step to run again (no spinner); so is
    // the failed step's, which says why (not the kernel's "it restarted since").
    const lost = page.locator('.grid-gone', {
      hasText: "was not made again when the session's state was rebuilt (its step failed when replayed)",
    })
    await lost.waitFor()
    expect(await lost.getByRole('button', { name: 'Run its step again' }).count()).toBe(1)
    const notReplayed = failedFirst.locator('.grid-gone')
    await expect
      .poll(() => notReplayed.textContent())
      .toBe(
        "This table was not made again when the session's state was rebuilt (its step failed when it ran, so it is not replayed). Run its step again",
      )
    expect(await notReplayed.getByRole('button', { name: 'Run its step again' }).count()).toBe(1)
    expect(await page.locator('.grid-waiting').count()).toBe(0)
  }, 90_000)

  it('at 390×844 never scrolls sideways, and the side panel is a sheet', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    try {
      const panel = page.getByRole('complementary', { name: 'Session' })
      await panel.waitFor({ state: 'hidden' })
      await page.getByRole('button', { name: 'Session', exact: true }).click()
      await panel.waitFor()
      expect(await panel.evaluate((element) => getComputedStyle(element).position)).toBe('fixed')
      expect(await sidewaysOverflow(page)).toBe(0)
      await panel.getByRole('button', { name: 'Close the session panel' }).click()
      await panel.waitFor({ state: 'hidden' })
      expect(await sidewaysOverflow(page)).toBe(0)
      // A step's Edit stands apart from its code (over it, it hid the end of the first line), and
      // opens the editor, which fits too.
      const overEdit = await page.evaluate(() =>
        Array.from(document.querySelectorAll('.step-code'), (wrap) => {
          const edit = wrap.querySelector(':scope > .edit')?.getBoundingClientRect()
          const code = wrap.querySelector(':scope > .code')?.getBoundingClientRect()
          if (!edit || !code) return 'none'
          const apart =
            edit.right <= code.left ||
            edit.left >= code.right ||
            edit.bottom <= code.top ||
            edit.top >= code.bottom
          return apart ? 'apart' : 'over'
        }).filter((where) => where !== 'none'),
      )
      expect(overEdit.length).toBeGreaterThan(0)
      expect(overEdit).toEqual(overEdit.map(() => 'apart'))
      const step = personRuns().last()
      await editStep(step)
      await step.getByRole('textbox', { name: /^Code of step/ }).waitFor()
      expect(await sidewaysOverflow(page)).toBe(0)
      await step.getByRole('button', { name: 'Done' }).click()
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 })
    }
  }, 30_000)
})
