"""Process-wide settings for simulation jobs, applied first thing by `attnsim simulate`.

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
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 * 2**20  # blocks above this still get their own mapping (returned at free)
TRIM_THRESHOLD = 1024 * 2**20  # free heap top kept up to this size

_applied: bool | None = None


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
        return ctypes.CDLL(ctypes.util.find_library("c"))
