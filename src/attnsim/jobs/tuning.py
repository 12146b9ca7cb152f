"""Process-wide settings for the workflow's jobs, applied first thing by their commands.

OpenBLAS starts one thread per core when numpy is imported, and those threads spin while they
wait for work: ~0.1 CPU-s a process (a small `attnsim collect` 0.46 -> 0.34 CPU-s, 8 alternating
runs), which a run of ~40 job processes on busy cores takes from the other jobs. No job needs them:
the kernels pin BLAS to one thread per worker (threadpoolctl), and the summaries, figures and
claims do no BLAS work worth a second thread. `single_blas_thread` makes OpenBLAS start one thread
(unless the environment says otherwise): the same single-threaded BLAS the kernels already run.

Simulation jobs (`attnsim simulate`) also tune glibc's allocator:

glibc returns every freed block above M_MMAP_THRESHOLD (128 KiB by default, adjusted
dynamically) straight to the operating system, and trims the heap top above
M_TRIM_THRESHOLD; numpy temporaries are mostly larger than that, so each one costs fresh
page faults (zeroed pages), which made the kernels 3.6-5x slower on the project's VMs.
`mallopt` raises both thresholds so freed temporaries stay in the heap and are reused.
The environment variables MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ do the same but
are read only when the process starts, so they cannot be set from Python; mallopt can.

Elsewhere (macOS, musl, Windows) there is no mallopt and nothing is changed. The settings
change speed and the process's resident memory, never any number computed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 * 2**20  # blocks above this still get their own mapping (returned at free)
TRIM_THRESHOLD = 1024 * 2**20  # free heap top kept up to this size

_applied: bool | None = None


def single_blas_thread() -> bool:
    """OpenBLAS (numpy's BLAS) starts with one thread, unless OPENBLAS_NUM_THREADS is set already;
    False when too late, numpy being imported."""
    if "numpy" in sys.modules:
        return False
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return True


def tune_allocator() -> bool:
    """Raise glibc's mmap and trim thresholds once per process; True if they are in effect."""
    global _applied
    if _applied is None:
        _applied = _mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and _mallopt(
            M_TRIM_THRESHOLD, TRIM_THRESHOLD
        )
        log.debug("glibc malloc thresholds %s", "raised" if _applied else "unchanged (no mallopt)")
    return _applied


def _mallopt(param: int, value: int) -> bool:
    try:
        mallopt = _libc().mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(param, value) == 1


def _libc() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libc.so.6")  # glibc; find_library would run ldconfig (~20 ms)
    except OSError:
        from ctypes.util import find_library  # here: every job command imports this module

        return ctypes.CDLL(find_library("c"))
