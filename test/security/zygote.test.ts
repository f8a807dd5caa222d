/**
 * Hostile code, family: sandboxes forked from one zygote (coldStart: 'fork'). Siblings share the
 * zygote's read-only mounts and copy-on-write pages, and must share nothing else: nothing
 * writable, no view of each other or of the zygote, no signal or ptrace between them, no random
 * state, and no Python state a previous sibling left. Each case runs in a fresh pair; a neighbour
 * sandbox from the same zygote is checked after every case.
 */
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { LocalProvider, Sandbox } from '../../src/index.js'
import { stopZygotes } from '../../src/sandbox/local/zygote.js'
import {
  type Attempt,
  assertJailed,
  expectBlocked,
  hostView,
  isRoot,
  lit,
  Neighbor,
  probe,
  processesOf,
  py,
  SMALL,
} from './helpers.js'

const provider = new LocalProvider({ poolSize: 0, interruptGraceMs: 1000, coldStart: 'fork' })

/** A jailed sandbox that was forked from the zygote (its PID 1 is the zygote's init). */
async function forked(): Promise<Sandbox> {
  const sandbox = await Sandbox.create({ provider, limits: SMALL })
  await assertJailed(sandbox)
  const init = await sandbox.runCode("open('/proc/1/cmdline', 'rb').read().split(b'\\0')[2].decode()")
  if (init.text !== "'/opt/analyst/analyst_zygote.py'") {
    await sandbox.kill()
    throw new Error(`the sandbox was not forked from the zygote: ${init.text ?? init.error?.value}`)
  }
  return sandbox
}

