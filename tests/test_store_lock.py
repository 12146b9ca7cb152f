"""One run per store (issue 22 item 5): two working directories sharing one results/ (a symlink,
a shared project folder) cannot run at once; the second is refused in one line, writes nothing
into the store, and runs normally once the first is done."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from helpers.configs import small_config
from helpers.workflow import REPO, snakemake, write_config

from attnsim.errors import StoreError
from attnsim.store import lock


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


@pytest.mark.slow
def test_a_second_run_on_a_symlinked_store_is_refused_while_the_first_holds_it(tmp_path):
    shared = tmp_path / "shared-results"
    shared.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    env = dict(
        os.environ,
        PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    # both ask the same sweep (so planning lets the second through), slow enough that the first
    # still holds the store when the second starts
    config = small_config(seed=7)
    config["experiments"]["robustness"]["trials"] = 20000
    for workdir in (first, second):
        write_config(workdir, config)
        (workdir / "results").symlink_to(shared, target_is_directory=True)
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(REPO / "workflow/Snakefile"),
            "-d",
            str(first),
            "--cores",
            "1",
        ],
        cwd=first,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        lock_file = shared / lock.LOCK_NAME
        while time.monotonic() < deadline and not (
            lock_file.exists() and str(run.pid) in lock_file.read_text()
        ):
            assert run.poll() is None, run.communicate()
            time.sleep(0.2)
        refused = snakemake(second, "--cores", "1", check=False)
        lines = refused.stderr.strip().splitlines()
        needle = [line for line in lines if line.startswith("attnsim: error:")]
        assert refused.returncode != 0 and len(needle) == 1, refused.stderr
        assert (
            "another run is using this store" in needle[0]
            and f"pid {run.pid}" in needle[0]
            and str(first) in needle[0]
        )
        assert (
            "rule simulate" not in refused.stdout + refused.stderr
        )  # no job of the second run started
        assert run.wait(timeout=600) == 0, run.communicate()[1][-2000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    after = snakemake(
        second, "--cores", "1"
    )  # once the first is done, the second runs (nothing left)
    assert after.returncode == 0
