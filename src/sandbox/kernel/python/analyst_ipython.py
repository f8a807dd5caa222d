"""IPython's syntax in cells (`!cmd`, `x = !cmd`, `%magic`, `%%cell magic`, `obj?`), as E2B's
Jupyter kernel takes it, without a Jupyter kernel.

A cell comes here only when it is not Python (the kernel compiles it first), so plain cells cost
nothing. IPython's own input transformer (IPython.core.inputtransformer2, from Debian's
python3-ipython) turns the IPython lines into calls on get_ipython(); `Shell` answers those calls
with the magics that data analysis uses. The transformer module is loaded from its file, not
through `import IPython`: the package's __init__ imports the terminal and the completer (jedi),
seconds of start-up that a cell with `!ls` should not pay.
"""

import importlib.util
import io
import os
import shlex
import subprocess
import sys
import time
import timeit

_transformer = None
_formatter = None
# Magics that IPython marks @no_var_expand.
_NO_VAR_EXPAND = ('time', 'timeit', 'prun', 'debug')


class IPythonMissing(SyntaxError):
    """An IPython line in a kernel whose Python has no IPython."""


def _ipython_file(relative, name):
    """A module of IPython's package, loaded from its file (None without IPython)."""
    try:
        spec = importlib.util.find_spec('IPython')
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *relative.split('/'))
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _load_transformer():
    global _transformer
    if _transformer is None:
        module = _ipython_file('core/inputtransformer2.py', 'analyst_inputtransformer2')
        _transformer = module.TransformerManager() if module else False
    return _transformer or None


def _load_formatter():
    """IPython's DollarFormatter: `$name`, `$obj.attr` and `{expression}` in commands and magic
    lines, `$$` for a dollar sign (IPython.utils.text imports nothing of IPython's)."""
    global _formatter
    if _formatter is None:
        try:
            module = _ipython_file('utils/text.py', 'analyst_ipython_text')
        except Exception:
            module = None
        _formatter = module.DollarFormatter() if module else False
    return _formatter or None


def _looks_like_ipython(code, error):
    """For the message only, when IPython is absent: the failing line opens with ! or %."""
    lines = code.splitlines()
    line = lines[error.lineno - 1] if error.lineno and error.lineno <= len(lines) else ''
    return line.lstrip()[:1] in ('!', '%') or line.rstrip().endswith('?')


def rewrite(code, error):
    """The cell as Python, when it is IPython syntax; otherwise the original SyntaxError again."""
    transformer = _load_transformer()
    if transformer is None:
        if _looks_like_ipython(code, error):
            raise IPythonMissing(
                'this line is IPython syntax (!command, %magic), which needs IPython in the sandbox, '
                'and its Python has none: install python3-ipython (Debian), or write it in Python '
                '(subprocess.run for a command, os.chdir for %cd)')
        raise error
    try:
        transformed = transformer.transform_cell(code)
    except Exception:
        raise error from None
    if transformed.strip() == code.strip():
        raise error
    return transformed


# ---------------------------------------------------------------- the shell behind get_ipython()


class SList(list):
    """What `x = !cmd` gives: the output's lines, with IPython's .s (one string), .n and .l."""

    @property
    def s(self):
        return ' '.join(self)

    @property
    def n(self):
        return '\n'.join(self)

    @property
    def l(self):  # noqa: E743 - IPython's name
        return list(self)


def _format_time(seconds):
    """IPython's _format_time: 3 significant digits in s, ms, µs or ns."""
    if seconds >= 1:
        return '%.3g s' % seconds
    for unit, scale in (('ms', 1e3), ('µs', 1e6), ('ns', 1e9)):
        if seconds * scale >= 1 or unit == 'ns':
            return '%.3g %s' % (seconds * scale, unit)


