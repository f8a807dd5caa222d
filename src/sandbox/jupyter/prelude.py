"""What Analyst sets up in a Jupyter kernel (ipykernel) before the first cell, so that a cell gives
the same results as in Analyst's own kernel: the sandbox's workspace as the working directory,
its environment variables (the server ignores `env` in the start request), tracebacks without
colours, stdout and stderr in the order they were written, DataFrames as `analyst/data`, figures
with their data as `analyst/chart`, shell commands started by the kernel, and after a cell that
created, changed or removed files, one display message of CELL_END_MIME that tells which (the host
takes it out of the results).

The host sends this file as the module `analyst_jupyter`, with the modules it shares with Analyst's
own kernel (src/sandbox/python: analyst_data, analyst_charts, analyst_commands), and calls
setup(config).
"""

import os
import sys
import warnings

CELL_END_MIME = 'application/vnd.analyst.cell-end+json'
# Command output reaches the host as comm messages of this id on iopub (no frontend opens it).
COMMANDS_COMM = 'analyst-commands'
# Jupyter Server drops iopub messages past iopub_msg_rate_limit (1000/s): a command sends at most
# one every this many seconds, and what it prints meanwhile waits in its pipe for the next one.
COMMAND_SEND_INTERVAL = 0.02
SCAN_LIMIT = 20_000
SCAN_DEPTH = 32


class State:
    workspace = None  # absolute path of the workspace
    reported = {}  # relative path -> 'size:mtime_ns:inode' as last reported to the host
    saved_env = None  # variables a cell's `envs` replaced, restored after the cell


def setup(config):
    import IPython

    shell = IPython.get_ipython()
    os.makedirs(config['workspace'], exist_ok=True)
    os.makedirs(os.path.join(config['workspace'], 'data'), exist_ok=True)
    State.workspace = os.path.abspath(config['workspace'])
    cwd = os.path.join(State.workspace, config.get('cwd') or '')
    os.makedirs(cwd, exist_ok=True)
    os.chdir(cwd)
    os.environ.update({str(k): str(v) for k, v in (config.get('envs') or {}).items()})
    shell.run_line_magic('colors', 'NoColor')
    # IPython warns on stderr after sys.exit(); the cell's SystemExit error says it already.
    warnings.filterwarnings('ignore', message='To exit: use', category=UserWarning)
    quick_cells(shell)
    order_streams()
    format_data(shell)
    format_charts(shell)
    figure_once(shell)
    flush_before_exit()
    shell.events.register('post_run_cell', cell_end)
    end_processes(config.get('orphans') or [])
    import analyst_sql
    shell.user_ns.update(sql=sql, describe_table=describe_table, QueryError=analyst_sql.QueryError)


def order_streams():
    """Output in the order it was written, as one stream. ipykernel buffers stdout and stderr apart
    and flushes each on its own timer, and reads what bypasses Python (C code, subprocesses) from
    fd 1 and 2 in a thread of its own: 'err' printed between two stdout lines, or a subprocess's
    line printed before a print(), can arrive after them. Here fd 1 and 2 are pipes read under one
    lock, before every Python-level write and by a thread between writes, and a write to one
    stream first flushes the other."""
    import codecs
    import select
    import threading

    out, err = sys.stdout, sys.stderr
    if getattr(out, '_analyst_ordered', False) or not hasattr(out, '_buffer'):
        return
    lock = threading.RLock()
    writes = {out: out.write, err: err.write}  # ipykernel's own
    flushes = {out: out.flush, err: err.flush}  # ipykernel's (or quick_cells'): no drain in them
    others = {out: err, err: out}
    readers = {}
    for fd, stream in ((1, out), (2, err)):
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        os.set_blocking(read_end, False)
        readers[read_end] = (stream, codecs.getincrementaldecoder('utf-8')('replace'))

    def append(stream, text):
        if others[stream]._buffer.tell():
            flushes[others[stream]]()
        return writes[stream](text)

    def drain():
        for read_end, (stream, decoder) in readers.items():
            while True:
                try:
                    data = os.read(read_end, 65536)
                except BlockingIOError:
                    break
                if not data:
                    break
                text = decoder.decode(data)
                if text:
                    append(stream, text)

    def pump():
        poller = select.poll()
        for read_end in readers:
            poller.register(read_end, select.POLLIN)
        while True:
            poller.poll()
            with lock:
                drain()

    for stream in (out, err):

        def ordered(text, _stream=stream):
            with lock:
                drain()  # what C code and subprocesses wrote before this
                return append(_stream, text)

        def flush(_stream=stream):
            with lock:
                drain()  # what C code and subprocesses wrote goes before the cell's end
            flushes[_stream]()

        stream.write = ordered
        stream.flush = flush
        stream._analyst_ordered = True
    threading.Thread(target=pump, name='analyst-output', daemon=True).start()


