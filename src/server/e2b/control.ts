/**
 * E2B's control plane: create, connect (resuming a paused sandbox), get, list, time out, pause,
 * measure and kill sandboxes (the routes of E2B's spec/openapi.yml that the SDKs call), with
 * `X-API-KEY` as one of Analyst's tokens.
 * @module
 */

import { availableParallelism } from 'node:os'
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { AnalystError, known, NotFoundError, retryAfterOf, statusOf } from '../../errors.js'
import { advice } from '../../fixes.js'
import { capabilitiesOf } from '../../sandbox/capabilities.js'
import type { SandboxCreateOptions, SandboxLimits, SandboxProvider } from '../../sandbox/index.js'
import { resolveLimits } from '../../sandbox/kernel/limits.js'
import type { BuiltTemplate, TemplateResources } from '../../templates/types.js'
import { withReason } from '../reason-phrase.js'
import { readText } from '../request-body.js'
import type { TemplateCatalog } from '../template-builds.js'
import { ENVD_VERSION, type Registry, type SandboxEntry, unguessable } from './registry.js'
import { ServedSandbox } from './served.js'

export type ControlEnv = { Bindings: { owner: string | null } }

/** Templates that are Analyst's Python sandbox; others are refused. */
export const TEMPLATES = ['code-interpreter-v1', 'base']
const DEFAULT_TIMEOUT_SECONDS = 300
const MAX_TIMEOUT_SECONDS = 24 * 3600
const PAGE_LIMIT = 100

/**
 * E2B's error body: `{ code, message }`. A server's fault (503: no room in the memory budget to
 * resume a paused sandbox) says its message in the status line too: the code interpreter's SDK
 * reads only that line.
 */
export function e2bError(c: Context, status: number, message: string) {
  const response = c.json({ code: status, message }, status as 400)
  return status >= 500 ? withReason(response, message) : response
}

/** An error as E2B's body, with its status and what to do (every E2B route answers errors so). */
export function answerError(thrown: Error, c: Context) {
  const error = known(thrown) as Error
  const status = statusOf(error)
  if (status >= 500 && !AnalystError.isInstance(error)) console.error('analyst serve: E2B API error:', error)
  const what = AnalystError.isInstance(error) ? advice(error, 'http') : undefined
  const hint = what ? ` ${what}` : ''
  const retryAfter = retryAfterOf(error)
  if (retryAfter !== undefined) c.header('retry-after', String(retryAfter))
  return e2bError(c, status, `${error.message}${hint}`)
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
    autoResume: z.object({ enabled: z.boolean().nullish() }).loose().nullish(),
    secure: z.boolean().nullish(),
    // Set by a template in E2B; Analyst takes them on the sandbox too (its own memory and CPU quota).
    memoryMB: z.number().int().min(64).nullish(),
    cpuCount: z.number().int().min(1).nullish(),
    network: z
      .object({
        allowOut: z.array(z.unknown()).nullish(),
        denyOut: z.array(z.unknown()).nullish(),
        rules: z.record(z.string(), z.unknown()).nullish(),
        egressProxy: z.unknown().optional(),
      })
      .loose()
      .nullish(),
    volumeMounts: z.array(z.unknown()).nullish(),
    mcp: z.unknown().optional(),
  })
  .loose()

/** What a sandbox can be asked for that Analyst does not do: refused, never ignored. */
function unsupported(request: z.infer<typeof NewSandbox>): string | undefined {
  const { network } = request
  if (network?.allowOut?.length || network?.denyOut?.length || Object.keys(network?.rules ?? {}).length)
    return 'Egress rules (network.allowOut, denyOut, rules) are not applied by Analyst: a sandbox has no network, or with allowInternetAccess on a server started with --allow-network, all of it. Leave them out.'
  if (network?.egressProxy)
    return 'An egress proxy (network.egressProxy) is not available in Analyst sandboxes. Leave it out.'
  if (request.volumeMounts?.length)
    return 'Volumes are not available in Analyst sandboxes: write the files with sandbox.files.write. Leave volumeMounts out.'
  if (request.mcp) return "E2B's MCP gateway is not available in Analyst sandboxes. Leave mcp out."
  return undefined
}

/** E2B routes that Analyst does not serve, and why: answered 501, so that the SDK says so. */
const NOT_SERVED: Array<[method: string, path: string, why: string]> = [
  ['post', '/sandboxes/:id/fork', "Forks copy a sandbox's running memory, which Analyst does not snapshot."],
  [
    'post',
    '/sandboxes/:id/snapshots',
    "Snapshots keep a sandbox's running memory, which Analyst does not snapshot; pause keeps its files and cells.",
  ],
  ['put', '/sandboxes/:id/network', 'Egress rules are not applied by Analyst sandboxes.'],
  ['post', '/sandboxes/:id/resume', 'Resume a paused sandbox with Sandbox.connect().'],
  ['all', '/snapshots', "Snapshots keep a sandbox's running memory, which Analyst does not snapshot."],
  ['all', '/templates/*', 'Custom templates are not available: Analyst serves code-interpreter-v1 and base.'],
  ['all', '/templates', 'Custom templates are not available: Analyst serves code-interpreter-v1 and base.'],
  [
    'all',
    '/v2/templates/*',
    'Custom templates are not available: Analyst serves code-interpreter-v1 and base.',
  ],
  ['all', '/volumes/*', 'Volumes are not available in Analyst sandboxes.'],
  ['all', '/volumes', 'Volumes are not available in Analyst sandboxes.'],
]

