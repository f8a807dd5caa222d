/**
 * `POST /api/sessions/:id/stop`: a person stops a question or a cell (the web UI's Stop and Esc).
 * The server records the run as stopped (its reason, in the store and in the question's stream),
 * keeps the step that was running as far as it got, and interrupts the kernel with its state kept;
 * a closed connection is told apart (its own reason). `{ runId }` names one run; without it, every
 * question and cell of the session stops. Any replica takes it: the one that runs the session is
 * told and answers (session/replica-stops.ts). The owner's only, as every session route (a shared
 * page has no way to it).
 * @module
 */
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import type { SessionService } from '../session/index.js'
import { jsonBody, parse } from './request-body.js'

const Stop = z
  .object({
    /** The run to stop (a question's, or a cell's); left out, all of the session's. */
    runId: z.string().min(1).max(100).optional(),
  })
  .strict()

export function stopRoutes(options: {
  service: SessionService
  ownerOf: (c: Context) => string | null
}): Hono {
  const app = new Hono()
  app.post('/api/sessions/:id/stop', async (c) => {
    const { runId } = parse(Stop, await jsonBody(c))
    const outcome = await options.service.stop(c.req.param('id') as string, {
      owner: options.ownerOf(c),
      ...(runId ? { runId } : {}),
    })
    return c.json(outcome)
  })
  return app
}
