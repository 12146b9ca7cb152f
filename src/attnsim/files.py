"""Files that appear whole or not at all: the one atomic-write helper every writer uses, and the
test that tells a dead writer's temporary file from a live one's."""

from __future__ import annotations

import errno
import os
import shutil
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from attnsim.errors import WriteError

# what a writer cannot fix by retrying, each named in the one line the user sees
WRITE_REFUSED = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the folder is on a read-only file system",
    errno.EACCES: "permission denied (a read-only folder?)",
    errno.EPERM: "not permitted (a read-only folder?)",
}


def temp_path(path: Path) -> Path:
    """The hidden temporary name a writer of `path` uses: `.<name>.<host>.<pid>.tmp` beside it, so
    readers never list it and `sweep_orphans` knows whose it is."""
    path = Path(path)
    return path.with_name(f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp")


@contextmanager
def atomic_path(
    path: Path,
    fsync: bool = True,
    need: int | None = None,
    guard: Callable[[], AbstractContextManager[object]] | None = None,
) -> Iterator[Path]:
    """Yield a temporary path to write; on success it is flushed to disk and renamed to `path`
    (readers see the old file or the new one, never half of one). The temporary file never stays.
    A full disk, a quota or a read-only folder is a one-line WriteError naming `path` (`need`:
    the bytes the writer expects to write, for that line). `guard`: the rename happens inside
    `guard()`, which may refuse it by raising (a chunk of a run that no longer holds the store,
    `attnsim.store.lock.commit`)."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        if fsync:
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        with guard() if guard is not None else nullcontext():
            os.replace(tmp, path)
    except OSError as error:
        if error.errno not in WRITE_REFUSED:
            raise
        raise WriteError(refused_message(path, error, need)) from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # a read-only folder holds no temp file to remove
            pass


def refused_message(path: Path, error: OSError, need: int | None = None) -> str:
    """One line: the file, why it could not be written and, for a full disk, the space it needs
    (`need` bytes, when the writer knows) and the space free. Low-level writes (a figure's PDF,
    a Parquet page) raise ENOSPC without a file name."""
    why = WRITE_REFUSED[error.errno or 0]
    if error.errno not in (errno.ENOSPC, errno.EDQUOT):
        return f"{path}: could not be written, {why}; nothing was changed"
    try:
        existing = next(p for p in (path.parent, *path.parents) if p.exists())
        free = f"{shutil.disk_usage(existing).free / 2**20:,.1f} MiB free"
    except (OSError, StopIteration):
        free = "free space unknown"
    needs = f"it needs up to {need / 2**20:,.1f} MiB free ({free})" if need else free
    return f"{path}: could not be written, {why}; {needs}; free some space and rerun"


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


def sweep_dead_temps(root: Path) -> list[Path]:
    """Delete the temporary files (`temp_path`) under `root` of writers on this host that are no
    longer running: a killed job's half-written chunk, summary, figure or claims file. A live
    writer's and another host's (a shared file system) are left alone."""
    host = socket.gethostname()
    removed = []
    for folder, _, names in os.walk(root):
        for name in names:
            owner, _, pid = name.removesuffix(".tmp").rpartition(".")
            if (
                name.startswith(".")
                and name.endswith(".tmp")
                and owner.endswith(f".{host}")
                and pid.isdigit()
                and not process_alive(int(pid))
            ):
                (Path(folder) / name).unlink(missing_ok=True)
                removed.append(Path(folder) / name)
    return removed


def check_writable(root: Path, own: Sequence[str] = ()) -> None:
    """WriteError naming the first folder of `root` (a workspace) this process cannot write in,
    before any job: Snakemake would stop with a multi-line ProtectedOutputException, or a job
    halfway. The workspace itself and the folders of it a run writes in (`own`: store, figures,
    ...), folders only; the files in them are replaced by renames. The remedy it suggests changes
    permissions only below those folders, which runs made: never a recursive change of a folder
    the user named (a `--workspace /` is told to pick another workspace, not `chmod -R /`)."""
    root = Path(root)
    if root.is_dir() and not os.access(root, os.W_OK | os.X_OK):
        raise WriteError(
            f"{root}: a read-only folder, and this run writes in it (its workspace); give a "
            "workspace you can write in (--workspace DIR)"
        )
    for name in own:
        for folder, subfolders, _ in os.walk(root / name):
            subfolders.sort()
            if not os.access(folder, os.W_OK | os.X_OK):
                raise WriteError(
                    f"{folder}: a read-only folder, and this run writes in it; make it writable "
                    f"(chmod -R u+w {root / name}) or run in another workspace (--workspace DIR)"
                )


# --- what every start computes again: kept by the content it is computed from ------------------

CACHE_VARIABLE = "ATTNSIM_CACHE"  # the folder of `cached_json`'s entries; "off": none kept


def cache_folder() -> Path | None:
    """ATTNSIM_CACHE, else $XDG_CACHE_HOME/attnsim (~/.cache/attnsim); None when it is "off"."""
    chosen = os.environ.get(CACHE_VARIABLE, "")
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    try:
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    except RuntimeError:  # no home folder: nothing kept
        return None
    return Path(base) / "attnsim"


def cached_json(name: str, key: str, compute: Callable[[], object]) -> object:
    """`compute()` (a JSON value), kept in the cache folder under `name`/`key`: `key` must be a
    digest of everything the value depends on (e.g. the sha256 of a source text and the version
    of the code reading it), so an entry is never stale, only unused. An entry that cannot be
    read or written is computed (and nothing said): the cache only ever saves time. Every
    Snakemake start of the workflow pays for what it checks; this keeps what does not change
    between starts (a kind's figures' names: 0.12 CPU-s of `ast` each start)."""
    import json

    folder = cache_folder()
    path = folder / name / f"{key}.json" if folder is not None else None
    if path is not None:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    value = compute()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text(path, json.dumps(value), fsync=False)
        except (OSError, WriteError):
            pass
    return value
