"""The machine: its description and its own limits (sampling, exp and GEMM rates), measured in the
run."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from attnsim.kernels import rounding
from attnsim.kernels.sampling import standard_normal, uniform
from attnsim.kinds.base import Counts
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
    from attnsim.records import cpu

    flags = [f for f in ("AVX512F", "AVX2", "FMA3") if cpu.numpy_features().get(f)]
    return {
        "cpu": cpu_model(),
        # the CPU class every timing depends on: numpy's SIMD dispatch and OpenBLAS's core
        "cpu_class": f"{cpu.cpu_class()} (flags "
        f"{', '.join(flags) or 'none of AVX512F, AVX2, FMA3'}; numpy dispatch "
        f"{cpu.numpy_dispatch()})",
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


def uniforms(size: int):
    def make(i):
        rng = np.random.Generator(np.random.SFC64(i))
        return lambda: uniform(rng, size, 0.0, 1.0)

    return make


def casts(size: int):
    """The kernels' rounding to float8 e4m3 (`kernels.rounding.round_to`, bit arithmetic)."""
    fmt = rounding.FORMATS["float8_e4m3fn"]

    def make(i):
        x = np.random.default_rng(i).standard_normal(size).astype(np.float32)
        return lambda: rounding.round_to(x, fmt)

    return make


def passes(size: int):
    """One elementwise float64 pass: two arrays read, one written (24 bytes per element)."""

    def make(i):
        a, b = np.random.default_rng(i).random((2, size))
        out = np.empty(size)
        return lambda: np.multiply(a, b, out=out)

    return make


def calls(count: int):
    """`count` numpy calls on 8-element arrays: the cost of a call whatever its size."""

    def make(i):
        a, b, out = np.ones(8), np.ones(8), np.empty(8)

        def work():
            for _ in range(count):
                np.add(a, b, out=out)

        return work

    return make


def unit_work(quick: bool) -> dict[str, tuple]:
    """Per unit of `attnsim.kinds.base.Counts`: (work maker, units per call)."""
    size, m = (1 << 16, 256) if quick else (1 << 20, 1024)
    piece = 1 << 17  # a float64 pass over 1 MiB arrays: in L2, as the kernels' pieces are
    return {
        "normals": (normals_attnsim(size), size),
        "normals64": (normals_numpy(np.float64, size), size),
        "words": (uniforms(size), size),
        "exps": (ufunc(np.exp, np.float64, size), size),
        "exps32": (ufunc(np.exp, np.float32, size), size),
        "expm1s": (ufunc(np.expm1, np.float32, size), size),
        "flops": (gemm(np.float32, m), 2 * m**3),
        "flops64": (gemm(np.float64, m), 2 * m**3),
        "casts": (casts(size), size),
        "bytes": (passes(piece), 24 * piece),
        "calls": (calls(1000), 1000),
    }


# The units of the machine bound: the work a kernel cannot avoid once its algorithm is fixed
# (memory passes and calls are what it spends besides: the cost model counts them, the bound not).
BOUND_UNITS = (
    "normals",
    "normals64",
    "words",
    "exps",
    "exps32",
    "expm1s",
    "flops",
    "flops64",
    "casts",
)


def best_cpu_seconds(fn, budget: float, reps: int = 5, warm_up: bool = True) -> float:
    """Smallest CPU time of this thread over at least `reps` calls of `fn` (and ~`budget` seconds
    of them), after one untimed call unless `warm_up` is off: robust to a loaded machine where
    wall time is not (a preempted call's wall time counts its wait, its CPU time does not)."""
    if warm_up:
        fn()
    best, spent, done = float("inf"), 0.0, 0
    while done < reps or spent < budget:
        started = time.thread_time()
        fn()
        elapsed = time.thread_time() - started
        best, spent, done = min(best, elapsed), spent + elapsed, done + 1
    return best


def unit_seconds(threads: int, quick: bool, budget: float | None = None) -> Counts:
    """Seconds per unit of `Counts`, BLAS on one thread, best of repeated calls: on one core in CPU
    time (the cost model's table and the kernels' one-core share of the bound: what a loaded
    machine moves least), on `threads` > 1 cores in wall time with one thread per core, each its
    own arrays (the bound of a kernel on all cores). Measured briefly, right next to a kernel's
    measurement, so that kernel and bound see the same phase of this drifting machine. `quick`
    (values not compared): small sizes; on one core, one call each."""
    budget = (0.0 if quick else 0.15) if budget is None else budget
    rates = {}
    with threadpool_limits(1):
        for unit, (make, per_call) in unit_work(quick).items():
            if threads == 1:
                once = dict(reps=1, warm_up=False) if quick else {}
                rates[unit] = per_call / best_cpu_seconds(make(0), budget, **once)
            else:
                rates[unit] = parallel_rate(make, per_call, threads, budget)
    return Counts(**{unit: 1.0 / rate for unit, rate in rates.items()})


def bound_seconds(work: Counts, seconds: Counts) -> float:
    """The seconds of a kernel's unavoidable work (`BOUND_UNITS` of its counts) at these rates."""
    return sum(getattr(work, unit) * getattr(seconds, unit) for unit in BOUND_UNITS)


