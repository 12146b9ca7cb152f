"""Store files: typed schema, provenance, atomic writes, and clear errors for foreign or truncated
files."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.points import make_point, spec_of_points

from attnsim.errors import StoreError
from attnsim.jobs.simulate import run_chunk
from attnsim.kinds import get_kind
from attnsim.records.experiment import TrialSettings
from attnsim.store import parquet as store


def write_chunk(root, trials=4):
    points = [
        make_point(
            "noisy_attention",
            dict(n=16, d=2, logit_scale=1.0, noise="gaussian", noise_draws=2, noise_scale=s),
        )
        for s in (0.1, 0.2)
    ]
    spec = spec_of_points("robustness", get_kind("noisy_attention"), 1, trials, points)
    path = store.chunk_path(root, "noisy_attention", "robustness", "0" * 16)
    run_chunk(spec, path)
    return path, points


def test_round_trip_schema_and_provenance(tmp_path):
    path, points = write_chunk(tmp_path)
    table = store.read_table(path)
    assert table.schema.equals(store.trials_schema("noisy_attention"), check_metadata=False)
    meta = store.read_meta(path)
    assert meta["format"] == store.FORMAT and meta["seed"] == 1 and meta["trials"] == 4
    assert meta["results_key"] == TrialSettings(1, 4).results_key(get_kind("noisy_attention"))
    assert {"attnsim_version", "created_utc", "numpy_version", "spec", "chunk"} <= set(meta)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"
    assert set(table["point_id"].to_pylist()) == {p.id for p in points}


def test_summary_schema_documents_every_column():
    schema = store.summary_schema("noisy_attention")
    for field in schema:
        assert field.metadata and field.metadata[b"description"], field.name
    assert {
        "sq_err_mean",
        "sq_err_se",
        "sq_err_ci_low",
        "sq_err_ci_high",
        "n_trials",
        "kappa",
        "kappa_finite",
    } <= set(schema.names)
    assert "kappa_mean" not in schema.names  # constant per point: stored once, as theory


def test_failed_write_leaves_neither_file_nor_temp(tmp_path, monkeypatch):
    target = tmp_path / "x" / "t.parquet"

    def explode(*args, **kwargs):
        open(args[1], "wb").write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", explode)
    with pytest.raises(OSError):
        store.write_atomic(pa.table({"a": [1]}), target, {"format": store.FORMAT})
    assert list(target.parent.iterdir()) == []


def test_existing_file_is_replaced_whole(tmp_path):
    target = tmp_path / "t.parquet"
    store.write_atomic(pa.table({"a": [1, 2]}), target, {"format": store.FORMAT})
    inode = os.stat(target).st_ino
    store.write_atomic(pa.table({"a": [3]}), target, {"format": store.FORMAT})
    assert pq.read_table(target)["a"].to_pylist() == [3] and os.stat(target).st_ino != inode


def test_foreign_and_truncated_files_are_named(tmp_path):
    path, _ = write_chunk(tmp_path)
    foreign = path.with_name("chunk-1111111111111111.parquet")
    pq.write_table(pa.table({"a": [1]}), foreign)
    with pytest.raises(StoreError, match="foreign Parquet file"):
        store.read_meta(foreign)
    truncated = path.with_name("chunk-2222222222222222.parquet")
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(StoreError, match="not a readable Parquet file"):
        store.read_meta(truncated)


def test_hidden_temp_files_are_not_listed_and_orphans_are_swept(tmp_path):
    import socket
    import subprocess

    path, _ = write_chunk(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    orphan = path.with_name(f".{path.name}.{host}.{dead.pid}.tmp")
    live = path.with_name(f".{path.name}.{host}.{os.getpid()}.tmp")
    remote = path.with_name(f".{path.name}.other-node.{dead.pid}.tmp")
    for tmp in (orphan, live, remote):
        tmp.write_bytes(b"partial")
    assert store.table_files(tmp_path) == [path]
    assert store.sweep_orphans(tmp_path) == [orphan]
    assert live.exists() and remote.exists() and not orphan.exists()


def test_summary_reads_each_points_run_of_rows_and_refuses_a_point_stored_twice(tmp_path):
    from oracles.summaries import summarise_points, trials_by_point

    from attnsim.kinds import all_kinds

    metrics = [m.name for m in all_kinds()["noisy_attention"].schema.metrics]
    path, points = write_chunk(tmp_path / "a", trials=5)
    trials = trials_by_point([store.read_table(path)], metrics)
    assert all(list(trials[p.id]) == metrics and len(trials[p.id]["sq_err"]) == 5 for p in points)
    summary = summarise_points("noisy_attention", "robustness", trials, list(reversed(points)))
    assert summary["point_id"].to_pylist() == [p.id for p in reversed(points)] and summary[
        "n_trials"
    ].to_pylist() == [5, 5]
    assert summary["noise_scale"].to_pylist() == [0.2, 0.1]
    copy, _ = write_chunk(tmp_path / "b", trials=5)
    with pytest.raises(StoreError, match=f"point {points[0].id} has rows in more than one place"):
        trials_by_point([store.read_table(path), store.read_table(copy)], metrics)


def test_floats_are_split_and_the_rest_dictionary_encoded(tmp_path):
    """The writer's encodings (`store.parquet.encodings`): floating-point columns
    BYTE_STREAM_SPLIT, the others dictionary-encoded, nested ones plain; pyarrow, pandas and
    DuckDB read the same values back."""
    import duckdb
    import numpy as np

    path, _ = write_chunk(tmp_path, trials=50)
    written = pq.ParquetFile(path).metadata.row_group(0)
    schema = store.trials_schema("noisy_attention")
    for i in range(written.num_columns):
        column = written.column(i)
        is_float = pa.types.is_floating(schema.field(column.path_in_schema).type)
        assert ("BYTE_STREAM_SPLIT" in column.encodings) == is_float, column.path_in_schema
        assert ("RLE_DICTIONARY" in column.encodings) != is_float, column.path_in_schema
    table = store.read_table(path)
    assert table.to_pandas().equals(pq.read_table(path).to_pandas())
    assert np.array_equal(
        duckdb.sql(f"SELECT rel_err FROM '{path}'").fetchnumpy()["rel_err"],
        table["rel_err"].to_numpy(),
    )
    nested = pa.table({"embedding": pa.array([[1.5, 2.0], [3.0]], pa.list_(pa.float32()))})
    store.write_atomic(nested, tmp_path / "nested.parquet", store.provenance(table="x"))
    assert pq.read_table(tmp_path / "nested.parquet")["embedding"].equals(nested["embedding"])


def test_stop_reasons_say_why_each_point_has_its_trials():
    import numpy as np

    from attnsim.jobs.collect import stop_reasons

    se = np.array([0.5, 0.1, 0.2, np.nan, np.inf, 0.0])
    assert stop_reasons(se, None).to_pylist() == ["trials"] * 6
    assert (
        stop_reasons(se, 0.2).to_pylist()
        == np.where(se <= 0.2, "target_se", "max_trials").tolist()
        == ["max_trials", "target_se", "target_se", "max_trials", "max_trials", "target_se"]
    )
    assert stop_reasons(se[:0], 0.2).to_pylist() == []
