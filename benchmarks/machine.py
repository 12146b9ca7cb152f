"""The machine: its description and its own limits (sampling, exp and GEMM rates), measured in the run."""

from __future__ import annotations

import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from attnsim.kernels.sampling import standard_normal
from benchmarks.table import Row


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def description() -> dict[str, str]:
    blas = [
        f"{lib.get('internal_api')} {lib.get('version')} ({lib.get('architecture')}, "
        f"{lib.get('threading_layer')})"
        for lib in threadpool_info()
        if lib.get("user_api") == "blas"
    ]
    import attnsim
    from attnsim.run import cpu

    flags = [f for f in ("AVX512F", "AVX2", "FMA3") if cpu.numpy_features().get(f)]
    return {
        "cpu": cpu_model(),
        # the CPU class every timing depends on: numpy's SIMD dispatch and OpenBLAS's core
        "cpu_class": f"{cpu.cpu_class()} (flags {', '.join(flags) or 'none of AVX512F, AVX2, FMA3'}; numpy dispatch {cpu.numpy_dispatch()})",
        "cores": str(cores()),
        "memory_gb": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 1e9:.1f}"
        if hasattr(os, "sysconf")
        else "?",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "blas": "; ".join(blas) or "unknown",
        "attnsim": attnsim.__version__,
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def best_seconds(fn, budget: float, min_reps: int = 3, max_reps: int = 1000) -> float:
    """Smallest wall time of one call of `fn` over repeated calls within ~`budget` seconds."""
    fn()  # warm up
    best, spent, reps = float("inf"), 0.0, 0
    while reps < min_reps or (spent < budget and reps < max_reps):
        started = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - started
        best, spent, reps = min(best, elapsed), spent + elapsed, reps + 1
    return best


def parallel_rate(make_work, items_per_call: float, threads: int, budget: float) -> float:
    """Items per second of `threads` threads each calling its own work (numpy releases the GIL)."""
    works = [make_work(i) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        seconds = best_seconds(lambda: list(pool.map(lambda w: w(), works)), budget)
    return threads * items_per_call / seconds


@dataclass
class Limits:
    """Rates on all cores (items per second), used to build each kernel's bound."""

    normal: float
    exp64: float
    expm1_32: float
    sgemm: float
    dgemm: float


def normals_numpy(dtype, size: int):
    def make(i):
        rng = np.random.Generator(np.random.SFC64(i))
        out = np.empty(size, dtype)
        return lambda: rng.standard_normal(size, dtype=dtype, out=out)

    return make


def normals_attnsim(size: int):
    def make(i):
        rng = np.random.Generator(np.random.SFC64(i))
        return lambda: standard_normal(rng, size)

    return make


def ufunc(f, dtype, size: int):
    def make(i):
        x = -np.random.default_rng(i).random(size).astype(dtype)
        out = np.empty_like(x)
        return lambda: f(x, out=out)

    return make


def gemm(dtype, m: int):
    def make(i):
        a = np.random.default_rng(i).random((m, m)).astype(dtype)
        b = np.random.default_rng(i + 1).random((m, m)).astype(dtype)
        return lambda: a @ b

    return make


def bound_limits(n_cores: int, quick: bool) -> Limits:
    """The rates the bounds use, on all cores, measured briefly: taken right next to a kernel's
    measurement, so that kernel and bound see the same phase of this drifting machine."""
    budget = 0.02 if quick else 0.15
    size, m = (1 << 16, 256) if quick else (1 << 20, 1024)
    with threadpool_limits(1):
        return Limits(
            normal=parallel_rate(normals_attnsim(size), size, n_cores, budget),
            exp64=parallel_rate(ufunc(np.exp, np.float64, size), size, n_cores, budget),
            expm1_32=parallel_rate(ufunc(np.expm1, np.float32, size), size, n_cores, budget),
            sgemm=parallel_rate(gemm(np.float32, m), 2 * m**3, n_cores, budget),
            dgemm=parallel_rate(gemm(np.float64, m), 2 * m**3, n_cores, budget),
        )


def measure_limits(n_cores: int, quick: bool) -> tuple[Limits, list[Row]]:
    budget = 0.05 if quick else 0.6
    size = 1 << (16 if quick else 20)
    rows: list[Row] = []

    with threadpool_limits(1):
        rate = {}
        for label, make, per_call, unit in (
            ("normals, numpy ziggurat float64", normals_numpy(np.float64, size), size, "M/s"),
            ("normals, numpy ziggurat float32", normals_numpy(np.float32, size), size, "M/s"),
            ("normals, attnsim Box-Muller float32", normals_attnsim(size), size, "M/s"),
            ("exp float64", ufunc(np.exp, np.float64, size), size, "G/s"),
            ("exp float32", ufunc(np.exp, np.float32, size), size, "G/s"),
            ("expm1 float32", ufunc(np.expm1, np.float32, size), size, "G/s"),
        ):
            scale = 1e6 if unit == "M/s" else 1e9
            one = parallel_rate(make, per_call, 1, budget)
            rate[label] = parallel_rate(make, per_call, n_cores, budget)
            rows.append(
                Row(f"machine: {label}, 1 core", one / scale, unit, note="best of repeated calls")
            )
            rows.append(
                Row(
                    f"machine: {label}, {n_cores} cores",
                    rate[label] / scale,
                    unit,
                    note="one thread per core, each its own array / generator",
                )
            )
        m = 512 if quick else 2048
        for label, dtype in (("fp32 GEMM", np.float32), ("fp64 GEMM", np.float64)):
            flops = 2 * m**3
            one = parallel_rate(gemm(dtype, m), flops, 1, budget)
            rate[label] = max(one, parallel_rate(gemm(dtype, m), flops, n_cores, budget))
            rows.append(
                Row(
                    f"machine: {label}, 1 core",
                    one / 1e9,
                    "GFLOP/s",
                    note=f"{m} x {m} square, BLAS on 1 thread",
                )
            )
            rows.append(
                Row(
                    f"machine: {label}, {n_cores} cores",
                    rate[label] / 1e9,
                    "GFLOP/s",
                    note="one product per core, BLAS on 1 thread each",
                )
            )
    normal = max(rate[k] for k in rate if k.startswith("normals"))
    rows.append(
        Row(
            f"machine: normal sampling (fastest), {n_cores} cores",
            normal / 1e6,
            "M/s",
            note="the sampling rate used in the kernels' bounds",
        )
    )
    limits = Limits(
        normal=normal,
        exp64=rate["exp float64"],
        expm1_32=rate["expm1 float32"],
        sgemm=rate["fp32 GEMM"],
        dgemm=rate["fp64 GEMM"],
    )
    return limits, rows
