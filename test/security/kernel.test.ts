/**
 * Hostile code, family: mounts, ptrace, kernel keyrings, device nodes and other privileged kernel
 * interfaces. The jail runs with no capabilities and no_new_privs, in its own user, mount, PID,
 * IPC, UTS and network namespaces; /sys and the host's devices are not there.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/index.js'
import {
  type Attempt,
  create,
  expectBlocked,
  hostileFamily,
  hostView,
  isRoot,
  lit,
  probe,
  py,
  REPO,
  type Shell,
  SMALL,
  token,
} from './helpers.js'

/** A host process holding a key in its own process keyring; prints the key's and its session keyring's serials. */
async function hostKeyHolder(secret: string) {
  const child: ChildProcess = spawn(
    '/usr/bin/python3',
    [
      '-c',
      py`
        import ctypes, sys
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        secret = sys.argv[1].encode()
        key = libc.syscall(248, b'user', b'analyst-hostile', secret, len(secret), -2)  # add_key to @p
        session = libc.syscall(250, 0, -3, 1)  # KEYCTL_GET_KEYRING_ID of @s
        print(key, session, flush=True)
        sys.stdin.read()
      `,
      secret,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const line = await new Promise<string>((resolve, reject) => {
    let output = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('\n')) resolve(output.trim())
    })
    child.once('exit', (code) => reject(new Error(`key holder exited ${code}`)))
  })
  const [key, session] = line.split(' ').map(Number)
  return { key: key as number, session: session as number, stop: () => child.stdin?.end() }
}

const KEYCTL = `${py`
  import ctypes
  libc = ctypes.CDLL(None, use_errno=True)
  libc.syscall.restype = ctypes.c_long
  def keyctl(*args):
      result = libc.syscall(250, *args)
      if result == -1:
          errno = ctypes.get_errno()
          raise OSError(errno, os.strerror(errno))
      return result
  def read_key(serial):
      buffer = ctypes.create_string_buffer(4096)
      size = keyctl(11, serial, buffer, 4096)  # KEYCTL_READ
      return buffer.raw[:size]
  def describe_key(serial):
      buffer = ctypes.create_string_buffer(4096)
      keyctl(6, serial, buffer, 4096)  # KEYCTL_DESCRIBE
      return buffer.value
`}\n`

