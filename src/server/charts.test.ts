/**
 * A chart's edit over the HTTP API without a socket: kept for the session's owner only, shown in
 * the session's detail, carried by the notebook, and put back as drawn by an empty edit.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openTestService, type TestService } from '../../test/support/service.js'
import { ScriptedModel } from '../models/scripted.js'
import { VEGA_LITE_MIME } from '../store/export/chart-spec.js'
import { MockSandboxProvider } from '../test/mock-sandbox.js'
import { createApp } from './app.js'
import type { SessionDetail } from './types.js'

const CHART = {
  type: 'bar',
  title: 'Visits',
  x_label: 'day',
  y_label: 'visits',
  x_unit: null,
  y_unit: null,
  x_scale: 'categorical',
  orientation: 'vertical',
  elements: ['mon', 'tue', 'wed'].map((label, i) => ({
    label,
    group: 'visits',
    value: [5, 7, 6][i],
    start: i - 0.4,
    end: i + 0.4,
    bottom: 0,
  })),
}

describe('PUT …/results/:index/chart', () => {
  let test: TestService
  let app: ReturnType<typeof createApp>
  let path: string
  let sessionId: string

  const call = async (url: string, init: RequestInit = {}, token = 'token-a') => {
    const response = await app.request(url, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }
  const put = (body: unknown, token?: string) =>
    call(path, { method: 'PUT', body: JSON.stringify(body) }, token)

  beforeAll(async () => {
    test = await openTestService({
      provider: new MockSandboxProvider(() => []),
      model: new ScriptedModel([]),
    })
    app = createApp({
      service: test.service,
      tokens: ['token-a', 'token-b'],
      uploadDir: join(test.home, 'up'),
    })
    sessionId = ((await call('/api/sessions', { method: 'POST', body: '{}' })).body as { id: string }).id
    // A step with a chart, as the agent records one.
    const history = test.service.history
    const run = await history.startRun(sessionId, 'Visits by day?')
    await history.commitStep({
      runId: run.id,
      sessionId,
      step: {
        step: 1,
        code: 'plt.bar(days, visits)',
        stdout: '',
        stderr: '',
        results: [{ isMainResult: false, chart: CHART }],
        durationMs: 1,
      },
      artifacts: [],
      blocked: [],
    })
    await history.finishRun(run.id, {
      answer: 'Up, then down.',
      incomplete: false,
      unsupportedNumbers: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    })
    path = `/api/sessions/${sessionId}/runs/${run.id}/steps/1/results/0/chart`
  })
  afterAll(() => test?.close())

  it("keeps the owner's edit, shows it in the detail and the notebook, and clears it with {}", async () => {
    const edit = { mark: 'area', title: 'Visits, as an area', yTitle: '' }
    expect(await put(edit, 'token-b')).toMatchObject({ status: 404 })
    expect(await put(edit)).toEqual({ status: 200, body: { chartEdit: edit } })
    const detail = (await call(`/api/sessions/${sessionId}`)).body as unknown as SessionDetail
    expect(detail.runs[0]?.steps[0]?.results[0]?.chartEdit).toEqual(edit)
    const notebook = await app.request(`/api/sessions/${sessionId}/export?format=ipynb`, {
      headers: { authorization: 'Bearer token-a' },
    })
    const spec = JSON.parse(await notebook.text()).cells.flatMap(
      (cell: { outputs?: unknown[] }) => cell.outputs ?? [],
    )[0].data[VEGA_LITE_MIME]
    expect([spec.title, spec.layer[0].mark.type, spec.layer[0].encoding.y.title]).toEqual([
      edit.title,
      'area',
      null,
    ])

    expect(await put({})).toEqual({ status: 200, body: { chartEdit: null } })
    const cleared = (await call(`/api/sessions/${sessionId}`)).body as unknown as SessionDetail
    expect(cleared.runs[0]?.steps[0]?.results[0]).not.toHaveProperty('chartEdit')
  })

  it('says what is wrong with a bad edit or a place with no result', async () => {
    const bad = await put({ mark: 'line', title: 'x'.repeat(501) })
    expect([bad.status, (bad.body.error as { message: string }).message]).toEqual([
      400,
      expect.stringContaining('at most 500'),
    ])
    expect(
      (await call(path.replace('/results/0/', '/results/1/'), { method: 'PUT', body: '{}' })).status,
    ).toBe(404)
    expect((await call(path.replace('/steps/1/', '/steps/0/'), { method: 'PUT', body: '{}' })).status).toBe(
      400,
    )
  })
})
