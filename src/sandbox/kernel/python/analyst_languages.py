"""The sandbox's other languages: a context in R, JavaScript, TypeScript or bash is a process of its
own that this kernel starts (at the context's first cell) and speaks to, so it runs in the same
jail, under the same limits (inherited rlimits, the same cgroup), and is interrupted and replaced
the way this kernel's cells are. The host sees one kernel and one protocol.

R and JavaScript kernels (analyst_kernel.R, analyst_kernel.mjs) read JSON requests on stdin and
write JSON messages on fd 3; bash is a plain `bash -s` told what to source, which says on fd 3 that
a cell is done and with what status. All of them write what code prints to fd 1 and 2, which are
this kernel's output pipes: the running cell's output, in order, under its cap.
"""

import json
import os
import re
import select
import shutil
import signal
import tempfile
import threading

KERNEL_DIR = os.path.dirname(os.path.abspath(__file__))
MESSAGE_FD = 3

LANGUAGES = {
    'r': ('R', 'Rscript', lambda: ['Rscript', '--no-init-file', os.path.join(KERNEL_DIR, 'analyst_kernel.R'), '3']),
    'javascript': ('JavaScript', 'node', lambda: ['node', os.path.join(KERNEL_DIR, 'analyst_kernel.mjs'), '3']),
    'typescript': ('TypeScript', 'node', lambda: ['node', os.path.join(KERNEL_DIR, 'analyst_kernel.mjs'), '3']),
    'bash': ('bash', 'bash', lambda: ['bash', '--noprofile', '--norc', '-s']),
}

# bash: each cell is a file sourced by this function, which says on fd 3 how it ended. An interrupt
# (SIGINT to bash's process group) ends the command that runs and returns from the cell.
BASH_PRELUDE = r"""
__analyst_cell() { source "$1"; printf 'done %d\n' "$?" >&3; }
trap 'return 130 2>/dev/null' INT
"""

ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
READY_SECONDS = 60


class Unavailable(Exception):
    """The language cannot run here (its program is not installed in the sandbox)."""


def unavailable(language):
    """Why a language cannot run here, or None when it can."""
    if language not in LANGUAGES:
        return 'no %s kernel: the languages are python, %s' % (language, ', '.join(LANGUAGES))
    name, program, _ = LANGUAGES[language]
    if shutil.which(program) is None:
        return '%s is not installed in this sandbox (no %s on its PATH)' % (name, program)
    return None


def _quote(value):
    return "'" + str(value).replace("'", "'\\''") + "'"


class ForeignContext:
    """One context in another language: its process, started at its first cell."""

    def __init__(self, context_id, language, cwd):
        self.id = context_id
        self.language = language
        self.name = LANGUAGES[language][0]
        self.cwd = cwd
        self.count = 0
        self.pid = None
        self.stdin = None
        self.messages = None
        self.pending = b''
        self.write_lock = threading.Lock()
        self.interrupted = False
        # Seconds it ran on after an interrupt before it was ended (None: it was not).
        self.ended_after = None

    # ------------------------------------------------------------ the process

    def start(self, env):
        why = unavailable(self.language)
        if why:
            raise Unavailable(why)
        stdin_read, stdin_write = os.pipe()
        message_read, message_write = os.pipe()
        try:
            # posix_spawn, as for commands: an empty signal mask (this kernel blocks SIGINT) and
            # default handlers, so that SIGINT reaches the code; its own session for bash's jobs.
            self.pid = os.posix_spawn(
                '/usr/bin/env',
                ['env', '--chdir=' + self.cwd] + LANGUAGES[self.language][2](),
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin_read, 0),
                    (os.POSIX_SPAWN_DUP2, message_write, MESSAGE_FD),
                ],
                setsid=True,
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGXCPU),
            )
        finally:
            os.close(stdin_read)
            os.close(message_write)
        self.stdin, self.messages, self.pending = stdin_write, message_read, b''
        if self.language == 'bash':
            self.write(BASH_PRELUDE)
            return
        ready = self.read(READY_SECONDS)
        if ready is None or ready.get('type') != 'ready':
            self.stop()
            raise Unavailable('the %s kernel did not start' % self.name)

    def stop(self):
        """Ends the process (and, for bash, what it started in its session)."""
        if self.pid is None:
            return
        for fd in (self.stdin, self.messages):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.pid = self.stdin = self.messages = None

    def exit_status(self):
        """How the stopped process ended, in words (and reaps it)."""
        try:
            _, status = os.waitpid(self.pid, 0)
        except OSError:
            return 'it stopped'
        if os.WIFSIGNALED(status):
            return 'killed by signal %d' % os.WTERMSIG(status)
        return 'exit code %d' % os.WEXITSTATUS(status)

    def write(self, text):
        data = text.encode('utf-8')
        with self.write_lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.stdin, view):]

    def send(self, message):
        """A request or a host's answer, as one line on the kernel's stdin (not for bash)."""
        if self.pid is not None:
            try:
                self.write(json.dumps(message) + '\n')
            except OSError:
                pass  # it stopped: the cell that waits on it says so

    def read(self, timeout=None):
        """The next message line (JSON for R and JavaScript, text for bash); None when the process ended."""
        while b'\n' not in self.pending:
            if timeout is not None:
                ready, _, _ = select.select([self.messages], [], [], timeout)
                if not ready:
                    return None
            chunk = os.read(self.messages, 1 << 20)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b'\n', 1)
        if self.language == 'bash':
            return line.decode('utf-8', 'replace')
        try:
            return json.loads(line)
        except ValueError:
            return {}

    def interrupt(self):
        """SIGINT to the running cell: to its process group (the kernel, bash's foreground command)."""
        if self.pid is None:
            return
        self.interrupted = True
        try:
            os.killpg(self.pid, signal.SIGINT)
        except OSError:
            pass

    def end_unresponsive(self, seconds):
        """Ends a process that ignored the interrupt (the IO thread's call): the running cell's
        read sees it stop, and the context starts a new process with its next cell."""
        pid = self.pid
        if pid is None:
            return
        self.ended_after = seconds
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def set_env(self, envs):
        """Variables for every later cell (the sandbox's own), in a kernel that runs already."""
        if self.pid is None:
            return
        if self.language == 'bash':
            self.write(''.join('export %s=%s\n' % (k, _quote(v)) for k, v in envs.items() if ENV_NAME.match(k)))
        else:
            self.send({'type': 'env', 'envs': envs})

    # ------------------------------------------------------------ cells

    def run(self, cell_id, code, envs, base_env, on_result, on_question):
        """Runs one cell; returns its error (a dict), or None. Starts the process if it is not running."""
        if self.pid is None:
            self.start(dict(base_env))
        self.count += 1
        self.ended_after = None
        if self.language == 'bash':
            return self.run_bash(code, envs)
        self.send({'type': 'execute', 'id': cell_id, 'code': code, 'envs': envs})
        error = None
        while True:
            message = self.read()
            if message is None:
                return self.died()
            kind = message.get('type')
            if kind == 'result':
                on_result(message.get('bundle') or {}, bool(message.get('main')))
            elif kind == 'error':
                error = {key: str(message.get(key, '')) for key in ('name', 'value', 'traceback')}
            elif kind in ('query', 'query-cancel', 'describe-table'):
                on_question(message)
            elif kind == 'done':
                return error

    def run_bash(self, code, envs):
        fd, path = tempfile.mkstemp(prefix='.analyst-cell-', suffix='.sh')
        with os.fdopen(fd, 'w') as cell:
            cell.write(code if code.endswith('\n') else code + '\n')
        try:
            assignments = ''.join('%s=%s ' % (k, _quote(v)) for k, v in envs.items() if ENV_NAME.match(k))
            self.write('%s__analyst_cell %s\n' % (assignments, _quote(path)))
            line = self.read()
        finally:
            os.unlink(path)
        if line is None:
            return self.died()
        status = int(line.split()[1]) if line.startswith('done ') else 1
        if status == 0:
            return None
        if self.interrupted and status in (130, 143):
            return {'name': 'KeyboardInterrupt', 'value': 'the cell was interrupted', 'traceback': ''}
        return {'name': 'Error', 'value': 'exit status %d' % status, 'traceback': 'bash: the cell ended with exit status %d' % status}

    def died(self):
        why = self.exit_status()
        self.pid = None
        for fd in (self.stdin, self.messages):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stdin = self.messages = None
        if self.ended_after is not None:
            return {
                'name': 'ContextRestarted',
                'value': 'The %s context did not stop within %g s of the interrupt, so its process was ended: '
                         'its variables are lost (the Python context and the others keep theirs). '
                         'A new one starts with the next cell.' % (self.name, self.ended_after),
                'traceback': '',
            }
        return {
            'name': 'KernelDied',
            'value': 'The %s kernel stopped while running this cell (%s): its variables are lost. '
                     'A new one starts with the next cell.' % (self.name, why),
            'traceback': '',
        }


class Routes:
    """sql() questions of the other languages' kernels, by the id the host knows them by."""

    lock = threading.Lock()
    waiting = {}

    @classmethod
    def forward(cls, context, message, send):
        """A child's question, sent to the host under an id of this kernel's."""
        host_id = '%s/%s' % (context.id, message.get('id'))
        if message.get('type') != 'query-cancel':
            with cls.lock:
                cls.waiting[host_id] = (context, message.get('id'))
        send(dict(message, id=host_id))

    @classmethod
    def deliver(cls, message):
        """The host's answer, to the child that asked; False when it is not one of theirs."""
        with cls.lock:
            route = cls.waiting.get(message.get('id'))
            if route and message.get('type') in ('query-end', 'query-error', 'table-description'):
                del cls.waiting[message['id']]
        if route is None:
            return False
        context, child_id = route
        context.send(dict(message, id=child_id))
        return True
