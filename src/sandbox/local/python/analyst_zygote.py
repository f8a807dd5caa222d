"""Analyst's zygote: Python with the analysis stack imported, forked per sandbox.

How a forked sandbox gets the same isolation as a bubblewrap-started one:
  T  the zygote. Runs as root in its own bubblewrap jail (read-only /usr and the allowed /etc,
     own PID, net, IPC and UTS namespaces, no host user namespace, so it keeps real capabilities
     to build jails). It imports numpy, pandas and matplotlib and never runs a line of user code.
     It listens on /tmp/.zygote/socket, a folder only root on the host can reach.
  L  the launcher (analyst_launcher.py): one per zygote, on the host, as root. For each
     sandbox it clones the workspace and data mounts (open_tree) and sends them, with the
     kernel's sockets, to T.
  G  forked by T into a new PID namespace (its init). A G made ahead (below) is forked by
     os.fork(): Python's at-fork handlers run in it, it reseeds numpy's generator, and its K forks
     without them (prepare_kernel); a G forked on a request's path skips them (fork_init), and its
     K runs them. It unshares mount, net, IPC and UTS namespaces, brings its loopback up, mounts a
     fresh /proc and /dev/pts of its own and unmounts the zygote's /tmp (with its socket): the
     jail's shell, which no request decides. T makes the next sandbox's G that far once it has been
     idle SHELL_AFTER_IDLE_MS, or at once when a sandbox's G ends, so that a request finds it made;
     a request that finds none (creates with no end between) forks a G that builds the shell
     itself. A waiting shell holds no kernel, no session and nothing of anyone's; it takes the
     request (config, the kernel's sockets, the mounts, L's connection) from T over a socket pair.
     Then G tells L its host PID (SCM_CREDENTIALS); while L moves it into the sandbox's cgroups, G
     mounts the workspace at /home/user, data/ read-only, a size-limited /tmp and /dev/shm of its
     own (the cgroup namespace once it is in its cgroups: nothing is forked before). Then it
     empties the capability bounding set, takes the sandbox's own host uid (all capabilities gone),
     enters a user namespace of its own where that uid is 1000 (as in bubblewrap's jail; it owns no
     other namespace) and drops the capabilities it has there, sets no_new_privs and installs the
     seccomp filter (the one bubblewrap gets, plus no new user namespaces). It reaps orphans and
     exits with the kernel's status.
  K  forked by G, with G's (lack of) privileges: the kernel. It first copies the pages it will
     write (prefault: the ranges the zygote's first kernel wrote before ready, which the host
     asked it for and gave T once), in one call per range instead of a copy-on-write fault each.
     It runs analyst_kernel.main(), which
     closes every fd but 0-4, reseeds numpy's generator unless G did (Python's random reseeds
     itself in the at-fork handlers) and finishes its set-up, then says ready (a set-up that
     fails, a memory limit too small for it, fails the create).
A template's zygote (one per template) is the same T, with the template's Python, files and start
step (run once, before any fork: every kernel's default context starts from the module it left),
but run by analyst_userns.py as root of a user namespace of its own: an unprivileged uid on the
host, with capabilities only over the namespaces it owns. That namespace maps the sandbox uids
as they are, so that G can take each sandbox's own uid; G's mounts (the launcher's detached
clones: move_mount accepts them there) and namespaces are built as above, and G mounts the fresh
/proc over T's (a user namespace may mount a proc only while one is visible) with its host-wide
parts read-only, as bubblewrap does.
Sandboxes from one zygote share only read-only mounts and the copy-on-write pages of the
imported libraries. They cannot see each other or T: each is in its own PID namespace below T's.
Python's hash seed is T's, shared by every sandbox forked from it.
"""

import ctypes
import gc
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

SOCKET_PATH = '/tmp/.zygote/socket'  # under the zygote's /tmp, which no sandbox mounts
HOME = '/home/user'
BOOT_ID = '/proc/sys/kernel/random/boot_id'
MAX_CONFIG = 4 << 20
# The zygote makes the jail shell for the next request (run_shell) once idle this long: after the
# last sandbox's start and, mostly, its first cell, which would otherwise share the cores with it.
SHELL_AFTER_IDLE_MS = 250
# Set from the zygote's config in main(): what this machine lets a jail do.
SETTINGS = {'hostname': True, 'userns': False}
# In G: whether its state is already a fresh fork's (prepare_kernel), so that K forks without
# Python's at-fork handlers.
PREPARED = False
# The pages a kernel writes before ready, as (start, length) pairs of native 64-bit numbers: sent
# once by the host (take_prefault), kept in T, and so in every G and K forked after (prefault).
PREFAULT = b''
# Read-only in a template zygote's sandboxes, as in bubblewrap's jail.
PROC_READ_ONLY = ('/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus')

