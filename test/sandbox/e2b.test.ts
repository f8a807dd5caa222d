/**
 * The e2b provider (Analyst's sandboxes through the official @e2b/code-interpreter SDK), run
 * against Analyst's own E2B-compatible server on 127.0.0.1: the same wire protocol as E2B's cloud,
 * which cannot be reached from here. The shared conformance suite, then what is the provider's own.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createProvider } from '../../src/providers.js'
import { E2B_CAPABILITIES, E2BProvider } from '../../src/sandbox/e2b/index.js'
import { Sandbox } from '../../src/sandbox/index.js'
import { describeConformance } from '../../src/test/conformance.js'
import { type E2BServer, startE2BServer } from '../e2b/server.js'

let e2b: E2BServer
let provider: E2BProvider
beforeAll(async () => {
  e2b = await startE2BServer()
  provider = new E2BProvider({ apiKey: e2b.token, apiUrl: e2b.url, sandboxUrl: e2b.url })
})
afterAll(async () => {
  await e2b?.close()
})

const create = (options: Parameters<typeof Sandbox.create>[0] = {}) =>
  Sandbox.create({ provider, ...options })

// E2B's server gives a string's text without its quotes (template/server/api/models/result.py).
// E2B's cloud loses a dead kernel's state (E2B_CAPABILITIES says so); Analyst's server, behind
// the engine here, rebuilds it by replay, and the suite checks that it does.
describeConformance({
  name: 'e2b',
  create,
  stringText: 'unquoted',
  capabilities: { ...E2B_CAPABILITIES, rebuildsKernelState: true },
})

describe('e2b provider', () => {
  it('uploads data files read-only to data/ and runs in the E2B sandbox', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-e2b-data-'))
    writeFileSync(join(dir, 'sales.csv'), 'region,amount\nN,3\nS,4\n')
    const sandbox = await create({ data: [join(dir, 'sales.csv')] })
    try {
      const execution = await sandbox.runCode(
        "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\ntry:\n    open('data/sales.csv', 'a').write('x')\nexcept OSError as e:\n    print(type(e).__name__)\nint(df.amount.sum())",
      )
      expect(execution.text).toBe('7')
      expect(execution.logs.stdout.join('')).toMatch(/Error/)
      expect(execution.artifacts).toEqual([])
      expect(sandbox.sandboxId).toMatch(/^i[0-9a-z]+$/)
    } finally {
      await sandbox.kill()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("runs R and bash through E2B's language option and contexts (--language r on the e2b engine)", async () => {
    const sandbox = await create()
    try {
      await sandbox.runCode('n <- 40', { language: 'r' })
      expect((await sandbox.runCode('n + 2', { language: 'r' })).text).toBe('[1] 42')
      // Python's default context is another kernel: R's variable is not there.
      expect((await sandbox.runCode("'n' in globals()")).text).toBe('False')
      const bash = await sandbox.createContext({ language: 'bash' })
      expect(bash.language).toBe('bash')
      const echoed = await sandbox.runCode('x=7; echo "x is $x"', { context: bash })
      expect(echoed.logs.stdout.join('')).toBe('x is 7\n')
      expect((await sandbox.runCode('echo "$x"', { context: bash })).logs.stdout.join('')).toBe('7\n')
    } finally {
      await sandbox.kill()
    }
  })

  it('interrupts a cell at its timeout and keeps the state', async () => {
    const sandbox = await create()
    try {
      await sandbox.runCode('kept = 1')
      const execution = await sandbox.runCode('import time\ntime.sleep(60)', { timeoutMs: 1500 })
      expect(execution.error?.name).toBe('TimeoutError')
      expect((await sandbox.runCode('kept + 1', { timeoutMs: 20_000 })).text).toBe('2')
    } finally {
      await sandbox.kill()
    }
  })

  it('says what is wrong with the key, and refuses what E2B cannot honour', async () => {
    const wrong = new E2BProvider({ apiKey: 'wrong', apiUrl: e2b.url, sandboxUrl: e2b.url })
    await expect(Sandbox.create({ provider: wrong })).rejects.toMatchObject({
      name: 'SandboxUnavailableError',
      message: 'E2B refused the API key while creating a sandbox',
      hint: expect.stringContaining('E2B_API_KEY'),
    })
    await expect(createProvider('e2b', { env: {} })).rejects.toMatchObject({
      name: 'SandboxUnavailableError',
      message: 'E2B_API_KEY is not set',
    })
    await expect(create({ limits: { memoryBytes: 1024 ** 3 } })).rejects.toThrow(/cannot set limits/)
    await expect(create({ isolation: 'none' })).rejects.toThrow(/does not apply/)
  })

  it('is the engine --sandbox e2b chooses, configured from the environment', async () => {
    const chosen = await createProvider('e2b', {
      env: { E2B_API_KEY: e2b.token, E2B_API_URL: e2b.url, E2B_SANDBOX_URL: e2b.url },
    })
    expect(chosen.name).toBe('e2b')
    const sandbox = await Sandbox.create({ provider: chosen })
    try {
      expect((await sandbox.runCode('6 * 7')).text).toBe('42')
    } finally {
      await sandbox.kill()
    }
  })

  it('runs `analyst run --sandbox e2b` with the E2B variables', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'analyst-e2b-cli-'))
    writeFileSync(join(dir, 'prices.csv'), 'item,price\napple,1.5\npear,2.5\n')
    writeFileSync(
      join(dir, 'mean.py'),
      "import pandas as pd\nprint(pd.read_csv('data/prices.csv').price.mean())\n",
    )
    try {
      // Asynchronously: the server answering the command lives in this process.
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [resolve('dist/cli/bin.js'), 'run', 'mean.py', '--data', 'prices.csv', '--sandbox', 'e2b'],
        {
          cwd: dir,
          env: {
            ...process.env,
            NO_COLOR: '1',
            E2B_API_KEY: e2b.token,
            E2B_API_URL: e2b.url,
            E2B_SANDBOX_URL: e2b.url,
          },
          timeout: 60_000,
        },
      )
      expect(stdout).toContain('2.0')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
