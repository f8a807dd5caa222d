/**
 * A DataFrame result as the session's kernel holds it, for the grid: `GET
 * /api/sessions/:id/results/:rid/rows?offset&limit&sort&filter&search` (a page;
 * `format=csv|xlsx|parquet` downloads the whole selection, streamed as it is made) and
 * `.../columns` (each column's statistics). The owner's only, as every session route; a table the
 * kernel no longer holds is a 410 that says to run its step again.
 *
 * The kernel runs one thing at a time, so a page asked for while a cell runs waits for it (and
 * for a part of a download being made, and for a kernel that starts and replays the session's
 * cells, after which a replayed step's table answers by the id it was recorded with). Such
 * requests do not pile up: each grid (a table's pages, or its statistics) of each page that asks
 * (the client its `Analyst-Client` header names: two tabs keep theirs) has one waiting request, a
 * newer one replaces it (409), and one whose browser stopped waiting is dropped before it reaches
 * the kernel. A client that accepts `text/event-stream` is told at once that its request waits
 * for a running cell (started there, in another tab, by MCP), the kernel starting or a download:
 * `waiting` (its reason and message; again each time what holds the kernel changes, `answering`
 * once nothing does), then `answer` (the JSON it would have had) or `failed` (status, message,
 * hint), so it can say so while it waits.
 *
 * "Waits" is what this replica's kernel does: a cell runs in it now. A question whose model is
 * still thinking holds no kernel, and a run the store still marks running (its replica died, its
 * lease lapsed) holds none here either. A run another replica answers under a live lease runs in
 * that replica's kernel, not in this one: a request here does not wait for it (and once the
 * sweep sees the other replica's lease, this replica lets its stale kernel go: its tables are a 410).
 * @module
 */
import { type Context, Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import { AnalystError, ConflictError, InvalidArgumentError, known, statusOf } from '../errors.js'
import { advice } from '../fixes.js'
import type { Sandbox } from '../sandbox/index.js'
import {
  type FrameFormat,
  type FrameSelection,
  frameFile,
  framePage,
  frameStats,
  kernelHeldBy,
  kernelVariables,
} from '../session/frames.js'
import type { SessionService } from '../session/index.js'

const TYPES: Record<FrameFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  parquet: 'application/vnd.apache.parquet',
}

const isFormat = (format: string | undefined): format is FrameFormat =>
  format !== undefined && Object.hasOwn(TYPES, format)

/** The parts as a response body, each sent as soon as it is made (pulled: one part in memory). */
function streamOf(parts: AsyncGenerator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async pull(controller) {
      try {
        const next = await parts.next()
        if (next.done) controller.close()
        else controller.enqueue(next.value)
      } catch (error) {
        controller.error(error)
      }
    },
    async cancel() {
      await parts.return(undefined)
    },
  })
}

function selectionOf(c: Context): FrameSelection {
  const pick = (name: string) => {
    const value = c.req.query(name)
    if (value !== undefined && value.length > 10_000) throw new InvalidArgumentError(`${name} is too long`)
    return value || undefined
  }
  return { sort: pick('sort'), filter: pick('filter'), search: pick('search') }
}

/** The header that names the page (a browser tab) a grid's request comes from. */
export const CLIENT_HEADER = 'analyst-client'
const CLIENT = /^[A-Za-z0-9_-]{1,64}$/

/** The grid a request is for: its session, table and kind, and the client that shows it. */
function gridKey(c: Context, kind: string): string {
  const client = c.req.header(CLIENT_HEADER) ?? ''
  if (client && !CLIENT.test(client))
    throw new InvalidArgumentError(
      `The ${CLIENT_HEADER} header must be 1 to 64 letters, digits, "-" or "_"`,
      {
        hint: 'Leave it out, or send an id of your own for each page that shows the table.',
      },
    )
  return [c.req.param('id'), c.req.param('rid'), kind, client].join('\u0000')
}

function integer(c: Context, name: string, fallback: number, max: number): number {
  const text = c.req.query(name)
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new InvalidArgumentError(`${name} must be a whole number from 0 to ${max}`)
  return value
}

/** The request each grid waits on, by session, table and kind. */
const waiting = new Map<string, AbortController>()

/**
 * `work` with a signal that aborts when a newer request of the same grid comes, or when the
 * browser goes: an aborted request still queued behind a running cell never reaches the kernel.
 */
export async function latestOf<T>(
  key: string,
  request: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  waiting.get(key)?.abort(
    new ConflictError('A newer request of this table replaced this one', {
      hint: 'The grid shows the newest page asked for.',
    }),
  )
  const controller = new AbortController()
  waiting.set(key, controller)
  const gone = () => controller.abort(new ConflictError('The browser stopped waiting for this table'))
  if (request.aborted) gone()
  else request.addEventListener('abort', gone, { once: true })
  try {
    return await work(controller.signal)
  } finally {
    request.removeEventListener('abort', gone)
    if (waiting.get(key) === controller) waiting.delete(key)
  }
}

/** What a grid's request waits for, as the page says it: the kernel starting, a cell, a download. */
export interface GridWait {
  /** `answering`: nothing holds the kernel now; the answer is being read. */
  reason: 'starting' | 'cell' | 'download' | 'answering'
  message: string
}

