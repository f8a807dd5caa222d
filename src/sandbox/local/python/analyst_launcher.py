"""The host's side of the zygote (analyst_zygote.py): one process per zygote, run by
the host as root in the host's namespaces, that starts each forked sandbox.

Usage: python3 -I -S analyst_launcher.py SOCKET, with Node's IPC channel on NODE_CHANNEL_FD (JSON
lines; a file descriptor travels with a {"cmd": "NODE_HANDLE"} line, which Node acknowledges).
It mounts workspaces ({"type": "mount"}). For each {"type": "start"} it clones the sandbox's workspace and data mounts (open_tree, in the
host's mount namespace), makes the kernel's two socket pairs (1-2: output; 3-4: protocol), hands
the kernel's ends and the mounts to the zygote, and the host's ends to Node. The jail's init
then tells its PID (SCM_CREDENTIALS: the kernel gives it as the host sees it); this process moves
it into the sandbox's cgroups before the init builds the jail, and reports the init's exit.
One long-lived process instead of one per sandbox: a new Python per sandbox cost more than the fork.
"""

import ctypes
import json
import os
import select
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_OPEN_TREE = 428
OPEN_TREE_CLONE = 1
AT_RECURSIVE = 0x8000
MAX_HANDLE_RETRIES = 3
MS_NOSUID = 2
MS_NODEV = 4


def clone_mount(path):
    """A detached copy of the mount at path: the jail attaches it in its own mount namespace."""
    fd = libc.syscall(SYS_OPEN_TREE, -100, path.encode(), OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE)
    if fd < 0:
        error = ctypes.get_errno()
        raise OSError(error, f'open_tree {path}: {os.strerror(error)}')
    return fd


class Start:
    """One sandbox being started, then running: its connection to the zygote."""

    def __init__(self, sandbox_id, conn, cgroup_procs):
        self.id = sandbox_id
        self.conn = conn
        self.cgroup_procs = cgroup_procs
        self.pid = None
        self.status = b''


