"""Scale: planning a million points, a job's start-up against sweep size, spare cores as threads,
and collect, claims, query and show on a store of 10^8 trial rows (`python -m benchmarks --scale`).

Every number is a fresh process measured from outside (wall time, and the peak RSS of that one
process from wait4) unless its note says otherwise; repeated measurements report min and median.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import yaml
from threadpoolctl import threadpool_limits

from attnsim.config import generators, workspace
from attnsim.config.load import load
from attnsim.plan.sweep import plan_all, write_specs
from benchmarks import naive
from benchmarks.table import Row
from benchmarks.workflow import planned_jobs  # the tests' parser of Snakemake's dry-run job table

REPO = Path(__file__).resolve().parents[1]
MILLION = REPO / "workflow/presets/million.yaml"
PROFILE = REPO / "workflow/profiles/slurm/config.yaml"
STARTUP_LINE = re.compile(
    r"first kernel call ([0-9.]+) s after the job's process started.*this process started at "
    r"([0-9.]+) s"
)
KERNEL_LINE = re.compile(r"kernels ran in ([0-9.]+) s")
# the workspaces (docs/usage.md) of the sweeps written here: results/<stem>/ of their config files
SWEEP_RESULTS = workspace.locate(["sweep.yaml"])  # results/sweep
MILLION_RESULTS = workspace.locate(["million.yaml"])  # results/million


def env() -> dict[str, str]:
    return dict(
        os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )


def measured(
    cmd: list[str], cwd: Path, timeout: float = 7200
) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, peak RSS MiB of the process itself, result) of one command."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(cmd, cwd=cwd, env=env(), stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(cmd, process.returncode, out.read(), err.read())
        result.cpu = usage.ru_utime + usage.ru_stime  # user + sys of the process and its children
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:6])} ... failed "
            f"({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )
    return seconds, usage.ru_maxrss / 1024, result


def snakemake_cmd(workdir: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "workflow/Snakefile"),
        "-d",
        str(workdir),
        *args,
    ]


def sweep(points: int) -> dict:
    """The million preset cut to about `points` points (fewer scales; same sizes, dimensions,
    logits)."""
    # the preset writes its grid as generators ({range: ...}, {logspace: ...}): expanded to lists
    config = generators.expand(yaml.safe_load(MILLION.read_text()))
    grid = config["experiments"]["million"]["grid"]
    per_scale = len(grid["n"]) * len(grid["d"]) * len(grid["logits"])
    grid["scale"] = grid["scale"][: max(1, points // per_scale)]
    return config


def million_config(kind_name: str, points: int = 10**6, **settings) -> dict:
    """A config of about `points` points of one kind and no chunk settings: the kind's example
    experiment (`Kind.example`) with each numeric parameter of two or more values lengthened to
    evenly spaced values between its smallest and largest (integers: at most every integer
    between them), sharing the factor so that no list gets far longer than the others (the scale
    tests and rows of every built-in kind)."""
    from attnsim.kinds import get_kind

    kind = get_kind(kind_name)
    example = copy.deepcopy(dict(kind.example))
    grid = example["grid"]
    # parameters left out take their defaults
    listed = [p for p in kind.schema.params if p.name in grid]
    numeric = [
        p
        for p in listed
        if not p.choices and not str(p.type).startswith("string") and len(set(grid[p.name])) > 1
    ]
    integers = [p for p in numeric if str(p.type).startswith("int")]
    floats = [p for p in numeric if p not in integers]
    fixed = int(np.prod([len(v) for k, v in grid.items() if k not in {p.name for p in numeric}]))
    factor = points / fixed
    for param in integers:  # as many integers as the range has, up to an even share of the factor
        low, high = min(grid[param.name]), max(grid[param.name])
        count = int(min(high - low + 1, round(factor ** (1 / len(numeric)))))
        grid[param.name] = sorted({int(round(v)) for v in np.linspace(low, high, count)})
        factor /= len(grid[param.name])
    if not floats:  # integers only: every integer between the smallest and largest listed value
        for param in integers:
            low, high = min(grid[param.name]), max(grid[param.name])
            grid[param.name] = list(range(low, high + 1))
    for position, param in enumerate(floats):
        low, high = min(grid[param.name]), max(grid[param.name])
        count = max(2, int(np.ceil(factor ** (1 / (len(floats) - position)))))
        grid[param.name] = [float(v) for v in np.linspace(low, high, count)]
        factor /= count
    return {"seed": 1, **settings, "experiments": {kind_name: {"kind": kind_name, **example}}}


def load_text() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def spread(values: list[float]) -> str:
    return (
        f"min {min(values):.2f}, median {statistics.median(values):.2f}, max "
        f"{max(values):.2f} over {len(values)}"
    )


def profile_settings() -> dict:
    """The config keys the SLURM profile sets (job_minutes, max_jobs), as numbers."""
    entries = yaml.safe_load(PROFILE.read_text())["config"]
    return {k: yaml.safe_load(v) for k, v in (e.split("=", 1) for e in entries)}


def profile_job_minutes() -> float:
    return float(profile_settings()["job_minutes"])


def planning_rows(repeats: int, quick: bool) -> list[Row]:
    rows = []
    sizes = (10_000, 100_000) if quick else (10_000, 100_000, 1_000_000)
    for points in sizes:
        config = sweep(points)
        label = f"{points // 1000:,}k" if points < 10**6 else "1M"
        with tempfile.TemporaryDirectory(prefix="attnsim-scale-") as tmp:
            workdir = Path(tmp)
            (workdir / "sweep.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            walls, rss, jobs = [], [], 0
            for _ in range(repeats):
                seconds, peak, result = measured(
                    snakemake_cmd(workdir, "-n", "--cores", "2", "--configfile", "sweep.yaml"),
                    workdir,
                )
                walls.append(seconds)
                rss.append(peak)
                jobs = planned_jobs(result.stdout).get("simulate", 0)
            assert not (workdir / "results").exists(), "a dry run wrote results/"
            settings = load(copy.deepcopy(config))
            started = time.perf_counter()
            plan_all(settings, workdir / SWEEP_RESULTS / "store")
            planning = time.perf_counter() - started
            cluster = plan_all(
                load(copy.deepcopy(config) | {"job_minutes": profile_job_minutes()}),
                workdir / SWEEP_RESULTS / "store",
            )
        target = {"1M": ("<= 20", "<= 1000")}.get(label, (None, None))
        rows += [
            Row(
                f"scale: {label} points, snakemake -n",
                statistics.median(walls),
                "s",
                target[0],
                note=f"median; {spread(walls)}; empty store; {load_text()}",
            ),
            Row(
                f"scale: {label} points, snakemake -n peak RSS",
                max(rss),
                "MiB",
                target[1],
                note="largest over the repeats",
            ),
            Row(
                f"scale: {label} points, planning alone",
                planning,
                "s",
                note="attnsim.plan.sweep.plan_all in-process (ids, costs, chunks)",
            ),
            Row(
                f"scale: {label} points, chunk jobs (laptop default)",
                jobs,
                "jobs",
                note="job_minutes 2 (the default); rows per job <= 2^22",
            ),
            Row(
                f"scale: {label} points, chunk jobs (SLURM profile)",
                sum(len(p.pending) for p in cluster.values()),
                "jobs",
                "<= 2000" if label == "1M" else None,
                note=f"job_minutes {profile_job_minutes():g} from workflow/profiles/slurm",
            ),
        ]
    return rows


# issue 40's user grid: 10 n x 10 d x 2 logit laws x 50,000 scales, no chunk settings
TEN_MILLION = {
    "seed": 20261129,
    "experiments": {
        "ten_million": {
            "kind": "logit_entropy",
            "trials": 100,
            "grid": {
                "n": {"range": [16, 26]},
                "d": {"range": [8, 18]},
                "logits": ["gaussian", "dot_product"],
                "scale": {"logspace": [0.01, 100, 50_000], "digits": 6},
            },
        }
    },
}


def ten_million_rows() -> list[Row]:
    """`snakemake -n` of 10^7 points once: wall time, CPU time and the process's peak RSS (its
    VmHWM, from wait4): planned with every point's id, one chunk's ids in memory at a time."""
    with tempfile.TemporaryDirectory(prefix="attnsim-scale-") as tmp:
        workdir = Path(tmp)
        (workdir / "sweep.yaml").write_text(yaml.safe_dump(TEN_MILLION, sort_keys=False))
        cmd = snakemake_cmd(workdir, "-n", "--cores", "2", "--configfile", "sweep.yaml")
        seconds, peak, result = measured(cmd, workdir)
    jobs = planned_jobs(result.stdout).get("simulate", 0)
    return [
        Row("scale: 10M points, snakemake -n", seconds, "s", "<= 10", note=load_text()),
        Row("scale: 10M points, snakemake -n CPU", result.cpu, "CPU-s", note=f"{jobs} jobs"),
        Row("scale: 10M points, snakemake -n peak RSS", peak, "MiB", "<= 1000"),
    ]


SIMULATE_JOB = re.compile(r"wildcards: kind=[^,\s]+, experiment=([^,\s]+), chunk=")


def kind_rows(quick: bool) -> list[Row]:
    """A million points of every built-in kind (its example grown, no chunk settings) under the
    SLURM profile's job_minutes and max_jobs: `snakemake -n` wall time and peak RSS, and the jobs
    planned (the simulate jobs the dry run lists, per experiment). A dry run per kind; quick mode
    (values not compared): 10^4 points of each, every kind in one dry run, whose cost is mostly
    Snakemake's start."""
    from attnsim.kinds import all_kinds

    rows = []
    points = 10**4 if quick else 10**6
    label = "10k" if quick else "1M"
    overrides = [f"{k}={v}" for k, v in profile_settings().items()]
    built_in = [k for k, kind in all_kinds().items() if kind.package.startswith("attnsim.kinds.")]
    names = sorted(built_in)
    for group in [names] if quick else [[name] for name in names]:
        config = million_config(group[0], points)
        for name in group[1:]:
            config["experiments"] |= million_config(name, points)["experiments"]
        with tempfile.TemporaryDirectory(prefix="attnsim-scale-") as tmp:
            workdir = Path(tmp)
            (workdir / "sweep.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            seconds, rss, result = measured(
                snakemake_cmd(
                    workdir,
                    "-n",
                    "--cores",
                    "2",
                    "--configfile",
                    "sweep.yaml",
                    "--config",
                    *overrides,
                ),
                workdir,
            )
        jobs = Counter(SIMULATE_JOB.findall(result.stdout))
        together = f"; the {len(group)} kinds in one dry run" if len(group) > 1 else ""
        for name in group:
            rows += [
                Row(
                    f"scale: {label} points of {name}, snakemake -n",
                    seconds,
                    "s",
                    "<= 20" if not quick else None,
                    note=f"no chunk settings{together}; {load_text()}",
                ),
                Row(
                    f"scale: {label} points of {name}, snakemake -n peak RSS",
                    rss,
                    "MiB",
                    "<= 1024" if not quick else None,
                    note=together.removeprefix("; "),
                ),
                Row(
                    f"scale: {label} points of {name}, simulate jobs (SLURM profile)",
                    jobs[name],
                    "jobs",
                    "<= 2000" if not quick else None,
                    note="job_minutes 30",
                ),
            ]
    return rows


