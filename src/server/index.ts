/**
 * `analyst serve`: the HTTP API and the web UI over the session service.
 * @module
 */
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { serve } from '@hono/node-server'
import type { Logger } from 'pino'
import { InvalidArgumentError, ModelConfigError } from '../errors.js'
import { AllowedFolders, McpHttp } from '../mcp/index.js'
import type { ModelChoice } from '../models/index.js'
import { resolveModel } from '../models/index.js'
import { createProvider, type EngineOptions } from '../providers.js'
import {
  capabilitiesOf,
  MemoryBudget,
  type SandboxCreateOptions,
  type SandboxProvider,
} from '../sandbox/index.js'
import { sandboxResources } from '../sandbox/kernel/limits.js'
import { type AnalystSettings, type LargeFiles, SessionService } from '../session/index.js'
import type { NamedSource, SourceDirectory, SourceSpec } from '../sources/index.js'
import { isQueryableFile, sqlOnlyBytes, tableNameOf } from '../sources/spec.js'
import { analystHome, openStores, type Stores } from '../store/index.js'
import { openTemplates } from '../templates/store.js'
import { createApp, ownerOf } from './app.js'
import { SignIn, type SignInSettings, signInSettingsFromEnv } from './auth/index.js'
import { createE2BApi } from './e2b/index.js'
import { TemplateFiles } from './e2b/template-files.js'
import { createMetrics, type ServerMetrics } from './metrics.js'
import { type QuotaConfig, Quotas, quotasFromEnv } from './quotas.js'
import { buildLimitsFromEnv, type TemplateBuildLimits, TemplateBuilds } from './template-builds.js'
import { importTemplatesAtStart } from './template-import.js'
import { apiRun, type BuildTemplate, e2bRun, type ParseSpec } from './template-runs.js'
import { sharedCatalog } from './template-share.js'

export { createApp, ownerOf } from './app.js'
export { createLogger } from './logging.js'
export { createMetrics, type ServerMetrics } from './metrics.js'
export { type QuotaConfig, type QuotaLimits, Quotas, quotasFromEnv } from './quotas.js'
export type * from './types.js'
export { artifactUrl, sessionDetail, sessionSummary } from './views.js'

/** The built web UI: dist/web, two folders up from this module in src/ and in dist/ alike. */
export const WEB_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url))

export interface ServerOptions {
  /** @default 127.0.0.1 */
  host?: string
  /** 0 picks a free port. @default 8787 */
  port?: number
  /** @default ANALYST_HOME or ~/.analyst */
  home?: string
  /** PostgreSQL for sessions, runs and blobs, shared by replicas (--database-url). @default ANALYST_DATABASE_URL; without it, SQLite in `home` */
  databaseUrl?: string
  /** How long a session's lease lasts unless renewed. @default ANALYST_LEASE_MS or 15 s */
  leaseMs?: number
  /** @default ANALYST_TOKEN, split at commas */
  tokens?: string[]
  /** The model for every session; default: the CLI's configuration (ANALYST_MODEL, the model provider's key). */
  model?: () => Promise<ModelChoice>
  /** The sandbox provider; one given here is the caller's to close. @default the `engine`'s */
  provider?: SandboxProvider
  /** The engine, when no provider is given (--sandbox). @default ANALYST_SANDBOX or local */
  engine?: string
  /** The engine's own settings (--jupyter-kernel, --gpu, --image), when no provider is given. */
  engineOptions?: Pick<EngineOptions, 'jupyterKernel' | 'gpu' | 'image'>
  /** Settings of every sandbox (isolation, network, limits). */
  sandbox?: Omit<SandboxCreateOptions, 'data' | 'signal'>
  /** How the analyst works (steps, timeouts, guard). */
  analyst?: AnalystSettings
  webDir?: string
  /** The largest upload. @default 16 GiB (files over sqlOnlyBytes stay on the host for sql()) */
  maxUploadBytes?: number
  /**
   * Over this, an uploaded CSV, TSV, Parquet or NDJSON file stays on the host as a table that
   * sql() queries in place, instead of going into the sandbox. @default ANALYST_SQL_ONLY_BYTES or 1 GiB
   */
  sqlOnlyBytes?: number
  idleMs?: number
  /** JSON lines of what the server does (see createLogger). @default none */
  logger?: Logger
  /** Per-token quotas. @default ANALYST_QUOTAS and ANALYST_QUOTA_* (none when unset) */
  quotas?: QuotaConfig
  /** Folders from which MCP clients (/mcp) may add data files. */
  allowDirs?: string[]
  /** Give E2B clients that ask for `allowInternetAccess: true` a sandbox with network (--allow-network). @default false */
  allowNetwork?: boolean
  /** API clients may build templates (/api/templates, E2B's Template.build): untrusted code, in a build jail (--allow-template-builds). @default false */
  allowTemplateBuilds?: boolean
  /** Each build's bounds. @default ANALYST_TEMPLATE_BUILD_TIMEOUT, _DISK_MB, _MEMORY_MB, else 30 min, 8 GiB, 4 GiB */
  templateBuildLimits?: Partial<TemplateBuildLimits>
  /** The template builder and spec reader. @default src/templates' own */
  templateBuilder?: { build: BuildTemplate; parseSpec: ParseSpec }
  /**
   * Sources sessions may query with sql(): `named` ones picked by name (default: the file that
   * ANALYST_SOURCES names), and `defaults` (--data) that every session gets unless it picks.
   */
  sources?: { named?: Map<string, NamedSource>; defaults?: SourceSpec[] }
  /** Sign-in with an identity provider (OpenID Connect). @default ANALYST_OIDC_* and ANALYST_PUBLIC_URL (off when unset); null: off */
  signin?: SignInSettings | null
}

