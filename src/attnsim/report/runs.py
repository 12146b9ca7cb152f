"""`attnsim runs`: every workspace under results/ in one table, newest first (as `dvc exp show` or
MLflow's run list): the config it ran, the config's hash, points and trials in its summaries, the
CPU its jobs measured, its claims' tally and when it last changed.

Everything is read from the workspace's own files (`plan/`, the summaries, `claims.parquet`, the
jobs' benchmarks), never recomputed, so listing a hundred workspaces stays quick and read-only.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from attnsim.config import workspace as workspaces
from attnsim.store import parquet

VERDICT_SHORT = {"holds": "hold", "fails": "fail", "inconclusive": "inc", "outside regime": "out"}


@dataclass(frozen=True)
class RunRow:
    workspace: str
    config: str
    config_hash: str
    experiments: int
    points: int
    trials: int
    cpu_hours: float
    tally: str
    changed: float  # epoch seconds of its newest summary or claims file


def workspaces_under(root: Path) -> list[Path]:
    """The workspaces under `root` (results/): itself if it holds a store, and each folder below
    it that does (a preset's, a sweep's, a `--workspace` inside it), at any depth but never inside
    a store."""
    found = []
    for store in sorted(Path(root).rglob("store")):
        if not store.is_dir() or "store" in store.relative_to(root).parts[:-1]:
            continue
        if (store / "summary").is_dir() or (store / "trials").is_dir():
            found.append(store.parent)
    return found


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _config(folder: Path, root: Path) -> str:
    files = _json(folder / "plan" / "run.json").get("configfiles") or []
    if files:
        return ", ".join(str(f) for f in files)
    if folder == root:
        return str(workspaces.DEFAULT_CONFIG)
    return f"{folder.name}.yaml?"  # named after it, unless --workspace chose the folder


def benchmark_cpu(path: Path) -> float | None:
    """The CPU-seconds a job's Snakemake benchmark file measured (its last row), or None."""
    try:
        header, *rows = path.read_text().splitlines()
        return float(rows[-1].split("\t")[header.split("\t").index("cpu_time")])
    except (OSError, ValueError, IndexError):
        return None


def _cpu_hours(folder: Path) -> float:
    """CPU-hours the jobs that made the workspace's current files measured (their benchmarks)."""
    bench = folder / "benchmarks"
    paths = bench.rglob("*.tsv") if bench.is_dir() else ()
    return sum(benchmark_cpu(path) or 0.0 for path in paths) / 3600


def _tally(folder: Path) -> str:
    path = folder / "claims.parquet"
    if not path.exists():
        return "-"
    try:
        table = parquet.read_table(path, columns=["verdict"])
    except Exception:  # a damaged file: `attnsim verify` names the problem
        return "unreadable"
    count = Counter(table.column("verdict").to_pylist())
    parts = [f"{count[v]} {word}" for v, word in VERDICT_SHORT.items() if count[v]]
    return ", ".join(parts) or "none measured"


def row(folder: Path, root: Path) -> RunRow:
    experiments = _json(folder / "plan" / "experiments.json")
    points = trials = 0
    changed = 0.0
    for name, kind in experiments.items():
        path = parquet.summary_path(folder / "store", kind, name)
        try:
            column = parquet.read_table(path, columns=["n_trials"]).column("n_trials")
        except Exception:  # none yet, or damaged: counted as nothing here
            continue
        points += len(column)
        trials += sum(column.to_pylist())
        changed = max(changed, path.stat().st_mtime)
    claims = folder / "claims.parquet"
    if claims.exists():
        changed = max(changed, claims.stat().st_mtime)
    provenance = _json(folder / "plan" / "provenance.json")
    return RunRow(
        workspace=str(folder),
        config=_config(folder, root),
        config_hash=str(provenance.get("config_hash", "-"))[:12],
        experiments=len(experiments),
        points=points,
        trials=trials,
        cpu_hours=_cpu_hours(folder),
        tally=_tally(folder),
        changed=changed,
    )


def table(root: Path = workspaces.ROOT) -> list[RunRow]:
    """A row per workspace under `root`, newest first."""
    rows = [row(folder, Path(root)) for folder in workspaces_under(Path(root))]
    return sorted(rows, key=lambda r: r.changed, reverse=True)


def render(rows: list[RunRow]) -> str:
    if not rows:
        return "no workspaces under results/ yet: attnsim run makes one"
    head = ("workspace", "config", "hash", "points", "trials", "CPU-h", "claims", "changed")
    cells = [head] + [
        (
            r.workspace,
            r.config,
            r.config_hash,
            f"{r.points:,}",
            f"{r.trials:,}",
            f"{r.cpu_hours:.3f}",
            r.tally,
            time.strftime("%Y-%m-%d %H:%M", time.localtime(r.changed)) if r.changed else "-",
        )
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    right = (3, 4, 5)  # numbers
    lines = [
        "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths))
        ).rstrip()
        for line in cells
    ]
    return "\n".join(lines)
