/**
 * The HTTP API (Hono): sessions, uploads, questions answered as server-sent events, artifacts,
 * exports, and the web UI. Portless in tests: `createApp(...).request('/healthz')`.
 * @module
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createReadStream, existsSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join, normalize } from 'node:path'
import { Readable } from 'node:stream'
import { type Context, Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import mime from 'mime-types'
import { z } from 'zod'
import { AnalystError, InvalidArgumentError, RateLimitError, ShuttingDownError, statusOf } from '../errors.js'
import type { SessionEvent, SessionService } from '../session/index.js'
import { EXPORT_FORMATS, EXPORT_TYPES, isExportFormat } from '../store/export/index.js'
import { openApiDocument } from './openapi.js'
import type { ApiError, StreamOnlyEvent } from './types.js'
import { receiveFile } from './uploads.js'
import { datasetInfo, sessionDetail, sessionSummary } from './views.js'

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
  /** E2B-compatible API (src/server/e2b): served before Analyst's own routes. */
  e2b?: { handles(request: Request): boolean; fetch(request: Request): Response | Promise<Response> }
}

type Env = { Variables: { owner: string | null } }

/** A session belongs to the token that made it: stored as a hash, never the token itself. */
export function ownerOf(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 32)
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

function fail(c: Context, status: number, message: string, hint?: string) {
  const body: ApiError = { error: { message, ...(hint ? { hint } : {}) } }
  return c.json(body, status as 400)
}

const NewSession = z.object({ title: z.string().trim().min(1).max(200).optional() }).strict()
const Question = z
  .object({ question: z.string().trim().min(1, 'the question is empty').max(20_000) })
  .strict()

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text()
  if (!text.trim()) return {}
  try {
    return JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('The body is not valid JSON', {
      hint: 'Send a JSON object with Content-Type: application/json.',
    })
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : ''
    throw new InvalidArgumentError(`Invalid request: ${where}${issue?.message ?? 'bad body'}`)
  }
  return parsed.data
}

