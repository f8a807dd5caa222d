"""Analyst's Python kernel: runs cells for the host, one process per sandbox.

Wire protocol (NDJSON, one object per line):
  host -> kernel on fd 3: {"type": "execute", "id", "code", "context", "envs"},
                          {"type": "interrupt", "id"}, {"type": "context", "id", "cwd"},
                          {"type": "env", "envs"}, and shell commands (analyst_commands.py)
  kernel -> host on fd 4: {"type": "ready"}, {"type": "stdout"|"stderr", "id", "text"},
                          {"type": "result", "id", "main", "bundle"}, {"type": "error", "id", "name",
                          "value", "traceback"}, {"type": "done", "id", "count"}

Everything the cell's process writes to fd 1 and 2 (print, C extensions, subprocesses) is read
back from pipes by one IO thread and forwarded, so output arrives in the order it was written.
The host treats every message as untrusted: user code runs in this process and could forge them.
"""

import _thread
import ast
import base64
import builtins
import codecs
import fcntl
import io
import json
import linecache
import os
import queue
import resource
import select
import signal
import sys
import threading
import time
import traceback
import types

import analyst_commands
import analyst_display_hooks  # at import, not in main(): a zygote's kernels find it done
import analyst_languages
import analyst_sql  # pandas only when a query's rows arrive
import analyst_threads
from analyst_data import finite as _finite, json_safe_columns, keep_frame

REQUEST_FD = 3
MESSAGE_FD = 4
TEXT_CAP = 1_000_000
CELL_PREFIX = '<cell-'

_send_lock = threading.Lock()
_real_exit = os._exit


class Cork:
    """Messages held from the end of a cell's code to its `done` and written with it: the host then
    reads a quick cell's result and its end in one wake-up, not one each (a wake-up costs most on a
    busy machine). Past LIMIT bytes they go out at once, as before."""

    lines = None  # a list while corked
    size = 0
    LIMIT = 64 * 1024
    # A cell's own output; anything else (a query to the host, say) waits for an answer: it goes at once.
    HELD = frozenset(('stdout', 'stderr', 'truncated', 'result', 'error', 'done'))


def _write_all(data):
    view = memoryview(data)
    while view:
        written = os.write(MESSAGE_FD, view)
        view = view[written:]


def send(message):
    try:
        text = json.dumps(message, default=str, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(message), default=str, allow_nan=False)
    line = (text + '\n').encode('utf-8', 'surrogatepass')
    with _send_lock:
        if Cork.lines is not None:
            Cork.lines.append(line)
            Cork.size += len(line)
            if Cork.size < Cork.LIMIT and message.get('type') in Cork.HELD:
                return
            line = b''.join(Cork.lines)
            Cork.lines, Cork.size = [], 0
        _write_all(line)


def cork():
    with _send_lock:
        if Cork.lines is None:
            Cork.lines, Cork.size = [], 0


def uncork():
    with _send_lock:
        lines, Cork.lines, Cork.size = Cork.lines, None, 0
        if lines:
            _write_all(b''.join(lines))


# ---------------------------------------------------------------- limits


def apply_limits(limits):
    """Lower this process's rlimits before any user code runs; children inherit them."""
    table = {
        'memoryBytes': resource.RLIMIT_AS,
        'processes': resource.RLIMIT_NPROC,
        'fileSizeBytes': resource.RLIMIT_FSIZE,
        'openFiles': resource.RLIMIT_NOFILE,
    }
    for key, which in table.items():
        value = limits.get(key)
        if value:
            resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Raised, never lowered (that takes a privilege): when memory runs out, a kernel goes first.
    adj = limits.get('oomScoreAdj')
    if adj is not None:
        try:
            with open('/proc/self/oom_score_adj', 'w') as f:
                f.write(str(int(adj)))
        except OSError:
            pass


class CpuTimeExceeded(Exception):
    pass


def _on_sigxcpu(signum, frame):
    raise CpuTimeExceeded('the cell used more CPU time than its limit allows (limits.cpuSeconds)')


def arm_cpu_limit(seconds):
    """Soft RLIMIT_CPU = what this process has used so far + one cell's budget."""
    if not seconds:
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    current, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = spent + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    if soft != current:  # a quick cell leaves it where the last one set it: no second system call
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


# ---------------------------------------------------------------- output capture


