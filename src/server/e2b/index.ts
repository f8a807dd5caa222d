/**
 * An E2B-compatible API over any sandbox provider, so the official E2B SDKs run unchanged against
 * `analyst serve`: E2B_API_URL and E2B_SANDBOX_URL point at the server, E2B_API_KEY is one of its
 * tokens. It serves raw sandboxes, not Analyst sessions.
 *
 * With both URLs set, the SDK sends everything to this one server: control-plane calls carry
 * `X-API-KEY` and no `E2b-Sandbox-Id`; calls into a sandbox carry `E2b-Sandbox-Id` and
 * `E2b-Sandbox-Port` (49983 envd: files, commands; 49999 the code interpreter). A signed file URL
 * carries neither: its signature says which sandbox it is for (signing.ts).
 * @module
 */
import { Hono } from 'hono'
import type { MemoryBudget, SandboxLimits, SandboxProvider } from '../../sandbox/index.js'
import { ownerOf } from '../auth/secrets.js'
import type { TemplateBuilds, TemplateCatalog } from '../template-builds.js'
import { answerError, controlRoutes, e2bError } from './control.js'
import { envdRoutes } from './envd.js'
import { interpreterRoutes } from './interpreter.js'
import { Registry, type SandboxEntry, sameSecret } from './registry.js'
import { refusal, signedRequest } from './signing.js'
import type { TemplateFiles } from './template-files.js'
import { type RunE2BBuild, templateRoutes } from './templates.js'

export { ENVD_VERSION } from './registry.js'

export const ENVD_PORT = '49983'
export const INTERPRETER_PORT = '49999'
const CONTROL_PATH = /^\/(v2\/|v3\/)?(sandboxes|snapshots|templates|volumes)(\/|$)/
const TEMPLATE_PATH = /^\/(v2\/|v3\/)?templates(\/|$)/
/** The URL a COPY step's files are PUT to: no API key, a one-time secret instead (template-files.ts). */
const FILE_UPLOAD_PATH = /^\/templates\/[^/]+\/files\/([0-9a-f]{64})$/
/** How long a sandbox resumed by a call into it (autoResume) runs, as a connect without a timeout. */
const RESUMED_SECONDS = 300

export interface E2BApiOptions {
  provider: SandboxProvider
  /** The server's tokens (ANALYST_TOKEN); empty: any key is accepted (loopback only). */
  tokens: string[]
  /**
   * Sign-in's check of a key (a user's API key, or a token): its owner and whether it may build
   * templates (an administrator's, or one of ANALYST_TOKEN), or undefined when it is not valid.
   */
  authenticate?: (key: string) => Promise<{ owner: string; builder: boolean } | undefined>
  /** Let a client that asks for `allowInternetAccess: true` have network. @default false */
  allowNetwork?: boolean
  /** The memory budget shared with the sessions: idle sandboxes are paused for it (resumed at their next call). */
  budget?: MemoryBudget
  /** Each sandbox's own memory and CPU, unless a request sets memoryMB or cpuCount. */
  limits?: Partial<SandboxLimits>
  /** Largest upload through `files.write`. @default 256 MiB */
  maxUploadBytes?: number
  /** Templates: those built here start with Sandbox.create(name); Template.build makes more, when builds are allowed. */
  templates?: {
    catalog: TemplateCatalog
    builds: TemplateBuilds
    files: TemplateFiles
    run: RunE2BBuild
  }
}

export interface E2BApi {
  /** Whether a request is for this API: it names a sandbox, or a control-plane path. */
  handles(request: Request): boolean
  fetch(request: Request): Response | Promise<Response>
  /** Kills every sandbox it made and takes no new ones. */
  close(): Promise<void>
}

/** A signed file request without a sandbox id: its path and the `signature` query. */
function isSignedFile(request: Request): boolean {
  if (request.method !== 'GET' && request.method !== 'POST') return false
  const url = new URL(request.url)
  return url.pathname === '/files' && url.searchParams.has('signature')
}

