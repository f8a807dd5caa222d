/**
 * The local backend's two cold starts. As root, sandboxes are forked from the zygote by default
 * (test/sandbox/local.test.ts runs the conformance suite on that path); here the shared
 * conformance suite on the other path, each sandbox spawned (coldStart: 'spawn', as for every user
 * who is not root), then what is the zygote's own: it is rebuilt when it dies, sandboxes it
 * cannot serve (network on) start the usual way, a forked sandbox is in its cgroups and survives
 * a kernel restart. The hostile cases are in test/security/zygote.test.ts.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { sandboxZygote } from '../../src/sandbox/local/home.js'
import { findPython } from '../../src/sandbox/local/python.js'
import { CGROUPS_MARK, getRuntime } from '../../src/sandbox/local/runtime.js'
import { stopZygotes } from '../../src/sandbox/local/zygote.js'
import { describeConformance } from '../../src/test/conformance.js'
import { jailInit } from '../support/processes.js'
import { waitFor } from '../support/wait.js'

const isRoot = process.geteuid?.() === 0
const provider = new LocalProvider({ poolSize: 0, interruptGraceMs: 1000, coldStart: 'fork' })
const create = (options: Parameters<typeof Sandbox.create>[0] = {}) =>
  Sandbox.create({ provider, ...options })
const spawning = new LocalProvider({ poolSize: 0, interruptGraceMs: 1000, coldStart: 'spawn' })

afterAll(() => stopZygotes())

describeConformance({
  name: 'local, each sandbox spawned',
  create: (options = {}) => Sandbox.create({ provider: spawning, ...options }),
})

describe.runIf(isRoot)('sandboxes forked from the zygote', () => {
  it('are forked, run pandas and matplotlib, and their kernel restarts forked after it dies', async () => {
    const sandbox = await create()
    try {
      expect(await jailInit(sandbox)).toBe("'/opt/analyst/analyst_zygote.py'")
      const chart = await sandbox.runCode(
        'import pandas as pd, matplotlib.pyplot as plt\npd.Series([1, 2, 3]).plot()\nplt.show()\nx = 1',
      )
      expect(chart.error).toBeUndefined()
      expect(chart.results.some((result) => result.png)).toBe(true)
      await sandbox.files.write('kept.txt', 'kept')
      const died = await sandbox.runCode('import os\nos._exit(3)')
      expect(died.error?.name).toBe('KernelDied')
      const after = await sandbox.runCode("open('kept.txt').read()")
      expect(after.text).toBe("'kept'")
      expect(await jailInit(sandbox)).toBe("'/opt/analyst/analyst_zygote.py'")
    } finally {
      await sandbox.kill()
    }
  })

  it('are in their own cgroups, with their limits', async () => {
    const sandbox = await create({ limits: { processes: 40 } })
    try {
      const dir = join(getRuntime().own, `sb-${sandbox.sandboxId}`)
      const cgroups = readFileSync(join(dir, CGROUPS_MARK), 'utf8').split('\n').filter(Boolean)
      expect(cgroups.length).toBeGreaterThan(0)
      const inside = await sandbox.runCode('import os\nos.getpid()')
      expect(inside.text).toBe('2')
      for (const cgroup of cgroups) {
        const procs = readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)
        expect(procs.length, cgroup).toBeGreaterThanOrEqual(2) // the init and the kernel
      }
      const pids = cgroups.find((path) => path.includes('pids'))
      if (pids) expect(readFileSync(join(pids, 'pids.max'), 'utf8').trim()).toBe('40')
    } finally {
      await sandbox.kill()
    }
  })

  it('copy ahead the pages that an earlier kernel of their zygote wrote before ready', async () => {
    // Each kernel's start, phase by phase: [phase, ns, its minor faults so far] (analyst_zygote.py's mark).
    const traces: Array<Array<[string, number, number?]>> = []
    const listener = (message: unknown) =>
      traces.push((message as { phases: [string, number, number?][] }).phases)
    subscribe('analyst:fork-trace', listener)
    try {
      // The first kernel of a zygote says which pages it wrote; the next copies them ahead.
      for (let i = 0; i < 2; i++) await (await create()).kill()
    } finally {
      unsubscribe('analyst:fork-trace', listener)
    }
    const last = traces.filter((phases) => phases.some(([phase]) => phase === 'K prefault')).at(-1) ?? []
    const faults = (name: string) => last.find(([phase]) => phase === name)?.[2] ?? 0
    const copied = faults('K prefault') - faults('K forked')
    // Counted as faults too (each page copied), but in one call per range: most of what K writes.
    expect(copied).toBeGreaterThan(100)
    expect(faults('K io thread') - faults('K prefault')).toBeLessThan(copied)
  })

  it("spawn when the provider says so (coldStart: 'spawn')", async () => {
    const sandbox = await Sandbox.create({ provider: spawning })
    try {
      expect(await jailInit(sandbox)).toBe("'bwrap'")
    } finally {
      await sandbox.kill()
    }
  })

  it('start the usual way when they need what a fork cannot give (the network)', async () => {
    const sandbox = await create({ network: true })
    try {
      expect(await jailInit(sandbox)).toBe("'bwrap'")
    } finally {
      await sandbox.kill()
    }
  })

  it('come from a new zygote when the old one died, and the ones it had restart their kernel', async () => {
    const python = await findPython()
    const first = await sandboxZygote(python)
    const older = await create()
    await older.files.write('kept.txt', 'kept')
    first.process.kill('SIGKILL')
    await waitFor(() => first.process.exitCode !== null || first.process.signalCode !== null, {
      what: 'the zygote to exit',
    })
    const sandbox = await create()
    try {
      expect(await jailInit(sandbox)).toBe("'/opt/analyst/analyst_zygote.py'")
      expect((await sandboxZygote(python)).process.pid).not.toBe(first.process.pid)
      // Its kernel died with the zygote: a cell says so (as it died in it, or before it), and the
      // next runs in a new, forked kernel that has the workspace.
      const told: string[] = []
      const next = await waitFor(
        async () => {
          const run = await older.runCode("open('kept.txt').read()")
          told.push(run.error?.name ?? '', run.logs.stderr.join(''))
          return run.text === "'kept'" && told.some((text) => /KernelDied|kernel had stopped/.test(text))
        },
        { what: () => `a new kernel for the older sandbox; told: ${told.join(' | ')}` },
      )
      expect(next).toBe(true)
      expect(await jailInit(older)).toBe("'/opt/analyst/analyst_zygote.py'")
    } finally {
      await Promise.all([sandbox.kill(), older.kill()])
    }
  })
})
