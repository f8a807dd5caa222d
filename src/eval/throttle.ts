/**
 * Rate limits slow an eval down instead of failing its questions. Every model call of the eval goes
 * through one gate: a 429 pauses all calls (for the provider's Retry-After, else a backoff that
 * doubles), halves how many may be in flight, and the call is made again; successes win the calls
 * back one at a time. Only a call still refused after `maxWaitMs` fails its question.
 *
 * The gate sits inside the AI SDK's own retries (as model middleware), so those never see a 429.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { APICallError } from '@ai-sdk/provider'
import { type LanguageModel, wrapLanguageModel } from 'ai'
import { RateLimitError } from '../errors.js'

export interface RateGateOptions {
  /** Model calls in flight at most (and when no rate limit has been met). */
  concurrency: number
  /** How long one call may be held back by rate limits before it fails. @default 15 minutes */
  maxWaitMs?: number
  /** The first pause when the provider says nothing of when to retry; it doubles. @default 1 s */
  initialBackoffMs?: number
  /** @default 60 s */
  maxBackoffMs?: number
  /** Told of each pause, for progress output. */
  onPause?: (pauseMs: number) => void
}

/** How often the provider refused, and how long calls were held back in all. */
export interface RateLimitStats {
  limited: number
  pausedMs: number
}

/** A rate limit in an error (or its causes), with the wait the provider asked for if it said. */
export function rateLimitOf(error: unknown): { retryAfterMs?: number } | undefined {
  const seen = new Set<unknown>()
  const queue = [error]
  while (queue.length > 0) {
    const current = queue.shift()
    if (!current || typeof current !== 'object' || seen.has(current)) continue
    seen.add(current)
    if (APICallError.isInstance(current) && current.statusCode === 429)
      return { retryAfterMs: retryAfterMs(current.responseHeaders) }
    if (RateLimitError.isInstance(current)) {
      const seconds = current.retryAfterSeconds
      return { retryAfterMs: seconds === undefined ? undefined : seconds * 1000 }
    }
    const e = current as { cause?: unknown; lastError?: unknown; errors?: unknown[] }
    queue.push(e.cause, e.lastError, ...(Array.isArray(e.errors) ? e.errors : []))
  }
  return undefined
}

/** Retry-After in milliseconds: `retry-after-ms`, or `retry-after` as seconds or an HTTP date. */
export function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  const ms = Number(lower['retry-after-ms'])
  if (lower['retry-after-ms'] && Number.isFinite(ms) && ms >= 0) return ms
  const value = lower['retry-after']
  if (!value) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

export class RateGate {
  readonly stats: RateLimitStats = { limited: 0, pausedMs: 0 }
  private readonly maxConcurrency: number
  private limit: number
  private inFlight = 0
  private readonly waiting = new Set<() => void>()
  private resumeAt = 0
  private backoffMs = 0
  private successes = 0

  constructor(private readonly options: RateGateOptions) {
    this.maxConcurrency = Math.max(1, options.concurrency)
    this.limit = this.maxConcurrency
  }

  /** Calls allowed in flight now (lower after rate limits). */
  get allowed(): number {
    return this.limit
  }

  /** Makes the call when the gate allows, again after each rate limit, until it succeeds or fails otherwise. */
  async run<T>(call: () => PromiseLike<T>, signal?: AbortSignal): Promise<T> {
    const started = Date.now()
    for (;;) {
      await this.acquire(signal)
      try {
        const result = await call()
        this.succeeded()
        return result
      } catch (error) {
        const limit = rateLimitOf(error)
        if (!limit || signal?.aborted || Date.now() - started >= (this.options.maxWaitMs ?? 15 * 60_000))
          throw error
        this.limited(limit.retryAfterMs)
      } finally {
        this.release()
      }
    }
  }

  private async acquire(signal?: AbortSignal) {
    for (;;) {
      signal?.throwIfAborted()
      const pause = this.resumeAt - Date.now()
      if (pause > 0) {
        await sleep(pause, undefined, { signal }).catch((error) => {
          throw signal?.reason ?? error
        })
        continue
      }
      if (this.inFlight < this.limit) {
        this.inFlight++
        return
      }
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', abort)
          this.waiting.delete(wake)
          resolve()
        }
        const abort = () => {
          this.waiting.delete(wake)
          reject(signal?.reason)
        }
        this.waiting.add(wake)
        signal?.addEventListener('abort', abort, { once: true })
      })
    }
  }

  private release() {
    this.inFlight--
    // As many waiters as there are free places (more after successes widened the limit).
    const free = Math.max(1, this.limit - this.inFlight)
    for (const wake of [...this.waiting].slice(0, free)) wake()
  }

  private limited(retryAfter?: number) {
    this.stats.limited++
    this.successes = 0
    this.limit = Math.max(1, Math.floor(this.limit / 2))
    const initial = this.options.initialBackoffMs ?? 1000
    this.backoffMs = Math.min(
      this.options.maxBackoffMs ?? 60_000,
      this.backoffMs ? this.backoffMs * 2 : initial,
    )
    const pause = retryAfter ?? this.backoffMs
    const now = Date.now()
    const until = now + pause
    if (until > this.resumeAt) {
      this.stats.pausedMs += until - Math.max(now, this.resumeAt)
      this.resumeAt = until
    }
    this.options.onPause?.(pause)
  }

  private succeeded() {
    this.backoffMs = 0
    if (this.limit < this.maxConcurrency && ++this.successes >= this.limit) {
      this.limit++
      this.successes = 0
    }
  }
}

/** The model with every call made through the gate; a model the gate cannot wrap is returned as is. */
export function throttle(model: LanguageModel, gate: RateGate): LanguageModel {
  if (typeof model !== 'object' || model.specificationVersion !== 'v3') return model
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: 'v3',
      wrapGenerate: ({ doGenerate, params }) => gate.run(doGenerate, params.abortSignal),
      wrapStream: ({ doStream, params }) => gate.run(doStream, params.abortSignal),
    },
  })
}