export function createApp(options: AppOptions): Hono<Env> {
  const { service } = options
  const app = new Hono<Env>()

  // One mapping from errors to statuses: each error knows its own (src/errors.ts).
  app.onError((error, c) => {
    if (AnalystError.isInstance(error)) {
      if (RateLimitError.isInstance(error) && (error as RateLimitError).retryAfterSeconds !== undefined)
        c.header('retry-after', String((error as RateLimitError).retryAfterSeconds))
      return fail(c, statusOf(error), error.message, error.hint)
    }
    console.error('analyst serve: internal error:', error)
    return fail(c, 500, 'Internal error', 'The server logged the details.')
  })

  // E2B-compatible API: requests that name a sandbox (E2b-Sandbox-Id) or hit its control plane.
  const e2b = options.e2b
  if (e2b) app.use('*', async (c, next) => (e2b.handles(c.req.raw) ? e2b.fetch(c.req.raw) : next()))

  app.get('/healthz', (c) => c.json({ ok: true }))
  app.get('/openapi.json', (c) => c.json(openApiDocument))

  // Auth: every /api request carries one of the tokens (downloads may use ?token=, for <img> and links).
  app.use('/api/*', async (c, next) => {
    if (options.tokens.length === 0) {
      c.set('owner', null)
      return next()
    }
    const header = c.req.header('authorization')
    const given = header?.startsWith('Bearer ')
      ? header.slice(7).trim()
      : c.req.method === 'GET'
        ? c.req.query('token')
        : undefined
    const token = given ? options.tokens.find((t) => sameToken(t, given)) : undefined
    if (!token)
      return fail(
        c,
        401,
        given ? 'The token is not valid' : 'A token is required',
        'Send Authorization: Bearer <token> (one of ANALYST_TOKEN).',
      )
    c.set('owner', ownerOf(token))
    return next()
  })

  /** The session the route names, if the caller may see it (else 404). */
  const sessionOf = async (c: Context<Env>) => {
    const session = await service.getSession(c.req.param('id') as string, c.get('owner'))
    return session.id
  }

  app.post('/api/sessions', async (c) => {
    const body = parse(NewSession, await jsonBody(c))
    const created = await service.createSession({ title: body.title, owner: c.get('owner') })
    return c.json({ id: created.id }, 201)
  })

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
    try {
      const file = await receiveFile(headers, c.req.raw.body, dir, options.maxUploadBytes ?? 1024 ** 3)
      const [dataset] = await service.addData(id, [{ path: file.path, name: file.name }], {
        owner: c.get('owner'),
      })
      if (!dataset) throw new Error('the upload was not recorded')
      return c.json(datasetInfo(dataset), 201)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  app.post('/api/sessions/:id/ask', async (c) => {
    const id = await sessionOf(c)
    const { question } = parse(Question, await jsonBody(c))
    // Said with a status before the stream starts, not as an event inside it.
    if (service.closing) throw new ShuttingDownError()
    const owner = c.get('owner')
    const controller = new AbortController()
    c.req.raw.signal?.addEventListener('abort', () => controller.abort(new Error('the client disconnected')))
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => controller.abort(new Error('the client disconnected')))
      const send = (event: SessionEvent | StreamOnlyEvent) =>
        stream.aborted
          ? Promise.resolve()
          : stream.writeSSE({ event: event.type, data: JSON.stringify(event) })
      try {
        for await (const event of service.ask(id, question, { owner, signal: controller.signal })) {
          await send(event)
        }
      } catch (error) {
        if (controller.signal.aborted) return
        if (!AnalystError.isInstance(error)) console.error('analyst serve: internal error:', error)
        const e = error as { message?: string; hint?: string }
        await send({ type: 'failed', message: e.message ?? String(error), hint: e.hint })
      }
    })
  })

  app.get('/api/sessions/:id/artifacts/*', async (c) => {
    const id = await sessionOf(c)
    const path = new URL(c.req.url).pathname
    const name = decodeURIComponent(path.slice(path.indexOf('/artifacts/') + '/artifacts/'.length))
    const { artifact, content } = await service.openArtifact(id, name, c.get('owner'))
    // What model-written code saved is untrusted: never run it in this origin.
    const headers: Record<string, string> = {
      'content-type': artifact.mimeType,
      'content-length': String(artifact.size),
      'content-security-policy': "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'",
      'x-content-type-options': 'nosniff',
    }
    if (!artifact.mimeType.startsWith('image/') || artifact.mimeType === 'image/svg+xml') {
      headers['content-disposition'] =
        `attachment; filename*=UTF-8''${encodeURIComponent(name.split('/').pop() ?? name)}`
    }
    return new Response(Readable.toWeb(content) as ReadableStream, { headers })
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

  app.all('/api/*', (c) =>
    fail(c, 404, `No route ${c.req.method} ${new URL(c.req.url).pathname}`, 'See /openapi.json.'),
  )

  // The web UI: its files, and index.html for every other page.
  app.get('*', (c) => {
    const dir = options.webDir
    if (!dir || !existsSync(join(dir, 'index.html'))) {
      return c.text('The web UI is not built: run npm run build.', 404)
    }
    const requested = normalize(decodeURIComponent(new URL(c.req.url).pathname)).replace(/^(\.\.[/\\])+/, '')
    let path = join(dir, requested)
    if (!path.startsWith(dir) || !existsSync(path) || !statSync(path).isFile()) path = join(dir, 'index.html')
    const type = mime.lookup(path) || 'application/octet-stream'
    const cache = path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache'
    return new Response(Readable.toWeb(createReadStream(path)) as ReadableStream, {
      headers: { 'content-type': type, 'cache-control': cache, 'x-content-type-options': 'nosniff' },
    })
  })

  return app
}
