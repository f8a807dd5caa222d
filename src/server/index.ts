/**
 * `analyst serve`: the HTTP API and the web UI over one store.
 * @module
 */
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { serve } from '@hono/node-server'
import { AnalystError } from '../errors.js'
import type { ModelChoice } from '../models/index.js'
import { resolveModel } from '../models/index.js'
import { createProvider } from '../providers.js'
import type { CreateOpts } from '../sandbox/index.js'
import { analystHome, Store } from '../store/store.js'
import { createApp } from './app.js'
import { createE2BApi } from './e2b/index.js'
import { SessionManager } from './sessions.js'

export { createApp, ownerOf } from './app.js'
export { SessionManager } from './sessions.js'
export type * from './types.js'

/** The built web UI: dist/web, two folders up from this module in src/ and in dist/ alike. */
export const WEB_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url))

export interface ServerOptions {
  /** @default 127.0.0.1 */
  host?: string
  /** 0 picks a free port. @default 8787 */
  port?: number
  /** @default ANALYST_HOME or ~/.analyst */
  home?: string
  /** @default ANALYST_TOKEN, split at commas */
  tokens?: string[]
  /** The model for every session; default: the CLI's configuration (ANALYST_MODEL, provider keys). */
  model?: () => Promise<ModelChoice>
  /** Sandbox options; a `provider` given here is the caller's to close. */
  sandbox?: CreateOpts
  /** The engine, when no provider is given (--sandbox). @default ANALYST_SANDBOX or local */
  engine?: string
  webDir?: string
  maxUploadBytes?: number
  idleMs?: number
}

export interface RunningServer {
  url: string
  store: Store
  sessions: SessionManager
  /** Stops taking requests, ends every sandbox, closes the store. */
  close(): Promise<void>
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/

export function tokensFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.ANALYST_TOKEN ?? '')
    .split(',')
    .map((token) => token.trim())
    .filter(Boolean)
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1'
  const tokens = options.tokens ?? tokensFromEnv()
  if (!LOOPBACK.test(host) && tokens.length === 0) {
    throw new AnalystError(
      `Refusing to listen on ${host} without tokens: anyone who reaches it could run code`,
      {
        hint: 'Set ANALYST_TOKEN (comma-separated tokens), or listen on 127.0.0.1.',
      },
    )
  }
  const store = Store.open(options.home ?? analystHome())
  const interrupted = store.markInterrupted()
  if (interrupted > 0)
    console.error(
      `analyst serve: ${interrupted} question(s) were cut off by the last stop; their sessions can continue.`,
    )
  let model: Promise<ModelChoice> | undefined
  // Exactly one provider: the one the sessions use is the one warmed now and closed at the end.
  const ownsProvider = !options.sandbox?.provider
  const provider =
    options.sandbox?.provider ??
    (await createProvider(options.engine, { poolSize: Number(process.env.ANALYST_POOL_SIZE ?? 2) }))
  const sandbox: CreateOpts = { ...options.sandbox, provider }
  // Start the warm pool now, so the first session does not wait for a kernel.
  if (ownsProvider) void provider.warm?.()
  const sessions = new SessionManager({
    store,
    model:
      options.model ??
      (() =>
        (model ??= resolveModel().catch((error) => {
          model = undefined
          throw error
        }))),
    sandbox,
    idleMs: options.idleMs,
  })
  // E2B-compatible API over the same provider as the sessions.
  const e2b = createE2BApi({ provider, tokens })
  const app = createApp({
    e2b,
    store,
    sessions,
    tokens,
    webDir: options.webDir ?? WEB_DIR,
    maxUploadBytes: options.maxUploadBytes,
  })
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 8787 }, () =>
      resolve(started),
    )
    started.once('error', reject)
  })
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  let closing: Promise<void> | undefined
  return {
    url: `http://${shown}:${address.port}`,
    store,
    sessions,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve())
          ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
        })
        await sessions.shutdown()
        await e2b.close() // the E2B API's sandboxes
        if (ownsProvider) await provider.close?.()
        store.close()
      })()),
  }
}
