/**
 * The Jupyter engine through Debian's JupyterHub: the URL is the hub, the token a service's API
 * token; the user's server is started through the hub API and reached through the hub's proxy.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/sandbox/index.js'
import { JUPYTER_CAPABILITIES, JupyterProvider } from '../../src/sandbox/jupyter/index.js'
import { describeConformance } from '../../src/test/conformance.js'
import { HUB_USER, type RunningHub, startJupyterHub } from '../support/jupyterhub.js'

let hub: RunningHub
let recordDir: string
let provider: JupyterProvider

beforeAll(async () => {
  hub = await startJupyterHub()
  recordDir = mkdtempSync(join(tmpdir(), 'analyst-records-'))
  provider = new JupyterProvider({
    url: hub.url,
    token: hub.token,
    hubUser: HUB_USER,
    interruptGraceMs: 1000,
    recordDir,
  })
}, 90_000)

afterAll(async () => {
  await hub?.stop()
  rmSync(recordDir, { recursive: true, force: true })
})

describe('jupyter engine on JupyterHub', () => {
  it("starts the user's server through the hub API and runs code there", async () => {
    const before = await fetch(`${hub.url}hub/api/users/${HUB_USER}`, {
      headers: { Authorization: `token ${hub.token}` },
    }).then((response) => response.json())
    expect(before.servers).toEqual({}) // not running yet
    const sandbox = await Sandbox.create({ provider })
    try {
      expect((await sandbox.runCode('6 * 7')).text).toBe('42')
    } finally {
      await sandbox.kill()
    }
    const server = (await provider.connect()).http.baseUrl
    expect(server).toBe(`${hub.url}user/${HUB_USER}/`)
  }, 90_000)

  it('asks which user when a service token is given without one', async () => {
    const unnamed = new JupyterProvider({ url: hub.url, token: hub.token, recordDir })
    const error = (await Sandbox.create({ provider: unnamed }).catch((e: unknown) => e)) as Error & {
      hint?: string
    }
    expect(error.name).toBe('SandboxUnavailableError')
    expect(error.hint).toMatch(/ANALYST_JUPYTERHUB_USER/)
  })
})

describeConformance({
  name: 'jupyter (JupyterHub)',
  create: (options = {}) => Sandbox.create({ provider, ...options }),
  capabilities: JUPYTER_CAPABILITIES,
})