def quick_cells(shell):
    """What ipykernel and IPython do in every cell that a sandbox has no use for, off:
    - the input history in a SQLite file in the server's home (history.sqlite), written by a
      thread of IPython's after every cell with a commit that syncs the disk: milliseconds of
      every round trip, and every sandbox's code readable by the others (`%history -g`). Kept
      in memory instead, as with IPython's own `HistoryManager.hist_file = ':memory:'`: In, Out,
      _i and %history of this kernel work as before;
    - a sleep of 0.5 ms after each cell before its reply (`Kernel._execute_sleep`, for clients
      that stop listening at the reply; the host waits for `status: idle`, which follows every
      output of the cell on the same socket);
    - flushing stdout and stderr with nothing in them: ipykernel flushes both three times a cell,
      each time a hand-off to its IOPub thread and back; what was sent before is already queued
      ahead of the cell's `status: idle`."""
    history = getattr(shell, 'history_manager', None)
    saver = getattr(history, 'save_thread', None)
    if saver is not None:
        try:
            saver.stop()  # joins the thread, which writes nothing more
            history.save_thread = None
            on_disk = history.db
            history.hist_file = ':memory:'
            history.init_db()
            history.new_session()
            on_disk.close()
        except Exception:
            pass  # an IPython unlike 7 and 8: its history stays as it was
    kernel = getattr(shell, 'kernel', None)
    if isinstance(getattr(kernel, '_execute_sleep', None), float):
        kernel._execute_sleep = 0.0
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, '_buffer') and not getattr(stream, '_analyst_quick', False):

            def flush(_stream=stream, _flush=stream.flush):
                if _stream._buffer.tell():
                    _flush()

            stream.flush = flush
            stream._analyst_quick = True


def figure_once(shell):
    """A figure that is the cell's value is its main result; closing it keeps the inline backend
    from sending it a second time at the end of the cell."""
    hook = shell.displayhook
    compute = hook.compute_format_data

    def compute_and_close(result):
        data = compute(result)
        if type(result).__name__ == 'Figure' and (type(result).__module__ or '').startswith('matplotlib'):
            import matplotlib.pyplot as plt

            plt.close(result)
        return data

    hook.compute_format_data = compute_and_close


def flush_before_exit():
    """os._exit skips Python's cleanup: send what the cell printed before the process goes."""
    real_exit = os._exit
    if getattr(real_exit, '_analyst', False):
        return

    def exit_after_output(status):
        try:
            sys.stdout.write('')  # takes in what C code and subprocesses wrote (order_streams)
            sys.stdout.flush()
            sys.stderr.flush()
            import time

            time.sleep(0.05)  # the messages leave through ZeroMQ's own thread
        except Exception:
            pass
        real_exit(status)

    exit_after_output._analyst = True
    os._exit = exit_after_output


def format_data(shell):
    """DataFrames and Series get an `analyst/data` form beside text and HTML."""
    from IPython.core.formatters import JSONFormatter

    class DataFormatter(JSONFormatter):
        format_type = 'analyst/data'
        print_method = '_repr_analyst_data_'

    from analyst_data import json_safe_columns

    formatter = DataFormatter(parent=shell.display_formatter)
    for module, name in (('pandas.core.frame', 'DataFrame'), ('pandas.core.series', 'Series')):
        formatter.for_type_by_name(module, name, json_safe_columns)
    shell.display_formatter.formatters['analyst/data'] = formatter


