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

Jobs outlive the run that started them (a SIGKILLed Snakemake leaves its local jobs running; a
SLURM job runs on whatever happens to its submitter), so each run also writes a fresh random
token into the lock (`token`), and the spec file of every chunk it runs names it. A chunk's job
renames its finished file into the store only inside `commit`: the lock must still be held and
hold the job's token, else the write is dropped in one line. A dead run's job therefore never
puts a chunk into a store that a later run has planned and may be changing. Checking and
renaming hold a second lock, `.attnsim-write.lock`, shared, while a run takes it exclusively to
take the run lock and write its token: no rename falls between a new run's token and its look
at the store.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import secrets
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnsim.errors import StoreError

LOCK_NAME = ".attnsim-run.lock"
GATE_NAME = ".attnsim-write.lock"  # held shared by a job's check-and-rename, exclusive by acquire
_HELD: dict[str, int] = {}  # resolved lock path -> open descriptor, held for the process's life
_TOKENS: dict[str, str] = {}  # resolved lock path -> the run token this process wrote into it


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
    with _gate(path.parent, fcntl.LOCK_EX):
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
        token = secrets.token_hex(8)
        info = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "cwd": os.getcwd(),
            "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "token": token,
        }
        try:  # who holds it, for a second run's message, and the token its jobs check
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:  # a full disk: the run's first write says so, naming its file
            pass
        if planned_from is not None and state(root) != planned_from:
            os.close(fd)
            raise StoreError(
                f"{root}: changed by another run while this one planned (it has finished "
                "since); rerun to plan from what is stored now"
            )
    _HELD[str(path)] = fd
    _TOKENS[str(path)] = token
    return path


def token(root: Path) -> str | None:
    """The run token this process wrote into the store's lock (`acquire`), None if it holds none:
    the spec files of the chunks it runs carry it."""
    return _TOKENS.get(str(lock_path(root)))


def check_run(root: Path, run: str, output: Path) -> None:
    """StoreError unless the store at `root` is held by the run whose token is `run` (a job's
    start: a job of a dead run computes nothing)."""
    why = _not_current(lock_path(root), run)
    if why is not None:
        raise StoreError(_dropped(output, run, why))


@contextmanager
def commit(root: Path, run: str, output: Path) -> Iterator[None]:
    """Around the rename of a job's finished file `output`: the run with token `run` still holds
    the store, and no run takes it over until the rename is done; else StoreError (the caller's
    temporary file is removed, nothing enters the store)."""
    path = lock_path(root)
    with _gate(path.parent, fcntl.LOCK_SH):
        why = _not_current(path, run)
        if why is not None:
            raise StoreError(_dropped(output, run, why))
        yield


def _dropped(output: Path, run: str, why: str) -> str:
    return (
        f"{output}: not written, its run (token {run}) no longer holds the store ({why}); a "
        "rerun computes it"
    )


def _not_current(path: Path, run: str) -> str | None:
    """Why the lock at `path` is not held by the run with token `run`, or None if it is."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        return f"its lock cannot be opened: {error.strerror}"
    try:
        try:  # a flock of our own succeeds only when no run holds the lock
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass
        else:
            return "the run has ended"
        try:
            holder = json.loads(os.pread(fd, 4096, 0) or b"{}").get("token")
        except (OSError, ValueError, AttributeError):
            holder = None
        return None if holder == run else "another run holds it now"
    finally:
        os.close(fd)  # and with it our shared flock, if we took one


@contextmanager
def _gate(folder: Path, operation: int) -> Iterator[None]:
    """The store's write gate (GATE_NAME) locked with `operation` (shared or exclusive), waiting
    for it: a run holds it exclusively only while it takes the run lock, a job shared only while
    it checks and renames."""
    fd = _open_regular(folder / GATE_NAME, "the write gate")
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)


def _open_regular(path: Path, what: str = "the run lock") -> int:
    """The lock file's descriptor: created if absent, never through a link, never anything but a
    regular file (checked on the open descriptor, so nothing can be swapped in between)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        names = {errno.ELOOP: "a symbolic link", errno.EISDIR: "a directory"}
        held = names.get(error.errno or 0)
        raise StoreError(
            f"{path}: {what}'s path holds {held}, not a lock file; remove it and rerun"
            if held
            else f"{path}: {what} cannot be opened ({error.strerror})"
        ) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StoreError(
            f"{path}: {what}'s path holds something other than a file (mode "
            f"{stat.filemode(mode)}); remove it and rerun"
        )
    return fd


def release(root: Path) -> None:
    _TOKENS.pop(str(lock_path(root)), None)
    fd = _HELD.pop(str(lock_path(root)), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']}, in {info['cwd']}, since {info['since']}"
    except (OSError, ValueError, KeyError):
        return "its details unreadable"
