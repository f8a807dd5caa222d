/**
 * E2B's template API, as the JS SDK's `Template.build`, `Template.exists` and `Template.getBuildStatus`
 * call it (e2b 2.51, packages/js-sdk/src/template/buildApi.ts):
 *
 * 1. `POST /v3/templates` {name, tags}: a template id (its name here) and a build id;
 * 2. `GET /templates/{id}/files/{hash}` for each COPY: present, or a URL to PUT the tar of its files to;
 * 3. `POST /v2/templates/{id}/builds/{buildId}` {fromImage | fromTemplate, steps, startCmd, readyCmd}:
 *    the build starts (a base that cannot be had here is refused here, at once);
 * 4. `GET /templates/{id}/builds/{buildId}/status?logsOffset=N` until ready or error, with the log
 *    entries from N on.
 *
 * A build is recorded in the store from step 1 on, and the files uploaded in step 2 are kept there
 * too (template-files.ts), so that each of these requests may reach any replica over the same
 * database.
 *
 * Builds are off unless the server allows them (--allow-template-builds), and for administrators
 * when sign-in is on. A template's E2B id is its name: `Sandbox.create(name)` starts it.
 * @module
 */
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { ForbiddenError, InvalidArgumentError, NotFoundError } from '../../errors.js'
import type { BuiltTemplate, TemplateResources } from '../../templates/types.js'
import type {
  BuildReporter,
  TemplateBuild,
  TemplateBuildLimits,
  TemplateBuilds,
  TemplateCatalog,
} from '../template-builds.js'
import { answerError, TEMPLATES } from './control.js'
import { ENVD_VERSION } from './registry.js'
import type { TemplateFiles } from './template-files.js'
import { type BuildRequest, readBuildRequest } from './template-request.js'

export type TemplatesEnv = {
  Bindings: {
    owner: string | null
    /** The caller may build and remove templates: an administrator when sign-in is on, else any key. */
    builder: boolean
  }
}

/** Runs an E2B build: its steps lowered to Analyst's spec, its COPY files unpacked from the uploads. */
export type RunE2BBuild = (
  request: BuildRequest,
  context: {
    name: string
    /** Unpacks the files of a COPY step (by its filesHash) into a folder. */
    unpack(hash: string, dir: string): Promise<void>
    reporter: BuildReporter
    signal: AbortSignal
    limits: TemplateBuildLimits
  },
) => Promise<BuiltTemplate>

export interface E2BTemplateOptions {
  builds: TemplateBuilds
  catalog: TemplateCatalog
  files: TemplateFiles
  run: RunE2BBuild
}

/** E2B's name: `name` or `name:tag`; Analyst keeps one build per name, so the tag must be latest. */
export function nameOf(given: string, tags: readonly string[] = []): string {
  const [name = '', tag] = given.split(':')
  const extra = [...(tag ? [tag] : []), ...tags].filter((t) => t !== 'latest')
  if (extra.length)
    throw new InvalidArgumentError(
      `Analyst keeps one build per template name, with no tags (${extra.join(', ')}).`,
      { hint: `Build it under a name of its own, e.g. ${name}-${extra[0]}` },
    )
  if (!/^[a-z0-9][a-z0-9._-]{0,62}$/.test(name))
    throw new InvalidArgumentError(`"${name}" cannot name a template`, {
      hint: 'A name is 1 to 63 lowercase letters, digits, ".", "-" or "_", starting with a letter or digit.',
    })
  return name
}

const NewTemplate = z
  .object({
    name: z.string().min(1).optional(),
    alias: z.string().min(1).optional(),
    tags: z.array(z.string()).nullish(),
    cpuCount: z.number().positive().nullish(),
    memoryMB: z.number().int().min(64).nullish(),
    minFreeDiskMb: z.number().nullish(),
  })
  .loose()

/** E2B's status of a build: a cancelled one is an error to the SDK. */
function statusOf(build: TemplateBuild): 'waiting' | 'building' | 'ready' | 'error' {
  return build.status === 'cancelled' ? 'error' : build.status
}

