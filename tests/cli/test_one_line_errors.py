"""Tracebacks that became one line (issue 41 item 8): deeply nested YAML (a RecursionError in
`check-config`, `run -n` and `plan`) and a non-UTF-8 byte in the SQL argument (a TypeError)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.configs import REPO

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

    schema = yaml.safe_load((REPO / "src/attnsim/config" / SCHEMA_FILE).read_text())
    allowed = schema["$defs"]["experiment"]["properties"]["kind"]["pattern"]
    common = (REPO / "workflow/rules/common.smk").read_text()
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


def test_only_dead_writers_temp_files_are_swept(tmp_path):
    """A killed figures job left `.<figure>.pdf.<host>.<pid>.tmp` files nothing swept; the run's
    sweep covers the whole workspace, and leaves a live writer's and another host's alone."""
    import socket

    from attnsim.files import sweep_dead_temps

    host = socket.gethostname()
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    dead = int(child.stdout)
    folder = tmp_path / "figures" / "robustness"
    folder.mkdir(parents=True)
    stray = folder / f".robustness_error.pdf.{host}.{dead}.tmp"
    live = folder / f".robustness_error.png.{host}.{os.getpid()}.tmp"
    elsewhere = folder / f".robustness_error.png.another-host.{dead}.tmp"
    kept = folder / "robustness_error.pdf"
    for path in (stray, live, elsewhere, kept):
        path.write_bytes(b"x")
    assert sweep_dead_temps(tmp_path) == [stray]
    assert [p.exists() for p in (stray, live, elsewhere, kept)] == [False, True, True, True]


def _failing_write(code: int):
    """A write that leaves half its temp file, then fails with `code`, as a full disk does."""

    def write(path, *args, **kwargs):
        Path(path).write_bytes(b"half")
        raise OSError(code, os.strerror(code))

    return write


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (28, "could not be written, no space left on device; "),  # ENOSPC
        (30, "could not be written, the folder is on a read-only file system; nothing was "),
        (13, "could not be written, permission denied (a read-only folder?); nothing was "),
    ],
)
@pytest.mark.parametrize("writer", ["claims.md", "figure", "claims.parquet"])
def test_a_refused_write_is_one_line_naming_the_file(tmp_path, monkeypatch, code, words, writer):
    """A disk filling during figures printed `OSError: [Errno 28]` without the path; a read-only
    results folder a traceback. Each writer's old file is kept whole and no temp file stays."""
    import matplotlib.figure
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attnsim import files
    from attnsim.errors import WriteError
    from attnsim.figures import style
    from attnsim.store import parquet

    target = tmp_path / "results" / (f"{writer}" if writer != "figure" else "fig.png")
    target.parent.mkdir()
    target.write_bytes(b"the old file")
    if writer == "claims.md":
        monkeypatch.setattr(Path, "write_text", _failing_write(code))
        write = lambda: files.write_text(target, "new claims")  # noqa: E731
    elif writer == "figure":
        monkeypatch.setattr(
            matplotlib.figure.Figure, "savefig", lambda self, p, **k: _failing_write(code)(p)
        )
        write = lambda: style.save(matplotlib.figure.Figure(), target)  # noqa: E731
    else:
        monkeypatch.setattr(pq, "write_table", lambda table, p, **k: _failing_write(code)(p))
        write = lambda: parquet.write_atomic(pa.table({"x": [1.0]}), target, {})  # noqa: E731
    with pytest.raises(WriteError) as error:
        write()
    message = str(error.value)
    assert message.startswith(f"{target}: {words}") and "\n" not in message, message
    assert target.read_bytes() == b"the old file"
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_a_read_only_workspace_is_one_line_before_any_job(tmp_path, monkeypatch):
    """A read-only results folder gave Snakemake's multi-line ProtectedOutputException (in a dry
    run and a real one). Root writes past mode bits, so the folder is made read-only here by
    os.access's answer, as a read-only mount or `chmod -R a-w` gives it."""
    from attnsim import files
    from attnsim.errors import WriteError

    figures = tmp_path / "results" / "figures" / "robustness"
    figures.mkdir(parents=True)
    (tmp_path / "results" / "store").mkdir()
    own = ("store", "figures")
    files.check_writable(tmp_path / "results", own)  # writable: nothing to say
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and Path(p) != figures)
    with pytest.raises(WriteError) as error:
        files.check_writable(tmp_path / "results", own)
    assert str(error.value) == (
        f"{figures}: a read-only folder, and this run writes in it; make it writable "
        f"(chmod -R u+w {tmp_path / 'results' / 'figures'}) or run in another workspace "
        "(--workspace DIR)"
    )


def test_a_read_only_workspace_given_by_the_user_is_never_told_to_chmod_it(tmp_path, monkeypatch):
    """Issue 52: `attnsim run -n --workspace /` was refused, and told to `chmod -R u+w /`. A
    workspace that is not writable itself is told to pick another; the check walks only the
    folders a run writes in, not whatever else lies below the workspace."""
    from attnsim import files
    from attnsim.config.workspace import OWN_FOLDERS
    from attnsim.errors import WriteError

    elsewhere = tmp_path / "not-ours" / "deep"
    elsewhere.mkdir(parents=True)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and Path(p) != elsewhere)
    files.check_writable(tmp_path, OWN_FOLDERS)  # a read-only folder that is no run's: fine
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and Path(p) != tmp_path)
    with pytest.raises(WriteError) as error:
        files.check_writable(tmp_path, OWN_FOLDERS)
    assert str(error.value) == (
        f"{tmp_path}: a read-only folder, and this run writes in it (its workspace); give a "
        "workspace you can write in (--workspace DIR)"
    )
    assert "chmod" not in str(error.value)


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("seed=&a [*a]", "its YAML aliases (*name) expand to more than 1,000,000 values"),
        ("seed={a: 1, a: 2}", "a: key given twice"),
        ("seed=" + "[" * 100 + "1" + "]" * 100, "nested more than 64 deep"),
    ],
)
def test_an_override_value_is_read_as_a_config_file_is(tmp_path, capsys, item, needle):
    """Issue 52: `--set 'seed=&a [*a]'` (an alias of itself) ended in a RecursionError."""
    from helpers.configs import small_config
    from helpers.workflow import write_config

    config = write_config(tmp_path, small_config())
    assert main(["check-config", "--configfile", str(config), "--set", item]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnsim: error: --set {item}: ") and needle in err
    assert err.count("\n") == 1


def test_init_into_a_file_is_one_line(tmp_path, capsys):
    """Issue 52: `attnsim init <a regular file>` ended in a FileExistsError."""
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    for target in (afile, afile / "sub"):
        assert main(["init", str(target)]) == 2
        assert capsys.readouterr().err == (
            f"attnsim: error: {afile}: a file, not a folder; give attnsim init a folder to "
            "write config.yaml into (a new one, or one without a config)\n"
        )
    assert afile.read_text() == "not a folder"
    assert main(["init", str(tmp_path / "new")]) == 0 and (tmp_path / "new/config.yaml").exists()