export interface RunningServer {
  url: string
  stores: Stores
  service: SessionService
  /** The provider the sessions' sandboxes come from. */
  provider: SandboxProvider
  metrics: ServerMetrics
  /** The sources sessions may query, if the server offers some. */
  sources?: SourceDirectory
  /** Stops taking requests, ends every sandbox, closes the store. */
  close(): Promise<void>
  /**
   * Stops gracefully (SIGTERM): no new runs (and /readyz says so), runs in progress finish until
   * `graceMs`, the rest are ended and recorded as interrupted, leases released; then `close()`.
   */
  drain(graceMs: number): Promise<void>
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/
/** The most half-written blobs one start forgets (the rest at the next start). */
const PARTIAL_BLOBS_PER_START = 100

export function tokensFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.ANALYST_TOKEN ?? '')
    .split(',')
    .map((token) => token.trim())
    .filter(Boolean)
}

/**
 * Uploads too large for the sandbox, kept on the host as tables: they open with the session's
 * sources, through the server's directory, or one of their own (the sources module then loads at
 * the first such session, not at start).
 */
function largeFiles(overBytes: number, directory: SourceDirectory | undefined, home: string): LargeFiles {
  let own: Promise<SourceDirectory> | undefined
  return {
    overBytes,
    tableFor: (name) => (isQueryableFile(name) ? tableNameOf(name) : undefined),
    open: async (names, tables) => {
      own ??= import('../sources/index.js').then(
        ({ SourceDirectory }) =>
          new SourceDirectory({ ownerOf, open: { spillDirectory: join(home, 'spill') } }),
      )
      return (directory ?? (await own)).open(names, tables)
    },
  }
}

