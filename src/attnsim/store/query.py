"""SQL over the store with DuckDB: one view per table and per experiment.

Views: `trials` and `summary` (every experiment, columns united by name),
`<experiment>` (its summary), `<experiment>_trials` and `provenance` (one
row per store file). Only finished files are listed, each checked first, so
a query during a run never reads half a file.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import duckdb
import pandas as pd

from attnsim import files
from attnsim.errors import QueryError, StoreError
from attnsim.store import parquet

log = logging.getLogger(__name__)

FORMATS = ("table", "csv", "json", "parquet")
DEFAULT_MEMORY = "1GB"  # DuckDB's own default is 80% of RAM
DEFAULT_TIMEOUT = 300.0  # seconds


def _files_sql(paths: list[Path]) -> str:
    listed = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{listed}], hive_partitioning = true, union_by_name = true)"


def _referenced(sql: str | None) -> set[str] | None:
    """The (lower-cased) tables a query names, or None when it names none (SHOW TABLES) or cannot
    be told."""
    if sql is None:
        return None
    try:
        names = duckdb.connect().get_table_names(sql)
    except duckdb.Error:
        return None
    return {n.lower() for n in names} or None


def connect(
    root: Path, sql: str | None = None, memory: str = DEFAULT_MEMORY
) -> duckdb.DuckDBPyConnection:
    """A connection with the store's views. Given the query it is for, only the views that query
    names are made and only their files checked (a view's files are read when it is made, and
    the provenance view reads every file's footer): a query on one experiment's summary does
    not touch the rest of a large store."""
    root = Path(root)
    files = {table: parquet.table_files(root, table) for table in parquet.TABLES}
    if not any(files.values()):
        raise QueryError(
            f"no results yet in {root}; run the workflow first (snakemake --cores all)"
        )
    wanted = _referenced(sql)
    con = duckdb.connect(
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
        }
    )
    views = view_files(files)
    checked: set[Path] = set()
    for name, paths in views.items():
        if wanted is not None and name.lower() not in wanted:
            continue
        for path in paths:
            if path not in checked:
                parquet.read_meta(path)  # a foreign or truncated file stops the query with its name
                checked.add(path)
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM {_files_sql(paths)}')
    if wanted is None or "provenance" in wanted:
        _provenance_view(con, [p for paths in files.values() for p in paths])
    confine(con, root, memory)
    return con


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
    "config_hash",
    "seed",
    "trials",
    "algorithm_version",
    "attnsim_version",
    "numpy_version",
    "created_utc",
)


def _provenance_view(con: duckdb.DuckDBPyConnection, paths: list[Path]) -> None:
    rows = []
    for path in paths:
        meta = parquet.read_meta(path)
        rows.append({k: meta.get(k) for k in PROVENANCE} | {"file": str(path)})
    frame = pd.DataFrame(rows)  # noqa: F841 (registered below)
    con.register("_provenance", frame)
    con.execute("CREATE VIEW provenance AS SELECT * FROM _provenance")


def confine(con: duckdb.DuckDBPyConnection, root: Path, memory: str = DEFAULT_MEMORY) -> None:
    """Let queries read the store and nothing else: no other file, no network, no extension
    to install or load, no ATTACH, no spilling to a temp directory (DuckDB would allow reading
    it: `./.tmp` of the working directory), at most `memory`; then lock the settings so no SET
    can undo it."""
    allowed = sorted(
        {os.path.join(os.path.abspath(root), ""), os.path.join(os.path.realpath(root), "")}
    )
    try:
        con.execute("SET memory_limit = $1", [memory])
    except duckdb.Error as error:
        raise QueryError(
            f"--memory {memory!r}: {str(error).strip().splitlines()[0]} (give e.g. 512MB or 2GB)"
        ) from None
    con.execute("SET temp_directory = ''")  # no spilling: nothing outside the store is readable
    con.execute("SET allowed_directories = $1", [allowed])  # before external access is off
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


READ_ONLY = ("SELECT", "EXPLAIN")  # SHOW, DESCRIBE, SUMMARIZE and WITH parse as SELECT


def check_read_only(sql: str) -> None:
    """One read-only statement: a query must never write into (or next to) the store."""
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


def run(
    root: Path, sql: str, timeout: float = DEFAULT_TIMEOUT, memory: str = DEFAULT_MEMORY
) -> pd.DataFrame:
    """The query's result; it is stopped after `timeout` seconds (QueryError) and may use at most
    `memory` (DuckDB's memory_limit, e.g. "1GB"); nothing spills to disk."""
    check_read_only(sql)
    if not timeout > 0:
        raise QueryError(f"--timeout {timeout}: give a positive number of seconds")
    con = connect(root, sql, memory)
    timer = threading.Timer(timeout, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        return con.execute(sql).df()
    except duckdb.InterruptException:
        raise QueryError(
            f"query stopped after {timeout:g} s (--timeout {timeout:g}); narrow it or give a "
            "longer --timeout"
        ) from None
    except duckdb.OutOfMemoryException as error:
        first = str(error).strip().splitlines()[0]
        raise QueryError(
            f"query failed: {first} (--memory {memory}; give more with --memory, or narrow the "
            "query)"
        ) from None
    except duckdb.PermissionException as error:
        first = str(error).strip().splitlines()[0]
        raise QueryError(f"query failed: {first} (queries read only the store, {root})") from None
    except duckdb.Error as error:
        first = str(error).strip().splitlines()[0]
        raise QueryError(f"query failed: {first}") from None
    finally:
        timer.cancel()
        timer.join()  # no thread left running into the interpreter's exit
        con.close()


def emit(frame: pd.DataFrame, fmt: str, output: Path | None) -> str | None:
    """Render a result; text formats go to stdout unless `output` is given."""
    if fmt not in FORMATS:
        raise QueryError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        if output is None:
            raise QueryError("--format parquet needs --output FILE")
        with files.atomic_path(output, fsync=False) as tmp:
            frame.to_parquet(tmp, index=False)
        return None
    if fmt == "csv":
        text: str = frame.to_csv(index=False).rstrip("\n")
    elif fmt == "json":
        text = json.dumps(json.loads(frame.to_json(orient="records")), indent=1)
    else:
        with pd.option_context(
            "display.max_rows",
            500,
            "display.max_columns",
            50,
            "display.width",
            200,
            "display.float_format",
            "{:.6g}".format,
        ):
            text = str(frame.to_string(index=False)) if len(frame) else "(no rows)"
    if output is not None:
        files.write_text(output, text, fsync=False)
        return None
    return text


__all__ = ["connect", "run", "emit", "StoreError"]
