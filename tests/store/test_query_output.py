"""`attnsim query --output` never replaces what it should not (issue 41 item 1): a device node, a
FIFO, a symbolic link, a directory or a path inside the store is refused in one line naming the
path, with nothing replaced; an unwritable folder and `/proc/version` give one line; the result
is streamed, so `--memory` holds for `--output` too. And the terminal's table (issue 40 item 6,
DuckDB's renderer since issue 51): capped, with the count and how to get every row, NULL printed as
NULL; without SQL, a shell of one session over stdin (issue 51 item 7)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pandas as pd
import pytest
from helpers.configs import simulated_robustness

from attnsim.cli.main import main
from attnsim.jobs.collect import collect
from attnsim.store import parquet as store
from attnsim.store import query

SQL = "SELECT point_id, trial, noise FROM robustness_trials ORDER BY point_id, trial"


@pytest.fixture
def filled(tmp_path, monkeypatch):
    """small_config's robustness experiment, simulated and collected, in ./results/store."""
    monkeypatch.chdir(tmp_path)
    settings, root, paths = simulated_robustness(tmp_path / "results" / "store")
    kind = settings.experiments["robustness"].kind
    collect(
        settings.experiments["robustness"].to_json(),
        paths,
        store.summary_path(root, kind, "robustness"),
    )
    return tmp_path


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnsim: error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return lines[0]


def test_a_fifo_at_the_output_is_refused_and_stays_a_fifo(filled, capsys):
    fifo = filled / "out.csv"
    os.mkfifo(fifo)
    assert main(["query", SQL, "--output", str(fifo)]) == 2
    line = one_error_line(capsys)
    assert f"--output {fifo}: exists and is a FIFO, not a regular file" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_at_the_output_is_refused_its_target_untouched(filled, capsys):
    target = filled / "precious.txt"
    target.write_text("keep me\n")
    link = filled / "out.csv"
    link.symlink_to(target)
    assert main(["query", SQL, "--output", str(link)]) == 2
    assert f"--output {link}: exists and is a symbolic link" in one_error_line(capsys)
    assert link.is_symlink() and target.read_text() == "keep me\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can replace /dev/full (the issue's case)")
def test_dev_full_as_root_is_refused_and_stays_a_device(filled, capsys):
    before = os.lstat("/dev/full")
    assert main(["query", SQL, "--format", "csv", "--output", "/dev/full"]) == 2
    assert "--output /dev/full: exists and is a character device" in one_error_line(capsys)
    after = os.lstat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_directory_is_refused(filled, capsys):
    folder = filled / "out"
    folder.mkdir()
    assert main(["query", SQL, "--format", "csv", "--output", str(folder)]) == 2
    assert f"--output {folder}: exists and is a directory" in one_error_line(capsys)
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(
    "inside", ["results/store/x.parquet", "results/store/summary/kind=x/e.parquet", "results/store"]
)
def test_a_path_inside_the_store_is_refused_and_nothing_is_written(filled, capsys, inside):
    before = sorted(str(p) for p in (filled / "results").rglob("*"))
    assert main(["query", SQL, "--format", "parquet", "--output", inside]) == 2
    line = one_error_line(capsys)
    assert f"--output {inside}: " in line and "store" in line
    assert sorted(str(p) for p in (filled / "results").rglob("*")) == before
    assert main(["query", "SELECT count(*) AS n FROM robustness"]) == 0  # the store still reads


def test_a_path_into_the_store_through_a_symlinked_folder_is_refused(filled, capsys):
    (filled / "alias").symlink_to(filled / "results" / "store", target_is_directory=True)
    assert main(["query", SQL, "--output", "alias/x.parquet"]) == 2
    assert "inside the store" in one_error_line(capsys)
    assert not (filled / "results" / "store" / "x.parquet").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder without write permission")
def test_an_unwritable_folder_is_one_line(filled, capsys):
    folder = filled / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert main(["query", SQL, "--output", str(folder / "out.csv")]) == 2
        assert f"cannot write in {folder}" in one_error_line(capsys)
    finally:
        folder.chmod(0o700)


@pytest.mark.parametrize("path", ["/proc/version", "/proc/new.csv", "no/such/folder/out.csv"])
def test_unwritable_places_are_one_line(filled, capsys, path):
    before = open("/proc/version").read()
    assert main(["query", SQL, "--format", "csv", "--output", path]) == 2
    assert f"--output {path}: cannot write in" in one_error_line(capsys)
    assert open("/proc/version").read() == before and not (filled / "no").exists()


