/**
 * The HTTP API (Hono): sessions, uploads, questions answered as server-sent events, artifacts,
 * exports, and the web UI. Portless in tests: `createApp(...).request('/healthz')`.
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { createReadStream, existsSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join, normalize } from 'node:path'
import { Readable } from 'node:stream'
import { type Context, Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import mime from 'mime-types'
import { z } from 'zod'
import type { AgentEvent } from '../agent/index.js'
import { profileFiles } from '../data/index.js'
import { AnalystError } from '../errors.js'
import { EXPORT_FORMATS, EXPORT_TYPES, type ExportFormat, exportSession } from '../store/export/index.js'
import type { Store } from '../store/store.js'
import { openApiDocument } from './openapi.js'
import type { SessionManager } from './sessions.js'
import type { ApiError, DatasetInfo, StreamOnlyEvent } from './types.js'
import { receiveFile, UploadError } from './uploads.js'

export interface AppOptions {
  store: Store
  sessions: SessionManager
  /** Bearer tokens; empty: no auth (loopback only). */
  tokens: string[]
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

function fail(
  c: Context,
  status: 400 | 401 | 404 | 409 | 413 | 415 | 500 | 503,
  message: string,
  hint?: string,
) {
  const body: ApiError = { error: { message, ...(hint ? { hint } : {}) } }
  return c.json(body, status)
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
    throw new AnalystError('The body is not valid JSON', {
      hint: 'Send a JSON object with Content-Type: application/json.',
    })
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : ''
    throw new AnalystError(`Invalid request: ${where}${issue?.message ?? 'bad body'}`)
  }
  return parsed.data
}

export function createApp(options: AppOptions): Hono<Env> {
  const { store, sessions } = options
  const app = new Hono<Env>()

  app.onError((error, c) => {
    if (error instanceof UploadError) return fail(c, error.status, error.message, error.hint)
    if (AnalystError.isInstance(error)) return fail(c, 400, error.message, error.hint)
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

  const session = (c: Context<Env>) => {
    const id = c.req.param('id') as string
    return store.summary(id, c.get('owner')) ? id : undefined
  }
  const artifactUrl = (id: string) => (name: string) =>
    `/api/sessions/${encodeURIComponent(id)}/artifacts/${name.split('/').map(encodeURIComponent).join('/')}`

  app.post('/api/sessions', async (c) => {
    const body = parse(NewSession, await jsonBody(c))
    const created = store.createSession({ title: body.title ?? 'New session', owner: c.get('owner') })
    return c.json({ id: created.id }, 201)
  })

  app.get('/api/sessions', (c) => c.json(store.listSessions({ owner: c.get('owner') })))

  app.get('/api/sessions/:id', (c) => {
    const id = session(c)
    if (!id) return fail(c, 404, 'No such session')
    return c.json(store.detail(id, artifactUrl(id), c.get('owner')))
  })

  app.delete('/api/sessions/:id', async (c) => {
    const id = session(c)
    if (!id) return fail(c, 404, 'No such session')
    await sessions.close(id)
    store.deleteSession(id)
    await rm(join(store.home, 'uploads', id), { recursive: true, force: true })
    return c.body(null, 204)
  })

  app.post('/api/sessions/:id/files', async (c) => {
    const id = session(c)
    if (!id) return fail(c, 404, 'No such session')
    const headers = Object.fromEntries(c.req.raw.headers.entries())
    const file = await receiveFile(
      headers,
      c.req.raw.body,
      join(store.home, 'uploads', id),
      options.maxUploadBytes ?? 1024 ** 3,
    )
    const [profile] = await profileFiles([file.path])
    if (!profile || profile.error) {
      await rm(file.path, { force: true })
      return fail(c, 400, `${file.name} cannot be read as data: ${profile?.error ?? 'unknown format'}`)
    }
    store.addDataset(id, { name: profile.name, sourcePath: file.path, bytes: file.bytes, profile })
    await sessions.addData(id, file.path, profile.name)
    const info: DatasetInfo = { name: profile.name, bytes: file.bytes, profile }
    return c.json(info, 201)
  })

  app.post('/api/sessions/:id/ask', async (c) => {
    const id = session(c)
    if (!id) return fail(c, 404, 'No such session')
    const { question } = parse(Question, await jsonBody(c))
    if (store.summary(id)?.title === 'New session') store.updateSession(id, { title: question.slice(0, 120) })
    const controller = new AbortController()
    c.req.raw.signal?.addEventListener('abort', () => controller.abort(new Error('the client disconnected')))
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => controller.abort(new Error('the client disconnected')))
      const send = (event: AgentEvent | StreamOnlyEvent) =>
        stream.aborted
          ? Promise.resolve()
          : stream.writeSSE({ event: event.type, data: JSON.stringify(event) })
      try {
        await sessions
          .ask(id, question, (event) => (event.type === 'done' ? undefined : send(event)), {
            signal: controller.signal,
            onPreparing: () =>
              void send({
                type: 'preparing',
                message: 'Starting the sandbox for this session…',
              } satisfies StreamOnlyEvent),
            onStart: (runId, queued) =>
              void send({ type: 'run-start', runId, queued } satisfies StreamOnlyEvent),
          })
          .then((result) => send({ type: 'done', result } satisfies StreamOnlyEvent))
      } catch (error) {
        if (controller.signal.aborted) return
        const e = error as { message?: string; hint?: string }
        await send({
          type: 'failed',
          message: e.message ?? String(error),
          hint: e.hint,
        } satisfies StreamOnlyEvent)
      }
    })
  })

  app.get('/api/sessions/:id/artifacts/*', (c) => {
    const id = session(c)
    if (!id) return fail(c, 404, 'No such session')
    const path = new URL(c.req.url).pathname
    const name = decodeURIComponent(path.slice(path.indexOf('/artifacts/') + '/artifacts/'.length))
    const artifact = store.artifact(id, name)
    if (!artifact || !existsSync(artifact.path)) return fail(c, 404, `No file ${name} in this session`)
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
    return new Response(Readable.toWeb(createReadStream(artifact.path)) as ReadableStream, { headers })
  })

  app.get('/api/sessions/:id/export', (c) => {
    const id = session(c)
    if (!id) return fail(c, 404, 'No such session')
    const format = c.req.query('format') ?? ''
    if (!EXPORT_FORMATS.includes(format as ExportFormat)) {
      return fail(
        c,
        400,
        `Unknown export format "${format}"`,
        `Use format=${EXPORT_FORMATS.join(', format=')}`,
      )
    }
    const text = exportSession(store, id, format as ExportFormat, c.get('owner')) as string
    const filename = `analyst-${id.slice(0, 8)}.${format}`
    return c.body(text, 200, {
      'content-type': EXPORT_TYPES[format as ExportFormat],
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
