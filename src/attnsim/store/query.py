"""SQL over the store with DuckDB: one view per table and per experiment.

Views: `trials` and `summary` (every experiment, columns united by name),
`<experiment>` (its summary), `<experiment>_trials` and `provenance` (one
row per store file). Only finished files are listed, each checked first, so
a query during a run never reads half a file.

The sandbox holds from the connection's first statement: the views a query names are found by
tokenizing it (nothing is bound, so nothing is opened), and the one connection is confined
(external access, extension install and load off; only the store's checked files readable)
before any view is made. `--timeout` covers every phase, checking the files included; results
are streamed in batches to the terminal or the output file, so `--memory` bounds the whole
query, `--output` too.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
import os
import stat
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from attnsim import files
from attnsim.errors import AttnsimError, QueryError, StoreError
from attnsim.store import integrity, parquet

log = logging.getLogger(__name__)

FORMATS = ("table", "csv", "json", "parquet")
BY_SUFFIX = {".csv": "csv", ".json": "json", ".parquet": "parquet"}
DEFAULT_MEMORY = "1GB"  # DuckDB's own default is 80% of RAM
DEFAULT_TIMEOUT = 300.0  # seconds
TERMINAL_ROWS = 40  # a table printed to the terminal stops here, with the total and how to get all
BATCH_ROWS = 65_536  # rows fetched at a time: what Python holds besides DuckDB's memory_limit


class Clock:
    """The query's --timeout, over every phase: the store's files are checked under it (`check`
    between files) and DuckDB's work is interrupted by it (`attach`)."""

    def __init__(self, timeout: float) -> None:
        if not timeout > 0:
            raise QueryError(f"--timeout {timeout}: give a positive number of seconds")
        self.timeout = timeout
        self.expired = threading.Event()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._guard = threading.Lock()
        self._timer = threading.Timer(timeout, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._guard:
            self.expired.set()
            if self._con is not None:
                self._con.interrupt()

    def attach(self, con: duckdb.DuckDBPyConnection) -> None:
        with self._guard:
            self._con = con

    def check(self) -> None:
        if self.expired.is_set():
            raise self.error()

    def error(self) -> QueryError:
        return QueryError(
            f"query stopped after {self.timeout:g} s (--timeout {self.timeout:g}); narrow it or "
            "give a longer --timeout"
        )

    def stop(self) -> None:
        self._timer.cancel()
        self._timer.join()  # no thread left running into the interpreter's exit
        with self._guard:
            self._con = None


def _files_sql(paths: list[Path]) -> str:
    listed = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{listed}], hive_partitioning = true, union_by_name = true)"


def referenced(sql: str | None, views: set[str]) -> set[str] | None:
    """The (lower-cased) views a query may name: every word of it that is a view's name, found by
    the tokenizer (binding would open the files a table function names, before any sandbox).
    None when it names none (SHOW TABLES, DESCRIBE without a view): then every view is made."""
    if sql is None:
        return None
    tokens = duckdb.tokenize(sql)
    ends = [pos for pos, _ in tokens[1:]] + [len(sql)]
    words = {
        sql[pos:end].strip().strip('"').lower()
        for (pos, kind), end in zip(tokens, ends)
        if kind in (duckdb.token_type.identifier, duckdb.token_type.keyword)
    }
    return (words & {v.lower() for v in views}) or None


def _regular(path: Path) -> os.stat_result:
    """A store file's status: a regular file's, else a StoreError naming it (a FIFO or device
    would block or stream for ever)."""
    try:
        status = os.stat(path)
    except OSError as error:
        raise StoreError(f"{path}: cannot be read ({error.strerror})") from None
    if not stat.S_ISREG(status.st_mode):
        raise StoreError(
            f"{path}: {file_type(status.st_mode)} inside the store, not a file attnsim wrote; "
            "move it out"
        )
    return status


def _read_meta(path: Path) -> dict[str, Any]:
    _regular(path)
    return parquet.read_meta(path)  # a foreign or truncated file stops the query with its name


