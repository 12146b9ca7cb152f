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
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from attnsim.errors import StoreError

META_DIGEST_KEY = b"attnsim.sha256"  # sha256 of the provenance JSON stored under META_KEY


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
    if (
        pa.types.is_list(value_type)
        or pa.types.is_large_list(value_type)
        or (pa.types.is_fixed_size_list(value_type))
    ):  # e.g. embeddings: each row's length, then the flattened values
        lengths = pa.chunked_array([pc.list_value_length(c) for c in chunks], pa.int32())
        h.update(column_digest(lengths.fill_null(-1)).encode())
        values = pa.chunked_array([c.flatten() for c in chunks], value_type.value_type)
        h.update(column_digest(values).encode())
        return h.hexdigest()
    for chunk in chunks:
        if chunk.null_count:
            h.update(np.asarray(chunk.is_null()).tobytes())
            chunk = chunk.fill_null(0)
        width = chunk.type.bit_width // 8
        h.update(
            memoryview(chunk.buffers()[1])[
                chunk.offset * width : (chunk.offset + len(chunk)) * width
            ]
        )
    return h.hexdigest()


def _strings(h, chunks) -> None:
    # the batches of one Parquet row group share its dictionary: each distinct one is decoded once
    dictionaries: list[tuple[pa.Array, list]] = []
    parts = []
    for chunk in chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.dictionary_encode(chunk)
        codes = chunk.indices.fill_null(-1) if chunk.null_count else chunk.indices
        if not dictionaries or not chunk.dictionary.equals(dictionaries[-1][0]):
            dictionaries.append((chunk.dictionary, chunk.dictionary.to_pylist()))
        parts.append((len(dictionaries) - 1, np.asarray(codes)))
    distinct = sorted({v for _, values in dictionaries for v in values if v is not None})
    rank = {v: i for i, v in enumerate(distinct)}
    h.update(json.dumps(distinct).encode())
    lookups = [
        np.array([rank[v] if v is not None else -1 for v in values] + [-1], dtype=np.int64)
        for _, values in dictionaries
    ]
    for which, codes in parts:
        h.update(np.take(lookups[which], codes).data)  # code -1 (a null) takes the appended -1


def content_digests(table: pa.Table) -> dict[str, str]:
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


def verify_columns(path: Path, table: pa.Table, meta: dict) -> None:
    """The decoded columns of `table` against the file's recorded `content_sha256`."""
    recorded = meta.get("content_sha256")
    if not recorded:
        return  # written before content checksums
    for name in table.column_names:
        if name not in recorded:
            if name in ("kind", "experiment"):  # hive partition columns, from the path
                continue
            raise StoreError(
                f"{path}: damaged (a column {name!r} it was not written with); delete it and "
                "rerun to recompute it"
            )
        if column_digest(table[name]) != recorded[name]:
            raise StoreError(
                f"{path}: damaged (column {name} does not match its checksum); delete it and "
                "rerun to recompute it"
            )


# --- the inventory: an experiment's files against their provenance ------------------------------


def experiment_files(paths: list[Path], read_meta) -> list[tuple[Path, dict]]:
    """(path, provenance) of each chunk file; a file that is a copy of another chunk (its name is
    not `chunk-<the chunk id its provenance records>.parquet`, or two files record one chunk) is a
    StoreError naming it, so that no rows are counted twice."""
    out, by_chunk = [], {}
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


def summary_inputs(chunk_metas: list[tuple[Path, dict]]) -> dict[str, str]:
    """chunk id -> content digest: what a summary records of the chunks it was made from."""
    return {
        meta["chunk"]: file_digest(meta.get("content_sha256", {}))
        for _, meta in chunk_metas
        if meta.get("chunk")
    }


def stale_summary(summary: Path, chunk_metas: list[tuple[Path, dict]], read_meta) -> str | None:
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
