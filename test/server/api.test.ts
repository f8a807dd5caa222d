/**
 * The HTTP API against a real server on 127.0.0.1 with a scripted model and real sandboxes:
 * every endpoint, auth, uploads, streaming, a disconnecting client, queued questions, exports;
 * once over SQLite and once over PostgreSQL (a throwaway cluster).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { ScriptedModel, type ScriptStep } from '../../src/models/scripted.js'
import { type RunningServer, startServer } from '../../src/server/index.js'
import type { DatasetInfo, SessionDetail, SessionSummary } from '../../src/server/types.js'
import { type SharedPostgres, sharedPostgres } from '../../src/test/support/shared-postgres.js'
import { askOverSse, type SseEvent } from '../support/sse.js'
import { waitFor } from '../support/wait.js'

const SALES = resolve('examples/sales.csv')
const provider = new LocalProvider({ poolSize: 0 })
let server: RunningServer | undefined
let home: string | undefined
/** A new database for each server, when the suite runs over PostgreSQL. */
let database: () => Promise<string | undefined> = async () => undefined

afterEach(async () => {
  await server?.close()
  server = undefined
  if (home) rmSync(home, { recursive: true, force: true })
  home = undefined
})

async function start(script: ScriptStep[], options: { tokens?: string[]; maxUploadBytes?: number } = {}) {
  home = mkdtempSync(join(tmpdir(), 'analyst-server-'))
  const model = new ScriptedModel(script)
  server = await startServer({
    port: 0,
    home,
    tokens: options.tokens ?? [],
    maxUploadBytes: options.maxUploadBytes,
    provider,
    databaseUrl: await database(),
    model: async () => ({ model, spec: 'scripted:test', provider: 'custom', modelId: 'test', mode: 'tools' }),
  })
  return { url: server.url, model }
}

async function api<T>(
  url: string,
  path: string,
  init: RequestInit = {},
  token?: string,
): Promise<{ status: number; body: T }> {
  const headers = new Headers(init.headers)
  if (token) headers.set('authorization', `Bearer ${token}`)
  const response = await fetch(`${url}${path}`, { ...init, headers })
  const text = await response.text()
  let body: unknown
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    body = text
  }
  return { status: response.status, body: body as T }
}

async function upload(url: string, id: string, name: string, content: Blob | string, token?: string) {
  const form = new FormData()
  form.append('file', typeof content === 'string' ? new Blob([content]) : content, name)
  return api<DatasetInfo & { error?: { message: string } }>(
    url,
    `/api/sessions/${id}/files`,
    { method: 'POST', body: form },
    token,
  )
}

const done = (events: SseEvent[]) =>
  events.find((e) => e.event === 'done')?.data.result as Record<string, unknown> | undefined

