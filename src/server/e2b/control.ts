/**
 * E2B's control plane: create, connect, get, list, time out and kill sandboxes (the routes of E2B's
 * spec/openapi.yml that the SDKs call), with `X-API-KEY` as one of Analyst's tokens.
 * @module
 */
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { AnalystError, statusOf } from '../../errors.js'
import { advice } from '../../fixes.js'
import { Sandbox, type SandboxProvider } from '../../sandbox/index.js'
import { ENVD_VERSION, type Registry, type SandboxEntry, unguessable } from './registry.js'

export type ControlEnv = { Bindings: { owner: string | null } }

/** Templates that are Analyst's Python sandbox; others are refused. */
export const TEMPLATES = ['code-interpreter-v1', 'base']
const DEFAULT_TIMEOUT_SECONDS = 300
const MAX_TIMEOUT_SECONDS = 24 * 3600
const PAGE_LIMIT = 100

/** E2B's error body: `{ code, message }`. */
export function e2bError(c: Context, status: number, message: string) {
  return c.json({ code: status, message }, status as 400)
}

const Timeout = z.number().int().min(0).max(MAX_TIMEOUT_SECONDS)

const NewSandbox = z
  .object({
    templateID: z.string().min(1),
    timeout: Timeout.optional(),
    envVars: z.record(z.string(), z.string()).nullish(),
    metadata: z.record(z.string(), z.string()).nullish(),
    allow_internet_access: z.boolean().nullish(),
    autoPause: z.boolean().nullish(),
    secure: z.boolean().nullish(),
  })
  .loose()

async function body<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let value: unknown = {}
  const text = await c.req.text()
  if (text.trim()) {
    try {
      value = JSON.parse(text)
    } catch {
      throw new AnalystError('The body is not valid JSON')
    }
  }
  const parsed = schema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new AnalystError(`Invalid request: ${issue?.path.join('.') || 'body'}: ${issue?.message}`)
  }
  return parsed.data
}

/** What create and connect answer: the ids and the tokens the SDK sends back on every call. */
function connection(entry: SandboxEntry) {
  return {
    templateID: entry.templateID,
    sandboxID: entry.id,
    clientID: 'analyst',
    envdVersion: ENVD_VERSION,
    envdAccessToken: entry.envdAccessToken,
    trafficAccessToken: entry.trafficAccessToken,
    domain: null,
  }
}

/** What get and list answer (E2B's SandboxDetail), without the tokens. */
function view(entry: SandboxEntry) {
  const { envdAccessToken: _envd, trafficAccessToken: _traffic, ...ids } = connection(entry)
  return {
    ...ids,
    startedAt: entry.startedAt.toISOString(),
    endAt: entry.endAt.toISOString(),
    metadata: entry.metadata,
    state: 'running',
    cpuCount: 1,
    memoryMB: 2048,
    diskSizeMB: 1024,
    allowInternetAccess: false,
  }
}

export interface ControlOptions {
  provider: SandboxProvider
  registry: Registry
  /** Let a client that asks for `allow_internet_access: true` have network. @default false */
  allowNetwork?: boolean
  /** Refuse new sandboxes (the server is stopping). */
  closing: () => boolean
}

export function controlRoutes({ provider, registry, allowNetwork = false, closing }: ControlOptions) {
  const app = new Hono<ControlEnv>()
  app.onError((error, c) => {
    const status = statusOf(error)
    if (status >= 500 && !AnalystError.isInstance(error))
      console.error('analyst serve: E2B API error:', error)
    const what = AnalystError.isInstance(error) ? advice(error, 'http') : undefined
    const hint = what ? ` ${what}` : ''
    return e2bError(c, status, `${error.message}${hint}`)
  })

  const owned = (c: Context<ControlEnv>) => registry.owned(c.req.param('id') as string, c.env.owner)
  const missing = (c: Context<ControlEnv>) =>
    e2bError(c, 404, `sandbox "${c.req.param('id')}" doesn't exist or you don't have access to it`)

  app.post('/v2/sandboxes', async (c) => {
    if (closing()) return e2bError(c, 503, 'The server is shutting down')
    const request = await body(c, NewSandbox)
    if (!TEMPLATES.includes(request.templateID)) {
      return e2bError(
        c,
        400,
        `Template "${request.templateID}" is not available on this server: Analyst serves ${TEMPLATES.join(' and ')} (Python with pandas, numpy and matplotlib).`,
      )
    }
    if (request.allow_internet_access === true && !allowNetwork) {
      return e2bError(
        c,
        403,
        'Internet access is off on this server: sandboxes have no network. Leave allowInternetAccess unset.',
      )
    }
    const sandbox = await Sandbox.create({
      provider,
      envs: request.envVars ?? undefined,
      network: request.allow_internet_access === true,
      signal: c.req.raw.signal,
    })
    const now = new Date()
    const entry: SandboxEntry = {
      id: unguessable('i'),
      owner: c.env.owner,
      templateID: request.templateID,
      sandbox,
      metadata: request.metadata ?? {},
      envdAccessToken: unguessable(),
      trafficAccessToken: unguessable(),
      startedAt: now,
      endAt: now,
    }
    registry.add(entry, request.timeout ?? DEFAULT_TIMEOUT_SECONDS)
    return c.json(connection(entry), 201)
  })

  app.post('/v2/sandboxes/:id/connect', async (c) => {
    const entry = owned(c)
    if (!entry) return missing(c)
    const { timeout } = await body(c, z.object({ timeout: Timeout.optional() }).loose())
    // Connecting extends the life to at least `timeout` from now, never shortens it.
    if (timeout !== undefined && Date.now() + timeout * 1000 > entry.endAt.getTime())
      registry.setTimeout(entry, timeout)
    return c.json(connection(entry), 200)
  })

  app.get('/sandboxes/:id', (c) => {
    const entry = owned(c)
    return entry ? c.json(view(entry)) : missing(c)
  })

  app.get('/v2/sandboxes', (c) => {
    const query = c.req.query()
    const wanted = new URLSearchParams(query.metadata ?? '')
    const states = (query.state ?? 'running').split(',')
    let entries = registry
      .list(c.env.owner)
      .filter(() => states.includes('running'))
      .filter((entry) => [...wanted].every(([key, value]) => entry.metadata[key] === value))
      .filter((entry) => !query.template || entry.templateID === query.template)
      .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || a.id.localeCompare(b.id))
    // Paging: the next token is the id after which the next page starts.
    if (query.nextToken) {
      const start = entries.findIndex((entry) => entry.id === query.nextToken)
      entries = start < 0 ? [] : entries.slice(start)
    }
    const limit = Math.min(Number(query.limit ?? PAGE_LIMIT) || PAGE_LIMIT, PAGE_LIMIT)
    const page = entries.slice(0, limit)
    const next = entries[limit]
    if (next) c.header('x-next-token', next.id)
    return c.json(page.map(view))
  })

  app.post('/sandboxes/:id/timeout', async (c) => {
    const entry = owned(c)
    if (!entry) return missing(c)
    const { timeout } = await body(c, z.object({ timeout: Timeout }))
    registry.setTimeout(entry, timeout)
    return c.body(null, 204)
  })

  app.delete('/sandboxes/:id', async (c) => {
    const entry = owned(c)
    if (!entry) return missing(c)
    await registry.kill(entry.id)
    return c.body(null, 204)
  })

  app.all('*', (c) =>
    e2bError(c, 404, `${c.req.method} ${new URL(c.req.url).pathname} is not part of Analyst's E2B API`),
  )
  return app
}
