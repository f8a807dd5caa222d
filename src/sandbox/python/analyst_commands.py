"""Shell commands started by a kernel: `/bin/bash -l -c CMD` as a child of the kernel, so a command
runs where the cells run (in Analyst's kernel: the same jail, workspace, limits, cgroup and uid; in
a Jupyter kernel: the same server or pod, see the Jupyter engine's prelude.py).

A command spawned with `pty` runs in a pseudo-terminal of that size (made here, in the same jail):
the terminal is its stdin, stdout and stderr and its controlling terminal, what it prints comes
back as stdout, and stdin is what is typed at it.

Each command gets its own thread that moves its stdout and stderr to the host as they come (as
base64, since a command's output is bytes), writes what the host sends to its stdin, and reports
its exit. They run beside cells: a long cell does not hold a command back, nor the reverse.

Messages (how they travel is the kernel's: analyst_kernel.py's pipe, a Jupyter kernel's iopub):
  host -> kernel: {"type": "spawn", "id", "cmd", "cwd", "envs", "stdin", "pty"?: {"cols", "rows"}},
                  {"type": "proc-stdin", "id", "data"}, {"type": "proc-close-stdin", "id"},
                  {"type": "proc-signal", "id", "signal"}, {"type": "proc-resize", "id", "cols", "rows"}
  kernel -> host: {"type": "proc-started", "id", "pid"}, {"type": "proc-out", "id", "stream",
                  "data"}, {"type": "proc-exit", "id", "code", "error"}
"""

import base64
import errno
import fcntl
import os
import select
import signal
import struct
import termios
import threading

READ_CHUNK = 65536
SIGNALS = {'SIGTERM': signal.SIGTERM, 'SIGKILL': signal.SIGKILL, 'SIGINT': signal.SIGINT}

_processes = {}
_lock = threading.Lock()


