"""A query never sees a point twice nor a damaged file (issue 41 item 5, issue 40 item 6): the
views read only the chunks the store's inventory lists as current (a top-up's old chunk drops
out once its replacement is whole), and damaged, foreign, copied-over, swapped or
footer-statistics-flipped files are refused in one line naming them, verified once and then
cached by inode, size, mtime and ctime. After a grid value is removed, `<exp>_trials` and
`<exp>` hold the same points."""

from __future__ import annotations

import os
import shutil

import duckdb
import pyarrow.parquet as pq
import pytest
from helpers.configs import simulated_robustness, small_config

from attnsim.cli.main import main
from attnsim.config.load import load
from attnsim.errors import StoreError
from attnsim.jobs.collect import collect
from attnsim.jobs.simulate import run_chunk
from attnsim.plan.sweep import experiment_json, plan_experiment
from attnsim.store import parquet as store
from attnsim.store import query

POINTS = "SELECT count(*) AS rows, count(DISTINCT point_id) AS points FROM robustness_trials"


def simulate(root, config, name="robustness", collected=True):
    """Plan, simulate every pending chunk and (if `collected`) collect, as a run does."""
    settings = load(config)
    plan = plan_experiment(settings, name, root)
    for chunk in plan.pending:
        run_chunk(plan.spec(chunk), store.chunk_path(root, plan.kind, name, chunk))
    paths = [store.chunk_path(root, plan.kind, name, c) for c in plan.chunks]
    summary = store.summary_path(root, plan.kind, name)
    if collected:
        collect(experiment_json(settings, name), paths, summary)
    return plan, paths, summary


@pytest.fixture
def filled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plan, paths, summary = simulate(tmp_path / "results" / "store", small_config())
    return tmp_path, paths, summary


def counts(sql=POINTS):
    frame = query.run("results/store", sql)
    return tuple(int(v) for v in frame.iloc[0])


