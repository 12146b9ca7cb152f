"""The Parquet result store: typed schemas, provenance, atomic writes, safe reads.

Layout (hive-partitioned, so the whole store opens as one dataset)::

    <root>/trials/kind=<kind>/experiment=<name>/chunk-<id>.parquet    one row per trial
    <root>/summary/kind=<kind>/experiment=<name>/summary.parquet      one row per grid point

Files are written under a hidden temporary name and renamed into place, so a
reader (or a crash) never sees half a file; hidden names are skipped by
pyarrow.dataset and by the ``*.parquet`` globs used here and in DuckDB.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import platform
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import attnsim
from attnsim.errors import StoreError
from attnsim.files import atomic_path, sweep_dead_temps
from attnsim.kinds import as_kind
from attnsim.kinds.base import Column, Kind
from attnsim.store import integrity
from attnsim.store.integrity import Meta

T = TypeVar("T")
# A row group of a store file as `read_pieces` hands it on: (path, provenance, table, last).
Piece = tuple[Path, Meta, pa.Table, bool]

log = logging.getLogger(__name__)

META_KEY = b"attnsim"
FORMAT = "attnsim-store/1"
TABLES = ("trials", "summary")

# `kind` and `experiment` are hive partition columns: they come from the path
# (pyarrow.dataset, pandas, DuckDB with hive_partitioning) and each file's provenance.
PARTITIONS = (
    Column("kind", pa.string(), "experiment kind (hive partition, from the path)"),
    Column(
        "experiment", pa.string(), "experiment name from the config (hive partition, from the path)"
    ),
)
IDENTITY = (
    Column(
        "point_id", pa.string(), "stable id of the grid point (hash of kind and parameter values)"
    ),
)


def experiment_dir(root: Path, table: str, kind: str, experiment: str) -> Path:
    return Path(root) / table / f"kind={kind}" / f"experiment={experiment}"


def chunk_path(root: Path, kind: str, experiment: str, chunk: str) -> Path:
    return experiment_dir(root, "trials", kind, experiment) / f"chunk-{chunk}.parquet"


def summary_path(root: Path, kind: str, experiment: str) -> Path:
    return experiment_dir(root, "summary", kind, experiment) / "summary.parquet"


def trials_schema(kind: Kind | str) -> pa.Schema:
    kind = as_kind(kind)
    columns = [
        *IDENTITY,
        Column("trial", pa.int64(), "trial index within the point (0-based); trials are i.i.d."),
        *kind.schema.params,
        *kind.schema.metrics,
    ]
    return pa.schema([c.field() for c in columns])


def summary_schema(kind: Kind | str) -> pa.Schema:
    kind = as_kind(kind)
    stats = {
        "mean": "mean over trials of",
        "se": "standard error of the mean of",
        "ci_low": "lower end of the 95% Student-t interval of the mean of",
        "ci_high": "upper end of the 95% Student-t interval of the mean of",
    }
    fields = [c.field() for c in (*IDENTITY, *kind.schema.params)]
    fields.append(Column("n_trials", pa.int64(), "number of trials").field())
    fields.append(
        Column(
            "stop_reason",
            pa.string(),
            "why n_trials: 'trials' (the fixed count), 'target_se' (adaptive: the main metric's "
            "SE reached target_se), 'max_trials' (adaptive: the cap came first)",
        ).field()
    )
    by_name = {c.name: c for c in kind.schema.metrics}
    for metric in kind.summary_metrics:
        for suffix, text in stats.items():
            doc = f"{text} {metric}: {by_name[metric].doc}"
            fields.append(Column(f"{metric}_{suffix}", pa.float64(), doc).field())
        if metric in kind.summary.finite_metrics:
            finite = f"number of trials with a finite {metric}"
            doc = f"{finite}: its mean, SE and CI are over these only"
            fields.append(Column(f"{metric}_finite", pa.int64(), doc).field())
    for metric in kind.summary.extreme_metrics:
        for suffix, text in (("min", "smallest"), ("max", "largest")):
            doc = f"{text} value over trials of {metric}"
            fields.append(Column(f"{metric}_{suffix}", pa.float64(), doc).field())
    fields += [c.field(nullable=True) for c in (*kind.theory.columns, *kind.summary.extra_columns)]
    return pa.schema(fields)


def provenance(**fields: Any) -> Meta:
    return {
        "format": FORMAT,
        "attnsim_version": attnsim.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "created_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **fields,
    }


def write_atomic(
    table: pa.Table,
    path: Path,
    meta: Meta,
    digests: dict[str, str] | None = None,
    guard: Callable[[], AbstractContextManager[object]] | None = None,
) -> None:
    """Write `table` with provenance `meta` to `path` via a hidden temp file and a rename.
    `digests`: content digests of some of its columns already computed (`column_digest` of that
    very column), the others are computed here. A full disk or quota is a WriteError naming the
    file and the space it needs; no temp file stays. `guard`: what the rename happens inside
    (`files.atomic_path`)."""
    path = Path(path)
    digests = digests or {}
    content = {
        name: digests[name] if name in digests else integrity.column_digest(table[name])
        for name in table.column_names
    }
    raw = json.dumps({**meta, "content_sha256": content}, sort_keys=True).encode()
    table = table.replace_schema_metadata(
        {
            **(table.schema.metadata or {}),
            META_KEY: raw,
            integrity.META_DIGEST_KEY: integrity.meta_digest(raw),
        }
    )
    need = max(table.nbytes, table.num_rows * table.num_columns * 8)  # an upper bound
    with atomic_path(path, need=need, guard=guard) as tmp:
        pq.write_table(
            table,
            tmp,
            compression="zstd",
            write_statistics=True,
            write_page_checksum=True,
            **encodings(table.schema),
        )


def encodings(schema: pa.Schema) -> dict[str, Any]:
    """Parquet encodings by column type: floating-point columns BYTE_STREAM_SPLIT (each byte
    position of the values stored together, Parquet's encoding made for floats), every other
    column dictionary-encoded. Measured values are nearly all distinct: their dictionary page
    fills after ~130k values and the rest is stored plain, which zstd barely shrinks (~10%).
    Split, zstd finds the repeats in the signs and exponents: a 10^8-row store is 16% smaller and
    reads ~40% faster (benchmarks/RESULTS.md). Nested columns (embeddings) are stored plain:
    their leaves are not named here."""
    split = [f.name for f in schema if pa.types.is_floating(f.type)]
    return {
        "use_dictionary": [name for name in schema.names if name not in split],
        "column_encoding": dict.fromkeys(split, "BYTE_STREAM_SPLIT"),
    }


def sweep_orphans(root: Path) -> list[Path]:
    """Delete temp files of writers that died on this host (killed jobs); others are left alone."""
    return sweep_dead_temps(root)


_META_CACHE: dict[tuple[Any, ...] | None, bytes] = {}


def read_meta(path: Path) -> Meta:
    """Provenance of a store file; StoreError if it is truncated or not one of ours. Cached per
    (path, inode, size, mtime): planning and the inventory read each footer once. The cache holds
    the checked JSON text, parsed afresh at each call: a copy no caller shares (json.loads, a
    tenth of deepcopy's time)."""
    key: tuple[Any, ...] | None
    try:
        st = os.stat(path)
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key in _META_CACHE:
        cached: Meta = json.loads(_META_CACHE[key])
        return cached
    raw, meta = _read_meta(path)
    if key is not None:
        if len(_META_CACHE) > 100_000:
            _META_CACHE.clear()
        _META_CACHE[key] = raw
    return meta


# What reading a store file raises on damaged bytes (ValueError: bytes that are not UTF-8)
UNREADABLE = (OSError, ValueError, pa.ArrowException)


def damaged(path: Path, error: Exception) -> StoreError:
    """The one line for a store file whose bytes cannot be read back."""
    return StoreError(f"{path}: damaged ({one_line(error)}); delete it and rerun to recompute it")


def _read_meta(path: Path) -> tuple[bytes, Meta]:
    """The provenance's JSON text and its mapping, checked."""
    try:
        metadata = pq.read_metadata(path).metadata or {}
    except UNREADABLE as error:
        raise StoreError(
            f"{path}: not a readable Parquet file ({one_line(error)}); delete it and rerun to "
            "recompute it"
        ) from None
    raw = metadata.get(META_KEY)
    if raw is None:
        raise StoreError(
            f"{path}: a foreign Parquet file (no attnsim provenance) inside the store; move it "
            "out of results/"
        )
    integrity.verify_meta(path, raw, metadata.get(integrity.META_DIGEST_KEY))
    try:
        meta: Meta = json.loads(raw)
    except ValueError:
        raise StoreError(
            f"{path}: damaged (its provenance is not JSON); delete it and rerun to recompute it"
        ) from None
    if meta.get("format") != FORMAT:
        raise StoreError(
            f"{path}: store format {meta.get('format')!r}, this attnsim reads {FORMAT!r}"
        )
    return raw, meta


def read_table(
    path: Path, columns: list[str] | None = None, dictionary: list[str] | None = None
) -> pa.Table:
    """A store file's table (checked first); `dictionary` columns are read dictionary-encoded.
    Damage is a StoreError naming the file: page checksums, then the columns' content checksums."""
    meta = read_meta(path)
    try:
        table = pq.read_table(
            path, columns=columns, read_dictionary=dictionary, page_checksum_verification=True
        )
    except UNREADABLE as error:
        raise damaged(path, error) from None
    integrity.verify_columns(path, table, meta)
    return table


def verify_file(path: Path) -> None:
    """Every byte a reader may be served from, a row group at a time: page checksums, each
    column's content checksum, each row group's footer statistics (DuckDB verifies none of it,
    and skips row groups by those statistics). Damage is a StoreError naming the file."""
    meta = read_meta(path)
    try:
        file = pq.ParquetFile(path, page_checksum_verification=True, pre_buffer=False)
        hasher = integrity.ContentHasher(keep=integrity.null_columns(file.metadata))
        for group in range(file.num_row_groups):
            table = file.read_row_group(group, use_threads=False)
            integrity.verify_statistics(path, file.metadata.row_group(group), table)
            hasher.update(table)
    except UNREADABLE as error:
        raise damaged(path, error) from None
    integrity.verify_digests(path, hasher.digests(), meta)


def read_summary(path: Path, ids: bool = False) -> pa.Table:
    """A summary's table, checked as `read_table` checks it, without its point ids unless `ids`:
    a million-point summary's ids are most of what reading and checking it costs (their content
    sha256 over 10^6 strings), and the statistics (figures, headlines, claims) do not read
    them."""
    check_summary_place(path, read_meta(path))
    columns = None if ids else [c for c in pq.read_schema(path).names if c != "point_id"]
    return read_table(path, columns=columns)


def check_summary_place(path: Path, meta: Meta) -> None:
    """StoreError when a summary's provenance names another experiment or kind than its folder
    (a summary copied in from elsewhere): its columns are another kind's, and `attnsim claims`
    stopped with a KeyError traceback or judged another experiment's points."""
    path = Path(path)
    here = (path.parent.name, path.parent.parent.name)
    own = (f"experiment={meta.get('experiment')}", f"kind={meta.get('kind')}")
    if here != own:
        raise StoreError(
            f"{path}: the summary of experiment {meta.get('experiment')!r} (kind "
            f"{meta.get('kind')}), not of this folder's; delete it (or move it back) and rerun"
        )


def read_pieces(
    paths: list[Path],
    columns: list[str],
    dictionary: list[str] | None = None,
    threads: int = 1,
    check_all: bool = False,
) -> Iterator[tuple[pa.Table, bool]]:
    """An iterator of (table, last) for each row group of each file in turn (`last`: the file's
    final piece), checked as `read_table` checks a file: page checksums as each row group is
    read, the columns' content checksums over the whole file before its last piece is given (a
    damaged file is a StoreError naming it). Memory holds a few row groups, not whole files.
    With `threads` > 1 reading and hashing each run in a thread of their own, started at once,
    one piece ahead of the next stage (Arrow's decoding and hashlib release the GIL): the
    caller's work, the reading and the hashing overlap. Each piece is decoded on one thread
    (Arrow's pool would only compete with the other two). `check_all`: every column of the
    files is read and checked, `columns` given (a flipped bit in a column the caller does not
    read, such as `trial`, is then found by the run too, not only by a query)."""
    parallel = threads > 1
    read = None if check_all else columns
    pieces: Iterator[Piece] = (
        piece for path in paths for piece in _file_pieces(Path(path), read, dictionary)
    )
    if parallel:
        pieces = _ahead(pieces, depth=1)
    checked = _checked(pieces, columns if check_all else None)
    return _ahead(checked, depth=1) if parallel else checked


def _file_pieces(
    path: Path, columns: list[str] | None, dictionary: list[str] | None
) -> Iterator[Piece]:
    """(path, provenance, table, last) of each row group (one empty table for a file of none)."""
    meta = read_meta(path)
    try:
        file = pq.ParquetFile(
            path, read_dictionary=dictionary, page_checksum_verification=True, pre_buffer=False
        )
        groups = file.num_row_groups
        if groups == 0:
            yield path, meta, file.read(columns=columns, use_threads=False), True
            return
        for group in range(groups):
            table = file.read_row_group(group, columns=columns, use_threads=False)
            yield path, meta, table, group == groups - 1
    except UNREADABLE as error:
        raise damaged(path, error) from None


def _checked(
    pieces: Iterable[Piece], keep: list[str] | None = None
) -> Iterator[tuple[pa.Table, bool]]:
    """(table, last) of `_file_pieces`, each file's content checksums verified over its pieces
    before its last piece is given. `keep`: only those columns are given and content-checked;
    the others were checked by their pages' CRC32 as they were read (cheaper than a sha256,
    enough to find a flipped bit)."""
    hasher = integrity.ContentHasher()
    for path, meta, table, last in pieces:
        if keep is not None:
            table = table.select(keep)
        hasher.update(table)
        if last:
            integrity.verify_digests(path, hasher.digests(), meta)
            hasher = integrity.ContentHasher()
        yield table, last


def _ahead(items: Iterable[T], depth: int) -> Iterator[T]:
    """`items`, produced up to `depth` ahead in a second thread started now (its exception is
    re-raised to the consumer)."""
    import queue
    import threading

    ready: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(entry: tuple[Any, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((done, None))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer
            put((done, error))

    worker = threading.Thread(target=produce, name="attnsim-read-ahead", daemon=True)
    worker.start()

    def consume() -> Iterator[T]:
        try:
            while True:
                item, error = ready.get()
                if error is not None:
                    raise error
                if item is done:
                    return
                yield item
        finally:
            stop.set()
            worker.join()

    return consume()


def one_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 160 else text[:157] + "..."


def check_folders(root: Path) -> None:
    """The store's folders are folders: anything else where one goes (a file named `store`) is
    one line here, not a traceback from whatever lists it first."""
    root = Path(root)
    for folder in (root.parent, root, *(root / table for table in TABLES)):
        if os.path.lexists(folder) and not folder.is_dir():
            raise StoreError(
                f"{folder}: the store needs a folder here, not a file; move it away and rerun"
            )


CLOCK_SLACK = 60.0  # seconds a file may be dated ahead of this machine's clock (NFS, rounding)


def check_clock(root: Path) -> None:
    """No store file dated in the future: Snakemake touches a job's output to now and then fails
    the job if an input is newer (and removes the output), run after run; and it plans by those
    dates. One line naming the newest such file before any job."""
    import time

    now = time.time()
    ahead = [
        (path.stat().st_mtime, path)
        for path in Path(root).glob("*/kind=*/experiment=*/*.parquet")
        if path.stat().st_mtime > now + CLOCK_SLACK
    ]
    if ahead:
        mtime, path = max(ahead)
        raise StoreError(
            f"{path}: dated {(mtime - now) / 60:,.0f} min in the future ({len(ahead)} store "
            "files are; a clock set wrong here or where they were written): set their dates "
            f"to now (find {root} -newermt now -exec touch {{}} +) and rerun"
        )


def table_files(root: Path, table: str = "trials") -> list[Path]:
    """Every finished file of a table (`trials`: chunk files, `summary`: summaries; temporary
    files are hidden and skipped)."""
    base = Path(root) / table
    return sorted(base.glob("kind=*/experiment=*/*.parquet")) if base.is_dir() else []


def experiment_chunks(root: Path, kind: str, experiment: str) -> list[Path]:
    return sorted(experiment_dir(root, "trials", kind, experiment).glob("chunk-*.parquet"))


def experiment_inventory(root: Path, kind: str, experiment: str) -> list[tuple[Path, Meta]]:
    """(path, provenance) of every chunk file of an experiment, each checked against its name: a
    second copy of a chunk is a StoreError naming it (`integrity.experiment_files`)."""
    folder = experiment_dir(root, "trials", kind, experiment)
    return integrity.experiment_files(sorted(folder.glob("*.parquet")), read_meta)


def stale_summaries(root: Path, experiments: dict[str, str]) -> dict[Path, str]:
    """summary file -> why it no longer describes its experiment's chunk files (a chunk deleted or
    replaced since it was made), for `experiments` (name -> kind). Planning forces these summaries
    to be rebuilt, so a deleted chunk is recomputed instead of trusted from the old summary."""
    out = {}
    for name, kind in experiments.items():
        path = summary_path(root, kind, name)
        why = integrity.stale_summary(path, experiment_inventory(root, kind, name), read_meta)
        if why:
            out[path] = why
    return out


def summary_behind(
    root: Path, kind: str, experiment: str, chunks: list[str], settings: str
) -> str | None:
    """Why the experiment's summary does not describe what the plan says it must (the settings
    `settings`, made from exactly `chunks`, each as stored now), or None when it does or does
    not exist. Decided from the store's provenance, never from timestamps or Snakemake's
    metadata: a copied results folder, a removed `.snakemake`, `--rerun-triggers mtime` or a
    skewed clock do not hide a new grid value, a removed one or a deleted chunk."""
    path = summary_path(root, kind, experiment)
    if not path.exists():
        return None
    meta = read_meta(path)
    if meta.get("experiment_config") != settings:
        return "the experiment's settings changed since it was made"
    recorded = meta.get("chunks")
    if recorded is None:
        return "made before summaries recorded their chunks"
    if set(recorded) != set(chunks):
        return "the grid's chunks changed since it was made"
    stored = integrity.summary_inputs(experiment_inventory(root, kind, experiment))
    changed = sorted(c for c in chunks if stored.get(c) != recorded[c])
    if changed:
        return f"its chunk {changed[0]} is missing or changed"
    return None


UNRECORDED_CLASS = "unrecorded"  # chunks written before provenance named the CPU class


def inputs_provenance(paths: list[Path], experiment: str) -> Meta:
    """What a summary records of the chunk files it was made from: `chunks` (chunk id -> content
    digest, so planning sees a deleted or replaced chunk) and `cpu_classes` (`cpu_classes`)."""
    metas = integrity.experiment_files(paths, read_meta)
    return {
        "chunks": integrity.summary_inputs(metas),
        "cpu_classes": cpu_classes([m for _, m in metas], experiment),
    }


def cpu_classes(metas: list[Meta], experiment: str = "") -> dict[str, int]:
    """CPU class (attnsim.records.cpu.cpu_class) -> number of the chunks (provenances `metas`) it
    computed.

    Mixing classes in one experiment is allowed and reported: each point's rows come from one
    chunk, so each is bit-identical to what its class computes and within the cross-class
    tolerance of any other class's (docs/science.md §8.4); the experiment as a whole is then
    reproducible point by point, not bit for bit on one machine. The summary's provenance
    records the counts and collect logs a warning naming the classes."""
    counts: dict[str, int] = {}
    for meta in metas:
        klass = meta.get("cpu", {}).get("class", UNRECORDED_CLASS)
        counts[klass] = counts.get(klass, 0) + 1
    if len(counts) > 1:
        log.warning("%s", mixed_classes_note(experiment, counts))
    return dict(sorted(counts.items()))


def mixed_classes_note(experiment: str, counts: dict[str, int]) -> str:
    classes = ", ".join(f"{c} ({n} chunk{'s' * (n != 1)})" for c, n in sorted(counts.items()))
    return (
        f"{experiment}: rows computed on {len(counts)} CPU classes: {classes}; each point is "
        "bit-identical to its class's "
        "rows and within docs/science.md §8.4's tolerance of the others, the experiment is not "
        "bit-identical to a one-class run"
    )
