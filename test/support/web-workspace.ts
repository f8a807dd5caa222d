/**
 * The web UI's fixture for browser tests: the real server (a token, the real local sandbox, a
 * scripted model), Debian's Chromium with the token already entered, on the start page; one per
 * test file, shared by its tests.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import type { ScriptedModel } from '../../src/models/scripted.js'
import { LocalProvider } from '../../src/sandbox/local/index.js'
import { type RunningServer, type ServerOptions, startServer } from '../../src/server/index.js'
import { launchChromium } from './chromium.js'

export interface WebWorkspace {
  server: RunningServer
  context: BrowserContext
  page: Page
  home: string
  /** GET an API path with the token. */
  get(path: string): Promise<Response>
  close(): Promise<void>
}

/** The real server for a browser test: a token, the real local sandbox, a scripted model. */
export async function startWebServer(
  name: string,
  model: ScriptedModel,
  options: Pick<ServerOptions, 'databaseUrl' | 'leaseMs'> = {},
): Promise<{ server: RunningServer; token: string; home: string; close(): Promise<void> }> {
  const token = `${name}-token`
  const home = mkdtempSync(join(tmpdir(), `analyst-${name}-home-`))
  const provider = new LocalProvider({ poolSize: 0 })
  const choice = {
    model,
    spec: 'scripted:script',
    provider: 'custom',
    modelId: 'script',
    mode: 'tools',
  } as const
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    home,
    model: async () => choice,
    tokens: [token],
    provider,
    ...options,
  })
  return {
    server,
    token,
    home,
    close: async () => {
      await server.close()
      await provider.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

/** Debian's Chromium in a profile folder of its own, with `token` already entered; its first page. */
export async function openBrowser(
  name: string,
  token: string,
): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const profileDir = mkdtempSync(join(tmpdir(), `analyst-${name}-chromium-`))
  const context = await launchChromium(profileDir)
  await context.addInitScript((value) => localStorage.setItem('analyst.token', value), token)
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(30_000)
  return {
    context,
    page,
    close: async () => {
      await context.close()
      rmSync(profileDir, { recursive: true, force: true })
    },
  }
}

export async function startWebWorkspace(name: string, model: ScriptedModel): Promise<WebWorkspace> {
  if (!existsSync('dist/web/index.html')) throw new Error('dist/web is missing: run `npm run build` first')
  const web = await startWebServer(name, model)
  const { server, token, home } = web
  const browser = await openBrowser(name, token)
  const { context, page } = browser
  await page.goto(server.url)
  return {
    server,
    context,
    page,
    home,
    get: (path) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } }),
    close: async () => {
      await browser.close()
      await web.close()
    },
  }
}