def refused(capsys, sql=POINTS) -> str:
    assert main(["query", sql]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnsim: error: "), err
    return err[0]


def flip(path, offset: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_a_flipped_bit_in_a_column_collect_does_not_read_is_refused(filled, capsys):
    """The issue's case: a bit flipped in `trial` passed `attnsim run` and was served."""
    tmp_path, paths, _ = filled
    meta = pq.ParquetFile(paths[0]).metadata.row_group(0)
    trial = next(
        meta.column(c) for c in range(meta.num_columns) if meta.column(c).path_in_schema == "trial"
    )
    start = trial.dictionary_page_offset if trial.has_dictionary_page else trial.data_page_offset
    flip(paths[0], start + trial.total_compressed_size - 2, bit=3)
    line = refused(capsys, "SELECT max(trial) FROM robustness_trials")
    assert f"{paths[0].relative_to(os.getcwd())}: damaged" in line
    # the run's collect finds it too (it passed with exit 0), and writes no summary
    summary = store.summary_path(tmp_path / "results" / "store", "noisy_attention", "robustness")
    summary.unlink()
    with pytest.raises(StoreError, match=f"{paths[0].name}: damaged"):
        collect(experiment_json(load(small_config()), "robustness"), paths, summary)
    assert not summary.exists()


def test_verification_is_cached_by_size_mtime_and_ctime(filled, monkeypatch):
    _, paths, _ = filled
    seen = []
    verify = store.verify_file
    monkeypatch.setattr(store, "verify_file", lambda p: (seen.append(p), verify(p)))
    assert counts() == (320, 16)
    assert len(seen) == len(paths) + 1  # every chunk and the summary, once
    seen.clear()
    assert counts() == (320, 16) and seen == []  # the next query trusts the cache
    os.utime(paths[1])  # touched: checked again (only it)
    assert counts() == (320, 16) and [p.name for p in seen] == [paths[1].name]


def test_a_foreign_parquet_file_in_an_experiment_folder_is_refused(filled, capsys):
    _, paths, _ = filled
    foreign = paths[0].with_name("notes.parquet")
    pq.write_table(pq.read_table(paths[0]).replace_schema_metadata({}), foreign)
    assert "a foreign Parquet file (no attnsim provenance)" in refused(capsys)


def test_a_chunk_copied_over_one_of_another_seed_is_refused(filled, tmp_path, capsys):
    """Same chunk id (ids hash the points, not the seed), another seed's rows: the summary's
    record of what it was made from names the file."""
    _, paths, _ = filled
    other = tmp_path / "other"
    _, other_paths, _ = simulate(other / "store", small_config(seed=8), collected=False)
    twin = next(p for p in other_paths if p.name == paths[0].name)
    shutil.copyfile(twin, paths[0])
    line = refused(capsys)
    assert f"{paths[0].name}: not the chunk summary.parquet was made from" in line


def test_a_chunk_swapped_in_from_another_experiment_is_refused(filled, capsys):
    """The issue's case: entropy rows labelled robustness, with NULL sq_err."""
    tmp_path, paths, _ = filled
    config = small_config()
    config["experiments"] = {
        "entropy": {
            "kind": "temperature_entropy",
            "trials": 4,
            "grid": {"n": [8], "d": [3], "tau": [1.0]},
        }
    }
    _, theirs, _ = simulate(tmp_path / "results" / "store", config, "entropy", collected=False)
    moved = paths[0].parent / theirs[0].name
    shutil.move(theirs[0], moved)
    line = refused(capsys)
    assert f"{moved.name}: a chunk of experiment 'entropy' (kind temperature_entropy)" in line


def test_a_flipped_min_statistic_in_a_footer_cannot_hide_rows(filled, capsys):
    """The issue's case: a footer's min statistic of point_id raised past the smallest id made
    `WHERE point_id = <it>` return 0 rows, every check passing (no checksum covers the footer's
    statistics); DuckDB alone still returns 0 rows here, the query refuses the file."""
    _, paths, _ = filled
    table = pq.read_table(paths[0])
    smallest = min(table["point_id"].to_pylist())
    data = bytearray(paths[0].read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer
    raised = ("f" + smallest[1:]).encode() if smallest[0] != "f" else ("e" + smallest[1:]).encode()
    tail = bytes(data[start:]).replace(smallest.encode(), raised)
    assert tail != bytes(data[start:])
    data[start:] = tail
    paths[0].write_bytes(bytes(data))
    hidden = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{paths[0]}') WHERE point_id = '{smallest}'"
    ).fetchall()[0][0]
    assert hidden == 0  # the scenario: DuckDB trusts the statistics
    line = refused(capsys, f"SELECT * FROM robustness_trials WHERE point_id = '{smallest}'")
    assert "the footer's statistics of column point_id do not match its values" in line


def test_a_top_up_never_shows_a_point_twice(filled, capsys):
    """Before, during (the new chunk written, the old one not yet removed: 432,000 rows of
    288,000 points in the issue's run) and after collect, each point is in the view once: the
    summary's chunks while it exists, and without one (collect rewriting it) the old chunk only
    once its top-ups are whole."""
    tmp_path, paths, summary = filled
    root = tmp_path / "results" / "store"
    more = small_config()
    more["experiments"]["robustness"]["trials"] = 40
    settings = load(more)
    plan = plan_experiment(settings, "robustness", root)
    tops = [c for c in plan.pending if plan.chunk_by_id[c].extends]
    assert tops and len(tops) == len(paths)
    first = tops[0]
    run_chunk(plan.spec(first), store.chunk_path(root, plan.kind, "robustness", first))
    assert counts() == (320, 16)  # the summary's chunks: the old ones
    summary.unlink()  # collect about to rewrite it (Snakemake removes the output first)
    rows, points = counts()
    assert points == 16 and rows == 320 + 3 * 20  # the whole top-up replaces its old chunk
    for chunk in tops[1:]:
        run_chunk(plan.spec(chunk), store.chunk_path(root, plan.kind, "robustness", chunk))
    assert counts() == (640, 16)
    collect(
        experiment_json(settings, "robustness"),
        [store.chunk_path(root, plan.kind, "robustness", c) for c in plan.chunks],
        summary,
    )
    assert counts() == (640, 16) and all(p.exists() for p in paths)  # old chunks not yet removed
    assert counts("SELECT count(*) AS n, sum(n_trials) AS t FROM robustness") == (16, 640)


def test_after_a_grid_value_is_removed_both_views_hold_the_same_points(filled):
    tmp_path, _, _ = filled
    fewer = small_config()
    grid = fewer["experiments"]["robustness"]["grid"]
    key = next(k for k, v in grid.items() if isinstance(v, list) and len(v) > 1)
    grid[key] = grid[key][:1]
    simulate(tmp_path / "results" / "store", fewer)
    summary_points = counts("SELECT count(*), count(DISTINCT point_id) FROM robustness")
    assert summary_points[0] < 16
    rows, points = counts()
    assert points == summary_points[0] and rows == 20 * points
    extra = counts(
        "SELECT count(*), 0 FROM robustness_trials t ANTI JOIN robustness s USING (point_id)"
    )
    assert extra == (0, 0)


def test_a_store_of_mixed_seeds_without_a_summary_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "results" / "store"
    _, mine, _ = simulate(root, small_config(), collected=False)
    _, theirs, _ = simulate(tmp_path / "other", small_config(seed=8), collected=False)
    mine[0].unlink()
    shutil.copyfile(theirs[0], mine[0])
    assert "chunks of 2 different seeds or algorithm versions" in refused(capsys)


@pytest.mark.slow  # a search over a few hundred flips
def test_a_footer_flip_only_duckdb_trips_on_is_one_line_naming_the_file(tmp_path, capsys):
    """Issue 52: a bit flipped at one offset of a chunk's footer passes every pyarrow check (no
    checksum covers the footer's structure) and DuckDB's CREATE VIEW failed with a
    TProtocolException naming no file. Such a flip is searched for near the footer's end."""
    from attnsim.errors import AttnsimError
    from attnsim.store import parquet

    _, root, chunks = simulated_robustness(tmp_path / "store")
    path = chunks[0]
    original = path.read_bytes()
    found = None
    for offset in range(len(original) - 8, len(original) - 160, -1):
        for bit in range(8):
            data = bytearray(original)
            data[offset] ^= 1 << bit
            path.write_bytes(bytes(data))
            parquet._META_CACHE.clear()
            try:
                parquet.verify_file(path)
                duckdb.connect().execute("DESCRIBE SELECT * FROM read_parquet($1)", [str(path)])
            except AttnsimError:
                continue
            except duckdb.Error:
                found = (offset, bit)
                break
        if found:
            break
    assert found, "no flip near the footer's end that only DuckDB refuses"
    assert main(["query", "SELECT count(*) FROM robustness_trials", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnsim: error: {path}: damaged (DuckDB cannot read its footer: ")
    assert err.count("\n") == 1 and "Traceback" not in err
