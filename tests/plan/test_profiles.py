"""Profiles by name, anywhere (issue 51 item 3): `--workflow-profile` is an existing folder, else
a profile attnsim ships (`slurm`), else one line listing the names; a missing executor plugin is
one line with the install command; the plan prints the profile in effect."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import yaml
from helpers.configs import small_config
from helpers.workflow import python_first_on_path

from attnsim.cli.runner import translate
from attnsim.errors import ConfigError
from attnsim.plan import profiles


def test_a_name_is_a_packaged_profile_from_any_folder(tmp_path):
    assert "slurm" in profiles.names() and "default" in profiles.names()
    assert profiles.resolve("slurm", tmp_path) == profiles.packaged() / "slurm"
    mine = tmp_path / "slurm"  # a folder of that name where the command runs comes first
    mine.mkdir()
    assert profiles.resolve("slurm", tmp_path) == mine
    args = translate(["--workflow-profile", "slurm", "-n"], tmp_path)
    assert args[args.index("--workflow-profile") + 1] == str(mine.resolve())
    (tmp_path / "x").mkdir()
    assert translate(["--workflow-profile=x"], tmp_path)[-1].endswith("/x")


def test_a_profile_that_is_neither_a_folder_nor_a_name_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as error:
        profiles.resolve("workflow/profiles/slurm", tmp_path)  # docs' path, outside a clone
    message = str(error.value)
    assert "no such folder" in message and "default, slurm" in message and "\n" not in message
    assert profiles.resolve("none", tmp_path) is None  # Snakemake's own: no profile


def test_a_missing_executor_plugin_is_an_install_hint(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "snakemake_executor_plugin_slurm" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install 'attnsim\[slurm\]'"):
        translate(["--workflow-profile", "slurm"], tmp_path)


def test_remote_executors_are_told_apart(tmp_path):
    assert profiles.remote_executor(["--workflow-profile", "slurm"], tmp_path)
    assert not profiles.remote_executor(["--workflow-profile", "default"], tmp_path)
    assert profiles.remote_executor(["--executor", "slurm"], tmp_path)
    assert not profiles.remote_executor(["--cores", "2"], tmp_path)


@pytest.mark.slow
def test_plan_in_a_bare_folder_uses_and_names_the_slurm_profile(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(small_config()))
    command = [sys.executable, "-m", "attnsim.cli.main", "plan"]
    run = subprocess.run(
        [*command, "--workflow-profile", "slurm"],
        cwd=tmp_path,
        env=python_first_on_path(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "job_minutes = 30" in run.stdout and "max_jobs = 2,000" in run.stdout
    assert "profile: slurm (" in run.stdout
    wrong = subprocess.run(
        [*command, "--workflow-profile", "nothere"],
        cwd=tmp_path,
        env=python_first_on_path(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.count("\n") == 1 and "default, slurm" in wrong.stderr
