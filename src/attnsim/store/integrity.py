"""What keeps the store honest about what it holds: content checksums and the inventory check.

Damage inside a file (a flipped bit, a partial overwrite) is detected on read three ways: every
Parquet page carries a CRC-32 (written with `write_page_checksum`, verified on every read), each
column's decoded values have a sha256 in the file's provenance (`content_sha256`, checked for
the columns a read asks for), and the provenance itself has a sha256 (`META_DIGEST_KEY`).

The inventory (`experiment_files`, called by planning) matches every file of an experiment's
folder against its provenance: a file whose name is not `chunk-<its chunk id>.parquet` (a
second copy) is named, never counted twice. `summary_inputs` and `stale_summary` let planning see
that a summary was made from chunks that are no longer there or have changed (a deleted chunk is
then recomputed and the summary rebuilt, not trusted).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from attnsim.errors import StoreError
from attnsim.store import arrays

META_DIGEST_KEY = b"attnsim.sha256"  # sha256 of the provenance JSON stored under META_KEY
Meta = dict[str, Any]  # a file's provenance
ReadMeta = Callable[[Path], Meta]
Hash = Any  # a hashlib hash object


def column_digest(column: pa.ChunkedArray | pa.Array) -> str:
    """sha256 of a column's values, independent of how it is chunked or encoded (plain or
    dictionary): numbers by their bytes (hashed in place), strings by their sorted distinct
    values and each row's rank among them (so a dictionary-encoded read is not decoded)."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    h = hashlib.sha256(str(value_type).encode())
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        _strings(h, chunks)
        return h.hexdigest()
    # e.g. embeddings: each row's length, then the flattened values
    if (
        pa.types.is_list(value_type)
        or pa.types.is_large_list(value_type)
        or (pa.types.is_fixed_size_list(value_type))
    ):
        lengths = pa.chunked_array([pc.list_value_length(c) for c in chunks], pa.int32())
        h.update(column_digest(lengths.fill_null(arrays.scalar(-1, pa.int32()))).encode())
        values = pa.chunked_array([c.flatten() for c in chunks], value_type.value_type)
        h.update(column_digest(values).encode())
        return h.hexdigest()
    _numbers(h, chunks)
    return h.hexdigest()


def _numbers(h: Hash, chunks: Iterable[pa.Array]) -> None:
    """A numeric column's bytes: with nulls, first every row's null flag, then the values (nulls
    as 0), each over all the chunks in turn, so that the digest does not depend on how the column
    is chunked (a file of several row groups reads back as several chunks: hashed chunk by chunk,
    flags and values interleaved, a summary of more than 2^20 points with a null cell was refused
    as damaged). A column without nulls is its values' bytes."""
    chunks = list(chunks)
    if any(chunk.null_count for chunk in chunks):
        for chunk in chunks:
            h.update(arrays.to_numpy(chunk.is_null()).tobytes())
        chunks = [chunk.fill_null(arrays.scalar(0, chunk.type)) for chunk in chunks]
    for chunk in chunks:
        width = chunk.type.bit_width // 8
        h.update(
            memoryview(chunk.buffers()[1])[
                chunk.offset * width : (chunk.offset + len(chunk)) * width
            ]
        )


