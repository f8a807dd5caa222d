/**
 * The Jupyter engine against a real Jupyter Server from Debian's packages: the shared conformance
 * suite, then what only a remote engine can get wrong: a wrong token, a server that goes away
 * mid-cell, rate-limited output, kernels left behind by a crashed run.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Sandbox } from '../../src/sandbox/index.js'
import { JUPYTER_CAPABILITIES, JupyterProvider } from '../../src/sandbox/jupyter/index.js'
import { describeConformance } from '../../src/test/conformance.js'
import { freePort, type RunningJupyter, startJupyterServer } from '../../src/test/support/jupyter-server.js'
import { waitFor } from '../support/wait.js'

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

const errorOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error & { hint?: string },
  )

describe('jupyter engine: settings and failures', () => {
  it('says the token is wrong, and which setting to fix, before starting anything', async () => {
    const wrong = new JupyterProvider({ url: server.url, token: 'not-the-token', recordDir })
    const error = await errorOf(Sandbox.create({ provider: wrong }))
    expect(error?.name).toBe('UnauthorizedError')
    expect(error?.message).toMatch(/refused the token/)
    expect(error?.hint).toMatch(/ANALYST_JUPYTER_TOKEN/)
    expect(await server.kernelIds()).toEqual([])
  })

  it('says when no server is configured, or none answers', async () => {
    expect(() => new JupyterProvider({ url: '', recordDir })).toThrow(/ANALYST_JUPYTER_URL/)
    const port = await freePort()
    const error = await errorOf(
      Sandbox.create({ provider: new JupyterProvider({ url: `http://127.0.0.1:${port}/`, recordDir }) }),
    )
    expect(error?.name).toBe('SandboxUnavailableError')
    expect(error?.message).toMatch(/Cannot reach the Jupyter server .*ECONNREFUSED/)
  })

  it('names the kernels there are when the one asked for is missing', async () => {
    const provider = new JupyterProvider({
      url: server.url,
      token: server.token,
      kernelName: 'julia-1.9',
      recordDir,
    })
    const error = await errorOf(Sandbox.create({ provider }))
    expect(error?.message).toMatch(/no kernel named julia-1.9/)
    expect(error?.hint).toMatch(/python3/)
    expect(error).toMatchObject({ fix: { setting: 'jupyterKernel', example: 'python3' } })
  })

  it('refuses limits it cannot enforce instead of ignoring them', async () => {
    const error = await errorOf(Sandbox.create({ provider, limits: { memoryBytes: 1 << 30 } }))
    expect(error?.name).toBe('InvalidArgumentError')
    expect(error?.message).toMatch(/cannot enforce limits.memoryBytes/)
  })

  it('sets the sandbox envs in the kernel itself (the server ignores env in the start request)', async () => {
    const sandbox = await Sandbox.create({ provider, envs: { ANALYST_GIVEN: 'by caller' } })
    try {
      expect((await sandbox.runCode("import os\nos.environ['ANALYST_GIVEN'], os.getcwd()")).text).toMatch(
        /^\('by caller', '.*\/analyst-[0-9a-f]+'\)$/,
      )
    } finally {
      await sandbox.kill()
    }
  })

  it('removes its workspace and deletes its kernels on kill()', async () => {
    const before = new Set(await server.kernelIds())
    const sandbox = await Sandbox.create({ provider })
    await sandbox.createContext()
    const folder = (await sandbox.runCode('import os\nos.getcwd()')).text?.slice(1, -1) ?? ''
    expect(existsSync(folder)).toBe(true)
    expect((await server.kernelIds()).filter((id) => !before.has(id))).toHaveLength(2)
    await sandbox.kill()
    expect(existsSync(folder)).toBe(false)
    expect((await server.kernelIds()).filter((id) => !before.has(id))).toEqual([])
    expect(readdirSync(recordDir)).toEqual([])
  })

  it('shuts down the kernels a crashed run left behind, and their workspaces', async () => {
    // A run that crashed: its kernel runs on, recorded as started by a process that is gone.
    const crashed = await Sandbox.create({ provider })
    const folder = (await crashed.runCode('import os\nos.getcwd()')).text?.slice(1, -1) ?? ''
    const [record] = readdirSync(recordDir)
    const dead = spawnSync('true').pid
    const file = join(recordDir, record ?? '')
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), process: String(dead) }))
    const leftover = JSON.parse(readFileSync(file, 'utf8')).kernelId
    expect(await server.kernelIds()).toContain(leftover)

    const next = new JupyterProvider({ url: server.url, token: server.token, recordDir })
    const sandbox = await Sandbox.create({ provider: next })
    try {
      expect(await server.kernelIds()).not.toContain(leftover)
      expect(existsSync(folder)).toBe(false)
      expect(readdirSync(recordDir)).toHaveLength(1) // the new sandbox's own
    } finally {
      await sandbox.kill()
    }
  })
})

describe('jupyter engine: what a kernel keeps', () => {
  it("keeps each kernel's input history in memory, out of the server's history file and other sandboxes", async () => {
    const first = await Sandbox.create({ provider })
    const second = await Sandbox.create({ provider })
    try {
      await first.runCode('marker_4711 = 1')
      expect((await first.runCode('_i')).text).toBe("'marker_4711 = 1'")
      const search = await second.runCode("get_ipython().run_line_magic('history', '-g marker_4711')")
      expect(search.error).toBeUndefined()
      expect(search.logs.stdout.join('')).not.toContain('marker_4711 = 1')
      // IPython's file in the server's home (HOME is the root's parent): the session row only.
      const file = join(server.root, '..', '.ipython', 'profile_default', 'history.sqlite')
      expect(existsSync(file)).toBe(true)
      expect(readFileSync(file).includes('marker_4711')).toBe(false)
    } finally {
      await Promise.all([first.kill(), second.kill()])
    }
  }, 60_000)
})

describe('jupyter engine: output at the end of a cell', () => {
  it("keeps a subprocess's last line in its cell, however fast the cell ends", async () => {
    const sandbox = await Sandbox.create({ provider })
    try {
      for (let i = 0; i < 5; i++) {
        const execution = await sandbox.runCode(`import os\n_ = os.system('echo last words ${i}')`)
        expect(execution.logs.stdout).toEqual([`last words ${i}\n`])
      }
    } finally {
      await sandbox.kill()
    }
  }, 60_000)
})

describe('jupyter engine: a server whose kernel WebSocket speaks only JSON', () => {
  it('falls back from the v1 binary form and gives the same results', async () => {
    const legacy = await startJupyterServer({ config: "c.ServerApp.kernel_ws_protocol = ''" })
    try {
      const provider = new JupyterProvider({ url: legacy.url, token: legacy.token, recordDir })
      const sandbox = await Sandbox.create({ provider })
      try {
        const execution = await sandbox.runCode(
          "import sys\nprint('out')\nprint('err', file=sys.stderr)\n1 + 1",
        )
        expect(execution.logs).toEqual({ stdout: ['out\n'], stderr: ['err\n'] })
        expect(execution.text).toBe('2')
        expect((await sandbox.runCode('1 / 0')).error?.name).toBe('ZeroDivisionError')
        // A second context opens its channel in JSON straight away.
        const context = await sandbox.createContext()
        expect((await sandbox.runCode('40 + 2', { context })).text).toBe('42')
      } finally {
        await sandbox.kill()
      }
    } finally {
      await legacy.stop()
    }
  }, 60_000)
})

describe('jupyter engine: a server that goes away', () => {
  it('ends a running cell with a clear error, without hanging, and says so to later calls', async () => {
    const doomed = await startJupyterServer()
    try {
      const provider = new JupyterProvider({ url: doomed.url, token: doomed.token, recordDir })
      const sandbox = await Sandbox.create({ provider })
      const running = sandbox.runCode("import time\nprint('working', flush=True)\ntime.sleep(60)", {
        onStdout: () => {
          doomed.process.kill('SIGKILL')
        },
      })
      const error = await errorOf(running)
      expect(error?.name).toBe('SandboxUnavailableError')
      expect(error?.message).toMatch(/connection to kernel .* closed/)
      const next = await errorOf(sandbox.runCode('1'))
      expect(next?.message).toMatch(/Cannot reach the Jupyter server/)
      expect(next?.hint).toMatch(/ANALYST_JUPYTER_URL/)
      await sandbox.kill() // still safe
    } finally {
      await doomed.stop()
    }
  }, 60_000)
})

describe('jupyter engine: output over the server IOPub rate limit', () => {
  it('reports the dropped output as truncated, not as the server message', async () => {
    const limited = await startJupyterServer({
      args: ['--ServerApp.iopub_msg_rate_limit=100', '--ServerApp.rate_limit_window=1'],
    })
    try {
      const provider = new JupyterProvider({ url: limited.url, token: limited.token, recordDir })
      const sandbox = await Sandbox.create({ provider })
      try {
        const execution = await sandbox.runCode(
          // No pause between prints: on a busy machine a paused loop may stay under the limit.
          "for i in range(1000):\n    print(i, flush=True)\nprint('last', flush=True)",
        )
        const stderr = execution.logs.stderr.join('')
        expect(stderr).toMatch(
          /output truncated: the Jupyter server dropped output over its IOPub rate limit/,
        )
        expect(stderr).not.toContain('IOPub message rate exceeded')
        expect(execution.logs.stdout.length).toBeLessThan(1001)
      } finally {
        await sandbox.kill()
      }
    } finally {
      await limited.stop()
    }
  }, 60_000)
})

describe('jupyter engine: kernels kept by the restart supervisor', () => {
  it('starts no kernel on the server once killed, not even for a context whose start was under way', async () => {
    const before = new Set(await server.kernelIds())
    const sandbox = await Sandbox.create({ provider })
    const context = await sandbox.createContext()
    const creating = errorOf(sandbox.createContext())
    const restarting = errorOf(sandbox.restartCodeContext(context))
    await sandbox.kill()
    expect((await creating)?.message).toMatch(/killed/)
    expect((await restarting)?.message).toMatch(/killed/)
    await expect(sandbox.createContext()).rejects.toThrow(/killed/)
    await expect(sandbox.restartCodeContext('default')).rejects.toThrow(/killed/)
    expect((await server.kernelIds()).filter((id) => !before.has(id))).toEqual([])
    expect(readdirSync(recordDir)).toEqual([])
  })

  it('says a kernel deleted on the server since the last cell died (not that a connection dropped), and goes on in a new one', async () => {
    const before = new Set(await server.kernelIds())
    const sandbox = await Sandbox.create({ provider })
    try {
      const [id] = (await server.kernelIds()).filter((kernel) => !before.has(kernel))
      await sandbox.runCode('kept = 1')
      // The server keeps the kernel's socket open, and silent: the cell's watchdog finds the kernel gone.
      expect((await server.api(`api/kernels/${id}`, { method: 'DELETE' })).status).toBe(204)
      const execution = await sandbox.runCode('kept')
      expect(execution.error?.name).toBe('KernelDied')
      expect(execution.error?.value).toMatch(/variables and imports were lost/)
      const stderr: string[] = []
      const next = await sandbox.runCode('kept', { onStderr: (message) => stderr.push(message.line) })
      expect(next.error?.name).toBe('NameError')
      expect(stderr).toEqual([]) // the cell before said so
      expect((await sandbox.runCode('6 * 7')).text).toBe('42')
    } finally {
      await sandbox.kill()
    }
  }, 60_000)

  it('gives up on a kernel that keeps stopping before it runs a cell, with a clear error, and starts no more', async () => {
    // On the file's server (a server of its own cost a start): its kernels started from now on
    // load the startup file, which does nothing once the marker is gone, and it is removed after.
    const before = new Set(await server.kernelIds())
    const started = async () => (await server.kernelIds()).filter((id) => !before.has(id))
    // Once the marker is there, every new kernel of the server dies at its first request (Analyst's prelude).
    const marker = join(server.root, '..', 'kernels-die')
    const startup = join(server.root, '..', '.ipython', 'profile_default', 'startup')
    const die = join(startup, '00-die.py')
    try {
      mkdirSync(startup, { recursive: true })
      writeFileSync(
        die,
        [
          'import os',
          'def _die():',
          `    if os.path.exists(${JSON.stringify(marker)}):`,
          '        os._exit(1)',
          "get_ipython().events.register('pre_execute', _die)",
        ].join('\n'),
      )
      const provider = new JupyterProvider({ url: server.url, token: server.token, recordDir })
      const sandbox = await Sandbox.create({ provider })
      try {
        expect((await sandbox.runCode('6 * 7')).text).toBe('42')
        writeFileSync(marker, '')
        expect((await sandbox.runCode('import os\nos._exit(1)')).error?.name).toBe('KernelDied')
        const failures: string[] = []
        for (let i = 0; i < 10 && !/no longer restarts/.test(failures.at(-1) ?? ''); i++) {
          failures.push((await errorOf(sandbox.runCode('1')))?.message ?? 'the cell ran')
        }
        const given = failures.pop()
        expect(given).toMatch(
          /^The kernel stopped 5 times in a row before it could run a cell: this sandbox no longer restarts it/,
        )
        // The first new kernel started as the cell that ended the old one failed, in the background:
        // its failure goes to the next cell, or that cell starts the second.
        expect(failures.length).toBeGreaterThanOrEqual(4)
        expect(failures.length).toBeLessThanOrEqual(5)
        for (const failure of failures) {
          expect(failure).toMatch(/^The Jupyter kernel stopped while it was being set up for Analyst/)
        }
        // Given up: even with the cause gone, no kernel is started again.
        rmSync(marker)
        expect((await errorOf(sandbox.runCode('1')))?.message).toBe(given)
        await waitFor(async () => (await started()).length === 0, {
          what: 'the kernels that stopped to be deleted from the server',
        })
      } finally {
        await sandbox.kill()
      }
      expect(await started()).toEqual([])
    } finally {
      rmSync(die, { force: true })
      rmSync(marker, { force: true })
    }
  }, 120_000)
})
