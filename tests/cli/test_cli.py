"""The command line: queries, show, summary, and one-line errors with a non-zero exit."""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from helpers.configs import REPO, small_config

from attnsim.cli.main import main
from attnsim.store import parquet as store
from attnsim.testing import run_experiment


@pytest.fixture
def filled(tmp_path, monkeypatch):
    """A store holding the small config's results, and the config file, in a working directory."""
    monkeypatch.chdir(tmp_path)
    config = small_config()
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run_experiment(config, "robustness", tmp_path / "results" / "store")
    return tmp_path


def test_query_views_and_formats(filled, capsys):
    assert main(["query", "SELECT count(*) AS points FROM robustness"]) == 0
    assert "16" in capsys.readouterr().out
    assert (
        main(["query", "SELECT count(*) AS rows FROM robustness_trials", "--format", "json"]) == 0
    )
    assert json.loads(capsys.readouterr().out) == [{"rows": 320}]
    assert main(["query", "SELECT DISTINCT experiment, kind FROM summary", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["experiment,kind", "robustness,noisy_attention"]
    out = filled / "q.parquet"
    assert (
        main(["query", "SELECT * FROM provenance", "--format", "parquet", "--output", str(out)])
        == 0
    )
    assert len(pd.read_parquet(out)) == 1 + len(store.table_files(filled / "results/store"))


def test_store_opens_as_one_dataset_in_pyarrow_and_duckdb(filled):
    import duckdb
    import pyarrow.dataset as ds

    summary = ds.dataset("results/store/summary", partitioning="hive").to_table()
    assert summary.num_rows == 16
    trials = duckdb.sql(
        "SELECT kind, experiment, count(*) FROM read_parquet('results/store/trials/**/*.parquet', "
        "hive_partitioning = true) GROUP BY ALL"
    ).fetchall()
    assert trials == [("noisy_attention", "robustness", 320)]


@pytest.mark.parametrize(
    "sql,message",
    [
        (
            "SELECT * FROM nowhere",
            "query failed: Catalog Error: Table with name nowhere does not exist",
        ),
        ("SELEC 1", "query failed: Parser Error"),
        ("SELECT sq_err_mean FROM robustness_trials", "query failed: Binder Error"),
        (
            "COPY (SELECT 1) TO 'results/store/summary/x.parquet'",
            "only read-only queries (SELECT, SHOW, DESCRIBE, EXPLAIN) are allowed, got COPY",
        ),
        ("CREATE TABLE t AS SELECT 1", "only read-only queries"),
        ("SELECT 1; DROP VIEW robustness", "give exactly one SQL statement, got 2"),
        ("INSTALL httpfs", "only read-only queries"),
        ("", "give exactly one SQL statement, got 0"),
    ],
)
def test_query_errors_are_one_line(filled, capsys, sql, message):
    before = sorted(p.stat().st_mtime_ns for p in (filled / "results").rglob("*"))
    assert main(["query", sql]) == 2
    assert sorted(p.stat().st_mtime_ns for p in (filled / "results").rglob("*")) == before
    err = capsys.readouterr().err
    assert err.startswith(f"attnsim: error: {message}") and err.count("\n") == 1


def test_query_without_results_and_bad_format(tmp_path, monkeypatch, capsys, filled):
    assert main(["query", "SELECT 1", "--store", str(tmp_path / "empty")]) == 2
    assert "no results yet" in capsys.readouterr().err
    assert main(["query", "SELECT 1", "--format", "xml"]) == 2
    assert "unknown format 'xml'" in capsys.readouterr().err
    assert main(["query", "SELECT 1", "--format", "parquet"]) == 2
    assert "needs --output" in capsys.readouterr().err


def test_show_and_summary(filled, capsys):
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    assert "robustness" in out and "16 of 16 points done (100%)" in out
    assert main(["summary"]) == 0
    assert "16 points x 20 trials" in capsys.readouterr().out


def test_show_counts_partial_progress(filled, capsys):
    chunks = sorted((filled / "results/store/trials").rglob("chunk-*.parquet"))
    chunks[0].unlink()
    assert main(["show"]) == 0
    assert "13 of 16 points done" in capsys.readouterr().out


def test_bad_config_and_bad_arguments(filled, capsys):
    (filled / "bad.yaml").write_text("seed: -1\nexperiments: {}\n")
    assert main(["show", "--configfile", "bad.yaml"]) == 2
    assert capsys.readouterr().err.strip() == "attnsim: error: experiments: {} should be non-empty"
    assert main(["show", "--config", "bad.yaml"]) == 2  # --config is KEY=VALUE, in every command
    assert capsys.readouterr().err.strip().startswith("attnsim: error: --set bad.yaml: give KEY=")
    assert main(["check-config", "config.yaml"]) == 0
    assert main(["query", "--format", "json"]) == 2  # no SQL is the shell, which takes no format
    assert "--format and --output take one statement" in capsys.readouterr().err
    assert (
        main(["simulate", "--spec-file", "x.json", "--output", "x.parquet", "--threads", "0"]) == 2
    )


# --- a full disk: one line naming the file and the space it needs, no temp file left ---------


def one_point_spec(trials: int) -> str:
    from helpers.points import make_point, spec_of_points

    from attnsim.kinds import get_kind

    point = make_point(
        "noisy_attention",
        {
            "n": 16,
            "d": 4,
            "logit_scale": 1.0,
            "noise": "gaussian",
            "noise_draws": 1,
            "noise_scale": 0.5,
        },
    )
    kind = get_kind("noisy_attention")
    return spec_of_points("robustness", kind, 7, trials, (point,)).to_json()


@pytest.mark.parametrize(
    "code,words", [(errno.ENOSPC, "no space left on device"), (errno.EDQUOT, "disk quota exceeded")]
)
def test_full_disk_is_one_line_naming_file_and_space(tmp_path, monkeypatch, capsys, code, words):
    import pyarrow.parquet as pq

    real_write = pq.write_table

    def write_then_fail(table, where, **kwargs):
        # a partial temp file, as a full disk leaves one
        real_write(table.slice(0, 1), where, **kwargs)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(pq, "write_table", write_then_fail)
    output = store.chunk_path(
        tmp_path / "results/store", "noisy_attention", "robustness", "0123456789abcdef"
    )
    spec = tmp_path / "spec.json"
    spec.write_text(one_point_spec(20))
    assert main(["simulate", "--spec-file", str(spec), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        rf"attnsim: error: {re.escape(str(output))}: could not be written, {words}; it needs up "
        r"to [\d.,]+ MiB free \([\d.,]+ MiB free\); free some space and rerun\n",
        err,
    ), err
    assert [p.name for p in output.parent.iterdir()] == []


def test_other_write_errors_are_not_called_a_full_disk(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def fail(table, where, **kwargs):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(pq, "write_table", fail)
    with pytest.raises(OSError, match="I/O error"):
        store.write_atomic(pa.table({"x": [1]}), tmp_path / "x.parquet", {})
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs (needs root and mount permission; skipped otherwise)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_full_disk_for_real(tiny_disk, tmp_path):
    output = store.chunk_path(
        tiny_disk / "store", "noisy_attention", "robustness", "0123456789abcdef"
    )
    spec = tmp_path / "spec.json"
    spec.write_text(one_point_spec(100_000))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnsim.cli.main",
            "simulate",
            "--spec-file",
            str(spec),
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(
        f"attnsim: error: {output}: could not be written, no space left on device; it needs up to "
    ), result.stderr
    assert not any(line.startswith(("Traceback", "OSError")) for line in lines), result.stderr
    assert [p.name for p in output.parent.iterdir()] == []


# --- queries read the store and nothing else ----------------------------------------------


@pytest.fixture
def outside(filled):
    """Files next to the store but outside it, which a query must not read."""
    (filled / "secret.csv").write_text("token\nhunter2\n")
    pd.DataFrame({"token": ["hunter2"]}).to_parquet(filled / "secret.parquet")
    return filled


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_csv('/etc/passwd', sep = ':')",
        "SELECT * FROM read_csv('secret.csv')",
        "SELECT * FROM 'secret.csv'",
        "SELECT * FROM read_parquet('secret.parquet')",
        "SELECT * FROM read_parquet('results/store/../../secret.parquet')",
        "SELECT * FROM read_blob('results/../secret.csv')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM glob('*')",
        "SELECT * FROM read_csv('https://example.com/data.csv')",
        "SELECT * FROM read_json('s3://bucket/key.json')",
    ],
)
def test_query_reads_nothing_outside_the_store(outside, capsys, sql):
    before = sorted((p, p.stat().st_mtime_ns) for p in outside.rglob("*"))
    assert main(["query", sql]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsim: error: query failed: ") and err.count("\n") == 1, err
    assert "hunter2" not in err and "root:" not in err
    assert sorted((p, p.stat().st_mtime_ns) for p in outside.rglob("*")) == before


@pytest.mark.parametrize(
    "sql,message",
    [
        ("INSTALL httpfs", "got LOAD"),
        ("LOAD httpfs", "got LOAD"),
        ("ATTACH 'other.duckdb' AS other", "got ATTACH"),
        ("COPY robustness TO 'results/store/summary/copy.csv'", "got COPY"),
        ("SET enable_external_access = true", "got SET"),
        ("RESET lock_configuration", "got SET"),
        ("EXPLAIN ANALYZE COPY (SELECT 42) TO 'results/store/summary/x.csv'", "got EXPLAIN COPY"),
        ("EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1", "got EXPLAIN CREATE"),
        ("explain /* ! */ analyse (format json) INSTALL httpfs", "got EXPLAIN LOAD"),
    ],
)
def test_query_refuses_statements_that_write_or_reach_out(outside, capsys, sql, message):
    before = sorted((p, p.stat().st_mtime_ns) for p in outside.rglob("*"))
    assert main(["query", sql]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsim: error: ") and message in err and err.count("\n") == 1, err
    assert sorted((p, p.stat().st_mtime_ns) for p in outside.rglob("*")) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_parquet('secret.parquet')",
        "INSTALL httpfs",
        "LOAD httpfs",
        "ATTACH 'other.duckdb' AS other",
        "COPY (SELECT 1) TO 'elsewhere.csv'",
        "SET enable_external_access = true",
        "SET allowed_directories = ['/']",
        "SET autoload_known_extensions = true",
        "RESET lock_configuration",
        "SELECT * FROM query('SET enable_external_access = true')",
    ],
)
def test_connection_itself_is_confined(outside, sql):
    """Even past the read-only check, DuckDB itself refuses: external access off, settings
    locked."""
    import duckdb

    from attnsim.store.query import connect

    con = connect(outside / "results/store")
    with pytest.raises(duckdb.Error):
        con.execute(sql).fetchall()
    assert not (outside / "elsewhere.csv").exists() and not (outside / "other.duckdb").exists()
    assert con.execute(
        "SELECT current_setting('enable_external_access'), current_setting('lock_configuration')"
    ).fetchone() == (False, True)


def test_store_and_provenance_still_readable_when_confined(outside, capsys):
    for sql in [
        "SELECT count(*) FROM provenance",
        "SELECT count(*) FROM trials",
        "SELECT count(*) FROM summary",
        "EXPLAIN ANALYZE SELECT count(*) FROM trials",
        "explain /* ! */ analyse (SELECT 1); ",
        "EXPLAIN (FORMAT json) SELECT * FROM robustness",
        "SUMMARIZE robustness",
        "SHOW TABLES",
    ]:
        assert main(["query", sql]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["query", "SELECT count(*) AS files FROM provenance", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "files",
        str(1 + len(store.table_files(outside / "results/store"))),
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM read_parquet('results/store/trials/**/*.parquet')",
        "SELECT count(*) FROM glob('results/store/**/*.parquet')",
    ],
)
def test_store_files_are_read_through_the_views_only(outside, capsys, sql):
    """Only the views' checked files are readable (by their exact paths): a file read by name
    would skip the checks (a damaged chunk, a top-up's old chunk, a FIFO in the store)."""
    assert main(["query", sql]) == 2
    err = capsys.readouterr().err
    assert "Permission Error" in err and "through its views" in err and err.count("\n") == 1


def test_the_module_docstring_names_every_command():
    import attnsim.cli.main as cli

    commands = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name in commands.choices if f"`{name}`" not in cli.__doc__]
    assert not missing and len(commands.choices) >= 13


BLAS_PROBE = """
import sys
import attnsim.cli.main as cli

def probe(args):
    import numpy  # noqa: F401 (OpenBLAS starts here)
    from threadpoolctl import threadpool_info

    print(*[i["num_threads"] for i in threadpool_info() if i["internal_api"] == "openblas"])

cli._collect = cli._embed = probe
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "argv, environment, threads",
    [
        (["collect", "--experiment-file", "x.json", "--output", "x"], {}, "1"),
        (
            ["collect", "--experiment-file", "x.json", "--output", "x"],
            {"OPENBLAS_NUM_THREADS": "2"},
            "2",
        ),
        (["embed", "a sentence"], {}, None),  # a person's command: OpenBLAS's own default
    ],
)
def test_job_commands_start_one_blas_thread(argv, environment, threads):
    """The workflow's job commands start OpenBLAS with one thread (its idle threads spin at numpy's
    import: ~0.1 CPU-s a process), unless the environment says otherwise; other commands keep
    OpenBLAS's default."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")} | environment
    if threads is None:  # what a plain numpy import starts here (OpenBLAS's count of cores)
        plain = [sys.executable, "-c", BLAS_PROBE.replace("cli.main(", "probe(")]
        threads = subprocess.run(
            plain, env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, *argv], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [threads], done.stdout


@pytest.mark.parametrize("argv", [["simulate", "--spec", "{}"], ["collect", "--experiment", "{}"]])
def test_the_job_commands_take_files_not_json(argv, capsys):
    """No JSON on a command line (the project's rule): the rules pass the spec and settings
    files the run writes at its start; the JSON options are gone (argparse reads `--spec` as
    the start of `--spec-file`, so the JSON is taken for a file name, and refused)."""
    assert main([*argv, "--output", "x.parquet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnsim: error: {}: "), err
