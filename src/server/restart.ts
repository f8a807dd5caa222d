/**
 * `POST /api/sessions/:id/restart`: a person restarts the session's kernel (the web UI's Restart
 * kernel). Its sandbox ends; the next question or cell starts a new one and rebuilds the state by
 * replaying the session's cells, which the answer counts. The owner's only, as every session
 * route (a shared page has no way to it); refused with a 409 while a question or cell runs.
 * @module
 */
import { type Context, Hono } from 'hono'
import type { SessionService } from '../session/index.js'

export function restartRoutes(options: {
  service: SessionService
  ownerOf: (c: Context) => string | null
}): Hono {
  const app = new Hono()
  app.post('/api/sessions/:id/restart', async (c) =>
    c.json(await options.service.restartKernel(c.req.param('id') as string, options.ownerOf(c))),
  )
  return app
}