def format_charts(shell):
    """A matplotlib figure gets an `analyst/chart` form beside its PNG: the data behind it, read by
    the extractor Analyst's own kernel uses (analyst_charts.py), so `Result.chart` is the same. It
    comes after the image forms, so the figure has been drawn (its tick labels set)."""
    from IPython.core.formatters import JSONFormatter

    class ChartFormatter(JSONFormatter):
        format_type = 'analyst/chart'
        print_method = '_repr_analyst_chart_'

        # Not a type printer: the inline backend removes every formatter's printer for Figure
        # when it is activated (IPython's select_figure_formats).
        def __call__(self, obj):
            kind = type(obj)
            if kind.__name__ != 'Figure' or not (kind.__module__ or '').startswith('matplotlib'):
                return None
            try:
                import analyst_charts

                return analyst_charts.figure_chart(obj)
            except Exception:
                return None  # the PNG is what counts; IPython would print a formatter's error on stderr

    shell.display_formatter.formatters['analyst/chart'] = ChartFormatter(parent=shell.display_formatter)


def cell_envs(envs):
    """Sets variables for the next cell only (sent just before it); cell_end restores them."""
    State.saved_env = {key: os.environ.get(key) for key in envs}
    os.environ.update({str(k): str(v) for k, v in envs.items()})