const STARTING: GridWait = { reason: 'starting', message: "Rebuilding the session's state…" }
const ANSWERING: GridWait = { reason: 'answering', message: 'Reading the table…' }

/** How often a request that waits looks again at what holds the kernel. */
const FOLLOW_MS = 150

function waitingFor(sandbox: Sandbox | undefined, table: string): GridWait | undefined {
  if (!sandbox) return undefined
  const held = kernelHeldBy(sandbox)
  if (!held) return undefined
  if ('cell' in held) return { reason: 'cell', message: 'A cell is running in this session' }
  return {
    reason: 'download',
    message:
      held.download === table
        ? 'Waiting for the download of this table…'
        : "Waiting for another table's download…",
  }
}

/**
 * The answer of a grid's request: JSON, or, for a client that accepts an event stream and while
 * it waits (the session's kernel starting and its cells replayed, a cell or a download holding
 * it), `waiting` (why) at once and again each time the reason changes until the answer (a cell
 * may start once the kernel has started, or after a download's part: the request then waits for
 * it), then the answer or why there is none.
 */
async function gridAnswer(
  c: Context,
  opened: { sandbox: Promise<Sandbox | undefined>; starting: boolean },
  kind: string,
  work: (sandbox: Sandbox | undefined, signal: AbortSignal) => Promise<unknown>,
): Promise<Response> {
  const key = gridKey(c, kind)
  const table = c.req.param('rid') as string
  const wantsEvents = c.req.header('accept')?.includes('text/event-stream')
  const answer = async () => {
    const sandbox = await opened.sandbox
    return latestOf(key, c.req.raw.signal, (signal) => work(sandbox, signal))
  }
  if (!wantsEvents) return c.json(await answer())
  const now = opened.starting ? undefined : await opened.sandbox
  const first = opened.starting ? STARTING : waitingFor(now, table)
  if (!first) return c.json(await latestOf(key, c.req.raw.signal, (signal) => work(now, signal)))
  return streamSSE(c, async (stream) => {
    // Events in order: a change seen by the timer is written after the one before it.
    let writing = Promise.resolve()
    const send = (event: string, data: unknown) => {
      writing = writing
        .then(() => stream.writeSSE({ event, data: JSON.stringify(data) }))
        .catch(() => undefined)
      return writing
    }
    let said: GridWait | undefined
    // A wait is said again only when it changes.
    const say = (wait: GridWait) => {
      if (wait.reason === said?.reason && wait.message === said.message) return writing
      said = wait
      return send('waiting', wait)
    }
    await say(first)
    let follow: ReturnType<typeof setInterval> | undefined
    try {
      const sandbox = await opened.sandbox
      const look = () => void say(waitingFor(sandbox, table) ?? ANSWERING)
      look()
      follow = setInterval(look, FOLLOW_MS)
      const value = await latestOf(key, c.req.raw.signal, (signal) => work(sandbox, signal))
      clearInterval(follow)
      await send('answer', value)
    } catch (thrown) {
      clearInterval(follow)
      const error = known(thrown)
      const named = AnalystError.isInstance(error)
      if (!named) console.error('analyst serve: internal error:', error)
      await send('failed', {
        status: statusOf(error),
        message: named ? error.message : 'Internal error',
        ...(named && advice(error, 'http') ? { hint: advice(error, 'http') } : {}),
      })
    }
  })
}

export function frameRoutes(options: {
  service: SessionService
  ownerOf: (c: Context) => string | null
}): Hono {
  const { service } = options
  const app = new Hono()
  const sandboxOf = (c: Context) => service.sandboxOf(c.req.param('id') as string, options.ownerOf(c))

  app.get('/api/sessions/:id/results/:rid/rows', async (c) => {
    const opened = await sandboxOf(c)
    const id = c.req.param('rid') as string
    const selection = selectionOf(c)
    const format = c.req.query('format')
    if (isFormat(format)) {
      const parts = await frameFile(await opened.sandbox, id, selection, format)
      return new Response(streamOf(parts), {
        headers: {
          'content-type': TYPES[format],
          'content-disposition': `attachment; filename="table.${format}"`,
        },
      })
    }
    if (format !== undefined)
      throw new InvalidArgumentError(`Unknown format "${format}"`, {
        hint: 'Use format=csv, format=xlsx or format=parquet',
      })
    const offset = integer(c, 'offset', 0, Number.MAX_SAFE_INTEGER)
    const limit = integer(c, 'limit', 50, 1000)
    return gridAnswer(c, opened, 'rows', (sandbox, signal) =>
      framePage(sandbox, id, { ...selection, offset, limit }, signal),
    )
  })

  // What the kernel holds now (an empty list when the session's kernel is not running).
  app.get('/api/sessions/:id/variables', async (c) =>
    c.json(await kernelVariables(await (await sandboxOf(c)).sandbox)),
  )

  app.get('/api/sessions/:id/results/:rid/columns', async (c) => {
    const opened = await sandboxOf(c)
    const selection = selectionOf(c)
    return gridAnswer(c, opened, 'columns', (sandbox, signal) =>
      frameStats(sandbox, c.req.param('rid') as string, selection, signal),
    )
  })
  return app
}
