"""One run per store, whichever working directory it starts from (issue 22 item 5).

Snakemake locks its working directory (`.snakemake/locks`), so two directories whose `results/`
is the same folder (a symlink, a shared project folder on a cluster) could both run and mix
chunks of two configs. A run therefore also takes an exclusive `flock` on
`<results, resolved>/.attnsim-run.lock` when it starts (Snakemake's `onstart`: real runs only,
not dry runs) and holds it until its process exits; the kernel releases it if the process is
killed, so no stale lock is ever left. A second run on the same store is refused in one line
naming the first (host, pid, working directory, start time).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
from pathlib import Path

from attnsim.errors import StoreError

LOCK_NAME = ".attnsim-run.lock"
_HELD: dict[str, int] = {}  # resolved lock path -> open descriptor, held for the process's life


def lock_path(results: Path) -> Path:
    return Path(os.path.realpath(results)) / LOCK_NAME


def acquire(results: Path) -> Path:
    """Take the store's run lock for this process (again: a no-op); StoreError if another
    holds it."""
    path = lock_path(results)
    if str(path) in _HELD:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise StoreError(
            f"{results}: another run is using this store ({holder}); wait for it to finish or "
            "stop it, then rerun"
        ) from None
    info = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode(), 0)
    _HELD[str(path)] = fd
    return path


def release(results: Path) -> None:
    fd = _HELD.pop(str(lock_path(results)), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, in {info['cwd']}, since {info['since']}"
    except (OSError, ValueError, KeyError):
        return "its details unreadable"
