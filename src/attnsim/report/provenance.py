"""What a verdict was computed from and by: the run record (one hash of the whole checked config,
the seed, attnsim's version, the git commit when run from a clone) and, per claim, one digest of
the store content it read. `attnsim claims --write` stamps both on every row of claims.parquet
and under claims.md; `verify`, `cite` and `claims --diff` read them back.

A claim's `inputs_sha256` hashes the content digests (`integrity.file_digest` of the recorded
per-column sha256) of the summaries of the experiments it rests on, and each summary records the
digests of the trial chunks it was made from: a changed cell anywhere below a verdict changes
what `verify` recomputes, and a replaced file changes the recorded digest.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa

import attnsim
from attnsim.errors import StoreError
from attnsim.store import integrity
from attnsim.store import parquet as store

REPOSITORY = Path(attnsim.__file__).resolve().parents[2]  # src/attnsim/__init__.py -> the clone

RUN_FIELDS = {  # the run record's keys, stamped on every claims row, with their meaning
    "config_hash": "sha256 (first 16 hex) of the whole checked config's science: seed and every "
    "experiment (Settings.config_hash); one value per run",
    "seed": "the config's seed",
    "attnsim_version": "attnsim's version that computed the verdict",
    "git_commit": "the commit of the attnsim clone that computed it ('+dirty': with uncommitted "
    "changes to tracked files); empty when not run from a clone",
}
ROW_FIELDS = {
    "inputs_sha256": "sha256 (first 32 hex) of the content digests of the summaries the claim "
    "read (each summary records its chunks' digests); empty when it read none",
}


def git_commit(repository: Path = REPOSITORY) -> str:
    """HEAD of the clone attnsim runs from, '+dirty' when tracked files differ from it; '' when
    attnsim is not run from a clone (an installed wheel) or git is missing."""
    if not (repository / ".git").exists():
        return ""
    try:
        head = _git(repository, "rev-parse", "HEAD")
        dirty = _git(repository, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + ("+dirty" if dirty else "")


def _git(repository: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repository), *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()


def run_record(config_hash: str = "", seed: int | None = None) -> dict:
    """The run's provenance: the config hash and seed (empty when the caller has no config),
    attnsim's version and the clone's commit, numpy's and Python's versions."""
    return {
        "config_hash": config_hash,
        "seed": seed,
        "attnsim_version": attnsim.__version__,
        "git_commit": git_commit(),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
    }


def summary_digests(root: Path, experiments: dict[str, str]) -> dict[str, str]:
    """experiment -> content digest of its summary (from the recorded per-column sha256), for
    the experiments (name -> kind) that have one."""
    out = {}
    for name, kind in experiments.items():
        path = store.summary_path(root, kind, name)
        if path.exists():
            out[name] = integrity.file_digest(store.read_meta(path).get("content_sha256", {}))
    return out


def inputs_digest(experiments: str, digests: dict[str, str]) -> str:
    """One digest of the summaries a claim rests on (`experiments`: its comma-separated list)."""
    names = sorted(n.strip() for n in experiments.split(",") if n.strip())
    if not names:
        return ""
    missing = [n for n in names if n not in digests]
    if missing:
        raise StoreError(f"claim rests on experiment {missing[0]}, which has no summary")
    text = json.dumps({n: digests[n] for n in names}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fields() -> list[pa.Field]:
    """The provenance columns of claims.parquet, typed and described."""
    types = {"seed": pa.int64()}
    return [
        pa.field(name, types.get(name, pa.string()), metadata={"description": text})
        for name, text in {**ROW_FIELDS, **RUN_FIELDS}.items()
    ]


def stamp(rows: list[dict], digests: dict[str, str], run: dict) -> list[dict]:
    """The claims table's rows with their provenance columns."""
    return [
        {
            **row,
            "inputs_sha256": inputs_digest(row.get("experiments") or "", digests),
            **{k: run.get(k) for k in RUN_FIELDS},
        }
        for row in rows
    ]


def footer(run: dict) -> str:
    """One line naming the run, for the end of claims.md and `attnsim cite`."""
    commit = run.get("git_commit") or "not a git clone"
    return (
        f"Run: config_hash {run.get('config_hash') or 'unknown'}, seed {run.get('seed')}, "
        f"attnsim {run.get('attnsim_version')}, commit {commit}."
    )
