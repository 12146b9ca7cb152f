"""Tracebacks that became one line (issue 41 item 8): deeply nested YAML (a RecursionError in
`check-config`, `run -n` and `plan`) and a non-UTF-8 byte in the SQL argument (a TypeError)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnsim.cli.main import main

NESTED = "experiments: " + "[" * 5000 + "]" * 5000 + "\n"  # 10 KB, 5,000 nested lists


@pytest.mark.parametrize("command", [["check-config", "config.yaml"], ["run", "-n"], ["plan"]])
def test_deeply_nested_yaml_is_one_line(tmp_path, command):
    (tmp_path / "config.yaml").write_text(NESTED)
    env = dict(
        os.environ, PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"
    )
    done = subprocess.run(
        [sys.executable, "-m", "attnsim.cli.main", *command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "attnsim: error: config.yaml: line 1: lists or mappings nested more than 64 deep; a "
        "config needs a few levels"
    )
    assert not (tmp_path / "results").exists()


def test_a_non_utf8_byte_in_the_sql_argument_is_one_line(tmp_path, monkeypatch, capsys):
    """A shell passes the raw byte 0xff; Python's argv holds it as the surrogate U+DCFF."""
    monkeypatch.chdir(tmp_path)
    sql = os.fsdecode(b"SELECT '\xff' AS x")
    assert main(["query", sql]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "attnsim: error: the SQL argument is not UTF-8 (byte 0xff at character 9); write it in "
        "UTF-8"
    ]


def test_the_rules_accept_every_kind_name_the_config_accepts():
    """The issue's case: a plugin kind named with a digit passed check-config, then no rule
    matched its files (the rules' wildcard was `[a-z_]+`)."""
    import re

    import yaml

    from attnsim.config.load import SCHEMA_FILE

    repo = Path(__file__).resolve().parents[1]
    schema = yaml.safe_load((repo / "src/attnsim/config" / SCHEMA_FILE).read_text())
    allowed = schema["$defs"]["experiment"]["properties"]["kind"]["pattern"]
    common = (repo / "workflow/rules/common.smk").read_text()
    wildcard = re.search(r'^\s*kind="([^"]+)"', common, re.MULTILINE).group(1)
    for name in ("noisy_attention", "kind2", "k9_x", "a"):
        assert re.fullmatch(allowed, name) and re.fullmatch(wildcard, name), name
    assert f"^{wildcard}$" == allowed


def test_a_summary_of_another_experiment_in_a_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """The issue's case: a foreign summary file in an experiment's folder gave `claims` a KeyError
    traceback (its columns are another kind's); `attnsim summary` another."""
    import shutil

    import yaml
    from helpers.configs import small_config

    from attnsim.config.load import load
    from attnsim.jobs.collect import collect
    from attnsim.jobs.simulate import run_chunk
    from attnsim.plan.sweep import experiment_json, plan_experiment
    from attnsim.store import parquet as store

    monkeypatch.chdir(tmp_path)
    config = small_config()
    config["experiments"]["entropy"] = {
        "kind": "temperature_entropy",
        "trials": 4,
        "grid": {"n": [8], "d": [3], "tau": [1.0]},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    settings, root = load(config), tmp_path / "results" / "store"
    for name in settings.experiments:
        plan = plan_experiment(settings, name, root)
        paths = [store.chunk_path(root, plan.kind, name, c) for c in plan.chunks]
        for chunk, path in zip(plan.chunks, paths, strict=True):
            run_chunk(plan.spec(chunk), path)
        collect(experiment_json(settings, name), paths, store.summary_path(root, plan.kind, name))
    ours = store.summary_path(root, "noisy_attention", "robustness")
    shutil.copyfile(store.summary_path(root, "temperature_entropy", "entropy"), ours)
    before = ours.read_bytes()
    for command in (["claims"], ["summary"]):
        assert main(command) == 2, command
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"attnsim: error: {ours.relative_to(tmp_path)}: the summary of experiment 'entropy' "
            "(kind temperature_entropy), not of this folder's; delete it (or move it back) and "
            "rerun"
        ], err
    assert ours.read_bytes() == before
