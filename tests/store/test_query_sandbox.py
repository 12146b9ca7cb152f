"""Query views and the sandbox (issue 22 items 4 and 8): experiment names that collide with views
(in a store written before the config refused them) never loop or merge tables; DuckDB's temp
directory is not readable; queries have a timeout and a memory limit."""

from __future__ import annotations

import os
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
    # never doubled
    assert len(views["trials"]) == len(names) and len(views["summary"]) == len(names)
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


HANG = """
import sys
from attnsim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def query_within(tmp_path, sql, *args, limit=30.0, env=None):
    """`attnsim query SQL ARGS` in a process of its own that must end within `limit` seconds
    (one that blocks in an open() of a FIFO would never end): (exit code, stderr lines, secs)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", HANG, "query", sql, *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=limit,
        env=env,
    )
    return done.returncode, done.stderr.strip().splitlines(), time.perf_counter() - started


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('{fifo}')",
        "SELECT * FROM read_text('{fifo}')",
        "SELECT * FROM read_parquet('{fifo}')",
        "SELECT * FROM '{fifo}'",
        "SELECT * FROM t_trials JOIN read_csv('{fifo}') USING (point_id)",
    ],
)
def test_a_fifo_outside_the_store_is_never_opened(tmp_path, sql):
    """The issue's case: the table-name analysis ran on an unconfined connection and opened the
    file (a FIFO: the query hung for as long as it stayed open, past --timeout). No writer ever
    opens this FIFO, so a query that opened it would block for ever."""
    fill(tmp_path / "results" / "store", ["t"])
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / "secret.csv")
    code, err, seconds = query_within(
        tmp_path, sql.format(fifo=outside / "secret.csv"), "--timeout", "5"
    )
    assert code == 2 and len(err) == 1 and err[0].startswith("attnsim: error: query failed: ")
    assert "Permission Error" in err[0] and seconds < 30


def test_a_fifo_inside_the_store_is_refused_not_read(tmp_path):
    """A FIFO among the store's files (named like a chunk, or not) is neither listed as a view's
    file nor readable by name: refused in one line naming it, within the timeout."""
    root = tmp_path / "results" / "store"
    fill(root, ["t"])
    folder = next((root / "trials").glob("kind=*/experiment=t"))
    os.mkfifo(folder / "chunk-ffffffffffffffff.parquet")
    code, err, _ = query_within(tmp_path, "SELECT count(*) FROM t_trials", "--timeout", "5")
    assert code == 2 and len(err) == 1
    assert err[0] == (
        f"attnsim: error: {folder.relative_to(tmp_path) / 'chunk-ffffffffffffffff.parquet'}: "
        "a FIFO inside the store, "
        "not a file attnsim wrote; move it out"
    )
    (folder / "chunk-ffffffffffffffff.parquet").unlink()
    os.mkfifo(root / "notes.csv")
    code, err, _ = query_within(tmp_path, f"SELECT * FROM read_csv('{root / 'notes.csv'}')")
    assert code == 2 and len(err) == 1 and "Permission Error" in err[0]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('http://example.com/data.csv')",
        "SELECT * FROM read_parquet('s3://bucket/key.parquet')",
        "SELECT * FROM 'https://example.com/x.parquet'",
    ],
)
def test_remote_paths_are_refused_without_touching_the_extension_folder(tmp_path, sql):
    """DuckDB auto-installs httpfs into ~/.duckdb/extensions for such a path on an unconfined
    connection: here no connection the query opens may install or load an extension."""
    fill(tmp_path / "results" / "store", ["t"])
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    code, err, _ = query_within(tmp_path, sql, env=env)
    assert code == 2 and len(err) == 1 and "Permission Error" in err[0], err
    assert list(home.iterdir()) == []  # no ~/.duckdb


def test_the_timeout_covers_checking_the_store(tmp_path, monkeypatch, capsys):
    """--timeout counts from the start: a store whose files take long to check (here each takes
    0.4 s) stops at the timeout with the timeout's line, not after checking all of them."""
    fill(tmp_path / "results" / "store", ["a", "b", "c", "d", "e", "f"])
    monkeypatch.chdir(tmp_path)
    checked = store.verify_file

    def slow(path):
        time.sleep(0.4)
        checked(path)

    monkeypatch.setattr(store, "verify_file", slow)
    started = time.perf_counter()
    assert main(["query", "SELECT count(*) FROM trials", "--timeout", "1"]) == 2
    assert time.perf_counter() - started < 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "attnsim: error: query stopped after 1 s (--timeout 1); narrow it or give a longer "
        "--timeout"
    ]


def test_the_views_a_query_needs_are_found_without_binding_it(tmp_path):
    """A join with USING fails to bind on a connection without views (the old analysis then fell
    back to every view); the tokenizer finds both names."""
    views = {"robustness", "robustness_trials", "entropy", "trials", "summary"}
    sql = 'SELECT * FROM robustness r JOIN "Robustness_Trials" USING (point_id) -- entropy'
    assert query.referenced(sql, views) == {"robustness", "robustness_trials"}
    assert query.referenced("SHOW TABLES", views) is None  # every view
