"""Collect reads chunk files a row group at a time (issue 24 item 3): a point whose trials go on
from one row group into the next is summarised as if read whole, with one thread or with the
reading and hashing ahead in others, and damage in any row group is still named."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.configs import simulated_robustness

from attnsim.errors import StoreError
from attnsim.jobs.collect import collect
from attnsim.plan.sweep import experiment_json
from attnsim.store import integrity


@pytest.fixture
def chunks(tmp_path):
    return simulated_robustness(tmp_path / "store")


def rewrite(path, rows_per_group: int, change=None) -> None:
    """The file again with row groups of `rows_per_group` rows (its provenance kept as it was),
    after `change` (table -> table) if given."""
    table = pq.read_table(path)
    if change is not None:
        table = change(table).replace_schema_metadata(table.schema.metadata)
    pq.write_table(table, path, row_group_size=rows_per_group, write_page_checksum=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_points_across_row_groups_are_summarised_as_read_whole(chunks, tmp_path, threads):
    settings, _, paths = chunks
    spec = experiment_json(settings, "robustness")
    whole = collect(spec, paths, tmp_path / "whole.parquet")
    rows = pq.read_table(paths[0], columns=["point_id"]).num_rows
    for path in paths:
        rewrite(path, 7)  # 7 is prime to every trial count: runs straddle the row groups
    assert pq.ParquetFile(paths[0]).num_row_groups == -(-rows // 7) > 2
    pieces = collect(spec, paths, tmp_path / "pieces.parquet", threads=threads)
    assert pq.read_table(pieces).equals(pq.read_table(whole))
    recorded = [json.loads(pq.read_metadata(p).metadata[b"attnsim"]) for p in (whole, pieces)]
    assert recorded[0]["content_sha256"] == recorded[1]["content_sha256"]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_changed_value_in_a_later_row_group_is_named(chunks, tmp_path, threads):
    settings, _, paths = chunks

    def change(table):
        column = table["sq_err"].to_numpy().copy()
        column[-1] += 1.0
        return table.set_column(table.schema.get_field_index("sq_err"), "sq_err", [column])

    rewrite(paths[1], 5, change)
    with pytest.raises(StoreError) as error:
        collect(experiment_json(settings, "robustness"), paths, tmp_path / "s.parquet", threads)
    assert str(error.value).startswith(f"{paths[1]}: damaged (column sq_err does not match")
    assert not (tmp_path / "s.parquet").exists()


def definition(values: list) -> str:
    """The string digest as integrity defines it, written plainly: the sorted distinct values as
    JSON, then each row's rank (-1 for a null) as int64."""
    h = hashlib.sha256(str(pa.string()).encode())
    distinct = sorted({v for v in values if v is not None})
    h.update(json.dumps(distinct).encode())
    rank = {v: i for i, v in enumerate(distinct)}
    h.update(np.array([rank[v] if v is not None else -1 for v in values], np.int64).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize(
    "values",
    [
        ["b", "a", "b", None, "c", "a"],
        [],
        [None, None],
        ['q"uote', "back\\slash", "tab\t", "é", "日本", "\x7f", "~", " ", "[x]", "Z", "a", "é"],
        ["ab", "a", "abc", "a\x00b", "", "ab"],
    ],
)
def test_string_digests_follow_the_definition_plain_or_dictionary_encoded(values):
    plain = pa.array(values, pa.string())
    half = len(values) // 2
    layouts = [
        pa.chunked_array([plain], pa.string()),
        pa.chunked_array([plain[:half], plain[half:]], pa.string()),
        pa.chunked_array([plain.dictionary_encode()]),
        pa.chunked_array([plain[:half].dictionary_encode(), plain[half:].dictionary_encode()]),
    ]
    assert {integrity.column_digest(c) for c in layouts} == {definition(values)}
