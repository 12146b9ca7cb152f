"""Running `python -m benchmarks` from the tests: one subprocess, its output in a folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.configs import REPO


def run_benchmarks(output: Path, *args: str, cores: int = 2) -> str:
    """`python -m benchmarks ARGS --cores CORES --output OUTPUT` from the repository root; fails
    the test with the tail of its output if it fails; its standard output."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", *args, "--cores", str(cores), "--output", str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout
