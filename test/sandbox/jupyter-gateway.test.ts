/**
 * The Jupyter engine through Enterprise Gateway's differences (a stand-in in front of a real
 * Jupyter Server, see test/support/fake-gateway.ts): files through the kernel, KERNEL_* variables
 * in the start request, 403 on listing kernels, a slow start, its own token.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/sandbox/index.js'
import {
  checkJupyter,
  JUPYTER_GATEWAY_CAPABILITIES,
  JupyterProvider,
} from '../../src/sandbox/jupyter/index.js'
import type { BuiltTemplate } from '../../src/templates/types.js'
import { describeConformance } from '../../src/test/conformance.js'
import { type RunningJupyter, startJupyterServer } from '../../src/test/support/jupyter-server.js'
import { type FakeGateway, startFakeGateway } from '../support/fake-gateway.js'

let server: RunningJupyter
let gateway: FakeGateway
let recordDir: string
let provider: JupyterProvider
const KERNEL_ENV = { KERNEL_USERNAME: 'alice', KERNEL_NAMESPACE: 'analysts' }

beforeAll(async () => {
  server = await startJupyterServer()
  gateway = await startFakeGateway(server, { token: 'gateway-token', startDelayMs: 1500 })
  recordDir = mkdtempSync(join(tmpdir(), 'analyst-records-'))
  provider = new JupyterProvider({
    url: gateway.url,
    token: gateway.token,
    kernelEnv: KERNEL_ENV,
    interruptGraceMs: 1000,
    recordDir,
  })
}, 90_000)

afterAll(async () => {
  await gateway?.close()
  await server?.stop()
  rmSync(recordDir, { recursive: true, force: true })
})

describeConformance({
  name: 'jupyter (Enterprise Gateway)',
  create: (options = {}) => Sandbox.create({ provider, ...options }),
  capabilities: JUPYTER_GATEWAY_CAPABILITIES,
})

describe('jupyter engine on Enterprise Gateway', () => {
  it('sends the KERNEL_* variables in the start request, and only those', async () => {
    const sandbox = await Sandbox.create({ provider, envs: { NOT_FOR_THE_GATEWAY: '1' } })
    try {
      expect(gateway.startEnvs.at(-1)).toEqual(KERNEL_ENV)
      // No Contents API: files go through the kernel, and the provider says what that costs.
      expect(provider.capabilities).toBe(JUPYTER_GATEWAY_CAPABILITIES)
      // envs are set by the kernel itself.
      expect((await sandbox.runCode("import os\nos.environ['NOT_FOR_THE_GATEWAY']")).text).toBe("'1'")
    } finally {
      await sandbox.kill()
    }
  })

  it("starts a template as the kernel's image (KERNEL_IMAGE); a built template is refused", async () => {
    const sandbox = await Sandbox.create({ provider, template: 'registry.example/analyst-modern:1' })
    try {
      expect(gateway.startEnvs.at(-1)).toEqual({
        ...KERNEL_ENV,
        KERNEL_IMAGE: 'registry.example/analyst-modern:1',
      })
      expect((await sandbox.runCode('1 + 1')).text).toBe('2')
    } finally {
      await sandbox.kill()
    }
    const built = { id: 'f'.repeat(64), names: ['modern'] } as unknown as BuiltTemplate
    await expect(Sandbox.create({ provider, template: built })).rejects.toThrow(
      /starts its own templates by name, not Analyst's built ones/,
    )
  })

  it('refuses a KERNEL_* value the gateway would refuse, before asking it', () => {
    expect(
      () => new JupyterProvider({ url: gateway.url, kernelEnv: { KERNEL_USERNAME: 'a$(id)' }, recordDir }),
    ).toThrow(/characters a gateway refuses/)
  })

  it('waits for a slow start (longer than any other request may take)', async () => {
    const slow = await startFakeGateway(server, { token: 'slow', startDelayMs: 4000 })
    try {
      const patient = new JupyterProvider({
        url: slow.url,
        token: slow.token,
        requestTimeoutMs: 2500,
        recordDir,
      })
      const sandbox = await Sandbox.create({ provider: patient })
      expect((await sandbox.runCode('6 * 7')).text).toBe('42')
      await sandbox.kill()
    } finally {
      await slow.close()
    }
  }, 60_000)

  it('says when a start takes longer than allowed', async () => {
    const impatient = new JupyterProvider({
      url: gateway.url,
      token: gateway.token,
      createTimeoutMs: 500,
      recordDir,
    })
    const error = await Sandbox.create({ provider: impatient }).catch((e: Error) => e)
    expect((error as Error).name).toBe('SandboxUnavailableError')
    expect((error as Error).message).toMatch(/did not answer POST api\/kernels within/)
  })

  it('says the gateway refused its token, with the setting to fix', async () => {
    const wrong = new JupyterProvider({ url: gateway.url, token: 'nope', recordDir })
    const error = (await Sandbox.create({ provider: wrong }).catch((e: unknown) => e)) as Error & {
      hint?: string
    }
    expect(error.name).toBe('UnauthorizedError')
    expect(error.hint).toMatch(/ANALYST_JUPYTER_TOKEN/)
  })

  it('doctor tells it is a gateway, with files through the kernel', async () => {
    const checks = await checkJupyter({
      url: gateway.url,
      token: gateway.token,
      kernelEnv: KERNEL_ENV,
      recordDir,
    })
    expect(checks.find((check) => check.name === 'jupyter server')?.detail).toMatch(
      /Enterprise Gateway 3\.2\.3 .*files through the kernel/,
    )
    expect(checks.find((check) => check.name === 'jupyter kernel')?.ok).toBe(true)
  }, 60_000)
})

describe('jupyter engine on Enterprise Gateway: a kernel WebSocket that drops', () => {
  /** Runs a cell during which every kernel socket through the gateway drops: it fails as a lost connection. */
  async function dropDuringCell(sandbox: Sandbox) {
    const error = await sandbox
      .runCode("import time\nprint('running', flush=True)\ntime.sleep(1)", {
        onStdout: () => gateway.dropSockets(),
      })
      .then(
        () => undefined,
        (error: Error) => error,
      )
    expect(error?.message).toMatch(/connection to kernel .* closed/)
  }

  it('reaches the kernel again when only its socket dropped: its state kept, the next cell told nothing', async () => {
    const sandbox = await Sandbox.create({ provider })
    try {
      await sandbox.runCode('kept = 7')
      const starts = gateway.startEnvs.length
      await dropDuringCell(sandbox)
      const stderr: string[] = []
      const next = await sandbox.runCode('kept * 6', { onStderr: (message) => stderr.push(message.line) })
      expect(next.text).toBe('42')
      expect(stderr).toEqual([])
      expect(gateway.startEnvs.length).toBe(starts) // not a restart
    } finally {
      await sandbox.kill()
    }
  })

  it('tells the next cell when its kernel was gone from the server meanwhile, and runs it in a new one', async () => {
    const before = new Set(await server.kernelIds())
    const sandbox = await Sandbox.create({ provider })
    try {
      const [id] = (await server.kernelIds()).filter((kernel) => !before.has(kernel))
      await sandbox.runCode('kept = 7')
      const starts = gateway.startEnvs.length
      await dropDuringCell(sandbox)
      expect((await server.api(`api/kernels/${id}`, { method: 'DELETE' })).status).toBe(204)
      const stderr: string[] = []
      const next = await sandbox.runCode('kept', { onStderr: (message) => stderr.push(message.line) })
      expect(stderr.join('')).toMatch(
        /^\[The kernel had stopped since the last cell \(it was gone from the Jupyter server\)\. All variables and imports were lost/,
      )
      expect(next.error?.name).toBe('NameError')
      expect((await sandbox.runCode('6 * 7')).text).toBe('42')
      expect(gateway.startEnvs.length).toBe(starts + 1)
    } finally {
      await sandbox.kill()
    }
  })
})
