"""One run per store (issue 22 item 5): two working directories sharing one results/ (a symlink,
a shared project folder) cannot run at once; the second is refused in one line, writes nothing
into the store, and runs normally once the first is done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.configs import small_config
from helpers.workflow import python_first_on_path, snakemake, snakemake_command, write_config

from attnsim.errors import StoreError
from attnsim.store import lock

SUMMARY = "results/store/summary/kind=noisy_attention/experiment=robustness/summary.parquet"


def test_the_lock_is_per_resolved_store_and_names_its_holder(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results").symlink_to(shared, target_is_directory=True)
    path = lock.acquire(tmp_path / "a" / "results")
    try:
        assert path == shared.resolve() / lock.LOCK_NAME
        code = (
            "import sys; from attnsim.store import lock; from attnsim.errors import StoreError\n"
            "try:\n    lock.acquire(sys.argv[1])\nexcept StoreError as e:\n    print(e); "
            "sys.exit(3)\n"
        )
        other = subprocess.run(
            [sys.executable, "-c", code, str(shared)], capture_output=True, text=True
        )
        assert (
            other.returncode == 3
            and f"another run is using this store (pid {os.getpid()} on " in other.stdout
        )
        assert f"in {os.getcwd()}" in other.stdout
    finally:
        lock.release(tmp_path / "a" / "results")
    lock.acquire(shared)  # free again
    lock.release(shared)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from attnsim.store import lock; lock.acquire({str(tmp_path)!r}); print('held', "
            "flush=True); import time; time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match="another run is using this store"):
            lock.acquire(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    lock.acquire(tmp_path)
    lock.release(tmp_path)


def holds_flock(pid: int, path: Path) -> bool:
    """Whether process `pid` holds a flock on `path` (/proc/locks: read, never taken)."""
    if not path.exists():
        return False
    inode = path.stat().st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()  # 1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF
        if "FLOCK" in parts and "->" not in parts and parts[-3].rsplit(":", 1)[-1] == str(inode):
            if int(parts[-4]) == pid:
                return True
    return False


@pytest.mark.slow
def test_a_second_run_on_a_symlinked_store_is_refused_while_the_first_holds_it(tmp_path):
    shared = tmp_path / "shared-results"
    shared.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    # both ask the same sweep (so planning lets the second through), of its summary (the store
    # is the subject here, not the figures and claims drawn from it)
    config = small_config(seed=7, chunk_size=16)
    for workdir in (first, second):
        write_config(workdir, config)
        (workdir / "results").symlink_to(shared, target_is_directory=True)
    run = subprocess.Popen(
        snakemake_command(first, SUMMARY, "--cores", "1"),
        cwd=first,
        env=python_first_on_path(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    paused = False
    try:
        deadline = time.monotonic() + 120
        lock_file = shared / "store" / lock.LOCK_NAME
        while time.monotonic() < deadline and not holds_flock(run.pid, lock_file):
            assert run.poll() is None, run.communicate()
            time.sleep(0.1)
        # the first run paused (it and its jobs) while it holds the store: however quick its
        # sweep and however slow the second's start, the second meets the held lock
        os.killpg(run.pid, signal.SIGSTOP)
        paused = True
        assert holds_flock(run.pid, lock_file), "the first run ended before it was paused"
        refused = snakemake(second, "--cores", "1", check=False)
        os.killpg(run.pid, signal.SIGCONT)
        paused = False
        lines = refused.stderr.strip().splitlines()
        needle = [line for line in lines if line.startswith("attnsim: error:")]
        assert refused.returncode != 0 and len(needle) == 1, refused.stderr
        assert (
            "another run is using this store" in needle[0]
            and f"pid {run.pid}" in needle[0]
            and str(first) in needle[0]
        )
        # no job of the second run started
        assert "rule simulate" not in refused.stdout + refused.stderr
        assert run.wait(timeout=600) == 0, run.communicate()[1][-2000:]
    finally:
        if paused:
            os.killpg(run.pid, signal.SIGCONT)
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    # once the first is done, the second runs (nothing left)
    after = snakemake(second, SUMMARY, "--cores", "1")
    assert after.returncode == 0


@pytest.mark.parametrize("holder", ["symlink", "dangling symlink", "directory", "fifo"])
def test_anything_but_a_file_at_the_lock_path_is_refused_nothing_truncated(tmp_path, holder):
    """The issue's case: a symbolic link at results/.attnsim-run.lock pointing at a file made the
    run truncate that file and write the lock's JSON into it; a directory gave a traceback."""
    results = tmp_path / "results" / "store"
    results.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path = results / lock.LOCK_NAME
    if holder == "symlink":
        path.symlink_to(victim)
    elif holder == "dangling symlink":
        path.symlink_to(tmp_path / "nowhere")
    elif holder == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    with pytest.raises(StoreError) as refused:
        lock.acquire(results)
    message = str(refused.value)
    assert message.startswith(f"{path}: the run lock") and "\n" not in message
    assert "remove it and rerun" in message
    assert victim.read_text() == "precious\n" and not (tmp_path / "nowhere").exists()
    assert str(path) not in lock._HELD


