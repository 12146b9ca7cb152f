"""The benchmark suite runs end to end in quick mode and writes every row (the speed targets are
checked by the full suite, `python -m benchmarks`, not here)."""

from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest
from helpers.benchmarks import run_benchmarks

from benchmarks import locate_coverage, machine

pytestmark = pytest.mark.slow

KINDS = ("noisy_attention", "logit_entropy", "temperature_entropy", "init_gradient")


def expected_rows(cores: int) -> set[str]:
    rows = set()
    for label in (
        "normals, numpy ziggurat float64",
        "normals, numpy ziggurat float32",
        "normals, attnsim Box-Muller float32",
        "exp float64",
        "exp float32",
        "expm1 float32",
        "fp32 GEMM",
        "fp64 GEMM",
    ):
        rows |= {f"machine: {label}, 1 core", f"machine: {label}, {cores} cores"}
    for klass, _ in machine.emulated_classes(quick=True):  # numpy's side of the other CPU class
        for label, _, _ in machine.RATES:
            rows.add(f"machine, {klass} emulated: {label}, 1 core")
        rows |= {f"machine, {klass} emulated: {g}, 1 core" for g in ("fp32 GEMM", "fp64 GEMM")}
    for kind in KINDS:
        for n in (64, 1024, 16384, 65536):
            rows |= {
                f"{kind} n={n}: {what}"
                for what in (
                    "kernel",
                    "naive loop",
                    "speedup over naive",
                    "share of machine bound",
                )
            }
        for threads in (1, 4):
            rows.add(f"peak memory per job: {kind} n=65536 d=256, {threads} thread(s)")
    rows |= {
        f"{kind} n=16384, 1 point per stream: share of machine bound"
        for kind in ("logit_entropy", "temperature_entropy")
    }
    rows |= {
        "float32 instead of float64: logit_entropy, temperature_entropy, init_gradient: one "
        "scale's softmax statistics (n=1024)",
        "float32 instead of float64: attention_dropout (K=8, n=256, d=16) and "
        "normaliser_attention (K=16, n=512, d=16): noisy outputs",
    }
    end_to_end = "end to end (quick: n=1024, 40 trials)"
    rows |= {
        f"{end_to_end}: {what}"
        for what in (
            "naive loop, one BLAS thread",
            "naive loop, numpy's default BLAS threads",
            f"attnsim run --cores {cores}",
            "speedup over the faster naive loop, wall time",
            "speedup over the naive loop, CPU time",
        )
    }
    rows |= {
        f"allocator tuning (mallopt): {kind} n=16384 speedup"
        for kind in ("logit_entropy", "temperature_entropy", "noisy_attention")
    }
    rows |= {
        f"default sweep: {what}"
        for what in (
            "wall time",
            "kernel time (sum over jobs)",
            "simulate jobs' time (sum)",
            "until the last chunk was written",
            "after the last chunk",
            "non-kernel share of wall time",
            "non-kernel share of the simulate jobs",
            "CPU time (all processes)",
            "fixed overhead",
            "fixed overhead, CPU time",
            "fixed overhead, kernel time (sum over jobs)",
            # the quick sweep's experiments
            *(f"simulate CPU, {experiment}" for experiment in ("robustness", "entropy_scale")),
            *(
                f"fixed overhead, {rule} jobs (sum)"
                for rule in ("simulate", "collect", "judge", "figures", "claims")
            ),
        )
    }
    rows |= {
        f"locate: {what}, {problem}"
        for what in ("coverage of x*", "median width / narrowest grid's")
        for problem in locate_coverage.PROBLEMS
    }
    rows |= {
        f"10k grid: {what}"
        for what in (
            "points",
            "dry-run time",
            "simulate jobs",
            "points per simulate job",
            "real run wall time, 2 trials per point",
            "real run kernel time (sum over jobs)",
        )
    }
    rows |= {  # benchmarks/overhead.py, without --baseline: this tree's rows only
        f"overhead (this tree): {what}"
        for what in (
            "default run, CPU",
            "default run, kernels' CPU",
            "non-kernel share of the default run's CPU",
            "run with nothing to do, CPU",
            "1-point change, non-kernel CPU / default run's CPU",
            "10^7-point plan (snakemake -n), CPU",
            *(
                f"default run, {rule} jobs' CPU"
                for rule in ("simulate", "collect", "judge", "figures", "claims")
            ),
        )
    }
    rows |= {
        f"training {case}: {what}"
        for case in (
            "recall",
            "recall, default-sweep size",
            "contrastive",
            "contrastive, instance positives, learnt tau",
        )
        for what in ("kernel", "naive loop", "speedup over naive")
    }
    rows |= {
        f"plateau map: {what}"
        for what in (
            "kernel, one point (adam, scale 40)",
            "naive loop, same point",
            "speedup over naive",
            "CPU per 10^4-step run (one-hot start, whole budget)",
        )
    }
    return rows


def test_quick_benchmarks_write_every_row(tmp_path):
    cores = 2
    stdout = run_benchmarks(tmp_path, "--quick", cores=cores)
    table = pq.read_table(tmp_path / "latest.parquet")
    assert table.schema.names == ["what", "value", "unit", "target", "met", "note"]
    rows = table.to_pylist()
    names = [r["what"] for r in rows]
    assert len(names) == len(set(names))
    assert set(names) == expected_rows(cores)
    assert all(math.isfinite(r["value"]) and r["value"] >= 0 for r in rows), [
        r for r in rows if not math.isfinite(r["value"])
    ]
    targets = {r["what"] for r in rows if r["target"]}
    assert (
        "noisy_attention n=16384: speedup over naive" in targets
        and "10k grid: dry-run time" in targets
    )
    assert all((r["met"] is None) == (r["target"] is None) for r in rows)
    markdown = (tmp_path / "latest.md").read_text()
    assert (
        markdown.startswith("# attnsim benchmarks")
        and "machine:" in markdown
        and markdown.count("\n| ") == len(rows) + 1
    )
    assert "noisy_attention n=16384: speedup over naive" in stdout  # the table is printed