class Verified:
    """The store files checked in full (`parquet.verify_file`: DuckDB checks no checksum and
    trusts footer statistics) and unchanged since: path -> (inode, size, mtime, ctime), kept
    in the user's cache folder (a query writes nothing into the store), so a large store is
    read in full once, not by every query. A file changed in any of these is checked again."""

    def __init__(self, root: Path) -> None:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnsim"
        key = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:16]
        self.path = base / f"verified-{key}.json"
        try:
            self.known = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.known = {}
        self.added = False

    def check(self, path: Path) -> None:
        status = _regular(path)
        stamp = [status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]
        name = os.path.realpath(path)
        if self.known.get(name) == stamp:
            return
        parquet.verify_file(path)
        self.known[name] = stamp
        self.added = True

    def save(self) -> None:
        if self.added:
            try:
                files.write_text(self.path, json.dumps(self.known), fsync=False)
            except OSError:  # a read-only home: the next query checks again
                pass


def connect(
    root: Path,
    sql: str | None = None,
    memory: str = DEFAULT_MEMORY,
    clock: Clock | None = None,
) -> duckdb.DuckDBPyConnection:
    """A confined connection with the store's views. Given the query it is for, only the views
    that query names are made and only their files checked (in full, once: `Verified`; the
    provenance view reads every file's footer): a query on one experiment's summary does not
    touch the rest of a large store."""
    root = Path(root)
    tables = {table: parquet.table_files(root, table) for table in parquet.TABLES}
    if not any(tables.values()):
        raise QueryError(
            f"no results yet in {root}; run the workflow first (snakemake --cores all)"
        )
    views = view_files(tables)
    wanted = referenced(sql, set(views) | {"provenance"})
    made = [name for name in views if wanted is None or name.lower() in wanted]
    verified = Verified(root)
    try:
        selects = {name: _select(root, views[name], verified, clock) for name in made}
    finally:
        verified.save()
    con = confined(sorted({p for _, paths in selects.values() for p in paths}), memory)
    if clock is not None:
        clock.attach(con)
    for name, (select, paths) in selects.items():
        if select is not None:
            try:
                con.execute(f'CREATE VIEW "{name}" AS {select}')
            except duckdb.Error as error:  # a footer pyarrow reads and DuckDB's parser does not
                con.close()
                raise _unreadable(name, paths, error) from None
    if wanted is None or "provenance" in wanted:
        _provenance_table(con, [p for paths in tables.values() for p in paths])
    con.execute("SET lock_configuration = true")  # no SET can undo the sandbox
    return con


def _unreadable(view: str, paths: list[Path], error: duckdb.Error) -> AttnsimError:
    """The one line for a view DuckDB could not make: the first of its files DuckDB cannot read
    alone (a flipped bit in a footer's structure that pyarrow reads past: no checksum covers
    it), else the view and DuckDB's first line."""
    probe = duckdb.connect()
    try:
        for path in paths:
            try:
                probe.execute("DESCRIBE SELECT * FROM read_parquet($1)", [str(path)])
            except duckdb.Error as alone:
                return StoreError(
                    f"{path}: damaged (DuckDB cannot read its footer: "
                    f"{parquet.one_line(alone)}); delete it and rerun to recompute it"
                )
    finally:
        probe.close()
    return QueryError(f"view {view}: cannot be made ({parquet.one_line(error)})")


def _select(
    root: Path, paths: list[Path], verified: Verified, clock: Clock | None
) -> tuple[str | None, list[Path]]:
    """A view's SELECT over its files and the files it reads, each checked: a summary view reads
    its summaries; a trials view, per experiment, the chunks its summary was made from
    (`integrity.current_chunks`), only the points the summary holds (the experiment's current
    grid: a removed grid value's rows stay in their chunk file, out of both views)."""
    parts, readable = [], []
    for folder in sorted({Path(p).parent for p in paths}):
        if clock is not None:
            clock.check()
        part, used = (
            _experiment_trials(root, folder) if folder.parts[-3] == "trials" else _summary(folder)
        )
        for path in used:
            if clock is not None:
                clock.check()
            verified.check(path)
        if part is not None:
            parts.append(part)
            readable += used
    if not parts:
        return None, []
    return " UNION ALL BY NAME ".join(parts), readable


