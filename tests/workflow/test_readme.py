"""The README's promises: its two commands, its generated column tables, and its examples as
written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers.configs import REPO, small_config
from helpers.workflow import snakemake, write_config

README = (REPO / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_ci_runs_the_readme_test_command():
    """CI installs as the README says and runs its test command in stages, each the command with
    a marker selection; together the stages select every test."""
    test_command = next(b for b in blocks("bash") if "pytest" in b).strip().splitlines()[-1]
    *install, command = test_command.split(" && ")
    ci = (REPO / ".ci/run").read_text()
    assert " && ".join(install) in ci.splitlines()
    stages = re.findall(r"^stage ([\w-]+) (.*)$", ci, flags=re.M)
    assert [name for name, _ in stages] == ["lint", "types", "unit", "end-to-end"]
    selections = [run.removeprefix(f"{command} ") for _, run in stages if run.startswith("pytest")]
    assert len(selections) == 3 and all(s.startswith("-m ") for s in selections)
    assert selections == ["-m lint", '-m "not slow and not lint"', '-m "slow and not lint"']
    run_command = next(b for b in blocks("bash") if "attnsim run" in b).strip().splitlines()[-1]
    assert run_command.endswith("attnsim run")


@pytest.mark.slow
def test_python_and_cli_examples_work_as_written(tmp_path):
    write_config(tmp_path, small_config())
    snakemake(tmp_path, "--cores", "2")
    env = dict(
        os.environ, PATH=f"{sys.executable.rsplit('/', 1)[0]}{os.pathsep}{os.environ['PATH']}"
    )
    for code in blocks("python"):
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env
        )
        assert result.returncode == 0, f"{code}\n{result.stderr}"
    commands = [
        line for b in blocks("bash") for line in b.splitlines() if line.startswith("attnsim query")
    ]
    assert len(commands) >= 3
    for line in commands:
        line = line.split("  #")[0]
        result = subprocess.run(
            line, shell=True, cwd=tmp_path, capture_output=True, text=True, env=env
        )
        assert result.returncode == 0, f"{line}\n{result.stderr}"
