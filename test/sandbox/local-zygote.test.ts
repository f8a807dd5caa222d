/**
 * The zygote's lifetime, as root: the default for new sandboxes, it runs while a
 * provider that forks from it is open or a sandbox of it runs, and stops after that, so a closed
 * provider leaves no process behind (a server's close, test/server/pool.test.ts). Its own file:
 * the zygotes and their users are per process.
 */
import type { ChildProcess } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { sandboxZygote } from '../../src/sandbox/local/home.js'
import { findPython } from '../../src/sandbox/local/python.js'
import { jailInit } from '../support/processes.js'
import { waitFor } from '../support/wait.js'

const isRoot = process.geteuid?.() === 0
const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

describe.runIf(isRoot && (process.env.ANALYST_COLD_START ?? 'fork') === 'fork')('the zygote', () => {
  it('forks new sandboxes by default, and stops once no open provider or sandbox needs it', async () => {
    const first = new LocalProvider({ poolSize: 0 })
    const second = new LocalProvider({ poolSize: 1 })
    expect(first.coldStart).toBe('fork')
    const a = await Sandbox.create({ provider: first })
    expect(await jailInit(a)).toBe("'/opt/analyst/analyst_zygote.py'")
    const zygote = await sandboxZygote(await findPython())
    await second.warm() // its pool's kernel is forked too
    const b = await Sandbox.create({ provider: second })
    expect(await jailInit(b)).toBe("'/opt/analyst/analyst_zygote.py'")

    // Closed with a sandbox still running: the zygote serves it (a kernel restart forks).
    await first.close()
    const died = await a.runCode('import os\nos._exit(1)')
    expect(died.error?.name).toBe('KernelDied')
    expect((await a.runCode('1 + 1')).text).toBe('2')
    await a.kill()
    // The other provider is open: its sandbox and pool keep the zygote.
    expect(exited(zygote.process)).toBe(false)
    expect((await b.runCode('2 + 2')).text).toBe('4')

    // The last provider closed (its pool's kernel stopped): the zygote lasts as long as b.
    await second.close()
    expect(exited(zygote.process)).toBe(false)
    expect((await b.runCode('3 + 3')).text).toBe('6')
    await b.kill()
    await waitFor(() => exited(zygote.process) && exited(zygote.launcher.process), {
      what: 'the zygote and its launcher to stop',
    })

    // A provider used again after its close starts a new zygote.
    const again = await Sandbox.create({ provider: first })
    try {
      expect(await jailInit(again)).toBe("'/opt/analyst/analyst_zygote.py'")
      expect((await sandboxZygote(await findPython())).process.pid).not.toBe(zygote.process.pid)
    } finally {
      await again.kill()
      await first.close()
    }
  }, 180_000)
})