const Order = z.enum(['asc', 'desc'])
const When = z.iso.datetime({ offset: true })

async function body<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let value: unknown = {}
  const text = await readText(c.req.raw)
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
    state: entry.state,
    ...sizeOf(entry.limits),
    diskSizeMB: 1024,
    allowInternetAccess: entry.network,
    lifecycle: { onTimeout: entry.autoPause ? 'pause' : 'kill', autoResume: entry.autoResume },
  }
}

/** E2B's cpuCount and memoryMB of a sandbox with these limits (no CPU quota: every core). */
function sizeOf(given: Partial<SandboxLimits>) {
  const limits = resolveLimits(given)
  return {
    cpuCount: limits.milliCpus > 0 ? Math.ceil(limits.milliCpus / 1000) : availableParallelism(),
    memoryMB: Math.round(limits.memoryBytes / 1024 ** 2),
  }
}

/** The query's ISO time, or undefined; a clear 400 for one that is not. */
function instant(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined
  if (!When.safeParse(value).success)
    throw new AnalystError(`${name} must be an ISO 8601 time such as 2025-01-31T12:00:00Z, not ${value}`)
  return Date.parse(value)
}

export interface ControlOptions {
  provider: SandboxProvider
  registry: Registry
  /** Let a client that asks for `allow_internet_access: true` have network. @default false */
  allowNetwork?: boolean
  /** Each sandbox's own limits unless a request sets memoryMB or cpuCount (the server's --memory, --cpus). */
  limits?: Partial<SandboxLimits>
  /** Refuse new sandboxes (the server is stopping). */
  closing: () => boolean
  /** The templates built here: `Sandbox.create(name)` starts one. */
  templates?: TemplateCatalog
}