SANDBOX_ID = 1000  # the uid and gid code sees, as in bubblewrap's jail
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
MOVE_MOUNT_F_EMPTY_PATH = 4
SYS_MOVE_MOUNT = {'x86_64': 429, 'aarch64': 429}
SYS_SETNS = {'x86_64': 308, 'aarch64': 268}
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
MADV_POPULATE_WRITE = 23  # Linux 5.14; older kernels refuse it (EINVAL) and K faults as before
PAGE = os.sysconf('SC_PAGE_SIZE')
# What a kernel may ask its successors to copy ahead (prefault): about 3 MiB is learned here.
MAX_PREFAULT_PAGES = 8192
MAX_PREFAULT_RANGES = 2048

libc = ctypes.CDLL(None, use_errno=True)
# Set once in T: a kernel's prefault calls it without writing the function object's pages.
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
MACHINE = os.uname().machine
# When each phase of one sandbox's start ended (CLOCK_MONOTONIC, as Node's hrtime): T's, then G's
# and K's, which inherit the list; the kernel's ready message carries it (bench/fork-cost.mjs).
TRACE = []


def mark(phase):
    TRACE.append((phase, time.monotonic_ns(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt))


def check(result, what):
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f'{what}: {os.strerror(error)}')
    return result


def unshare(flags):
    check(libc.unshare(flags), 'unshare')


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if s is not None else None
    check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f'mount {target}')


def move_mount(fd, target):
    check(
        libc.syscall(SYS_MOVE_MOUNT[MACHINE], fd, b'', -100, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
        f'move_mount {target}',
    )


def prctl(option, value):
    check(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f'prctl {option}')


class SockFprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]


def install_seccomp(program):
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), 'seccomp')


# ---------------------------------------------------------------- K: the kernel


def prefault():
    """The pages the kernel will write before ready, copied from the zygote's in one call per range.

    Each page a forked kernel writes is a copy (copy-on-write): one page fault each, about 800 before
    ready, and on this VM a fault costs tens of microseconds. MADV_POPULATE_WRITE makes the same
    copies from inside the kernel, without the faults (about half the time per page, bench/
    fork-cost.mjs). The ranges are those an earlier kernel of this zygote wrote (written_pages):
    the same code on the same memory layout. A range not mapped here is refused (ENOMEM) and skipped.
    """
    ranges = memoryview(PREFAULT).cast('Q')  # no object per range: each would be a page written
    for index in range(0, len(ranges) - 1, 2):
        libc.madvise(ranges[index], ranges[index + 1], MADV_POPULATE_WRITE)


def take_prefault(config):
    """The prefault ranges, when a request brings them (once per zygote): kept for every later kernel."""
    global PREFAULT
    ranges = config.pop('prefault', None)
    if isinstance(ranges, str):
        try:
            PREFAULT = bytes.fromhex(ranges)[: MAX_PREFAULT_RANGES * 16]
        except ValueError:
            pass


def writable_maps():
    """This process's private writable mappings: {start: end}."""
    spans = {}
    with open('/proc/self/maps') as maps:
        for line in maps:
            fields = line.split(None, 2)
            if fields[1][1] == 'w' and fields[1][3] == 'p':
                start, end = (int(address, 16) for address in fields[0].split('-'))
                spans[start] = end
    return spans


