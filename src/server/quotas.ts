/**
 * Quotas per owner: concurrent runs, sessions, bytes of data, requests per minute. An owner is an
 * ANALYST_TOKEN token, or a signed-in user: all of a user's API keys and browser sessions share
 * one quota. Set for every owner by env (ANALYST_QUOTA_CONCURRENT_RUNS, ANALYST_QUOTA_SESSIONS,
 * ANALYST_QUOTA_UPLOAD_BYTES, ANALYST_QUOTA_REQUESTS_PER_MINUTE) and per owner in a JSON file
 * (ANALYST_QUOTAS):
 *
 *     { "default": { "sessions": 100 },
 *       "tokens": { "<token, or its owner id>": { "concurrentRuns": 1 } },
 *       "users": { "<email, or user:<id>>": { "sessions": 500 } } }
 *
 * Counted in the store, so that every replica sees the same usage. Over a quota: RateLimitError
 * (429) with Retry-After and a message that names the limit.
 * @module
 */
import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { InvalidArgumentError, RateLimitError } from '../errors.js'
import type { HistoryStore } from '../store/index.js'

const Limits = z
  .object({
    concurrentRuns: z.number().int().positive(),
    sessions: z.number().int().positive(),
    uploadBytes: z.number().int().positive(),
    requestsPerMinute: z.number().int().positive(),
  })
  .partial()
  .strict()
export type QuotaLimits = z.infer<typeof Limits>

const File = z
  .object({
    default: Limits.optional(),
    tokens: z.record(z.string(), Limits).optional(),
    /** By a signed-in user's email (any case) or their owner id (`user:<id>`). */
    users: z.record(z.string(), Limits).optional(),
  })
  .strict()
export type QuotaConfig = z.infer<typeof File>

const ENV: Record<keyof QuotaLimits, string> = {
  concurrentRuns: 'ANALYST_QUOTA_CONCURRENT_RUNS',
  sessions: 'ANALYST_QUOTA_SESSIONS',
  uploadBytes: 'ANALYST_QUOTA_UPLOAD_BYTES',
  requestsPerMinute: 'ANALYST_QUOTA_REQUESTS_PER_MINUTE',
}

/** The quotas the environment sets: the file's, over the env's defaults. */
export function quotasFromEnv(env: NodeJS.ProcessEnv = process.env): QuotaConfig {
  const defaults: QuotaLimits = {}
  for (const [key, name] of Object.entries(ENV) as Array<[keyof QuotaLimits, string]>) {
    const value = env[name]
    if (value === undefined || value === '') continue
    const n = Number(value)
    if (!Number.isInteger(n) || n <= 0)
      throw new InvalidArgumentError(`${name} must be a whole number above 0, not "${value}"`)
    defaults[key] = n
  }
  if (!env.ANALYST_QUOTAS) return { default: defaults }
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(env.ANALYST_QUOTAS, 'utf8'))
  } catch (error) {
    throw new InvalidArgumentError(
      `Cannot read the quotas file ${env.ANALYST_QUOTAS}: ${(error as Error).message}`,
      {
        hint: 'ANALYST_QUOTAS names a JSON file: { "default": {…}, "tokens": { "<token>": {…} }, "users": { "<email>": {…} } }.',
      },
    )
  }
  const file = File.safeParse(parsed)
  if (!file.success) {
    const issue = file.error.issues[0]
    throw new InvalidArgumentError(
      `The quotas file ${env.ANALYST_QUOTAS} is not valid: ${issue?.path.join('.')}: ${issue?.message}`,
      {
        hint: 'Limits are concurrentRuns, sessions, uploadBytes and requestsPerMinute, whole numbers above 0.',
      },
    )
  }
  return {
    default: { ...defaults, ...file.data.default },
    ...(file.data.tokens ? { tokens: file.data.tokens } : {}),
    ...(file.data.users ? { users: file.data.users } : {}),
  }
}

/** Whose quota a message names: a user's covers all their keys and sign-ins. */
function whose(owner: string | null): string {
  return owner?.startsWith('user:') ? 'your account' : 'this token'
}

