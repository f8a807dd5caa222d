/**
 * The HTTP API (Hono): sessions, uploads, questions answered as server-sent events, artifacts,
 * exports, and the web UI. Portless in tests: `createApp(...).request('/healthz')`.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { createReadStream, existsSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Readable } from 'node:stream'
import { type Context, Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import mime from 'mime-types'
import type { Logger } from 'pino'
import { z } from 'zod'
import {
  AnalystError,
  InvalidArgumentError,
  known,
  retryAfterOf,
  ShuttingDownError,
  StoppedError,
  statusOf,
} from '../errors.js'
import { advice } from '../fixes.js'
import type { McpHttp } from '../mcp/index.js'
import type { SessionEvent, SessionService } from '../session/index.js'
import type { SourcesCaller } from '../session/live.js'
import { EXPORT_FORMATS, EXPORT_TYPES, isExportFormat } from '../store/export/index.js'
import { artifactResponse, dataFileResponse } from './artifact-response.js'
import {
  type AuthVariables,
  bearerOf,
  callingUser,
  ownerOf,
  type SignIn,
  sameSecret,
  shareRoutes,
  signInRoutes,
} from './auth/index.js'
import { isBrowserPage, loginRedirect, refusalPage } from './browser-refusal.js'
import { cellRoutes } from './cells.js'
import { chartRoutes } from './charts.js'
import { frameRoutes } from './frames.js'
import type { ServerMetrics } from './metrics.js'
import { openApiDocument } from './openapi.js'
import type { Quotas } from './quotas.js'
import { reasonPhrases } from './reason-phrase.js'
import { jsonBody, parse } from './request-body.js'
import { restartRoutes } from './restart.js'
import { stopRoutes } from './stop.js'
import { type TemplateRoutesOptions, templateRoutes } from './templates.js'
import type { ApiError, RunWatchStreamEvent, StreamOnlyEvent } from './types.js'
import { receiveFile } from './uploads.js'
import { artifactUrl, datasetInfo, runView, sessionDetail, sessionSummary, stepView } from './views.js'

export interface AppOptions {
  service: SessionService
  /** Bearer tokens; empty: no auth (loopback only). */
  tokens: string[]
  /** Where uploads are received before they go into the blob store. */
  uploadDir: string
  /** The built web UI (index.html and assets), if there is one. */
  webDir?: string
  /** @default 1 GiB */
  maxUploadBytes?: number
  /** Structured logs: one line per request (and per error), with its request id and session id. */
  logger?: Logger
  /** Served at /metrics; counts every request. */
  metrics?: ServerMetrics
  /** Per-token quotas; none by default. */
  quotas?: Quotas
  /** /readyz's checks: each resolves to 'ok' or throws what is wrong. @default none */
  readiness?: Record<string, () => Promise<unknown>>
  /** Answers MCP at /mcp when given. */
  mcp?: McpHttp
  /** The sources sessions may pick by name (GET /api/sources lists those the caller may use). */
  sources?: {
    list(caller: SourcesCaller): Promise<unknown[]>
  }
  /** E2B-compatible API (src/server/e2b): served before Analyst's own routes. */
  e2b?: { handles(request: Request): boolean; fetch(request: Request): Response | Promise<Response> }
  /** Sign-in (src/server/auth): users, their API keys and shares, beside the tokens. @default tokens only */
  signin?: SignIn
  /** /api/templates: the templates built here, and builds when the server allows them. */
  templates?: Omit<TemplateRoutesOptions, 'signIn'>
}

type Env = {
  Variables: AuthVariables & { log: Logger | undefined; requestId: string }
}

/** A request id a client or a proxy sent, if it is a sane one. */
const REQUEST_ID = /^[\w.:-]{1,100}$/

export { ownerOf }

/** The kind of refusal, for programs (the message is for people). */
const CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  410: 'gone',
  413: 'too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  500: 'internal',
  502: 'bad_gateway',
  503: 'unavailable',
  507: 'insufficient_storage',
}

function fail(c: Context, status: number, message: string, hint?: string) {
  const body: ApiError = { error: { code: CODES[status] ?? 'error', message, ...(hint ? { hint } : {}) } }
  return c.json(body, status as 400)
}

const NewSession = z
  .object({
    title: z.string().trim().min(1).max(200).optional(),
    /** Names from GET /api/sources; left out, the server's defaults (its --data sources). */
    sources: z.array(z.string().min(1).max(200)).max(50).optional(),
    /** A template's name or id (analyst template list); left out, the server's --template, if any. */
    template: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9._-]{0,63}$/,
        'a template name or id: lowercase letters, digits, ".", "-" and "_"',
      )
      .optional(),
  })
  .strict()
