"""What a figures job draws from: an experiment's summary, or for a large experiment a sub-grid of
it, read within bounded memory.

A kind's figures draw every point they are given (most of them point by point: 20,000 points took
a figures job 9 minutes and 880 MB), and a summary of 10^7 points is gigabytes as a DataFrame. So
an experiment of more points than its kind's figures draw (`Presentation.figure_points`) is drawn
from a sub-grid: each parameter keeps some of its values, evenly spread over their sorted range
with the smallest and largest among them, the parameters with the most values thinned first,
numbers before names (a noise family is dropped only when thinning the numeric axes cannot reach
the bound: `records.grid.sub_grid`). Every drawn point is a point of the grid with its own
interval; nothing is averaged across parameters, which would put one theory line under points of
different settings. The summary is read a batch of rows at a time, each batch's rows outside the
sub-grid dropped as it is read and every column still checked against its recorded sha256, so
memory holds the sub-grid, not the experiment. The bill prices the figures by the same sub-grid
(`records.cost.figures_seconds`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnsim.kinds.base import Kind
from attnsim.records.experiment import Experiment
from attnsim.records.grid import grid_columns, sub_grid
from attnsim.store import integrity, parquet

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

BATCH_ROWS = 65_536  # rows of the summary decoded at a time when it is read in part


def _grid_values(meta: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The experiment's grid, canonical values per parameter, from a summary's provenance."""
    experiment = Experiment.from_json(meta["experiment_config"])
    return {name: list(v) for name, v in grid_columns(experiment).values.items()}


def read(path: Path, kind: Kind, ids: bool = False) -> pd.DataFrame:
    """The rows the figures of the summary at `path` draw, as a DataFrame: the whole summary for
    an experiment within its kind's `figure_points`, else its sub-grid (the module docstring),
    point ids only with `ids`. A damaged file is a StoreError naming it."""
    import pyarrow as pa

    meta = parquet.read_meta(path)
    parquet.check_summary_place(path, meta)
    grid = _grid_values(meta) if "experiment_config" in meta else {}
    bound = kind.presentation.figure_points
    if not grid or math.prod(len(set(v)) for v in grid.values()) <= bound:
        frame = parquet.read_summary(path, ids=ids).to_pandas(split_blocks=True, self_destruct=True)
        pa.default_memory_pool().release_unused()  # the read's buffers, before drawing
        return frame
    kept = sub_grid(grid, bound)
    thinned = {n: v for n, v in kept.items() if len(v) < len(set(grid[n]))}
    log.info(
        "%s: %s points, drawn as a sub-grid of %s (%s)",
        meta.get("experiment"),
        f"{math.prod(len(set(v)) for v in grid.values()):,}",
        f"{math.prod(len(v) for v in kept.values()):,}",
        ", ".join(f"{n}: {len(v)} of {len(set(grid[n]))} values" for n, v in thinned.items()),
    )
    table = _read_rows(Path(path), meta, thinned, ids)
    return table.to_pandas(split_blocks=True, self_destruct=True)


def _read_rows(path: Path, meta: Mapping[str, Any], kept: Mapping[str, list[Any]], ids: bool):
    """The summary's rows whose parameters take the `kept` values, read a batch at a time; every
    column read is checked against its recorded sha256 over the whole file, pages against their
    CRC."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    columns = [c for c in schema.names if ids or c != "point_id"]
    # names dictionary-encoded as read: a column's checksum needs all of it (its distinct values),
    # kept as 4-byte codes rather than 10^7 strings
    names = [c for c in columns if pa.types.is_string(schema.field(c).type)]
    file = pq.ParquetFile(
        path, page_checksum_verification=True, pre_buffer=False, read_dictionary=names
    )
    # a numeric column with nulls is hashed whole, one at a time, after the rows are read: its
    # checksum hashes every row's null flag before any value (integrity.column_digest)
    nullable = sorted(integrity.null_columns(file.metadata) & set(columns) - set(names))
    hasher = integrity.ContentHasher()
    parts = []
    try:
        for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False):
            table = pa.Table.from_batches([batch])
            hasher.update(table.drop_columns(nullable))
            mask = None
            for name, values in kept.items():
                kept_values = pa.array(values, schema.field(name).type)
                inside = pc.is_in(_plain(table[name]), value_set=kept_values)
                mask = inside if mask is None else pc.and_(mask, inside)
            parts.append(table if mask is None else table.filter(mask))
        digests = hasher.digests()
        for name in nullable:
            whole = pq.read_table(path, columns=[name], page_checksum_verification=True)
            digests[name] = integrity.column_digest(whole[name])
            del whole
    except parquet.UNREADABLE as error:
        raise parquet.damaged(path, error) from None
    integrity.verify_digests(path, digests, dict(meta))
    rows = pa.concat_tables(parts) if parts else schema.empty_table().select(columns)
    for name in names:  # the drawn rows' names as strings again (not pandas categories)
        index = rows.column_names.index(name)
        rows = rows.set_column(index, schema.field(name), _plain(rows[name]))
    return rows


def _plain(column):
    """A column with dictionary-encoded chunks decoded (others as they are)."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        return column.cast(column.type.value_type)
    return column
