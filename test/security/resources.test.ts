/**
 * Hostile code, families: memory, CPU, process and disk exhaustion, output floods, open files.
 * Each must be bounded by a limit of the sandbox (rlimits, its cgroup, its size-limited tmpfs,
 * the output cap), must leave the sandbox usable or restart it cleanly, and must not reach the
 * host or the neighbor running beside it.
 */
import { readFileSync, statfsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/index.js'
import { waitFor } from '../support/wait.js'
import {
  type Attempt,
  assertHostCanSpawn,
  create,
  expectBlocked,
  FORK_BOMB,
  type HostView,
  hostileFamily,
  hostView,
  MiB,
  memoryCgroup,
  probe,
  processesOf,
  py,
  readNumber,
  run,
  SMALL,
} from './helpers.js'

const LIMITS = { ...SMALL, cpuSeconds: 3 }
/** How long a few CPU seconds may take on a loaded machine (a deadline for failures only). */
const CPU_BOUND_MS = 100_000
const OUTPUT_CAP = LIMITS.outputBytes as number

/** The PID that a host process has in the jail's PID namespace (the last field of NSpid). */
function jailPid(hostPid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${hostPid}/status`, 'utf8').match(/^NSpid:(.*)$/m)?.[1]
    return Number(line?.trim().split(/\s+/).at(-1))
  } catch {
    return undefined // exited meanwhile
  }
}

/** The cell's error, if any, as `Name: message`. */
const errorOf = (ran: { execution: { error?: { name: string; value: string } } }) =>
  ran.execution.error ? `${ran.execution.error.name}: ${ran.execution.error.value}` : undefined

describe('hostile code: resource exhaustion and output floods (guard off)', () => {
  const family = hostileFamily()
  let sandbox: Sandbox
  let view: HostView
  /**
   * Each family in a sandbox of its own: a kernel that dies is rebuilt by running again the cells
   * that ran before (kept-cells.ts), so the CPU cases' restarts would start the fork bomb again.
   */
  function sandboxPerFamily() {
    beforeAll(async () => {
      sandbox = await create({ limits: LIMITS })
      view = hostView(sandbox)
    })
    afterAll(async () => {
      await sandbox?.kill()
    })
  }

  /** The sandbox's memory cgroup never went over its limit (memory + workspace, as tmpfs counts). */
  function expectMemoryBounded() {
    const cgroup = memoryCgroup(view)
    if (!cgroup) return // no cgroup on this host: the rlimits alone apply
    const limit = readNumber(join(cgroup, 'memory.limit_in_bytes'))
    expect(limit).toBe((LIMITS.memoryBytes as number) + (LIMITS.workspaceBytes as number))
    expect(readNumber(join(cgroup, 'memory.max_usage_in_bytes'))).toBeLessThanOrEqual(limit)
  }

  /** The kernel works again (restarted if it had to be). */
  async function expectUsable() {
    const ran = await run(sandbox, '6 * 7')
    expect(ran.execution.text).toBe('42')
  }

  describe('memory', () => {
    sandboxPerFamily()

    it('bounded: a 4 GiB allocation fails with MemoryError and the state is kept', async () => {
      await run(sandbox, 'kept = "still here"')
      const ran = await run(sandbox, 'big = bytearray(4 * 1024**3)')
      expect(ran.execution.error?.name).toBe('MemoryError')
      expect((await run(sandbox, 'kept')).execution.text).toBe("'still here'")
      expectMemoryBounded()
    })

    it('bounded: a list that grows until memory runs out stops at the limit', async () => {
      const ran = await run(sandbox, 'grow = []\nwhile True:\n    grow.append(b"x" * (32 * 1024**2))')
      // MemoryError at the address-space limit, or the cgroup's OOM killer and a fresh kernel.
      expect(errorOf(ran)).toMatch(/MemoryError|out of memory/)
      await run(sandbox, 'grow = None')
      await expectUsable()
      expectMemoryBounded()
    })

    it('bounded: memory spread over child processes, each under the per-process limit, stops at the sandbox total', async () => {
      const report = await probe<{ codes: (number | null)[] }>(
        sandbox,
        py`
          # Each child allocates, says so, and holds its memory until every child has allocated or
          # failed (stdin closed), so that the three overlap however slowly they start.
          hog = 'import sys; b = b"x" * (250 * 1024**2); print("held", flush=True); sys.stdin.read()'
          children = [subprocess.Popen([sys.executable, '-c', hog], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL) for _ in range(3)]
          for child in children:
              child.stdout.readline()  # 'held', or end of file when it failed or was killed
          for child in children:
              child.stdin.close()
          report(codes=[child.wait() for child in children])
        `,
      )
      // 3 × 250 MiB does not fit in the sandbox's 576 MiB: some children were killed or failed to allocate.
      expect(report.codes.some((code) => code !== 0)).toBe(true)
      await expectUsable()
      expectMemoryBounded()
    })

    it('bounded: tmpfs outside the workspace (/dev/shm, the jail root) is charged to the sandbox memory', async () => {
      const ran = await run(
        sandbox,
        py`
          chunk = b'x' * (16 * 1024**2)
          with open('/dev/shm/fill', 'wb') as f:
              for i in range(64):
                  f.write(chunk)
          with open('/fill', 'wb') as f:
              for i in range(64):
                  f.write(chunk)
        `,
      )
      // 2 GiB of tmpfs does not fit: the write fails or the kernel is OOM-killed (and its tmpfs freed).
      expect(errorOf(ran)).toMatch(/OSError|MemoryError|out of memory|No space/)
      await run(
        sandbox,
        "import os\nfor p in ('/dev/shm/fill', '/fill'):\n    os.path.exists(p) and os.remove(p)",
      )
      await expectUsable()
      expectMemoryBounded()
    })
  })

  describe('processes', () => {
    sandboxPerFamily()

    it('bounded: a fork bomb stays within the process limit; the host and the neighbor keep working', async () => {
      const limit = LIMITS.processes as number
      await run(sandbox, FORK_BOMB)
      try {
        // It fills the sandbox's process table, and stays there.
        await waitFor(() => processesOf(view.uid).length >= limit / 2, {
          what: () => `the bomb to grow; ${processesOf(view.uid).length} processes`,
        })
        const counted = processesOf(view.uid).length
        expect(counted).toBeLessThanOrEqual(limit + 2) // + the jail's outer bwrap and the kernel's own
        const pids = view.cgroups.find((path) => path.includes('/pids/'))
        if (pids) expect(readNumber(join(pids, 'pids.current'))).toBeLessThanOrEqual(limit)
        // While the bomb runs: the host starts processes, the neighbor runs cells.
        assertHostCanSpawn()
        await family.neighbor.assertHealthy()
      } finally {
        // kill -1 until only the jail's init and the kernel are left: processes forked during one
        // sweep are caught by the next. The kernel reaps its own child (the bomb's first process).
        await run(
          sandbox,
          py`
            import os, signal, time
            def alive(pid):
                try:
                    return open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()[0] != 'Z'
                except OSError:
                    return False
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    while os.waitpid(-1, os.WNOHANG)[0]:
                        pass
                except ChildProcessError:
                    pass
                others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid()) and alive(p)]
                if not others:
                    break
                os.kill(-1, signal.SIGKILL)
                time.sleep(0.05)
          `,
        )
      }
      await expectUsable()
      // The jail (outer bubblewrap and its init) and the kernel.
      await waitFor(() => processesOf(view.uid).length <= 4, {
        what: () => `the bomb to be gone; ${processesOf(view.uid).map((process) => process.name)}`,
      })
    })

    it('bounded: os.fork() in a loop stops with an error at the process limit', async () => {
      const report = await probe<{ forked: number; error: Attempt }>(
        sandbox,
        py`
          import signal, time
          children = []
          def fork_all():
              while True:
                  pid = os.fork()
                  if pid == 0:
                      time.sleep(60)
                      os._exit(0)
                  children.append(pid)
          error = attempt(fork_all)
          for pid in children:
              os.kill(pid, signal.SIGKILL)
              os.waitpid(pid, 0)
          report(forked=len(children), error=error)
        `,
      )
      expectBlocked(report.error, /BlockingIOError|OSError/)
      expect(report.forked).toBeLessThan(LIMITS.processes as number)
      await expectUsable()
    })

    it('bounded: starting threads in a loop stops at the process limit', async () => {
      const report = await probe<{ started: number; error: Attempt }>(
        sandbox,
        py`
          import threading
          stop = threading.Event()
          threads = []
          def start_all():
              while True:
                  thread = threading.Thread(target=stop.wait, daemon=True)
                  thread.start()
                  threads.append(thread)
          error = attempt(start_all)
          stop.set()
          for thread in threads:
              thread.join()
          report(started=len(threads), error=error)
        `,
      )
      expectBlocked(report.error, /RuntimeError|OSError/)
      expect(report.started).toBeLessThan(LIMITS.processes as number)
      await expectUsable()
    })
  })

  describe('CPU', () => {
    sandboxPerFamily()

    it('bounded: a busy loop past timeoutMs is interrupted, and the state is kept', async () => {
      await run(sandbox, 'kept = "still here"')
      const ran = await run(sandbox, 'while True:\n    pass', { timeoutMs: 1000 })
      expect(ran.execution.error?.name).toBe('TimeoutError')
      expect((await run(sandbox, 'kept')).execution.text).toBe("'still here'")
    })

    it('bounded: a loop that ignores SIGINT is killed after the grace period and the kernel restarted', async () => {
      // Ignored from the cell before, so that the interrupt cannot come before it is ignored.
      await run(sandbox, 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)')
      const ran = await run(sandbox, 'while True:\n    pass', { timeoutMs: 1000 })
      expect(ran.execution.error?.name).toBe('TimeoutError')
      expect(ran.execution.error?.value).toMatch(/kernel was killed/)
      await expectUsable()
    })

    it('bounded: a loop inside C code that never checks for signals is killed at the timeout', async () => {
      // A regular expression with catastrophic backtracking runs in C without checking for signals.
      const ran = await run(sandbox, "import re\nre.match(r'(a|aa)+$', 'a' * 100 + 'b')", { timeoutMs: 1000 })
      expect(ran.execution.error?.name).toBe('TimeoutError')
      await expectUsable()
    })

    it(
      'bounded: CPU time per cell (limits.cpuSeconds), whatever the timeout',
      async () => {
        // The CPU limit must come before the wall-clock timeout, and a few CPU seconds take many
        // more on a busy machine: the timeout is far out of the way.
        const ran = await run(sandbox, 'while True:\n    pass', { timeoutMs: CPU_BOUND_MS })
        expect(errorOf(ran)).toMatch(/CpuTimeExceeded|CPU/)
        await expectUsable()
      },
      CPU_BOUND_MS + 30_000,
    )

    it(
      'bounded: a background process that spins after its cell has ended is stopped by the CPU limit',
      async () => {
        // A fresh kernel, so the CPU budget its children inherit is small.
        await run(sandbox, 'import os\nos._exit(0)')
        const report = await probe<{ pid: number }>(
          sandbox,
          py`
          spinner = subprocess.Popen([sys.executable, '-c', 'while True: pass'], start_new_session=True)
          report(pid=spinner.pid)
        `,
        )
        expect(report.pid).toBeGreaterThan(0)
        // The spinner on the host: the process whose PID in the jail is the one reported.
        const spinner = processesOf(view.uid).find((process) => jailPid(process.pid) === report.pid)
        expect(spinner, 'the spinner, by its PID in the jail').toBeDefined()
        const host = spinner?.pid as number
        // A killed spinner stays a zombie until reaped, which is harmless.
        const spinning = () =>
          processesOf(view.uid).some((process) => process.pid === host && process.state !== 'Z')
        // Its CPU limit is finite (inherited from the cell: what the kernel had used + limits.cpuSeconds)...
        expect(readFileSync(`/proc/${host}/limits`, 'utf8')).toMatch(/^Max cpu time\s+\d+\s/m)
        // ...and it is stopped when it has used it up (a few seconds of CPU, longer on a busy machine).
        await waitFor(() => !spinning(), {
          what: 'the spinner to be stopped by its CPU limit',
          timeoutMs: CPU_BOUND_MS,
        })
      },
      CPU_BOUND_MS + 30_000,
    )
  })

  describe('disk', () => {
    sandboxPerFamily()

    it('bounded: filling the workspace stops at limits.workspaceBytes with ENOSPC', async () => {
      const report = await probe<{ fill: Attempt; size: number }>(
        sandbox,
        py`
          def fill():
              with open('fill.bin', 'wb') as f:
                  while True:
                      f.write(b'x' * (1024**2))
          fill_result = attempt(fill)
          size = os.path.getsize('fill.bin')
          report(fill=fill_result, size=size)
        `,
      )
      expectBlocked(report.fill, /OSError/)
      expect(report.fill.message).toMatch(/No space left/)
      expect(report.size).toBeLessThanOrEqual(LIMITS.workspaceBytes as number)
      const stat = statfsSync(view.work)
      expect(stat.blocks * stat.bsize).toBeLessThanOrEqual((LIMITS.workspaceBytes as number) + MiB)
      await sandbox.files.remove('fill.bin')
    })

    it("bounded: filling the jail's /tmp stops at its size", async () => {
      const report = await probe<{ fill: Attempt; size: number }>(
        sandbox,
        py`
          def fill():
              with open('/tmp/fill.bin', 'wb') as f:
                  while True:
                      f.write(b'x' * (1024**2))
          fill_result = attempt(fill)
          size = os.path.getsize('/tmp/fill.bin')
          os.remove('/tmp/fill.bin')
          report(fill=fill_result, size=size)
        `,
      )
      expectBlocked(report.fill, /OSError/)
      expect(report.fill.message).toMatch(/No space left/)
      expect(report.size).toBeLessThanOrEqual(LIMITS.workspaceBytes as number)
    })

    it('bounded: one file larger than limits.fileSizeBytes (even sparse) fails with EFBIG', async () => {
      const report = await probe<{ truncate: Attempt; seek: Attempt }>(
        sandbox,
        py`
          def seek_write():
              with open('sparse.bin', 'wb') as f:
                  f.seek(2 * 1024**3)
                  f.write(b'x')
          report(truncate=attempt(lambda: open('sparse2.bin', 'wb').truncate(2 * 1024**3)), seek=attempt(seek_write))
          for name in ('sparse.bin', 'sparse2.bin'):
              if os.path.exists(name):
                  os.remove(name)
        `,
      )
      expectBlocked(report.truncate, /OSError/)
      expectBlocked(report.seek, /OSError/)
      expect(`${report.truncate.message} ${report.seek.message}`).toMatch(/File too large/)
    })
  })

  describe('output floods', () => {
    sandboxPerFamily()

    const expectTruncated = (ran: { stdout: string; stderr: string }) => {
      expect(ran.stdout.length + ran.stderr.length).toBeLessThanOrEqual(OUTPUT_CAP + 4096)
      expect(ran.stderr).toMatch(/output truncated/)
      expect(ran.stdout).not.toContain('END-OF-FLOOD')
    }

    it('bounded: printing 50 MB comes back truncated at limits.outputBytes, with a marker', async () => {
      const ran = await run(
        sandbox,
        "import sys\nline = 'A' * 1023 + '\\n'\nfor i in range(50 * 1024):\n    sys.stdout.write(line)\nprint('END-OF-FLOOD')",
      )
      expectTruncated(ran)
      await expectUsable()
    })

    it('bounded: 50 MB written straight to fd 1 and 2 in one line, past Python', async () => {
      const ran = await run(
        sandbox,
        "import os\nos.write(1, b'B' * (50 * 1024**2))\nos.write(2, b'C' * (10 * 1024**2))\nos.write(1, b'END-OF-FLOOD')",
      )
      expectTruncated(ran)
      await expectUsable()
    })

    it('bounded: a child process that floods its inherited stdout', async () => {
      const ran = await run(
        sandbox,
        "import subprocess\nsubprocess.run(['sh', '-c', 'yes flood | head -c 60000000; echo END-OF-FLOOD'])",
      )
      expectTruncated(ran)
      await expectUsable()
    })

    it('bounded: stdout messages forged straight onto the kernel message pipe', async () => {
      const ran = await run(
        sandbox,
        py`
          import json, os, sys
          cell = sys.modules['analyst_kernel'].Cells.current
          for i in range(2):
              os.write(4, (json.dumps({'type': 'stdout', 'id': cell, 'text': 'F' * (10 * 1024**2)}) + '\\n').encode())
          os.write(4, (json.dumps({'type': 'stdout', 'id': cell, 'text': 'END-OF-FLOOD'}) + '\\n').encode())
        `,
      )
      expect(ran.stdout.length).toBeLessThanOrEqual(OUTPUT_CAP + 4096)
      expect(ran.stdout).not.toContain('END-OF-FLOOD')
      await expectUsable()
    })

    it('bounded: a forged message line larger than the host accepts is dropped', async () => {
      const ran = await run(
        sandbox,
        py`
          import os, sys
          cell = sys.modules['analyst_kernel'].Cells.current
          # One 80 MiB message line, streamed in pieces.
          os.write(4, b'{"type": "stdout", "id": "' + cell.encode() + b'", "text": "')
          chunk = b'G' * (1024**2)
          for i in range(80):
              os.write(4, chunk)
          os.write(4, b'"}\\n')
          print('after the flood')
        `,
      )
      expect(ran.stdout).not.toContain('GGGG')
      expect(ran.stdout).toContain('after the flood')
      await expectUsable()
    })

    it('bounded: a background process printing between cells does not flood the next cell', async () => {
      await run(
        sandbox,
        "import subprocess\nyes = subprocess.Popen(['yes', 'between cells'], start_new_session=True)",
      )
      try {
        const ran = await run(sandbox, "import time\ntime.sleep(0.5)\nprint('END-OF-FLOOD')")
        expect(ran.stdout.length + ran.stderr.length).toBeLessThanOrEqual(OUTPUT_CAP + 4096)
      } finally {
        await run(sandbox, 'yes.kill()\nyes.wait()')
      }
      await expectUsable()
    })

    it('bounded: display() in a loop (100 × 1 MB results) is capped like printed output', async () => {
      // FAILS: results are not counted in limits.outputBytes: with a 1 MiB cap, 100 MB of results
      // reach the host's memory (Execution.results), and the same holds for 'result' messages forged
      // on the message pipe. Nothing bounds the number or total size of a cell's results.
      const ran = await run(sandbox, "for i in range(100):\n    display('x' * 1_000_000)")
      const total = ran.execution.results.reduce((sum, result) => sum + (result.text?.length ?? 0), 0)
      expect(total).toBeLessThanOrEqual(16 * OUTPUT_CAP)
    })
  })

  describe('open files', () => {
    sandboxPerFamily()

    it('bounded: opening files stops at limits.openFiles, and the kernel keeps working', async () => {
      const report = await probe<{ opened: number; error: Attempt }>(
        sandbox,
        py`
          handles = []
          def open_all():
              while True:
                  handles.append(open('/dev/null'))
          error = attempt(open_all)
          opened = len(handles)
          for handle in handles:
              handle.close()
          report(opened=opened, error=error)
        `,
      )
      expectBlocked(report.error, /OSError/)
      expect(report.error.message).toMatch(/Too many open files/)
      expect(report.opened).toBeLessThanOrEqual(1024)
      await expectUsable()
    })
  })
})
