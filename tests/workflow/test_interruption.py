"""Kill a real run in the middle of simulating (SIGINT, SIGKILL); the README's run command finishes
it and the store matches an uninterrupted run, row for row."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from helpers.workflow import (
    attnsim_run,
    checkout,
    chunks,
    point_rows,
    simulate_jobs,
    snakemake,
    write_config,
)
from helpers.workflow import interrupt_config as config

from attnsim.store import parquet as store

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


SUMMARY = store.summary_path(Path("results/store"), "noisy_attention", "robustness")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The rows of an uninterrupted run (in chunks of 16 points: rows do not depend on chunks),
    for every test here: its summary is made, not the figures and claims, which add no row."""
    workdir = tmp_path_factory.mktemp("reference")
    write_config(workdir, config(chunk_size=16))
    snakemake(workdir, str(SUMMARY), "--cores", "2")
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


# A Snakemake that deadlocks in its SIGTERM handler, as the issue saw in 3 of 10 tries: it ignores
# the signal, holds the store's flock, and has a job (a grandchild) running.
STUCK = """
import fcntl, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
lock = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(lock, fcntl.LOCK_EX)
job = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
print(job.pid, flush=True)
time.sleep(600)
"""

WRAPPER = """
import os, sys
from attnsim.cli.supervise import supervise
sys.exit(supervise([sys.executable, "-c", sys.argv[1], sys.argv[2]], dict(os.environ), ".",
                   grace=float(sys.argv[3])))
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def stuck_run(tmp_path, grace: float):
    import subprocess
    import sys

    lock = tmp_path / ".attnsim-run.lock"
    run = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, STUCK, str(lock), str(grace)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    job = int(run.stdout.readline())
    return run, job, lock


def test_sigterm_ends_a_deadlocked_run_and_releases_the_lock(tmp_path):
    """The issue's case: SIGTERM deadlocked Snakemake in 3 of 10 tries, holding attnsim's run
    lock; only SIGKILL ended it. `attnsim run` passes SIGTERM on, then kills the session."""
    import fcntl

    run, job, lock = stuck_run(tmp_path, grace=1.0)
    started = time.monotonic()
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=30)
    assert time.monotonic() - started < 5
    assert run.returncode == 128 + signal.SIGTERM
    assert err.splitlines() == [
        "attnsim: error: the run was stopped (SIGTERM) and Snakemake had not exited 1 s later: "
        "it and its jobs were killed, the store's lock is released; rerun to continue"
    ]
    assert not alive(job)
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if still held
    os.close(fd)


def test_sigkill_of_attnsim_run_kills_snakemake_too(tmp_path):
    import fcntl

    run, job, lock = stuck_run(tmp_path, grace=60.0)
    run.kill()
    run.wait(timeout=30)
    deadline = time.monotonic() + 10
    fd = os.open(lock, os.O_RDWR)
    while True:  # Snakemake (the flock's holder) dies with attnsim run
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            assert time.monotonic() < deadline, "Snakemake outlived attnsim run"
            time.sleep(0.05)
    os.close(fd)
    os.kill(job, signal.SIGKILL)  # its job was orphaned, as a job of a SIGKILLed Snakemake is


def test_a_snakemake_that_exits_on_sigterm_is_not_killed(tmp_path):
    import subprocess
    import sys

    run = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRAPPER,
            "import time; print(0, flush=True); time.sleep(60)",
            "x",
            "30",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run.stdout.readline()
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=10)
    assert run.returncode == 128 + signal.SIGTERM and err == ""


# --- a killed top-up (issue 52 item 1) -----------------------------------------------------------


def top_up_config(trials: int) -> dict:
    settings = config(chunk_size=8)
    settings["experiments"]["robustness"]["trials"] = trials
    return settings


def test_a_killed_top_up_loses_no_trials(tmp_path, reference):
    """The issue's data loss: raise `trials`, SIGKILL the run's process group during the top-ups'
    simulate jobs; its jobs run on and finish. The rerun deleted the stored chunks at its start,
    then Snakemake deleted the top-ups as incomplete: every trial of the experiment was gone.
    Now the dead run's jobs write nothing and the stored chunks stay until their replacements
    are whole: the rerun ends as a fresh run at the new count. (A job that outlives its run
    while a later run holds the store: tests/store/test_store_lock.py.)"""
    workdir = checkout(tmp_path).resolve()
    write_config(workdir, top_up_config(20))
    first = attnsim_run(workdir, str(SUMMARY))  # the stored chunks (figures: the rerun's)
    assert first.wait(timeout=300) == 0, first.stdout.read()
    stored = sorted(chunks(workdir))
    write_config(workdir, top_up_config(200))  # the reference's trials, in rounds of 20
    killed = attnsim_run(workdir)
    deadline = time.monotonic() + 120
    while not simulate_jobs(workdir):
        assert killed.poll() is None, killed.stdout.read()
        assert time.monotonic() < deadline, "no simulate job started"
        time.sleep(0.05)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert simulate_jobs(workdir)  # the dead run's jobs run on
    while simulate_jobs(workdir):
        time.sleep(0.1)
    assert sorted(chunks(workdir)) == stored  # and write nothing
    rerun = attnsim_run(workdir)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert point_rows(workdir) == reference
    assert not any(path.exists() for path in stored)  # replaced, once the top-ups were whole
