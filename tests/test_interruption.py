"""Kill a real run in the middle of simulating (SIGINT, SIGKILL); the README's run command finishes it
and the store matches an uninterrupted run, row for row."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workflow_helpers import REPO, point_rows, snakemake, write_config

pytestmark = pytest.mark.slow

GRID = {"n": [256, 512], "d": [16], "logit_scale": [0.0, 1.0], "noise": ["gaussian", "laplace"], "noise_draws": [8], "noise_scale": [0.1, 0.5]}


def config(chunk_size):
    return {"seed": 3, "chunk_size": chunk_size, "experiments": {"robustness": {"kind": "noisy_attention", "trials": 200, "grid": GRID}}}


def checkout(workdir: Path) -> Path:
    """A working copy of the workflow (Snakefile and workflow/ linked), as after `git clone`."""
    for name in ("Snakefile", "workflow"):
        if not (workdir / name).exists():
            (workdir / name).symlink_to(REPO / name)
    return workdir


def attnsim_run(workdir: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    # SIGINT back to its default: a shell starts background jobs with SIGINT ignored, the
    # disposition is inherited, and Python then installs no KeyboardInterrupt handler
    return subprocess.Popen(
        [sys.executable, "-m", "attnsim.cli", "run", *args],
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


def interrupt_after_first_chunk(workdir: Path, sig: int, whole_group: bool) -> str:
    run = attnsim_run(workdir, "--cores", "1")
    deadline = time.monotonic() + 120
    while not chunks(workdir):
        assert run.poll() is None, run.stdout.read()
        assert time.monotonic() < deadline, "no chunk finished in time"
        time.sleep(0.05)
    if whole_group:
        os.killpg(run.pid, sig)
    else:
        run.send_signal(sig)
    out, _ = run.communicate(timeout=60)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("reference")
    write_config(workdir, config(chunk_size=16))
    snakemake(workdir, "--cores", "2")
    return point_rows(workdir)


@pytest.mark.parametrize(
    "sig,whole_group", [(signal.SIGINT, False), (signal.SIGKILL, True), (signal.SIGKILL, False)], ids=["sigint", "sigkill-all", "sigkill-snakemake"]
)
def test_interrupted_run_resumes_to_identical_results(tmp_path, reference, sig, whole_group):
    write_config(checkout(tmp_path), config(chunk_size=4))
    interrupt_after_first_chunk(tmp_path, sig, whole_group)
    time.sleep(0.5)  # an orphaned job (snakemake alone killed) may still be finishing its chunk
    assert 0 < len(chunks(tmp_path)) < 4
    assert not list((tmp_path / "results/store/summary").rglob("*.parquet")) if (tmp_path / "results/store/summary").exists() else True
    rerun = attnsim_run(tmp_path)  # the README's run command, no extra flags
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert point_rows(tmp_path) == reference
    assert not list(tmp_path.rglob(".*.tmp"))  # no half-written file left anywhere in the store
