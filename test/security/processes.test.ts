/**
 * Hostile code, families: signals to the parent or to other processes, and processes that try to
 * outlive the session. The jail has its own PID namespace (its init is bubblewrap, PID 1), so host
 * processes cannot even be named; ending a session must end every process it started.
 */
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/index.js'
import { waitFor } from '../support/wait.js'
import {
  type Attempt,
  create,
  expectBlocked,
  expectGone,
  FORK_BOMB,
  hostileFamily,
  hostView,
  killLeftovers,
  lit,
  probe,
  processesOf,
  py,
  run,
  SMALL,
} from './helpers.js'
import {
  buildStandaloneHost,
  cleanUpAfterHost,
  type HostProcessReport,
  killAbruptly,
  startHostProcess,
} from './host-process.js'

/**
 * Python that ptrace-attaches to the jail's init (PID 1, bubblewrap) and makes it run
 * prctl(PR_SET_PDEATHSIG, 0): the signal that would kill it when its parent dies is cleared.
 */
const CLEAR_INIT_DEATH_SIGNAL = py`
  import ctypes, os
  libc = ctypes.CDLL(None, use_errno=True)
  libc.ptrace.restype = ctypes.c_long
  libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
  class Regs(ctypes.Structure):
      _fields_ = [(n, ctypes.c_ulonglong) for n in (
          'r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss '
          'fs_base gs_base ds es fs gs').split()]
  def clear_death_signal(pid):
      if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
          raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
      os.waitpid(pid, 0x40000000)  # __WALL
      saved = Regs()
      libc.ptrace(12, pid, None, ctypes.byref(saved))  # PTRACE_GETREGS
      regs = Regs.from_buffer_copy(saved)
      # Stopped just after a syscall instruction (in wait4): run that instruction again, as prctl.
      regs.rip = saved.rip - 2
      regs.rax, regs.rdi, regs.rsi, regs.orig_rax = 157, 1, 0, 2**64 - 1
      libc.ptrace(13, pid, None, ctypes.byref(regs))  # PTRACE_SETREGS
      libc.ptrace(9, pid, None, None)  # PTRACE_SINGLESTEP
      os.waitpid(pid, 0x40000000)
      libc.ptrace(12, pid, None, ctypes.byref(regs))
      libc.ptrace(13, pid, None, ctypes.byref(saved))
      libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
      return regs.rax
`

/**
 * Daemons that try to outlive the session, each its own way, and how many processes each adds
 * beside the jail and the kernel once it runs.
 */
const DAEMONS: Record<string, { code: string; adds: number }> = {
  setsid: { code: "subprocess.Popen(['setsid', 'sleep', '1000'])", adds: 1 },
  'double fork': {
    code: py`
      if os.fork() == 0:
          if os.fork() == 0:
              import time; time.sleep(1000)
          os._exit(0)
      os.wait()
    `,
    adds: 1,
  },
  'nohup sleep &': { code: "subprocess.run(['sh', '-c', 'nohup sleep 1000 >/dev/null 2>&1 &'])", adds: 1 },
  'os.fork() + os.setsid(), ignoring SIGTERM and SIGHUP': {
    code: py`
      import signal
      if os.fork() == 0:
          os.setsid()
          signal.signal(signal.SIGTERM, signal.SIG_IGN)
          signal.signal(signal.SIGHUP, signal.SIG_IGN)
          import time; time.sleep(1000)
          os._exit(0)
    `,
    adds: 1,
  },
  // The jail usually refuses the namespaces at once; the cell then says so, as the process is gone
  // before the host could count it.
  'a nested PID namespace (unshare -Urpf)': {
    code: `nested = subprocess.Popen(['unshare', '-Urpf', 'sleep', '1000'], stderr=subprocess.DEVNULL)
try:
    nested.wait(timeout=1)
    print('refused')
except subprocess.TimeoutExpired:
    pass`,
    adds: 1,
  },
  'a fork bomb still forking when kill() comes': {
    code: FORK_BOMB,
    adds: 16,
  },
}

