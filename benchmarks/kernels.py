"""Each kind's kernel against its naive per-trial loop and against the machine's bound; memory per
job; the effect of the allocator tuning."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from attnsim.jobs.simulate import simulate_points
from attnsim.kinds import get_kind
from attnsim.kinds.base import Counts
from attnsim.records.experiment import TrialSettings
from benchmarks import naive
from benchmarks.machine import (
    BOUND_UNITS,
    best_cpu_seconds,
    best_seconds,
    bound_seconds,
    unit_seconds,
)
from benchmarks.table import Row
from tests.helpers.points import make_point, spec_of_points

KINDS = ("noisy_attention", "logit_entropy", "temperature_entropy", "init_gradient")
SIZES = (64, 1024, 16384, 65536)
D, K = 64, 32
SCALES = {  # eight points per stream, sharing its draws
    "noisy_attention": ("noise_scale", (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0)),
    "logit_entropy": ("scale", (0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)),
    "temperature_entropy": ("tau", (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)),
    "init_gradient": ("scale", (0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)),
}
UNIT = {
    "noisy_attention": "attn evals/s",
    "init_gradient": "attn evals/s",
    "logit_entropy": "softmaxes/s",
    "temperature_entropy": "softmaxes/s",
}
ENTROPY_KINDS = ("logit_entropy", "temperature_entropy")
SPEEDUP_TARGET = {("noisy_attention", 16384): ">= 20"}
BOUND_TARGET = {(kind, n): ">= 60" for kind in ENTROPY_KINDS for n in (16384, 65536)}


def base_params(kind: str, n: int, d: int = D) -> dict:
    return {
        "noisy_attention": dict(n=n, d=d, logit_scale=1.0, noise="gaussian", noise_draws=K),
        "logit_entropy": dict(n=n, d=d, logits="gaussian"),
        "temperature_entropy": dict(n=n, d=d),
        "init_gradient": dict(n=n, d=d),
    }[kind]


def points(kind: str, n: int, d: int = D, count: int = 8):
    name, values = SCALES[kind]
    return [make_point(kind, base_params(kind, n, d) | {name: v}) for v in values[:count]]


def evaluations(kind: str) -> int:
    """Attention evaluations (or softmaxes) per trial and point."""
    return K if kind == "noisy_attention" else 1


def kernel_rate(
    kind: str,
    n: int,
    threads: int,
    budget: float,
    scales: int = 8,
    cpu: bool = False,
    quick: bool = False,
) -> tuple[float, int]:
    """Evaluations per second of `simulate_points` on `threads` threads (best of repeated runs of
    at least two blocks per thread, each ~budget/8), and the trials per run; `cpu`: per second of
    the process's CPU time (one thread: the kernel's own speed, which a loaded machine moves
    least), else of wall time. `quick` (values not compared): one block per thread, and the sizing
    run is the one timing."""
    pts = points(kind, n, count=scales)
    per_block = get_kind(kind).block_trials(pts[0].params)
    trials = max(2, (1 if quick else 2) * threads * per_block)
    started = time.process_time() if cpu else time.perf_counter()
    simulate_points(get_kind(kind), TrialSettings(1, trials), pts, threads=threads)
    once = (time.process_time() if cpu else time.perf_counter()) - started
    if quick:
        return trials * len(pts) * evaluations(kind) / once, trials
    trials *= max(1, min(64, int(budget / 8 / max(once, 1e-9))))
    seed = iter(range(2, 10**6))

    def run():
        simulate_points(get_kind(kind), TrialSettings(next(seed), trials), pts, threads=threads)

    seconds = best_process_seconds(run, budget) if cpu else best_seconds(run, budget, min_reps=3)
    return trials * len(pts) * evaluations(kind) / seconds, trials


def best_process_seconds(fn, budget: float, reps: int = 3) -> float:
    """Smallest CPU time of the process (every thread) over at least `reps` calls of `fn`."""
    best, spent, done = float("inf"), 0.0, 0
    while done < reps or spent < budget:
        started = time.process_time()
        fn()
        elapsed = time.process_time() - started
        best, spent, done = min(best, elapsed), spent + elapsed, done + 1
    return best


def naive_rate(
    kind: str, n: int, budget: float, blas_threads: int | None = 1, quick: bool = False
) -> float:
    """Evaluations per second (wall) of the naive loop, best of repeated batches of ~budget/5, with
    BLAS on `blas_threads` threads (None: numpy's default; on a busy machine they thrash);
    `quick` (values not compared): the sizing call is the one timing."""
    rng = np.random.default_rng(0)
    name, values = SCALES[kind]
    value = values[4]
    call = {
        "noisy_attention": lambda: naive.noisy_attention(rng, n, D, K, 1.0, value),
        "logit_entropy": lambda: naive.logit_entropy(rng, n, value),
        "temperature_entropy": lambda: naive.temperature_entropy(rng, n, D, value),
        "init_gradient": lambda: naive.init_gradient(rng, n, D, value),
    }[kind]
    with threadpool_limits(blas_threads):
        started = time.perf_counter()
        per_call = call()
        once = time.perf_counter() - started
        if quick:
            return per_call / once
        calls = max(1, int(budget / 5 / max(once, 1e-9)))

        def batch():
            for _ in range(calls):
                call()

        return calls * per_call / best_seconds(batch, budget, min_reps=3)


def bound_rate(kind: str, n: int, seconds: Counts, scales: int = 8) -> tuple[float, str]:
    """The machine's bound for one stream of `scales` points: the unavoidable work its kind
    declares (`Compute.counts`: the stream's draws once, each point's own work; `BOUND_UNITS`)
    at the machine's rates measured on all cores, as evaluations per second; and what dominates."""
    kind_ = get_kind(kind)
    works = [kind_.compute.work(p.params) for p in points(kind, n, count=scales)]
    total = works[0].shared + sum((w.own for w in works), Counts())
    terms = {unit: getattr(total, unit) * getattr(seconds, unit) for unit in BOUND_UNITS}
    ranked = sorted(terms.items(), key=lambda x: -x[1])
    shown = [u for u, t in ranked if t > 0.05 * sum(terms.values())]
    return scales * evaluations(kind) / bound_seconds(total, seconds), " + ".join(shown)


def measure_kernels(
    threads: int, quick: bool, rounds: int | None = None, budget: float | None = None
) -> list[dict]:
    """Kernel and naive rates for every kind and size (8 points per stream), then the entropy
    kernels with one point per stream. The machine drifts by tens of percent within minutes, so
    each round measures the kernel, the naive loop and the rates of the kernel's bound back to
    back; the best of each rate is kept. The share of the bound is on one core in CPU time (the
    kernel on one thread against the machine's one-core rates of `Compute.counts`' units: what a
    loaded machine moves least), the best of the rounds' shares (kernel and bound of the same
    round). The naive loop runs with one BLAS thread and with numpy's default: the faster
    counts. Quick mode (values not compared): one round, each rate timed once."""
    budget = budget or (0.05 if quick else 3.0)
    rounds = rounds or (1 if quick else 3)
    cases = [(kind, n, 8) for kind in KINDS for n in SIZES] + [
        (kind, 16384, 1) for kind in ENTROPY_KINDS
    ]
    results = []
    for kind, n, scales in cases:
        fast, share = 0.0, 0.0
        slow: dict[int | None, float] = {1: 0.0, None: 0.0}
        for _ in range(rounds):
            bound, what = bound_rate(kind, n, unit_seconds(1, quick), scales=scales)
            part = budget / rounds / 2
            one, _ = kernel_rate(kind, n, 1, part, scales=scales, cpu=True, quick=quick)
            share = max(share, one / bound)
            if scales > 1:
                rate, trials = kernel_rate(kind, n, threads, part, scales=scales, quick=quick)
                fast = max(fast, rate)
                for blas in slow:
                    naive = naive_rate(kind, n, budget / 6 / rounds, blas, quick)
                    slow[blas] = max(slow[blas], naive)
        results.append(
            dict(
                kind=kind,
                n=n,
                scales=scales,
                fast=fast,
                slow=max(slow.values()),
                slow_one=slow[1],
                slow_default=slow[None],
                trials=trials,
                fraction=share,
                bound=what,
            )
        )
    return results


def kernel_rows(results: list[dict], threads: int) -> list[Row]:
    rows = []
    for r in results:
        kind, n = r["kind"], r["n"]
        bound_note = (
            f"bound: {r['bound']} (the kind's counted unavoidable work, `Compute.counts`) at the "
            "machine's one-core rates; kernel on one thread; CPU time, best round"
        )
        if r["scales"] == 1:
            rows.append(
                Row(
                    f"{kind} n={n}, 1 point per stream: share of machine bound",
                    100 * r["fraction"],
                    "%",
                    note=bound_note,
                )
            )
            continue
        label = f"{kind} n={n}"
        setting = f"simulate_points, {threads} threads, 8 points sharing draws, d={D}" + (
            f", K={K}" if kind == "noisy_attention" else ""
        )
        rows.append(
            Row(
                f"{label}: kernel",
                r["fast"],
                UNIT[kind],
                note=f"{setting}, {r['trials']} trials per run",
            )
        )
        rows.append(
            Row(
                f"{label}: naive loop",
                r["slow"],
                UNIT[kind],
                note="per trial and point, numpy float64 samplers, 1 thread; the faster of BLAS "
                f"on one thread ({r['slow_one']:,.4g}/s) and numpy's default "
                f"({r['slow_default']:,.4g}/s)",
            )
        )
        rows.append(
            Row(
                f"{label}: speedup over naive",
                r["fast"] / r["slow"],
                "x",
                SPEEDUP_TARGET.get((kind, n)),
                note=f"same run, interleaved; kernel on {threads} cores, naive on 1",
            )
        )
        rows.append(
            Row(
                f"{label}: share of machine bound",
                100 * r["fraction"],
                "%",
                BOUND_TARGET.get((kind, n)),
                note=bound_note,
            )
        )
    return rows


ALLOCATOR_PROBE = textwrap.dedent(
    """
    import sys, time, json
    if sys.argv[1] == "tuned":
        from attnsim.jobs.tuning import tune_allocator
        assert tune_allocator()
    from threadpoolctl import threadpool_limits
    from attnsim.jobs.simulate import simulate_points
    from attnsim.records.grid import points_from_rows
    from attnsim.kinds import get_kind
    from attnsim.records.experiment import TrialSettings
    for name_of_kind, params, name, values, trials, reps in json.loads(sys.argv[2]):
        kind = get_kind(name_of_kind)
        declared = kind.schema.params
        rows = [[(params | {name: v}).get(p.name, p.default) for p in declared] for v in values]
        pts = points_from_rows(kind, rows)
        simulate_points(kind, TrialSettings(1, trials), pts, threads=1)
        best = float("inf")
        for seed in range(2, 2 + reps):
            started = time.perf_counter()
            simulate_points(kind, TrialSettings(seed, trials), pts, threads=1)
            best = min(best, time.perf_counter() - started)
        print(best)
    """
)


def allocator_rows(quick: bool) -> list[Row]:
    """Speed of one-thread kernels in fresh processes, with and without the mallopt tuning: per
    kind and mode a process, the best of 4 timed runs of 4 blocks. Quick mode (values not
    compared): one timed run of one block, the kinds one after the other in one process per mode
    (the processes' start is most of its cost)."""
    cases = []
    for kind, n in (
        ("logit_entropy", 16384),
        ("temperature_entropy", 16384),
        ("noisy_attention", 16384),
    ):
        name, values = SCALES[kind]
        trials = get_kind(kind).block_trials(points(kind, n)[0].params) * (1 if quick else 4)
        cases.append([kind, base_params(kind, n), name, list(values), trials, 1 if quick else 4])
    seconds: dict[tuple[str, str], float] = {}
    for group in [cases] if quick else [[case] for case in cases]:
        for mode in ("plain", "tuned"):
            out = subprocess.run(
                [sys.executable, "-c", ALLOCATOR_PROBE, mode, json.dumps(group)],
                capture_output=True,
                text=True,
                check=True,
            )
            for case, best in zip(group, out.stdout.split(), strict=True):
                seconds[case[0], mode] = float(best)
    return [
        Row(
            f"allocator tuning (mallopt): {kind} n={params['n']} speedup",
            seconds[kind, "plain"] / seconds[kind, "tuned"],
            "x",
            note="fresh processes, 1 thread, with vs without attnsim.jobs.tuning"
            + ("; quick mode: the kinds in one process per mode" if quick else ""),
        )
        for kind, params, *_ in cases
    ]


PEAK_RSS = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
    "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def peak_rss_mb(kind: str, n: int, d: int, threads: int, trials: int, scales: int) -> float:
    """Peak resident memory (MiB) of one `attnsim simulate` job, as its parent sees it (a small
    Python launcher, so the job's figure is its own, not a copy of this process at fork)."""
    pts = points(kind, n, d, count=scales)
    spec = spec_of_points("bench", get_kind(kind), 1, trials, pts).to_json()
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "chunk.parquet"
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(spec)
        job = [
            sys.executable,
            "-m",
            "attnsim.cli.main",
            "simulate",
            "--spec-file",
            str(spec_file),
            "--output",
            str(output),
            "--threads",
            str(threads),
        ]
        result = subprocess.run(
            [sys.executable, "-c", PEAK_RSS, *job], capture_output=True, text=True, check=True
        )
    kib = int(result.stdout.strip())  # KiB on Linux, bytes on macOS
    return kib / 1024 if sys.platform != "darwin" else kib / 2**20


def memory_rows(quick: bool) -> list[Row]:
    rows = []
    n, d = 65536, 256
    for threads in (1, 4):
        for kind in KINDS:
            trials = threads * (1 if quick else 2)
            mb = peak_rss_mb(kind, n, d, threads, trials, scales=2 if quick else 8)
            rows.append(
                Row(
                    f"peak memory per job: {kind} n={n} d={d}, {threads} thread(s)",
                    mb,
                    "MiB",
                    "<= 1024",
                    note=f"max RSS of `attnsim simulate`, {trials} trials x {2 if quick else 8} "
                    "points" + (", K=32" if kind == "noisy_attention" else ""),
                )
            )
    return rows


def _per_scale_step(dtype, n: int, trials: int):
    """One scale of the entropy kinds' `GapSoftmax.stats` (multiply, exp, three reductions), in
    `dtype`: what a float32 version of their per-scale work would cost."""
    gap = np.abs(np.random.default_rng(0).standard_normal((trials, n))).astype(dtype)
    e, ones, c = np.empty_like(gap), np.ones(n, dtype), dtype(0.7)

    def step():
        np.multiply(gap, -c, out=e)
        np.exp(e, out=e)
        total = e @ ones
        return np.log(total) + c * np.vecdot(e, gap) / total, np.vecdot(e, e) / total**2

    return step


def _products(dtype, k: int, n: int, d: int, trials: int):
    """The noisy outputs of `normaliser_attention` and `attention_dropout`: (K x n) by (n x d) per
    trial and point, in `dtype`."""
    rng = np.random.default_rng(0)
    w, v = rng.random((trials, k, n)).astype(dtype), rng.random((trials, n, d)).astype(dtype)
    return lambda: np.matmul(w, v)


def precision_rows(quick: bool) -> list[Row]:
    """What float32 would buy where a kernel computes in float64 (issue 50 item 5): each kind's
    float64 step against the same step in float32, one core, best of repeats. Whether the science's
    tolerance allows it is docs/science.md §8.5's question; no kind's rows change here."""
    budget = 0.05 if quick else 0.5
    n, trials = (1024, 8) if quick else (16384, 64)
    cases = [
        (
            "logit_entropy, temperature_entropy, init_gradient: one scale's softmax statistics "
            f"(n={n})",
            lambda dtype: _per_scale_step(dtype, n, trials),
        ),
        (
            "attention_dropout (K=8, n=256, d=16) and normaliser_attention (K=16, n=512, d=16): "
            "noisy outputs",
            lambda dtype: _products(dtype, 16, 512, 16, 64),
        ),
    ]
    rows = []
    with threadpool_limits(1):
        for what, make in cases:
            seconds = {
                dtype: best_cpu_seconds(make(dtype), budget) for dtype in (np.float64, np.float32)
            }
            rows.append(
                Row(
                    f"float32 instead of float64: {what}",
                    seconds[np.float64] / seconds[np.float32],
                    "x",
                    note="float64 time / float32 time of the same step, 1 core (what a new "
                    "algorithm version would buy; rows unchanged: docs/science.md §8.5)",
                )
            )
    return rows
