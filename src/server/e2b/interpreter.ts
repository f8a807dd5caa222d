/**
 * The code interpreter of an E2B sandbox (port 49999): `/execute` answered as NDJSON, and contexts.
 * The formats follow E2B's template/server (api/models/*.py, stream.py). Cells that run without
 * error are kept for replay after a pause (pause.ts).
 * @module
 */
import { Hono, type Context as HonoContext } from 'hono'
import { z } from 'zod'
import { AnalystError, statusOf } from '../../errors.js'
import { executionFix, phraseFix } from '../../fixes.js'
import { LANGUAGES, type Language, type MimeBundle, normalizeLanguage } from '../../sandbox/index.js'
import { KNOWN_MIME } from '../../sandbox/messaging.js'
import { withReason } from '../reason-phrase.js'
import { readText } from '../request-body.js'
import { cutOffWhen } from './cutoff.js'
import type { Registry, SandboxEntry, ServedContext } from './registry.js'

export type SandboxEnv = { Bindings: { entry: SandboxEntry } }

const HOME = '/home/user'

const KEEPALIVE_MS = 5000
/** How long a cell's first lines may wait, so that a quick cell is answered in one write. */
const BUFFER_MS = 20
/** The cell's own limit is the client's: it disconnects at its timeoutMs, which interrupts the cell. */
const SERVER_CELL_LIMIT_MS = 24 * 3600 * 1000

const FIELDS: Record<string, string> = KNOWN_MIME
/** The largest /execute body: a cell with data pasted in, not a file (files.write takes those). */
const MAX_CELL_BYTES = 16 * 1024 ** 2

/**
 * One result as E2B's server sends it. Like template/server/api/models/result.py, `text` loses one
 * pair of enclosing quotes (`'/home/user'` → `/home/user`): code written for E2B relies on it.
 */