describe('hostile code: signals and processes that try to outlive the session (guard off)', () => {
  const family = hostileFamily()

  describe('signals to the parent and to other processes', () => {
    let sandbox: Sandbox
    beforeAll(async () => {
      sandbox = await create({ limits: SMALL })
      await sandbox.runCode('kept = 42')
    })
    afterAll(async () => {
      await sandbox?.kill()
    })

    it("harmless: SIGKILL and SIGTERM to the kernel's parent (the jail's init) change nothing", async () => {
      const before = processesOf(hostView(sandbox).uid).map((process) => process.pid)
      const report = await probe<{ ppid: number; kill: Attempt; term: Attempt }>(
        sandbox,
        py`
          import signal
          report(ppid=os.getppid(), kill=attempt(os.kill, os.getppid(), signal.SIGKILL),
                 term=attempt(os.kill, os.getppid(), signal.SIGTERM))
        `,
      )
      expect(report.ppid).toBe(1)
      const after = await run(sandbox, 'kept')
      expect(after.execution.text).toBe('42')
      expect(processesOf(hostView(sandbox).uid).map((process) => process.pid)).toEqual(before)
    })

    it("harmless: SIGKILL, SIGTERM, SIGSTOP and SIGINT to PID 1 (the jail's init) change nothing", async () => {
      const report = await probe<{ results: Attempt[]; state: string }>(
        sandbox,
        py`
          import signal, time
          results = [attempt(os.kill, 1, s) for s in (signal.SIGSTOP, signal.SIGINT, signal.SIGTERM, signal.SIGKILL)]
          time.sleep(0.2)
          report(results=results, state=open('/proc/1/status').read().split('State:')[1].split()[0])
        `,
      )
      expect(report.results).toHaveLength(4)
      expect(report.state).not.toBe('T') // not stopped
      expect((await run(sandbox, 'kept')).execution.text).toBe('42')
    })

    it('bounded: kill -1 ends only processes of this sandbox', async () => {
      const uid = hostView(sandbox).uid
      const report = await probe<{ killed: Attempt; sleeper: number | null }>(
        sandbox,
        py`
          import signal, time
          sleeper = subprocess.Popen(['sleep', '1000'])
          killed = attempt(os.kill, -1, signal.SIGKILL)
          time.sleep(0.2)
          report(killed=killed, sleeper=sleeper.poll())
        `,
      )
      expect(report.killed.ok).toBe(true)
      expect(report.sleeper).toBe(-9) // its own child: killed
      expect(processesOf(uid).some((process) => process.name === 'sleep')).toBe(false)
      // The kernel itself is spared (kill -1 never hits the caller) or restarted: the next cell runs.
      expect((await run(sandbox, '1 + 1')).execution.text).toBe('2')
    })

    it('blocked: signals to host processes (the test runner, its parent, the neighbor) by their host PIDs', async () => {
      const targets = [process.pid, process.ppid, ...family.neighbor.pids()]
      const report = await probe<{ inJail: number[]; results: Record<string, Attempt[]> }>(
        sandbox,
        py`
          import signal
          in_jail = [int(p) for p in os.listdir('/proc') if p.isdigit()]
          results = {}
          for pid in ${lit(targets)}:
              if pid in in_jail:
                  continue
              results[str(pid)] = [attempt(os.kill, pid, 0), attempt(os.kill, pid, signal.SIGKILL),
                                   attempt(os.killpg, pid, signal.SIGKILL)]
          report(inJail=in_jail, results=results)
        `,
      )
      const aimed = Object.entries(report.results)
      expect(aimed.length).toBeGreaterThan(0)
      for (const [, attempts] of aimed)
        for (const attempt of attempts) expectBlocked(attempt, /ProcessLookupError/)
      // Still here: this process (else no report), its parent, and the neighbor (checked after each case).
      expect(() => process.kill(process.ppid, 0)).not.toThrow()
    })

    it('bounded: a kernel that stops itself (SIGSTOP) is killed at its timeout and restarted', async () => {
      // SIGINT ignored first: an interrupt that came before the stop must not end the cell instead.
      await run(sandbox, 'import os, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)')
      const ran = await run(sandbox, 'os.kill(os.getpid(), signal.SIGSTOP)', { timeoutMs: 1500 })
      expect(ran.execution.error?.name).toBe('TimeoutError')
      expect(ran.execution.error?.value).toMatch(/kernel was killed/)
      expect((await run(sandbox, '1 + 1')).execution.text).toBe('2')
      expect(processesOf(hostView(sandbox).uid).some((process) => process.state === 'T')).toBe(false)
    })
  })

  describe('processes that try to outlive the session', () => {
    for (const [name, { code, adds }] of Object.entries(DAEMONS)) {
      it(`bounded: ${name} — after kill() no process of the sandbox remains`, async () => {
        const sandbox = await create({ limits: SMALL })
        const view = hostView(sandbox)
        try {
          const before = processesOf(view.uid).length
          const ran = await run(sandbox, `import os, subprocess, sys\n${code}\nprint('spawned')`)
          expect(ran.stdout, JSON.stringify(ran.execution.error)).toMatch(/^(refused\n)?spawned\n$/)
          const added = ran.stdout.startsWith('refused') ? 0 : adds
          // The daemon runs (as sleep, or as forked python3) beside the jail and the kernel.
          await waitFor(() => processesOf(view.uid).length >= before + added, {
            what: () =>
              `${added} more processes than the ${before} before; found ${processesOf(view.uid).length}`,
          })
          await sandbox.kill()
          await expectGone(view)
        } finally {
          await sandbox.kill()
          killLeftovers(view.uid)
        }
      })
    }

    it('bounded: a kernel killed at its timeout takes its children with it', async () => {
      const sandbox = await create({ limits: SMALL })
      const view = hostView(sandbox)
      try {
        await run(sandbox, "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '1000'])")
        const sleeps = () =>
          processesOf(view.uid)
            .filter((process) => process.name === 'sleep')
            .map((process) => process.pid)
        await waitFor(() => sleeps().length > 0, { what: 'the setsid sleep to run' })
        const first = sleeps()
        // SIGINT is ignored from the cell before, so the interrupt never stops the loop, whenever it comes.
        await run(sandbox, 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)')
        const stuck = await run(sandbox, 'while True:\n    pass', { timeoutMs: 1000 })
        expect(stuck.execution.error?.name).toBe('TimeoutError')
        expect(stuck.execution.error?.value).toMatch(/kernel was killed/)
        expect((await run(sandbox, '1 + 1')).execution.text).toBe('2')
        // The new kernel replays the cells that ran (the Popen among them, which starts a sleep of
        // its own): the killed kernel's sleep must be gone.
        await waitFor(() => !sleeps().some((pid) => first.includes(pid)), {
          what: () => `the first sleep (${first}) gone; found ${sleeps()}`,
        })
      } finally {
        await sandbox.kill()
        killLeftovers(view.uid)
      }
    })

    it("bounded: code that ptraces the jail's init and clears its death signal still ends at kill()", async () => {
      const sandbox = await create({ limits: SMALL })
      const view = hostView(sandbox)
      try {
        const ran = await run(
          sandbox,
          `${CLEAR_INIT_DEATH_SIGNAL}\nimport subprocess\nsubprocess.Popen(['setsid', 'sleep', '1000'])\nprint(clear_death_signal(1))`,
        )
        // Whether or not ptrace is allowed (the cell may have failed), kill() must end everything,
        // the daemon it started included.
        await waitFor(() => processesOf(view.uid).some((process) => process.name === 'sleep'), {
          what: () => `the setsid sleep to run (cell: ${JSON.stringify(ran.execution.error ?? ran.stdout)})`,
        })
        await sandbox.kill()
        await expectGone(view)
      } finally {
        await sandbox.kill()
        killLeftovers(view.uid)
      }
    })
  })

  describe('when the host process itself dies (SIGKILL, no exit hook)', () => {
    let build: string
    beforeAll(() => {
      build = buildStandaloneHost()
    })
    afterAll(() => {
      if (build) rmSync(build, { recursive: true, force: true })
    })

    async function outlives(code: string): Promise<string[]> {
      const { child, report } = await startHostProcess(build, code)
      let host: HostProcessReport | undefined = report
      try {
        expect(report.stdout, JSON.stringify(report.error)).toContain('spawned')
        await waitFor(() => processesOf(report.uid).some((process) => process.name === 'sleep'), {
          what: 'the daemons to run',
        })
        await killAbruptly(child)
        await waitFor(() => processesOf(report.uid).length === 0, {
          what: `the processes of uid ${report.uid} to end with their host`,
        }).catch(() => undefined) // the assertion on what is left says which ones
        return processesOf(report.uid).map((process) => `${process.pid} ${process.name}`)
      } finally {
        await killAbruptly(child)
        if (host) await cleanUpAfterHost(host)
        host = undefined
      }
    }

    it('bounded: daemons (setsid, nohup, double fork) die with the host', async () => {
      const left = await outlives(
        py`
          import os, subprocess
          subprocess.Popen(['setsid', 'sleep', '1000'])
          subprocess.run(['sh', '-c', 'nohup sleep 1000 >/dev/null 2>&1 &'])
          if os.fork() == 0:
              os.setsid()
              if os.fork() == 0:
                  import time; time.sleep(1000)
              os._exit(0)
          print('spawned')
        `,
      )
      expect(left).toEqual([])
    })

    it("bounded: code that tries to ptrace the jail's init and clear its death signal dies with the host", async () => {
      // Without seccomp, PTRACE_ATTACH to PID 1 (bubblewrap, same uid) let code make it run
      // prctl(PR_SET_PDEATHSIG, 0), and the jail outlived a host killed with SIGKILL. The jail's
      // seccomp filter now denies ptrace; the sweep of a later host also kills what a dead host left.
      const left = await outlives(
        `${CLEAR_INIT_DEATH_SIGNAL}\nimport subprocess\nsubprocess.Popen(['setsid', 'sleep', '1000'])\ntry:\n    outcome = clear_death_signal(1)\nexcept OSError as error:\n    outcome = repr(error)\nprint('spawned', outcome)`,
      )
      expect(left).toEqual([])
    })
  })
})
