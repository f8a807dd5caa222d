/**
 * A person's cells (the web UI's Run, Run below and Code mode): `POST /api/sessions/:id/cells`
 * runs one cell through the session service's `runCell`, the same path as an MCP client's cell:
 * the guard, then the session's kernel, in turn with its questions, recorded as a run of its own
 * under `PERSON_CELL` and seen by the model at the next question. A client that goes away (Stop)
 * interrupts the cell; the kernel's state is kept.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import type { SessionService } from '../session/index.js'
import { jsonBody, parse } from './request-body.js'
import { type CellView, PERSON_CELL } from './types.js'

const Cell = z
  .object({
    code: z.string().min(1, 'the code is empty').max(200_000),
    /** The step it was edited from, for the history's reader (no effect on what runs). */
    from: z.number().int().positive().optional(),
  })
  .strict()

export interface CellRoutesOptions {
  service: SessionService
  /** The session the route names, if the caller may see it (else it throws the 404). */
  sessionOf: (c: Context) => Promise<string>
  /** Who is calling, as the service takes it. */
  callerOf: (c: Context) => { owner: string | null; user?: { groups: string[]; email?: string } }
}

export function cellRoutes(options: CellRoutesOptions): Hono {
  const { service } = options
  const app = new Hono()
  app.post('/api/sessions/:id/cells', async (c) => {
    const id = await options.sessionOf(c)
    const { code } = parse(Cell, await jsonBody(c))
    const { owner, user } = options.callerOf(c)
    const controller = new AbortController()
    c.req.raw.signal?.addEventListener('abort', () =>
      controller.abort(new Error('the client stopped the cell')),
    )
    // Named apart from the model's images, so that two cells' charts never share a name.
    const prefix = `cell-${randomUUID().slice(0, 8)}`
    const result = await service
      .runCell(id, code, {
        owner,
        ...(user ? { user } : {}),
        signal: controller.signal,
        label: PERSON_CELL,
        nameImage: (index) => `${prefix}-chart-${index}.png`,
      })
      .catch((error: unknown) => {
        // Stopped: recorded as interrupted, and nobody is there to read an answer.
        if (controller.signal.aborted) return undefined
        throw error
      })
    if (!result) return new Response(null, { status: 499 })
    const view: CellView = {
      runId: result.runId,
      violations: result.violations,
      ...(result.execution?.error
        ? { error: { name: result.execution.error.name, value: result.execution.error.value } }
        : {}),
    }
    return c.json(view, 200)
  })
  return app
}
