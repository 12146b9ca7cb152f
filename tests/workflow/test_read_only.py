"""Read-only paths write nothing: a dry run, `--lint`, `attnsim show`, `attnsim query` and `attnsim
claims` leave results/ byte-identical (a dead writer's temp file included); the run itself sweeps
that file."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from helpers.configs import small_config
from helpers.workflow import snakemake, tree, write_config

pytestmark = pytest.mark.slow


def dead_pid() -> int:
    """A pid that is not running (a finished child's)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


def test_read_only_commands_leave_the_store_as_it_was(tmp_path):
    config = small_config(chunk_size=16)  # one simulate job per run: the jobs are not the subject
    write_config(tmp_path, config)
    snakemake(tmp_path, "--cores", "2")
    folder = next((tmp_path / "results/store/trials").glob("kind=*/experiment=*"))
    orphan = folder / f".chunk-0000000000000000.parquet.{socket.gethostname()}.{dead_pid()}.tmp"
    orphan.write_bytes(b"half a file")
    figures = next((tmp_path / "results/figures").iterdir())  # a killed figures job's, and claims'
    strays = [
        figures / f".{name}.{socket.gethostname()}.{dead_pid()}.tmp"
        for name in ("robustness_error.pdf", "robustness_error.png")
    ]
    strays.append(tmp_path / f"results/.claims.md.{socket.gethostname()}.{dead_pid()}.tmp")
    for stray in strays:
        stray.write_bytes(b"half a figure")
    # pending points: planning has work to do
    config["experiments"]["robustness"]["grid"]["n"].append(32)
    write_config(tmp_path, config)
    before = tree(tmp_path)
    snakemake(tmp_path, "-n", "--cores", "2")
    snakemake(tmp_path, "--lint", check=False)
    env = dict(
        os.environ, PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"
    )
    for args in (
        ["show"],
        ["query", "SELECT count(*) FROM trials"],
        ["claims"],
        ["claims", "--diff", "results"],
        ["verify"],
        ["cite", "entropy_in_bounds"],
        ["decide", "--budget", "1", "--dry-run"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "attnsim.cli.main", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.returncode in (0, 1), (args, result.stderr)  # 1: verify found a change
    assert tree(tmp_path) == before and orphan.exists()
    snakemake(tmp_path, "--cores", "2")
    assert not orphan.exists(), "the run sweeps temp files of dead writers"
    assert not [s for s in strays if s.exists()], "figures' and claims' too (issue 41 item 8)"