class Output:
    """Everything a cell prints, in the order it was written, sent to the host in batches.

    Python-level writes (print, sys.stdout.write, warnings) are appended to one ordered buffer by
    StreamWriter. fd 1 and 2 are pipes, so output that bypasses Python (C extensions,
    subprocesses) is read from them into the same buffer, by the IO thread and before every
    Python-level write. The buffer goes to the host when it grows large, when code flushes, every
    FLUSH_INTERVAL seconds (the IO thread), before a result, and at the end of the cell.
    """

    FLUSH_INTERVAL = 0.05
    BATCH = 65536

    def __init__(self):
        self.lock = threading.Lock()
        self.cell_id = None
        self.sent = 0
        self.truncated = False
        self.pending = []  # [name, text] pairs; consecutive writes to one stream are merged
        self.pending_size = 0
        self.readers = {}
        for fd, name in ((1, 'stdout'), (2, 'stderr')):
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            flags = fcntl.fcntl(read_end, fcntl.F_GETFL)
            fcntl.fcntl(read_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
            self.readers[read_end] = (name, codecs.getincrementaldecoder('utf-8')('replace'))
        self.poller = select.poll()
        for fd in self.readers:
            self.poller.register(fd, select.POLLIN)
        # Written when the buffer stops being empty, so the IO thread starts its flush timer.
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)
        sys.stdout = StreamWriter(self, 'stdout', 1)
        sys.stderr = StreamWriter(self, 'stderr', 2)
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr

    def start_cell(self, cell_id):
        with self.lock:
            self.pending.clear()
            self.pending_size = 0
            self.cell_id = cell_id
            self.sent = 0
            self.truncated = False

    def append(self, name, text):
        """Call with `lock` held."""
        if not text or self.cell_id is None:
            return  # output between cells (a background process) has no cell to belong to
        if self.pending and self.pending[-1][0] == name:
            self.pending[-1][1] += text
        else:
            if not self.pending:
                try:
                    os.write(self.wake_write, b'.')
                except BlockingIOError:
                    pass
            self.pending.append([name, text])
        self.pending_size += len(text)
        if self.pending_size >= self.BATCH:
            self.flush_locked()

    def read_pipes(self, fds=None):
        """Move what the pipes hold into the buffer. Call with `lock` held."""
        if fds is None:
            # One poll says which pipes hold anything: at a quick cell's end, neither (two reads
            # that fail, at each of its ends, cost two system calls more than the poll).
            fds = [fd for fd, _ in self.poller.poll(0)]
        for fd in fds:
            name, decoder = self.readers[fd]
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                self.append(name, decoder.decode(chunk))

    def write(self, name, text):
        """A Python-level write: output already in the pipes was written before it."""
        with self.lock:
            ready = self.poller.poll(0)
            if ready:
                self.read_pipes([fd for fd, _ in ready])
            self.append(name, text)

    def flush_locked(self):
        cap = CONFIG.get('outputCap', 10 * 1024 * 1024)
        for name, text in self.pending:
            room = cap - self.sent
            if room <= 0:
                if not self.truncated:
                    self.truncated = True
                    send({'type': 'truncated', 'id': self.cell_id})
                break
            if len(text) > room:
                text = text[:room]
            self.sent += len(text)
            send({'type': name, 'id': self.cell_id, 'text': text})
        self.pending.clear()
        self.pending_size = 0

    def drain(self):
        """Send everything written so far, from Python and from the pipes."""
        with self.lock:
            self.read_pipes()
            self.flush_locked()


class StreamWriter(io.TextIOBase):
    """sys.stdout and sys.stderr: text goes to Output's ordered buffer; fileno() is the real fd."""

    def __init__(self, output, name, fd):
        self._output = output
        self._name = name
        self._fd = fd
        self.buffer = _BytesWriter(self)

    encoding = 'utf-8'
    errors = 'backslashreplace'
    newlines = None
    line_buffering = True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError('write() argument must be str, not %s' % type(text).__name__)
        self._output.write(self._name, text)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._output.drain()

    def fileno(self):
        return self._fd

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False


class _BytesWriter:
    """sys.stdout.buffer, for code that writes bytes."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, data):
        self._stream.write(bytes(data).decode('utf-8', 'replace'))
        return len(data)

    def flush(self):
        self._stream.flush()


# ---------------------------------------------------------------- rich output


def _b64(data):
    if isinstance(data, str):
        return data
    return base64.b64encode(data).decode('ascii')


def _cap_text(text):
    if len(text) > TEXT_CAP:
        return text[:TEXT_CAP] + '\n… [truncated: %d characters in all]' % len(text)
    return text


def figure_png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', bbox_inches='tight')
    return base64.b64encode(buffer.getvalue()).decode('ascii')


def figure_bundle(figure):
    """A figure as a PNG and, when its data can be read, as chart data (E2B's `chart`)."""
    bundle = {'image/png': figure_png(figure)}
    try:
        import analyst_charts
        chart = analyst_charts.figure_chart(figure)
    except Exception:
        chart = None  # the PNG is what counts; the data is a bonus
    if chart is not None:
        bundle['analyst/chart'] = chart
    return bundle


_REPR_METHODS = (
    ('text/html', '_repr_html_'),
    ('text/markdown', '_repr_markdown_'),
    ('image/svg+xml', '_repr_svg_'),
    ('image/png', '_repr_png_'),
    ('image/jpeg', '_repr_jpeg_'),
    ('text/latex', '_repr_latex_'),
    ('application/json', '_repr_json_'),
    ('application/javascript', '_repr_javascript_'),
    ('application/pdf', '_repr_pdf_'),
)


def mime_bundle(obj):
    """Every MIME form of obj that we can make, as Jupyter's display formatter would."""
    bundle = {}
    mimebundle = getattr(obj, '_repr_mimebundle_', None)
    if callable(mimebundle) and not isinstance(obj, type):
        try:
            produced = mimebundle(include=None, exclude=None)
            if isinstance(produced, tuple):
                produced = produced[0]
            if isinstance(produced, dict):
                bundle.update(produced)
        except Exception:
            pass
    for mime, method_name in _REPR_METHODS:
        if mime in bundle or isinstance(obj, type):
            continue
        method = getattr(obj, method_name, None)
        if not callable(method):
            continue
        try:
            value = method()
        except Exception:
            continue
        if isinstance(value, tuple):
            value = value[0]
        if value is None:
            continue
        if mime in ('image/png', 'image/jpeg', 'application/pdf'):
            value = _b64(value)
        bundle[mime] = value
    module = type(obj).__module__ or ''
    if module.startswith('matplotlib'):
        from matplotlib.figure import Figure
        if isinstance(obj, Figure):
            bundle.update(figure_bundle(obj))
            figures_shown.add(id(obj))
    if module.startswith('pandas'):
        import pandas as pd
        if isinstance(obj, (pd.DataFrame, pd.Series)):
            try:
                bundle['analyst/data'] = json_safe_columns(obj)
                bundle['analyst/frame'] = keep_frame(obj)
            except Exception:
                pass
    if 'text/plain' not in bundle:
        try:
            bundle['text/plain'] = _cap_text(repr(obj))
        except Exception as error:
            bundle['text/plain'] = '<unrepresentable %s: %s>' % (type(obj).__name__, error)
    for key in ('text/html', 'text/markdown', 'text/latex', 'image/svg+xml'):
        if isinstance(bundle.get(key), str):
            bundle[key] = _cap_text(bundle[key])
    return bundle


class Cells:
    current = None  # id of the cell that is running
    # The last cell the host asked to interrupt. An interrupt can arrive before its cell reaches
    # user code (still queued, or being compiled, while SIGINT is blocked): it is kept here and
    # delivered when the cell starts, instead of being lost.
    interrupted = None
    # The last cell whose interrupt reached its code (the handler ran): one interrupt per cell.
    delivered = None
    # The context of another language whose process runs the current cell (analyst_languages).
    foreign = None


def on_interrupt(signum, frame):
    """SIGINT's handler: KeyboardInterrupt in the cell's code, once per cell. A second signal for
    the same cell (the IO thread sends again until this has run) is dropped."""
    if Cells.current is None or Cells.delivered == Cells.current:
        return
    Cells.delivered = Cells.current
    raise KeyboardInterrupt


figures_shown = set()


def publish(obj, main=False):
    pipes.drain()
    send_result({'type': 'result', 'id': Cells.current, 'main': main, 'bundle': mime_bundle(obj)})


class ResultBudget:
    """Results of one cell are capped like its output: past resultCap they are dropped, once noted."""
    sent = 0
    noted = False


def send_result(message):
    line = json.dumps(message, default=str)
    cap = CONFIG.get('resultCap', 80 * 1024 * 1024)
    if ResultBudget.sent + len(line) > cap:
        if not ResultBudget.noted:
            ResultBudget.noted = True
            pipes.write('stderr', '\n[results truncated: the cell displayed more than %d MiB; the rest was dropped]\n'
                        % (cap // (1024 * 1024)))
        return
    ResultBudget.sent += len(line)
    send(message)


def display(*objs, **kwargs):
    """Jupyter's display(): each object becomes a result of the running cell."""
    for obj in objs:
        publish(obj)


def display_bundle(bundle):
    """Display data given as its MIME bundle (%%html, %%markdown)."""
    pipes.drain()
    send_result({'type': 'result', 'id': Cells.current, 'main': False, 'bundle': bundle})


_shell = None


def get_ipython():
    """IPython's get_ipython(): the shell that answers `!cmd` and `%magic` (analyst_ipython)."""
    global _shell
    if _shell is None:
        import analyst_ipython
        import analyst_pip
        _shell = analyst_ipython.Shell(lambda: sys.modules['__main__'].__dict__, display_bundle, analyst_pip.explain)
    return _shell


def flush_figures():
    """Send every open matplotlib figure as a PNG result, then close them (as Jupyter's inline
    backend does at plt.show() and at the end of a cell)."""
    pyplot = sys.modules.get('matplotlib.pyplot')
    if pyplot is None:
        return
    try:
        for number in pyplot.get_fignums():
            figure = pyplot.figure(number)
            if id(figure) in figures_shown:
                continue
            pipes.drain()
            bundle = dict(figure_bundle(figure), **{'text/plain': repr(figure)})
            send_result({'type': 'result', 'id': Cells.current, 'main': False, 'bundle': bundle})
    finally:
        figures_shown.clear()
        pyplot.close('all')


# ---------------------------------------------------------------- running cells


def start_module():
    module = types.ModuleType('__main__')
    module.__dict__['__builtins__'] = builtins
    return module


# Set by the zygote (analyst_zygote.py) in a kernel it forked.
FORKED = False
# The phases of a forked kernel's start, from the zygote: sent with `ready`.
FORK_TRACE = None
# Set by the zygote when the host asks a forked kernel which pages it wrote before ready (its
# prefault for the next kernels): returns them for the ready message.
LEARN_WRITES = None


def mark(phase):
    if FORK_TRACE is not None:
        FORK_TRACE.append((phase, time.monotonic_ns(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt))


# Set by the zygote, which put /dev/null on fd 0 and sys.stdin once for every kernel it forks.
STDIN_READY = False


# A template's start step run once in its zygote (analyst_zygote.py): a forked kernel's default
# context is the module it left.
STARTED = None


class Context:
    def __init__(self, context_id, cwd, module=None):
        self.id = context_id
        self.cwd = cwd
        self.count = 0
        self.module = module or start_module()
        self.namespace = self.module.__dict__


contexts = {}


KERNEL_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def kernel_frame(filename):
    """A frame of the kernel's own modules (this one, the IPython shell), which tracebacks leave out."""
    return filename.startswith(KERNEL_DIR) or filename.endswith('analyst_kernel.py')


def format_error(error, skip_kernel_frames=True):
    exc = traceback.TracebackException.from_exception(error)
    if skip_kernel_frames:
        frames = [f for f in exc.stack if not kernel_frame(f.filename)]
        exc.stack = traceback.StackSummary.from_list(frames)
    return {
        'name': type(error).__name__,
        'value': str(error),
        'traceback': ''.join(exc.format()).rstrip('\n'),
    }


def remember_error(error):
    """The cell's exception in sys.last_*, as Python's REPL and IPython keep it (pdb.pm() reads it;
    so does the e2b provider after a timeout, for the interrupted cell's traceback)."""
    tb = error.__traceback__
    while tb is not None and kernel_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    sys.last_type, sys.last_value, sys.last_traceback = type(error), error, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = error


def leading_indent(code):
    """Code indented as a whole (pasted from a string in a program) runs as IPython runs it: dedented."""
    first = next((line for line in code.splitlines() if line.strip()), '')
    if first[:1] in (' ', '\t'):
        import textwrap
        return textwrap.dedent(code)
    return code


def suppresses_result(code):
    """A trailing semicolon hides the last expression's value, as in Jupyter."""
    import tokenize
    layout = {tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER}
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type not in layout:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return False
    return last is not None and last.type == tokenize.OP and last.string == ';'




def allow_interrupts():
    """SIGINT reaches user code only from here to the end of the cell's code (where `execute`
    blocks it again); elsewhere it stays pending and is dropped at the next cell, so it cannot
    break the kernel's own bookkeeping."""
    while signal.sigtimedwait({signal.SIGINT}, 0) is not None:
        pass
    # An interrupt for this cell that came before it started is delivered now, as a signal,
    # so that code which ignores SIGINT still ignores it.
    if Cells.interrupted is not None and Cells.interrupted == Cells.current:
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except BaseException:
        # The interrupt came as SIGINT was unblocked: block it again before it goes on up.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        raise


async_runner = None


def run_code_object(code_object, namespace):
    global async_runner
    if code_object.co_flags & 0x80:  # CO_COROUTINE: the cell used top-level await
        import asyncio
        if async_runner is None:
            async_runner = asyncio.new_event_loop()
        return async_runner.run_until_complete(eval(code_object, namespace))
    return eval(code_object, namespace)


def execute_foreign(request, context):
    """A cell of another language's context, run by that context's process (analyst_languages)."""
    cell_id = request['id']
    Cells.current = cell_id
    ResultBudget.sent, ResultBudget.noted = 0, False
    pipes.start_cell(cell_id)
    # From here the IO thread sends the host's interrupt to that process (once it has started).
    context.interrupted = False
    Cells.foreign = context

    def on_result(bundle, main):
        pipes.drain()
        send_result({'type': 'result', 'id': cell_id, 'main': main, 'bundle': bundle})

    def on_question(question):
        analyst_languages.Routes.forward(context, question, send)

    try:
        if context.pid is None:
            context.start(dict(BASE_ENV))
        if Cells.interrupted == cell_id:
            context.interrupt()  # it came while the process started
        error = context.run(cell_id, request['code'], request.get('envs') or {}, BASE_ENV, on_result, on_question)
    except analyst_languages.Unavailable as why:
        error = {'name': 'LanguageUnavailable', 'value': str(why), 'traceback': ''}
    except Exception as failed:  # the kernel's own failure, said as the cell's
        error = {'name': type(failed).__name__, 'value': str(failed), 'traceback': ''}
    finally:
        Cells.foreign = None
    finish(cell_id, context, error)


def execute(request):
    context = contexts.get(request.get('context') or 'default')
    if isinstance(context, analyst_languages.ForeignContext):
        return execute_foreign(request, context)
    cell_id = request['id']
    Cells.current = cell_id
    ResultBudget.sent, ResultBudget.noted = 0, False
    pipes.start_cell(cell_id)
    error = None
    if context is None:
        error = {'name': 'ContextError', 'value': 'unknown context %r' % request.get('context'), 'traceback': ''}
        return finish(cell_id, None, error)
    context.count += 1
    filename = '%s%d>' % (CELL_PREFIX, context.count) if context.id == 'default' else '<cell-%s-%d>' % (context.id, context.count)
    code = leading_indent(request['code'])
    envs = request.get('envs') or {}
    saved_env = {key: os.environ.get(key) for key in envs}
    try:
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        os.environ.update({str(k): str(v) for k, v in envs.items()})
        if context.cwd:
            os.chdir(context.cwd)
        sys.modules['__main__'] = context.module
        arm_cpu_limit(LIMITS.get('cpuSeconds'))
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        try:
            tree = compile(code, filename, 'exec', ast.PyCF_ONLY_AST | flags, dont_inherit=True)
        except SyntaxError as not_python:
            # Plain Python never gets here: only a cell that does not compile is tried as IPython's.
            import analyst_ipython
            code = analyst_ipython.rewrite(code, not_python)
            linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
            tree = compile(code, filename, 'exec', ast.PyCF_ONLY_AST | flags, dont_inherit=True)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not suppresses_result(code):
            last = tree.body.pop()
        value = None
        try:
            allow_interrupts()
            if tree.body:
                run_code_object(compile(tree, filename, 'exec', flags, dont_inherit=True), context.namespace)
            if last is not None:
                expression = ast.Expression(last.value)
                value = run_code_object(compile(expression, filename, 'eval', flags, dont_inherit=True),
                                        context.namespace)
        finally:
            # Called here, first, and not from a function or a context manager's __exit__: Python
            # runs pending signal handlers when a function starts, so an interrupt could come in
            # before the mask is set and leave SIGINT unblocked for the kernel's own code.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        # The cell's code is over: what it still says (its value, figures, last output) goes with `done`.
        cork()
        if value is not None:
            context.namespace['_'] = value
            publish(value, main=True)
        flush_figures()
    except BaseException as raised:  # noqa: B036 - KeyboardInterrupt and SystemExit are cell errors here
        error = format_error(raised)
        remember_error(raised)
        try:
            flush_figures()
        except BaseException:
            pass
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    finish(cell_id, context, error)


def finish(cell_id, context, error):
    try:
        with pipes.lock:
            pipes.read_pipes()
            pipes.flush_locked()
            pipes.cell_id = None
        Cells.current = None
        if error is not None:
            send(dict(error, type='error', id=cell_id))
        send({'type': 'done', 'id': cell_id, 'count': context.count if context else None})
    finally:
        uncork()


# ---------------------------------------------------------------- sql(): questions to the host


class HostQuestions:
    """sql() and describe_table() ask the host (which holds the sources) and wait for its answer,
    which the IO thread routes here by id."""

    waiting = {}
    count = 0

    @classmethod
    def ask(cls, message):
        cls.count += 1
        message['id'] = 'q%d' % cls.count
        answers = queue.Queue()
        cls.waiting[message['id']] = answers
        send(message)
        return message['id'], answers

    @classmethod
    def deliver(cls, message):
        if analyst_languages.Routes.deliver(message):
            return  # an answer to another language's kernel
        answers = cls.waiting.get(message.get('id'))
        if answers is not None:
            answers.put(message)


def sql(query, source=None, params=None):
    """Runs one read-only SQL statement on a data source and returns the rows as a DataFrame.

    source: the source's name, when there is more than one. params: values for $1/? or :name
    placeholders, bound by the database (never put values into the text yourself)."""
    query_id, answers = HostQuestions.ask(analyst_sql.question(query, source, params))
    try:
        return analyst_sql.answered(iter(answers.get, None))
    except KeyboardInterrupt:
        send({'type': 'query-cancel', 'id': query_id})  # cancelled on its server, not left to run on
        raise
    finally:
        HostQuestions.waiting.pop(query_id, None)


def describe_table(table, source=None):
    """A table's columns, types, keys, row estimate, sample values and comments."""
    query_id, answers = HostQuestions.ask({'type': 'describe-table', 'table': str(table), 'source': source})
    try:
        answer = answers.get()
    finally:
        HostQuestions.waiting.pop(query_id, None)
    return analyst_sql.description(answer)


# ---------------------------------------------------------------- the IO thread


class Interrupter:
    """Delivers the host's interrupt to the main thread, and again until its handler has run.

    A signal that lands after the main thread let go of the GIL for a blocking call (time.sleep,
    a read) but before the call began only sets Python's flag: the call then blocks to its end,
    and the interrupt seemed lost. Sent again, the signal ends the call (EINTR) and the handler
    runs. The IO thread is the one that gets the GIL at exactly that moment, so this was no rare
    race: about one interrupt in a hundred, under load."""

    FIRST_RETRY = 0.02
    LAST_RETRY = 1.0
    # Another language's process that runs on this long after its SIGINT ignores it: it is ended,
    # and that context alone starts again (its variables lost, Python's kept). Within the host's
    # grace (2 s on the local engine), after which the host would kill this whole kernel.
    FOREIGN_GRACE = 1.0

    def __init__(self, main_thread_id):
        self.main_thread_id = main_thread_id
        self.cell = None
        self.due = 0.0
        self.wait = self.FIRST_RETRY
        self.foreign_cell = None
        self.foreign_due = 0.0

    def interrupt(self, cell_id):
        Cells.interrupted = cell_id
        foreign = Cells.foreign
        if foreign is not None and Cells.current == cell_id:
            foreign.interrupt()  # its own process: SIGINT there, not here
            self.foreign_cell = cell_id
            self.foreign_due = time.monotonic() + self.FOREIGN_GRACE
            return
        if Cells.current is not None and Cells.current == cell_id:
            self.cell = cell_id
            self.wait = self.FIRST_RETRY
            self.signal()

    def signal(self):
        signal.pthread_kill(self.main_thread_id, signal.SIGINT)
        self.due = time.monotonic() + self.wait
        self.wait = min(self.wait * 2, self.LAST_RETRY)

    def timeout_ms(self):
        """How long the IO thread may wait before the next send is due; None with nothing to send."""
        dues = [due for cell, due in ((self.cell, self.due), (self.foreign_cell, self.foreign_due)) if cell is not None]
        if not dues:
            return None
        return max(0, int((min(dues) - time.monotonic()) * 1000))

    def retry(self):
        if self.foreign_cell is not None:
            foreign = Cells.foreign
            if foreign is None or Cells.current != self.foreign_cell:
                self.foreign_cell = None  # the cell ended: the interrupt was honoured
            elif time.monotonic() >= self.foreign_due:
                self.foreign_cell = None
                foreign.end_unresponsive(self.FOREIGN_GRACE)
        if self.cell is None:
            return
        if Cells.current != self.cell or Cells.delivered == self.cell:
            self.cell = None  # the cell ended, or its code got the interrupt
        elif time.monotonic() >= self.due:
            self.signal()


def io_loop(requests, main_thread_id):
    """Reads host requests, forwards output, and delivers interrupts to the main thread."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGXCPU})
    request_decoder = codecs.getincrementaldecoder('utf-8')('replace')
    pending = ''
    poller = select.poll()
    for fd in (REQUEST_FD, pipes.wake_read, *pipes.readers):
        poller.register(fd, select.POLLIN)
    interval = int(Output.FLUSH_INTERVAL * 1000)
    interrupter = Interrupter(main_thread_id)
    # Requests are read into one buffer: os.read(fd, 1 MiB) maps a new MiB and unmaps it at every
    # request (three system calls more for a 50-byte cell).
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    while True:
        waits = [wait for wait in (interval if pipes.pending else None, interrupter.timeout_ms()) if wait is not None]
        events = dict(poller.poll(min(waits) if waits else None))
        interrupter.retry()
        if pipes.wake_read in events:
            os.read(pipes.wake_read, 4096)  # the flush waits for the interval, to batch writes
        if not events or any(fd in pipes.readers for fd in events):
            with pipes.lock:
                pipes.read_pipes()
                pipes.flush_locked()
        if REQUEST_FD not in events:
            continue
        size = os.readv(REQUEST_FD, [buffer])
        if not size:
            _real_exit(0)  # the host is gone
        pending += request_decoder.decode(view[:size])
        while '\n' in pending:
            line, pending = pending.split('\n', 1)
            if not line.strip():
                continue
            message = json.loads(line)
            kind = message.get('type', '')
            if kind == 'interrupt':
                interrupter.interrupt(message.get('id'))
            elif kind.startswith('query-') or kind == 'table-description':
                HostQuestions.deliver(message)
            elif not analyst_commands.handle(message, send, BASE_ENV):
                requests.put(message)


def handle(request):
    kind = request.get('type')
    if kind == 'execute':
        execute(request)
    elif kind == 'context':
        language = request.get('language') or 'python'
        old = contexts.pop(request['id'], None)
        if isinstance(old, analyst_languages.ForeignContext):
            old.stop()  # a restart: a new process with the next cell
        error = None if language == 'python' else analyst_languages.unavailable(language)
        if error is None:
            cwd = request.get('cwd') or WORKDIR
            contexts[request['id']] = Context(request['id'], cwd) if language == 'python' \
                else analyst_languages.ForeignContext(request['id'], language, cwd)
        send({'type': 'context-created', 'id': request['id'], 'error': error})
    elif kind == 'context-remove':
        old = contexts.pop(request['id'], None)
        if isinstance(old, analyst_languages.ForeignContext):
            old.stop()
    elif kind == 'env':
        envs = {str(k): str(v) for k, v in (request.get('envs') or {}).items()}
        os.environ.update(envs)
        BASE_ENV.update(envs)
        for context in contexts.values():
            if isinstance(context, analyst_languages.ForeignContext):
                context.set_env(envs)
        send({'type': 'env-set', 'id': request.get('id')})


def preload(names):
    """Imports what every kernel needs before it is ready (a forked kernel finds it done)."""
    for name in names or []:
        try:
            __import__(name)
        except Exception:
            pass
    if 'pandas' in sys.modules:
        import analyst_compat
        analyst_compat.allow_packaged_xlrd()
    analyst_threads.find()


def run_start(code, namespace):
    """A template's start step, in the default context's namespace before the kernel is ready."""
    if not code:
        return
    exec(compile(code, '<template start>', 'exec'), namespace)


def main():
    global pipes, LIMITS, WORKDIR, CONFIG, BASE_ENV
    # Only the protocol's fds go on: whatever the host inherited and did not mark close-on-exec
    # (a parent's pipe, a socket) must not reach code.
    os.closerange(5, os.sysconf('SC_OPEN_MAX'))
    # The environment commands start with: the kernel's, without what one cell sets for itself.
    BASE_ENV = dict(os.environ)
    CONFIG = config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    LIMITS = config.get('limits') or {}
    if config.get('workdir'):  # a template's working directory
        os.chdir(config['workdir'])
    WORKDIR = os.getcwd()
    for fd in (REQUEST_FD, MESSAGE_FD):
        os.set_inheritable(fd, False)
    if not STDIN_READY:
        sys.stdin = open(os.devnull)
        os.dup2(sys.stdin.fileno(), 0)
    sys.modules['analyst_kernel'] = sys.modules[__name__]
    builtins.display = display
    builtins.sql = sql
    builtins.describe_table = describe_table
    # As on the Jupyter engine (prelude.py): code can catch what sql() raises by its name.
    builtins.QueryError = analyst_sql.QueryError
    builtins.get_ipython = get_ipython
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    signal.signal(signal.SIGINT, on_interrupt)
    # A crash (segfault) prints the Python stack to the host's side of the original stderr.
    import faulthandler
    crash_log = os.dup(2)
    faulthandler.enable(file=crash_log)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    pipes = Output()
    def exit_after_output(status):
        """os._exit skips Python's cleanup: send what the cell printed before it goes."""
        try:
            pipes.drain()
        except Exception:
            pass
        _real_exit(status)

    os._exit = exit_after_output
    requests = queue.Queue()

    def set_up():
        preload(config.get('preload'))
        if FORKED and 'numpy' in sys.modules:
            sys.modules['numpy'].random.seed()  # the zygote's state, shared by every kernel forked from it
        analyst_threads.resize()  # in a kernel forked from the zygote: numpy was loaded there
        mark('K threads')
        analyst_display_hooks.install(display, get_ipython)
        contexts['default'] = Context('default', WORKDIR, STARTED)
        run_start(config.get('start'), contexts['default'].namespace)
        mark('K context')
        # Not threading.Thread: its start() waits until the new thread has run, a wait for a core
        # before `ready` (18 ms at load 22). The loop needs nothing of threading's bookkeeping.
        _thread.start_new_thread(io_loop, (requests, threading.get_ident()))
        mark('K io thread')

    def failed(error):
        # fd 1 and 2 are the capture's pipes by now: the host reads why on the original stderr
        # (a MemoryError here is a memory limit too small for the imports: kernel.ts says so).
        memory = LIMITS.get('memoryBytes')
        limit = f' (memory limit {memory // 2**20} MiB)' if memory else ''
        os.write(crash_log, f'kernel failed to start: {error!r}{limit}\n'.encode())

    mark('K main')
    try:
        apply_limits(LIMITS)
        # Before `ready`, forked or not: a memory limit too small for the set-up then fails the
        # create with the limit named (kernel.ts), instead of a kernel that dies at its first cell.
        set_up()
    except BaseException as error:
        failed(error)
        raise
    ready = {'type': 'ready', 'pid': os.getpid(), 'python': sys.version.split()[0]}
    if LEARN_WRITES is not None:
        ready['writes'] = LEARN_WRITES()
    if FORK_TRACE is not None:
        ready['trace'] = FORK_TRACE
    send(ready)
    while True:
        handle(requests.get())


if __name__ == '__main__':
    main()
