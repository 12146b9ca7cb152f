"""Kill a real run in the middle of simulating (SIGINT, SIGKILL); the README's run command finishes
it and the store matches an uninterrupted run, row for row."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from helpers.workflow import attnsim_run, checkout, chunks, point_rows, snakemake, write_config
from helpers.workflow import interrupt_config as config

pytestmark = pytest.mark.slow


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
    "sig,whole_group",
    [(signal.SIGINT, False), (signal.SIGKILL, True), (signal.SIGKILL, False)],
    ids=["sigint", "sigkill-all", "sigkill-snakemake"],
)
def test_interrupted_run_resumes_to_identical_results(tmp_path, reference, sig, whole_group):
    write_config(checkout(tmp_path), config(chunk_size=4))
    interrupt_after_first_chunk(tmp_path, sig, whole_group)
    time.sleep(0.5)  # an orphaned job (snakemake alone killed) may still be finishing its chunk
    assert 0 < len(chunks(tmp_path)) < 4
    assert (
        not list((tmp_path / "results/store/summary").rglob("*.parquet"))
        if (tmp_path / "results/store/summary").exists()
        else True
    )
    rerun = attnsim_run(tmp_path)  # the README's run command, no extra flags
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert point_rows(tmp_path) == reference
    assert not list(tmp_path.rglob(".*.tmp"))  # no half-written file left anywhere in the store
