"""Lets pandas use what the distribution packages, where pandas asks for more than it needs.

Imported by the kernel (in the sandbox) and by the host's profiler, so that both read the same files.
"""


def allow_packaged_xlrd():
    """Debian 12 and Ubuntu 22.04 package xlrd 1.2, which reads .xls workbooks, but their pandas
    (1.3 to 1.5) refuses any xlrd older than 2.0.1: a floor set because xlrd 2 dropped .xlsx, which
    these pandas versions read with openpyxl anyway. Lower the floor to the xlrd that is installed.
    Returns True when xlrd can be used for .xls."""
    try:
        import xlrd
        from pandas.compat import _optional
    except Exception:
        return False
    version = str(getattr(xlrd, '__VERSION__', None) or getattr(xlrd, '__version__', ''))
    floor = getattr(_optional, 'VERSIONS', {}).get('xlrd')
    parts = version.split('.')
    if floor and floor.startswith('2.') and len(parts) >= 2 and parts[0] == '1' and parts[1].isdigit() and int(parts[1]) >= 2:
        _optional.VERSIONS['xlrd'] = version
    return True
