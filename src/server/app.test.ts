/**
 * The HTTP API without a socket (`createApp(...).request()`), a mock sandbox and a scripted model:
 * every route, auth and ownership, uploads, the event stream, and how each error maps to a status.
 * The real server with real kernels is tested in test/server/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { APICallError } from '@ai-sdk/provider'
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { askAll, openTestService, type TestService } from '../../test/support/service.js'
import { readSse, type SseEvent } from '../../test/support/sse.js'
import { McpHttp } from '../mcp/index.js'
import { ScriptedModel, type ScriptStep } from '../models/scripted.js'
import { MockSandboxProvider } from '../test/mock-sandbox.js'
import { createApp } from './app.js'
import {
  type ApiError,
  type DatasetInfo,
  PERSON_CELL,
  type SessionDetail,
  type SessionSummary,
} from './types.js'

const SALES = readFileSync(resolve('examples/sales.csv'))
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='
const TOKENS = ['token-a', 'token-b']

let test: TestService
let app: ReturnType<typeof createApp>
let model: ScriptedModel
let mcp: McpHttp | undefined

async function start(
  script: ScriptStep[],
  options: { maxUploadBytes?: number; tokens?: string[]; webDir?: string } = {},
) {
  // Every cell prints, shows a chart, and saves a file.
  const provider = new MockSandboxProvider((code) => [
    { type: 'stdout', text: `ran ${code.length}\n` },
    { type: 'result', bundle: { 'image/png': PNG, 'text/plain': '<Figure>' }, isMainResult: false },
    {
      type: 'artifact',
      artifact: { name: 'out.csv', path: '/home/user/out.csv', size: 7, mimeType: 'text/csv' },
    },
  ])
  model = new ScriptedModel(script)
  test = await openTestService({
    provider,
    model,
    analyst: { nameImage: (step, index) => `step-${step}-chart-${index}.png` },
  })
  mcp = new McpHttp({ service: test.service })
  app = createApp({
    service: test.service,
    tokens: options.tokens ?? TOKENS,
    uploadDir: join(test.home, 'uploads'),
    maxUploadBytes: options.maxUploadBytes,
    webDir: options.webDir,
    mcp,
  })
}
afterEach(async () => {
  await mcp?.close()
  await test?.close()
})

async function call<T = unknown>(path: string, init: RequestInit = {}, token: string | null = 'token-a') {
  const headers = new Headers(init.headers)
  if (token) headers.set('authorization', `Bearer ${token}`)
  const response = await app.request(path, { ...init, headers })
  const text = await response.text()
  let body: unknown = text
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body: body as T }
}

async function newSession(token = 'token-a'): Promise<string> {
  const { status, body } = await call<{ id: string }>('/api/sessions', { method: 'POST', body: '{}' }, token)
  expect(status).toBe(201)
  return body.id
}

function upload(id: string, name: string, content: Uint8Array | string, token = 'token-a') {
  const form = new FormData()
  form.append('file', new Blob([typeof content === 'string' ? content : Buffer.from(content)]), name)
  return call<DatasetInfo>(`/api/sessions/${id}/files`, { method: 'POST', body: form }, token)
}

async function ask(id: string, question: string, token = 'token-a'): Promise<SseEvent[]> {
  const response = await app.request(`/api/sessions/${id}/ask`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ question }),
  })
  expect(response.headers.get('content-type')).toMatch(/text\/event-stream/)
  const events: SseEvent[] = []
  for await (const event of readSse(response)) events.push(event)
  return events
}

describe('HTTP API (portless)', () => {
  beforeEach(async () => {
    await start([{ text: 'Plotting.', code: 'plot()' }, { text: 'The chart shows 400 orders.' }])
  })

  it('runs a session end to end: upload, ask as events, detail with file links, artifact, export, delete', async () => {
    const id = await newSession()
    const uploaded = await upload(id, 'sales.csv', SALES)
    expect(uploaded.status).toBe(201)
    expect(uploaded.body).toMatchObject({ name: 'sales.csv', bytes: SALES.length, profile: { rows: 400 } })

    const events = await ask(id, 'How many orders?')
    expect(events.map((e) => e.event).slice(0, 3)).toEqual(['preparing', 'ready', 'run-start'])
    expect(events.at(-1)).toMatchObject({
      event: 'done',
      data: { result: { answer: 'The chart shows 400 orders.' } },
    })

    const listed = await call<SessionSummary[]>('/api/sessions')
    expect(listed.body).toMatchObject([{ id, title: 'How many orders?', questions: 1, status: 'idle' }])
    const detail = (await call<SessionDetail>(`/api/sessions/${id}`)).body
    const step = detail.runs[0]?.steps[0]
    expect(step?.text).toBe('Plotting.')
    expect(step?.results[0]?.image?.url).toBe(`/api/sessions/${id}/artifacts/step-1-chart-1.png`)
    expect(step?.artifacts.map((a) => a.url)).toEqual([`/api/sessions/${id}/artifacts/out.csv`])

    const chart = await app.request(`${step?.results[0]?.image?.url}?token=token-a`)
    expect(chart.status).toBe(200)
    expect(chart.headers.get('content-type')).toBe('image/png')
    expect(chart.headers.get('content-security-policy')).toMatch(/sandbox/)
    expect(Buffer.from(await chart.arrayBuffer()).toString('base64')).toBe(PNG)
    const file = await call(`/api/sessions/${id}/artifacts/out.csv`)
    expect(file.headers.get('content-disposition')).toMatch(/attachment/)
    expect(file.body).toBe('out.csv') // what the mock sandbox saved

    const notebook = await call<{ cells: unknown[] }>(`/api/sessions/${id}/export?format=ipynb`)
    expect(notebook.status).toBe(200)
    expect(notebook.body.cells.length).toBeGreaterThan(2)

    expect((await call(`/api/sessions/${id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await call(`/api/sessions/${id}`)).status).toBe(404)
  })

  it('asks for a token, accepts ?token= only on GET, and keeps each token to its own sessions', async () => {
    expect((await call('/api/sessions', {}, null)).status).toBe(401)
    expect((await call('/api/sessions', {}, 'wrong')).body).toMatchObject({
      error: { message: 'The token is not valid' },
    })
    const id = await newSession('token-a')
    expect((await app.request('/api/sessions?token=token-a')).status).toBe(200)
    expect((await app.request('/api/sessions?token=token-a', { method: 'POST', body: '{}' })).status).toBe(
      401,
    )
    expect((await call(`/api/sessions/${id}`, {}, 'token-b')).status).toBe(404)
    expect((await upload(id, 'sales.csv', SALES, 'token-b')).status).toBe(404)
    expect((await call<SessionSummary[]>('/api/sessions', {}, 'token-b')).body).toEqual([])
    expect((await call(`/api/sessions/${id}`, { method: 'DELETE' }, 'token-b')).status).toBe(404)
    expect((await call('/healthz', {}, null)).status).toBe(200)
  })

  it('answers each kind of error with its status and a message that says what to do', async () => {
    const id = await newSession()
    const bad = await call('/api/sessions', { method: 'POST', body: '{not json' })
    expect(bad).toMatchObject({ status: 400, body: { error: { message: 'The body is not valid JSON' } } })
    expect((await call('/api/sessions', { method: 'POST', body: '{"title": 5}' })).status).toBe(400)
    const format = await call(`/api/sessions/${id}/export?format=pdf`)
    expect(format).toMatchObject({
      status: 400,
      body: { error: { hint: expect.stringMatching(/format=ipynb/) } },
    })
    const plain = await call(`/api/sessions/${id}/files`, { method: 'POST', body: 'a,b\n1,2\n' })
    expect(plain.status).toBe(415)
    expect((await upload(id, 'empty.csv', '')).status).toBe(400)
    const unreadable = await upload(
      id,
      'picture.csv',
      new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0, 1, 2]),
    )
    expect(unreadable).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/picture.csv cannot be read/) } },
    })
    const empty = await call(`/api/sessions/${id}/ask`, { method: 'POST', body: '{"question": "  "}' })
    expect(empty.status).toBe(400)
    expect((await call('/api/nothing/here')).status).toBe(404)
    expect((await call(`/api/sessions/${id}/artifacts/none.csv`)).status).toBe(404)
    await test.service.shutdown()
    const closing = await call(`/api/sessions/${id}/ask`, { method: 'POST', body: '{"question": "Now?"}' })
    expect(closing).toMatchObject({ status: 503, body: { error: { hint: expect.any(String) } } })
  })

  it("runs a person's cell for the session's owner only, recorded as a run of its own", async () => {
    await start([])
    const id = await newSession()
    const post = (body: unknown, token = 'token-a') =>
      call<{ runId: string; violations: unknown[] }>(
        `/api/sessions/${id}/cells`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
        token,
      )
    const ran = await post({ code: 'x = 1' })
    expect(ran.status).toBe(200)
    expect(ran.body.violations).toEqual([])
    const detail = await call<SessionDetail>(`/api/sessions/${id}`)
    expect(detail.body.runs.map((run) => [run.id, run.question, run.steps[0]?.stdout])).toEqual([
      [ran.body.runId, PERSON_CELL, 'ran 5\n'],
    ])
    expect((await post({ code: 'x = 1' }, 'token-b')).status).toBe(404)
    const empty = await post({ code: '' })
    expect(empty.status).toBe(400)
    expect((empty.body as unknown as ApiError).error.message).toContain('the code is empty')
  })

  it('refuses an upload over the limit with 413, and keeps nothing of it', async () => {
    await test.close()
    await start([], { maxUploadBytes: 1000 })
    const id = await newSession()
    expect((await upload(id, 'sales.csv', SALES)).status).toBe(413)
    expect((await call<SessionDetail>(`/api/sessions/${id}`)).body.datasets).toEqual([])
  })

  it('streams a model failure as a failed event with its hint, and the session goes on', async () => {
    await test.close()
    await start([{ text: 'Fine now.' }])
    const failing = model.doStream.bind(model)
    let calls = 0
    model.doStream = async (options) => {
      // What the provider package throws for a refused key.
      if (calls++ === 0)
        throw new APICallError({
          message: 'Incorrect API key provided',
          url: 'http://127.0.0.1/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 401,
          isRetryable: false,
        })
      return failing(options)
    }
    const id = await newSession()
    await upload(id, 'sales.csv', SALES)
    const events = await ask(id, 'Hello?')
    expect(events.at(-1)).toMatchObject({
      event: 'failed',
      data: {
        message: expect.stringMatching(/HTTP 401.*Incorrect API key/),
        hint: expect.stringMatching(/API key/),
      },
    })
    const detail = (await call<SessionDetail>(`/api/sessions/${id}`)).body
    expect(detail.runs.map((r) => r.status)).toEqual(['failed'])
    const { result } = await askAll(test.service, id, 'Again?')
    expect(result.answer).toBe('Fine now.')
  })
})

describe('HTTP API: the protocol, not the page', () => {
  /** A built web UI: its page and one asset. */
  function webDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-web-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    mkdirSync(join(dir, 'assets'))
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Analyst</title>')
    writeFileSync(join(dir, 'assets', 'index-1.js'), 'console.log(1)')
    return dir
  }

  it('answers a 401 with WWW-Authenticate (RFC 6750), on the API and on /mcp', async () => {
    await start([])
    for (const path of ['/api/sessions', '/mcp']) {
      const missing = await call(path, { method: 'POST', body: '{}' }, null)
      expect(missing.status, path).toBe(401)
      expect(missing.headers.get('www-authenticate'), path).toBe('Bearer realm="analyst"')
      expect(missing.body).toEqual({
        error: {
          code: 'unauthorized',
          message: 'A token is required',
          hint: expect.stringContaining('Authorization: Bearer'),
        },
      })
      const wrong = await call(path, { method: 'POST', body: '{}' }, 'wrong')
      expect(wrong.status, path).toBe(401)
      expect(wrong.headers.get('www-authenticate'), path).toBe(
        'Bearer realm="analyst", error="invalid_token", error_description="The token is not valid"',
      )
    }
    // A valid token is no 401 (here: the initialize the body lacks); a path that is none is a 401
    // still, as any under /api/ without a token.
    expect((await call('/mcp', { method: 'POST', body: '{}' })).status).toBe(400)
    expect((await call('/api/nothing', {}, null)).status).toBe(401)
  })

  it('serves the UI at its own routes and answers every other path 404 in JSON, naming it', async () => {
    await start([], { tokens: [], webDir: webDir() })
    for (const path of ['/', '/index.html']) {
      const page = await call(path, {}, null)
      expect(page.status, path).toBe(200)
      expect(page.headers.get('content-type'), path).toMatch(/^text\/html/)
      expect(page.body).toContain('<title>Analyst</title>')
    }
    const asset = await call('/assets/index-1.js', {}, null)
    expect(asset).toMatchObject({ status: 200, body: 'console.log(1)' })
    expect(asset.headers.get('cache-control')).toMatch(/immutable/)
    for (const [method, path] of [
      ['GET', '/.well-known/oauth-protected-resource'],
      ['GET', '/.well-known/oauth-protected-resource/mcp'],
      ['GET', '/.well-known/oauth-authorization-server'],
      ['GET', '/files?name=sales.csv'],
      ['GET', '/assets/index-0.js'],
      ['GET', '/assets/..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd'],
      ['GET', '/s/3f2a'],
      ['POST', '/register'],
      ['GET', '/api/nothing/here'],
    ] as const) {
      const answer = await call(path, { method }, null)
      expect(answer.status, path).toBe(404)
      expect(answer.headers.get('content-type'), path).toMatch(/^application\/json/)
      expect((answer.body as ApiError).error.message, path).toBe(`No route ${method} ${path.split('?')[0]}`)
    }
  })

  it('says the UI is not built, in JSON, where it is not', async () => {
    await start([], { tokens: [], webDir: join(tmpdir(), 'analyst-no-web-here') })
    const page = await call('/', {}, null)
    expect(page).toMatchObject({
      status: 404,
      body: { error: { message: 'The web UI is not built', hint: expect.stringContaining('npm run build') } },
    })
  })
})
