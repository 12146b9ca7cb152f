"""The workflow stays idiomatic: snakefmt-formatted and lint-clean (`snakemake --lint` exits 0;
the rules' software environment is workflow/envs/attnsim.yaml, for --use-conda)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.configs import REPO

# every workflow file: the top level's Snakefile, workflow/'s and its rules
RULE_FILES = [
    REPO / "Snakefile",
    REPO / "workflow/Snakefile",
    *sorted((REPO / "workflow/rules").glob("*.smk")),
]


pytestmark = pytest.mark.lint  # `pytest -m lint`: a few seconds, nothing but the linters


def test_snakefmt_clean():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "snakefmt"), "--check", *map(str, RULE_FILES)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_lint_finds_nothing():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--lint",
            "-s",
            str(REPO / "workflow/Snakefile"),
            "-d",
            str(REPO),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    lints = {
        line.strip()
        for line in (result.stdout + result.stderr).splitlines()
        if line.strip().startswith("* ")
    }
    assert result.returncode == 0 and not lints, lints


def test_python_is_ruff_clean_and_formatted():
    """`ruff check` and `ruff format --check` over src/, tests/ and benchmarks/ (configured in
    pyproject.toml)."""
    ruff = str(Path(sys.executable).parent / "ruff")
    paths = [str(REPO / d) for d in ("src", "tests", "benchmarks")]
    check = subprocess.run([ruff, "check", *paths], capture_output=True, text=True, cwd=REPO)
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = subprocess.run(
        [ruff, "format", "--check", *paths], capture_output=True, text=True, cwd=REPO
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