export function controlRoutes({
  provider,
  registry,
  allowNetwork = false,
  limits: defaults = {},
  closing,
  templates,
}: ControlOptions) {
  const app = new Hono<ControlEnv>()
  /**
   * What a template id starts: nothing for the server's own (the engine's default), the built
   * template (or its name, for an engine with templates of its own) with its sandboxes' default
   * memory and cores, or null when there is none.
   */
  const templateFor = (
    id: string,
  ): { template?: SandboxCreateOptions['template']; resources?: TemplateResources } | null => {
    const name = id.replace(/:latest$/, '')
    if (TEMPLATES.includes(name)) return {}
    if (!templates || !/^[a-z0-9][a-z0-9._-]{0,62}$/.test(name)) return null
    let built: BuiltTemplate
    try {
      built = templates.resolve(name)
    } catch (error) {
      if (NotFoundError.isInstance(error)) return null
      throw error
    }
    return {
      template: capabilitiesOf(provider).templates === 'named' ? name : built,
      ...(built.resources ? { resources: built.resources } : {}),
    }
  }
  app.onError(answerError)

  const owned = (c: Context<ControlEnv>) => registry.owned(c.req.param('id') as string, c.env.owner)
  const missing = (c: Context<ControlEnv>) =>
    e2bError(c, 404, `sandbox "${c.req.param('id')}" doesn't exist or you don't have access to it`)

  app.post('/v2/sandboxes', async (c) => {
    if (closing()) return e2bError(c, 503, 'The server is shutting down')
    const request = await body(c, NewSandbox)
    // Built on another replica: brought here first (the server's own need no look).
    const asked = request.templateID.replace(/:latest$/, '')
    if (!TEMPLATES.includes(asked)) await templates?.ensure?.(asked)
    const found = templateFor(request.templateID)
    if (found === null) {
      const built = templates?.list().flatMap((t) => t.names) ?? []
      return e2bError(
        c,
        400,
        `Template "${request.templateID}" is not available on this server: Analyst serves ${[...TEMPLATES, ...built].join(', ')} (${TEMPLATES.join(' and ')}: Python with pandas, numpy and matplotlib).${templates ? ' Build one with Template.build (on a server started with --allow-template-builds) or analyst template build.' : ''}`,
      )
    }
    const refused = unsupported(request)
    if (refused) return e2bError(c, 400, refused)
    if (request.allow_internet_access === true && !allowNetwork) {
      return e2bError(
        c,
        403,
        'Internet access is off on this server: sandboxes have no network. Leave allowInternetAccess unset, or start the server with analyst serve --allow-network.',
      )
    }
    const envs = request.envVars ?? {}
    const network = request.allow_internet_access === true
    const { template, resources } = found
    // The caller's memoryMB and cpuCount, else the template's, else the server's.
    const limits: Partial<SandboxLimits> = { ...defaults, ...resources }
    if (request.memoryMB) limits.memoryBytes = request.memoryMB * 1024 ** 2
    if (request.cpuCount) limits.milliCpus = request.cpuCount * 1000
    await registry.admit(c.env.owner)
    const sandbox = await ServedSandbox.start(provider, {
      envs,
      network,
      limits,
      ...(template ? { template } : {}),
      signal: c.req.raw.signal,
    })
    const entry = registry.add(
      {
        id: unguessable('i'),
        owner: c.env.owner,
        templateID: request.templateID,
        sandbox,
        envs,
        network,
        limits,
        ...(template ? { template } : {}),
        autoPause: request.autoPause === true,
        autoResume: request.autoResume?.enabled === true,
        metadata: request.metadata ?? {},
      },
      request.timeout ?? DEFAULT_TIMEOUT_SECONDS,
    )
    return c.json(connection(entry), 201)
  })

  // A paused sandbox is resumed (201); a running one gets at least `timeout` more, never less (200).
  app.post('/v2/sandboxes/:id/connect', async (c) => {
    const entry = owned(c)
    if (!entry) return missing(c)
    const { timeout } = await body(c, z.object({ timeout: Timeout.optional() }).loose())
    if (await registry.resume(entry, timeout ?? DEFAULT_TIMEOUT_SECONDS))
      return c.json(connection(entry), 201)
    if (timeout !== undefined && Date.now() + timeout * 1000 > entry.endAt.getTime())
      registry.setTimeout(entry, timeout)
    return c.json(connection(entry), 200)
  })

  // The workspace and the cells are kept; the kernel and every process end (see pause.ts).
  app.post('/sandboxes/:id/pause', async (c) => {
    const entry = owned(c)
    if (!entry) return missing(c)
    if (!(await registry.pause(entry))) return e2bError(c, 409, `sandbox "${entry.id}" is already paused`)
    return c.body(null, 204)
  })

  app.get('/sandboxes/:id/metrics', async (c) => {
    const entry = owned(c)
    if (!entry) return missing(c)
    const seconds = (name: string) => {
      const value = c.req.query(name)
      if (value === undefined || value === '') return undefined
      const number = Number(value)
      if (!Number.isInteger(number) || number < 0)
        throw new AnalystError(`${name} must be a Unix time in seconds, not ${value}`)
      return number
    }
    const start = seconds('start')
    const end = seconds('end')
    const metrics = entry.state === 'running' ? entry.sandbox.metrics() : undefined
    if (metrics) entry.metrics.record(await metrics)
    return c.json(entry.metrics.between(start, end))
  })

  app.get('/sandboxes/:id', (c) => {
    const entry = owned(c)
    return entry ? c.json(view(entry)) : missing(c)
  })

  // Newest first unless `order=asc`; pages follow that order.
  app.get('/v2/sandboxes', (c) => {
    const query = c.req.query()
    const wanted = new URLSearchParams(query.metadata ?? '')
    const states = (query.state || 'running,paused').split(',')
    const order = Order.safeParse(query.order || 'desc')
    if (!order.success) throw new AnalystError(`order must be asc or desc, not ${query.order}`)
    const after = instant(query.startedAfter, 'startedAfter')
    const before = instant(query.startedBefore, 'startedBefore')
    const direction = order.data === 'asc' ? 1 : -1
    let entries = registry
      .list(c.env.owner)
      .filter((entry) => states.includes(entry.state))
      .filter((entry) => [...wanted].every(([key, value]) => entry.metadata[key] === value))
      .filter((entry) => !query.template || entry.templateID === query.template)
      .filter((entry) => after === undefined || entry.startedAt.getTime() >= after)
      .filter((entry) => before === undefined || entry.startedAt.getTime() <= before)
      .sort((a, b) => direction * (a.sequence - b.sequence))
    // The next token is where the next page starts: a sandbox's place in creation order, which
    // holds even when that sandbox is gone before the next page is asked for.
    if (query.nextToken) {
      const from = Number(query.nextToken)
      if (!Number.isInteger(from))
        throw new AnalystError(`nextToken ${query.nextToken} is not one this server gave`)
      entries = entries.filter((entry) => direction * (entry.sequence - from) >= 0)
    }
    const limit = Math.min(Number(query.limit ?? PAGE_LIMIT) || PAGE_LIMIT, PAGE_LIMIT)
    const page = entries.slice(0, limit)
    const next = entries[limit]
    if (next) c.header('x-next-token', String(next.sequence))
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

  for (const [method, path, why] of NOT_SERVED)
    app.on(
      method.toUpperCase() === 'ALL' ? ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] : [method.toUpperCase()],
      path,
      (c) => {
        // A sandbox that is not there is not there first, as E2B answers (a killed one's fork is a 404).
        if (path.includes(':id') && !owned(c)) return missing(c)
        return e2bError(c, 501, `${why} (${c.req.method} ${c.req.path} is not served by Analyst's E2B API)`)
      },
    )
  app.all('*', (c) =>
    e2bError(c, 404, `${c.req.method} ${new URL(c.req.url).pathname} is not part of Analyst's E2B API`),
  )
  return app
}
