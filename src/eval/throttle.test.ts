import { APICallError } from '@ai-sdk/provider'
import { generateText } from 'ai'
import { describe, expect, it } from 'vitest'
import { RateLimitError } from '../errors.js'
import { ScriptedModel } from '../models/scripted.js'
import { RateGate, rateLimitOf, retryAfterMs, throttle } from './throttle.js'

function tooMany(headers: Record<string, string> = {}) {
  return new APICallError({
    message: 'Rate limit reached',
    url: 'http://x/v1/chat/completions',
    requestBodyValues: {},
    statusCode: 429,
    responseHeaders: headers,
    isRetryable: true,
  })
}

/** A call that fails with these errors first, then returns 'ok'; its start times are kept. */
function flaky(errors: unknown[]) {
  const starts: number[] = []
  const call = async () => {
    starts.push(Date.now())
    const error = errors.shift()
    if (error) throw error
    return 'ok'
  }
  return { call, starts }
}

describe('rateLimitOf', () => {
  it('finds a 429 in an error or its causes, with the wait the provider asked for', () => {
    expect(rateLimitOf(tooMany({ 'Retry-After': '2' }))).toEqual({ retryAfterMs: 2000 })
    expect(rateLimitOf({ lastError: tooMany({ 'retry-after-ms': '150', 'retry-after': '9' }) })).toEqual({
      retryAfterMs: 150,
    })
    expect(rateLimitOf(new Error('wrapped', { cause: tooMany() }))).toEqual({ retryAfterMs: undefined })
    expect(rateLimitOf(new RateLimitError('slow down', { retryAfterSeconds: 3 }))).toEqual({
      retryAfterMs: 3000,
    })
    expect(
      rateLimitOf(new APICallError({ message: 'x', url: 'u', requestBodyValues: {}, statusCode: 500 })),
    ).toBe(undefined)
    expect(rateLimitOf(new Error('nope'))).toBeUndefined()
  })

  it('reads Retry-After as seconds or as a date', () => {
    expect(retryAfterMs({ 'retry-after': new Date(Date.now() + 60_000).toUTCString() })).toBeGreaterThan(
      55_000,
    )
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined()
    expect(retryAfterMs(undefined)).toBeUndefined()
  })
})

describe('RateGate', () => {
  it('makes a rate-limited call again after the pause, and lets no other call start before it ends', async () => {
    const gate = new RateGate({ concurrency: 4 })
    const limited = flaky([tooMany({ 'retry-after-ms': '300' })])
    const first = gate.run(limited.call)
    await expect.poll(() => limited.starts.length).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 10))
    const other = flaky([])
    const pausedAt = Date.now()
    await expect(Promise.all([first, gate.run(other.call)])).resolves.toEqual(['ok', 'ok'])
    // The pause began when the 429 came back (before pausedAt) and lasts 300 ms from then.
    expect((limited.starts[1] as number) - (limited.starts[0] as number)).toBeGreaterThanOrEqual(300)
    expect(other.starts[0]).toBeGreaterThanOrEqual((limited.starts[0] as number) + 300)
    expect(other.starts[0]).toBeGreaterThanOrEqual(pausedAt)
    expect(gate.stats.limited).toBe(1)
    expect(gate.stats.pausedMs).toBeGreaterThanOrEqual(290)
  })

  it('halves the calls in flight on each rate limit and wins them back with successes', async () => {
    const gate = new RateGate({ concurrency: 4, initialBackoffMs: 1 })
    const seen: number[] = []
    const errors = [tooMany(), tooMany()]
    await gate.run(async () => {
      seen.push(gate.allowed)
      const error = errors.shift()
      if (error) throw error
    })
    expect(seen).toEqual([4, 2, 1])
    expect(gate.allowed).toBe(2)
    for (let i = 0; i < 2; i++) await gate.run(async () => {})
    expect(gate.allowed).toBe(3)
  })

  it('lets no more calls than allowed run at once', async () => {
    const gate = new RateGate({ concurrency: 2 })
    let running = 0
    let most = 0
    const slow = async () => {
      most = Math.max(most, ++running)
      await new Promise((resolve) => setTimeout(resolve, 20))
      running--
    }
    await Promise.all(Array.from({ length: 6 }, () => gate.run(slow)))
    expect(most).toBe(2)
  })

  it('passes other errors through at once, gives up after maxWaitMs, and stops when aborted', async () => {
    const gate = new RateGate({ concurrency: 1, maxWaitMs: 0 })
    await expect(gate.run(flaky([new Error('boom')]).call)).rejects.toThrow('boom')
    await expect(gate.run(flaky([tooMany()]).call)).rejects.toThrow('Rate limit reached')
    const patient = new RateGate({ concurrency: 1 })
    const stop = new AbortController()
    const waiting = patient.run(flaky([tooMany({ 'retry-after': '60' })]).call, stop.signal)
    await expect.poll(() => patient.stats.limited).toBe(1)
    stop.abort(new Error('stopped'))
    await expect(waiting).rejects.toThrow('stopped')
  })
})

describe('throttle', () => {
  it("puts a model's calls through the gate, inside the AI SDK's own retries", async () => {
    const gate = new RateGate({ concurrency: 1, initialBackoffMs: 1 })
    const scripted = new ScriptedModel([{ text: 'fine' }])
    let failures = 2
    const model = {
      ...scripted,
      specificationVersion: 'v3' as const,
      provider: 'test',
      modelId: 'flaky',
      supportedUrls: {},
      doGenerate: (options: Parameters<ScriptedModel['doGenerate']>[0]) =>
        failures-- > 0 ? Promise.reject(tooMany()) : scripted.doGenerate(options),
      doStream: (options: Parameters<ScriptedModel['doStream']>[0]) => scripted.doStream(options),
    }
    const result = await generateText({ model: throttle(model, gate), prompt: 'hi', maxRetries: 0 })
    expect(result.text).toBe('fine')
    expect(gate.stats.limited).toBe(2)
  })
})