@pytest.mark.slow
def test_a_run_with_a_symlink_at_the_lock_path_stops_in_one_line(tmp_path):
    write_config(tmp_path, small_config())
    (tmp_path / "results" / "store").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "results" / "store" / lock.LOCK_NAME).symlink_to(victim)
    refused = snakemake(tmp_path, "--cores", "1", check=False)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("attnsim: error:")]
    assert refused.returncode != 0 and len(errors) == 1, refused.stderr
    assert "the run lock's path holds a symbolic link" in errors[0]
    assert "Traceback" not in refused.stderr and victim.read_text() == "precious\n"
    assert not list((tmp_path / "results").rglob("chunk-*.parquet"))


def hold(root):
    """A process holding the run lock of the store at `root` (as a run does while it plans and
    runs) until killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from attnsim.store import lock; lock.acquire({str(root)!r}); print('held', "
            "flush=True); import time; time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.slow
def test_a_run_on_a_shared_store_is_refused_while_another_holds_it(tmp_path):
    """The issue's case: `results/store` (not `results/`) symlinked to one store from two
    working directories with seeds 7 and 8 both ran and mixed their chunks. The lock now lives
    in the store's real path: while another run holds it, a run stops in one line before any
    job, and afterwards planning refuses the other seed."""
    shared = tmp_path / "shared-store"
    shared.mkdir()
    workdirs = {7: tmp_path / "seven", 8: tmp_path / "eight"}
    for seed, workdir in workdirs.items():
        write_config(workdir, small_config(seed=seed))
        (workdir / "results").mkdir()
        (workdir / "results" / "store").symlink_to(shared, target_is_directory=True)
    holder = hold(workdirs[7] / "results" / "store")  # the first run, planning or running
    try:
        refused = snakemake(workdirs[8], "--cores", "1", check=False)
    finally:
        holder.kill()
        holder.wait()
    errors = [line for line in refused.stderr.splitlines() if line.startswith("attnsim: error:")]
    assert refused.returncode != 0 and len(errors) == 1, refused.stderr
    assert "another run is using this store" in errors[0] and f"pid {holder.pid}" in errors[0]
    assert "rule simulate" not in refused.stdout and not list(shared.rglob("*.parquet"))
    snakemake(workdirs[7], SUMMARY, "--cores", "1")  # the first run, alone (its store)
    mixed = snakemake(workdirs[8], "--cores", "1", check=False)  # then the other seed: refused
    assert mixed.returncode != 0 and "seed 7" in mixed.stderr and "seed 8" in mixed.stderr
    seeds = {
        pq.read_metadata(p).metadata[b"attnsim"].count(b'"seed": 7')
        for p in shared.rglob("chunk-*.parquet")
    }
    assert seeds == {1}  # every chunk of seed 7, none of seed 8


def test_a_file_where_the_store_must_be_is_one_line(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "store").write_text("not a folder\n")
    with pytest.raises(StoreError) as refused:
        lock.acquire(tmp_path / "results" / "store")
    assert "the store must be a folder" in str(refused.value) and "\n" not in str(refused.value)
    assert (tmp_path / "results" / "store").read_text() == "not a folder\n"


def test_a_run_whose_store_changed_after_it_planned_is_refused(tmp_path):
    """The issue's plan race: a run that planned for 25 s took the lock after a second, faster
    run had finished, and wrote its chunks beside the other's from its stale plan. What the plan
    was read from is compared with the store under the lock."""
    root = tmp_path / "results" / "store"
    folder = root / "trials" / "kind=k" / "experiment=e"
    folder.mkdir(parents=True)
    (folder / "chunk-0000000000000001.parquet").write_bytes(b"x")
    planned = lock.state(root)
    (folder / "chunk-0000000000000002.parquet").write_bytes(b"y")  # the faster run's chunk
    with pytest.raises(StoreError) as refused:
        lock.acquire(root, planned_from=planned)
    assert "changed by another run while this one planned" in str(refused.value)
    assert str(lock.lock_path(root)) not in lock._HELD
    lock.acquire(root, planned_from=lock.state(root))  # planned again: runs
    lock.release(root)


def test_a_full_disk_when_the_lock_names_its_holder_does_not_stop_the_run(tmp_path, monkeypatch):
    """ENOSPC on the holder's details (host, pid) gave a traceback at the run's start; the flock
    is the lock, and the run's first store write names the full disk in one line."""
    import errno

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    path = lock.acquire(tmp_path / "store")
    try:
        code = "from attnsim.store import lock; import sys; lock.acquire(sys.argv[1])"
        second = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "store")], capture_output=True, text=True
        )
        assert "another run is using this store (its details unreadable)" in second.stderr
    finally:
        lock.release(tmp_path / "store")
    assert path.exists()