def _summary(folder: Path) -> tuple[str, list[Path]]:
    path = folder / "summary.parquet"
    _read_meta(path)
    return f"SELECT * FROM {_files_sql([path])}", [path]


def _experiment_trials(root: Path, folder: Path) -> tuple[str | None, list[Path]]:
    kind = folder.parent.name.removeprefix("kind=")
    experiment = folder.name.removeprefix("experiment=")
    found = parquet.summary_path(root, kind, experiment)
    summary: Path | None = found
    if not found.exists() or _read_meta(found).get("chunks") is None:
        summary = None  # none yet, or made before summaries recorded their chunks
    current = integrity.current_chunks(folder, _read_meta, summary, kind, experiment)
    if not current:
        return None, []
    chunks = [path for path, _ in current]
    select = f"SELECT * FROM {_files_sql(chunks)}"
    if summary is None:
        return select, chunks
    points = sum(integrity.chunk_points(meta) for _, meta in current)
    if points == pq.read_metadata(summary).num_rows:
        return select, [*chunks, summary]
    inside = _files_sql([summary]).replace(", hive_partitioning = true", "")
    return f"{select} WHERE point_id IN (SELECT point_id FROM {inside})", [*chunks, summary]


RESERVED_VIEWS = ("trials", "summary", "provenance", "_provenance")


