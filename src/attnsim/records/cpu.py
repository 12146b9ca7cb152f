"""Which CPU class computed a chunk: numpy's SIMD dispatch level and OpenBLAS's core.

Per-trial rows are bit-identical on every machine of one CPU class and agree within a stated
tolerance across classes (docs/science.md §8.4, docs/usage.md "Reproducibility"). Two things
decide the last bits of a kernel's numbers besides its inputs:

- numpy's dispatch for the SIMD loops of its ufuncs (``exp``, ``log``, ``expm1``, sums, ...): the
  highest ``X86_V*`` level the CPU offers and the environment allows (``NPY_DISABLE_CPU_FEATURES``);
  AVX-512 (``X86_V4``) and AVX2 (``X86_V3``) round transcendental functions differently;
- the core OpenBLAS chose for matrix products (``SkylakeX``, ``Haswell``, ...): its kernels sum
  in a different order. Some machines set ``OPENBLAS_CORETYPE`` themselves, so an AVX-512 CPU
  may run the ``Haswell`` kernels (the first recorded reference rows came from such a machine).

The class is ``<numpy level>-<BLAS core>``, e.g. ``X86_V4-SkylakeX`` or ``X86_V3-Haswell``.
`provenance` is what every chunk file records (with the CPU model and feature flags).
"""

from __future__ import annotations

import functools
import importlib
import platform

import numpy as np

LEVELS = ("X86_V4", "X86_V3", "X86_V2")  # numpy 2's x86-64 micro-architecture levels, highest first


def numpy_features() -> dict[str, bool]:
    """numpy's runtime CPU features (after NPY_DISABLE_CPU_FEATURES): name -> usable."""
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # pragma: no cover - numpy 1.x
        umath = importlib.import_module("numpy.core._multiarray_umath")
    return dict(umath.__cpu_features__)


def numpy_dispatch() -> str:
    """The highest SIMD level numpy dispatches its loops to here (``X86_V4``, ``X86_V3``, ...); on
    another architecture the machine's name (e.g. ``aarch64``), whose features decide alone."""
    features = numpy_features()
    level = next((name for name in LEVELS if features.get(name)), None)
    if level is not None:
        return level
    return platform.machine() or "unknown"


@functools.cache
def blas() -> dict[str, str]:
    """numpy's BLAS as threadpoolctl sees it: internal_api, version, architecture (the core)."""
    from threadpoolctl import threadpool_info

    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    numpy_dir = str(np.__file__).rsplit("/", 2)[0]
    info = next(
        (i for i in infos if str(i.get("filepath", "")).startswith(numpy_dir)),
        infos[0] if infos else {},
    )
    return {
        key: str(info.get(key) or "unknown") for key in ("internal_api", "version", "architecture")
    }


def cpu_class() -> str:
    """``<numpy dispatch level>-<BLAS core>``: machines of one class compute identical rows."""
    return f"{numpy_dispatch()}-{blas()['architecture']}"


@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def provenance() -> dict[str, object]:
    """What a chunk records about the CPU that computed it (the ``cpu`` field of its provenance)."""
    features = numpy_features()
    return {
        "class": cpu_class(),
        "numpy_dispatch": numpy_dispatch(),
        "numpy_features": sorted(name for name, usable in features.items() if usable),
        "blas": blas(),
        "model": cpu_model(),
        "machine": platform.machine(),
    }
