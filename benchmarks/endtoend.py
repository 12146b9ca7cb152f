"""End to end on the noisy-attention benchmark point (issue 50): `attnsim run --cores 2` of one
experiment (n = 16,384, d = 64, K = 32 noise draws, 8 noise scales, 3,000 trials: plan, simulate,
collect, figures, claims) against the naive per-trial loop (benchmarks/naive.py) on the same work.

The naive loop is timed both with one BLAS thread and with numpy's default threads, and the faster
counts (docs: PITFALLS, a naive loop with default threads thrashes on a busy machine); it runs a
share of the trials before and after the pipeline (interleaved, so both see the same phases of
the machine) and is extrapolated. Wall time is the target's measure; CPU time, which the load
moves less, is reported beside it with the load average.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from threadpoolctl import threadpool_limits

from benchmarks import naive
from benchmarks.table import Row

POINT = {
    "n": [16384],
    "d": [64],
    "logit_scale": [1.0],
    "noise": ["gaussian"],
    "noise_draws": [32],
    "noise_scale": [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0],
}
TRIALS = 3000
KERNEL_LINE = re.compile(r"kernels ran in ([0-9.]+) s")


def config(quick: bool) -> dict:
    grid = dict(POINT, n=[1024]) if quick else dict(POINT)
    return {
        "seed": 7,
        "experiments": {
            "one": {"kind": "noisy_attention", "trials": 40 if quick else TRIALS, "grid": grid}
        },
    }


def naive_seconds(cfg: dict, fraction: float, threads: int | None) -> tuple[float, float]:
    """(wall, CPU) seconds of the naive loop over the whole sweep, extrapolated from `fraction` of
    its trials, with BLAS on `threads` threads (None: numpy's default)."""
    e = cfg["experiments"]["one"]
    g = e["grid"]
    rng = np.random.default_rng(0)
    trials = max(1, round(e["trials"] * fraction))
    with threadpool_limits(threads):
        wall, cpu = time.perf_counter(), time.process_time()
        for scale in g["noise_scale"]:
            for _ in range(trials):
                naive.noisy_attention(
                    rng, g["n"][0], g["d"][0], g["noise_draws"][0], g["logit_scale"][0], scale
                )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall * e["trials"] / trials, cpu * e["trials"] / trials


def pipeline(cfg: dict, cores: int, *extra: str) -> tuple[float, float, float]:
    """(wall, CPU of every process, kernel seconds from the simulate logs) of `attnsim run` of
    `cfg` in a fresh directory; `extra`: more options of `attnsim run` (quick mode's --until)."""
    with tempfile.TemporaryDirectory(prefix="attnsim-e2e-") as tmp:
        workdir = Path(tmp)
        (workdir / "one.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        cmd = [sys.executable, "-m", "attnsim.cli.main", "run", "--configfile", "one.yaml"]
        started = time.perf_counter()
        with open(workdir / "run.log", "w") as out:
            process = subprocess.Popen(
                [*cmd, "--cores", str(cores), *extra],
                cwd=workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"attnsim run failed:\n{(workdir / 'run.log').read_text()[-3000:]}")
        kernels = sum(
            float(m.group(1)) * int(re.search(r"on (\d+) thread", text).group(1))
            for log in (workdir / "results").rglob("simulate/**/*.log")
            for text in [log.read_text()]
            if (m := KERNEL_LINE.search(text))
        )
    return wall, usage.ru_utime + usage.ru_stime, kernels


def rows(cores: int, quick: bool) -> list[Row]:
    cfg = config(quick)
    fraction = 0.025 if quick else 0.01  # quick: 1 of the 40 trials (values not compared)
    load = os.getloadavg()
    naive_runs = {1: [], None: []}
    for threads in (1, None):
        naive_runs[threads].append(naive_seconds(cfg, fraction, threads))
    # quick mode: up to the chunk (the jobs after it run in the default sweep's rows)
    wall, cpu, kernels = pipeline(cfg, cores, *(["--until", "simulate"] if quick else []))
    for threads in (None, 1):
        naive_runs[threads].append(naive_seconds(cfg, fraction, threads))
    load_after = os.getloadavg()
    mean = {t: tuple(np.mean(runs, axis=0)) for t, runs in naive_runs.items()}
    faster = min(mean, key=lambda t: mean[t][0])
    what = "end to end" + (" (quick: n=1024, 40 trials)" if quick else "")
    loads = f"load average {load[0]:.1f} before, {load_after[0]:.1f} after (1 min), {cores} CPUs"
    out = []
    for threads, label in ((1, "one BLAS thread"), (None, "numpy's default BLAS threads")):
        w, c = mean[threads]
        out.append(
            Row(
                f"{what}: naive loop, {label}",
                w,
                "s",
                note=f"extrapolated from {fraction:.0%} of the trials before and after the "
                f"pipeline; CPU {c:.0f} s" + ("; the faster: the baseline" * (threads == faster)),
            )
        )
    out += [
        Row(
            f"{what}: attnsim run --cores {cores}",
            wall,
            "s",
            note=("plan, simulate" if quick else "plan, simulate, collect, figures, claims")
            + f"; CPU {cpu:.0f} s (all processes), "
            f"simulate {kernels:.0f} s x threads (its log's kernel wall time); {loads}",
        ),
        Row(
            f"{what}: speedup over the faster naive loop, wall time",
            mean[faster][0] / wall,
            "x",
            None if quick else ">= 15",
            note="naive loop wall / pipeline wall, measured side by side (interleaved)",
        ),
        Row(
            f"{what}: speedup over the naive loop, CPU time",
            min(c for _, c in mean.values()) / cpu,
            "x",
            note="naive loop CPU / the pipeline's CPU (every process): the load moves it less",
        ),
    ]
    return out
