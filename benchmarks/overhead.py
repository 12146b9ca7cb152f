"""What a run costs besides its kernels, side by side with a baseline (issue 50's targets): the
default run's CPU and its non-kernel share, a run with nothing to do, a 1-point change to one
experiment, and planning 10^7 points.

Every number is CPU seconds (user + sys) of Snakemake and every process it waited for (its jobs,
the job server and its children), from `wait4`: under load from other work, CPU time moves far
less than wall time. The kernels' CPU is read from the simulate jobs' logs ("kernels ran in X s,
Y CPU-s"; a baseline that logs only X: X x its threads, the issue's definition). With
`--baseline DIR` (a clone of an older attnsim with its own environment in DIR/.venv, e.g. 9b9a604)
each measurement runs for the baseline and for this tree one after the other, in the same
sitting, and the rows give their ratios against the issue's targets.
"""

from __future__ import annotations

import copy
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from benchmarks.table import Row

REPO = Path(__file__).resolve().parents[1]
KERNEL_CPU = re.compile(r"kernels ran in ([0-9.]+) s(?:, ([0-9.]+) CPU-s)?")
THREADS = re.compile(r"on ([0-9]+) thread\(s\)")
PROCESS_CPU = re.compile(r"process CPU ([0-9.]+) s")
JOB_CPU = re.compile(r"attnsim\.cli: [a-z]+ ran in [0-9.]+ s, ([0-9.]+) CPU-s")
TARGETS = {  # issue 50
    "run CPU ratio": "<= 0.6",
    "non-kernel share": "<= 25",
    "one point": "<= 5",
    "nothing to do ratio": "<= 0.334",
    "plan ratio": "<= 1.0",
}


@dataclass(frozen=True)
class Version:
    """A tree of attnsim and the Python of its environment."""

    label: str
    root: Path
    python: Path

    @staticmethod
    def this() -> Version:
        import sys

        return Version("this tree", REPO, Path(sys.executable))

    @staticmethod
    def baseline(root: Path) -> Version:
        python = root / ".venv/bin/python"
        if not python.exists():
            raise SystemExit(f"--baseline {root}: no environment at {python}")
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return Version(commit or root.name, root, python)


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float
    peak_mib: float


