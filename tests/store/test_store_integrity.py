"""A store that knows what it holds (issue 22 item 2): flipped bits are detected on read, a second
copy of a chunk is named instead of counted twice, and a deleted or truncated chunk is
recomputed (by a rerun, as the error's advice says) instead of trusted from the old summary."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
from helpers.configs import simulated_robustness, small_config
from helpers.workflow import snakemake, write_config

from attnsim.cli.main import main
from attnsim.errors import StoreError
from attnsim.jobs.collect import collect
from attnsim.plan.sweep import experiment_json, plan_experiment
from attnsim.store import parquet as store


@pytest.fixture
def chunks(tmp_path):
    return simulated_robustness(tmp_path / "store")


def flip(path, offset: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def column_ranges(path):
    """(name, first byte, end) of every column chunk's pages in the file."""
    meta = pq.ParquetFile(path).metadata
    out = []
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            out.append((col.path_in_schema, start, start + col.total_compressed_size))
    return out


def test_every_column_chunk_with_a_flipped_bit_is_refused_on_read(chunks):
    _, _, paths = chunks
    original = paths[0].read_bytes()
    ranges = column_ranges(paths[0])
    assert len(ranges) >= 10
    for name, _start, end in ranges:
        for offset in (end - 3, end - 1):  # inside the last page's compressed data
            paths[0].write_bytes(original)
            flip(paths[0], offset, bit=offset % 8)
            with pytest.raises(StoreError) as error:
                store.read_table(paths[0])
            text = str(error.value)
            assert (
                text.startswith(f"{paths[0]}: ")
                and "delete it and rerun to recompute it" in text
                and "\n" not in text
            ), (name, offset, text)
    paths[0].write_bytes(original)
    assert store.read_table(paths[0]).num_rows > 0


def test_a_flip_anywhere_in_the_file_is_detected_or_changes_nothing_read(chunks):
    """Every 37th byte of the whole file (pages, page headers, footer, provenance), one bit each:
    the read fails with the file's name, or returns exactly the same rows and provenance (a flip
    in a page header's statistics or an unused field). Only footer statistics that a filtered
    DuckDB query may use are not covered (docs/usage.md, Reliability)."""
    _, _, paths = chunks
    path = paths[0]
    original = path.read_bytes()
    rows, meta = store.read_table(path), store.read_meta(path)
    pages_end = len(original) - 8 - pq.ParquetFile(path).metadata.serialized_size
    detected = {"pages": 0, "footer": 0}
    tried = {"pages": 0, "footer": 0}
    for offset in range(0, len(original), 37):
        path.write_bytes(original)
        flip(path, offset, bit=offset % 8)
        region = "pages" if offset < pages_end else "footer"
        tried[region] += 1
        try:
            same = store.read_table(path).equals(rows) and store.read_meta(path) == meta
        except StoreError as error:
            assert str(error).startswith(f"{path}: "), str(error)
            detected[region] += 1
            continue
        assert same, f"a flip at byte {offset} ({region}) changed what is read without an error"
    assert (
        detected["pages"] > 0.75 * tried["pages"] and detected["footer"] > 0.4 * tried["footer"]
    ), (detected, tried)


def test_a_flipped_bit_in_the_provenance_is_refused(chunks):
    _, _, paths = chunks
    data = paths[0].read_bytes()
    at = data.index(b'"results_key"') + 3
    flip(paths[0], at, bit=1)
    with pytest.raises(StoreError, match="damaged"):
        store.read_meta(paths[0])