class Command:
    def __init__(self, send, request, base_env):
        self.send = send
        self.id = request['id']
        self.stdin_queue = []
        self.stdin_closing = False
        self.lock = threading.Lock()
        env = dict(base_env)
        # The kernel's own matplotlib backend is importable only by the kernel.
        env['MPLBACKEND'] = 'Agg'
        env.update({str(k): str(v) for k, v in (request.get('envs') or {}).items()})
        cwd = request.get('cwd') or os.environ.get('HOME') or '/'
        if request.get('pty'):
            self.spawn_terminal(request, env, cwd)
            return
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        if request.get('stdin'):
            in_read, self.stdin_fd = os.pipe()
            os.set_blocking(self.stdin_fd, False)
        else:
            in_read, self.stdin_fd = os.open(os.devnull, os.O_RDONLY), None
        self.make_wake()
        try:
            # posix_spawn, not subprocess: the child gets an empty signal mask (the kernel's threads
            # block SIGINT) and default handlers, and its own session so a kill reaches its children.
            self.pid = os.posix_spawn(
                '/usr/bin/env',
                ['env', '--chdir=' + cwd, '/bin/bash', '-l', '-c', request['cmd']],
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, in_read, 0),
                    (os.POSIX_SPAWN_DUP2, out_write, 1),
                    (os.POSIX_SPAWN_DUP2, err_write, 2),
                ],
                setsid=True,
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGXCPU),
            )
        finally:
            for fd in (in_read, out_write, err_write):
                os.close(fd)
        self.readers = {out_read: 'stdout', err_read: 'stderr'}

    def make_wake(self):
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)

    def spawn_terminal(self, request, env, cwd):
        master, slave = os.openpty()
        try:
            resize(master, request['pty'])
            # The child opens the terminal by name after setsid (posix_spawn does setsid before
            # its file actions), which makes it the session's controlling terminal: job control
            # and ^C work as in a terminal.
            name = os.ttyname(slave)
            self.make_wake()
            self.pid = os.posix_spawn(
                '/usr/bin/env',
                ['env', '--chdir=' + cwd, '/bin/bash', '-l', '-c', request['cmd']],
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, name, os.O_RDWR, 0),
                    (os.POSIX_SPAWN_DUP2, 0, 1),
                    (os.POSIX_SPAWN_DUP2, 0, 2),
                ],
                setsid=True,
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGXCPU),
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.master = master
        self.stdin_fd = os.dup(master)
        os.set_blocking(self.stdin_fd, False)
        self.readers = {master: 'stdout'}

    def resize(self, size):
        master = getattr(self, 'master', None)
        if master is not None:
            try:
                resize(master, size)
            except (OSError, ValueError, OverflowError, struct.error):
                pass  # the terminal is closing, or the size is none a terminal can have

    def run(self):
        self.send({'type': 'proc-started', 'id': self.id, 'pid': self.pid})
        poller = select.poll()
        for fd in self.readers:
            poller.register(fd, select.POLLIN)
        poller.register(self.wake_read, select.POLLIN)
        open_readers = set(self.readers)
        status = None
        while open_readers:
            self.write_stdin()
            for fd, _ in poller.poll(50 if status is None else 0):
                if fd == self.wake_read:
                    os.read(self.wake_read, 4096)
                    continue
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                except OSError as error:
                    if error.errno != errno.EIO:
                        raise
                    chunk = b''  # a terminal whose last writer has gone reads EIO, not EOF
                if chunk:
                    self.send({'type': 'proc-out', 'id': self.id, 'stream': self.readers[fd],
                               'data': base64.b64encode(chunk).decode('ascii')})
                else:
                    poller.unregister(fd)
                    open_readers.discard(fd)
            if status is None:
                status = self.poll_exit()
            elif not poller.poll(0):
                break  # exited, and a child it left holds the pipes open: stop reading
        if status is None:
            status = self.wait_exit()
        for fd in (*self.readers, self.wake_read, self.wake_write):
            os.close(fd)
        self.close_stdin_now()
        with _lock:
            _processes.pop(self.id, None)
        code, error = status
        message = {'type': 'proc-exit', 'id': self.id, 'code': code}
        if error:
            message['error'] = error
        self.send(message)

    def poll_exit(self):
        try:
            pid, raw = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return -1, 'the exit status was lost (reaped by other code)'
        return None if pid == 0 else self.decode(raw)

    def wait_exit(self):
        try:
            _, raw = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return -1, 'the exit status was lost (reaped by other code)'
        return self.decode(raw)

    @staticmethod
    def decode(raw):
        if os.WIFSIGNALED(raw):
            number = os.WTERMSIG(raw)
            return 128 + number, 'signal: %s' % signal.Signals(number).name.lower()[3:]
        return os.waitstatus_to_exitcode(raw), None

    def wake(self):
        try:
            os.write(self.wake_write, b'.')
        except (BlockingIOError, OSError):
            pass

    def add_stdin(self, data):
        with self.lock:
            if self.stdin_fd is None:
                return
            self.stdin_queue.append(data)
        self.wake()

    def close_stdin(self):
        with self.lock:
            self.stdin_closing = True
        self.wake()

    def write_stdin(self):
        with self.lock:
            while self.stdin_fd is not None and self.stdin_queue:
                data = self.stdin_queue[0]
                try:
                    written = os.write(self.stdin_fd, data)
                except BlockingIOError:
                    return  # the pipe is full: the rest goes on the next turn
                except OSError:
                    self.stdin_queue.clear()  # the command closed its stdin
                    break
                if written < len(data):
                    self.stdin_queue[0] = data[written:]
                else:
                    self.stdin_queue.pop(0)
            if self.stdin_closing and not self.stdin_queue:
                self.close_stdin_locked()

    def close_stdin_now(self):
        with self.lock:
            self.close_stdin_locked()

    def close_stdin_locked(self):
        if self.stdin_fd is not None:
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def signal(self, name):
        try:
            os.killpg(self.pid, SIGNALS.get(name, signal.SIGKILL))
        except ProcessLookupError:
            pass


def resize(fd, size):
    """Sets a terminal's size; its foreground processes get SIGWINCH."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', int(size['rows']), int(size['cols']), 0, 0))


def spawn(request, send, base_env):
    """Starts a command and the thread that reports it; returns its pid. Raises OSError when it
    cannot start."""
    command = Command(send, request, base_env)
    with _lock:
        _processes[command.id] = command
    threading.Thread(target=command.run, daemon=True).start()
    return command.pid


def handle(request, send, base_env):
    """Handles a command request from the host; returns False when it is not one."""
    kind = request.get('type')
    if kind == 'spawn':
        try:
            spawn(request, send, base_env)
        # A NUL in the command or its env (ValueError), a terminal size past 65535 (struct.error):
        # the command cannot start, and the kernel goes on reading requests.
        except (OSError, ValueError, OverflowError, struct.error) as error:
            send({'type': 'proc-exit', 'id': request['id'], 'code': -1,
                  'error': 'could not start the command: %s' % error})
        return True
    if kind not in ('proc-stdin', 'proc-close-stdin', 'proc-signal', 'proc-resize'):
        return False
    with _lock:
        command = _processes.get(request.get('id'))
    if command is None:
        return True
    if kind == 'proc-stdin':
        command.add_stdin(base64.b64decode(request.get('data') or ''))
    elif kind == 'proc-close-stdin':
        command.close_stdin()
    elif kind == 'proc-resize':
        command.resize(request)
    else:
        command.signal(request.get('signal'))
    return True