def run(version: Version, workdir: Path, *args: str) -> Measured:
    """`snakemake` of `version`'s workflow in `workdir`: wall, CPU of it and everything it waited
    for, and the peak RSS among them."""
    env = dict(os.environ, PATH=f"{version.python.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("ATTNSIM_JOB_SERVER", None)
    cmd = [str(version.python), "-m", "snakemake", "-s", str(version.root / "workflow/Snakefile")]
    cmd += ["-d", str(workdir), *args]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=out, stderr=out, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            out.seek(0)
            tail = out.read()[-3000:]
            raise RuntimeError(f"{version.label}: snakemake {' '.join(args)} failed:\n{tail}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def kernel_cpu(logs: list[Path]) -> float:
    """CPU-s inside the kernel calls of these simulate jobs' logs. A baseline that logs only the
    kernels' wall time: that x threads (the issue's definition), but at most the job's whole
    process CPU (under load the wall time counts the waits for a core)."""
    total = 0.0
    for log in logs:
        text = log.read_text()
        for match in KERNEL_CPU.finditer(text):
            if match.group(2) is not None:
                total += float(match.group(2))
            else:
                threads = THREADS.search(text)
                wall = float(match.group(1)) * (int(threads.group(1)) if threads else 1)
                process = PROCESS_CPU.search(text)
                total += min(wall, float(process.group(1))) if process else wall
    return total


def job_cpu(workdir: Path) -> dict[str, float]:
    """rule -> CPU-s of its jobs: the simulate jobs' `process CPU` lines and the other jobs' own
    "ran in ... CPU-s" lines (a job the job server ran: its child's CPU, the imports excluded).
    Empty for a baseline without those lines."""
    out: dict[str, float] = {}
    logs = workdir / "results/logs"
    for log in logs.rglob("*.log") if logs.is_dir() else []:
        rule = log.relative_to(logs).parts[0].removesuffix(".log")
        line = PROCESS_CPU if rule == "simulate" else JOB_CPU
        found = line.search(log.read_text())
        if found:
            out[rule] = out.get(rule, 0.0) + float(found.group(1))
    return out


def simulate_logs(workdir: Path) -> set[Path]:
    return set((workdir / "results/logs/simulate").rglob("*.log"))


def prepare(workdir: Path, config: dict, resources: Path | None) -> None:
    """A fresh workspace: the config, and the assets a clone has fetched (linked, with copies of
    their markers: nothing is written into the clone; without any, the run fetches them)."""
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    if resources is not None:
        (workdir / "resources").mkdir()
        for entry in resources.iterdir():
            if entry.is_dir():
                (workdir / "resources" / entry.name).symlink_to(entry.resolve())
            else:
                shutil.copy2(entry, workdir / "resources" / entry.name)


def one_point_change(config: dict) -> tuple[dict, str]:
    """The config with one value added to the grid of the first experiment whose grid varies one
    parameter only (one more point): between its two smallest values."""
    from attnsim.config.load import load
    from attnsim.records.grid import grid_columns

    changed = copy.deepcopy(config)
    for name, experiment in load(config).experiments.items():
        values = grid_columns(experiment).values
        varied = [k for k, v in values.items() if len(set(v)) > 1]
        if len(varied) != 1:
            continue
        key = varied[0]
        listed = sorted(set(values[key]))
        if not all(isinstance(v, (int, float)) for v in listed[:2]):
            continue
        low, high = listed[:2]
        new = (low + high) / 2 if isinstance(low, float) or isinstance(high, float) else None
        if new is None:
            if high - low < 2:
                continue
            new = (low + high) // 2
        grid = changed["experiments"][name]["grid"]
        grid[key] = sorted([*grid[key], new])
        return changed, f"{name}: {key} {new:g} added"
    raise ValueError("no experiment varies a single numeric parameter")


@dataclass
class Sitting:
    """One version's measurements."""

    full: Measured
    kernel: float
    nothing: Measured
    change: Measured
    change_kernel: float
    plan: Measured


def measure(
    versions: list[Version], config: dict, cores: int, plan_config: dict, quick: bool = False
) -> dict:
    """Each measurement for every version in turn (interleaved: the load of the sitting falls
    on all alike). Quick mode (`config` the quick sweep): this tree's default run is the
    default-sweep rows' run (`workflow.quick_sweep`, in its directory; its peak RSS is not
    read), and the 1-point change goes up to its new chunk (the jobs after it are the default
    run's)."""
    from benchmarks.workflow import quick_sweep

    out: dict[str, dict] = {v.label: {} for v in versions}
    changed, what = one_point_change(config)
    # the assets (the same pinned files for every version): the first clone that has them
    fetched = [v.root / "resources" for v in versions if (v.root / "resources").is_dir()]
    with tempfile.TemporaryDirectory(prefix="attnsim-overhead-") as tmp:
        dirs = {v.label: Path(tmp) / f"w{i}" for i, v in enumerate(versions)}
        shared = {v.label for v in versions if quick and v == Version.this()}
        for v in versions:
            if v.label not in shared:
                prepare(dirs[v.label], config, fetched[0] if fetched else None)
        for v in versions:  # the default run from an empty workspace
            if v.label in shared:
                dirs[v.label], done = quick_sweep(cores)
                out[v.label]["full"] = Measured(done["wall"], done["cpu"], math.nan)
            else:
                out[v.label]["full"] = run(v, dirs[v.label], "--cores", str(cores))
            out[v.label]["kernel"] = kernel_cpu(sorted(simulate_logs(dirs[v.label])))
            out[v.label]["jobs"] = job_cpu(dirs[v.label])
        for v in versions:  # again: nothing to do
            out[v.label]["nothing"] = run(v, dirs[v.label], "--cores", str(cores))
        for v in versions:  # one point more in one experiment
            before = simulate_logs(dirs[v.label])
            (dirs[v.label] / "config.yaml").write_text(yaml.safe_dump(changed, sort_keys=False))
            until = ["--until", "simulate"] if quick else []
            out[v.label]["change"] = run(v, dirs[v.label], "--cores", str(cores), *until)
            new_logs = sorted(simulate_logs(dirs[v.label]) - before)
            out[v.label]["change_kernel"] = kernel_cpu(new_logs)
        for v in versions:  # planning 10^7 points: a dry run
            plan_dir = Path(tmp) / f"plan-{v.label}"
            plan_dir.mkdir()
            (plan_dir / "sweep.yaml").write_text(yaml.safe_dump(plan_config, sort_keys=False))
            out[v.label]["plan"] = run(
                v, plan_dir, "-n", "--cores", "2", "--configfile", "sweep.yaml", "--quiet", "all"
            )
    out["_change"] = what
    return out


def overhead_rows(cores: int, quick: bool, baseline: Path | None) -> list[Row]:
    from benchmarks.scale import TEN_MILLION
    from benchmarks.workflow import QUICK_SWEEP

    config = (
        copy.deepcopy(QUICK_SWEEP) if quick else yaml.safe_load((REPO / "config.yaml").read_text())
    )
    plan_config = copy.deepcopy(TEN_MILLION)
    if quick:  # 10^4 points
        plan_config["experiments"]["ten_million"]["grid"]["scale"]["logspace"][2] = 50
    here = Version.this()
    versions = ([Version.baseline(baseline)] if baseline else []) + [here]
    load = f"load average {os.getloadavg()[0]:.1f} at start"
    got = measure(versions, config, cores, plan_config, quick)
    rows = []
    for v in versions:
        m = got[v.label]
        label = f"overhead ({v.label})"
        non_kernel = 100 * (1 - m["kernel"] / m["full"].cpu)
        change_non_kernel = 100 * (m["change"].cpu - m["change_kernel"]) / m["full"].cpu
        target = v is here and not quick
        rows += [
            Row(f"{label}: default run, CPU", m["full"].cpu, "CPU-s",
                note=f"wall {m['full'].wall:.0f} s, --cores {cores}; {load}"),
            Row(f"{label}: default run, kernels' CPU", m["kernel"], "CPU-s",
                note="the simulate jobs' logs"),
            *[
                Row(f"{label}: default run, {rule} jobs' CPU", seconds, "CPU-s",
                    note="simulate: whole processes; the others: each job's own CPU (in the "
                    "job server: its child's)")
                for rule, seconds in sorted(m["jobs"].items())
            ],
            Row(f"{label}: non-kernel share of the default run's CPU", non_kernel, "%",
                TARGETS["non-kernel share"] if target else None),
            Row(f"{label}: run with nothing to do, CPU", m["nothing"].cpu, "CPU-s",
                note=f"wall {m['nothing'].wall:.1f} s"),
            Row(f"{label}: 1-point change, non-kernel CPU / default run's CPU", change_non_kernel,
                "%", TARGETS["one point"] if target else None,
                note=f"{got['_change']}: {m['change'].cpu:.1f} CPU-s, kernels "
                f"{m['change_kernel']:.1f}" + ("; quick mode: up to the new chunk" * quick)),
            Row(f"{label}: 10^7-point plan (snakemake -n), CPU", m["plan"].cpu, "CPU-s",
                note=f"peak RSS {m['plan'].peak_mib:.0f} MiB" + (" (10^4 in quick mode)" * quick)),
        ]  # fmt: skip
    if baseline:
        old, new = got[versions[0].label], got[here.label]
        name = versions[0].label
        rows += [
            Row(f"overhead: default run CPU, this tree / {name}", new["full"].cpu / old["full"].cpu,
                "x", TARGETS["run CPU ratio"]),
            Row(f"overhead: run with nothing to do, CPU, this tree / {name}",
                new["nothing"].cpu / old["nothing"].cpu, "x", TARGETS["nothing to do ratio"]),
            Row(f"overhead: 10^7-point plan CPU, this tree / {name}",
                new["plan"].cpu / old["plan"].cpu, "x", TARGETS["plan ratio"]),
            Row(f"overhead: 10^7-point plan peak RSS, this tree / {name}",
                new["plan"].peak_mib / old["plan"].peak_mib, "x", TARGETS["plan ratio"]),
        ]  # fmt: skip
    return rows