/** The sources the server offers, if any; the sources module loads only when there are some. */
async function sourceDirectory(
  given: ServerOptions['sources'],
  home: string,
): Promise<SourceDirectory | undefined> {
  if (!given && !process.env.ANALYST_SOURCES) return undefined
  const { loadSourcesFile, SourceDirectory } = await import('../sources/index.js')
  const named = given?.named ?? loadSourcesFile()
  const defaults = given?.defaults ?? []
  if (named.size === 0 && defaults.length === 0) return undefined
  return new SourceDirectory({ named, defaults, ownerOf, open: { spillDirectory: join(home, 'spill') } })
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1'
  const tokens = options.tokens ?? tokensFromEnv()
  const signInSettings =
    options.signin === undefined ? signInSettingsFromEnv() : (options.signin ?? undefined)
  if (!LOOPBACK.test(host) && tokens.length === 0 && !signInSettings) {
    throw new InvalidArgumentError(
      `Refusing to listen on ${host} without tokens: anyone who reaches it could run code`,
      {
        hint: 'Set ANALYST_TOKEN (comma-separated tokens) or sign-in (ANALYST_OIDC_ISSUER…), or listen on 127.0.0.1.',
      },
    )
  }
  const quotaConfig = options.quotas ?? quotasFromEnv()
  // Each sandbox's own memory and CPU: given (--memory, --cpus), else ANALYST_SANDBOX_MEMORY and _CPUS.
  const sandbox = {
    ...options.sandbox,
    limits: { ...options.sandbox?.limits, ...sandboxResources(options.sandbox?.limits) },
  }
  const folders = await AllowedFolders.open(options.allowDirs ?? [])
  const home = options.home ?? analystHome()
  const say = (line: string) =>
    options.logger ? options.logger.info(line) : console.error(`analyst serve: ${line}`)
  // The templates an image or a replica carries as archives, into the store before anything starts.
  await importTemplatesAtStart(home, process.env.ANALYST_TEMPLATE_IMPORT, say)
  const env = options.databaseUrl
    ? { ...process.env, ANALYST_DATABASE_URL: options.databaseUrl }
    : process.env
  const sources = await sourceDirectory(options.sources, home)
  const stores = await openStores(home, env)
  // Exactly one provider: the one the sessions use is the one warmed now and closed at the end.
  const ownsProvider = !options.provider
  let provider: SandboxProvider
  try {
    provider =
      options.provider ??
      (await createProvider(options.engine, {
        ...options.engineOptions,
        poolSize: Number(process.env.ANALYST_POOL_SIZE ?? 2),
      }))
  } catch (error) {
    await stores.close()
    throw error
  }
  // Templates: those in ANALYST_HOME/templates, and those built on another replica over the same
  // database (template-share.ts); builds by API clients when the operator allows them.
  const { catalog, share } = sharedCatalog({
    home,
    catalog: openTemplates(home),
    files: stores.templateFiles,
    shared: stores.history.shared,
    log: say,
  })
  // The pool's template is here before the pool starts: brought from the database if another
  // replica built it; nowhere, serve stops now and says so (not a failed pool and failed sessions).
  const template = options.sandbox?.template
  if (ownsProvider && typeof template === 'string' && capabilitiesOf(provider).templates === 'built') {
    try {
      await share.need(template)
    } catch (error) {
      await provider.close?.()
      await stores.close()
      throw error
    }
  }
  // The named templates built on this host (analyst template build) reach the other replicas,
  // after start: an export of a large root takes a while, and nothing here waits for it.
  const publishing = (stores.blobs.forgetPartialBlobs?.(PARTIAL_BLOBS_PER_START) ?? Promise.resolve(0))
    .then((partial) => {
      if (partial) say(`uploads left half-written by a stopped replica: ${partial} removed`)
    })
    .catch((error: unknown) => say(`half-written uploads not tidied: ${(error as Error).message}`))
    .then(() => share.tidy())
    .then(({ partial, removals }) => {
      if (partial) say(`template files left half-written by a stopped replica: ${partial} removed`)
      if (removals) say(`template removals older than a month forgotten: ${removals}`)
    })
    .catch((error: unknown) => say(`template files not tidied: ${(error as Error).message}`))
    .then(() => share.publishLocal())
    .then(({ published, dropped, failed }) => {
      if (published.length) say(`templates shared with the other replicas: ${published.join(', ')}`)
      if (dropped.length) say(`templates removed on another replica, dropped here: ${dropped.join(', ')}`)
      for (const { name, error } of failed) say(`template ${name}: not shared: ${error}`)
    })
    .catch((error: unknown) => say(`templates not shared: ${(error as Error).message}`))
  // Start the warm pool now, so the first session does not wait for a kernel.
  let engine: Promise<unknown> = Promise.resolve()
  if (ownsProvider) {
    engine = provider.warm?.({ template: options.sandbox?.template }) ?? engine
    engine.catch((error: unknown) =>
      options.logger?.error({ err: error }, 'the sandbox engine failed to start'),
    )
  }
  // The sandboxes' memory budget, where the engine measures their memory (local, as root).
  const budget = provider.memoryUse?.() ? new MemoryBudget(() => provider.memoryUse?.()) : undefined
  let service: SessionService | undefined
  const metrics = createMetrics(
    () => service,
    () => provider,
  )
  let model: Promise<ModelChoice> | undefined
  // The server's memory and CPUs are defaults: a session's template's go over them, as in E2B's create.
  const { limits: defaultLimits, ...sessionSandbox } = sandbox
  service = new SessionService({
    history: stores.history,
    stops: stores.stops,
    blobs: stores.blobs,
    provider,
    sandbox: sessionSandbox,
    defaultLimits,
    analyst: { nameImage: (step, index) => `step-${step}-chart-${index}.png`, ...options.analyst },
    model:
      options.model ??
      (() =>
        (model ??= resolveModel().catch((error: unknown) => {
          model = undefined
          // The model's own hint speaks of --model; the service is configured by its environment.
          throw ModelConfigError.isInstance(error)
            ? new ModelConfigError(error.message, {
                cause: error,
                hint: 'Set ANALYST_MODEL (and the model provider key, e.g. OPENAI_API_KEY) where analyst serve runs, then restart it.',
              })
            : error
        }))),
    cacheDir: join(home, 'cache'),
    templates: catalog,
    idleMs: options.idleMs,
    leaseMs: options.leaseMs,
    observer: metrics.observer,
    sources,
    largeFiles: largeFiles(options.sqlOnlyBytes ?? sqlOnlyBytes(), sources, home),
    budget,
  })
  const interrupted = await service.recoverInterrupted()
  if (interrupted > 0)
    console.error(
      `analyst serve: ${interrupted} question(s) were cut off by the last stop; their sessions can continue.`,
    )
  // MCP at /mcp (src/mcp): its sessions end on DELETE, when idle, or with the server. They get the
  // server's default sources, which list_data and profile_data describe from one connection each,
  // or those named in /mcp?sources=…, described by connecting for each call.
  const defaults = sources?.choose(undefined, null) ?? []
  const mcpSources = defaults.length
    ? await sources?.open(defaults).catch((error: unknown) => {
        options.logger?.warn({ err: error }, 'the default sources could not be opened for /mcp')
        return undefined
      })
    : undefined
  const mcp = new McpHttp({
    service,
    folders,
    idleMs: options.idleMs,
    ...(sources
      ? {
          sources: (names: readonly string[]) =>
            mcpSources && sameNames(names, defaults) ? mcpSources : sources.describer(names),
        }
      : {}),
  })
  const signin = signInSettings
    ? new SignIn({ settings: signInSettings, store: stores.auth, tokens, logger: options.logger })
    : undefined
  const builds = new TemplateBuilds({
    allowed: options.allowTemplateBuilds === true,
    store: stores.templateBuilds,
    shared: stores.history.shared,
    replica: service.replica,
    limits: { ...buildLimitsFromEnv(), ...options.templateBuildLimits },
    publish: (template, name) => share.publish(template, name),
  })
  const builder = options.templateBuilder ?? (await loadTemplateBuilder())
  const runs = { home, store: catalog, ...builder }
  // E2B-compatible API over the same provider as the sessions; users' API keys work as E2B_API_KEY.
  const e2b = createE2BApi({
    provider,
    tokens,
    allowNetwork: options.allowNetwork,
    limits: sandbox.limits,
    budget,
    templates: {
      catalog,
      builds,
      files: new TemplateFiles(stores.templateFiles),
      run: e2bRun(runs),
    },
    ...(signin
      ? {
          authenticate: async (key: string) => {
            const identity = await signin.bearer(key)
            if (!identity) return undefined
            // An ANALYST_TOKEN token is the operator's own; a user's key builds when the user is an admin.
            return { owner: identity.owner, builder: identity.via === 'token' || identity.user.admin }
          },
        }
      : {}),
  })
  const app = createApp({
    e2b,
    service,
    tokens,
    uploadDir: join(home, 'uploads'),
    webDir: options.webDir ?? WEB_DIR,
    maxUploadBytes: options.maxUploadBytes ?? 16 * 1024 ** 3,
    logger: options.logger,
    metrics,
    quotas: new Quotas(quotaConfig, stores.history),
    readiness: {
      database: () => stores.history.checkReady(),
      sandbox: () => engine,
    },
    mcp,
    sources,
    signin,
    templates: { catalog, builds, buildSpec: apiRun(runs) },
  })
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 8787 }, () =>
      resolve(started),
    )
    started.once('error', reject)
    // Keep idle connections longer than a load balancer or client does (60 s is the common idle
    // timeout): when the server closes first, a request sent on the closing socket gets a reset.
    Object.assign(started, { keepAliveTimeout: 65_000, headersTimeout: 66_000 })
  }).catch(async (error: unknown) => {
    // The port is taken (or the like): let go of what was opened for it.
    await mcp.close()
    await mcpSources?.close()
    await service.shutdown()
    await e2b.close()
    if (ownsProvider) await provider.close?.()
    await stores.close()
    throw error
  })
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  let closing: Promise<void> | undefined
  const running: RunningServer = {
    url: `http://${shown}:${address.port}`,
    stores,
    service,
    provider,
    metrics,
    sources,
    drain: async (graceMs) => {
      await service.drain(graceMs)
      await running.close()
    },
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve())
          ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
        })
        await builds.close()
        await publishing
        await mcp.close()
        await mcpSources?.close()
        await service.shutdown()
        await e2b.close() // the E2B API's sandboxes
        budget?.close()
        if (ownsProvider) await provider.close?.()
        signin?.close()
        await stores.close()
      })()),
  }
  return running
}

/** src/templates' builder and spec reader, loaded when the server starts. */
async function loadTemplateBuilder(): Promise<{ build: BuildTemplate; parseSpec: ParseSpec }> {
  const { buildTemplate, parseSpec } = await import('../templates/index.js')
  return { build: buildTemplate, parseSpec }
}

/** The same names, in any order. */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name) => b.includes(name))
}