# --- a job's write checks its run (issue 52 item 1) -------------------------------------------


def test_a_run_writes_a_fresh_token_that_its_jobs_renames_check(tmp_path):
    """A chunk enters the store only while the run that planned it holds the lock: with its own
    token, yes; a dead run's (the lock free) or another run's, never, and no temp file stays."""
    out = tmp_path / "trials" / "kind=k" / "experiment=e" / "chunk-0.parquet"
    out.parent.mkdir(parents=True)
    lock.acquire(tmp_path)
    token = lock.token(tmp_path)
    try:
        assert token and f'"token": "{token}"' in (tmp_path / lock.LOCK_NAME).read_text()
        with lock.commit(tmp_path, token, out):
            out.write_text("renamed here")
        lock.check_run(tmp_path, token, out)
        with pytest.raises(StoreError, match="another run holds it now"):
            lock.check_run(tmp_path, "0" * 16, out)
    finally:
        lock.release(tmp_path)
    assert lock.token(tmp_path) is None
    for attempt in (
        lambda: lock.check_run(tmp_path, token, out),
        lambda: lock.commit(tmp_path, token, out).__enter__(),
    ):
        with pytest.raises(StoreError) as dropped:
            attempt()
        assert str(dropped.value) == (
            f"{out}: not written, its run (token {token}) no longer holds the store (the run "
            "has ended); a rerun computes it"
        )
    lock.acquire(tmp_path)  # a new run: a new token, the old one's writes still refused
    try:
        assert lock.token(tmp_path) != token
        with pytest.raises(StoreError, match="another run holds it now"):
            lock.check_run(tmp_path, token, out)
    finally:
        lock.release(tmp_path)


def test_a_dead_runs_job_writes_nothing_into_the_store(tmp_path):
    """run_chunk with the token of a run that has ended: refused before it computes, and a write
    whose run ends while it computes is dropped at the rename, its temp file removed."""
    from helpers.configs import small_config

    from attnsim.config.load import load
    from attnsim.jobs import simulate
    from attnsim.plan.sweep import plan_all
    from attnsim.store import parquet

    settings = load(small_config())
    plan = plan_all(settings, tmp_path)["robustness"]
    spec = plan.spec(plan.pending[0])
    out = parquet.chunk_path(tmp_path, plan.kind, plan.name, spec.id)
    holder = hold(tmp_path)
    token = json.loads((tmp_path / lock.LOCK_NAME).read_text())["token"]
    original = simulate.simulate_points

    def killed_meanwhile(*args, **kwargs):
        holder.kill()
        holder.wait()
        return original(*args, **kwargs)

    try:
        simulate.simulate_points = killed_meanwhile
        with pytest.raises(StoreError, match="no longer holds the store"):
            simulate.run_chunk(spec, out, run=token)
    finally:
        simulate.simulate_points = original
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert not out.exists() and not list(out.parent.glob(".*.tmp"))
    with pytest.raises(StoreError, match="the run has ended"):
        simulate.run_chunk(spec, out, run=token)
    simulate.run_chunk(spec, out)  # a job outside any run (no token): written as ever
    assert out.exists()
