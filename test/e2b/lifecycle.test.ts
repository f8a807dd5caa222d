/**
 * A sandbox's life through the official E2B SDK against `analyst serve`: killed while a cell or a
 * command streams, paused and resumed (its files, variables and contexts back, its processes
 * gone), and measured.
 */
import { readFileSync } from 'node:fs'
import { Sandbox, TimeoutError } from '@e2b/code-interpreter'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/wait.js'
import { type E2BServer, startE2BServer } from './server.js'

let e2b: E2BServer
beforeAll(async () => {
  e2b = await startE2BServer()
})
afterAll(async () => {
  await e2b?.close()
})

/** Resolves when `text` has come on stdout, so the stream is known to be under way. */
function printed(text: string) {
  let seen = ''
  let resolve = () => {}
  const arrived = new Promise<void>((r) => {
    resolve = r
  })
  return {
    arrived,
    onStdout: (data: string | { line: string }) => {
      seen += typeof data === 'string' ? data : data.line
      if (seen.includes(text)) resolve()
    },
  }
}

describe('E2B SDK: a sandbox killed while it streams', () => {
  it('rejects the runCode in progress with a TimeoutError, not a result', async () => {
    const sandbox = await Sandbox.create()
    const started = printed('started')
    const execution = sandbox.runCode("print('started', flush=True)\nimport time\ntime.sleep(300)", {
      timeoutMs: 300_000,
      onStdout: started.onStdout,
    })
    execution.catch(() => {})
    await started.arrived
    await sandbox.kill()
    const error = await execution.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(TimeoutError)
    expect((error as Error).message).toMatch(/sandbox was killed while the request was in progress/)
  })

  it("rejects a running command's wait() with a TimeoutError", async () => {
    const sandbox = await Sandbox.create()
    const started = printed('started')
    const command = await sandbox.commands.run('echo started; sleep 60', {
      background: true,
      onStdout: started.onStdout,
    })
    await started.arrived
    await sandbox.kill()
    const error = await command.wait().then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(TimeoutError)
    expect((error as Error).message).toContain('sandbox was killed or reached its end of life')
  })
})

describe('E2B SDK: pause and resume', () => {
  it('keeps the files and what the cells made, in every context; running processes end', async () => {
    const sandbox = await Sandbox.create({ envs: { GREETING: 'hello' } })
    try {
      await sandbox.runCode(
        'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3]})\ndef double(x):\n    return 2 * x',
      )
      await sandbox.runCode("raise ValueError('never replayed')")
      const context = await sandbox.createCodeContext()
      await sandbox.runCode('inner = 7', { context })
      await sandbox.runCode("import os\nfrom_env = os.environ['GREETING'] + os.environ['ONCE']", {
        envs: { ONCE: '!' },
      })
      await sandbox.files.write('kept/notes.txt', 'kept')
      await sandbox.runCode("open('by-cell.txt', 'w').write('from the cell')")
      // Changed after the cell that made it: the resumed sandbox has this, not what replay writes.
      await sandbox.commands.run('echo from the command > by-cell.txt && mkdir -p empty/folder')
      await sandbox.commands.run('sleep 300', { background: true })
      const bootId = async (on: Sandbox) =>
        (await on.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
      const bootBefore = await bootId(sandbox)
      expect(bootBefore).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(bootBefore).not.toBe(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim())
      const cellSees = await sandbox.runCode("open('/proc/sys/kernel/random/boot_id').read().strip()")
      expect(cellSees.text).toBe(bootBefore)

      expect(await sandbox.betaPause()).toBe(true)
      expect(await sandbox.isRunning()).toBe(false)
      expect((await Sandbox.getInfo(sandbox.sandboxId)).state).toBe('paused')
      const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
      expect(paused.map((s) => s.sandboxId)).toContain(sandbox.sandboxId)
      expect(await sandbox.betaPause()).toBe(false)

      const resumed = await Sandbox.connect(sandbox.sandboxId)
      expect(await resumed.isRunning()).toBe(true)
      expect((await Sandbox.getInfo(sandbox.sandboxId)).state).toBe('running')
      expect((await resumed.runCode('double(int(df.a.sum()))')).text).toBe('12')
      expect((await resumed.runCode('from_env')).text).toBe('hello!')
      expect((await resumed.runCode('inner', { context })).text).toBe('7')
      expect((await resumed.runCode('inner')).error?.name).toBe('NameError')
      expect(await resumed.files.read('kept/notes.txt')).toBe('kept')
      expect(await resumed.files.read('by-cell.txt')).toBe('from the command\n')
      expect((await resumed.files.getInfo('empty/folder')).type).toBe('dir')
      const sleeping = (await resumed.commands.list()).filter((p) => p.args.includes('sleep 300'))
      expect(sleeping).toEqual([])
      expect((await resumed.commands.run('echo $GREETING')).stdout).toBe('hello\n')
      // A resume is a new boot, as E2B's filesystem-only resume is.
      expect(await bootId(resumed)).not.toBe(bootBefore)
    } finally {
      await sandbox.kill()
    }
  })

  it('pauses at its timeout when asked to; resumes on connect, or on the next call with autoResume', async () => {
    const paused = (sandbox: Sandbox) => async () => (await sandbox.getInfo()).state === 'paused'
    const sandbox = await Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } })
    const woken = await Sandbox.create({
      timeoutMs: 2000,
      lifecycle: { onTimeout: 'pause', autoResume: true },
    })
    try {
      await sandbox.runCode('kept = 41')
      await woken.runCode('kept = 1')
      await waitFor(paused(sandbox), { what: 'the first sandbox paused at its timeout' })
      expect(await sandbox.isRunning()).toBe(false)
      await sandbox.connect()
      expect((await sandbox.runCode('kept + 1')).text).toBe('42')
      await waitFor(paused(woken), { what: 'the second sandbox paused at its timeout' })
      expect((await woken.runCode('kept + 1')).text).toBe('2')
      expect((await woken.getInfo()).state).toBe('running')
    } finally {
      await Promise.all([sandbox.kill(), woken.kill()])
    }
  })

  it('refuses to pause a sandbox that is gone, and kills a paused one', async () => {
    const sandbox = await Sandbox.create()
    await sandbox.files.write('x.txt', 'x')
    await sandbox.betaPause()
    expect(await sandbox.kill()).toBe(true)
    await expect(Sandbox.connect(sandbox.sandboxId)).rejects.toThrow(/not found/i)
    await expect(Sandbox.betaPause(sandbox.sandboxId)).rejects.toThrow(/not found/i)
  })
})