const Question = z
  .object({
    question: z.string().trim().min(1, 'the question is empty').max(20_000),
    /** The run goes on if the client disconnects (it can watch it again at /runs/:runId/events). */
    keepRunning: z.boolean().optional(),
  })
  .strict()

export function createApp(options: AppOptions): Hono<Env> {
  const { service, quotas } = options
  const app = new Hono<Env>()
  const logError = (c: Context<Env>, error: unknown) => {
    if (c.get('log')) c.get('log')?.error({ err: error }, 'internal error')
    else console.error('analyst serve: internal error:', error)
  }

  // One mapping from errors to statuses: each error knows its own (src/errors.ts).
  app.onError((thrown, c) => {
    const error = known(thrown)
    if (AnalystError.isInstance(error)) {
      const retryAfter = retryAfterOf(error)
      if (retryAfter !== undefined) c.header('retry-after', String(retryAfter))
      const status = statusOf(error)
      // A browser asking for a page: to the sign-in (not from the sign-in's own pages: no loop),
      // or a page that says why; programs (API routes, any non-browser caller) get JSON.
      if (options.signin && status < 500 && isBrowserPage(c)) {
        if (status === 401 && !c.req.path.startsWith('/auth/')) return loginRedirect(c)
        return refusalPage(c, status, error.message, advice(error, 'http'))
      }
      return fail(c, status, error.message, advice(error, 'http'))
    }
    logError(c, thrown)
    return fail(c, 500, 'Internal error', 'The server logged the details.')
  })

  // Every request: an id (the caller's X-Request-Id, or a new one), a log line, a count. The path
  // is logged without its query (a download may carry ?token=), and no header or body is logged.
  app.use('*', async (c, next) => {
    const given = c.req.header('x-request-id')
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID()
    c.set('requestId', requestId)
    c.header('x-request-id', requestId)
    // Read only for the logs: without a logger (the library's servers, benchmarks) nothing is made.
    const sessionId = options.logger && c.req.path.match(/^\/api\/sessions\/([^/]+)/)?.[1]
    const log = options.logger?.child({ requestId, ...(sessionId ? { sessionId } : {}) })
    c.set('log', log)
    const started = performance.now()
    await next()
    // A handler that answers with a Response of its own (the E2B API) drops what c.header() set
    // before it: the id goes on that response too, as the logs have it. Onto its own headers:
    // c.header() would wrap it in a new Response over its body's stream, and a body held whole
    // (a quick /execute answer) would lose @hono/node-server's one-write path. A fetched
    // response's headers are immutable: that one is wrapped.
    if (!c.res.headers.has('x-request-id')) {
      try {
        c.res.headers.set('x-request-id', requestId)
      } catch {
        c.header('x-request-id', requestId)
      }
    }
    const seconds = (performance.now() - started) / 1000
    const route = c.req.routePath === '*' || c.req.routePath === '/api/*' ? 'other' : c.req.routePath
    options.metrics?.request(route, c.req.method, c.res.status, seconds)
    log?.info(
      { method: c.req.method, path: c.req.path, route, status: c.res.status, ms: Math.round(seconds * 1000) },
      'request',
    )
  })
  // An error answer's reason phrase reaches the status line (reason-phrase.ts).
  app.use('*', reasonPhrases)
  // E2B-compatible API: requests that name a sandbox (E2b-Sandbox-Id) or hit its control plane.
  const e2b = options.e2b
  if (e2b) app.use('*', async (c, next) => (e2b.handles(c.req.raw) ? e2b.fetch(c.req.raw) : next()))

  app.get('/healthz', (c) => c.json({ ok: true }))

  // Ready to take work: the database reachable at this schema, the sandbox engine up, not draining.
  app.get('/readyz', async (c) => {
    const checks: Record<string, string> = {}
    await Promise.all(
      Object.entries(options.readiness ?? {}).map(async ([name, check]) => {
        checks[name] = await check().then(
          () => 'ok',
          (error: unknown) => (error instanceof Error ? error.message : String(error)),
        )
      }),
    )
    checks.accepting = service.closing ? 'draining: no new questions' : 'ok'
    const ready = Object.values(checks).every((value) => value === 'ok')
    return c.json({ ready, checks }, ready ? 200 : 503)
  })

  app.get('/metrics', async (c) => {
    if (!options.metrics) return fail(c, 404, 'Metrics are off')
    return c.body(await options.metrics.registry.metrics(), 200, {
      'content-type': options.metrics.registry.contentType,
    })
  })
  app.get('/openapi.json', (c) => c.json(openApiDocument))

  // Auth: every /api request carries one of the tokens (downloads may use ?token=, for <img> and links).
  const auth = async (c: Context<Env>, next: () => Promise<void>) => {
    if (options.signin) return options.signin.authorize(c, next)
    if (options.tokens.length === 0) {
      c.set('owner', null)
      return next()
    }
    const given = bearerOf(c)
    const token = given ? options.tokens.find((t) => sameSecret(given, t)) : undefined
    if (!token) {
      const message = given ? 'The token is not valid' : 'A token is required'
      // RFC 6750: the scheme a client must use, and why this one failed; no OAuth is offered.
      c.header(
        'www-authenticate',
        given
          ? `Bearer realm="analyst", error="invalid_token", error_description="${message}"`
          : 'Bearer realm="analyst"',
      )
      return fail(c, 401, message, 'Send Authorization: Bearer <token> (one of ANALYST_TOKEN).')
    }
    c.set('owner', ownerOf(token))
    c.set('token', token)
    return next()
  }
  app.use('/api/*', auth)

  // Quotas, per owner (a token, or a user with all their keys and sign-ins): requests per minute
  // on every /api and /mcp request; the rest where they apply.
  const limitsOf = (c: Context<Env>) =>
    quotas?.limits(c.get('token'), c.get('owner'), callingUser(c.get('identity'))?.email) ?? {}
  const countRequest = async (c: Context<Env>, next: () => Promise<void>) => {
    if (quotas?.enabled) await quotas.request(limitsOf(c), c.get('owner'))
    return next()
  }
  app.use('/api/*', countRequest)

  // Sign-in's routes (/auth/*, /api/me, /api/keys, /api/admin/*) and shares, behind the same auth.
  if (options.signin) {
    const quotasOf = quotas?.enabled
      ? (owner: string, email?: string) => quotas.limits(undefined, owner, email)
      : undefined
    app.route('/', signInRoutes(options.signin, service.history, quotasOf) as unknown as Hono<Env>)
    app.route('/', shareRoutes(options.signin, service) as unknown as Hono<Env>)
  }

  if (options.templates)
    app.route('/', templateRoutes({ ...options.templates, signIn: !!options.signin }) as unknown as Hono<Env>)

  // MCP over Streamable HTTP (src/mcp), behind the same tokens: an MCP session belongs to its token.
  const { mcp } = options
  if (mcp) {
    app.use('/mcp', auth, countRequest)
    app.all('/mcp', (c) => mcp.handle(c.req.raw, c.get('owner'), callingUser(c.get('identity'))))
  }

  /** The session the route names, if the caller may see it (else 404). */
  const sessionOf = async (c: Context<Env>) => {
    const session = await service.getSession(c.req.param('id') as string, c.get('owner'))
    return session.id
  }

  app.post('/api/sessions', async (c) => {
    const body = parse(NewSession, await jsonBody(c))
    await quotas?.newSession(limitsOf(c), c.get('owner'))
    const user = callingUser(c.get('identity'))
    const created = await service.createSession({
      title: body.title,
      owner: c.get('owner'),
      ...(user ? { user } : {}),
      sources: body.sources,
      ...(body.template ? { template: body.template } : {}),
    })
    return c.json(
      {
        id: created.id,
        sources: created.sources ?? [],
        ...(created.template ? { template: created.template } : {}),
      },
      201,
    )
  })

  // The sources the caller may give a session: names, kinds and descriptions, never a URL.
  app.get('/api/sources', async (c) =>
    c.json((await options.sources?.list({ owner: c.get('owner'), ...callingUser(c.get('identity')) })) ?? []),
  )

  app.get('/api/sessions', async (c) =>
    c.json((await service.listSessions({ owner: c.get('owner') })).map(sessionSummary)),
  )

  app.get('/api/sessions/:id', async (c) =>
    c.json(sessionDetail(await service.sessionHistory(await sessionOf(c), c.get('owner')))),
  )

  app.delete('/api/sessions/:id', async (c) => {
    await service.deleteSession(await sessionOf(c), c.get('owner'))
    return c.body(null, 204)
  })

  app.post('/api/sessions/:id/files', async (c) => {
    const id = await sessionOf(c)
    const headers = Object.fromEntries(c.req.raw.headers.entries())
    // Each upload in a folder of its own (two uploads of one name do not meet), gone once stored.
    const dir = join(options.uploadDir, randomUUID())
    const limits = limitsOf(c)
    // Refused before it is received when the token has no room left at all.
    await quotas?.upload(limits, c.get('owner'), 1)
    try {
      const file = await receiveFile(headers, c.req.raw.body, dir, options.maxUploadBytes ?? 1024 ** 3)
      await quotas?.upload(limits, c.get('owner'), file.bytes)
      const [dataset] = await service.addData(id, [{ path: file.path, name: file.name }], {
        owner: c.get('owner'),
      })
      if (!dataset) throw new Error('the upload was not recorded')
      return c.json(datasetInfo(dataset), 201)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  // A data file as it was uploaded (or added), for its owner.
  app.get('/api/sessions/:id/files/:name', async (c) => {
    const { dataset, content } = await service.openDataset(
      await sessionOf(c),
      c.req.param('name'),
      c.get('owner'),
    )
    return dataFileResponse(dataset, content)
  })

  app.route(
    '/',
    cellRoutes({
      service,
      sessionOf: (c) => sessionOf(c as Context<Env>),
      callerOf: (c) => {
        const context = c as Context<Env>
        const user = callingUser(context.get('identity'))
        return { owner: context.get('owner'), ...(user ? { user } : {}) }
      },
    }),
  )

  app.route('/', frameRoutes({ service, ownerOf: (c) => (c as Context<Env>).get('owner') }))
  app.route('/', chartRoutes({ service, ownerOf: (c) => (c as Context<Env>).get('owner') }))
  app.route('/', restartRoutes({ service, ownerOf: (c) => (c as Context<Env>).get('owner') }))
  app.route('/', stopRoutes({ service, ownerOf: (c) => (c as Context<Env>).get('owner') }))

  app.post('/api/sessions/:id/ask', async (c) => {
    const id = await sessionOf(c)
    const { question, keepRunning } = parse(Question, await jsonBody(c))
    // Said with a status before the stream starts, not as an event inside it.
    if (service.closing) throw new ShuttingDownError()
    const owner = c.get('owner')
    const ended = (await quotas?.ask(limitsOf(c), owner)) ?? (() => {})
    // No room for its sandbox (the memory budget, nothing idle to pause): 503 before the stream.
    await service.admit(id, owner ?? null).catch((error: unknown) => {
      ended()
      throw error
    })
    const log = c.get('log')
    log?.info({ questionChars: question.length, keepRunning: Boolean(keepRunning) }, 'question')
    const controller = new AbortController()
    const disconnected = () => {
      if (!keepRunning) controller.abort(new Error('the client disconnected'))
    }
    c.req.raw.signal?.addEventListener('abort', disconnected)
    return streamSSE(c, async (stream) => {
      stream.onAbort(disconnected)
      const send = (event: SessionEvent | StreamOnlyEvent) =>
        stream.aborted
          ? Promise.resolve()
          : stream.writeSSE({ event: event.type, data: JSON.stringify(event) })
      try {
        const user = callingUser(c.get('identity'))
        const asking = service.ask(id, question, {
          owner,
          ...(user ? { user } : {}),
          signal: controller.signal,
        })
        for await (const event of asking) {
          if (event.type === 'run-start')
            log?.info({ runId: event.runId, queued: event.queued }, 'run started')
          if (event.type === 'done')
            log?.info({ steps: event.result.steps.length, usage: event.result.usage }, 'answered')
          await send(event)
        }
      } catch (thrown) {
        if (controller.signal.aborted) return
        // Stopped through POST /stop: said as such, with the reason the run is recorded with.
        if (StoppedError.isInstance(thrown)) {
          log?.info('question stopped')
          await send({ type: 'stopped', message: thrown.message })
          return
        }
        // The disk full as the system said it (ENOSPC) is said as a DiskFullError, as a status would be.
        const error = known(thrown)
        if (!AnalystError.isInstance(error)) logError(c, error)
        else log?.warn({ error: error.name, message: error.message }, 'question failed')
        const message = error instanceof Error ? error.message : String(error)
        const hint = AnalystError.isInstance(error) ? advice(error, 'http') : undefined
        await send({ type: 'failed', message, hint })
      } finally {
        ended()
      }
    })
  })

  // A run as it goes, from the store: for a client that reconnects (to this replica or another).
  app.get('/api/sessions/:id/runs/:runId/events', async (c) => {
    const id = await sessionOf(c)
    const runId = c.req.param('runId') as string
    const after = Number(c.req.header('last-event-id') ?? c.req.query('after') ?? 0)
    const owner = c.get('owner')
    const controller = new AbortController()
    const watching = service.watchRun(id, runId, {
      owner,
      afterStepId: Number.isFinite(after) ? after : 0,
      signal: controller.signal,
    })
    // A run that does not exist is a 404 before the stream starts.
    const first = await watching.next()
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => controller.abort(new Error('the client disconnected')))
      const urlFor = (name: string) => artifactUrl(id, name)
      try {
        for (let next = first; !next.done; next = await watching.next()) {
          const event = next.value
          const data: RunWatchStreamEvent =
            event.type === 'step'
              ? { type: 'step', runId, step: stepView(event.step, urlFor) }
              : { type: 'run-end', run: runView(event.run, urlFor) }
          await stream.writeSSE({
            event: data.type,
            data: JSON.stringify(data),
            ...(event.type === 'step' ? { id: String(event.step.id) } : {}),
          })
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error
      }
    })
  })

  app.get('/api/sessions/:id/artifacts/*', async (c) => {
    const id = await sessionOf(c)
    const path = new URL(c.req.url).pathname
    const encoded = path.slice(path.indexOf('/artifacts/') + '/artifacts/'.length)
    let name: string
    try {
      name = decodeURIComponent(encoded)
    } catch {
      throw new InvalidArgumentError(`${encoded} is not a URL-encoded artifact name`)
    }
    const { artifact, content } = await service.openArtifact(id, name, c.get('owner'))
    return artifactResponse(artifact, content)
  })

  app.get('/api/sessions/:id/export', async (c) => {
    const id = await sessionOf(c)
    const format = c.req.query('format') ?? ''
    if (!isExportFormat(format)) {
      throw new InvalidArgumentError(`Unknown export format "${format}"`, {
        hint: `Use format=${EXPORT_FORMATS.join(', format=')}`,
      })
    }
    const text = await service.export(id, format, c.get('owner'))
    const filename = `analyst-${id.slice(0, 8)}.${format}`
    return c.body(text, 200, {
      'content-type': EXPORT_TYPES[format],
      'content-disposition': `attachment; filename="${filename}"`,
      'content-security-policy': "default-src 'none'; img-src data:; style-src 'unsafe-inline'",
    })
  })

  // The web UI is one page (its views are in the URL's hash): the page at / and its files. Any
  // other path, /.well-known/* (where OAuth clients look for metadata) included, is no page.
  const dir = options.webDir
  const page = (file: string) => (c: Context<Env>) => {
    if (!dir || !existsSync(join(dir, 'index.html')))
      return fail(c, 404, 'The web UI is not built', 'Run npm run build.')
    const path = join(dir, file)
    const cache = path.startsWith(join(dir, 'assets/')) ? 'public, max-age=31536000, immutable' : 'no-cache'
    return new Response(Readable.toWeb(createReadStream(path)) as ReadableStream, {
      headers: {
        'content-type': mime.lookup(path) || 'application/octet-stream',
        'cache-control': cache,
        'x-content-type-options': 'nosniff',
      },
    })
  }
  app.get('/', page('index.html'))
  app.get('/index.html', page('index.html'))
  // A shared session's page (the UI reads the share's id from the path): for signed-in users, so a
  // signed-out browser is sent to sign in first and comes back to it.
  if (options.signin) app.get('/s/:shareId', options.signin.authorize, page('index.html'))
  const asset = (c: Context<Env>, next: () => Promise<void>) => {
    const name = c.req.param('name') as string
    const file = join('assets', name)
    // The build's own files only: a name that leads out of the folder is no file of it.
    const found =
      dir && basename(file) === name && statSync(join(dir, file), { throwIfNoEntry: false })?.isFile()
    return found ? page(file)(c) : next()
  }
  app.get('/assets/:name', asset)
  // The shared page's relative asset URLs, one folder down.
  if (options.signin) app.get('/s/assets/:name', asset)

  app.notFound((c) => {
    const path = new URL(c.req.url).pathname
    const hint = path.startsWith('/api/')
      ? 'See /openapi.json.'
      : `The web UI is at /, the API under /api/ (see /openapi.json)${options.mcp ? ', MCP at /mcp' : ''}.`
    return fail(c, 404, `No route ${c.req.method} ${path}`, hint)
  })

  return app
}