def view_files(files: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """view name -> its files: the global views, then `<experiment>` (summary) and
    `<experiment>_trials`. Each view's list is its own (never one being iterated). A name taken
    twice (an experiment named like a global view or like another's `_trials`, in a store
    written before the config refused such names) gets no view rather than merged tables."""
    views: dict[str, list[Path]] = {table: list(paths) for table, paths in files.items() if paths}
    per_experiment: dict[str, list[Path]] = {}
    owners: dict[str, set[str]] = {}
    for table, paths in files.items():
        for path in paths:
            experiment = path.parent.name.removeprefix("experiment=")
            name = experiment if table == "summary" else f"{experiment}_trials"
            per_experiment.setdefault(name, []).append(path)
            owners.setdefault(name.lower(), set()).add(f"{table}:{experiment}")
    for name, paths in per_experiment.items():
        if name.lower() in RESERVED_VIEWS or len(owners[name.lower()]) > 1:
            log.warning(
                "view %s: not made, the name collides with another view of the store (%s)",
                name,
                ", ".join(sorted(owners[name.lower()])),
            )
            continue
        views[name] = paths
    return views


PROVENANCE = (
    "table",
    "experiment",
    "kind",
    "chunk",
    "results_key",
    "experiment_hash",
    "seed",
    "trials",
    "algorithm_version",
    "attnsim_version",
    "numpy_version",
    "created_utc",
)


def _provenance_table(con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
    """`provenance`, a table of its own: the Arrow table it is copied from is unregistered, so
    SHOW TABLES lists only the store's views."""
    rows = []
    for path in paths:
        meta = parquet.read_meta(path)
        rows.append({k: meta.get(k) for k in PROVENANCE} | {"file": str(path)})
    con.register("_provenance", pa.Table.from_pylist(rows))
    con.execute("CREATE TABLE provenance AS SELECT * FROM _provenance")
    con.unregister("_provenance")


def confined(readable: list[Path], memory: str = DEFAULT_MEMORY) -> duckdb.DuckDBPyConnection:
    """A connection that reads `readable` (the store's checked files) and nothing else: no other
    file, no network, no extension to install or load, no ATTACH, no spilling to a temp directory
    (DuckDB would allow reading it: `./.tmp` of the working directory), at most `memory`. Only
    our own statements run before `connect` locks the settings."""
    con = duckdb.connect(
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
        }
    )
    try:
        con.execute("SET memory_limit = $1", [memory])
    except duckdb.Error as error:
        con.close()
        raise QueryError(
            f"--memory {memory!r}: {str(error).strip().splitlines()[0]} (give e.g. 512MB or 2GB)"
        ) from None
    con.execute("SET temp_directory = ''")  # no spilling: nothing outside the store is readable
    allowed = sorted({q for p in readable for q in (os.path.abspath(p), os.path.realpath(p))})
    con.execute("SET allowed_paths = $1", [allowed])  # before external access is off
    con.execute("SET enable_external_access = false")
    return con


READ_ONLY = ("SELECT", "EXPLAIN")  # SHOW, DESCRIBE, SUMMARIZE and WITH parse as SELECT


def check_read_only(sql: str) -> None:
    """One read-only statement: a query must never write into (or next to) the store."""
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = sql[error.start].encode("utf-8", "surrogateescape")
        raise QueryError(
            f"the SQL argument is not UTF-8 (byte 0x{bad.hex()} at character {error.start + 1}); "
            "write it in UTF-8"
        ) from None
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryError(f"query failed: {str(error).strip().splitlines()[0]}") from None
    if len(statements) != 1:
        raise QueryError(f"give exactly one SQL statement, got {len(statements)}")
    kind = statements[0].type.name
    if kind == "EXPLAIN":  # EXPLAIN ANALYZE runs its statement: that one must be read-only too
        kind = _explained_kind(statements[0].query)
    if kind not in READ_ONLY:
        raise QueryError(
            f"only read-only queries (SELECT, SHOW, DESCRIBE, EXPLAIN) are allowed, got {kind}"
        )


def _explained_kind(sql: str) -> str:
    """The type of the statement after EXPLAIN [ANALYZE] [(options)]."""
    tokens = [
        (pos, kind) for pos, kind in duckdb.tokenize(sql) if kind != duckdb.token_type.comment
    ]
    words = [
        sql[pos:end].strip().upper()
        for (pos, _), end in zip(tokens, [p for p, _ in tokens[1:]] + [len(sql)])
    ]
    i = 2 if len(words) > 1 and words[1] in ("ANALYZE", "ANALYSE") else 1
    starts = [i]
    if i < len(words) and words[i] == "(":  # `(FORMAT json)` options, or a parenthesised query
        depth = 0
        for j in range(i, len(words)):
            depth += words[j].count("(") - words[j].count(")")
            if depth == 0:
                starts.append(j + 1)
                break
    for start in starts:
        try:
            inner = (
                duckdb.extract_statements(sql[tokens[start][0] :]) if start < len(tokens) else []
            )
        except duckdb.Error:
            continue
        if len(inner) == 1:
            return "EXPLAIN" if inner[0].type.name == "SELECT" else f"EXPLAIN {inner[0].type.name}"
    return "EXPLAIN of no single statement"


def _failure(error: Exception, clock: Clock, memory: str, root: Path) -> QueryError:
    """DuckDB's error (raised by DuckDB, or by the Arrow reader streaming its result) as one
    line."""
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if clock.expired.is_set() or isinstance(error, duckdb.InterruptException):
        return clock.error()
    if isinstance(error, duckdb.OutOfMemoryException) or first.startswith("Out of Memory"):
        return QueryError(
            f"query failed: {first} (--memory {memory}; give more with --memory, or narrow the "
            "query)"
        )
    if isinstance(error, duckdb.PermissionException) or first.startswith("Permission Error"):
        return QueryError(
            f"query failed: {first} (queries read the store {root} through its views, no file "
            "by name: SHOW TABLES lists them)"
        )
    return QueryError(f"query failed: {first}")


def _stream(
    con: duckdb.DuckDBPyConnection, sql: str, clock: Clock, memory: str, root: Path
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The result's schema and its batches, streamed from DuckDB (never all rows at once)."""
    clock.check()
    try:
        reader = con.sql(sql).to_arrow_reader(BATCH_ROWS)
    except (duckdb.Error, OSError, pa.ArrowException) as error:
        raise _failure(error, clock, memory, root) from None

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            yield from reader
        except (duckdb.Error, OSError, pa.ArrowException) as error:
            raise _failure(error, clock, memory, root) from None

    return reader.schema, batches()


def run(
    root: Path, sql: str, timeout: float = DEFAULT_TIMEOUT, memory: str = DEFAULT_MEMORY
) -> pd.DataFrame:
    """The query's result as a data frame (for scripts; it is held whole); stopped after
    `timeout` seconds (QueryError) and using at most `memory` in DuckDB; nothing spills to disk."""
    check_read_only(sql)
    clock = Clock(timeout)
    try:
        con = connect(root, sql, memory, clock)
        try:
            schema, batches = _stream(con, sql, clock, memory, Path(root))
            return pa.Table.from_batches(list(batches), schema).to_pandas()
        finally:
            con.close()
    finally:
        clock.stop()


def output_format(fmt: str | None, output: Path | None) -> str:
    """The format to write: the one given, else the output file's suffix, else the terminal's
    table."""
    if fmt is not None and fmt not in FORMATS:
        raise QueryError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if output is None:
        if fmt == "parquet":
            raise QueryError("--format parquet needs --output FILE")
        return fmt or "table"
    fmt = fmt or BY_SUFFIX.get(Path(output).suffix.lower())
    if fmt in (None, "table"):
        raise QueryError(
            f"--output {output}: give --format csv, json or parquet (the table format is for the "
            "terminal)"
        )
    return fmt


def file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_output(output: Path, root: Path) -> None:
    """`--output` may name a new file or replace a regular file outside the store, nothing else:
    a device, FIFO, socket, symbolic link or directory is never replaced by the result, and a
    file inside the store would make every later query and run refuse it as foreign."""
    where = f"--output {output}"
    try:
        mode = os.lstat(output).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise QueryError(f"{where}: {error.strerror}; nothing written") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise QueryError(
            f"{where}: exists and is {file_type(mode)}, not a regular file; give a file's path "
            "(nothing written)"
        )
    real, inside = Path(os.path.realpath(output)), Path(os.path.realpath(root))
    if real == inside or inside in real.parents:
        raise QueryError(
            f"{where}: inside the store ({root}), where only the workflow writes; give a path "
            "outside it (nothing written)"
        )


def write(
    root: Path,
    sql: str,
    fmt: str | None = None,
    output: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    memory: str = DEFAULT_MEMORY,
) -> None:
    """Run the query and stream its result to `output` (atomically, once whole) or to stdout (a
    table stops at TERMINAL_ROWS rows, with the total)."""
    check_read_only(sql)
    fmt = output_format(fmt, output)
    if output is not None:
        check_output(output, root)
    clock = Clock(timeout)
    try:
        con = connect(root, sql, memory, clock)
        try:
            schema, batches = _stream(con, sql, clock, memory, Path(root))
            if output is not None:
                _to_file(schema, batches, fmt, Path(output), Path(root))
            elif fmt == "table":
                sys.stdout.write(_terminal_table(schema, batches) + "\n")
            else:
                _emit(schema, batches, fmt, _Stdout())
        finally:
            con.close()
    finally:
        clock.stop()


class _Stdout:
    """Bytes to sys.stdout (whatever it is: a terminal, a pipe, a test's capture)."""

    def write(self, data: bytes) -> None:
        sys.stdout.write(data.decode("utf-8"))


Sink = BinaryIO | _Stdout  # where a streamed result's bytes go


def _to_file(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], fmt: str, output: Path, root: Path
) -> None:
    """Write the result beside `output` under a temporary name, then rename it into place,
    checking again just before that nothing but a regular file has appeared there."""
    tmp = files.temp_path(output)
    try:
        try:
            with open(tmp, "xb") as handle:
                _emit(schema, batches, fmt, handle)
        except OSError as error:
            raise QueryError(
                f"--output {output}: cannot write in {output.parent or '.'} ({error.strerror}); "
                "nothing written"
            ) from None
        check_output(output, root)
        try:
            os.replace(tmp, output)
        except OSError as error:
            raise QueryError(f"--output {output}: {error.strerror}; nothing written") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _emit(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], fmt: str, handle: BinaryIO | _Stdout
) -> None:
    if fmt == "parquet":
        with pq.ParquetWriter(handle, schema) as writer:
            for batch in batches:
                writer.write_batch(batch)
    elif fmt == "csv":
        _csv(schema, batches, handle)
    else:
        _json(batches, handle)


