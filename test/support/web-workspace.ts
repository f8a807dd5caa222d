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
import { type RunningServer, startServer } from '../../src/server/index.js'
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

export async function startWebWorkspace(name: string, model: ScriptedModel): Promise<WebWorkspace> {
  if (!existsSync('dist/web/index.html')) throw new Error('dist/web is missing: run `npm run build` first')
  const token = `${name}-token`
  const home = mkdtempSync(join(tmpdir(), `analyst-${name}-home-`))
  const profileDir = mkdtempSync(join(tmpdir(), `analyst-${name}-chromium-`))
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
  })
  const context = await launchChromium(profileDir)
  await context.addInitScript((value) => localStorage.setItem('analyst.token', value), token)
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(30_000)
  await page.goto(server.url)
  return {
    server,
    context,
    page,
    home,
    get: (path) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } }),
    close: async () => {
      await context.close()
      await server.close()
      await provider.close()
      rmSync(home, { recursive: true, force: true })
      rmSync(profileDir, { recursive: true, force: true })
    },
  }
}