describe('hostile code: mounts, ptrace, kernel keyrings, device nodes (guard off)', () => {
  const family = hostileFamily()
  let sandbox: Sandbox
  beforeAll(async () => {
    sandbox = await create({ limits: SMALL })
  })
  afterAll(async () => {
    await sandbox?.kill()
  })

  describe('mounts and namespaces', () => {
    it('blocked: mount, bind mounts, remounting /usr or data/ read-write, unmounting data/', async () => {
      const report = await probe<{
        before: string
        after: string
        tries: Record<string, Shell>
        syscall: Attempt
      }>(
        sandbox,
        py`
          import ctypes
          before = open('/proc/self/mountinfo').read()
          tries = {
              'tmpfs': sh('mount -t tmpfs none /tmp 2>&1'),
              'proc': sh('mkdir -p /tmp/p && mount -t proc proc /tmp/p 2>&1'),
              'bind': sh('mount --bind /home/user /tmp 2>&1'),
              'usr rw': sh('mount -o remount,rw /usr 2>&1'),
              'data rw': sh('mount -o remount,rw /home/user/data 2>&1'),
              'umount data': sh('umount /home/user/data 2>&1'),
          }
          libc = ctypes.CDLL(None, use_errno=True)
          def mount_syscall():
              if libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) != 0:
                  raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
          report(before=before, after=open('/proc/self/mountinfo').read(), tries=tries, syscall=attempt(mount_syscall))
        `,
      )
      for (const [name, shell] of Object.entries(report.tries)) expect(shell.code, name).not.toBe(0)
      expectBlocked(report.syscall, /PermissionError|Operation not permitted/)
      expect(report.after).toBe(report.before)
    })

    it('harmless: in a nested user and mount namespace (unshare -Urm) mounts stay there, and locked mounts stay locked', async () => {
      const marker = token('nested')
      const report = await probe<{ nested: Shell; seen: boolean; mounts: string }>(
        sandbox,
        py`
          script = '''
          mount -t tmpfs none /tmp && touch /tmp/${marker} && echo tmpfs-mounted
          mount -o remount,rw /usr 2>&1 || echo usr-locked
          touch /usr/${marker} 2>&1 || echo usr-readonly
          umount /home/user/data 2>&1 || echo data-locked
          echo data > /home/user/data/${marker} 2>&1 || echo data-readonly
          mount -t tmpfs none /home/user && touch /home/user/${marker} && echo workspace-covered
          '''
          nested = sh("unshare -Urm sh -c '%s'" % script)
          report(nested=nested, seen=os.path.exists('/tmp/${marker}'), mounts=open('/proc/self/mountinfo').read())
        `,
      )
      if (report.nested.out.includes('tmpfs-mounted')) {
        // Nested namespaces are allowed: what was mounted there is invisible here, and the jail's
        // read-only mounts cannot be made writable or removed from inside.
        expect(report.nested.out).toContain('usr-locked')
        expect(report.nested.out).toContain('usr-readonly')
        expect(report.nested.out).toContain('data-locked')
        expect(report.nested.out).toContain('data-readonly')
      }
      expect(report.seen).toBe(false)
      expect(report.mounts).not.toContain(marker)
      // Nothing propagates to the host: no new mount over the workspace, no file in it.
      const work = hostView(sandbox).work
      const hostMounts = readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((line) => line.includes(work))
      expect(hostMounts).toHaveLength(isRoot ? 1 : 0)
      expect(existsSync(join(work, marker))).toBe(false)
      expect(existsSync(join(hostView(sandbox).dir, 'data', marker))).toBe(false)
    })

    it("blocked: chroot, setns into the init's namespaces, and nsenter", async () => {
      const report = await probe<{ chroot: Attempt; setns: Record<string, Attempt>; nsenter: Shell }>(
        sandbox,
        py`
          setns = {}
          import ctypes
          libc = ctypes.CDLL(None, use_errno=True)
          for name in ('mnt', 'pid', 'user', 'net'):
              def enter(name=name):
                  fd = os.open('/proc/1/ns/' + name, os.O_RDONLY)
                  try:
                      if libc.setns(fd, 0) != 0:
                          raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
                  finally:
                      os.close(fd)
              setns[name] = attempt(enter)
          report(chroot=attempt(os.chroot, '/tmp'), setns=setns, nsenter=sh('nsenter -t 1 -m -p true 2>&1'))
        `,
      )
      expectBlocked(report.chroot, /PermissionError/)
      // Entering the namespaces it is already in changes nothing; any other needs privileges it lacks.
      for (const [name, attempt] of Object.entries(report.setns)) {
        if (!attempt.ok) expect(attempt.error, name).toMatch(/PermissionError|OSError/)
      }
      expect(report.nsenter.code).not.toBe(0)
    })
  })

  describe('ptrace', () => {
    it('blocked: ptrace, process_vm_readv and /proc/<pid>/mem on host processes (the runner, the neighbor)', async () => {
      const targets = [process.pid, ...family.neighbor.pids()]
      const report = await probe<{ inJail: number[]; results: Record<string, Attempt[]> }>(
        sandbox,
        py`
          import ctypes
          libc = ctypes.CDLL(None, use_errno=True)
          libc.ptrace.restype = ctypes.c_long
          libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
          def check(result):
              if result == -1:
                  raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
              return result
          class IoVec(ctypes.Structure):
              _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
          def read_memory(pid):
              buffer = ctypes.create_string_buffer(64)
              local = IoVec(ctypes.cast(buffer, ctypes.c_void_p), 64)
              remote = IoVec(0x400000, 64)
              return check(libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
          in_jail = [int(p) for p in os.listdir('/proc') if p.isdigit()]
          results = {}
          for pid in ${lit(targets)}:
              if pid not in in_jail:
                  results[str(pid)] = [attempt(lambda: check(libc.ptrace(16, pid, None, None))),
                                       attempt(read_memory, pid),
                                       attempt(lambda: open('/proc/%d/mem' % pid, 'rb').read(1))]
          report(inJail=in_jail, results=results)
        `,
      )
      const aimed = Object.values(report.results)
      expect(aimed.length).toBeGreaterThan(0)
      for (const attempts of aimed) {
        for (const attempt of attempts)
          expectBlocked(
            attempt,
            /ProcessLookupError|No such process|FileNotFoundError|PermissionError|Operation not permitted/,
          )
      }
    })

    it("harmless: the jail's init (PID 1), which code can ptrace, holds nothing of the host", async () => {
      const report = await probe<{ fds: Record<string, string>; environ: string; cwd: string }>(
        sandbox,
        py`
          fds = {fd: os.readlink('/proc/1/fd/' + fd) for fd in os.listdir('/proc/1/fd')}
          report(fds=fds, environ=open('/proc/1/environ', 'rb').read().decode(errors='replace'), cwd=os.readlink('/proc/1/cwd'))
        `,
      )
      // Only /dev/null, the pipes and sockets to the host's driver, and anonymous inodes.
      for (const [fd, target] of Object.entries(report.fds)) {
        expect(target, `fd ${fd}`).toMatch(/^(\/dev\/null|pipe:|socket:|anon_inode:)/)
      }
      expect(report.environ).not.toContain(family.markers.secret)
      expect(report.cwd.startsWith(REPO)).toBe(false)
    })
  })

  describe('kernel keyrings', () => {
    it("blocked: a key in a host process's keyring, and the host's session keyring, cannot be read by serial", async () => {
      const secret = token('host-key')
      const holder = await hostKeyHolder(secret)
      try {
        expect(holder.key).toBeGreaterThan(0)
        const report = await probe<{ read: Attempt; describe: Attempt; session: Attempt; own: Attempt }>(
          sandbox,
          KEYCTL +
            py`
            report(read=attempt(read_key, ${holder.key}), describe=attempt(describe_key, ${holder.key}),
                   session=attempt(read_key, ${holder.session}), own=attempt(keyctl, 0, -3, 1))
          `,
        )
        expectBlocked(report.read, /PermissionError|FileNotFoundError|OSError/)
        expectBlocked(report.describe, /PermissionError|FileNotFoundError|OSError/)
        expectBlocked(report.session, /PermissionError|FileNotFoundError|OSError/)
        expect(JSON.stringify(report)).not.toContain(secret)
        // The jail has no keyring access at all (seccomp), or only a session keyring of its own.
        if (report.own.ok) expect(report.own.value).not.toBe(String(holder.session))
        else expectBlocked(report.own, /PermissionError/)
      } finally {
        holder.stop()
      }
    })

    it('blocked: a sandbox cannot add a key (keyrings are denied by seccomp), so no neighbor can read one', async () => {
      const secret = token('sandbox-key')
      const added = await probe<{ add: Attempt }>(
        sandbox,
        KEYCTL +
          py`
          secret = ${lit(secret)}.encode()
          def add():
              serial = libc.syscall(248, b'user', b'stolen', secret, len(secret), -3)  # add_key to @s
              if serial < 0:
                  raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
              return serial
          report(add=attempt(add))
        `,
      )
      expectBlocked(added.add, /PermissionError/)
      const stolen = await probe<{ read: Attempt }>(
        family.neighbor.sandbox,
        KEYCTL + py`report(read=attempt(read_key, 1))`,
      )
      expectBlocked(stolen.read, /PermissionError|FileNotFoundError|OSError/)
      expect(JSON.stringify(stolen)).not.toContain(secret)
    })
  })

  describe('device nodes and privileged kernel interfaces', () => {
    it('blocked: making device nodes (memory, the host disk) anywhere', async () => {
      const report = await probe<Record<string, Attempt>>(
        sandbox,
        py`
          import stat
          report(mem=attempt(os.mknod, '/tmp/mem', 0o666 | stat.S_IFCHR, os.makedev(1, 1)),
                 kmsg=attempt(os.mknod, '/dev/shm/kmsg', 0o666 | stat.S_IFCHR, os.makedev(1, 11)),
                 disk=attempt(os.mknod, '/tmp/vda', 0o666 | stat.S_IFBLK, os.makedev(254, 0)))
        `,
      )
      expect(Object.keys(report)).toHaveLength(3)
      for (const attempt of Object.values(report)) expectBlocked(attempt, /PermissionError/)
    })

    it('blocked: /dev holds only the harmless devices: no memory, disks, kmsg, tun, kvm or fuse', async () => {
      const report = await probe<{ dev: string[]; reads: Record<string, Attempt> }>(
        sandbox,
        py`
          paths = ['/dev/mem', '/dev/kmem', '/dev/port', '/dev/kmsg', '/dev/vda', '/dev/sda', '/dev/nvme0n1',
                   '/dev/net/tun', '/dev/kvm', '/dev/fuse', '/dev/loop0', '/dev/loop-control', '/dev/dri']
          report(dev=sorted(os.listdir('/dev')), reads={p: attempt(lambda p=p: open(p, 'rb').read(16)) for p in paths})
        `,
      )
      const allowed = ['console', 'core', 'fd', 'full', 'mqueue', 'null', 'ptmx', 'pts', 'random', 'shm']
      allowed.push('stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero')
      for (const name of report.dev) expect(allowed, `/dev/${name}`).toContain(name)
      for (const [path, attempt] of Object.entries(report.reads)) {
        expectBlocked(attempt, /FileNotFoundError|PermissionError|IsADirectoryError|OSError/)
        expect(path).toMatch(/^\/dev\//)
      }
    })

    it('blocked: /proc/kcore, /proc/kmsg, sysrq, /sys, and writes to kernel settings under /proc/sys', async () => {
      const report = await probe<{
        reads: Record<string, Attempt>
        writes: Record<string, Attempt>
        sys: boolean
      }>(
        sandbox,
        py`
          reads = {p: attempt(lambda p=p: open(p, 'rb').read(16)) for p in
                   ('/proc/kcore', '/proc/kmsg', '/sys/firmware/efi/efivars', '/sys/kernel/security', '/proc/kpagecount')}
          writes = {p: attempt(lambda p=p: open(p, 'w').write(v)) for p, v in (
              ('/proc/sysrq-trigger', 'b'), ('/proc/sys/kernel/core_pattern', '|/tmp/evil'),
              ('/proc/sys/vm/drop_caches', '3'), ('/proc/sys/kernel/modprobe', '/tmp/evil'),
              ('/proc/sys/kernel/hostname', 'evil'))}
          report(reads=reads, writes=writes, sys=os.path.exists('/sys'))
        `,
      )
      for (const [path, attempt] of Object.entries(report.reads)) {
        expect(attempt.ok, `read ${path}: ${attempt.value}`).toBe(false)
      }
      for (const [path, attempt] of Object.entries(report.writes)) {
        expect(attempt.ok, `write ${path}`).toBe(false)
      }
      expect(report.sys).toBe(false)
      expect(hostname()).not.toBe('evil')
    })

    it('blocked: no capabilities, no_new_privs, setuid(0) fails, and setuid-root programs do not elevate', async () => {
      const report = await probe<{
        status: string
        setuid: Attempt
        setgid: Attempt
        su: Shell
        sudo: Shell
      }>(
        sandbox,
        py`
          report(status=open('/proc/self/status').read(), setuid=attempt(os.setuid, 0), setgid=attempt(os.setgid, 0),
                 su=sh('timeout 5 su root -c id </dev/null 2>&1'), sudo=sh('timeout 5 sudo -n id 2>&1'))
        `,
      )
      for (const field of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
        expect(report.status).toMatch(new RegExp(`^${field}:\\s+0000000000000000$`, 'm'))
      }
      expect(report.status).toMatch(/^NoNewPrivs:\s+1$/m)
      expectBlocked(report.setuid)
      expectBlocked(report.setgid)
      expect(report.su.out).not.toMatch(/uid=0/)
      expect(report.sudo.out).not.toMatch(/uid=0/)
    })

    it('blocked: bpf programs, system-wide perf events, userfaultfd, kexec and kernel modules', async () => {
      const report = await probe<Record<string, Attempt>>(
        sandbox,
        py`
          import ctypes
          libc = ctypes.CDLL(None, use_errno=True)
          libc.syscall.restype = ctypes.c_long
          def call(*args):
              result = libc.syscall(*args)
              if result < 0:
                  raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
              return result
          # BPF_PROG_LOAD of a two-instruction socket filter (r0 = 0; exit).
          insns = (ctypes.c_uint64 * 2)(0x00000000000000b7, 0x0000000000000095)
          license = ctypes.create_string_buffer(b'GPL')
          attr = (ctypes.c_uint8 * 128)()
          ctypes.memmove(attr, ctypes.byref(ctypes.c_uint32(1)), 4)   # prog_type = SOCKET_FILTER
          ctypes.memmove(ctypes.byref(attr, 4), ctypes.byref(ctypes.c_uint32(2)), 4)  # insn_cnt
          ctypes.memmove(ctypes.byref(attr, 8), ctypes.byref(ctypes.c_uint64(ctypes.addressof(insns))), 8)
          ctypes.memmove(ctypes.byref(attr, 16), ctypes.byref(ctypes.c_uint64(ctypes.addressof(license))), 8)
          # perf_event_open: a hardware counter for every process on CPU 0.
          perf = (ctypes.c_uint8 * 128)()
          ctypes.memmove(ctypes.byref(perf, 4), ctypes.byref(ctypes.c_uint32(128)), 4)  # size
          report(bpf=attempt(call, 321, 5, attr, 128),
                 perf=attempt(call, 298, perf, -1, 0, -1, 0),
                 userfaultfd=attempt(call, 323, 0),
                 kexec=attempt(call, 246, 0, 0, None, 0),
                 module=attempt(call, 175, None, 0, b''),
                 delete_module=attempt(call, 176, b'ext4', 0))
        `,
      )
      for (const [name, attempt] of Object.entries(report)) {
        expect(attempt.ok, `${name} returned ${attempt.value}`).toBe(false)
      }
    })

    it('blocked: open_by_handle_at (the "shocker" escape from containers)', async () => {
      const report = await probe<{ open: Attempt }>(
        sandbox,
        py`
          import ctypes
          libc = ctypes.CDLL(None, use_errno=True)
          # A handle for inode 2 (the root) of the file system that holds /usr.
          handle = (ctypes.c_uint8 * 16)()
          ctypes.memmove(handle, ctypes.byref(ctypes.c_uint32(8)), 4)       # handle_bytes
          ctypes.memmove(ctypes.byref(handle, 4), ctypes.byref(ctypes.c_int32(1)), 4)  # handle_type
          ctypes.memmove(ctypes.byref(handle, 8), ctypes.byref(ctypes.c_uint64(2)), 8)
          def open_handle():
              mount_fd = os.open('/usr', os.O_RDONLY)
              fd = libc.syscall(304, mount_fd, handle, os.O_RDONLY)
              if fd < 0:
                  raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
              return os.listdir(fd)
          report(open=attempt(open_handle))
        `,
      )
      expectBlocked(report.open, /PermissionError|Operation not permitted/)
    })

    it('blocked: terminal injection (TIOCSTI) and sethostname; the host hostname is unchanged', async () => {
      const before = hostname()
      const report = await probe<{ tty: Attempt; sethostname: Attempt; name: string }>(
        sandbox,
        py`
          import ctypes, fcntl, socket, termios
          libc = ctypes.CDLL(None, use_errno=True)
          def inject():
              fd = os.open('/dev/tty', os.O_RDWR)
              fcntl.ioctl(fd, termios.TIOCSTI, b'x')
          def set_name():
              if libc.sethostname(b'evil', 4) != 0:
                  raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
          report(tty=attempt(inject), sethostname=attempt(set_name), name=socket.gethostname())
        `,
      )
      expectBlocked(report.tty, /OSError/)
      expectBlocked(report.sethostname, /PermissionError|Operation not permitted/)
      expect(report.name).toBe('sandbox')
      expect(hostname()).toBe(before)
    })
  })
})