describe('E2B SDK: metrics', () => {
  it("gives the sandbox's CPU, memory and disk from its cgroup, within the time asked for", async () => {
    const sandbox = await Sandbox.create()
    try {
      const start = new Date()
      await sandbox.files.write('big.bin', new Uint8Array(4 * 1024 * 1024).fill(1).buffer)
      await sandbox.runCode("held = b'x' * (200 * 1024 * 1024)\nsum(i * i for i in range(3_000_000))")
      const [metric] = await sandbox.getMetrics()
      expect(metric).toBeDefined()
      expect(metric?.memUsed).toBeGreaterThan(200 * 1024 * 1024)
      expect(metric?.memTotal).toBe(2 * 1024 ** 3)
      expect(metric?.cpuCount).toBeGreaterThanOrEqual(1)
      expect(metric?.cpuUsedPct).toBeGreaterThan(0)
      expect(metric?.diskUsed).toBeGreaterThanOrEqual(4 * 1024 * 1024)
      expect(metric?.diskTotal).toBe(1024 ** 3)
      expect(metric?.timestamp.getTime()).toBeGreaterThanOrEqual(start.getTime() - 1000)
      const hourAgo = new Date(start.getTime() - 3600_000)
      expect(await sandbox.getMetrics({ start: hourAgo, end: new Date(hourAgo.getTime() + 60_000) })).toEqual(
        [],
      )
    } finally {
      await sandbox.kill()
    }
  })
})

describe('E2B API: memoryMB and cpuCount', () => {
  it("a sandbox's own memory and CPU, as getInfo and getMetrics report them, kept across a pause", async () => {
    const plain = await Sandbox.create()
    try {
      expect(await plain.getInfo()).toMatchObject({ memoryMB: 2048 })
    } finally {
      await plain.kill()
    }
    // E2B sets them on a template; the SDK's create sends neither, so a client names them in the request.
    const response = await fetch(`${e2b.url}/v2/sandboxes`, {
      method: 'POST',
      headers: { 'X-API-KEY': e2b.token, 'content-type': 'application/json' },
      body: JSON.stringify({ templateID: 'code-interpreter-v1', memoryMB: 640, cpuCount: 1 }),
    })
    expect(response.status).toBe(201)
    const sandbox = await Sandbox.connect(((await response.json()) as { sandboxID: string }).sandboxID)
    try {
      expect(await sandbox.getInfo()).toMatchObject({ memoryMB: 640, cpuCount: 1 })
      const over = await sandbox.runCode('big = bytearray(2 * 1024**3)')
      expect(over.error?.name).toBe('MemoryError')
      expect(over.error?.value).toMatch(/memory limit, 640 MiB/)
      // And how to raise it, in this API's words.
      expect(over.error?.value).toMatch(/Raise the sandbox's memory limit \(memoryMB/)
      expect((await sandbox.getMetrics())[0]).toMatchObject({ memTotal: 640 * 1024 ** 2, cpuCount: 1 })
      await sandbox.betaPause()
      const resumed = await Sandbox.connect(sandbox.sandboxId)
      expect((await resumed.getMetrics())[0]).toMatchObject({ memTotal: 640 * 1024 ** 2 })
    } finally {
      await sandbox.kill()
    }
  })
})
