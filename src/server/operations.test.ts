/**
 * What operators get from the server, portless (`createApp().request()`, a mock sandbox, a
 * scripted model, a real SQLite store): /readyz, /metrics in Prometheus' format, JSON logs with
 * request and session ids and no secrets, and per-token quotas answered with 429 and Retry-After.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import parsePrometheus from 'parse-prometheus-text-format'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import { openTestService, type TestService } from '../../test/support/service.js'
import { readSse } from '../../test/support/sse.js'
import { waitFor } from '../../test/support/wait.js'
import { ScriptedModel, type ScriptStep } from '../models/scripted.js'
import type { HistoryStore } from '../store/index.js'
import { MockSandboxProvider } from '../test/mock-sandbox.js'
import { createApp } from './app.js'
import { createLogger } from './logging.js'
import { createMetrics } from './metrics.js'
import { type QuotaConfig, Quotas, quotasFromEnv } from './quotas.js'

let test: TestService | undefined
afterEach(async () => {
  await test?.close()
  test = undefined
})

async function start(
  script: ScriptStep[],
  options: {
    quotas?: QuotaConfig
    tokens?: string[]
    readiness?: Record<string, () => Promise<unknown>>
    /** The model answers only once this resolves. */
    gate?: Promise<void>
  } = {},
) {
  const provider = new MockSandboxProvider((code) =>
    code.includes('connect_db')
      ? [
          {
            type: 'error',
            name: 'ConnectionRefusedError',
            value: '[Errno 111] Connection refused',
            traceback: '',
          },
        ]
      : [{ type: 'stdout', text: `ran ${code}\n` }],
  )
  const scripted = new ScriptedModel(script)
  const gate = options.gate ?? Promise.resolve()
  const model: typeof scripted = Object.assign(Object.create(scripted), {
    doGenerate: async (call: Parameters<typeof scripted.doGenerate>[0]) => {
      await gate
      return scripted.doGenerate(call)
    },
    doStream: async (call: Parameters<typeof scripted.doStream>[0]) => {
      await gate
      return scripted.doStream(call)
    },
  })
  const lines: Array<Record<string, unknown>> = []
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      done()
    },
  })
  let service: TestService['service'] | undefined
  const metrics = createMetrics(
    () => service,
    () => provider,
  )
  test = await openTestService({ provider, model, observer: metrics.observer })
  service = test.service
  const app = createApp({
    service: test.service,
    tokens: options.tokens ?? ['token-a', 'token-b'],
    uploadDir: join(test.home, 'uploads'),
    logger: createLogger({ ANALYST_LOG_LEVEL: 'info' }, destination),
    metrics,
    quotas: new Quotas(options.quotas ?? {}, test.stores.history),
    readiness: { database: () => test?.stores.history.checkReady() as Promise<void>, ...options.readiness },
    // A stand-in for the E2B API (src/server/e2b): it answers with a Response of its own.
    e2b: {
      handles: (request) => new URL(request.url).pathname.startsWith('/v2/'),
      fetch: () => Response.json({ sandboxes: [] }),
    },
  })
  const call = async (path: string, init: RequestInit = {}, token: string | null = 'token-a') => {
    const headers = new Headers(init.headers)
    if (token) headers.set('authorization', `Bearer ${token}`)
    return app.request(path, { ...init, headers })
  }
  const newSession = async (token = 'token-a') => {
    const response = await call('/api/sessions', { method: 'POST', body: '{}' }, token)
    return { response, id: response.status === 201 ? ((await response.json()) as { id: string }).id : '' }
  }
  const ask = async (id: string, question: string, token = 'token-a') => {
    const response = await call(
      `/api/sessions/${id}/ask`,
      { method: 'POST', body: JSON.stringify({ question }) },
      token,
    )
    const events = []
    if (response.status === 200) for await (const event of readSse(response)) events.push(event)
    return { response, events }
  }
  return { app, call, newSession, ask, lines, service: test.service }
}