class Launcher:
    def __init__(self, zygote_socket, channel):
        self.zygote_socket = zygote_socket
        self.channel = channel
        self.channel_socket = socket.socket(fileno=os.dup(channel))  # for sendmsg
        self.incoming = b''
        self.handles = []  # (line, fd) waiting for Node to acknowledge the one before
        self.handle_sent = None
        self.retries = 0
        self.starts = {}  # conn fd -> Start
        self.poller = select.poll()
        self.poller.register(channel, select.POLLIN)

    def tell(self, message):
        view = memoryview((json.dumps(message) + '\n').encode())
        while view:
            view = view[os.write(self.channel, view) :]

    def hand(self, sandbox_id, name, fd):
        """Sends one fd to Node; Node takes one at a time, so the next waits for its ACK."""
        line = {'cmd': 'NODE_HANDLE', 'type': 'net.Socket', 'msg': {'type': 'handle', 'id': sandbox_id, 'name': name}}
        self.handles.append((line, fd))
        self.next_handle()

    def next_handle(self):
        if self.handle_sent is None and self.handles:
            self.handle_sent = self.handles.pop(0)
            self.retries = 0
            self.send_handle()

    def send_handle(self):
        line, fd = self.handle_sent
        socket.send_fds(self.channel_socket, [(json.dumps(line) + '\n').encode()], [fd])

    def acknowledged(self, ok):
        if self.handle_sent is None:
            return
        if not ok and self.retries < MAX_HANDLE_RETRIES:
            self.retries += 1
            self.send_handle()
            return
        os.close(self.handle_sent[1])
        self.handle_sent = None
        self.next_handle()

    def serve(self):
        while True:
            for fd, _ in self.poller.poll():
                if fd == self.channel:
                    self.read_channel()
                elif fd in self.starts:
                    self.read_zygote(self.starts[fd])

    def read_channel(self):
        chunk = os.read(self.channel, 1 << 20)
        if not chunk:
            sys.exit(0)  # the host is gone
        self.incoming += chunk
        while b'\n' in self.incoming:
            line, self.incoming = self.incoming.split(b'\n', 1)
            message = json.loads(line)
            cmd = message.get('cmd')
            if cmd in ('NODE_HANDLE_ACK', 'NODE_HANDLE_NACK'):
                self.acknowledged(cmd == 'NODE_HANDLE_ACK')
            elif message.get('type') == 'start':
                self.start(message)
            elif message.get('type') == 'mount':
                self.mount(message)
            elif message.get('type') == 'stop':
                for start in list(self.starts.values()):
                    if start.id == message.get('id'):
                        self.finish(start, None)

    def mount(self, message):
        """A sandbox's workspace: a tmpfs of its size, as `mount -t tmpfs` would make it, without a process."""
        result = libc.mount(b'tmpfs', message['path'].encode(), b'tmpfs', MS_NOSUID | MS_NODEV, message['options'].encode())
        error = os.strerror(ctypes.get_errno()) if result < 0 else None
        self.tell({'type': 'mounted', 'id': message['id'], 'error': error})

    def start(self, message):
        sandbox_id = message['id']
        opened = []
        conn = None
        try:
            mounts = [clone_mount(message['work']), clone_mount(message['data'])]
            opened += mounts
            io_host, io_kernel = socket.socketpair()
            out_host, out_kernel = socket.socketpair()
            opened += [io_kernel.detach(), out_kernel.detach()]
            env = b'\0'.join(
                f'{key}={value}'.encode(errors='surrogateescape') for key, value in message['env'].items()
            )
            request = json.dumps(message['request']).encode() + b'\0' + env
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            conn.connect(self.zygote_socket)
            conn.sendall(len(request).to_bytes(4, 'big'))
            io, out = opened[2], opened[3]
            socket.send_fds(conn, [request], [out, out, io, io, *mounts])
        except OSError as error:
            if conn is not None:
                conn.close()
            for fd in opened:
                os.close(fd)
            self.tell({'type': 'failed', 'id': sandbox_id, 'error': str(error)})
            return
        for fd in opened:
            os.close(fd)
        start = Start(sandbox_id, conn, message.get('cgroupProcs') or [])
        self.starts[conn.fileno()] = start
        self.poller.register(conn, select.POLLIN)
        self.hand(sandbox_id, 'io', io_host.detach())
        self.hand(sandbox_id, 'out', out_host.detach())

    def read_zygote(self, start):
        if start.pid is None:
            try:
                data, ancillary, _, _ = start.conn.recvmsg(1, socket.CMSG_SPACE(12))
            except OSError:
                data, ancillary = b'', []
            pid = next(
                (int.from_bytes(d[:4], sys.byteorder) for _, kind, d in ancillary if kind == socket.SCM_CREDENTIALS),
                None,
            )
            if not data or not pid:
                self.finish(start, None, 'the zygote did not start a sandbox')
                return
            try:
                for procs in start.cgroup_procs:
                    with open(procs, 'w') as f:
                        f.write(str(pid))
                start.conn.sendall(b'g')
            except OSError as error:
                self.finish(start, None, f'could not put the sandbox in its cgroups: {error}')
                return
            start.pid = pid
            self.tell({'type': 'started', 'id': start.id, 'pid': pid})
            return
        chunk = start.conn.recv(64)
        start.status += chunk
        if not chunk or b'\n' in start.status:
            words = start.status.split()
            self.finish(start, int(words[1]) if len(words) > 1 else None)

    def finish(self, start, code, error=None):
        """The sandbox ended (or never started): closing its connection makes the zygote kill it."""
        self.poller.unregister(start.conn)
        del self.starts[start.conn.fileno()]
        start.conn.close()
        if start.pid is None:
            self.tell({'type': 'failed', 'id': start.id, 'error': error or 'the sandbox was stopped'})
        else:
            self.tell({'type': 'exit', 'id': start.id, 'code': code})


def main():
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG SIGKILL: the host's death ends the sandboxes
    channel = int(os.environ['NODE_CHANNEL_FD'])
    os.set_blocking(channel, True)
    # Nothing the host inherited stays open here: this process hands fds to sandboxes.
    os.closerange(3, channel)
    os.closerange(channel + 1, os.sysconf('SC_OPEN_MAX'))
    Launcher(sys.argv[1], channel).serve()


if __name__ == '__main__':
    main()
