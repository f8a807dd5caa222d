"""Lets pandas use what the distribution packages, where pandas asks for more than it needs.

Imported by the kernel (in the sandbox) and by the host's profiler and `analyst doctor`, so that all
of them read the same files.
"""


def packaged_xlrd():
    """The version of xlrd when it can read .xls for pandas: 2.x, or 1.2 and later 1.x (Debian 12
    and Ubuntu 22.04 package 1.2.0); None otherwise. Imports xlrd only, not pandas."""
    try:
        import xlrd
    except Exception:
        return None
    version = str(getattr(xlrd, '__VERSION__', None) or getattr(xlrd, '__version__', ''))
    parts = (version.split('.') + ['0', '0'])[:2]
    if not all(part.isdigit() for part in parts):
        return None
    major, minor = int(parts[0]), int(parts[1])
    return version if major >= 2 or (major == 1 and minor >= 2) else None


def allow_packaged_xlrd():
    """pandas 1.3 to 1.5 refuses any xlrd older than 2.0.1: a floor set because xlrd 2 dropped .xlsx,
    which these pandas versions read with openpyxl anyway. Lower it to a packaged xlrd 1.2 or later,
    which reads .xls as well as 2.x does. Call it after pandas is imported."""
    version = packaged_xlrd()
    if version is None or not version.startswith('1.'):
        return
    try:
        from pandas.compat import _optional
    except Exception:
        return
    floor = getattr(_optional, 'VERSIONS', {}).get('xlrd')
    if floor and floor.startswith('2.'):
        _optional.VERSIONS['xlrd'] = version