RATES = (  # label, work maker, unit: the machine's rates, per CPU class
    ("normals, numpy ziggurat float64", lambda size: normals_numpy(np.float64, size), "M/s"),
    ("normals, numpy ziggurat float32", lambda size: normals_numpy(np.float32, size), "M/s"),
    ("normals, attnsim Box-Muller float32", normals_attnsim, "M/s"),
    ("exp float64", lambda size: ufunc(np.exp, np.float64, size), "G/s"),
    ("exp float32", lambda size: ufunc(np.exp, np.float32, size), "G/s"),
    ("expm1 float32", lambda size: ufunc(np.expm1, np.float32, size), "G/s"),
)


def measure_limits(n_cores: int, quick: bool) -> list[Row]:
    from attnsim.records import cpu

    budget = 0.05 if quick else 0.6
    size = 1 << (16 if quick else 20)
    rows: list[Row] = []
    here = f"CPU class {cpu.cpu_class()}"

    with threadpool_limits(1):
        rate = {}
        for label, maker, unit in RATES:
            make, per_call = maker(size), size
            scale = 1e6 if unit == "M/s" else 1e9
            one = parallel_rate(make, per_call, 1, budget)
            rate[label] = parallel_rate(make, per_call, n_cores, budget)
            rows.append(
                Row(
                    f"machine: {label}, 1 core",
                    one / scale,
                    unit,
                    note=f"best of repeated calls; {here}",
                )
            )
            rows.append(
                Row(
                    f"machine: {label}, {n_cores} cores",
                    rate[label] / scale,
                    unit,
                    note=f"one thread per core, each its own array / generator; {here}",
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
                    note=f"{m} x {m} square, BLAS on 1 thread; {here}",
                )
            )
            rows.append(
                Row(
                    f"machine: {label}, {n_cores} cores",
                    rate[label] / 1e9,
                    "GFLOP/s",
                    note=f"one product per core, BLAS on 1 thread each; {here}",
                )
            )
    return rows


def one_core_rates(quick: bool) -> list[tuple[str, float, str]]:
    """(label, rate, unit) on one core: the machine's rates of RATES and the two GEMMs."""
    budget = 0.05 if quick else 0.6
    size, m = 1 << (16 if quick else 20), 512 if quick else 2048
    out = []
    with threadpool_limits(1):
        for label, maker, unit in RATES:
            scale = 1e6 if unit == "M/s" else 1e9
            out.append((label, parallel_rate(maker(size), size, 1, budget) / scale, unit))
        for label, dtype in (("fp32 GEMM", np.float32), ("fp64 GEMM", np.float64)):
            rate = parallel_rate(gemm(dtype, m), 2 * m**3, 1, budget)
            out.append((label, rate / 1e9, "GFLOP/s"))
    return out


# The machine kind's two CPU classes (docs/usage.md, Reproducibility): AVX-512 (numpy X86_V4,
# OpenBLAS SkylakeX) and AVX2 only (X86_V3, Haswell). On the AVX-512 class the other one is
# emulated in a subprocess: numpy's SIMD loops one level down and OpenBLAS's Haswell kernels (the
# emulation reproduced a real AVX2 machine's reference rows bit for bit, tests/data/reference_rows).
# Quick mode (tests, CI) leaves OpenBLAS's core alone (its core-type variables are set by the
# machine on some processors and never changed in tests): it emulates numpy's side only.
OTHER_CORE = {"X86_V3": "Haswell"}


def emulated_classes(quick: bool = False) -> list[tuple[str, dict[str, str]]]:
    """(class, environment) of the CPU classes below this machine's own that it can emulate."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    from attnsim.records import cpu

    if cpu.numpy_dispatch() != "X86_V4":
        return []  # an AVX2 machine cannot emulate the AVX-512 class
    order = list(__cpu_dispatch__)
    env = {"NPY_DISABLE_CPU_FEATURES": " ".join(order[order.index("X86_V4") :])}
    if quick:
        return [(f"X86_V3-{cpu.blas()['architecture']}", env)]
    return [(f"X86_V3-{OTHER_CORE['X86_V3']}", {**env, "OPENBLAS_CORETYPE": OTHER_CORE["X86_V3"]})]


def class_rows(quick: bool) -> list[Row]:
    """The machine's one-core rates on each CPU class it can emulate (a subprocess per class)."""
    rows = []
    for klass, env in emulated_classes(quick):
        args = [sys.executable, "-m", "benchmarks.machine"] + (["--quick"] if quick else [])
        run = subprocess.run(
            args,
            cwd=Path(__file__).resolve().parents[1],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        data = json.loads(run.stdout)
        if data["class"] != klass:
            raise RuntimeError(f"emulating {klass} gave class {data['class']}")
        for label, value, unit in data["rates"]:
            rows.append(
                Row(
                    f"machine, {klass} emulated: {label}, 1 core",
                    value,
                    unit,
                    note=f"subprocess with {' '.join(f'{k}={v!r}' for k, v in env.items())}",
                )
            )
    return rows


if __name__ == "__main__":  # the rates of this process's CPU class, as JSON (for class_rows)
    from attnsim.records import cpu

    rates = one_core_rates("--quick" in sys.argv)
    print(json.dumps({"class": cpu.cpu_class(), "rates": rates}))
