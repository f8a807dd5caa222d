/**
 * `analyst serve` on 127.0.0.1 for the E2B SDK tests: a real server on a free port, a local
 * provider, and the SDK pointed at it through its own environment variables.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { LocalProvider } from '../../src/index.js'
import { type RunningServer, type ServerOptions, startServer } from '../../src/server/index.js'

export interface E2BServer {
  server: RunningServer
  provider: LocalProvider
  url: string
  token: string
  /** A second token: another owner. */
  otherToken: string
  close(): Promise<void>
}

/** Starts the server with one token and sets E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY. */
export async function startE2BServer(
  options: Pick<
    ServerOptions,
    'allowNetwork' | 'allowTemplateBuilds' | 'templateBuilder' | 'maxUploadBytes'
  > & {
    poolSize?: number
  } = {},
): Promise<E2BServer> {
  const home = mkdtempSync(join(tmpdir(), 'analyst-e2b-'))
  // A template's files are read by the sandbox's uid, not root's: its folder must be open to it.
  chmodSync(home, 0o755)
  const provider = new LocalProvider({ poolSize: options.poolSize ?? 1, interruptGraceMs: 1000 })
  void provider.warm()
  const token = `tok-${Math.random().toString(36).slice(2)}`
  const otherToken = `tok-${Math.random().toString(36).slice(2)}`
  const server = await startServer({
    port: 0,
    home,
    tokens: [token, otherToken],
    provider,
    allowNetwork: options.allowNetwork,
    allowTemplateBuilds: options.allowTemplateBuilds,
    maxUploadBytes: options.maxUploadBytes,
    ...(options.templateBuilder ? { templateBuilder: options.templateBuilder } : {}),
  })
  process.env.E2B_API_URL = server.url
  process.env.E2B_SANDBOX_URL = server.url
  process.env.E2B_API_KEY = token
  return {
    server,
    provider,
    url: server.url,
    token,
    otherToken,
    close: async () => {
      await server.close()
      await provider.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

/**
 * For a test file: the server before its tests and one sandbox on it (made by `create`, with
 * the SDK the file uses), both ended after them. Read `.sandbox` and `.e2b` inside tests.
 */
export function serverWithSandbox<S extends { kill(): Promise<unknown> }>(
  create: () => Promise<S>,
): { readonly e2b: E2BServer; readonly sandbox: S } {
  const state: { e2b?: E2BServer; sandbox?: S } = {}
  beforeAll(async () => {
    state.e2b = await startE2BServer()
    state.sandbox = await create()
  })
  afterAll(async () => {
    await state.sandbox?.kill()
    await state.e2b?.close()
  })
  return {
    get e2b() {
      if (!state.e2b) throw new Error('the server starts in beforeAll')
      return state.e2b
    },
    get sandbox() {
      if (!state.sandbox) throw new Error('the sandbox is made in beforeAll')
      return state.sandbox
    },
  }
}
