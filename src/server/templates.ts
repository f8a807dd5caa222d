/**
 * /api/templates: the templates built here (list, show), and for those who may build (an
 * administrator when sign-in is on; any caller with a token otherwise) builds and removal. A build
 * is untrusted code: off unless the server allows it (--allow-template-builds), then it runs in
 * the background with its log kept (GET …/builds/:id, with `logsOffset`), streamed as server-sent
 * events (GET …/builds/:id/events), and cancelled with DELETE …/builds/:id: on any replica over
 * the same database, whichever one runs it.
 * @module
 */
import { type Context, Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import { z } from 'zod'
import { ForbiddenError, NotFoundError } from '../errors.js'
import type { AuthVariables } from './auth/index.js'
import { jsonBody, parse } from './request-body.js'
import type { RunBuild, TemplateBuild, TemplateBuilds, TemplateCatalog } from './template-builds.js'
import { templateView } from './template-view.js'
import type { TemplateBuildView } from './types.js'

type Env = { Variables: AuthVariables }

export interface TemplateRoutesOptions {
  builds: TemplateBuilds
  catalog: TemplateCatalog
  /** The build of a spec (as a spec file holds it, JSON) under a name. */
  buildSpec: (name: string, spec: Record<string, unknown>, force: boolean) => RunBuild
  /** Sign-in is on: only administrators (and ANALYST_TOKEN tokens) build and remove. */
  signIn: boolean
}

const NewBuild = z
  .object({
    name: z.string().min(1).max(63),
    /** The spec, as a spec file holds it (analyst template build SPEC). */
    spec: z.record(z.string(), z.unknown()),
    /** Rebuild whatever the cache holds. */
    force: z.boolean().optional(),
  })
  .strict()

export function buildView(build: TemplateBuild): TemplateBuildView {
  return {
    id: build.id,
    name: build.name,
    status: build.status,
    ...(build.progress ? { progress: build.progress } : {}),
    ...(build.reason ? { reason: build.reason } : {}),
    ...(build.template ? { template: build.template } : {}),
    createdAt: build.createdAt.toISOString(),
    ...(build.finishedAt ? { finishedAt: build.finishedAt.toISOString() } : {}),
  }
}

export function templateRoutes({ builds, catalog, buildSpec, signIn }: TemplateRoutesOptions) {
  const app = new Hono<Env>()
  const builder = (c: Context<Env>) => {
    if (!signIn) return
    const identity = c.get('identity')
    if (identity?.via === 'token' || identity?.user.admin) return
    throw new ForbiddenError(
      'Only administrators build and remove templates on this server (ANALYST_OIDC_ADMIN_GROUPS)',
    )
  }

  app.get('/api/templates', (c) => c.json(catalog.list().map(templateView)))

  // One of another replica's (in the database) is brought here first, as a session's create would.
  app.get('/api/templates/:name', async (c) => {
    await catalog.ensure?.(c.req.param('name'))
    return c.json(templateView(catalog.resolve(c.req.param('name'))))
  })

  app.post('/api/templates', async (c) => {
    builds.assertAllowed()
    builder(c)
    const body = parse(NewBuild, await jsonBody(c))
    const run = buildSpec(body.name, body.spec, body.force === true)
    const build = await builds.start(body.name, c.get('owner'), run)
    return c.json(buildView(build), 202, { location: `/api/templates/builds/${build.id}` })
  })

  app.delete('/api/templates/:name', async (c) => {
    builder(c)
    const name = c.req.param('name')
    try {
      catalog.remove(name)
    } catch (error) {
      // Only another replica's: out of the database, and so off every replica.
      if (!NotFoundError.isInstance(error) || !(await catalog.forgetElsewhere?.(name))) throw error
    }
    return c.body(null, 204)
  })

  app.get('/api/templates/builds/:id', async (c) => {
    const build = await builds.get(c.req.param('id'), c.get('owner'))
    const offset = Math.max(0, Number(c.req.query('logsOffset') ?? 0) || 0)
    return c.json({ ...buildView(build), log: await builds.log(build, offset, 1000), logsOffset: offset })
  })

  // The log so far, then each line, progress and the end as they come (one event per SSE message).
  app.get('/api/templates/builds/:id/events', async (c) => {
    const build = await builds.get(c.req.param('id'), c.get('owner'))
    return streamSSE(c, async (stream) => {
      const stop = new AbortController()
      stream.onAbort(() => stop.abort())
      for await (const event of builds.follow(build, stop.signal)) {
        const data = event.type === 'end' ? { type: 'end', build: buildView(event.build) } : event
        await stream.writeSSE({ event: event.type, data: JSON.stringify(data) })
      }
    })
  })

  app.delete('/api/templates/builds/:id', async (c) => {
    const cancelled = await builds.cancel(c.req.param('id'), c.get('owner'))
    return cancelled
      ? c.body(null, 204)
      : c.json(buildView(await builds.get(c.req.param('id'), c.get('owner'))), 409)
  })

  return app
}