def written_pages(at_fork):
    """The pages this kernel wrote since its fork (prefault's ranges for the next), hex of (start, length) pairs.

    A page it wrote is its own copy: present and mapped only here (/proc/self/pagemap bits 63 and
    56); one it did not is still shared with its jail's init. Only mappings there at the fork
    count: one made since (a thread's stack) is not mapped in the next kernel when it prefaults.
    Run only before `ready`, before any code of anyone's, and only when the host asks (learn).
    """
    ranges = []
    pages = 0
    now = writable_maps()
    with open('/proc/self/pagemap', 'rb', buffering=0) as pagemap:
        for start, end in sorted(at_fork.items()):
            end = min(end, now.get(start, start))
            if end <= start:
                continue
            pagemap.seek(start // PAGE * 8)
            entries = memoryview(pagemap.read((end - start) // PAGE * 8)).cast('Q')
            run = None
            for index, entry in enumerate(entries):
                if entry >> 56 & 0x81 != 0x81:
                    run = None
                    continue
                address = start + index * PAGE
                if run is not None and run[1] == address:
                    run[1] += PAGE
                else:
                    run = [address, address + PAGE]
                    ranges.append(run)
                pages += 1
                if pages >= MAX_PREFAULT_PAGES or len(ranges) > MAX_PREFAULT_RANGES:
                    break
            if pages >= MAX_PREFAULT_PAGES or len(ranges) > MAX_PREFAULT_RANGES:
                break
    ranges = ranges[:MAX_PREFAULT_RANGES]
    return b''.join(struct.pack('QQ', low, high - low) for low, high in ranges).hex()


def drop_capabilities(last_cap):
    for cap in range(last_cap + 1):
        prctl(PR_CAPBSET_DROP, cap)
    header = struct.pack('Ii', 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    check(libc.capset(header, bytes(24)), 'capset')


def drop_privileges(config, seccomp, last_cap):
    for cap in range(last_cap + 1):
        prctl(PR_CAPBSET_DROP, cap)
    uid, gid = config['uid'], config['gid']
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # from root to another uid: every capability goes
    # The uid change made the process undumpable, so /proc/self is root's: its maps could not be
    # written. Nothing privileged is left in it (as in bubblewrap's jail, code may look at it).
    prctl(PR_SET_DUMPABLE, 1)
    # As in bubblewrap's jail, code sees itself as uid 1000 of a user namespace of its own; the
    # namespace owns none of the jail's other namespaces, and its capabilities are dropped at once.
    unshare(CLONE_NEWUSER)
    with open('/proc/self/setgroups', 'w') as f:
        f.write('deny')
    with open('/proc/self/uid_map', 'w') as f:
        f.write(f'{SANDBOX_ID} {uid} 1')
    with open('/proc/self/gid_map', 'w') as f:
        f.write(f'{SANDBOX_ID} {gid} 1')
    drop_capabilities(last_cap)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if seccomp:
        install_seccomp(seccomp)


def set_environ(env):
    """The kernel's environment in place of the zygote's: only what differs is written.

    Most of it is the zygote's own (kernelEnv in both): a clear() and update() of every variable
    writes about 60 pages more after the fork (each a copy) than the few that differ.
    """
    for key in [key for key in os.environ if key not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def run_kernel(config):
    mark('K forked')
    prefault()
    mark('K prefault')
    at_fork = writable_maps() if config.get('learn') else None
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # What Python sets up at start, as a kernel started on its own has it.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(HOME)
    set_environ(config['env'])
    sys.argv = [f'{os.path.dirname(__file__)}/analyst_kernel.py', json.dumps(config['kernel'])]
    import analyst_kernel

    # Unless its G did (prepare_kernel), it reseeds numpy's generator in its set-up.
    analyst_kernel.FORKED = not PREPARED
    analyst_kernel.FORK_TRACE = TRACE
    if at_fork is not None:
        analyst_kernel.LEARN_WRITES = lambda: written_pages(at_fork)
    mark('K config')

    sys.modules['__main__'] = analyst_kernel
    analyst_kernel.main()
    os._exit(0)


# ---------------------------------------------------------------- G: the jail's init


def loopback_up():
    """A new network namespace has its loopback down; bubblewrap brings it up, and so do we."""
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack('16sh', b'lo', 0)
        flags = struct.unpack('16sh', fcntl.ioctl(sock, 0x8913, request))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(sock, 0x8914, struct.pack('16sh', b'lo', flags | 0x1 | 0x40))  # SIOCSIFFLAGS: UP, RUNNING


def build_shell():
    """The jail's namespaces and the mounts that no request decides: the same for every sandbox."""
    unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
    mark('G unshare')
    if SETTINGS['hostname']:  # refused by a container runtime's default seccomp profile (probe.ts)
        socket.sethostname('sandbox')
    loopback_up()
    mark('G loopback')
    mount(None, '/', None, MS_REC | MS_PRIVATE)
    if SETTINGS['userns']:
        # In a user namespace, the kernel mounts a new proc only while one is visible: the new one
        # goes over the zygote's (which it hides), and as bubblewrap does, its host-wide parts are
        # read-only.
        mount('proc', '/proc', 'proc', MS_NOSUID | MS_NODEV | MS_NOEXEC)
        for path in PROC_READ_ONLY:
            if os.path.exists(path):
                mount(path, path, None, MS_BIND | MS_REC)
                mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    else:
        libc.umount2(b'/proc', MNT_DETACH)
        mount('proc', '/proc', 'proc', MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mark('G proc')
    libc.umount2(b'/tmp', MNT_DETACH)  # the zygote's, with its socket folder
    libc.umount2(b'/dev/pts', MNT_DETACH)
    mount('devpts', '/dev/pts', 'devpts', MS_NOSUID | MS_NOEXEC, 'newinstance,ptmxmode=0666,mode=620')
    mark('G devpts')


def build_jail(config, work_fd, data_fd):
    """What one sandbox's request decides: its workspace and data, its /tmp and /dev/shm, its boot id."""
    move_mount(work_fd, HOME)
    os.close(work_fd)
    move_mount(data_fd, f'{HOME}/data')
    os.close(data_fd)
    mount(None, f'{HOME}/data', None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    mark('G workspace')
    size = int(config['tmpBytes'])
    mount('tmpfs', '/tmp', 'tmpfs', MS_NOSUID | MS_NODEV, f'size={size},mode=1777')
    os.mkdir('/tmp/.matplotlib', 0o700)
    os.chown('/tmp/.matplotlib', config['uid'], config['gid'])
    mount('tmpfs', '/dev/shm', 'tmpfs', MS_NOSUID | MS_NODEV, f'size={size},mode=1777')
    # The sandbox's own boot id over the host's (a resumed sandbox is a new boot): a file bound
    # read-only from the new /dev/shm, then unlinked there, so code sees only the bound copy.
    staged = '/dev/shm/.boot_id'
    with open(staged, 'w') as f:
        f.write(config['bootId'] + '\n')
    mount(staged, BOOT_ID, None, MS_BIND)
    mount(None, BOOT_ID, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.unlink(staged)
    mark('G tmp')


def become_init():
    """G's first steps, before any request: pid 1 of the sandbox's PID namespace."""
    mark('G forked')
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # No handlers: PID 1 of a namespace then gets no signal from inside it (bubblewrap's init too).
    for number in signal.valid_signals():
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(number, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    os.setsid()


def prepare_kernel():
    """In a jail shell G forked by os.fork(): what K would do first after its fork, done ahead.

    os.fork() ran Python's at-fork handlers here (threading's, random's reseed, logging's locks,
    matplotlib's font cache, a template's own), and numpy's global generator is reseeded here: each
    G is one sandbox's and forks its one kernel, so K forks from it without them (fork_init). K then
    writes about 350 fewer pages of the zygote's between its fork and ready (bench/fork-cost.mjs):
    the shell wrote them while the zygote was idle, and K shares its copies. A template's own
    handlers run with G's privileges before it builds the jail: no more than T's, which ran them
    at their registration and the template's start step.
    """
    global PREPARED
    numpy = sys.modules.get('numpy')
    if numpy is not None:
        numpy.random.seed()  # the zygote's state, shared by every sandbox forked from it
    PREPARED = True


def run_shell(requests, seccomp):
    """G made ahead of a request (a jail shell: no kernel, no session, no code of anyone's).

    Its namespaces, /proc and /dev/pts are made while the zygote is idle; a request (its config,
    the kernel's sockets, the mounts and the launcher's connection) comes on `requests`.
    """
    become_init()
    prepare_kernel()
    build_shell()
    header, fds, _, _ = socket.recv_fds(requests, 4, 7, socket.MSG_WAITALL)
    if len(header) < 4 or len(fds) != 7:
        os._exit(73)  # the zygote is gone, or did not send a request
    TRACE.clear()
    size = struct.unpack('!I', header)[0]
    message = b''
    while len(message) < size:
        chunk = requests.recv(size - len(message))
        if not chunk:
            os._exit(73)
        message += chunk
    requests.close()
    mark('G request')
    conn = socket.socket(fileno=fds.pop())
    config = parse_request(message)
    take_prefault(config)  # made before T had them
    start_init(conn, config, fds, seccomp, shell=False)


def run_init(conn, config, fds, seccomp):
    """G forked for a request: pid 1 of the sandbox's PID namespace."""
    become_init()
    start_init(conn, config, fds, seccomp, shell=True)


def start_init(conn, config, fds, seccomp, shell):
    """G, with a request: the jail (its shell too unless made before), then the kernel K."""
    stdout, stderr, requests, messages, work_fd, data_fd = fds
    # The kernel's pipes on 1-4: first out of the way of each other, then in place.
    moved = [os.dup(fd) for fd in (stdout, stderr, requests, messages)]
    for target, fd in enumerate(moved, start=1):
        os.dup2(fd, target)
    for fd in {*moved, stdout, stderr, requests, messages} - {1, 2, 3, 4}:
        os.close(fd)
    # The host learns our PID, as it sees it, and puts us in the sandbox's cgroups. Moving a
    # process between cgroups waits for the kernel (an RCU grace period): the jail's mounts are
    # built meanwhile, and nothing is forked before the host says it is done.
    creds = struct.pack('iII', os.getpid(), os.getuid(), os.getgid())
    conn.sendmsg([b'p'], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
    mark('G pid sent')
    if shell:
        build_shell()
    build_jail(config, work_fd, data_fd)
    with open('/proc/sys/kernel/cap_last_cap') as f:
        last_cap = int(f.read())
    if conn.recv(1) != b'g':
        os._exit(70)
    mark('G in cgroups')
    conn.close()
    unshare(CLONE_NEWCGROUP)  # rooted at the sandbox's own cgroup, now that it is in it
    # Before code can look at this process: nothing of the zygote's (its wake-up pipe) stays open.
    os.closerange(5, os.sysconf('SC_OPEN_MAX'))
    # Nothing privileged is left to do: the init becomes as unprivileged as the kernel it forks
    # (same uid, no capabilities, same seccomp filter), so, as in bubblewrap's jail, code may look
    # at it (dumpable) and find nothing of the host. As PID 1 it gets no signal it does not handle.
    drop_privileges(config, seccomp, last_cap)
    mark('G unprivileged')
    kernel = fork_init() if PREPARED else os.fork()
    if kernel == 0:
        try:
            run_kernel(config)
        except BaseException as error:
            os.write(2, f'sandbox kernel failed to start: {error!r}\n'.encode())
        os._exit(71)
    os.closerange(3, os.sysconf('SC_OPEN_MAX'))
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == kernel:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


# ---------------------------------------------------------------- T: the zygote


def fork_init():
    """fork(2) for G, without Python's at-fork handlers where that is safe.

    os.fork() runs them in the child (threading's and random's re-initialisation, a template's own
    hooks): about 250 page faults, each a copy of a page of the zygote. They must run once between
    T and K: in a G made ahead (prepare_kernel), whose K then forks with this; else in K, whose G
    (forked on a request's path with this) runs no thread and no user code. Skipping them is safe
    only in a process of one thread (no lock can be held by another), which the zygote is unless a
    template's start step started threads, and a G unless a handler did: then os.fork().
    """
    if len(os.listdir('/proc/self/task')) > 1:
        return os.fork()
    return check(libc.fork(), 'fork')


class Zygote:
    def __init__(self, seccomp):
        self.seccomp = seccomp
        self.own_pid_ns = os.open('/proc/self/ns/pid', os.O_RDONLY | os.O_CLOEXEC)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(SOCKET_PATH):
            os.unlink(SOCKET_PATH)  # the socket of a zygote that died
        self.listener.bind(SOCKET_PATH)
        os.chmod(SOCKET_PATH, 0o600)
        self.listener.listen(128)
        self.poller = select.poll()
        self.poller.register(self.listener, select.POLLIN)
        self.wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.poller.register(self.wake_read, select.POLLIN)
        self.conns = {}  # fd -> socket, while its launcher is connected
        self.children = {}  # init pid -> socket
        self.shell = None  # (pid, socket) of the jail shell for the next request (make_shell)
        self.shell_died = False  # one died unused: the next is made after the next request only

    def serve(self):
        self.make_shell()
        sys.stdout.write('ready\n')
        sys.stdout.flush()
        while True:
            try:
                # The next jail shell once nothing happened for a while: a sandbox starting now
                # does not share the cores with it.
                events = self.poller.poll(None if self.shell or self.shell_died else SHELL_AFTER_IDLE_MS)
            except InterruptedError:
                continue
            if not events and self.shell is None and not self.shell_died:
                self.make_shell()
            for fd, event in events:
                if fd == self.listener.fileno():
                    self.accept()
                elif fd == self.wake_read:
                    while True:
                        try:
                            if not os.read(self.wake_read, 512):
                                break
                        except BlockingIOError:
                            break
                    self.reap()
                elif fd in self.conns:
                    self.hang_up(fd)

    def accept(self):
        conn, _ = self.listener.accept()
        TRACE.clear()
        mark('T accept')
        try:
            conn.settimeout(5)
            size = struct.unpack('!I', conn.recv(4, socket.MSG_WAITALL))[0]
            if size > MAX_CONFIG:
                raise ValueError('config too large')
            message, fds, _, _ = socket.recv_fds(conn, size, 6, socket.MSG_WAITALL)
            if len(fds) != 6:
                raise ValueError('expected 6 fds')
            conn.settimeout(None)
        except Exception as error:
            sys.stderr.write(f'zygote: bad request: {error!r}\n')
            conn.close()
            return
        mark('T request')
        if b'"prefault"' in message.partition(b'\0')[0]:  # once per zygote: kept for every later fork
            try:
                take_prefault(parse_request(message))
            except ValueError:
                pass
        self.shell_died = False
        try:
            # A jail shell parses the request itself: T only parses what it forks a G for.
            pid = self.hand_to_shell(conn, message, fds) or self.fork(conn, message, fds)
        finally:
            for fd in fds:
                os.close(fd)
        if pid is None:
            conn.close()
            return
        self.children[pid] = conn
        self.conns[conn.fileno()] = conn
        # Only a hang-up: the data on this socket is for G and the launcher.
        self.poller.register(conn, select.POLLRDHUP)

    def make_shell(self):
        """G for the next request, made while the zygote is idle (run_shell).

        With os.fork(): Python's at-fork handlers run in G, off a create's path, not in its K
        (prepare_kernel).
        """
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            unshare(CLONE_NEWPID)
            pid = os.fork()
        except OSError as error:
            sys.stderr.write(f'zygote: fork failed: {error!r}\n')
            mine.close()
            theirs.close()
            self.shell_died = True  # not tried again before the next request
            return
        if pid == 0:
            try:
                self.close_in_child()
                mine.close()
                run_shell(theirs, self.seccomp)
            except BaseException as error:
                try:
                    os.write(2, f'sandbox jail failed: {error!r}\n'.encode())
                except OSError:
                    pass
            os._exit(72)
        check(libc.syscall(SYS_SETNS[MACHINE], self.own_pid_ns, CLONE_NEWPID), 'setns')
        theirs.close()
        self.shell = (pid, mine)

    def hand_to_shell(self, conn, message, fds):
        """The request to the jail shell made before, if there is one: its pid, or None."""
        if self.shell is None:
            return None
        pid, mine = self.shell
        self.shell = None
        try:
            socket.send_fds(mine, [struct.pack('!I', len(message))], [*fds, conn.fileno()])
            mine.sendall(message)
        except OSError:
            os.kill(pid, signal.SIGKILL)  # reaped as any child; the request forks a G of its own
            return None
        finally:
            mine.close()
        return pid

    def close_in_child(self):
        """In G: nothing of the zygote's but what G needs (its wake-up pipe's write end goes later)."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for other in [self.listener, *self.conns.values()]:
            os.close(other.detach())
        if self.shell is not None:
            os.close(self.shell[1].detach())
        os.close(self.own_pid_ns)
        os.close(self.wake_read)

    def fork(self, conn, message, fds):
        try:
            config = parse_request(message)
        except ValueError as error:
            sys.stderr.write(f'zygote: bad request: {error!r}\n')
            return None
        config.pop('prefault', None)  # T has taken them
        try:
            unshare(CLONE_NEWPID)  # only for the next child: it becomes pid 1 of a new namespace
            pid = fork_init()
        except OSError as error:
            sys.stderr.write(f'zygote: fork failed: {error!r}\n')
            return None
        if pid == 0:
            try:
                self.close_in_child()
                run_init(conn, config, fds, self.seccomp)
            except BaseException as error:
                try:  # fd 2 is the launcher's stderr once the pipes are in place, else the zygote's
                    os.write(2, f'sandbox jail failed: {error!r}\n'.encode())
                except OSError:
                    pass
            os._exit(72)
        check(libc.syscall(SYS_SETNS[MACHINE], self.own_pid_ns, CLONE_NEWPID), 'setns')
        return pid

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.shell is not None and self.shell[0] == pid:
                self.shell[1].close()  # it died before a request: no other until the next one
                self.shell = None
                self.shell_died = True
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall(f'exit {code}\n'.encode())
            except OSError:
                pass
            self.drop(conn)
            # A sandbox ended: its CPU is free, and a create that follows at once (create, kill,
            # create) finds the shell made, or half made, which is less left to do than a new G.
            if self.shell is None and not self.shell_died:
                self.make_shell()

    def hang_up(self, fd):
        """The launcher is gone (killed): its sandbox goes too."""
        conn = self.conns.get(fd)
        for pid, other in list(self.children.items()):
            if other is conn:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.poller.unregister(fd)
        del self.conns[fd]

    def drop(self, conn):
        fd = conn.fileno()
        if fd in self.conns:
            self.poller.unregister(fd)
            del self.conns[fd]
        conn.close()


def parse_request(message):
    """A request from the launcher: its JSON, then the kernel's environment as NUL-separated pairs."""
    head, _, env = message.partition(b'\0')
    config = json.loads(head)
    pairs = (pair.partition(b'=') for pair in env.split(b'\0') if pair)
    config['env'] = {key.decode(errors='surrogateescape'): value.decode(errors='surrogateescape') for key, _, value in pairs}
    return config


def run_start(analyst_kernel, config):
    """A template's start step, once, in the module every sandbox's default context starts from."""
    cwd = os.getcwd()
    try:
        os.chdir(config.get('workdir') or HOME)
    except OSError:
        pass  # a working directory under the workspace is there only in a sandbox
    module = analyst_kernel.start_module()
    analyst_kernel.run_start(config['start'], module.__dict__)
    analyst_kernel.STARTED = module
    os.chdir(cwd)


def require_mount_api():
    """Forked sandboxes receive their mounts through open_tree and move_mount (Linux 5.2)."""
    for name, number in (('open_tree', 428), ('move_mount', SYS_MOVE_MOUNT[MACHINE])):
        if libc.syscall(number, -1, b'', -1, b'', 0) < 0 and ctypes.get_errno() == 38:  # ENOSYS
            sys.stderr.write(f'this kernel lacks {name} (Linux 5.2 or later is needed)\n')
            sys.exit(3)


def main():
    os.closerange(3, os.sysconf('SC_OPEN_MAX'))  # nothing the host inherited reaches a sandbox
    require_mount_api()
    config = json.loads(sys.argv[1])
    SETTINGS['hostname'] = config.get('hostname', True)
    sys.path.insert(0, os.path.dirname(__file__))
    import analyst_kernel  # its imports, and the kernel's preloading, paid once for every sandbox

    analyst_kernel.preload(config.get('preload'))
    # A kernel's stdin, /dev/null (this jail's), made once here: each kernel made its own after
    # its fork, a file object's worth of pages written (bench/fork-cost.mjs).
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)
    analyst_kernel.STDIN_READY = True
    # Imported (not enabled: G resets every signal handler) for the kernel's main(), whose import
    # of it wrote about 120 pages after each fork (the import system's own objects).
    import faulthandler  # noqa: F401
    SETTINGS['userns'] = bool(config.get('userns'))
    if config.get('start'):
        run_start(analyst_kernel, config)
    # Every object made so far stays out of the collector's walks in the sandboxes: a walk would
    # write to each object's header, and each page written after a fork is copied (a page fault).
    gc.freeze()
    seccomp = bytes.fromhex(config.get('seccomp') or '')
    Zygote(seccomp).serve()


if __name__ == '__main__':
    main()