def _csv(schema: pa.Schema, batches: Iterator[pa.RecordBatch], handle: Sink) -> None:
    """CSV: a header, then each batch as Arrow writes it (NULL as an empty field, floats as
    their shortest round-trip text), quoted by Python's csv module only when a value needs it;
    nested values (lists, structs) as JSON."""
    import pyarrow.csv as pacsv

    handle.write(_csv_rows([schema.names]))
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    for batch in batches:
        batch = _flat(batch)
        sink = io.BytesIO()
        try:
            pacsv.write_csv(batch, sink, options)
            handle.write(sink.getvalue())
        except pa.ArrowInvalid:  # a comma, quote or line break in a value: quote it
            columns = [c.to_pylist() for c in batch.columns]
            handle.write(_csv_rows(zip(*columns)))


def _csv_rows(rows: Iterable[Iterable[object]]) -> bytes:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue().encode("utf-8")


def _flat(batch: pa.RecordBatch) -> pa.RecordBatch:
    nested = [i for i, f in enumerate(batch.schema) if pa.types.is_nested(f.type)]
    if not nested:
        return batch
    columns = list(batch.columns)
    for i in nested:
        columns[i] = pa.array(
            [None if v is None else json.dumps(_plain(v)) for v in columns[i].to_pylist()],
            pa.string(),
        )
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _plain(value: Any) -> Any:
    """A value as JSON can hold it: NaN and infinities as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _json(batches: Iterator[pa.RecordBatch], handle: Sink) -> None:
    """A JSON array of records, one batch at a time (NULL and non-finite numbers as null)."""
    first = True
    handle.write(b"[")
    for batch in batches:
        for record in batch.to_pylist():
            text = json.dumps(_plain(record), indent=1, default=str).replace("\n", "\n ")
            handle.write((("\n " if first else ",\n ") + text).encode("utf-8"))
            first = False
    handle.write(b"]\n" if first else b"\n]\n")


def _terminal_table(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> str:
    """The first TERMINAL_ROWS rows as DuckDB renders a result (its box table: text left, numbers
    right, NULL as NULL, columns elided to the terminal's width); past them the total and how to
    get every row. The rest is counted as it streams by, never held."""
    head: list[pa.RecordBatch] = []
    kept = total = 0
    for batch in batches:
        if kept < TERMINAL_ROWS:
            head.append(batch.slice(0, TERMINAL_ROWS - kept))
            kept += len(head[-1])
        total += len(batch)
    if total == 0:
        return "(no rows)"
    text = render(pa.Table.from_batches(head, schema))
    if total > kept:
        text += (
            f"\n({kept} of {total:,} rows shown; every row: --format csv or json, or --output FILE)"
        )
    return text


def render(table: pa.Table, width: int | None = None) -> str:
    """`table` (already fetched) as DuckDB's renderer draws it, on a connection of its own that
    reads nothing but this table."""
    import contextlib
    import shutil

    width = width or shutil.get_terminal_size((120, 24)).columns
    con = duckdb.connect(config={"enable_external_access": False})
    try:
        relation = con.from_arrow(table)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            relation.show(max_rows=max(len(table), 1), max_width=width)
        return buffer.getvalue().rstrip("\n")
    finally:
        con.close()


__all__ = ["connect", "run", "write", "StoreError"]
