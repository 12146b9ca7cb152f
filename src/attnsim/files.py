"""Files that appear whole or not at all: the one atomic-write helper every writer uses, and the
test that tells a dead writer's temporary file from a live one's."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temp_path(path: Path) -> Path:
    """The hidden temporary name a writer of `path` uses: `.<name>.<host>.<pid>.tmp` beside it, so
    readers never list it and `sweep_orphans` knows whose it is."""
    path = Path(path)
    return path.with_name(f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp")


@contextmanager
def atomic_path(path: Path, fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it is flushed to disk and renamed to `path`
    (readers see the old file or the new one, never half of one). The temporary file never stays."""
    path = Path(path)
    tmp = temp_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str, fsync: bool = True) -> None:
    """Write `text` to `path` atomically (UTF-8)."""
    with atomic_path(path, fsync) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(path: Path, data: bytes, fsync: bool = True) -> None:
    with atomic_path(path, fsync) as tmp:
        tmp.write_bytes(data)


def process_alive(pid: int) -> bool:
    """Whether a process of this host is running (a writer whose temp file must not be swept)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