class Shell:
    """get_ipython() in Analyst's kernel. `kernel` gives the running context's namespace and
    publishes display data; `pip` explains pip in a sandbox (analyst_pip)."""

    def __init__(self, namespace, display, pip):
        self._namespace = namespace
        self._display = display
        self._pip = pip
        self.line_magics = {
            'cd': self._cd, 'pwd': self._pwd, 'env': self._env, 'pip': self._pip_magic,
            'conda': self._pip_magic, 'mamba': self._pip_magic, 'time': self._time,
            'timeit': self._timeit, 'matplotlib': self._nothing, 'config': self._nothing,
            'load_ext': self._nothing, 'autoreload': self._nothing, 'sx': self._sx,
            'system': self._sx, 'who': self._who, 'run': self._run, 'reset': self._reset,
        }
        for alias in ('ls', 'cat', 'cp', 'mv', 'rm', 'rmdir', 'mkdir', 'll'):
            self.line_magics[alias] = self._alias(alias)
        self.cell_magics = {
            'bash': self._script('bash'), 'sh': self._script('sh'), 'script': self._shebang,
            'python': self._script(sys.executable), 'python3': self._script(sys.executable),
            'time': self._time_cell, 'timeit': self._timeit_cell, 'writefile': self._writefile,
            'capture': self._capture, 'html': self._mime('text/html'), 'HTML': self._mime('text/html'),
            'markdown': self._mime('text/markdown'), 'latex': self._mime('text/latex'),
            'svg': self._mime('image/svg+xml'), 'javascript': self._mime('application/javascript'),
            'js': self._mime('application/javascript'),
        }

    @property
    def user_ns(self):
        return self._namespace()

    def var_expand(self, text, depth=0):
        """As IPython's: the cell's names and those of the function the line is in (`depth`
        frames above the caller); a line that does not expand is left as it is."""
        formatter = _load_formatter()
        if formatter is None:
            return text
        namespace = dict(self.user_ns)
        try:
            namespace.update(sys._getframe(depth + 1).f_locals)
        except ValueError:
            pass
        try:
            return formatter.vformat(text, args=[], kwargs=namespace)
        except Exception:
            return text

    # ---- ! and !!

    def system(self, command):
        command = self.var_expand(command, depth=1)
        if self._pip(command):
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        # fd 1 and 2 are the kernel's pipes: the command's output joins the cell's, in order.
        status = subprocess.call(['/bin/bash', '-c', command])
        self.user_ns['_exit_code'] = status
        return None

    def getoutput(self, command, split=True, depth=0):
        command = self.var_expand(command, depth=depth + 1)
        if self._pip(command):
            return SList()
        done = subprocess.run(['/bin/bash', '-c', command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.user_ns['_exit_code'] = done.returncode
        text = done.stdout.decode('utf-8', 'replace')
        return SList(text.splitlines()) if split else text

    # ---- magics

    def run_line_magic(self, magic_name, line, _stack_depth=1):
        magic = self.line_magics.get(magic_name)
        if magic is None:
            if magic_name == 'pinfo' or magic_name == 'pinfo2':
                return self._pinfo(line)
            raise UsageError('Line magic function `%%%s` not found in Analyst\'s kernel. It has: %s'
                             % (magic_name, ', '.join('%' + name for name in sorted(self.line_magics))))
        # %time and %timeit take Python, which IPython leaves unexpanded.
        return magic(line if magic_name in _NO_VAR_EXPAND else self.var_expand(line, _stack_depth))

    def run_cell_magic(self, magic_name, line, cell):
        magic = self.cell_magics.get(magic_name)
        if magic is None:
            raise UsageError('Cell magic `%%%%%s` not found in Analyst\'s kernel. It has: %s'
                             % (magic_name, ', '.join('%%' + name for name in sorted(self.cell_magics))))
        return magic(line if magic_name in _NO_VAR_EXPAND else self.var_expand(line, 1), cell)

    def _nothing(self, line):
        """%matplotlib inline and the like: figures are shown already; nothing to set."""
        return None

    def _alias(self, name):
        program = 'ls -l' if name == 'll' else name
        return lambda line: self.system('%s %s' % (program, line))

    def _cd(self, line):
        target = os.path.expanduser(line.strip().strip('"\'') or '~')
        os.chdir(target)
        print(os.getcwd())

    def _pwd(self, line):
        return os.getcwd()

    def _env(self, line):
        line = line.strip()
        if not line:
            return dict(os.environ)
        if '=' in line.split(' ', 1)[0] or ' ' in line:
            name, _, value = line.partition('=') if '=' in line.split(' ', 1)[0] else line.partition(' ')
            os.environ[name.strip()] = value.strip()
            print('env: %s=%s' % (name.strip(), value.strip()))
            return None
        return os.environ.get(line)

    def _pip_magic(self, line):
        self._pip('pip ' + line)

    def _sx(self, line):
        return self.getoutput(line)

    def _who(self, line):
        names = sorted(name for name, value in self.user_ns.items()
                       if not name.startswith('_') and not isinstance(value, type(sys)) and name not in ('In', 'Out', 'exit', 'quit', 'get_ipython'))
        print('\t'.join(names) if names else 'Interactive namespace is empty.')

    def _run(self, line):
        import runpy
        argv = shlex.split(line)
        saved = sys.argv
        sys.argv = argv
        try:
            result = runpy.run_path(argv[0], run_name='__main__')
        finally:
            sys.argv = saved
        self.user_ns.update({key: value for key, value in result.items() if not key.startswith('__')})

    def _reset(self, line):
        namespace = self.user_ns
        for name in [name for name in namespace if not name.startswith('__')]:
            del namespace[name]

    def _pinfo(self, line):
        value = eval(line.strip(), self.user_ns)
        print('Type:      %s' % type(value).__name__)
        print('String form: %s' % repr(value)[:200])
        doc = getattr(value, '__doc__', None)
        if doc:
            print('Docstring:\n%s' % doc)

    def _script(self, program):
        def run(line, cell):
            sys.stdout.flush()
            sys.stderr.flush()
            done = subprocess.run([program] + shlex.split(line), input=cell.encode('utf-8'))
            self.user_ns['_exit_code'] = done.returncode
        return run

    def _shebang(self, line, cell):
        argv = shlex.split(line)
        if not argv:
            raise UsageError('%%script needs a program: %%script bash')
        return self._script(argv[0])(' '.join(shlex.quote(arg) for arg in argv[1:]), cell)

    def _writefile(self, line, cell):
        argv = shlex.split(line)
        append = argv and argv[0] in ('-a', '--append')
        path = argv[-1] if argv else ''
        if not path:
            raise UsageError('%%writefile needs a file name: %%writefile notes.txt')
        existed = os.path.exists(path)
        with open(path, 'a' if append else 'w', encoding='utf-8') as file:
            file.write(cell)
        print('%s %s' % ('Appending to' if append else ('Overwriting' if existed else 'Writing'), path))

    def _capture(self, line, cell):
        """%%capture [name]: the cell's prints kept in `name` (.stdout, .stderr) instead of shown."""
        import contextlib
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(cell, '<capture>', 'exec'), self.user_ns)
        name = line.strip().split()[-1] if line.strip() else None
        if name:
            self.user_ns[name] = Captured(out.getvalue(), err.getvalue())

    def _mime(self, mime):
        return lambda line, cell: self._display({mime: cell, 'text/plain': '<%s>' % mime})

    # ---- %time and %timeit

    def _compile(self, source, mode):
        return compile(source, '<timed %s>' % mode, mode)

    def _time(self, line):
        return self._time_cell('', line)

    def _time_cell(self, line, cell):
        import ast
        tree = ast.parse(cell)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        wall = time.perf_counter()
        times = os.times()
        if tree.body:
            exec(compile(tree, '<timed exec>', 'exec'), self.user_ns)
        value = eval(compile(ast.Expression(last.value), '<timed eval>', 'eval'), self.user_ns) if last else None
        after = os.times()
        wall = time.perf_counter() - wall
        user, system = after.user - times.user, after.system - times.system
        print('CPU times: user %s, sys: %s, total: %s' % (_format_time(user), _format_time(system), _format_time(user + system)))
        print('Wall time: %s' % _format_time(wall))
        return value

    def _timeit(self, line):
        return self._timeit_cell(line, None)

    def _timeit_cell(self, line, cell):
        """%timeit [-n N] [-r R] [-q] [-o] statement, and %%timeit's body with the line as setup."""
        argv = line.split()
        options = {'-n': None, '-r': 7}
        quiet = keep = False
        while argv and argv[0].startswith('-') and argv[0] in ('-n', '-r', '-q', '-o'):
            flag = argv.pop(0)
            if flag in ('-n', '-r'):
                options[flag] = int(argv.pop(0))
            elif flag == '-q':
                quiet = True
            else:
                keep = True
        rest = ' '.join(argv)
        statement, setup = (cell, rest or 'pass') if cell is not None else (rest, 'pass')
        timer = timeit.Timer(statement, setup, globals=self.user_ns)
        number = options['-n']
        if number is None:
            for power in range(10):
                number = 10 ** power
                if timer.timeit(number) >= 0.2:
                    break
        runs = [total / number for total in timer.repeat(options['-r'], number)]
        mean = sum(runs) / len(runs)
        spread = (sum((run - mean) ** 2 for run in runs) / len(runs)) ** 0.5
        if not quiet:
            print('%s ± %s per loop (mean ± std. dev. of %d run%s, %s loop%s each)' % (
                _format_time(mean), _format_time(spread), len(runs), '' if len(runs) == 1 else 's',
                '{:,}'.format(number), '' if number == 1 else 's'))
        return TimeitResult(runs, number) if keep else None


class UsageError(Exception):
    """IPython's name for a magic used wrongly."""


class Captured:
    def __init__(self, stdout, stderr):
        self.stdout, self.stderr = stdout, stderr

    def show(self):
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)

    def __call__(self):
        self.show()


class TimeitResult:
    """%timeit -o: the runs, as IPython's TimeitResult has them (average, stdev, best, worst)."""

    def __init__(self, runs, loops):
        self.all_runs = [run * loops for run in runs]
        self.loops = loops
        self.timings = runs
        self.average = sum(runs) / len(runs)
        self.stdev = (sum((run - self.average) ** 2 for run in runs) / len(runs)) ** 0.5
        self.best, self.worst = min(runs), max(runs)

    def __repr__(self):
        return '<TimeitResult : %s ± %s per loop>' % (_format_time(self.average), _format_time(self.stdev))
