"""Run the real Snakemake workflow of this repository in a scratch directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[2]


def python_first_on_path(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """`env` with this Python's scripts folder first on PATH: the workflow's jobs then run the
    `attnsim` and `snakemake` of the environment under test."""
    return dict(env, PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")


def workflow_args(workdir: Path) -> list[str]:
    """The arguments that run this repository's workflow in `workdir` (Snakemake's, and those of
    the `attnsim` commands that pass them on)."""
    return ["-s", str(REPO / "workflow/Snakefile"), "-d", str(workdir)]


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """The command line of Snakemake (this Python's) on this repository's workflow in `workdir`."""
    return [sys.executable, "-m", "snakemake", *workflow_args(workdir), *args]


def snakemake(
    workdir: Path, *args: str, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        snakemake_command(workdir, *args),
        cwd=workdir,
        env=python_first_on_path(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    result.stderr = without_profile_notice(result.stderr)
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed "
            f"({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


def without_profile_notice(stderr: str) -> str:
    """stderr less the one line Snakemake prints on every start because it loads profiles/default
    ("Using workflow specific profile ... for setting default command line arguments."): the
    tests count the workflow's own lines (one line for bad input)."""
    first, _, rest = stderr.partition("\n")
    return rest if first.startswith("Using ") and "profile" in first else stderr


def write_config(workdir: Path, config: dict, name: str = "config.yaml") -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def point_rows(workdir: Path) -> dict[str, bytes]:
    """point id -> the point's per-trial rows, serialised canonically (for byte comparisons)."""
    rows: dict[str, bytes] = {}
    for path in sorted((workdir / "results/store/trials").rglob("chunk-*.parquet")):
        frame = pq.read_table(path).to_pandas()
        for pid, part in frame.groupby("point_id"):
            rows[pid] = part.sort_values("trial").reset_index(drop=True).to_json().encode()
    return rows


def tree(workdir: Path) -> dict[str, tuple[int, int]]:
    """Every file under results/ with its size and modification time (ns)."""
    base = workdir / "results"
    return (
        {
            str(p.relative_to(base)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(base.rglob("*"))
            if p.is_file()
        }
        if base.exists()
        else {}
    )


def planned_jobs(dry_run_output: str) -> dict[str, int]:
    """Job counts per rule from the 'Job stats' table of `snakemake -n`, or of a run's log
    printed in full (`--logger-attnsim-full`, on stderr) (for tests and benchmarks)."""
    counts, inside = {}, False
    for line in dry_run_output.splitlines():
        if line.startswith("job ") and "count" in line:
            inside = True
            continue
        if inside:
            parts = line.split()
            if not parts or parts[0].startswith("-"):
                continue
            if parts[0] == "total":
                break
            counts[parts[0]] = int(parts[1])
    return counts


# a run to interrupt (test_interruption.py, test_concurrency.py)
INTERRUPT_GRID = {
    "n": [256, 512],
    "d": [16],
    "logit_scale": [0.0, 1.0],
    "noise": ["gaussian", "laplace"],
    "noise_draws": [8],
    "noise_scale": [0.1, 0.5],
}


def interrupt_config(chunk_size):
    return {
        "seed": 3,
        "chunk_size": chunk_size,
        "experiments": {
            "robustness": {"kind": "noisy_attention", "trials": 200, "grid": INTERRUPT_GRID}
        },
    }


def checkout(workdir: Path) -> Path:
    """A working copy of the workflow (workflow/ linked: its Snakefile and profiles), as after
    `git clone`."""
    for name in ("workflow",):
        if not (workdir / name).exists():
            (workdir / name).symlink_to(REPO / name)
    return workdir


def attnsim(workdir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The installed CLI (`attnsim <args>`) in a subprocess in `workdir`, its output captured: a
    user's shell, with this environment's scripts first on PATH (`attnsim run` execs Snakemake,
    whose jobs call `attnsim`)."""
    return subprocess.run(
        [sys.executable, "-m", "attnsim.cli.main", *args],
        cwd=workdir,
        env=python_first_on_path(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def attnsim_run(workdir: Path, *args: str) -> subprocess.Popen:
    env = python_first_on_path()
    # SIGINT back to its default: a shell starts background jobs with SIGINT ignored, the
    # disposition is inherited, and Python then installs no KeyboardInterrupt handler
    return subprocess.Popen(
        [sys.executable, "-m", "attnsim.cli.main", "run", *args],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def chunks(workdir: Path) -> list[Path]:
    return list((workdir / "results/store/trials").rglob("chunk-*.parquet"))


def simulate_jobs(workdir: Path) -> list[int]:
    """Pids of the `attnsim simulate` processes working in `workdir` (jobs of any run there)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == str(workdir) and b"simulate" in cmdline and b"attnsim" in b" ".join(cmdline[:3]):
            found.append(int(entry))
    return found
