"""numpy's BLAS thread pool, sized to the sandbox's CPUs in a kernel forked from the zygote.

OpenBLAS starts one thread per host core, each with its stack and, at its first product, its
buffers: on a many-core host a one-CPU sandbox would run dozens of threads against its quota and
need hundreds of MiB of address space more. kernel/env.ts sets OPENBLAS_NUM_THREADS and the like
to the sandbox's CPUs, which a kernel that loads numpy itself reads. The zygote loads numpy with
one thread (its mappings are what every forked kernel starts with); a kernel forked from it finds
OpenBLAS loaded already and gives it its own count here. OpenBLAS's own calls, found once before
the fork: threadpoolctl does the same for every library, but takes 100 ms, which a fork must not.
The other libraries (OpenMP, MKL) load after the fork, from the kernel's environment.
"""

import ctypes
import os

# The names OpenBLAS's calls have in Debian's build and in numpy's and scipy's wheels.
PREFIXES = ('openblas_', 'scipy_openblas_')
SUFFIXES = ('', '64_')

_calls = None  # (get, set) of the OpenBLAS this process has loaded; () where it has none


def find():
    """OpenBLAS's calls, where numpy has loaded it: once, in the zygote before it forks."""
    global _calls
    if _calls is not None:
        return
    _calls = ()
    try:
        with open('/proc/self/maps') as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps if 'openblas' in line}
        for path in paths:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
            for prefix in PREFIXES:
                for suffix in SUFFIXES:
                    get = getattr(library, f'{prefix}get_num_threads{suffix}', None)
                    set_ = getattr(library, f'{prefix}set_num_threads{suffix}', None)
                    if get is not None and set_ is not None:
                        _calls = (get, set_)
                        return
    except OSError:
        pass  # no /proc, or a library gone: the environment's count stays


def resize():
    """OpenBLAS, loaded before this process's environment was set (in the zygote), takes its count."""
    value = os.environ.get('OPENBLAS_NUM_THREADS', '')
    if not _calls or not value.isdigit() or int(value) < 1:
        return
    get, set_ = _calls
    if get() != int(value):
        set_(int(value))