def test_collect_refuses_a_damaged_chunk_in_one_line_naming_it(chunks, capsys):
    settings, root, paths = chunks
    start, end = next((s, e) for name, s, e in column_ranges(paths[1]) if name == "sq_err")
    flip(paths[1], (start + end) // 2, bit=3)
    out = store.summary_path(root, "noisy_attention", "robustness")
    experiment = root.parent / "experiment.json"
    experiment.write_text(experiment_json(settings, "robustness"))
    argv = [
        "collect",
        "--experiment-file",
        str(experiment),
        "--output",
        str(out),
        *map(str, paths),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"attnsim: error: {paths[1]}: damaged"), err
    assert not out.exists()


def test_every_chunk_records_the_checksums_of_its_columns(chunks):
    _, _, paths = chunks
    meta = store.read_meta(paths[0])
    assert set(meta["content_sha256"]) == set(pq.read_schema(paths[0]).names)
    assert all(
        pq.ParquetFile(paths[0]).metadata.row_group(0).column(i).statistics is not None
        for i in range(3)
    )


@pytest.mark.parametrize(
    "copy_name",
    ["chunk-{id} (1).parquet", "copy-of-{id}.parquet", "chunk-0123456789abcdef.parquet"],
)
def test_a_second_copy_of_a_chunk_is_named_not_counted(chunks, copy_name):
    settings, root, paths = chunks
    chunk = store.read_meta(paths[0])["chunk"]
    copy = paths[0].with_name(copy_name.format(id=chunk))
    shutil.copy2(paths[0], copy)
    with pytest.raises(StoreError) as error:
        plan_experiment(settings, "robustness", root)
    text = str(error.value)
    assert (
        text.startswith(f"{copy}: ")
        and f"chunk {chunk}" in text
        and f"delete {copy.name} and rerun" in text
    )
    with pytest.raises(StoreError, match="counted twice"):
        collect(
            experiment_json(settings, "robustness"),
            [*paths, copy],
            store.summary_path(root, "noisy_attention", "robustness"),
        )
    copy.unlink()  # the advice: then the plan is whole again
    assert plan_experiment(settings, "robustness", root).pending == []


def test_a_summary_knows_its_chunks_and_is_stale_when_one_goes(chunks):
    settings, root, paths = chunks
    out = store.summary_path(root, "noisy_attention", "robustness")
    collect(experiment_json(settings, "robustness"), paths, out)
    recorded = store.read_meta(out)["chunks"]
    assert set(recorded) == {store.read_meta(p)["chunk"] for p in paths}
    assert store.stale_summaries(root, {"robustness": "noisy_attention"}) == {}
    chunk = store.read_meta(paths[0])["chunk"]
    paths[0].unlink()
    assert store.stale_summaries(root, {"robustness": "noisy_attention"}) == {
        out: f"its chunk {chunk} is no longer in the store"
    }


# --- end to end: the workflow recomputes what is missing ------------------------------------------


def trial_rows(workdir) -> int:
    return sum(
        pq.read_metadata(p).num_rows for p in (workdir / "results/store/trials").rglob("*.parquet")
    )


def summary_trials(workdir) -> list[int]:
    path = next((workdir / "results/store/summary").rglob("summary.parquet"))
    return sorted(set(store.read_table(path)["n_trials"].to_pylist()))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("integrity")
    write_config(workdir, small_config(chunk_size=4))
    snakemake(workdir, "--cores", "2")
    return workdir


@pytest.mark.slow
def test_a_deleted_chunk_is_recomputed_and_the_summary_rebuilt(finished, tmp_path):
    workdir = tmp_path / "w"
    shutil.copytree(finished, workdir, symlinks=True)
    full = trial_rows(workdir)
    folder = next((workdir / "results/store/trials").rglob("experiment=robustness"))
    victim = sorted(folder.glob("chunk-*.parquet"))[0]
    victim.unlink()
    dry = snakemake(workdir, "-n", "--cores", "1")
    assert "Nothing to be done" not in dry.stdout + dry.stderr
    snakemake(workdir, "--cores", "2")
    assert victim.exists() and trial_rows(workdir) == full
    assert summary_trials(workdir) == [20]
    again = snakemake(workdir, "-n", "--cores", "1")
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_a_truncated_chunk_is_named_and_the_advice_recomputes_it(finished, tmp_path):
    workdir = tmp_path / "w"
    shutil.copytree(finished, workdir, symlinks=True)
    full = trial_rows(workdir)
    folder = next((workdir / "results/store/trials").rglob("experiment=robustness"))
    victim = sorted(folder.glob("chunk-*.parquet"))[1]
    victim.write_bytes(victim.read_bytes()[:300])
    result = snakemake(workdir, "-n", "--cores", "1", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert (
        lines[0].startswith("attnsim: error: results/store/trials/")
        and victim.name in lines[0]
        and lines[0].endswith("delete it and rerun to recompute it")
    )
    victim.unlink()  # what the message says to do
    snakemake(workdir, "--cores", "2")
    assert trial_rows(workdir) == full and summary_trials(workdir) == [20]


def test_a_column_with_nulls_has_one_checksum_however_it_is_read(tmp_path):
    """A summary of more than 2^20 points is several row groups, read back as several chunks: a
    null cell made every read of it (collect's output of 10^7 points, the figures job, queries)
    refuse it as damaged, its checksum having been hashed chunk by chunk."""
    import pyarrow as pa

    from attnsim.store import integrity
    from attnsim.store import parquet as store

    values = pa.array([1.0, None, 3.0, 4.0, None, 6.0, 7.0])
    whole = integrity.column_digest(values)
    for cut in range(1, len(values)):
        assert integrity.column_digest(pa.chunked_array([values[:cut], values[cut:]])) == whole
    table = pa.table({"x": values, "k": pa.array(range(7), pa.int64())})
    path = tmp_path / "t.parquet"
    store.write_atomic(table, path, store.provenance(table="summary"))
    rewritten = pq.read_table(path)
    pq.write_table(rewritten, path, row_group_size=2, write_page_checksum=True)  # 4 row groups
    assert pq.ParquetFile(path).num_row_groups == 4
    store.read_table(path)  # each column's checksum over 4 chunks
    store.verify_file(path)  # a row group at a time


@pytest.mark.parametrize("runs", [[3000], [1500, 1500, 7], [2000, 1, 1, 1000], [1] * 3000])
def test_a_string_column_of_runs_has_the_checksum_of_its_rows_sorted(runs, monkeypatch):
    """A trials table's point ids (one run per point) are ranked as a dictionary's few values,
    not sorted row by row: the same checksum as the sort of every row, with nulls and however
    the column is chunked."""
    import numpy as np
    import pyarrow as pa

    from attnsim.store import integrity

    names = np.array([None if i % 5 == 3 else f"p{i % 37:03d}" for i in range(len(runs))], object)
    column = pa.array(np.repeat(names, runs).tolist(), pa.string())
    assert integrity._mostly_repeats(column) == (len(runs) < 10)  # the last: unique, kept plain
    chunked = pa.chunked_array([column[:1100], column[1100:]])
    fast = [integrity.column_digest(c) for c in (column, chunked)]
    monkeypatch.setattr(integrity, "_mostly_repeats", lambda chunk: False)
    assert fast == [integrity.column_digest(c) for c in (column, chunked)] == [fast[0]] * 2
    assert integrity.column_digest(pa.compute.dictionary_encode(column)) == fast[0]