export class Quotas {
  /** Asks in progress on this replica, per owner (not yet all recorded as running runs). */
  private readonly asking = new Map<string, number>()

  /** `users` by owner id as given, by email in lower case (emails match in any case). */
  private readonly users: Map<string, QuotaLimits>

  constructor(
    private readonly config: QuotaConfig,
    private readonly history: HistoryStore,
  ) {
    this.users = new Map(
      Object.entries(config.users ?? {}).map(([who, limits]) => [
        who.startsWith('user:') ? who : who.toLowerCase(),
        limits,
      ]),
    )
  }

  get enabled(): boolean {
    const any = (limits?: QuotaLimits) => Boolean(limits && Object.keys(limits).length > 0)
    return (
      any(this.config.default) ||
      Object.values(this.config.tokens ?? {}).some(any) ||
      Object.values(this.config.users ?? {}).some(any)
    )
  }

  /**
   * The limits of an owner: a token's (looked up by the token or by its owner id), or a signed-in
   * user's (by their owner id `user:<id>`, or by their email), over the defaults.
   */
  limits(token: string | undefined, owner: string | null, email?: string): QuotaLimits {
    const { tokens } = this.config
    const own =
      (token && tokens?.[token]) ||
      (owner && (tokens?.[owner] || this.users.get(owner))) ||
      (email && this.users.get(email.toLowerCase())) ||
      {}
    return { ...this.config.default, ...own }
  }

  /** Counts a request; over the rate, refuses it until the next minute. */
  async request(limits: QuotaLimits, owner: string | null): Promise<void> {
    if (!limits.requestsPerMinute) return
    const now = Date.now()
    const minute = Math.floor(now / 60_000)
    const count = await this.history.countRequest(owner ?? '', minute)
    if (count > limits.requestsPerMinute) {
      throw new RateLimitError(
        `Over the quota of ${limits.requestsPerMinute} requests per minute for ${whose(owner)}`,
        {
          retryAfterSeconds: Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000)),
          hint: 'Wait a moment.',
        },
      )
    }
  }

  async newSession(limits: QuotaLimits, owner: string | null): Promise<void> {
    if (!limits.sessions) return
    const usage = await this.history.ownerUsage(owner)
    if (usage.sessions >= limits.sessions) {
      throw new RateLimitError(`Over the quota of ${limits.sessions} sessions for ${whose(owner)}`, {
        retryAfterSeconds: 60,
        hint: 'Delete a session you no longer need.',
      })
    }
  }

  /** `bytes` more data: refused when the owner's data would pass its quota. */
  async upload(limits: QuotaLimits, owner: string | null, bytes: number): Promise<void> {
    if (!limits.uploadBytes) return
    const usage = await this.history.ownerUsage(owner)
    if (usage.dataBytes + bytes > limits.uploadBytes) {
      throw new RateLimitError(
        `Over the quota of ${limits.uploadBytes} bytes of data for ${whose(owner)} (${usage.dataBytes} used)`,
        { retryAfterSeconds: 60, hint: 'Delete a session whose data you no longer need.' },
      )
    }
  }

  /** Takes a place for a question; call the returned function when it has ended. */
  async ask(limits: QuotaLimits, owner: string | null): Promise<() => void> {
    const key = owner ?? ''
    // The place is taken before anything is awaited, so that two questions at once both count.
    this.asking.set(key, (this.asking.get(key) ?? 0) + 1)
    let ended = false
    const release = () => {
      if (ended) return
      ended = true
      const left = (this.asking.get(key) ?? 1) - 1
      if (left > 0) this.asking.set(key, left)
      else this.asking.delete(key)
    }
    if (!limits.concurrentRuns) return release
    const usage = await this.history.ownerUsage(owner).catch((error: unknown) => {
      release()
      throw error
    })
    if (Math.max(usage.runningRuns + 1, this.asking.get(key) ?? 0) > limits.concurrentRuns) {
      release()
      throw new RateLimitError(
        `Over the quota of ${limits.concurrentRuns} questions at once for ${whose(owner)}`,
        {
          retryAfterSeconds: 5,
          hint: 'Wait for a question to be answered.',
        },
      )
    }
    return release
  }
}