export function e2bResult(bundle: MimeBundle, isMainResult: boolean): Record<string, unknown> {
  const result: Record<string, unknown> = { type: 'result' }
  const extra: Record<string, unknown> = {}
  for (const [mime, value] of Object.entries(bundle)) {
    const field = FIELDS[mime]
    if (field) result[field] = value
    else extra[mime] = value
  }
  const text = result.text
  if (typeof text === 'string' && text.length >= 2 && /^(['"]).*\1$/s.test(text)) {
    result.text = text.slice(1, -1)
  }
  result.extra = extra
  result.is_main_result = isMainResult
  return result
}

/**
 * One NDJSON line, ASCII only: the SDK decodes each network chunk with a fresh TextDecoder, which
 * garbles a character split across two chunks; escaped, none can be split.
 */
export function ndjsonLine(message: unknown): string {
  return `${JSON.stringify(message).replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`
}

const Execute = z.object({
  code: z.string(),
  context_id: z.string().nullish(),
  language: z.string().nullish(),
  // A cell's env reaches os.environ: no NUL anywhere, no = in a name.
  env_vars: z
    .record(
      z.string().regex(/^[^=\0]+$/, 'an environment variable name (no = or NUL)'),
      z.string().regex(/^[^\0]*$/, 'no NUL byte'),
    )
    .nullish(),
})

const NewContext = z.object({ language: z.string().nullish(), cwd: z.string().nullish() })

async function json<T>(c: HonoContext, schema: z.ZodType<T>): Promise<T> {
  let value: unknown
  try {
    value = JSON.parse((await readText(c.req.raw, MAX_CELL_BYTES)) || '{}')
  } catch {
    throw new AnalystError('The body is not valid JSON')
  }
  const parsed = schema.safeParse(value)
  if (!parsed.success) throw new AnalystError(`Invalid request: ${parsed.error.issues[0]?.message}`)
  return parsed.data
}

/**
 * The sandbox's default contexts, one per language, as E2B's server has them (it lists Python's
 * and JavaScript's): `default` is Python's, `default-<language>` the others', each made in the
 * sandbox at its first cell.
 */
const DEFAULT_CONTEXT = { id: 'default', language: 'python', cwd: HOME } as const
const LISTED_DEFAULTS: Array<{ id: string; language: Language; cwd: string }> = [
  DEFAULT_CONTEXT,
  { id: 'default-javascript', language: 'javascript', cwd: HOME },
]

function defaultId(language: Language): string {
  return language === 'python' ? 'default' : `default-${language}`
}

/** A cell's error as an E2B client reads it: with the setting that fixes it, in its words (memoryMB). */
function withFix<E extends { name: string; value: string }>(error: E): E {
  const fix = phraseFix(executionFix(error), 'http')
  if (!fix) return error
  return { ...error, value: `${error.value.replace(/\.?\s*$/, '.')} ${fix}` }
}

/** A context by the client's id: one made through the API, or a default one (sandboxId `default`). */
function contextOf(entry: SandboxEntry, id: string): ServedContext | undefined {
  const made = entry.contexts.get(id)
  if (made) return made
  const language =
    id === 'default' ? 'python' : id.startsWith('default-') ? id.slice('default-'.length) : undefined
  if (!language || !(LANGUAGES as readonly string[]).includes(language)) return undefined
  return { id, language: language as Language, cwd: HOME, sandboxId: 'default' }
}

/** The client's language word, or a 400 naming the languages there are. */
function languageOf(word: string | null | undefined): Language {
  try {
    return normalizeLanguage(word)
  } catch (error) {
    throw new AnalystError((error as Error).message)
  }
}

export function interpreterRoutes(registry: Registry) {
  const app = new Hono<SandboxEnv>()
  // Plain text errors, as E2B's server sends them (the SDK reads 404 and 502 bodies, and only the
  // status line of the others: a server's fault says its message there too).
  app.onError((error, c) => {
    const status = statusOf(error)
    const response = c.text(error.message, status as 400)
    return status >= 500 ? withReason(response, error.message) : response
  })

  app.get('/health', (c) => c.text('OK'))

  app.post('/execute', async (c) => {
    const entry = c.env.entry
    const { sandbox, life } = entry
    const request = await json(c, Execute)
    if (request.context_id && request.language) {
      return c.text('Only one of context_id or language can be provided', 400)
    }
    const context = contextOf(entry, request.context_id || defaultId(languageOf(request.language)))
    if (!context) return c.text(`Context ${request.context_id} not found`, 404)
    const controller = new AbortController()
    const stop = () => controller.abort(new Error('the client disconnected'))
    // Lines wait here until the response streams; a cell that ends first goes out in one write.
    const buffered: string[] = []
    let sink: ((line: string) => void) | undefined
    const send = (message: unknown) => {
      if (controller.signal.aborted) return
      const line = ndjsonLine(message)
      if (sink) sink(line)
      else buffered.push(line)
    }
    const envs = request.env_vars ?? undefined
    const finished = sandbox
      .runCode(request.code, {
        ...(context.sandboxId === 'default'
          ? { language: context.language }
          : { context: { id: context.sandboxId, language: context.language, cwd: context.cwd } }),
        envs,
        timeoutMs: SERVER_CELL_LIMIT_MS,
        signal: controller.signal,
        onStdout: (message) => send({ type: 'stdout', text: message.line, timestamp: isoNow() }),
        onStderr: (message) => send({ type: 'stderr', text: message.line, timestamp: isoNow() }),
        onResult: (result) => send(e2bResult(result.raw, result.isMainResult)),
        onError: (error) => send({ type: 'error', ...withFix(error.toJSON()) }),
      })
      .then((execution) => {
        if (!execution.error) {
          const language = context.sandboxId === 'default' ? context.language : undefined
          registry.record(entry, { contextId: context.id, code: request.code, envs, language })
        }
        if (execution.executionCount !== undefined)
          send({ type: 'number_of_executions', execution_count: execution.executionCount })
      })
      .catch((error: unknown) => {
        const e = error as Error
        send({ type: 'error', name: e.name ?? 'Error', value: e.message ?? String(error), traceback: '' })
      })
      .finally(() => {
        send({ type: 'end_of_execution' })
      })
    registry.working(entry, finished)
    const headers = { 'content-type': 'application/x-ndjson' }
    // A timer cleared as the cell ends: one left to run out would outlive most quick cells.
    let wait: NodeJS.Timeout | undefined
    const quick = await Promise.race([
      finished.then(() => true),
      new Promise<false>((resolve) => {
        wait = setTimeout(resolve, BUFFER_MS, false)
      }),
    ])
    clearTimeout(wait)
    // A sandbox killed or paused while the cell ran: the stream is cut off, with no last line.
    if (quick && !life.signal.aborted) return new Response(buffered.join(''), { headers })
    // A client gone before this (its request's signal says so from its start) stops the cell now;
    // a quick cell's answer needs no signal at all (an AbortController and its listener).
    const gone = c.req.raw.signal
    if (gone.aborted) stop()
    else gone.addEventListener('abort', stop, { once: true })
    void finished.finally(() => gone.removeEventListener('abort', stop))
    const encoder = new TextEncoder()
    let open = true
    const stream = new ReadableStream<Uint8Array>({
      start(out) {
        for (const line of buffered.splice(0)) out.enqueue(encoder.encode(line))
        sink = (line) => {
          if (open) out.enqueue(encoder.encode(line))
        }
        // Only a streamed answer has keepalives: a quick cell's costs no timer. Cleared at the
        // cell's end, which may have come already (between the wait and this start).
        const keepalive = setInterval(() => send({ type: 'keepalive' }), KEEPALIVE_MS)
        void finished.then(() => {
          clearInterval(keepalive)
          if (open && !controller.signal.aborted && !life.signal.aborted) out.close()
          open = false
        })
      },
      cancel: () => {
        open = false
        stop()
      },
    })
    return cutOffWhen(life.signal, new Response(stream, { headers }))
  })

  app.post('/contexts', async (c) => {
    const entry = c.env.entry
    const request = await json(c, NewContext)
    const language = languageOf(request.language)
    const made = await entry.sandbox.createCodeContext({ cwd: request.cwd ?? undefined, language })
    const context: ServedContext = { id: made.id, language, cwd: made.cwd, sandboxId: made.id }
    entry.contexts.set(context.id, context)
    return c.json(view(context))
  })

  app.get('/contexts', (c) => c.json([...LISTED_DEFAULTS, ...[...c.env.entry.contexts.values()].map(view)]))

  app.post('/contexts/:id/restart', async (c) => {
    const entry = c.env.entry
    const context = contextOf(entry, c.req.param('id'))
    if (!context) return c.text(`Context ${c.req.param('id')} not found`, 404)
    // A default context's id in the sandbox is the client's (`default`, `default-r`).
    await entry.sandbox.restartCodeContext(context.sandboxId === 'default' ? context.id : context.sandboxId)
    registry.forgetCells(entry, context.id)
    return c.body(null, 204)
  })

  app.delete('/contexts/:id', async (c) => {
    const entry = c.env.entry
    const context = entry.contexts.get(c.req.param('id'))
    if (!context) return c.text(`Context ${c.req.param('id')} not found`, 404)
    await entry.sandbox.removeCodeContext(context.sandboxId)
    entry.contexts.delete(context.id)
    registry.forgetCells(entry, context.id)
    return c.body(null, 204)
  })

  app.all('*', (c) => c.text(`No route ${c.req.method} ${new URL(c.req.url).pathname}`, 404))
  return app
}

/** A context as the client sees it: its own id, always. */
function view({ id, language, cwd }: ServedContext) {
  return { id, language, cwd }
}

function isoNow(): string {
  return new Date().toISOString()
}
