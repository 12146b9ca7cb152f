"""Two runs on one results directory cannot corrupt each other; queries during a run see only whole
files."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.workflow import attnsim_run, checkout, chunks, point_rows, write_config
from helpers.workflow import interrupt_config as config

from attnsim.errors import QueryError
from attnsim.store import parquet as store
from attnsim.store import query

pytestmark = pytest.mark.slow


def held_run(workdir: Path, release: Path, *args: str) -> subprocess.Popen:
    """`attnsim run` whose chunk jobs, once their chunk is written, wait until `release` exists:
    the workflow's `attnsim simulate` finds a wrapper first on PATH."""
    bin_dir = workdir.parent / f"{workdir.name}-bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "attnsim"
    real = f"{shlex.quote(sys.executable)} -m attnsim.cli.main"
    wrapper.write_text(
        f'#!/bin/sh\n{real} "$@" || exit\n[ "$1" = simulate ] || exit 0\nwhile [ ! -e '
        f"{shlex.quote(str(release))} ]; do sleep 0.05; done\n"
    )
    wrapper.chmod(0o755)
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "attnsim.cli.main", "run", *args], cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,  # noqa: E501
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def test_second_run_is_refused_while_first_completes_and_queries_stay_consistent(tmp_path):
    release = tmp_path / "release"
    write_config(checkout(tmp_path), config(chunk_size=2))
    # each chunk job waits, once written, for `release`
    first = held_run(tmp_path, release, "--cores", "1")
    try:
        deadline = time.monotonic() + 120
        while not chunks(tmp_path):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        # The first run now certainly holds the lock: its first job has written its chunk and waits.
        second = attnsim_run(tmp_path, "--cores", "1")  # the stale-lock check must see the live run
        out2, _ = second.communicate(timeout=120)
        errors = [line for line in out2.splitlines() if line.startswith("attnsim: error:")]
        assert second.returncode != 0 and len(errors) == 1, out2  # Snakemake's 4 lines before
        assert "another run is going on in this folder" in errors[0], out2
        assert first.poll() is None

        query_sql = "SELECT point_id, count(*) AS trials FROM robustness_trials GROUP BY ALL"
        frame = query.run(tmp_path / "results/store", query_sql)  # mid-run, with exactly one chunk
        seen = [len(frame)]
        assert seen == [2] and set(frame["trials"]) == {200}
        release.touch()
        while first.poll() is None:  # query while chunks are being written: never a half file
            try:
                frame = query.run(tmp_path / "results/store", query_sql)
            except QueryError as error:
                assert "no results yet" in str(error)
                continue
            assert set(frame["trials"]) == {200}
            seen.append(len(frame))
            time.sleep(0.1)
        out1, _ = first.communicate()
    finally:
        release.touch()
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate()
    assert first.returncode == 0, out1
    assert seen == sorted(seen)  # results only ever grow
    rows = point_rows(tmp_path)
    assert len(rows) == 16 and len(chunks(tmp_path)) == 8
    for path in store.table_files(tmp_path / "results/store"):
        store.read_meta(path)  # every file complete and ours
