"""The workflow through a real SLURM cluster (tests/slurm/local-cluster.sh) with the shipped profile:
jobs really go through SLURM, results equal a local run byte for byte, a failing chunk is reported
as failed, and the rerun after the fix computes only what is missing.

Skipped where a cluster cannot be set up here (not root, no apt-get); under CI it must run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import REPO, point_rows, snakemake, write_config

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPT = REPO / "tests/slurm/local-cluster.sh"
TIMEOUT = 240  # seconds for one Snakemake run through SLURM, then SIGINT


def _cannot_run() -> str | None:
    if os.geteuid() != 0:
        return "needs root to start munge, slurmdbd, slurmctld and slurmd"
    if not shutil.which("apt-get") and not shutil.which("slurmctld"):
        return "needs Debian's SLURM packages (apt-get not found)"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "needs the SLURM executor plugin: pip install -e '.[slurm]'"
    return None


@pytest.fixture(scope="module")
def cluster():
    reason = _cannot_run()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"SLURM test cannot run under CI: {reason}")
        pytest.skip(reason)
    was_up = subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True, text=True).returncode == 0
    up = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    yield
    if not was_up:
        subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True, timeout=120)


def config():
    grid = {"n": [16, 256], "d": [4], "logit_scale": [0.0, 1.0], "noise": ["gaussian", "gumbel"], "noise_draws": [4], "noise_scale": [0.1, 0.5]}
    return {
        "seed": 11,
        "chunk_size": 8,
        "experiments": {
            "robust": {"kind": "noisy_attention", "trials": 50, "grid": grid},
            "fragile": {"kind": "noisy_attention", "trials": 30, "grid": {**grid, "n": [32]}},
        },
    }


def through_slurm(workdir: Path, *extra: str) -> subprocess.CompletedProcess:
    """The shipped profile, with fast status polling, stopped by SIGINT if it hangs."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-d",
        str(workdir),
        "--workflow-profile",
        str(REPO / "workflow/profiles/slurm"),
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--set-threads",
        "simulate=1",
        "--retries",
        "0",
        *extra,
    ]
    process = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # SIGTERM does not stop a plugin waiting on sacct
        out, _ = process.communicate(timeout=60)
        pytest.fail(f"snakemake through SLURM hung for {TIMEOUT} s:\n{out[-4000:]}")
    return subprocess.CompletedProcess(cmd, process.returncode, out, "")


def sacct_jobs(workdir: Path) -> list[tuple[str, str, str]]:
    """(job id, comment, state) of this workflow's jobs, from SLURM accounting."""
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-S", "now-1hour", "-o", "JobID,Comment,State,WorkDir"], capture_output=True, text=True, check=True).stdout
    rows = [line.split("|") for line in out.splitlines() if line]
    return [(r[0], r[1], r[2]) for r in rows if len(r) >= 4 and Path(r[3]) == workdir]


def test_slurm_run_matches_local_and_recovers_from_a_failed_chunk(cluster, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "slurm"
    write_config(local, config())
    snakemake(local, "--cores", "2")

    write_config(remote, config())
    blocker = remote / "results/store/trials/kind=noisy_attention/experiment=fragile"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the experiment's folder must go: every chunk of `fragile` fails")

    failed = through_slurm(remote)
    assert failed.returncode != 0, failed.stdout[-3000:]
    assert "Error in rule simulate" in failed.stdout and "experiment=fragile" in failed.stdout
    jobs = sacct_jobs(remote)
    by_state = {}
    for _, comment, state in jobs:
        by_state.setdefault(state, []).append(comment)
    assert all(c.startswith("rule_simulate_wildcards_noisy_attention_") for c in sum(by_state.values(), []))
    assert {c for c in by_state.get("FAILED", [])} == {c for c in sum(by_state.values(), []) if "_fragile_" in c} != set()
    assert len(by_state.get("COMPLETED", [])) == 2  # robust: 16 points in chunks of 8; kept despite the failure
    assert not (remote / "results/store/summary/kind=noisy_attention/experiment=fragile").exists()

    blocker.unlink()  # the fix
    planned = snakemake(remote, "-n", "--cores", "1").stdout
    assert planned.count("rule simulate:") == 1 and "experiment=fragile" in planned
    rerun = through_slurm(remote)
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    new_jobs = [j for j in sacct_jobs(remote) if j not in jobs]
    assert [(c, s) for _, c, s in new_jobs] == [(next(c for _, c, _ in new_jobs), "COMPLETED")] and "_fragile_" in new_jobs[0][1]

    assert point_rows(remote) == point_rows(local)
    assert "Nothing to be done" in snakemake(remote, "-n", "--cores", "1").stdout
