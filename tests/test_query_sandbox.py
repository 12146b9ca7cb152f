"""Query views and the sandbox (issue 22 items 4 and 8): experiment names that collide with views
(in a store written before the config refused them) never loop or merge tables; DuckDB's temp
directory is not readable; queries have a timeout and a memory limit."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from helpers.points import make_point, spec_of_points

from attnsim.cli.main import main
from attnsim.jobs.simulate import run_chunk
from attnsim.kinds import get_kind
from attnsim.store import parquet as store
from attnsim.store import query


def fill(root, names):
    """Chunks of a tiny temperature_entropy experiment under each of `names`, no config involved."""
    kind = get_kind("temperature_entropy")
    for name in names:
        point = make_point(kind, dict(n=8, d=3, tau=1.0 + len(name)))
        spec = spec_of_points(name, kind, 1, 4, (point,))
        run_chunk(spec, store.chunk_path(root, kind.name, name, spec.id))
        summary = store.summary_path(root, kind.name, name)
        summary.parent.mkdir(parents=True, exist_ok=True)
        store.write_atomic(
            store.read_table(store.chunk_path(root, kind.name, name, spec.id)).slice(0, 0),
            summary,
            {"format": store.FORMAT, "table": "summary"},
        )


@pytest.mark.parametrize("names", [["summary"], ["trials"], ["provenance"], ["x", "x_trials"]])
def test_colliding_experiment_names_neither_loop_nor_merge(tmp_path, names):
    fill(tmp_path / "store", names)
    root = str(tmp_path / "store")
    code = (
        "from attnsim.store import query\n"
        f"print(query.run({root!r}, 'SELECT 1 AS one').to_dict())\n"
        f"print(sorted(query.run({root!r}, 'SHOW TABLES')['name']))"
    )
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert time.perf_counter() - started < 60 and "{'one': {0: 1}}" in out.stdout
    views = query.view_files({t: store.table_files(tmp_path / "store", t) for t in store.TABLES})
    assert len(views["trials"]) == len(names) and len(views["summary"]) == len(
        names
    )  # never doubled
    assert "not made, the name collides with another view of the store" in out.stderr


def test_temp_directory_is_not_readable_and_nothing_spills(tmp_path, monkeypatch, capsys):
    fill(tmp_path / "results" / "store", ["t"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "x").write_text("secret")
    assert main(["query", "SELECT * FROM read_text('.tmp/x')"]) == 2
    err = capsys.readouterr().err
    assert "Permission Error" in err and "secret" not in err
    assert (
        main(
            [
                "query",
                "SELECT current_setting('temp_directory') AS t, current_setting('memory_limit') "
                "AS m",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert out[1].startswith(",") and "MiB" in out[1]  # no temp directory; about 1 GB


def test_timeout_stops_a_long_query_in_one_line(tmp_path, monkeypatch, capsys):
    fill(tmp_path / "results" / "store", ["t"])
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    assert (
        main(["query", "SELECT count(*) FROM range(100000000000) a, range(10) b", "--timeout", "1"])
        == 2
    )
    assert time.perf_counter() - started < 20
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "attnsim: error: query stopped after 1 s (--timeout 1); narrow it or give a longer "
        "--timeout"
    ]


def test_memory_limit_is_settable_and_checked(tmp_path, monkeypatch, capsys):
    fill(tmp_path / "results" / "store", ["t"])
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "query",
                "SELECT current_setting('memory_limit') AS m",
                "--memory",
                "256MB",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip().splitlines()[1].startswith("244")  # 256 MB in MiB
    assert main(["query", "SELECT 1", "--memory", "lots"]) == 2
    assert "--memory 'lots'" in capsys.readouterr().err
    assert (
        main(
            [
                "query",
                "SELECT count(*) FROM (SELECT range(i) AS r FROM range(30000) t(i) ORDER BY r "
                "DESC)",
                "--memory",
                "64MB",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Out of Memory" in err[0] and "--memory 64MB" in err[0], err
