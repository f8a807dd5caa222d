/**
 * The session's kernel as a person sees it in the web UI:
 *
 * - `POST /api/sessions/:id/restart`: a person restarts it (Restart kernel). Its sandbox ends; the
 *   next question or cell starts a new one and rebuilds the state by replaying the session's
 *   cells, which the answer counts. Refused with a 409 while a question or cell runs.
 * - `GET /api/sessions/:id/kernel`: whether a kernel holds the session's state now (`running`), so
 *   that a page that comes back into view (its tab shown again, its window focused) learns of a
 *   restart done in another browser, and its grids say their tables are gone. It asks the kernel
 *   nothing (a cell that runs does not hold it up) and reads one row of the store: a kernel of this
 *   replica whose session another replica has answered in, or restarted, since is not the
 *   session's (this replica lets it go at its next sweep).
 *
 * The owner's only, as every session route (a shared page has no way to either).
 * @module
 */
import { type Context, Hono } from 'hono'
import type { SessionService } from '../session/index.js'

export function restartRoutes(options: {
  service: SessionService
  ownerOf: (c: Context) => string | null
}): Hono {
  const { service } = options
  const app = new Hono()
  app.post('/api/sessions/:id/restart', async (c) =>
    c.json(await service.restartKernel(c.req.param('id') as string, options.ownerOf(c))),
  )
  app.get('/api/sessions/:id/kernel', async (c) => {
    const id = c.req.param('id') as string
    const opened = await service.sandboxOf(id, options.ownerOf(c))
    const here = opened.starting || (await opened.sandbox) !== undefined
    if (!here) return c.json({ running: false })
    const holder = (await service.history.leaseHolders([id])).get(id)
    return c.json({ running: holder === undefined || holder === service.replica })
  })
  return app
}
