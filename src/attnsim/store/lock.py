"""One run per store, whichever working directory it starts from (issue 22 item 5, 41 item 3).

Snakemake locks its working directory (`.snakemake/locks`), so two directories whose `results/`
or `results/store` is the same folder (a symlink, a shared project folder on a cluster) could
both run and mix chunks of two configs. A run therefore also takes an exclusive `flock` on
`<store, resolved>/.attnsim-run.lock` when it starts (Snakemake's `onstart`: real runs only, not
dry runs, lints or reports) and holds it until its process exits; the kernel releases it if the
process is killed, so no stale lock is ever left. A second run on the same store is refused in
one line naming the first (host, pid, working directory, start time). Under the lock the store
is compared with what the run planned from (`state`, taken before planning read it): a run that
planned while another changed the store (and finished meanwhile) stops in one line instead of
running a stale plan.

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


def lock_path(root: Path) -> Path:
    return Path(os.path.realpath(root)) / LOCK_NAME


def state(root: Path) -> frozenset[tuple[str, int, int, int]]:
    """What planning reads from the store: each finished file's path, inode, size and mtime."""
    out = []
    for path in Path(root).glob("*/kind=*/experiment=*/*.parquet"):
        try:
            status = path.stat()
        except OSError:  # gone meanwhile
            continue
        out.append((str(path), status.st_ino, status.st_size, status.st_mtime_ns))
    return frozenset(out)


def acquire(root: Path, planned_from: frozenset[tuple[str, int, int, int]] | None = None) -> Path:
    """Take the run lock of the store at `root` for this process (again: a no-op); StoreError
    if another holds it, if `root` cannot be a folder, or if the store is no longer
    `planned_from` (`state` when the run planned)."""
    path = lock_path(root)
    if str(path) in _HELD:
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file where the store or one of its parents must be
        raise StoreError(
            f"{root}: the store must be a folder ({error.strerror}: {error.filename}); move "
            "that away and rerun"
        ) from None
    fd = _open_regular(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise StoreError(
            f"{root}: another run is using this store ({holder}); wait for it to finish or "
            "stop it, then rerun"
        ) from None
    info = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    if planned_from is not None and state(root) != planned_from:
        os.close(fd)
        raise StoreError(
            f"{root}: changed by another run while this one planned (it has finished since); "
            "rerun to plan from what is stored now"
        )
    try:  # who holds it, for a second run's message; the flock alone is the lock
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
    except OSError:  # a full disk: the run's first write says so, naming its file
        pass
    _HELD[str(path)] = fd
    return path


def _open_regular(path: Path) -> int:
    """The lock file's descriptor: created if absent, never through a link, never anything but a
    regular file (checked on the open descriptor, so nothing can be swapped in between)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        names = {errno.ELOOP: "a symbolic link", errno.EISDIR: "a directory"}
        held = names.get(error.errno or 0)
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


def release(root: Path) -> None:
    fd = _HELD.pop(str(lock_path(root)), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, in {info['cwd']}, since {info['since']}"
    except (OSError, ValueError, KeyError):
        return "its details unreadable"