def test_a_regular_file_is_replaced_whole_in_the_format_its_suffix_names(filled, capsys):
    out = filled / "out.csv"
    out.write_text("old\n")
    assert main(["query", SQL, "--output", str(out)]) == 0
    written = pd.read_csv(out)
    assert len(written) == 16 * 20 and list(written.columns) == ["point_id", "trial", "noise"]
    assert main(["query", SQL, "--output", str(filled / "out.json")]) == 0
    assert len(json.loads((filled / "out.json").read_text())) == 320
    assert main(["query", SQL, "--output", str(filled / "out.txt")]) == 2
    assert "give --format csv, json or parquet" in one_error_line(capsys)
    assert [p.name for p in filled.iterdir() if p.name.startswith(".")] == []  # no temp left


# The process's own peak (VmHWM, per address space): getrusage's ru_maxrss keeps, across exec,
# the peak of the forked pytest worker it started as, which can be a GiB on its own.
PEAK = """
import sys
from attnsim.cli.main import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(int(status.split()[0]) // 1024)
sys.exit(code)
"""


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_output_is_streamed_within_the_memory_cap(filled, fmt):
    """10^7 rows (about 0.24 GB as a data frame, more as CSV text): held whole (3 * 10^7 rows
    peaked past 2 GB; 10^7, fetched as a frame and written as CSV, peak at ~620 MiB here),
    streamed, the process stays near its import size (~150 MiB)."""
    sql = "SELECT i, i * 0.5 AS x, i % 7 AS k FROM range(10000000) t(i)"
    out = filled / f"big.{fmt}"
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "query", sql, "--memory", "64MB", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    peak_mib = int(done.stdout.split()[-1])
    print(f"{fmt}: peak RSS {peak_mib} MiB for {out.stat().st_size / 2**20:.0f} MiB written")
    assert peak_mib < 400
    if fmt == "parquet":
        import pyarrow.parquet as pq

        assert pq.read_metadata(out).num_rows == 10_000_000


def cells(line: str) -> list[str]:
    """The cells of a row of DuckDB's box table."""
    return [c.strip() for c in line.strip("│").split("│")]


def test_the_terminal_table_is_capped_with_the_count_and_prints_null(filled, capsys):
    """DuckDB's renderer draws the table (a box: header, types, rows); at most TERMINAL_ROWS rows
    and then the count."""
    assert main(["query", SQL]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("│")][2:]  # less the names and types
    assert len(rows) == query.TERMINAL_ROWS
    assert cells(lines[1]) == ["point_id", "trial", "noise"]
    assert lines[-1] == (
        f"({query.TERMINAL_ROWS} of 320 rows shown; every row: --format csv or json, or --output "
        "FILE)"
    )
    assert main(["query", "SELECT NULL AS a, 'x' AS b, 'NaN'::DOUBLE AS c"]) == 0
    assert cells(capsys.readouterr().out.splitlines()[4]) == ["NULL", "x", "nan"]
    assert main(["query", "SELECT count(*) AS n FROM robustness_trials"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert cells(out[1]) == ["n"] and cells(out[4]) == ["320"] and len(out) == 6  # no count line
    assert main(["query", SQL, "--format", "csv"]) == 0  # csv: every row
    assert len(capsys.readouterr().out.splitlines()) == 321


def test_the_shell_runs_piped_statements_in_one_session(filled):
    """`attnsim query` without SQL: statements from stdin, each printed by DuckDB's renderer, in
    the same sandbox (a write is one line and the others still run; the exit status says so)."""
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    command = [sys.executable, "-m", "attnsim.cli.main", "query"]
    done = subprocess.run(
        command, input="SELECT 42 AS x;\n", text=True, capture_output=True, cwd=filled, env=env
    )
    assert done.returncode == 0, done.stderr
    assert cells(done.stdout.splitlines()[4]) == ["42"]
    script = (
        "SELECT count(*) AS n FROM robustness;\n"
        "COPY robustness TO 'out.csv';\n"
        "SELECT 'a;b' AS s;\n"
        "SELECT * FROM read_csv('/etc/passwd');\n"
    )
    done = subprocess.run(
        command, input=script, text=True, capture_output=True, cwd=filled, env=env
    )
    assert done.returncode == 1 and not (filled / "out.csv").exists()
    tables = [cells(line) for line in done.stdout.splitlines() if line.startswith("│")]
    assert ["16"] in tables and ["a;b"] in tables
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 2 and all(e.startswith("attnsim: error: ") for e in errors), errors


def test_show_tables_lists_no_internal_view(filled, capsys):
    assert main(["query", "SHOW TABLES", "--format", "csv"]) == 0
    names = capsys.readouterr().out.split()[1:]
    assert "_provenance" not in names and {"provenance", "robustness", "trials"} <= set(names)
