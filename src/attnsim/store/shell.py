"""`attnsim query` without SQL: a shell over the store, statements from a prompt or from stdin.

The session starts once: the store's views are made and their files checked when it opens (the
imports and checks are most of a one-off query's start), then each statement runs on the same
confined connection (`attnsim.store.query`: the same sandbox, read-only statements only, each
under its own --timeout) and prints as DuckDB renders a result. A statement ends with `;` at the
end of a line; `.quit`, `.exit` or end of input ends the session. Piped input runs every
statement and exits 1 if any failed (each failure one line on stderr); at a prompt a failure is
a line and the session goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import duckdb

from attnsim.errors import QueryError
from attnsim.store import query

PROMPT, MORE = "attnsim> ", "    ...> "
QUIT = (".quit", ".exit", "quit", "exit", "\\q")
BANNER = (
    "attnsim query shell on {root}: read-only SQL ending in ';' (SHOW TABLES; lists the views), "
    ".quit or Ctrl-D to leave"
)


def statements(source: TextIO, interactive: bool) -> Iterator[str]:
    """The statements of `source`: at a prompt, lines gathered until one ends in ';'; piped,
    the whole input split by DuckDB's own parser (a ';' inside a string does not split)."""
    if not interactive:
        text = source.read()
        if text.strip() in QUIT:
            return
        try:
            parsed = duckdb.extract_statements(text) if text.strip() else []
        except duckdb.Error as error:
            raise QueryError(f"query failed: {str(error).strip().splitlines()[0]}") from None
        yield from (s.query.strip() for s in parsed)
        return
    try:
        import readline  # noqa: F401  (line editing and history at the prompt)
    except ImportError:
        pass
    buffer: list[str] = []
    while True:
        try:
            line = input(MORE if buffer else PROMPT)
        except EOFError:
            print(file=sys.stderr)
            break
        if not buffer and line.strip() in QUIT:
            break
        buffer.append(line)
        if line.rstrip().endswith(";"):
            yield "\n".join(buffer).strip()
            buffer = []
    if any(line.strip() for line in buffer):
        yield "\n".join(buffer).strip()


def session(root: Path, memory: str) -> duckdb.DuckDBPyConnection:
    """The session's connection, with every view of the store (none in a store without results
    yet: the shell still runs, and says so)."""
    try:
        return query.connect(root, None, memory)
    except QueryError as error:
        if not str(error).startswith("no results yet"):
            raise
        print(f"attnsim: {error}; the shell has no views", file=sys.stderr)
        con = query.confined([], memory)
        con.execute("SET lock_configuration = true")
        return con


def run_one(
    con: duckdb.DuckDBPyConnection, sql: str, root: Path, timeout: float, memory: str
) -> str:
    """One statement on the session's connection, under its own timeout: its rendered table."""
    query.check_read_only(sql)
    clock = query.Clock(timeout)
    try:
        clock.attach(con)
        schema, batches = query._stream(con, sql, clock, memory, Path(root))
        return query._terminal_table(schema, batches)
    finally:
        clock.stop()


def shell(
    root: Path,
    timeout: float = query.DEFAULT_TIMEOUT,
    memory: str = query.DEFAULT_MEMORY,
    source: TextIO | None = None,
) -> int:
    """Run the shell on `source` (default stdin); the exit status."""
    source = sys.stdin if source is None else source
    interactive = source.isatty()
    con = session(Path(root), memory)
    if interactive:
        print(BANNER.format(root=root), file=sys.stderr)
    failed = 0
    try:
        for sql in statements(source, interactive):
            try:
                print(run_one(con, sql, Path(root), timeout, memory), flush=True)
            except QueryError as error:
                failed += 1
                print(f"attnsim: error: {error}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print(file=sys.stderr)
    finally:
        con.close()
    return 1 if failed and not interactive else 0