describe.runIf(isRoot)('hostile code: sandboxes forked from one zygote', () => {
  const neighbor = new Neighbor()
  let a: Sandbox
  let b: Sandbox

  beforeAll(async () => {
    // The neighbour is forked too: it is checked after each case.
    neighbor.sandbox = await forked()
    neighbor.view = hostView(neighbor.sandbox)
    await neighbor.sandbox.runCode(`neighbor_state = ${lit(neighbor.secret)}`)
    await neighbor.sandbox.files.write('neighbor.txt', neighbor.secret)
  })

  afterEach(async () => {
    await neighbor.assertHealthy()
    await Promise.all([a?.kill(), b?.kill()])
  })

  afterAll(async () => {
    await neighbor.kill()
    await stopZygotes()
  })

  it('siblings share nothing writable: workspace, /tmp, /dev/shm and /dev/pts are their own', async () => {
    a = await forked()
    b = await forked()
    const places = ['/home/user', '/tmp', '/dev/shm', '/dev/pts']
    const look = py`
      import os
      devices = {p: os.stat(p).st_dev for p in ${lit(places)}}
      for p in ['/home/user', '/tmp', '/dev/shm']:
          open(os.path.join(p, 'mine-' + MARK), 'w').write(MARK)
      writable = []
      for line in open('/proc/self/mountinfo'):
          fields = line.split()
          if 'rw' in fields[5].split(',') and fields[4] not in ('/proc',) and not fields[4].startswith('/proc/'):
              writable.append(fields[4])
      report(devices=devices, writable=sorted(writable), listing={p: sorted(os.listdir(p)) for p in ['/home/user', '/tmp', '/dev/shm']})
    `
    const seenA = await probe(a, `MARK = 'a'\n${look}`)
    const seenB = await probe(b, `MARK = 'b'\n${look}`)
    for (const place of places) {
      expect(seenA.devices[place], `${place} is a mount of each sandbox's own`).not.toBe(seenB.devices[place])
    }
    for (const [place, names] of Object.entries(seenB.listing as Record<string, string[]>)) {
      expect(names, `${place} of b`).not.toContain('mine-a')
    }
    // Writable mounts are the sandbox's own, and only these (/dev holds device nodes, root-owned).
    expect(seenA.writable).toEqual([
      '/dev',
      '/dev/full',
      '/dev/null',
      '/dev/pts',
      '/dev/random',
      '/dev/shm',
      '/dev/tty',
      '/dev/urandom',
      '/dev/zero',
      '/home/user',
      '/tmp',
    ])
    const dev = await probe(a, "report(write=attempt(lambda: open('/dev/planted', 'w')))")
    expectBlocked(dev.write, /PermissionError|Read-only/)
  })

  it('a sandbox sees only its own processes, not its sibling nor the zygote', async () => {
    a = await forked()
    b = await forked()
    const siblingPids = processesOf(hostView(b).uid).map((process) => process.pid)
    expect(siblingPids.length).toBeGreaterThan(0)
    const seen = await probe(
      a,
      py`
        import os, signal
        pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
        names = [open('/proc/%d/cmdline' % p, 'rb').read()[:200] for p in pids]
        signals = {str(p): attempt(os.kill, p, 0) for p in ${lit(siblingPids)} if p not in pids}
        report(pids=pids, names=[repr(n) for n in names], signals=signals,
               socket=os.path.exists('/tmp/.zygote'), run=os.path.exists('/run'))
      `,
    )
    // PID 1 (the init), 2 (the kernel) and what the probe started.
    expect(seen.pids.slice(0, 2)).toEqual([1, 2])
    expect(seen.pids.every((pid: number) => pid < 100)).toBe(true)
    for (const result of Object.values(seen.signals as Record<string, Attempt>)) {
      expectBlocked(result, /ProcessLookupError/)
    }
    expect(seen.socket, "the zygote's socket folder").toBe(false)
    expect(seen.run).toBe(false)
  })

  it('the init holds nothing the kernel lacks, and neither can be ptraced or signalled from inside', async () => {
    a = await forked()
    const seen = await probe(
      a,
      py`
        import ctypes, os, signal
        libc = ctypes.CDLL(None, use_errno=True)
        def ptrace(pid):
            if libc.ptrace(16, pid, 0, 0) != 0:  # PTRACE_ATTACH
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        def fds():
            found = {}
            for fd in os.listdir('/proc/self/fd'):
                try:
                    found[fd] = os.readlink('/proc/self/fd/' + fd)
                except FileNotFoundError:
                    pass  # the listing's own
            return found
        status = open('/proc/self/status').read()
        fields = dict(line.split(':\\t', 1) for line in status.splitlines() if ':\\t' in line)
        init_status = open('/proc/1/status').read()
        init_fds = {fd: os.readlink('/proc/1/fd/' + fd) for fd in os.listdir('/proc/1/fd')}
        report(ptrace=attempt(ptrace, 1), init_fds=init_fds, init_root=sorted(os.listdir('/proc/1/root/')),
               root=sorted(os.listdir('/')), environ=open('/proc/1/environ', 'rb').read().decode(),
               kill=attempt(os.kill, 1, signal.SIGKILL),
               caps={k: fields[k].strip() for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp')},
               init_caps=[line for line in init_status.splitlines() if line.startswith(('CapEff', 'CapBnd', 'Uid'))],
               userns=sh('unshare -U true'), own_fds=fds())
      `,
    )
    expectBlocked(seen.ptrace, /Operation not permitted/)
    // As bubblewrap's init: code may look at it, and finds the jail, /dev/null and the host's pipes.
    expect(seen.init_root).toEqual(seen.root)
    expect(Object.keys(seen.init_fds).sort()).toEqual(['0', '1', '2'])
    expect(seen.environ).not.toMatch(/ANALYST_|API_KEY/)
    expect(seen.caps).toEqual({
      CapInh: '0000000000000000',
      CapPrm: '0000000000000000',
      CapEff: '0000000000000000',
      CapBnd: '0000000000000000',
      CapAmb: '0000000000000000',
      NoNewPrivs: '1',
      Seccomp: '2',
    })
    // The init runs as the sandbox's uid, with nothing either.
    expect(seen.init_caps).toContain('Uid:\t1000\t1000\t1000\t1000')
    expect(seen.init_caps).toContain('CapEff:\t0000000000000000')
    expect(seen.init_caps).toContain('CapBnd:\t0000000000000000')
    expect(seen.userns.code, 'no new user namespace').not.toBe(0)
    // The kernel holds what a kernel started by bubblewrap holds: its message channels (3, 4), a copy
    // of the host's stderr for crash reports, its own output pipes and /dev/null; nothing of the
    // zygote (its listener, a launcher's connection) nor a mount it was handed.
    const targets = Object.values(seen.own_fds as Record<string, string>)
    expect(targets.filter((target) => target.startsWith('socket:'))).toHaveLength(3)
    for (const target of targets.filter((target) => !target.startsWith('socket:'))) {
      expect(target).toMatch(/^(pipe:|\/dev\/null$|\/proc\/)/)
    }
    // The kill of PID 1 from inside does nothing: the sandbox still runs.
    const after = await a.runCode('1 + 1')
    expect(after.text).toBe('2')
  })

  it('siblings cannot meet on abstract sockets, the loopback or System V IPC', async () => {
    a = await forked()
    b = await forked()
    const listen = await probe(
      a,
      py`
        import socket, ctypes
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind('\\0analyst-sibling')
        server.listen(1)
        tcp = socket.socket()
        tcp.bind(('127.0.0.1', 47123))
        tcp.listen(1)
        libc = ctypes.CDLL(None, use_errno=True)
        shm = libc.shmget(0x5157, 4096, 0o1666)
        report(shm=shm)
      `,
    )
    expect(listen.shm).toBeGreaterThanOrEqual(0)
    const reach = await probe(
      b,
      py`
        import socket, ctypes
        def unix():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect('\\0analyst-sibling')
        def tcp():
            socket.create_connection(('127.0.0.1', 47123), timeout=2)
        libc = ctypes.CDLL(None, use_errno=True)
        report(unix=attempt(unix), tcp=attempt(tcp), shm=libc.shmget(0x5157, 4096, 0o666))
      `,
    )
    expectBlocked(reach.unix, /ConnectionRefused|FileNotFound/)
    expectBlocked(reach.tcp, /ConnectionRefused/)
    expect(reach.shm, "the sibling's shared memory segment").toBe(-1)
  })

  it('random state is each sandbox’s own', async () => {
    // Reseeded after the fork by Python's at-fork handlers and numpy's reseed, in the jail shell
    // made ahead (its kernel forks without them) or in the kernel: threading's state is a fresh
    // fork's either way.
    const draw = py`
      import os, random, tempfile, threading, uuid
      import numpy
      worker = threading.Thread(target=lambda: None)
      worker.start()
      worker.join()
      report(random=random.random(), numpy=float(numpy.random.rand()), uuid=str(uuid.uuid4()),
             temp=os.path.basename(tempfile.mktemp()), urandom=os.urandom(16).hex(),
             main=threading.current_thread() is threading.main_thread())
    `
    a = await forked()
    const first = await probe(a, draw)
    b = await forked()
    const second = await probe(b, draw)
    for (const key of ['random', 'numpy', 'uuid', 'temp', 'urandom']) {
      expect(second[key], key).not.toEqual(first[key])
    }
    for (const sandbox of [first, second]) expect(sandbox.main, "threading's main thread").toBe(true)
  })

  it('a sandbox starts clean whatever its sibling did: matplotlib, pandas, modules, environment, cwd', async () => {
    const state = py`
      import os, sys
      import matplotlib, matplotlib.pyplot as plt, pandas as pd
      report(rc=matplotlib.rcParams['lines.linewidth'], figures=plt.get_fignums(), rows=pd.get_option('display.max_rows'),
             modules='analyst_planted' in sys.modules, env=os.environ.get('PLANTED'), cwd=os.getcwd(),
             keys=sorted(os.environ))
    `
    a = await forked()
    const clean = await probe(a, state)
    await probe(
      a,
      py`
        import os, sys, types
        import matplotlib, matplotlib.pyplot as plt, pandas as pd
        matplotlib.rcParams['lines.linewidth'] = 9
        plt.figure()
        pd.set_option('display.max_rows', 3)
        sys.modules['analyst_planted'] = types.ModuleType('analyst_planted')
        os.environ['PLANTED'] = '1'
        os.makedirs('/home/user/deeper', exist_ok=True)
        os.chdir('/home/user/deeper')
        report(done=True)
      `,
    )
    b = await forked()
    const after = await probe(b, state)
    expect(after).toEqual(clean)
    expect(after.env).toBeNull()
    expect(after.cwd).toBe('/home/user')
  })

  it('a jail shell made while the zygote is idle holds no kernel, and makes the same jail as a fork at once', async () => {
    const children = (pid: number) =>
      readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number)
    const descendants = (pid: number): number[] =>
      children(pid).flatMap((child) => [child, ...descendants(child)])
    const command = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    const zygote = () =>
      descendants(process.pid).find(
        (pid) => command(pid).includes('analyst_zygote.py') && !command(pid).startsWith('bwrap'),
      )
    // Idle, the zygote has made the next sandbox's init: a child of its own with no kernel below it.
    const shell = () => {
      const found = zygote()
      return found ? children(found).find((pid) => children(pid).length === 0) : undefined
    }
    await expect.poll(shell, { timeout: 10_000 }).toBeDefined()
    // Three at once: the first takes the shell, the others find none and fork their init.
    let c: Sandbox | undefined
    try {
      ;[a, b, c] = await Promise.all([forked(), forked(), forked()])
      const look = py`
        import fcntl, os, socket, struct
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            lo = struct.unpack('16sh', fcntl.ioctl(s, 0x8913, struct.pack('16sh', b'lo', 0)))[1] & 1
        mounts = sorted(line.split()[4] + ' ' + line.split()[5] for line in open('/proc/self/mountinfo'))
        report(host=socket.gethostname(), lo=lo, mounts=mounts, pids=sorted(int(p) for p in os.listdir('/proc') if p.isdigit())[:2],
               zygote=os.path.exists('/tmp/.zygote'), pts=os.listdir('/dev/pts'))
      `
      const seen = await Promise.all([a, b, c].map((sandbox) => probe(sandbox, look)))
      for (const one of seen) {
        expect(one.host).toBe('sandbox')
        expect(one.lo, 'the loopback is up').toBe(1)
        expect(one.pids).toEqual([1, 2])
        expect(one.zygote, "the zygote's socket folder").toBe(false)
        expect(one.mounts, 'the same mounts, with the same options, on either path').toEqual(seen[0]?.mounts)
      }
    } finally {
      await c?.kill()
    }
  })
})
