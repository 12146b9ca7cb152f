"""`attnsim claims --diff OTHER`: two runs' verdicts side by side, only what changed.

Each side is a claims table (`claims.parquet`, or a results folder or store holding one). For
every claim whose verdict or numbers differ, one line: the verdict and number before and after,
then why, when the stores know it: the experiments' trials, seed, grid, algorithm version or the
CPU class their chunks were computed on (from each summary's provenance), and the code version
and config hash stamped on the rows. A claim that did not change prints nothing, so a run
compared with itself prints nothing; the exit status is 1 when anything differs (as `diff`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from attnsim.claims.engine import ClaimResult
from attnsim.errors import AttnsimError
from attnsim.report import claims as io
from attnsim.report.claims_check import checked
from attnsim.report.claims_render import measured_text
from attnsim.store import parquet as store

NUMBERS = ("measured", "ci_low", "ci_high", "predicted", "tolerance", "bound", "points", "trials")
RUN_REASONS = {"config_hash": "config", "attnsim_version": "attnsim", "git_commit": "commit"}
SUMMARY_REASONS = ("trials", "seed", "algorithm_version", "target_se", "max_trials", "grid")


def claims_file(path: Path) -> Path:
    """The claims table a path names: the file itself, a results folder holding claims.parquet,
    or a store whose parent folder holds it."""
    path = Path(path)
    for candidate in (path, path / "claims.parquet", path.parent / "claims.parquet"):
        if candidate.is_file():
            return candidate
    raise AttnsimError(f"{path}: no claims.parquet there (run `attnsim run`, or name the file)")


def read_side(path: Path) -> tuple[dict[str, ClaimResult], dict[str, dict], Path | None]:
    """claim id -> its result, claim id -> its provenance columns, the store beside the table."""
    file = claims_file(path)
    beside = file.parent / "store"
    root = beside if (beside / "summary").is_dir() else None
    rows = checked(file, root)  # the file, every verdict, the data beside it
    claims = {c.claim_id: c for c in io.from_table_rows(rows)}
    stamps = {row["claim_id"]: row for row in rows}
    return claims, stamps, root


def experiment_facts(root: Path | None, names: str) -> dict[str, dict]:
    """experiment -> what its numbers depend on (trials, seed, algorithm version, trial settings,
    grid, CPU classes), from its summary's provenance; empty without a store."""
    if root is None:
        return {}
    out = {}
    for name in (n.strip() for n in names.split(",") if n.strip()):
        paths = sorted((root / "summary").glob(f"kind=*/experiment={name}/summary.parquet"))
        if paths:
            meta = store.read_meta(paths[0])
            config = json.loads(meta.get("experiment_config") or "{}")
            out[name] = {
                **{k: meta.get(k, config.get(k)) for k in SUMMARY_REASONS if k != "grid"},
                "grid": config.get("grid"),
                "cpu": ", ".join(sorted(meta.get("cpu_classes", {}))),
            }
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def changed(a: ClaimResult, b: ClaimResult) -> bool:
    return a.verdict != b.verdict or not all(_same(getattr(a, f), getattr(b, f)) for f in NUMBERS)


def reasons(a_stamp: dict, b_stamp: dict, a_facts: dict, b_facts: dict) -> list[str]:
    """What differs between the two sides' inputs of one claim, as short phrases."""
    out = []
    for name in sorted(set(a_facts) | set(b_facts)):
        before, after = a_facts.get(name, {}), b_facts.get(name, {})
        for key in (*SUMMARY_REASONS, "cpu"):
            if before.get(key) == after.get(key):
                continue
            label = "CPU class" if key == "cpu" else key.replace("_", " ")
            change = "changed" if key == "grid" else f"{before.get(key)} -> {after.get(key)}"
            out.append(f"{name}: {label} {change}")
    for key, label in RUN_REASONS.items():
        if a_stamp.get(key) != b_stamp.get(key):
            before, after = (short_stamp(s.get(key)) for s in (a_stamp, b_stamp))
            out.append(f"{label} {before} -> {after}")
    return out


def short_stamp(value) -> str:
    """A stamp for a line: commits to 12 hex digits (and their '+dirty'), nothing as 'unknown'."""
    text = str(value or "unknown")
    head, plus, rest = text.partition("+")
    return head[:12] + plus + rest if len(head) == 40 else text


def line(a: ClaimResult, b: ClaimResult, why: list[str]) -> str:
    parts = [a.verdict if a.verdict == b.verdict else f"{a.verdict} -> {b.verdict}"]
    before, after = measured_text(a), measured_text(b)
    if before != after:
        parts.append(f"{before} -> {after}")
    parts += [
        f"{f} {getattr(a, f)} -> {getattr(b, f)}"
        for f in ("points", "trials")
        if getattr(a, f) != getattr(b, f)
    ]
    if len(parts) == 1 and a.verdict == b.verdict:
        parts.append("numbers changed below the rounding")
    text = f"{a.claim_id}: {'; '.join(parts)}"
    return text + (f" ({'; '.join(why)})" if why else " (the stores do not say why)")


def diff(this: Path, other: Path) -> list[str]:
    """One line per claim that differs between the claims at `this` and at `other`."""
    a_claims, a_stamps, a_root = read_side(this)
    b_claims, b_stamps, b_root = read_side(other)
    lines = []
    for claim_id, a in a_claims.items():
        b = b_claims.get(claim_id)
        if b is None:
            lines.append(f"{claim_id}: only in {claims_file(this)} ({a.verdict})")
        elif changed(a, b):
            names = ", ".join(n for n in (a.experiments, b.experiments) if n)
            facts = (experiment_facts(a_root, names), experiment_facts(b_root, names))
            lines.append(line(a, b, reasons(a_stamps[claim_id], b_stamps[claim_id], *facts)))
    for claim_id, b in b_claims.items():
        if claim_id not in a_claims:
            lines.append(f"{claim_id}: only in {claims_file(other)} ({b.verdict})")
    return lines