def _strings(h: Hash, chunks: Iterable[pa.Array]) -> None:
    """The sorted distinct values as JSON (`json.dumps` of the list), then each row's rank among
    them (-1: null) as int64, chunk by chunk. Sorted and ranked in Arrow: UTF-8 bytes sort as
    Python sorts the strings (by code point); `_strings_json` falls back to `json.dumps` for
    values it would escape. The batches of one Parquet row group share its dictionary: each
    distinct one is ranked once; a plain chunk is its own dictionary, one entry per row."""
    dictionaries: list[pa.Array] = []
    parts: list[tuple[int, np.ndarray | None]] = []
    for chunk in chunks:
        if not pa.types.is_dictionary(chunk.type) and _mostly_repeats(chunk):
            chunk = pc.dictionary_encode(chunk)  # a trials table's ids: rank the few distinct
        if pa.types.is_dictionary(chunk.type):
            codes = (
                chunk.indices.fill_null(arrays.scalar(-1, chunk.indices.type))
                if chunk.null_count
                else chunk.indices
            )
            if not dictionaries or not chunk.dictionary.equals(dictionaries[-1]):
                dictionaries.append(chunk.dictionary.cast(pa.large_string()))
            parts.append((len(dictionaries) - 1, arrays.to_numpy(codes)))
        else:
            dictionaries.append(chunk.cast(pa.large_string()))
            parts.append((len(dictionaries) - 1, None))
    values = (
        pa.concat_arrays(dictionaries) if dictionaries else arrays.strings([], pa.large_string())
    )
    order = arrays.to_numpy(pc.array_sort_indices(values, null_placement="at_end"))[
        : len(values) - values.null_count
    ]
    ordered = values.take(arrays.from_numpy(order, pa.uint64()))
    new = np.ones(len(ordered), dtype=bool)
    if len(ordered) > 1:
        new[1:] = arrays.to_numpy(pc.not_equal(ordered[1:], ordered[:-1]))
    rank = np.full(len(values), -1, dtype=np.int64)
    rank[order] = np.cumsum(new) - 1
    h.update(_strings_json(ordered.filter(arrays.from_numpy(new, pa.bool_()))))
    offsets = np.cumsum([0, *(len(d) for d in dictionaries)])
    for which, codes in parts:
        lookup = rank[offsets[which] : offsets[which + 1]]
        if codes is None:
            h.update(lookup.data)
        else:  # code -1 (a null) takes the appended -1
            h.update(np.take(np.append(lookup, -1), codes).data)


def _mostly_repeats(chunk: pa.Array) -> bool:
    """Whether most of a plain string chunk's rows repeat the row before (a trials table's point
    ids, one run per point): then ranking its few distinct values is ~8x cheaper than sorting
    every row (a locate round's chunk of 10^6 rows: 0.24 -> 0.03 CPU-s, measured), the same
    digest. A probe of one comparison per row; unique values (a summary's ids) stay plain."""
    size = len(chunk)
    if size < 1024:
        return False
    same = pc.equal(chunk.slice(1), chunk.slice(0, size - 1))
    return int(pc.sum(same).as_py() or 0) * 2 > size


def _strings_json(distinct: pa.Array) -> bytes:
    """`json.dumps(distinct.to_pylist()).encode()`, built in Arrow when no value has a character
    that JSON escapes (printable ASCII other than the quote and the backslash)."""
    if len(distinct) == 0:
        return b"[]"
    if pc.any(pc.match_substring_regex(distinct, r"[^ !#-\[\]-~]")).as_py():
        return json.dumps(distinct.to_pylist()).encode()
    bounds = arrays.from_numpy(np.array([0, len(distinct)]), pa.int64())
    listed = pa.LargeListArray.from_arrays(bounds, distinct)
    joined: str = pc.binary_join(listed, arrays.scalar('", "', pa.large_string()))[0].as_py()
    return b'["' + joined.encode() + b'"]'


def content_digests(table: pa.Table) -> dict[str, str]:
    """Every column's digest, by name: what a file's provenance records and `verify` recomputes."""
    return {name: column_digest(table[name]) for name in table.column_names}


def file_digest(digests: dict[str, str]) -> str:
    """One hash of a file's content (its columns' digests): what a summary records per chunk."""
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:32]


def meta_digest(raw: bytes) -> bytes:
    return hashlib.sha256(raw).hexdigest().encode()


def verify_meta(path: Path, raw: bytes, recorded: bytes | None) -> None:
    if recorded is not None and meta_digest(raw) != recorded:
        raise StoreError(
            f"{path}: damaged (its provenance does not match its checksum); delete it and rerun "
            "to recompute it"
        )


def verify_columns(path: Path, table: pa.Table, meta: Meta) -> None:
    """The decoded columns of `table` against the file's recorded `content_sha256`."""
    if meta.get("content_sha256"):
        verify_digests(
            path, {name: column_digest(table[name]) for name in table.column_names}, meta
        )


