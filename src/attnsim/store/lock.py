"""One run per store, whichever working directory it starts from (issue 22 item 5).

Snakemake locks its working directory (`.snakemake/locks`), so two directories whose `results/`
is the same folder (a symlink, a shared project folder on a cluster) could both run and mix
chunks of two configs. A run therefore also takes an exclusive `flock` on
`<results, resolved>/.attnsim-run.lock` when it starts (Snakemake's `onstart`: real runs only,
not dry runs) and holds it until its process exits; the kernel releases it if the process is
killed, so no stale lock is ever left. A second run on the same store is refused in one line
naming the first (host, pid, working directory, start time).

The lock file is opened without following a symbolic link (`O_NOFOLLOW`) and must be a regular
file: a link, FIFO or directory at its path is refused in one line before anything is written, so
the lock's JSON never truncates a file it points at.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
import stat
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
    fd = _open_regular(path)
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


def _open_regular(path: Path) -> int:
    """The lock file's descriptor: created if absent, never through a link, never anything but a
    regular file (checked on the open descriptor, so nothing can be swapped in between)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        held = {errno.ELOOP: "a symbolic link", errno.EISDIR: "a directory"}.get(error.errno)
        raise StoreError(
            f"{path}: the run lock's path holds {held}, not a lock file; remove it and rerun"
            if held
            else f"{path}: the run lock cannot be opened ({error.strerror})"
        ) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StoreError(
            f"{path}: the run lock's path holds something other than a file (mode "
            f"{stat.filemode(mode)}); remove it and rerun"
        )
    return fd


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
