/**
 * `analyst serve` as users run it: killed with -9 in the middle of a question, then restarted: every
 * committed step is there, the cut-off question is marked interrupted, and the session continues
 * with its state rebuilt. And a SIGTERM stops it cleanly.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionDetail } from '../../src/server/types.js'
import { type FakeOpenAI, lastObservation, startFakeOpenAI } from '../support/fake-openai.js'
import { startServe } from '../support/serve.js'
import { askOverSse } from '../support/sse.js'

let home: string
let model: FakeOpenAI

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'analyst-recovery-'))
})
afterAll(async () => {
  await model?.close()
  rmSync(home, { recursive: true, force: true })
})

/** `analyst serve --port 0` with the fake model. */
const serve = () =>
  startServe([], {
    PATH: process.env.PATH ?? '',
    ANALYST_HOME: home,
    ANALYST_MODEL: 'openai-compatible:fake',
    ANALYST_BASE_URL: model.url,
    NO_COLOR: '1',
  })

const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => child.once('exit', (code) => r(code)))

describe('analyst serve, stopped', () => {
  it('after kill -9 a restart finds every committed step, marks the question interrupted, and continues it', async () => {
    model = await startFakeOpenAI([
      { code: "import pandas as pd\nsales = pd.read_csv('data/sales.csv')\nprint('rows', len(sales))" },
      { code: "import time\nprint('waiting', flush=True)\ntime.sleep(120)" },
      // After the restart: the state of step 1 was rebuilt by re-running it.
      { code: "print('still', len(sales))" },
      (request) => ({
        content: `Done: ${lastObservation(request).includes('still 400') ? 'state rebuilt' : 'state lost'}.`,
      }),
    ])
    const first = await serve()
    const { id } = (await (
      await fetch(`${first.url}/api/sessions`, { method: 'POST', body: '{}' })
    ).json()) as { id: string }
    const form = new FormData()
    form.append('file', new Blob([readFileSync(resolve('examples/sales.csv'))]), 'sales.csv')
    expect(
      (await fetch(`${first.url}/api/sessions/${id}/files`, { method: 'POST', body: form })).status,
    ).toBe(201)
    const gone = exited(first.child)
    let killed = false
    const events = await askOverSse(first.url, id, 'Count, then wait.', {}, (event) => {
      if (event.event === 'stdout' && String(event.data.text).includes('waiting'))
        killed = first.child.kill('SIGKILL')
    }).catch(() => undefined)
    if (!killed) first.child.kill('SIGKILL')
    expect(killed, JSON.stringify(events)).toBe(true)
    await gone

    const second = await serve()
    try {
      const detail = (await (await fetch(`${second.url}/api/sessions/${id}`)).json()) as SessionDetail
      expect(detail.status).toBe('interrupted')
      expect(detail.runs.map((run) => run.status)).toEqual(['interrupted'])
      expect(detail.runs[0]?.steps.map((step) => step.stdout)).toEqual(['rows 400\n'])
      const events = await askOverSse(second.url, id, 'Go on.')
      expect(events.at(-1)?.data).toMatchObject({ type: 'done', result: { answer: 'Done: state rebuilt.' } })
    } finally {
      second.child.kill('SIGTERM')
      expect(await exited(second.child)).toBe(0)
    }
  }, 120_000)
})