class ContentHasher:
    """`column_digest` of each column of a file read a piece (e.g. a row group) at a time: numbers
    are hashed as their pieces arrive, other columns (strings, lists) and the numeric columns in
    `keep` kept as read until `digests`, which hashes them whole. A numeric column with nulls must
    be among `keep` (`null_columns`): its digest hashes every row's null flag before any value."""

    def __init__(self, keep: Collection[str] = ()) -> None:
        self._numbers: dict[str, Hash] = {}
        self._kept: dict[str, list[pa.Array]] = {}
        self._types: dict[str, pa.DataType] = {}
        self._keep = set(keep)

    def update(self, table: pa.Table) -> None:
        for name in table.column_names:
            column = table[name]
            self._types.setdefault(name, column.type)
            numeric = pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
            if numeric and name not in self._keep:
                if name not in self._numbers:
                    self._numbers[name] = hashlib.sha256(str(column.type).encode())
                _numbers(self._numbers[name], column.chunks)
            else:
                self._kept.setdefault(name, []).extend(column.chunks)

    def digests(self) -> dict[str, str]:
        out = {name: h.hexdigest() for name, h in self._numbers.items()}
        for name, chunks in self._kept.items():
            out[name] = column_digest(pa.chunked_array(chunks, self._types[name]))
        return {name: out[name] for name in self._types}


def null_columns(metadata: pq.FileMetaData) -> set[str]:
    """The columns of a Parquet file that may hold nulls: a null count in some row group's
    statistics, or no statistics to say there is none."""
    out = set()
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for j in range(row_group.num_columns):
            column = row_group.column(j)
            stats = column.statistics
            if stats is None or not stats.has_null_count or stats.null_count:
                out.add(column.path_in_schema)
    return out


def verify_statistics(path: Path, group: pq.RowGroupMetaData, table: pa.Table) -> None:
    """A row group's footer statistics against its values: they must bound them (a reader such
    as DuckDB skips a row group whose statistics exclude what a query asks for, so a flipped
    `min` hides rows) and count its nulls. No checksum covers the footer's statistics."""
    for j in range(group.num_columns):
        column = group.column(j)
        stats, name = column.statistics, column.path_in_schema
        if stats is None or name not in table.column_names:  # nested leaves: not pruned on
            continue
        values = table[name]
        bounded = True
        if stats.has_min_max and values.null_count < len(values):
            low, high = (v.as_py() for v in pc.min_max(values).values())
            bounded = not (low < stats.min or high > stats.max)  # NaN compares False: skipped
        if not bounded or (stats.has_null_count and stats.null_count != values.null_count):
            raise StoreError(
                f"{path}: damaged (the footer's statistics of column {name} do not match its "
                "values); delete it and rerun to recompute it"
            )


def verify_digests(path: Path, digests: dict[str, str], meta: Meta) -> None:
    """Columns' digests (name -> `column_digest`) against the file's recorded `content_sha256`."""
    recorded = meta.get("content_sha256")
    if not recorded:
        return  # written before content checksums
    for name, found in digests.items():
        if name not in recorded:
            if name in ("kind", "experiment"):  # hive partition columns, from the path
                continue
            raise StoreError(
                f"{path}: damaged (a column {name!r} it was not written with); delete it and "
                "rerun to recompute it"
            )
        if found != recorded[name]:
            raise StoreError(
                f"{path}: damaged (column {name} does not match its checksum); delete it and "
                "rerun to recompute it"
            )


# --- the inventory: an experiment's files against their provenance ------------------------------


def experiment_files(paths: list[Path], read_meta: ReadMeta) -> list[tuple[Path, Meta]]:
    """(path, provenance) of each chunk file; a file that is a copy of another chunk (its name is
    not `chunk-<the chunk id its provenance records>.parquet`, or two files record one chunk) is a
    StoreError naming it, so that no rows are counted twice."""
    out: list[tuple[Path, Meta]] = []
    by_chunk: dict[str | None, Path] = {}
    for path in paths:
        path = Path(path)
        meta = read_meta(path)
        chunk = meta.get("chunk")
        if chunk and path.name != f"chunk-{chunk}.parquet":
            original = path.with_name(f"chunk-{chunk}.parquet")
            where = (
                f"a copy of {original.name}"
                if original.exists()
                else f"chunk {chunk} under another name"
            )
            raise StoreError(
                f"{path}: {where} (its provenance says chunk {chunk}); its rows would be counted "
                f"twice: delete {path.name} and rerun"
            )
        if chunk in by_chunk:
            raise StoreError(
                f"{path}: holds chunk {chunk}, as does {by_chunk[chunk].name}; delete one of them "
                "and rerun"
            )
        by_chunk[chunk] = path
        out.append((path, meta))
    return out


def summary_inputs(chunk_metas: list[tuple[Path, Meta]]) -> dict[str, str]:
    """chunk id -> content digest: what a summary records of the chunks it was made from."""
    return {
        meta["chunk"]: file_digest(meta.get("content_sha256", {}))
        for _, meta in chunk_metas
        if meta.get("chunk")
    }


