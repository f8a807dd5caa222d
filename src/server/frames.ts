/**
 * A DataFrame result as the session's kernel holds it, for the grid: `GET
 * /api/sessions/:id/results/:rid/rows?offset&limit&sort&filter&search` (a page;
 * `format=csv|xlsx|parquet` downloads the whole selection, streamed as it is made) and
 * `.../columns` (each column's statistics). The owner's only, as every session route; a table the
 * kernel no longer holds is a 410 that says to run its step again.
 * @module
 */
import { type Context, Hono } from 'hono'
import { InvalidArgumentError } from '../errors.js'
import {
  type FrameFormat,
  type FrameSelection,
  frameFile,
  framePage,
  frameStats,
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

function integer(c: Context, name: string, fallback: number, max: number): number {
  const text = c.req.query(name)
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new InvalidArgumentError(`${name} must be a whole number from 0 to ${max}`)
  return value
}

export function frameRoutes(options: {
  service: SessionService
  ownerOf: (c: Context) => string | null
}): Hono {
  const { service } = options
  const app = new Hono()
  const sandboxOf = (c: Context) => service.openSandbox(c.req.param('id') as string, options.ownerOf(c))

  app.get('/api/sessions/:id/results/:rid/rows', async (c) => {
    const sandbox = await sandboxOf(c)
    const id = c.req.param('rid') as string
    const selection = selectionOf(c)
    const format = c.req.query('format')
    if (isFormat(format)) {
      const parts = await frameFile(sandbox, id, selection, format)
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
    return c.json(await framePage(sandbox, id, { ...selection, offset, limit }))
  })

  // What the kernel holds now (an empty list when the session's kernel is not running).
  app.get('/api/sessions/:id/variables', async (c) => c.json(await kernelVariables(await sandboxOf(c))))

  app.get('/api/sessions/:id/results/:rid/columns', async (c) =>
    c.json(await frameStats(await sandboxOf(c), c.req.param('rid') as string, selectionOf(c))),
  )
  return app
}