/**
 * E2B's name of a step, from the builder's number of it (1 the base, then the request's steps,
 * then the finish): "base", "1" for the request's first step, …, "finalize".
 */
function stepName(number: number | undefined, total: number | undefined): string | undefined {
  if (number === undefined) return undefined
  if (number <= 1) return 'base'
  if (total !== undefined && number >= total) return 'finalize'
  return String(number - 1)
}

function e2bFail(c: Context, status: number, message: string) {
  return c.json({ code: status, message }, status as 400)
}

export function templateRoutes({ builds, catalog, files, run }: E2BTemplateOptions) {
  const app = new Hono<TemplatesEnv>()
  app.onError(answerError)
  const mayBuild = (c: Context<TemplatesEnv>) => {
    builds.assertAllowed()
    if (!c.env.builder)
      throw new ForbiddenError(
        'Only administrators build templates on this server (ANALYST_OIDC_ADMIN_GROUPS)',
      )
  }
  const names = () => catalog.list().flatMap((t) => t.names)

  app.post('/v3/templates', async (c) => {
    mayBuild(c)
    const parsed = NewTemplate.safeParse(await c.req.json().catch(() => ({})))
    if (!parsed.success) throw new InvalidArgumentError('Invalid request: the body is not a template request')
    const given = parsed.data.name ?? parsed.data.alias
    if (!given)
      throw new InvalidArgumentError('The template needs a name: Template.build(template, "my-name")')
    const name = nameOf(given, parsed.data.tags ?? [])
    if (TEMPLATES.includes(name))
      throw new InvalidArgumentError(`"${name}" is the server's own template and cannot be rebuilt`)
    // The template's sandboxes get its memory and cores unless Sandbox.create sets its own.
    const { memoryMB, cpuCount } = parsed.data
    const resources = {
      ...(memoryMB ? { memoryBytes: memoryMB * 1024 ** 2 } : {}),
      ...(cpuCount ? { milliCpus: Math.round(cpuCount * 1000) } : {}),
    }
    // In the store: the build's steps may reach another replica.
    const buildID = await builds.request(
      name,
      c.env.owner,
      Object.keys(resources).length > 0 ? { resources } : {},
    )
    return c.json(
      { templateID: name, buildID, names: [name], aliases: [name], tags: ['latest'], public: false },
      202,
    )
  })

  app.get('/templates/:id/files/:hash', async (c) => {
    mayBuild(c)
    const hash = c.req.param('hash')
    if (await files.present(c.env.owner, hash)) return c.json({ present: true }, 201)
    const url = new URL(c.req.url)
    url.search = new URLSearchParams({ upload: await files.uploadSecret(c.env.owner, hash) }).toString()
    return c.json({ present: false, url: url.toString() }, 201)
  })

  app.post('/v2/templates/:id/builds/:buildId', async (c) => {
    mayBuild(c)
    const buildID = c.req.param('buildId')
    const name = c.req.param('id')
    const { resources } = (await builds.requested(buildID, c.env.owner, name)) as {
      resources?: TemplateResources
    }
    const request = readBuildRequest(await c.req.json().catch(() => undefined), names())
    const owner = c.env.owner
    const present = await Promise.all(request.files.map((hash) => files.present(owner, hash)))
    const missing = request.files.find((_hash, i) => !present[i])
    if (missing)
      throw new InvalidArgumentError(
        `The files of hash ${missing.slice(0, 12)}… (a COPY step) were not uploaded`,
        {
          hint: 'Build again: the SDK uploads the files that are missing.',
        },
      )
    await builds.start(
      name,
      owner,
      (context) =>
        run(resources ? { ...request, resources } : request, {
          name,
          unpack: (hash, dir) => files.unpack(owner, hash, dir),
          ...context,
        }),
      buildID,
    )
    // No body, and says so: the SDK parses any body it is not told is empty.
    return c.body(null, 202, { 'content-length': '0' })
  })

  app.get('/templates/:id/builds/:buildId/status', async (c) => {
    const buildID = c.req.param('buildId')
    const build = await builds.get(buildID, c.env.owner)
    const offset = Math.max(0, Number(c.req.query('logsOffset') ?? 0) || 0)
    const limit = Math.min(Math.max(1, Number(c.req.query('limit') ?? 100) || 100), 1000)
    const entries = (await builds.log(build, offset, limit)).map((line) => ({
      timestamp: line.timestamp,
      level: line.level,
      message: line.message,
      ...(line.step !== undefined ? { step: stepName(line.step, build.progress?.total) } : {}),
    }))
    const status = statusOf(build)
    return c.json({
      buildID,
      templateID: build.name,
      // At ready or error the SDK reads on until a page comes back empty, so no entry is lost.
      status,
      logEntries: entries,
      logs: [],
      ...(build.reason
        ? {
            reason: {
              message: build.reason.message,
              step: stepName(build.reason.step, build.progress?.total),
              logEntries: [],
            },
          }
        : {}),
    })
  })

  app.get('/templates/aliases/:alias', async (c) => {
    const alias = c.req.param('alias')
    if (TEMPLATES.includes(alias)) return c.json({ templateID: alias, public: true })
    const name = alias.replace(/:latest$/, '')
    await catalog.ensure?.(name)
    return names().includes(name)
      ? c.json({ templateID: name, public: false })
      : e2bFail(c, 404, `template "${alias}" doesn't exist`)
  })

  app.get('/templates', (c) =>
    c.json([
      ...catalog.list().flatMap((template) => template.names.map((name) => e2bTemplate(name, template))),
    ]),
  )

  app.get('/templates/:id', (c) => {
    const template = find(catalog, c.req.param('id'))
    if (!template) return e2bFail(c, 404, `template "${c.req.param('id')}" doesn't exist`)
    const { buildID: _b, buildCount: _n, buildStatus: _s, ...rest } = e2bTemplate(c.req.param('id'), template)
    return c.json({ ...rest, builds: [] })
  })

  app.delete('/templates/:id', async (c) => {
    if (!c.env.builder)
      throw new ForbiddenError(
        'Only administrators remove templates on this server (ANALYST_OIDC_ADMIN_GROUPS)',
      )
    const id = c.req.param('id')
    if (TEMPLATES.includes(id)) throw new InvalidArgumentError(`"${id}" is the server's own template`)
    if (find(catalog, id)) catalog.remove(id)
    // Only another replica's: out of the database, and so off every replica.
    else if (!(await catalog.forgetElsewhere?.(id))) return e2bFail(c, 404, `template "${id}" doesn't exist`)
    return c.body(null, 204)
  })

  app.all('*', (c) =>
    e2bFail(
      c,
      404,
      `${c.req.method} ${new URL(c.req.url).pathname} is not part of Analyst's E2B template API`,
    ),
  )
  return app
}

function find(catalog: TemplateCatalog, name: string): BuiltTemplate | undefined {
  try {
    return catalog.resolve(name.replace(/:latest$/, ''))
  } catch (error) {
    if (NotFoundError.isInstance(error)) return undefined
    throw error
  }
}

/** E2B's Template, for a template built here under `name`. */
function e2bTemplate(name: string, template: BuiltTemplate) {
  return {
    templateID: name,
    buildID: template.id,
    names: [name],
    aliases: [name],
    public: false,
    buildCount: 1,
    buildStatus: 'ready',
    cpuCount: 1,
    memoryMB: 2048,
    diskSizeMB: Math.ceil(template.sizeBytes / 1024 ** 2),
    envdVersion: ENVD_VERSION,
    createdAt: template.createdAt,
    updatedAt: template.createdAt,
    createdBy: null,
    lastSpawnedAt: null,
    spawnCount: 0,
  }
}
