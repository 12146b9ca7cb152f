"""The real workflow: the default sweep's wall time and its non-kernel share; the 10,000-point grid."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from attnsim.config import load
from attnsim.grid import expand
from benchmarks.table import Row

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from workflow_helpers import planned_jobs  # noqa: E402 (the tests' parser of Snakemake's dry-run job table)

REPO = Path(__file__).resolve().parents[1]
KERNEL_LINE = re.compile(r"kernels ran in ([0-9.]+) s")
QUICK_SWEEP = {  # every kind, a few points: the same rows, in seconds
    "seed": 7,
    "chunk_size": 50,
    "experiments": {
        "robustness": {
            "kind": "noisy_attention",
            "trials": 20,
            "grid": {"n": [16, 256], "d": [8], "logit_scale": [0.0, 1.0], "noise": ["gaussian", "student_t"], "noise_draws": [4], "noise_scale": [0.1, 1.0]},
        },
        "entropy_scale": {"kind": "logit_entropy", "trials": 20, "grid": {"n": [64], "d": [8], "logits": ["gaussian"], "scale": [0.1, 1.0, 10.0]}},
    },
}


def snakemake(workdir: Path, *args: str, timeout: float = 3600) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    started = time.perf_counter()
    result = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result, seconds


def job_times(workdir: Path) -> tuple[float, float, int]:
    """Seconds inside the kernels (from each simulate job's log), seconds of the simulate jobs
    (Snakemake's benchmark files, process start to exit) and the number of simulate jobs."""
    kernel = sum(float(m.group(1)) for log in (workdir / "results/logs/simulate").rglob("*.log") for m in KERNEL_LINE.finditer(log.read_text()))
    jobs = 0.0
    tsvs = list((workdir / "results/benchmarks/simulate").rglob("*.tsv"))
    for tsv in tsvs:
        header, values = tsv.read_text().splitlines()[:2]
        jobs += float(dict(zip(header.split("\t"), values.split("\t")))["s"])
    return kernel, jobs, len(tsvs)


def points_of(config: dict) -> int:
    return sum(len(expand(e)) for e in load(config).experiments.values())


def sweep_rows(cores: int, quick: bool) -> list[Row]:
    config = copy.deepcopy(QUICK_SWEEP) if quick else yaml.safe_load((REPO / "config.yaml").read_text())
    what = "tiny sweep (quick mode)" if quick else "config.yaml"
    with tempfile.TemporaryDirectory(prefix="attnsim-bench-") as tmp:
        workdir = Path(tmp)
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        started = time.time()
        _, wall = snakemake(workdir, "--cores", str(cores))
        kernel, jobs, count = job_times(workdir)
        chunks = list((workdir / "results/store/trials").rglob("chunk-*.parquet"))
        simulate_phase = max(p.stat().st_mtime for p in chunks) - started
    non_kernel = 100 * (1 - kernel / (cores * wall))
    note = f"{what}: {points_of(config):,} points, `snakemake --cores {cores}` from an empty directory"
    return [
        Row("default sweep: wall time", wall, "s", note=note),
        Row("default sweep: kernel time (sum over jobs)", kernel, "s", note=f"{count} simulate jobs; `kernels ran in` lines of their logs"),
        Row("default sweep: simulate jobs' time (sum)", jobs, "s", note="Snakemake benchmark files: process start, kernels, table, Parquet write"),
        Row("default sweep: until the last chunk was written", simulate_phase, "s", note="Snakemake start-up and planning, then the simulate jobs"),
        Row("default sweep: after the last chunk", wall - simulate_phase, "s", note="summaries, figures, claims and report inputs"),
        Row(
            "default sweep: non-kernel share of wall time",
            non_kernel,
            "%",
            "<= 15",
            note=f"1 - kernel time / ({cores} cores x wall time): process starts, Snakemake, I/O, summaries, figures",
        ),
        Row(
            "default sweep: non-kernel share of the simulate jobs",
            100 * (1 - kernel / jobs),
            "%",
            note="process start, reading the spec, building and writing the Parquet chunk",
        ),
    ]


def grid_rows(cores: int, quick: bool) -> list[Row]:
    large = yaml.safe_load((REPO / "workflow/presets/large.yaml").read_text())
    points = points_of(large)
    rows = []
    with tempfile.TemporaryDirectory(prefix="attnsim-bench-") as tmp:
        workdir = Path(tmp)
        shutil.copy(REPO / "config.yaml", workdir / "config.yaml")
        (workdir / "large.yaml").write_text(yaml.safe_dump(large, sort_keys=False))
        result, dry = snakemake(workdir, "-n", "--configfile", "large.yaml", "--cores", str(cores))
        jobs = planned_jobs(result.stdout).get("simulate", 0)
        rows += [
            Row("10k grid: points", points, "points", note="workflow/presets/large.yaml"),
            Row("10k grid: dry-run time", dry, "s", "<= 15", note="`snakemake -n --configfile large.yaml`, empty store, process start included"),
            Row("10k grid: simulate jobs", jobs, "jobs", note=f"chunk_size {large['chunk_size']}, chunks per experiment"),
            Row("10k grid: points per simulate job", points / max(jobs, 1), "points/job", ">= 50", note="'at most 1 job per 50 points'"),
        ]
        few = copy.deepcopy(large)
        for experiment in few["experiments"].values():
            experiment["trials"] = 2
            if quick:  # a slice of the grid: the smallest size only
                experiment["grid"]["n"] = experiment["grid"]["n"][:1]
        (workdir / "few.yaml").write_text(yaml.safe_dump(few, sort_keys=False))
        _, wall = snakemake(workdir, "--configfile", "few.yaml", "--cores", str(cores), *(["--until", "collect"] if quick else []))
        kernel, job_seconds, count = job_times(workdir)
    note = f"{points_of(few):,} points x 2 trials, {count} simulate jobs, `snakemake --cores {cores}`" + (
        " (quick mode: the smallest n only, up to the summaries)" if quick else ""
    )
    rows += [
        Row("10k grid: real run wall time, 2 trials per point", wall, "s", note=note),
        Row("10k grid: real run kernel time (sum over jobs)", kernel, "s", note=f"simulate jobs' own time: {job_seconds:.0f} s"),
    ]
    return rows