describe.each(['sqlite', 'postgres'])('analyst serve over %s', (store) => {
  let cluster: SharedPostgres | undefined
  beforeAll(async () => {
    if (store !== 'postgres') return
    cluster = await sharedPostgres()
    database = () => (cluster as SharedPostgres).createDatabase()
  }, 120_000)
  afterAll(async () => {
    database = async () => undefined
  })

  it('serves health, OpenAPI, sessions, uploads with profiles, answers as events, artifacts and exports', async () => {
    const { url } = await start([
      {
        text: 'Summing revenue by region.',
        code: "import pandas as pd, matplotlib.pyplot as plt\nsales = pd.read_csv('data/sales.csv')\nby_region = sales.groupby('region').order_value.sum().round(2)\nprint(by_region.to_string())\nby_region.plot.bar(title='Revenue by region')\nby_region.to_csv('by_region.csv')",
      },
      { text: 'Revenue is highest in one region; see the chart.' },
      { code: 'print(len(by_region))' },
      { text: 'There are 4 regions.' },
    ])
    expect((await api<{ ok: boolean }>(url, '/healthz')).body.ok).toBe(true)
    const openapi = await api<{ openapi: string; paths: Record<string, unknown> }>(url, '/openapi.json')
    expect(openapi.body.openapi).toMatch(/^3\./)
    expect(Object.keys(openapi.body.paths)).toContain('/api/sessions/{id}/ask')

    const created = await api<{ id: string }>(url, '/api/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    expect(created.status).toBe(201)
    const id = created.body.id
    const uploaded = await upload(url, id, 'sales.csv', readFileSync(SALES, 'utf8'))
    expect(uploaded.status).toBe(201)
    expect(uploaded.body.name).toBe('sales.csv')
    expect(uploaded.body.profile.rows).toBe(400)
    expect(uploaded.body.profile.columns.map((c) => c.name)).toContain('order_value')

    const events = await askOverSse(url, id, 'Revenue by region?')
    const types = events.map((e) => e.event)
    expect(types.slice(0, 3)).toEqual(['preparing', 'ready', 'run-start'])
    for (const type of ['step-start', 'code', 'stdout', 'result', 'artifact', 'step-end', 'answer'])
      expect(types).toContain(type)
    expect(types.at(-1)).toBe('done')
    const result = done(events)
    expect(result?.answer).toBe('Revenue is highest in one region; see the chart.')
    expect(result?.steps).toHaveLength(1)

    const follow = done(await askOverSse(url, id, 'How many regions?'))
    expect(follow?.answer).toBe('There are 4 regions.')

    const list = await api<SessionSummary[]>(url, '/api/sessions')
    expect(list.body.map((s) => [s.id, s.title, s.questions])).toEqual([[id, 'Revenue by region?', 2]])
    const detail = (await api<SessionDetail>(url, `/api/sessions/${id}`)).body
    expect(detail.datasets.map((d) => d.name)).toEqual(['sales.csv'])
    expect(detail.runs.map((r) => r.status)).toEqual(['done', 'done'])
    const step = detail.runs[0]?.steps[0]
    expect(step?.stdout).toContain('North')
    expect(step?.text).toBe('Summing revenue by region.')
    const chart = step?.results.find((r) => r.image)?.image
    expect(chart?.name).toBe('step-1-chart-1.png')
    const image = await fetch(`${url}${chart?.url}`)
    expect(image.headers.get('content-type')).toBe('image/png')
    expect(image.headers.get('content-security-policy')).toContain('sandbox')
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG')
    const file = step?.artifacts.find((a) => a.name === 'by_region.csv')
    const csv = await fetch(`${url}${file?.url}`)
    expect(csv.headers.get('content-disposition')).toContain('attachment')
    expect(await csv.text()).toMatch(/^region,order_value\n/)

    // Exports: a notebook valid for nbformat, a script that prints the same, a self-contained report.
    const notebook = await fetch(`${url}/api/sessions/${id}/export?format=ipynb`)
    const notebookPath = join(home as string, 'export.ipynb')
    writeFileSync(notebookPath, await notebook.text())
    expect(
      execFileSync(
        '/usr/bin/python3',
        [
          '-c',
          'import nbformat, sys; nb = nbformat.read(sys.argv[1], as_version=4); nbformat.validate(nb); print(len(nb.cells))',
          notebookPath,
        ],
        {
          encoding: 'utf8',
        },
      ).trim(),
    ).not.toBe('0')
    const script = await (await fetch(`${url}/api/sessions/${id}/export?format=py`)).text()
    const rerun = await Sandbox.create({ provider, data: [SALES] })
    try {
      const execution = await rerun.runCode(script)
      expect(execution.error).toBeUndefined()
      const printed = detail.runs.flatMap((r) => r.steps.map((s) => s.stdout)).join('')
      expect(execution.logs.stdout.join('')).toBe(printed)
    } finally {
      await rerun.kill()
    }
    const html = await (await fetch(`${url}/api/sessions/${id}/export?format=html`)).text()
    expect(html).toContain('<img alt="step-1-chart-1.png" src="data:image/png;base64,')
    // Nothing runs in the report: the chart's Vega-Lite spec rides in a data block (a script
    // element of a JSON type, which browsers never execute), and that is its only script element.
    const specs = [
      ...html.matchAll(
        /<script type="application\/vnd\.vegalite\.v6\+json" class="chart-spec">([^<]*)<\/script>/g,
      ),
    ]
    expect(specs).toHaveLength(1)
    expect(JSON.parse(specs[0]?.[1] ?? '')).toMatchObject({
      title: 'Revenue by region',
      layer: [{ mark: { type: 'bar' } }],
    })
    expect(html.replace(specs[0]?.[0] ?? '', '')).not.toMatch(/<script|src="http|href="http/)
    expect((await api(url, `/api/sessions/${id}/export?format=pdf`)).status).toBe(400)

    expect((await api(url, `/api/sessions/${id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await api(url, `/api/sessions/${id}`)).status).toBe(404)
  }, 120_000)

  it('validates requests and uploads: JSON errors, sizes, empty files, unsafe names', async () => {
    const { url } = await start([], { maxUploadBytes: 1024 })
    const { id } = (await api<{ id: string }>(url, '/api/sessions', { method: 'POST', body: '{}' })).body
    const bad = await api<{ error: { message: string } }>(url, '/api/sessions', {
      method: 'POST',
      body: '{"title": 5}',
    })
    expect(bad.status).toBe(400)
    expect(bad.body.error.message).toMatch(/title/)
    expect((await api(url, '/api/sessions', { method: 'POST', body: 'not json' })).status).toBe(400)
    const empty = await api<{ error: { message: string } }>(url, `/api/sessions/${id}/ask`, {
      method: 'POST',
      body: '{"question": " "}',
    })
    expect([empty.status, empty.body.error.message]).toEqual([
      400,
      'Invalid request: question: the question is empty',
    ])
    expect((await upload(url, id, 'big.csv', `a\n${'1\n'.repeat(2000)}`)).status).toBe(413)
    expect((await upload(url, id, 'empty.csv', '')).status).toBe(400)
    const sneaky = await upload(url, id, '../../../etc/x.csv', 'a,b\n1,2\n')
    expect([sneaky.status, sneaky.body.name]).toEqual([201, 'x.csv'])
    expect((await api(url, `/api/sessions/${id}/files`, { method: 'POST', body: 'plain' })).status).toBe(415)
    expect((await api(url, '/api/sessions/nope')).status).toBe(404)
    expect((await api(url, '/api/nothing')).status).toBe(404)
  })

  it('requires a token, and a session is invisible to other tokens', async () => {
    const { url } = await start([], { tokens: ['token-a', 'token-b'] })
    expect((await api(url, '/api/sessions')).status).toBe(401)
    expect((await api(url, '/api/sessions', {}, 'wrong')).status).toBe(401)
    // RFC 6750: the 401 says which scheme, and for a token that is wrong, why.
    for (const path of ['/api/sessions', '/mcp']) {
      const refused = await fetch(`${url}${path}`, { method: 'POST' })
      expect(refused.status, path).toBe(401)
      expect(refused.headers.get('www-authenticate'), path).toBe('Bearer realm="analyst"')
    }
    const wrong = await fetch(`${url}/mcp`, { method: 'POST', headers: { authorization: 'Bearer wrong' } })
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Bearer realm="analyst", error="invalid_token"/)
    expect((await api(url, '/healthz')).status).toBe(200)
    const { id } = (
      await api<{ id: string }>(url, '/api/sessions', { method: 'POST', body: '{}' }, 'token-a')
    ).body
    expect((await api(url, `/api/sessions/${id}`, {}, 'token-a')).status).toBe(200)
    expect((await api(url, `/api/sessions/${id}`, {}, 'token-b')).status).toBe(404)
    expect((await api<SessionSummary[]>(url, '/api/sessions', {}, 'token-b')).body).toEqual([])
    expect((await api(url, `/api/sessions/${id}/export?format=py&token=token-a`)).status).toBe(200)
    expect((await api(url, `/api/sessions/${id}/export?format=py&token=token-b`)).status).toBe(404)
    expect((await api(url, `/api/sessions/${id}`, { method: 'DELETE' }, 'token-b')).status).toBe(404)
  })

  it('serves the built web UI at /, and answers paths that are none of its pages 404 in JSON', async () => {
    const { url } = await start([])
    const page = await fetch(url)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('<div id="app">')
    const script = html.match(/src="\.\/(assets\/[^"]+\.js)"/)?.[1]
    expect((await fetch(`${url}/${script}`)).headers.get('content-type')).toMatch(/javascript/)
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/files?name=a.csv', '/api/nope']) {
      const { status, body } = await api<{ error: { message: string } }>(url, path)
      expect({ path, status }).toEqual({ path, status: 404 })
      expect(body.error.message).toBe(`No route GET ${path.split('?')[0]}`)
    }
  })

  it('refuses to listen beyond loopback without tokens', async () => {
    await expect(startServer({ host: '0.0.0.0', port: 0, tokens: [], home: tmpdir() })).rejects.toThrow(
      /without tokens/,
    )
  })

  it('a client that disconnects interrupts its cell; the session keeps its state and goes on', async () => {
    const { url } = await start([
      { code: "kept = 'here'\nimport time\nprint('sleeping', flush=True)\ntime.sleep(600)" },
      { code: 'print(kept)' },
      { text: 'Still here.' },
    ])
    const { id } = (await api<{ id: string }>(url, '/api/sessions', { method: 'POST', body: '{}' })).body
    const controller = new AbortController()
    const cut = askOverSse(
      url,
      id,
      'Sleep.',
      {},
      (event) => {
        if (event.event === 'stdout') controller.abort()
      },
      controller.signal,
    )
    await expect(cut).rejects.toThrow()
    // The cut-off question is recorded as interrupted; the next one runs with the state kept (a cell
    // still sleeping its 600 s would hold it past the test's limit).
    const next = done(await askOverSse(url, id, 'Is it still there?'))
    expect(next?.answer).toBe('Still here.')
    const detail = (await api<SessionDetail>(url, `/api/sessions/${id}`)).body
    expect(detail.runs.map((r) => r.status)).toEqual(['interrupted', 'done'])
    expect(detail.runs[1]?.steps[0]?.stdout).toBe('here\n')
  }, 90_000)

  it('queues questions in one session, in the order they came; data added meanwhile is there at once', async () => {
    const { url } = await start([
      // The first question holds its turn until the test adds data/go.csv (after the second is waiting).
      {
        code: "import os, time\nprint('waiting', flush=True)\nwhile not os.path.exists('data/go.csv'):\n    time.sleep(0.05)\norder = ['first']",
      },
      { text: 'First done.' },
      { code: 'order.append("second")\nprint(order)' },
      { text: 'Second done.' },
    ])
    const { id } = (await api<{ id: string }>(url, '/api/sessions', { method: 'POST', body: '{}' })).body
    let running = () => {}
    const waiting = new Promise<void>((resolve) => {
      running = resolve
    })
    const first = askOverSse(url, id, 'One', {}, (event) => {
      if (event.event === 'stdout' && String(event.data.text).includes('waiting')) running()
    })
    await waiting
    const second = askOverSse(url, id, 'Two')
    // Both questions are in the service now: the second waits for its turn.
    await waitFor(() => server?.service.busy === 2, { what: 'the second question to wait in line' })
    expect((await upload(url, id, 'go.csv', 'go\n1\n')).status).toBe(201)
    const [one, two] = await Promise.all([first, second])
    const runStart = (events: SseEvent[]) => events.find((event) => event.event === 'run-start')?.data
    expect(runStart(one)).toMatchObject({ type: 'run-start', queued: false })
    expect(runStart(two)).toMatchObject({ type: 'run-start', queued: true })
    expect(done(one)?.answer).toBe('First done.')
    expect(done(two)?.answer).toBe('Second done.')
    expect(
      (done(two)?.steps as Array<{ execution: { logs: { stdout: string[] } } }> | undefined)?.[0]?.execution
        .logs.stdout,
    ).toEqual(["['first', 'second']\n"])
  }, 60_000)

  it('reports a model that is not configured as a failed event, not a crash', async () => {
    home = mkdtempSync(join(tmpdir(), 'analyst-server-'))
    server = await startServer({
      port: 0,
      home,
      tokens: [],
      provider,
      databaseUrl: await database(),
      model: async () => {
        throw new Error('No model is configured')
      },
    })
    const { id } = (await api<{ id: string }>(server.url, '/api/sessions', { method: 'POST', body: '{}' }))
      .body
    const events = await askOverSse(server.url, id, 'Anything?')
    expect(events.at(-1)).toMatchObject({ event: 'failed', data: { message: 'No model is configured' } })
  })
})
