/**
 * A sandbox's own memory and CPU, with real cgroups (as root): --memory and --cpus reach its
 * cgroup, every sandbox sits under the process's parent group at a CPU weight below the host's,
 * a cell busy for a while gives way to other sandboxes (the batch class) until it ends, the
 * kernel (not the host process, whatever score a pod started it at) is the OOM killer's first
 * choice, and a cell over the memory limit gets a MemoryError that names it while the session goes
 * on; one whose kernel the cgroup's OOM killer ends says so, and the next cell runs in a kernel
 * rebuilt by replay and says what happened. numpy's BLAS runs a thread per CPU of the sandbox, not
 * per core of the host, forked from the zygote or spawned.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { executionFix, phraseFix } from '../../src/fixes.js'
import { LocalProvider, Sandbox } from '../../src/index.js'
import type { Cgroup } from '../../src/sandbox/local/cgroup.js'
import { KERNEL_OOM_SCORE_ADJ } from '../../src/sandbox/local/home.js'
import { CGROUPS_MARK, getRuntime } from '../../src/sandbox/local/runtime.js'
import { SERVER_OOM_SCORE_ADJ } from '../../src/server/oom.js'
import { startServe } from '../support/serve.js'
import { waitFor } from '../support/wait.js'

const isRoot = process.geteuid?.() === 0
const MiB = 1024 ** 2
/** Kubernetes' score for a Burstable pod's processes: 1000 - 1000 × 1 GiB requested / 16 GiB. */
const POD_OOM_SCORE_ADJ = 938