def startup_rows(repeats: int, quick: bool) -> list[Row]:
    """From the start of a job's `snakemake --mode remote` process (as the SLURM plugin starts it on
    a node) to its first kernel call, against sweep size; run here with the local executor
    inside. Quick mode (values not compared): a 200-point chunk, less kernel work after the
    measured start."""
    rows = []
    sizes = (10_000, 100_000) if quick else (10_000, 100_000, 1_000_000)
    chunk_size = 200 if quick else 2000
    for points in sizes:
        config = sweep(points)
        label = f"{points // 1000:,}k" if points < 10**6 else "1M"
        with tempfile.TemporaryDirectory(prefix="attnsim-scale-") as tmp:
            workdir = Path(tmp)
            (workdir / "sweep.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            plans = plan_all(
                load(copy.deepcopy(config) | {"chunk_size": chunk_size}),
                workdir / SWEEP_RESULTS / "store",
            )
            write_specs(plans, workdir / SWEEP_RESULTS)
            plan = plans["million"]
            chunk = plan.pending[0]
            target = f"simulate:kind=logit_entropy,experiment=million,chunk={chunk}"
            cmd = snakemake_cmd(
                workdir,
                "--configfile",
                "sweep.yaml",
                "--config",
                f"chunk_size={chunk_size}",
                "--target-jobs",
                target,
                "--allowed-rules",
                "simulate",
            )
            cmd += [
                "--mode",
                "remote",
                "--cores",
                "1",
                "--force",
                "--nolock",
                "--target-files-omit-workdir-adjustment",
                "--max-inventory-time",
                "0",
            ]
            cmd += ["--no-hooks", "--ignore-incomplete"]
            seconds, snakemake_part = [], []
            for _ in range(repeats):
                measured(cmd, workdir)
                log = (
                    workdir / SWEEP_RESULTS / f"logs/simulate/million/logit_entropy-{chunk}.log"
                ).read_text()
                found = STARTUP_LINE.search(log)
                seconds.append(float(found.group(1)))
                snakemake_part.append(float(found.group(2)))
        rows.append(
            Row(
                f"scale: job start-up to first kernel call, {label}-point sweep",
                statistics.median(seconds),
                "s",
                "<= 3",
                note=f"median; {spread(seconds)}; of it Snakemake until `attnsim simulate` "
                f"starts: {spread(snakemake_part)}; `snakemake --mode remote` for one "
                f"{chunk_size:,}-point chunk, here (one Snakemake parse; on SLURM the jobstep "
                f"adds a second); {load_text()}",
            )
        )
    return rows