def stale_summary(
    summary: Path, chunk_metas: list[tuple[Path, Meta]], read_meta: ReadMeta
) -> str | None:
    """Why the summary at `summary` no longer describes the experiment's chunk files (a chunk
    deleted, added or replaced since it was made), or None when it does or does not exist."""
    summary = Path(summary)
    if not summary.exists():
        return None
    recorded = read_meta(summary).get("chunks")
    if recorded is None:
        return "made before summaries recorded their chunks"
    current = summary_inputs(chunk_metas)
    missing = sorted(set(recorded) - set(current))
    if missing:
        return f"its chunk {missing[0]} is no longer in the store" + (
            f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        )
    changed = sorted(c for c in recorded if recorded[c] != current[c])
    if changed:
        return f"its chunk {changed[0]} has changed since"
    return None


def current_chunks(
    folder: Path,
    read_meta: Callable[[Path], Meta],
    summary: Path | None,
    kind: str,
    experiment: str,
) -> list[tuple[Path, Meta]]:
    """(path, provenance) of the chunk files of an experiment's folder that its views read: the
    ones its summary was made from (each unchanged since), or with no summary yet (a first run,
    or collect rewriting it) every chunk but a top-up's old one once all its top-ups are whole
    and a top-up whose siblings are not (the old one still holds those points). So a query
    never sees a point twice, nor chunks the summary does not describe. A chunk of another
    experiment, a copy, a changed chunk or chunks of two settings mixed is a StoreError."""
    inventory = experiment_files(sorted(Path(folder).glob("*.parquet")), read_meta)
    for path, meta in inventory:
        if (meta.get("experiment"), meta.get("kind")) != (experiment, kind):
            raise StoreError(
                f"{path}: a chunk of experiment {meta.get('experiment')!r} (kind "
                f"{meta.get('kind')}) in the folder of {experiment!r} (kind {kind}); move it "
                "back or delete it and rerun"
            )
    recorded = read_meta(summary).get("chunks") if summary is not None else None
    if summary is not None and recorded is not None:
        return _recorded_chunks(inventory, summary, recorded)
    current = _after_top_ups(inventory)
    lineages = {(meta.get("seed"), meta.get("algorithm_version")) for _, meta in current}
    if len(lineages) > 1:  # a top-up's trials differ from its siblings', its lineage does not
        raise StoreError(
            f"{folder}: chunks of {len(lineages)} different seeds or algorithm versions side by "
            "side; move the folder away and rerun"
        )
    return current


def _recorded_chunks(
    inventory: list[tuple[Path, Meta]], summary: Path, recorded: dict[str, str]
) -> list[tuple[Path, Meta]]:
    by_chunk = {meta.get("chunk"): (path, meta) for path, meta in inventory}
    out = []
    for chunk, digest in sorted(recorded.items()):
        if chunk not in by_chunk:
            raise StoreError(
                f"{summary}: made from chunk {chunk}, which is no longer in the store; run "
                "`attnsim run` to recompute it"
            )
        path, meta = by_chunk[chunk]
        if file_digest(meta.get("content_sha256", {})) != digest:
            raise StoreError(
                f"{path}: not the chunk {summary.name} was made from (replaced since, e.g. by a "
                "copy from another run); run `attnsim run` to rebuild the experiment"
            )
        out.append((path, meta))
    return out


def chunk_points(meta: Meta) -> int:
    """How many grid points a chunk holds (its spec, in its provenance)."""
    return len(json.loads(meta.get("spec") or "{}").get("points", []))


def _after_top_ups(inventory: list[tuple[Path, Meta]]) -> list[tuple[Path, Meta]]:
    by_chunk = {meta.get("chunk"): meta for _, meta in inventory}
    tops: dict[str, int] = {}  # replaced chunk -> points its finished top-ups hold
    for _, meta in inventory:
        old = (meta.get("topped_up") or {}).get("chunk")
        if old is not None:
            tops[old] = tops.get(old, 0) + chunk_points(meta)
    whole = {
        old
        for old, points in tops.items()
        if old in by_chunk and points >= chunk_points(by_chunk[old])
    }
    out = []
    for path, meta in inventory:
        old = (meta.get("topped_up") or {}).get("chunk")
        if meta.get("chunk") in whole or (old in by_chunk and old not in whole):
            continue
        out.append((path, meta))
    return out