describe('operations', () => {
  it('/readyz says what is not ready, and turns 503 when the server drains', async () => {
    let engine: Error | undefined = new Error('the warm pool failed: bwrap is missing')
    const { call, service } = await start([], {
      readiness: { sandbox: async () => (engine ? Promise.reject(engine) : undefined) },
    })
    expect((await call('/healthz', {}, null)).status).toBe(200)
    let ready = await call('/readyz', {}, null)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toEqual({
      ready: false,
      checks: { database: 'ok', sandbox: 'the warm pool failed: bwrap is missing', accepting: 'ok' },
    })
    engine = undefined
    expect((await call('/readyz', {}, null)).status).toBe(200)
    await service.drain(0)
    ready = await call('/readyz', {}, null)
    expect([
      ready.status,
      ((await ready.json()) as { checks: { accepting: string } }).checks.accepting,
    ]).toEqual([503, 'draining: no new questions'])
  })

  it('/metrics parses as Prometheus text, with runs, cells, model tokens, blocked attempts and requests', async () => {
    const { call, newSession, ask } = await start([
      { code: 'x = 1' },
      { code: 'import socket; socket.create_connection(("example.com", 80))' },
      { code: 'connect_db()' },
      { text: 'Done.' },
    ])
    const { id } = await newSession()
    const { events } = await ask(id, 'Go?')
    expect(events.at(-1)?.event).toBe('done')
    expect((await call('/api/sessions/nope')).status).toBe(404)
    const response = await call('/metrics', {}, null)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
    const text = await response.text()
    const families = new Map(parsePrometheus(text).map((family) => [family.name, family]))
    const value = (name: string, labels: Record<string, string> = {}) =>
      Number(
        families
          .get(name)
          ?.metrics.find((metric) => Object.entries(labels).every(([k, v]) => metric.labels?.[k] === v))
          ?.value,
      )
    expect(value('analyst_live_sessions')).toBe(1)
    expect(value('analyst_runs_in_progress')).toBe(0)
    expect(value('analyst_questions_queued')).toBe(0)
    expect(families.get('analyst_cell_seconds')?.metrics[0]?.count).toBe('2')
    expect(families.get('analyst_sandbox_create_seconds')?.metrics[0]?.count).toBe('1')
    // (The parser keeps no labels of a labelled histogram: the text shows them.)
    expect(families.get('analyst_model_latency_seconds')?.metrics[0]?.buckets?.['+Inf']).toBe('4')
    expect(text).toContain('analyst_model_latency_seconds_count{model="scripted:test"} 4')
    expect(value('analyst_model_tokens_total', { model: 'scripted:test', kind: 'input' })).toBeGreaterThan(0)
    expect(value('analyst_blocked_total', { layer: 'sandbox', rule: 'network' })).toBe(1)
    expect(value('analyst_blocked_total', { layer: 'guard', rule: 'network' })).toBeGreaterThanOrEqual(1)
    expect(
      value('analyst_http_requests_total', { route: '/api/sessions/:id/ask', method: 'POST', status: '200' }),
    ).toBe(1)
    expect(
      value('analyst_http_requests_total', { route: '/api/sessions/:id', method: 'GET', status: '404' }),
    ).toBe(1)
    expect(families.has('analyst_pool_hits')).toBe(true)
    expect(families.has('analyst_process_resident_memory_bytes')).toBe(true)
  })

  it('logs JSON lines with the request id and session id, never the token or the question', async () => {
    const { call, newSession, ask, lines } = await start([{ text: 'Forty-two.' }])
    const { id } = await newSession()
    await ask(id, 'What is my secret number 98765?')
    const given = await call(`/api/sessions/${id}/export?format=py&token=token-a`, {}, null)
    expect(given.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    await call('/api/sessions', { headers: { 'x-request-id': 'from-the-proxy-1' } })
    const text = JSON.stringify(lines)
    expect(text).not.toContain('token-a')
    expect(text).not.toContain('98765')
    const requests = lines.filter((line) => line.msg === 'request')
    expect(requests.every((line) => typeof line.requestId === 'string')).toBe(true)
    expect(requests.find((line) => line.requestId === 'from-the-proxy-1')).toMatchObject({
      route: '/api/sessions',
    })
    const asked = lines.filter((line) => line.sessionId === id).map((line) => line.msg)
    expect(asked).toEqual(expect.arrayContaining(['question', 'run started', 'answered', 'request']))
    expect(requests.find((line) => String(line.path).includes('export'))?.path).toBe(
      `/api/sessions/${id}/export`,
    )
    // The E2B API's own responses carry the id too, the one its log line has.
    const e2b = await call('/v2/sandboxes', {}, null)
    const e2bLine = lines.find((line) => line.msg === 'request' && line.path === '/v2/sandboxes')
    expect(e2b.headers.get('x-request-id')).toBe(e2bLine?.requestId)
    const forwarded = await call('/v2/sandboxes', { headers: { 'x-request-id': 'from-the-proxy-2' } }, null)
    expect(forwarded.headers.get('x-request-id')).toBe('from-the-proxy-2')
  })

  it('answers a token over a quota with 429, Retry-After and the limit; other tokens go on', async () => {
    const { call, newSession } = await start([], {
      quotas: {
        default: { sessions: 2, requestsPerMinute: 1000 },
        tokens: { 'token-b': { requestsPerMinute: 3, uploadBytes: 10 } },
      },
    })
    await newSession()
    await newSession()
    const over = await newSession()
    expect(over.response.status).toBe(429)
    expect(over.response.headers.get('retry-after')).toBe('60')
    expect(((await over.response.json()) as { error: { message: string } }).error.message).toBe(
      'Over the quota of 2 sessions for this token',
    )
    const { id } = await newSession('token-b')
    const form = new FormData()
    form.append('file', new Blob(['a,b\n1,2\n3,4\n']), 'data.csv')
    const upload = await call(`/api/sessions/${id}/files`, { method: 'POST', body: form }, 'token-b')
    expect(upload.status).toBe(429)
    expect(((await upload.json()) as { error: { message: string } }).error.message).toMatch(
      /quota of 10 bytes of data/,
    )
    expect((await call('/api/sessions', {}, 'token-b')).status).toBe(200) // the 3rd request this minute
    const rate = await call('/api/sessions', {}, 'token-b')
    expect(Number(rate.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(((await rate.json()) as { error: { message: string } }).error.message).toBe(
      'Over the quota of 3 requests per minute for this token',
    )
    expect((await call('/api/sessions', {}, 'token-a')).status).toBe(200)
  })

  it('refuses a second question at once over the concurrent-runs quota', async () => {
    let open = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const { newSession, ask, service } = await start(
      [{ code: 'x = 1' }, { text: 'Done.' }, { text: 'Now.' }],
      {
        quotas: { default: { concurrentRuns: 1 } },
        gate,
      },
    )
    const { id } = await newSession()
    const { id: other } = await newSession()
    const first = ask(id, 'Slow?')
    await waitFor(() => service.busy > 0, { what: 'the first question to be asked' })
    const second = await ask(other, 'And this?')
    expect(second.response.status).toBe(429)
    expect(second.response.headers.get('retry-after')).toBe('5')
    open()
    expect((await first).events.at(-1)?.event).toBe('done')
    expect((await ask(other, 'Now?')).response.status).toBe(200)
  })

  it('reads quotas from env and a file, and says what is wrong with a bad one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-quotas-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'quotas.json')
    writeFileSync(file, JSON.stringify({ default: { sessions: 5 }, tokens: { t: { concurrentRuns: 2 } } }))
    expect(
      quotasFromEnv({
        ANALYST_QUOTAS: file,
        ANALYST_QUOTA_REQUESTS_PER_MINUTE: '60',
        ANALYST_QUOTA_SESSIONS: '9',
      }),
    ).toEqual({ default: { requestsPerMinute: 60, sessions: 5 }, tokens: { t: { concurrentRuns: 2 } } })
    expect(() => quotasFromEnv({ ANALYST_QUOTA_SESSIONS: 'many' })).toThrow(/whole number/)
    writeFileSync(file, JSON.stringify({ default: { sessions: -1 } }))
    expect(() => quotasFromEnv({ ANALYST_QUOTAS: file })).toThrow(/default\.sessions/)
    writeFileSync(file, JSON.stringify({ users: { 'Ann@Example.com': { sessions: 0 } } }))
    expect(() => quotasFromEnv({ ANALYST_QUOTAS: file })).toThrow(/users\.Ann@Example\.com\.sessions/)
  })

  it("finds a user's limits by their owner id or email (any case), a token's first; else the defaults", () => {
    const quotas = new Quotas(
      {
        default: { sessions: 5 },
        tokens: { t: { sessions: 1 } },
        users: { 'Ann@Example.com': { sessions: 2 }, 'user:u-bo': { sessions: 3 } },
      },
      {} as HistoryStore, // limits() reads no store
    )
    expect(quotas.limits('t', 'user:u-ann', 'ann@example.com')).toEqual({ sessions: 1 })
    expect(quotas.limits(undefined, 'user:u-ann', 'ANN@example.com')).toEqual({ sessions: 2 })
    expect(quotas.limits(undefined, 'user:u-bo', 'ann@example.com')).toEqual({ sessions: 3 })
    expect(quotas.limits(undefined, 'user:u-cy', 'cy@example.com')).toEqual({ sessions: 5 })
  })
})