describe.skipIf(!isRoot)("a sandbox's own memory and CPU (real cgroups)", () => {
  const provider = new LocalProvider({ poolSize: 0 })
  let sandbox: Sandbox

  beforeAll(async () => {
    // Started as a Kubernetes pod of the Burstable class starts its processes (deploy/kubernetes:
    // 1 GiB requested of 16): the sandbox's processes inherit the score, and its kernel raises it.
    writeFileSync('/proc/self/oom_score_adj', String(POD_OOM_SCORE_ADJ))
    try {
      sandbox = await Sandbox.create({ provider, limits: { memoryBytes: 768 * MiB, milliCpus: 500 } })
    } finally {
      writeFileSync('/proc/self/oom_score_adj', '0')
    }
  })
  afterAll(async () => {
    await sandbox?.kill()
    await provider.close()
  })

  const cgroups = () =>
    readFileSync(join(getRuntime().own, `sb-${sandbox.sandboxId}`, CGROUPS_MARK), 'utf8')
      .split('\n')
      .filter(Boolean)
  const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim()

  it('--memory and --cpus are its cgroup limits; its weight is below the host, its parent is the budget', () => {
    const memory = cgroups().find((path) => path.includes('/memory/'))
    const cpu = cgroups().find((path) => path.includes('/cpu/'))
    expect(memory && cpu, cgroups().join(' ')).toBeTruthy()
    // Memory plus the workspace's tmpfs (1 GiB by default), which counts as the sandbox's memory.
    expect(Number(read(memory as string, 'memory.limit_in_bytes'))).toBe(768 * MiB + 1024 * MiB)
    const period = Number(read(cpu as string, 'cpu.cfs_period_us'))
    expect(Number(read(cpu as string, 'cpu.cfs_quota_us'))).toBe(period / 2)
    // Once started, it weighs less than a process of the host (1024), and so do all together.
    expect(Number(read(cpu as string, 'cpu.shares'))).toBeLessThan(1024)
    expect(Number(read(dirname(cpu as string), 'cpu.shares'))).toBeLessThan(1024)
    expect(dirname(memory as string)).toMatch(/analyst-\d+-\d+$/)
    expect(Number(read(dirname(memory as string), 'memory.limit_in_bytes'))).toBeGreaterThan(0)
  })

  it("its kernel is the OOM killer first choice, above the score its server's pod started it at", async () => {
    const adj = await sandbox.runCode("open('/proc/self/oom_score_adj').read().strip()")
    expect(adj.text).toBe(`'${KERNEL_OOM_SCORE_ADJ}'`)
    expect(KERNEL_OOM_SCORE_ADJ).toBeGreaterThan(POD_OOM_SCORE_ADJ)
  })

  it('a cell busy for a while joins the batch class, and leaves it when it ends', async () => {
    const cpu = cgroups().find((path) => path.includes('/cpu/')) as string
    // cpu.idle where the kernel has it (5.15 on), else the lowest weight.
    const batched = () =>
      existsSync(join(cpu, 'cpu.idle')) ? read(cpu, 'cpu.idle') === '1' : Number(read(cpu, 'cpu.shares')) <= 2
    expect(batched()).toBe(false)
    const stop = new AbortController()
    const spinning = sandbox.runCode('while True:\n    pass', { signal: stop.signal }).catch(() => undefined)
    await expect.poll(batched, { timeout: 60_000 }).toBe(true)
    stop.abort()
    await spinning
    expect(batched()).toBe(false)
    expect(Number(read(cpu, 'cpu.shares'))).toBeGreaterThan(2)
    expect((await sandbox.runCode('1 + 1')).text).toBe('2')
  })

  it("numpy's BLAS runs as many threads as the sandbox has CPUs, forked or spawned; one per core with no quota", async () => {
    // threadpoolctl asks OpenBLAS itself, after a product (where its threads start).
    const blas = [
      'import numpy, os',
      'from threadpoolctl import threadpool_info',
      'numpy.ones((300, 300)) @ numpy.ones((300, 300))',
      "[p['num_threads'] for p in threadpool_info() if p['internal_api'] == 'openblas'], os.environ.get('OMP_NUM_THREADS')",
    ].join('\n')
    // Forked from the zygote (as root, the default), at half a CPU: one thread.
    expect((await sandbox.runCode(blas)).text).toBe("([1], '1')")
    const spawning = new LocalProvider({ poolSize: 0, coldStart: 'spawn' })
    const spawned = await Sandbox.create({ provider: spawning, limits: { milliCpus: 1000 } })
    const free = await Sandbox.create({ provider })
    try {
      expect((await spawned.runCode(blas)).text).toBe("([1], '1')")
      // No quota: a thread per core of the host, up from the zygote's one.
      const cores = availableParallelism()
      expect((await free.runCode(blas)).text).toBe(`([${cores}], '${cores}')`)
    } finally {
      await Promise.all([spawned.kill(), free.kill()])
      await spawning.close()
    }
  })

  it('a cell reads one memory counter (the OOM kills), not every counter at its start and its end', async () => {
    const cgroup = (sandbox as unknown as { backend: { home: { cgroup: Cgroup } } }).backend.home.cgroup
    const marks = vi.spyOn(cgroup, 'memoryMark')
    const kills = vi.spyOn(cgroup, 'oomKills')
    try {
      for (let i = 0; i < 3; i++) expect((await sandbox.runCode('1 + 1')).text).toBe('2')
      expect(marks).not.toHaveBeenCalled()
      expect(kills).toHaveBeenCalledTimes(3)
    } finally {
      vi.restoreAllMocks()
    }
  })

  it('a cell over its memory limit gets a MemoryError naming the limit; the next cell says so, its state kept', async () => {
    await sandbox.runCode('kept = 41')
    const over = await sandbox.runCode('big = bytearray(2 * 1024**3)')
    expect(over.error?.name).toBe('MemoryError')
    expect(over.error?.value).toMatch(/memory limit, 768 MiB/)
    const next = await sandbox.runCode('kept + 1')
    expect(next.text).toBe('42')
    expect(next.logs.stderr.join('')).toMatch(/ran out of memory .*768 MiB.*went on/)
  })

  it("a kernel the cgroup's OOM killer ends: KernelDied says so, and the next cell runs rebuilt by replay and says what happened", async () => {
    await sandbox.runCode('before = 41')
    // The workspace's tmpfs counts as the sandbox's memory: 950 MiB there, then six children of
    // 180 MiB each pass the cgroup's 1792 MiB. Each child lowers its OOM score as far as it may (any
    // process can, down to where it started): the OOM killer takes the kernel, at 1000. (Slow on a
    // loaded machine: past half a second of CPU the cell is in the batch class.)
    const child = [
      'import ctypes, time',
      'ctypes.CDLL(None).prctl(1, 9)', // PR_SET_PDEATHSIG: SIGKILL once the kernel is gone
      `for adj in ('0', '${POD_OOM_SCORE_ADJ}'):`,
      '    try:',
      "        open('/proc/self/oom_score_adj', 'w').write(adj)",
      '        break',
      '    except OSError:',
      '        pass',
      "held = b'c' * (180 * 1024**2)",
      'time.sleep(60)',
    ].join('\n')
    const killed = await sandbox.runCode(
      [
        'import os, subprocess, sys',
        "with open('fill.bin', 'wb') as f:",
        '    os.posix_fallocate(f.fileno(), 0, 950 * 1024**2)',
        `children = [subprocess.Popen([sys.executable, '-c', ${JSON.stringify(child)}]) for _ in range(6)]`,
        'for c in children:',
        '    c.wait()',
      ].join('\n'),
      { timeoutMs: 120_000 },
    )
    expect(killed.error?.name, JSON.stringify(killed.error)).toBe('KernelDied')
    expect(killed.error?.value).toMatch(/out of memory: the sandbox may use 768 MiB/)
    expect(phraseFix(executionFix(killed.error), 'http')).toMatch(
      /memoryMB, or the server's ANALYST_SANDBOX_MEMORY/,
    )
    const next = await sandbox.runCode("import os\nos.remove('fill.bin')\nbefore + 1")
    expect(next.text).toBe('42')
    expect(next.logs.stderr.join('')).toMatch(
      /kernel died in the last cell \(out of memory: the sandbox may use 768 MiB\); this cell runs in a new one\. .*run again/,
    )
    expect((await sandbox.runCode('1 + 1')).logs.stderr).toEqual([])
  })

  it('a CPU quota the host cannot keep is refused, not ignored', async () => {
    const none = new LocalProvider({ poolSize: 0 })
    await expect(
      Sandbox.create({ provider: none, isolation: 'none', limits: { milliCpus: 500 } }),
    ).rejects.toThrow(/CPU quota/)
    await none.close()
  })

  it('analyst serve lowers its own OOM score', async () => {
    const { child } = await startServe([], {
      PATH: process.env.PATH ?? '',
      ANALYST_HOME: join(getRuntime().own, 'serve-home'),
      ANALYST_POOL_SIZE: '0',
    })
    try {
      const adj = await waitFor(() => readFileSync(`/proc/${child.pid}/oom_score_adj`, 'utf8').trim(), {
        what: "the server's oom_score_adj",
      })
      // Lowering takes CAP_SYS_RESOURCE, which some containers drop (this one does): then it stays
      // at 0, far below the kernels' score.
      const permitted = spawnSync('sh', ['-c', 'echo -900 > /proc/self/oom_score_adj']).status === 0
      expect(Number(adj)).toBe(permitted ? SERVER_OOM_SCORE_ADJ : 0)
      expect(KERNEL_OOM_SCORE_ADJ).toBeGreaterThan(Number(adj))
    } finally {
      child.kill('SIGKILL')
    }
  })
})