ONE_POINT = {
    "seed": 7,
    "experiments": {
        "one": {
            "kind": "noisy_attention",
            "trials": 3000,
            "grid": {
                "n": [16384],
                "d": [64],
                "logit_scale": [1.0],
                "noise": ["gaussian"],
                "noise_draws": [32],
                "noise_scale": [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0],
            },
        }
    },
}


def naive_seconds(config: dict, fraction: float) -> tuple[float, float]:
    """Seconds the naive per-trial loop (benchmarks/naive.py, one core, BLAS on one thread) takes
    for the whole sweep, extrapolated from running `fraction` of its trials; and the seconds run."""
    e = config["experiments"]["one"]
    g = e["grid"]
    rng = np.random.default_rng(0)
    trials = max(1, round(e["trials"] * fraction))
    with threadpool_limits(1):
        started = time.perf_counter()
        for scale in g["noise_scale"]:
            for _ in range(trials):
                naive.noisy_attention(
                    rng, g["n"][0], g["d"][0], g["noise_draws"][0], g["logit_scale"][0], scale
                )
        spent = time.perf_counter() - started
    return spent * e["trials"] / trials, spent


def threads_rows(cores: int, quick: bool) -> list[Row]:
    config = copy.deepcopy(ONE_POINT)
    if quick:
        config["experiments"]["one"]["trials"] = 40
        config["experiments"]["one"]["grid"]["n"] = [1024]
    rows = []
    naive_before, ran_before = naive_seconds(config, 0.02 if quick else 0.05)
    walls = {}
    until = ["--until", "simulate"] if quick else []  # quick mode: the simulate job only
    for label, extra in (
        ("threads from spare cores", []),
        ("one thread (as before)", ["--set-threads", "simulate=1"]),
    ):
        with tempfile.TemporaryDirectory(prefix="attnsim-scale-") as tmp:
            workdir = Path(tmp)
            (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            cmd = snakemake_cmd(workdir, "--cores", str(cores), *extra, *until)
            seconds, _, _ = measured(cmd, workdir)
            log = next((workdir / "results/logs/simulate").rglob("*.log")).read_text()
            kernel = float(KERNEL_LINE.search(log).group(1))
            threads = re.search(r"on (\d+) thread", log).group(1)
            walls[label] = (seconds, kernel, threads)
    naive_after, ran_after = naive_seconds(config, 0.02 if quick else 0.05)
    naive_total = (naive_before + naive_after) / 2
    what = "one-point sweep" + (
        " (quick: n=1024, 40 trials)"
        if quick
        else ": noisy_attention n=16384, d=64, K=32, 8 scales, 3000 trials"
    )
    rows.append(
        Row(
            f"scale: {what}, naive loop (1 core)",
            naive_total,
            "s",
            note="benchmarks/naive.py per trial and point, extrapolated from "
            f"{ran_before + ran_after:.0f} s of it run before and after the workflow runs "
            f"({naive_before:.0f} / {naive_after:.0f} s); {load_text()}",
        )
    )
    for label, (seconds, kernel, threads) in walls.items():
        rows += [
            Row(
                f"scale: one-point sweep, snakemake --cores {cores} end to end, {label}",
                seconds,
                "s",
                note=f"{threads} thread(s); kernels {kernel:.1f} s of it"
                + ("; quick mode: `--until simulate`" if quick else ""),
            ),
            Row(
                f"scale: one-point sweep, speedup over the naive loop, {label}",
                naive_total / seconds,
                "x",
                ">= 8" if label.startswith("threads") and not quick else None,
                note="naive loop seconds / workflow wall time (start to finish: plan, simulate, "
                + ("up to the chunk in quick mode)" if quick else "collect, figures, claims)"),
            ),
        ]
    return rows


def build_store(directory: Path, cores: int) -> float:
    """Run the million preset up to its chunk files in `directory` (once; minutes)."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copy(MILLION, directory / "million.yaml")
    seconds, _, _ = measured(
        snakemake_cmd(
            directory, "--cores", str(cores), "--configfile", "million.yaml", "--until", "simulate"
        ),
        directory,
    )
    return seconds


def store_rows(directory: Path, cores: int, repeats: int) -> list[Row]:
    import pyarrow.parquet as pq

    from attnsim.config.load import load_file
    from attnsim.plan.sweep import experiment_json
    from attnsim.store import parquet as store

    rows = []
    root = directory / MILLION_RESULTS / "store"
    if not store.table_files(root):
        built = build_store(directory, cores)
        rows.append(
            Row(
                "scale: 1M points x 100 trials, simulate (whole sweep)",
                built,
                "s",
                note=f"`snakemake --cores {cores} --until simulate`; {load_text()}",
            )
        )
    settings = load_file(directory / "million.yaml")
    chunks = store.experiment_chunks(root, "logit_entropy", "million")
    trial_rows = sum(pq.read_metadata(p).num_rows for p in chunks)
    size = sum(p.stat().st_size for p in chunks)
    rows += [
        Row(
            "scale: store trial rows",
            trial_rows,
            "rows",
            ">= 100000000",
            note=f"{len(chunks)} chunk files, {size / 2**30:.2f} GiB (Parquet, zstd, floats split)",
        ),
    ]
    attnsim = [sys.executable, "-m", "attnsim.cli.main"]
    summary = store.summary_path(root, "logit_entropy", "million")
    experiments = directory / "experiments.json"  # the claims job's file (results/plan/...)
    experiments.write_text(json.dumps({"million": "logit_entropy"}))
    experiment = directory / "experiment.json"  # the collect job's file (results/plan/...)
    experiment.write_text(experiment_json(settings, "million"))
    tail = [  # the serial tail of the sweep, each step as its workflow job runs it
        (
            "collect 10^8 rows",
            [
                "collect",
                "--experiment-file",
                str(experiment),
                "--output",
                str(summary),
                "--threads",
                str(cores),
                *map(str, chunks),
            ],
            "a few row groups in memory at a time, the next read and checked in a second thread"
            " (the collect job's 2 threads)",
        ),
        (
            "figures of the 1M-point summary",
            ["figures", "--outdir", str(directory / "figures"), "--threads", str(cores)],
            "`attnsim figures` (both of logit_entropy's, PNG and PDF): lines spread over n and"
            " d, points binned along x (figures.common.MAX_LINES, MAX_POINTS)",
        ),
        (
            "claims on the 1M-point summary",
            ["claims", "--experiments-file", str(experiments)],
            "`attnsim claims` (reads the summaries)",
        ),
    ]
    for label, args, what in tail:
        if args[0] == "figures":
            args = [*args, str(summary)]
        elif args[0] == "claims":
            args = [*args, "--store", str(root)]
        # each step `repeats` times (its page faults and the page cache vary run to run): the
        # median, every run's spread, the largest peak
        runs = [measured([*attnsim, *args], directory) for _ in range(repeats)]
        seconds = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        cpu = [r[2].cpu for r in runs]
        note = f"{what}; median; {spread([r[0] for r in runs])}; {spread(cpu)} CPU-s (user + sys)"
        note += f"; {load_text()}"
        if args[0] == "collect":
            note += f"; {trial_rows / seconds / 1e6:.1f} M rows/s"
        rows += [
            Row(f"scale: {label}, wall", seconds, "s", "<= 10", note=f"on {cores} cores; {note}"),
            Row(f"scale: {label}, peak RSS", rss, "MiB", "<= 1024"),
        ]
    sql = (
        "SELECT n, d, scale, entropy_mean, entropy_ci_low, entropy_ci_high FROM million WHERE "
        "n = 32 AND d = 16 AND logits = 'gaussian' AND scale BETWEEN 1 AND 2"
    )
    walls = [
        measured([*attnsim, "query", sql, "--store", str(root)], directory)[0]
        for _ in range(repeats)
    ]
    rows.append(
        Row(
            "scale: attnsim query, one experiment's summary with a filter",
            statistics.median(walls),
            "s",
            "<= 1",
            note=f"median; {spread(walls)}; CLI, process start included",
        )
    )
    walls = [
        measured(
            [*attnsim, "show", "--config", str(directory / "million.yaml"), "--store", str(root)],
            directory,
        )[0]
        for _ in range(repeats)
    ]
    rows.append(
        Row(
            "scale: attnsim show on the finished 1M-point store",
            statistics.median(walls),
            "s",
            "<= 3",
            note=f"median; {spread(walls)}; CLI, process start included",
        )
    )
    return rows


def slurm_rows(points: int, chunk_size: int) -> list[Row]:
    """Job start-up through the real SLURM executor plugin on the local cluster
    (tests/slurm/local-cluster.sh up)."""
    config = sweep(points)
    with tempfile.TemporaryDirectory(
        prefix="attnsim-slurm-", dir=os.environ.get("ATTNSIM_SCALE_TMP", "/tmp")
    ) as tmp:
        workdir = Path(tmp)
        (workdir / "sweep.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        cmd = snakemake_cmd(
            workdir,
            "--workflow-profile",
            str(REPO / "workflow/profiles/slurm"),
            "--configfile",
            "sweep.yaml",
            "--config",
            f"chunk_size={chunk_size}",
        )
        cmd += [
            "--slurm-init-seconds-before-status-checks",
            "2",
            "--until",
            "simulate",
            "--set-threads",
            "simulate=1",
            "--jobs",
            "4",
        ]
        wall, _, result = measured(cmd, workdir)
        logs = list((workdir / SWEEP_RESULTS / "logs/simulate").rglob("*.log"))
        found = [STARTUP_LINE.search(p.read_text()) for p in logs]
        seconds = [float(f.group(1)) for f in found]
        snakemake_part = [float(f.group(2)) for f in found]
        jobs = len(logs)
    return [
        Row(
            f"scale: SLURM job start-up to first kernel call, {points // 1000:,}k-point sweep",
            statistics.median(seconds),
            "s",
            "<= 3",
            note=f"median; {spread(seconds)} jobs; of it Snakemake (two processes) until "
            f"`attnsim simulate` starts: {spread(snakemake_part)}; sbatch job's `snakemake "
            f"--mode remote` start to the kernels, via the jobstep's srun; {jobs} SLURM "
            f"jobs; run {wall:.0f} s; {load_text()}",
        )
    ]


def scale_rows(cores: int, quick: bool, store_dir: Path | None, slurm: bool) -> list[Row]:
    repeats = 1 if quick else 3  # quick mode (CI): every row once, values not compared
    rows = (
        planning_rows(repeats, quick)
        + ([] if quick else ten_million_rows())
        + kind_rows(quick)
        + startup_rows(repeats, quick)
        + threads_rows(cores, quick)
    )
    if store_dir is not None:
        rows += store_rows(store_dir, cores, repeats)
    if slurm:
        rows += slurm_rows(100_000, 5000)
    return rows
