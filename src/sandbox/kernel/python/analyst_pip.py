"""`!pip install …` and `%pip install …` in a sandbox without network: instead of pip's minute of
retries and a long failure, say that there is no network, which of the asked-for packages are
installed already, and what the data stack holds. With network, pip runs as it would anywhere.
"""

import importlib.metadata
import shlex
import sys

# What data analysis reaches for, listed when present (by distribution name).
NOTABLE = (
    'numpy', 'pandas', 'scipy', 'matplotlib', 'seaborn', 'scikit-learn', 'statsmodels', 'openpyxl',
    'xlrd', 'pillow', 'pyarrow', 'polars', 'duckdb', 'sympy', 'networkx', 'plotly', 'requests',
    'beautifulsoup4', 'lxml', 'tabulate',
)
INSTALLERS = ('pip', 'pip3', 'conda', 'mamba', 'uv')
SEPARATORS = ('&&', '||', ';', '|', '&', ';;')
# pip install's options that take a value: the value is no package.
VALUED = ('-r', '--requirement', '-c', '--constraint', '-i', '--index-url', '--extra-index-url',
          '-f', '--find-links', '-t', '--target', '--prefix', '--root', '--platform', '--python-version',
          '--implementation', '--abi', '-e', '--editable', '--src', '--cache-dir', '--progress-bar',
          '--trusted-host', '--proxy', '--timeout', '--retries', '-C', '--config-settings', '--report')


def has_network():
    """A route out of the sandbox (IPv4 or IPv6 default route): a jail without network has only lo."""
    try:
        with open('/proc/net/route') as table:
            if any(line.split()[1] == '00000000' for line in table.readlines()[1:] if len(line.split()) > 1):
                return True
    except OSError:
        pass
    try:
        with open('/proc/net/ipv6_route') as table:
            return any(line.split()[0] == '0' * 32 and line.split()[9] != 'lo' for line in table if len(line.split()) > 9)
    except OSError:
        return False


def install_request(command):
    """The packages a shell command asks pip (conda, mamba, uv pip) to install, or None when it does not."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    segments, segment = [], []
    for word in words + [';']:
        if word in SEPARATORS:
            segments.append(segment)
            segment = []
        else:
            segment.append(word)
    for argv in segments:
        program = argv[0].rsplit('/', 1)[-1] if argv else ''
        if program.startswith('python') and argv[1:3] == ['-m', 'pip']:
            argv = argv[2:]
        elif program == 'uv' and argv[1:2] == ['pip']:
            argv = argv[1:]
        elif program not in INSTALLERS:
            continue
        if len(argv) > 1 and argv[1] == 'install':
            return _packages(argv[2:])
    return None


def _packages(words):
    names, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word.startswith('-'):
            skip = word in VALUED
        else:
            names.append(word)
    return names


def _name(requirement):
    try:
        from packaging.requirements import Requirement
        return Requirement(requirement).name
    except Exception:
        for mark in '<>=!~[;@ ':
            requirement = requirement.split(mark, 1)[0]
        return requirement


def _version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _template():
    """The template the sandbox runs in, from the kernel's config (none: the engine's default)."""
    kernel = sys.modules.get('analyst_kernel')
    return ((getattr(kernel, 'CONFIG', None) or {}).get('template')) if kernel else None


def explain(command):
    """True when the command was a pip install that cannot work here, and this said why instead."""
    requested = install_request(command)
    if requested is None or has_network():
        return False
    template = _template()
    lines = ['pip cannot install packages here: the sandbox has no network.']
    missing = ('not installed in the template %s; use what is installed, or add it to the template '
               '(a pip step in its spec, then analyst template build)' % template if template else
               'not installed; use what is installed, or ask for it to be added to the sandbox')
    for requirement in requested:
        name = _name(requirement)
        version = _version(name)
        lines.append('  %s: %s' % (name, 'installed already (%s)' % version if version else missing))
    present = ['%s %s' % (name, _version(name)) for name in NOTABLE if _version(name)]
    count = sum(1 for _ in importlib.metadata.distributions())
    lines.append('Installed: %s (%d packages in all: !pip list shows them).' % (', '.join(present) or 'nothing notable', count))
    sys.stdout.flush()
    print('\n'.join(lines), file=sys.stderr)
    return True