export function createE2BApi(options: E2BApiOptions): E2BApi {
  const registry = new Registry(options.provider, options.budget)
  let closing = false
  const control = controlRoutes({
    provider: options.provider,
    registry,
    allowNetwork: options.allowNetwork,
    limits: options.limits,
    closing: () => closing,
    ...(options.templates ? { templates: options.templates.catalog } : {}),
  })
  const envd = envdRoutes({ registry, maxUploadBytes: options.maxUploadBytes })
  const interpreter = interpreterRoutes(registry)
  const templates = options.templates ? templateRoutes(options.templates) : undefined
  /** Template calls go to their routes, the rest to the sandboxes' control plane. */
  const controlFor = (request: Request, owner: string | null, builder: boolean) =>
    templates && TEMPLATE_PATH.test(new URL(request.url).pathname)
      ? templates.fetch(request, { owner, builder })
      : control.fetch(request, { owner })

  /** The running sandbox a call goes into; a paused one is resumed first when it asked for that. */
  const reach = async (entry: SandboxEntry | undefined): Promise<SandboxEntry | undefined> => {
    // Paused to free memory: resumed as if it had asked for autoResume.
    if (entry?.state === 'paused' && (entry.autoResume || entry.evicted))
      await registry.resume(entry, RESUMED_SECONDS)
    if (entry?.state === 'running') registry.touch(entry)
    return entry?.state === 'running' ? entry : undefined
  }

  const app = new Hono()
  app.onError(answerError)
  app.all('*', async (c) => {
    const sandboxId = c.req.header('e2b-sandbox-id')
    if (sandboxId === undefined && isSignedFile(c.req.raw)) {
      // The signature is made from one sandbox's envd token: that sandbox is the one.
      const signed = signedRequest(new URL(c.req.url), c.req.method === 'GET' ? 'read' : 'write')
      const entry = registry.all().find((e) => refusal(e.envdAccessToken, signed) !== 'invalid signature')
      if (!entry) return c.json({ code: 401, message: 'invalid signature' }, 401)
      const running = await reach(entry)
      if (!running) return c.text(`The sandbox ${entry.id} is paused: resume it with Sandbox.connect()`, 502)
      return envd.fetch(c.req.raw, { entry: running })
    }
    const upload = c.req.method === 'PUT' ? c.req.path.match(FILE_UPLOAD_PATH)?.[1] : undefined
    if (sandboxId === undefined && upload && options.templates) {
      await options.templates.files.receive(c.req.query('upload') ?? '', upload, c.req.raw.body)
      return c.body(null, 200)
    }
    if (sandboxId === undefined) {
      const key = c.req.header('x-api-key')
      if (options.authenticate) {
        const caller = key ? await options.authenticate(key) : undefined
        if (caller === undefined)
          return e2bError(
            c,
            401,
            key
              ? 'The API key is not valid'
              : 'An API key is required: set E2B_API_KEY to an API key of yours',
          )
        return controlFor(c.req.raw, caller.owner, caller.builder)
      }
      const token = options.tokens.length === 0 ? '' : options.tokens.find((t) => sameSecret(key, t))
      if (token === undefined) {
        return e2bError(
          c,
          401,
          key
            ? 'The API key is not valid'
            : 'An API key is required: set E2B_API_KEY to one of ANALYST_TOKEN',
        )
      }
      return controlFor(c.req.raw, token === '' ? null : ownerOf(token), true)
    }
    // A sandbox's own calls: its id is unguessable, and its access tokens are checked as well.
    const known = registry.get(sandboxId)
    const entry = await reach(known)
    if (!entry) {
      // What E2B's edge answers for a sandbox that is gone (or paused): the SDK reports it as timed out.
      return known
        ? c.text(`The sandbox ${sandboxId} is paused: resume it with Sandbox.connect()`, 502)
        : c.text(`The sandbox ${sandboxId} was not found: it was killed or timed out`, 502)
    }
    const port = c.req.header('e2b-sandbox-port')
    if (port === INTERPRETER_PORT) {
      const traffic = c.req.header('e2b-traffic-access-token')
      const access = c.req.header('x-access-token')
      if (
        !sameSecret(traffic, entry.trafficAccessToken) ||
        (access && !sameSecret(access, entry.envdAccessToken))
      )
        return c.text('The sandbox access token is not valid', 401)
      return interpreter.fetch(c.req.raw, { entry })
    }
    if (port === ENVD_PORT || port === undefined) {
      // /health is open, as in envd; /files takes a signature instead of the token (envd.ts checks it).
      const open = (c.req.method === 'GET' && c.req.path === '/health') || isSignedFile(c.req.raw)
      if (!open && !sameSecret(c.req.header('x-access-token'), entry.envdAccessToken))
        return c.json({ code: 401, message: 'The sandbox access token is not valid' }, 401)
      return envd.fetch(c.req.raw, { entry })
    }
    return c.text(`Nothing listens on port ${port} in an Analyst sandbox (only 49983 and 49999)`, 502)
  })

  return {
    handles: (request) =>
      request.headers.has('e2b-sandbox-id') ||
      CONTROL_PATH.test(new URL(request.url).pathname) ||
      isSignedFile(request),
    fetch: (request) => app.fetch(request),
    close: async () => {
      closing = true
      await registry.killAll()
    },
  }
}