def restore_envs():
    saved, State.saved_env = State.saved_env, None
    for key, value in (saved or {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def scan():
    """Every regular file of the workspace outside data/, as {relative path: (state, size)}."""
    found = {}
    budget = [SCAN_LIMIT]

    def walk(path, prefix, depth):
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                return
            relative = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if (not prefix and entry.name == 'data') or depth >= SCAN_DEPTH:
                        continue
                    walk(entry.path, relative + '/', depth + 1)
                elif entry.is_file(follow_symlinks=False):
                    stat = entry.stat(follow_symlinks=False)
                    found[relative] = ('%d:%d:%d' % (stat.st_size, stat.st_mtime_ns, stat.st_ino), stat.st_size)
            except OSError:
                continue

    walk(State.workspace, '', 0)
    return found


def cell_end(result=None):
    """After each cell: restore its variables, then tell the host which files changed since the last
    report of this kernel (the host compares with what every kernel of the sandbox reported)."""
    restore_envs()
    try:
        found = scan()
    except Exception:
        return
    changed = [[name, state, size] for name, (state, size) in found.items() if State.reported.get(name) != state]
    removed = [name for name in State.reported if name not in found]
    State.reported = {name: state for name, (state, _) in found.items()}
    if not changed and not removed:
        return  # nothing to tell: no message, so a cell costs what it costs without Analyst
    from IPython.display import publish_display_data

    publish_display_data({CELL_END_MIME: {'changed': changed, 'removed': removed}})


class Json:
    """A value that IPython shows as JSON text: how a file operation answers in user_expressions."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        import json

        return json.dumps(self.value)


def resolve(path, follow_last=True):
    """A workspace-relative path made absolute; never outside the workspace, through links or not."""
    joined = os.path.join(State.workspace, path)
    parent, name = os.path.split(joined.rstrip('/'))
    full = os.path.realpath(joined) if follow_last else os.path.join(os.path.realpath(parent), name)
    if full != State.workspace and not full.startswith(State.workspace + os.sep):
        raise PermissionError('%s is outside the workspace' % path)
    return full


def entry(full, name):
    stat = os.stat(full, follow_symlinks=False)
    import stat as kinds

    kind = 'dir' if kinds.S_ISDIR(stat.st_mode) else 'file' if kinds.S_ISREG(stat.st_mode) else None
    return kind and {'name': name, 'type': kind, 'size': stat.st_size if kind == 'file' else 0}


def command_sender():
    """How a command's messages reach the host: comm messages on iopub, sent from the command's
    thread (ipykernel's iopub socket takes messages from any thread), paced under the server's
    message rate limit."""
    import threading
    import time

    kernel = __import__('IPython').get_ipython().kernel
    parent = kernel.get_parent() if hasattr(kernel, 'get_parent') else kernel._parent_header
    state = {'last': 0.0}
    lock = threading.Lock()

    def send(message):
        if message.get('type') != 'proc-exit':
            with lock:
                wait = state['last'] + COMMAND_SEND_INTERVAL - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                state['last'] = time.monotonic()
        kernel.session.send(kernel.iopub_socket, 'comm_msg', {'comm_id': COMMANDS_COMM, 'data': message},
                            parent=parent)

    return send


def command(request_json):
    """Starts a shell command for the host (analyst_commands.py) in the workspace or the folder it
    names; answers its pid. Its output and exit come later, as comm messages."""
    import json

    import analyst_commands

    request = json.loads(request_json)
    cwd = request.get('cwd') or ''
    request['cwd'] = cwd if os.path.isabs(cwd) else os.path.join(State.workspace, cwd)
    env = dict(os.environ)
    env['HOME'] = State.workspace  # as in Analyst's kernel, where home is the workspace
    return Json({'pid': analyst_commands.spawn(request, command_sender(), env)})


def command_control(request_json):
    """stdin, end of stdin or a signal for a running command."""
    import json

    import analyst_commands

    analyst_commands.handle(json.loads(request_json), None, None)
    return Json(None)


def end_processes(pids):
    """Kills commands the host started and lost track of (their kernel restarted), and what they
    started: each is the leader of its own session."""
    import signal

    for pid in pids:
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def op(kind, path, *args):
    """The files API through the kernel, for servers without a Contents API (Enterprise Gateway)
    and for what the Contents API does not do (removing a folder with what is in it)."""
    import base64
    import shutil

    if kind == 'clear':  # the sandbox is killed: its commands and its workspace go
        end_processes(args[0].split(',') if args and args[0] else [])
        shutil.rmtree(State.workspace, ignore_errors=True)
        return Json(None)
    full = resolve(path, follow_last=kind not in ('remove', 'stat'))
    if kind == 'read':
        offset, size = args
        with open(full, 'rb') as file:
            file.seek(offset)
            return Json(base64.b64encode(file.read(size)).decode('ascii'))
    if kind == 'write':
        data, append = args
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'ab' if append else 'wb') as file:
            file.write(base64.b64decode(data))
        return Json(entry(full, os.path.basename(full)))
    if kind == 'list':
        found = [entry(item.path, item.name) for item in os.scandir(full)]
        return Json(sorted([e for e in found if e], key=lambda e: e['name']))
    if kind == 'stat':
        return Json(entry(full, os.path.basename(full)) if os.path.lexists(full) else None)
    if kind == 'remove':
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
        return Json(None)
    raise ValueError('unknown file operation %r' % kind)


# ---------------------------------------------------------------- sql(): questions to the host
# ipykernel reads no shell message (comms included) while a cell runs, but it reads stdin: each
# question goes out as an input_request whose prompt starts with the marker (jupyter/questions.ts),
# and the reply is the list of answers the local kernel would stream.

QUESTION_MARKER = '\x01analyst-question:'


_question_count = [0]


def _ask(message):
    import json
    from IPython import get_ipython
    kernel = get_ipython().kernel
    _question_count[0] += 1
    message.setdefault('id', 'j%d' % _question_count[0])
    reply = kernel._input_request(QUESTION_MARKER + json.dumps(message), kernel._parent_ident['shell'],
                                  kernel.get_parent('shell'), password=False)
    return message['id'], json.loads(reply or '[]')


def _answers(message):
    """A query's answers, a chunk of a few MiB a reply (Jupyter Server refuses a websocket message
    over 10 MiB): more are asked for until the query has ended, each made into arrays as it comes."""
    _, chunk = _ask(message)  # gives the message its id before it goes
    while True:
        if not chunk:
            yield {'type': 'query-error', 'id': message['id'], 'message': 'the host gave no answer'}
            return
        for answer in chunk:
            yield answer
            if answer['type'] in ('query-end', 'query-error'):
                return
        _, chunk = _ask({'type': 'query-more', 'id': message['id']})


def sql(query, source=None, params=None):
    """Runs one read-only SQL statement on a data source and returns the rows as a DataFrame.

    source: the source's name, when there is more than one. params: values for $1/? or :name
    placeholders, bound by the database (never put values into the text yourself)."""
    import analyst_sql
    message = analyst_sql.question(query, source, params)
    try:
        return analyst_sql.answered(_answers(message))
    except KeyboardInterrupt:
        _ask({'type': 'query-cancel', 'id': message['id']})  # cancelled on its server, not left to run on
        raise


def describe_table(table, source=None):
    """A table's columns, types, keys, row estimate, sample values and comments."""
    import analyst_sql
    _, answers = _ask({'type': 'describe-table', 'table': str(table), 'source': source})
    return analyst_sql.description(answers[0] if answers else {})
