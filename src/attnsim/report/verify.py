"""`attnsim verify [STORE]`: every verdict recomputed from the store and compared with
claims.parquet, and every file below it checked; each claim something changed under is named on
one line with what changed. Read-only.

What is checked, per experiment the claims rest on: each trial file against its page and column
checksums; the summary against its own, against the chunks it records (a replaced chunk), and
against a summary recomputed from the trials (a value changed and re-signed); the summary's
algorithm version against the kind's. Per claim: the verdict and numbers recomputed from the
summaries under the sequential design the workspace's state record holds for it (its `design`
compared too; a row that says sequential without a record is one line naming the record), the
digest of the summaries it read (`inputs_sha256`), and the code that computed it
(attnsim's version and the git commit stamped on the row) against this one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from attnsim.errors import StoreError
from attnsim.jobs.collect import summarise_chunks
from attnsim.kinds import get_kind
from attnsim.records import state as workspace_state
from attnsim.records.experiment import Experiment
from attnsim.records.grid import grid_columns
from attnsim.records.state import ClaimDesign
from attnsim.report import claims as io
from attnsim.report import claims_check, provenance
from attnsim.report.designs import judged_under
from attnsim.report.diff import changed, claims_file, short_stamp
from attnsim.store import integrity
from attnsim.store import parquet as store


def experiment_problems(root: Path, name: str, kind: str) -> list[str]:
    """What no longer holds of one experiment's files (empty: its summary follows from its
    trials, every file matches its checksums)."""
    summary = store.summary_path(root, kind, name)
    if not summary.exists():
        return [f"{name}: its summary is missing"]
    try:
        meta = store.read_meta(summary)
        store.read_summary(summary, ids=True)
        chunks = store.experiment_inventory(root, kind, name)
        stale = integrity.stale_summary(summary, chunks, store.read_meta)
        if stale:
            return [f"{name}: the summary no longer matches its trials: {stale}"]
        tables = [store.read_table(path, dictionary=["point_id"]) for path, _ in chunks]
    except StoreError as error:
        return [f"{name}: {error}"]
    problems = []
    current = get_kind(kind).algorithm_version
    if meta.get("algorithm_version") != current:
        problems.append(
            f"{name}: computed by {kind} algorithm version {meta.get('algorithm_version')}, "
            f"this attnsim's is {current}"
        )
    differing = resummarised(meta, tables, name)
    if differing:
        problems.append(
            f"{name}: summary column {differing[0]} does not follow from its trials"
            + (f" (and {len(differing) - 1} more)" if len(differing) > 1 else "")
        )
    return problems


def resummarised(meta: dict, tables, name: str) -> list[str]:
    """The summary's columns whose recorded digests differ from a summary recomputed from
    `tables`, the experiment's trials."""
    experiment = Experiment.from_json(meta["experiment_config"])
    recomputed = summarise_chunks(
        get_kind(experiment.kind),
        name,
        grid_columns(experiment),
        tables,
        experiment.trial_settings.target_se,
    )
    recorded = meta.get("content_sha256", {})
    found = integrity.content_digests(recomputed)
    return sorted(c for c in found if recorded.get(c) != found[c])


def read_claims(root: Path) -> tuple[list[dict], dict[str, str]]:
    """The claims rows beside the store and the experiments (name -> kind) they were judged on;
    the file checked first (`claims_check.read`: a damaged or foreign table is one line)."""
    file = claims_file(root)
    rows, meta = claims_check.read(file)
    return rows, claims_check.experiments(meta, file)


def claim_lines(
    rows: list[dict],
    experiments: dict[str, str],
    root: Path,
    designs: Mapping[str, ClaimDesign] | None = None,
) -> list[str]:
    """One line per claim something changed under: what changed. Each claim is recomputed under
    its sequential design in `designs` (the workspace's state record), as the run judged it."""
    problems = {name: experiment_problems(root, name, k) for name, k in experiments.items()}
    summaries = readable_summaries(root, experiments)
    unreadable = sorted(set(experiments) - set(summaries))
    recomputed = {c.claim_id: c for c in io.evaluate(summaries, experiments, designs)}
    digests = provenance.summary_digests(root, {n: experiments[n] for n in summaries})
    here = provenance.run_record()
    lines = []
    for row in rows:
        rested = [n.strip() for n in (row.get("experiments") or "").split(",") if n.strip()]
        why = [p for n in rested for p in problems.get(n, [f"{n}: not in the store"])]
        why += verdict_change(row, recomputed.get(row["claim_id"]), unreadable)
        if row.get("inputs_sha256") is None:
            why.append("claims.parquet records no digest of its data (an older attnsim's)")
        elif not why and row["inputs_sha256"] != _inputs(row, digests):
            why.append("the summaries it read have changed since it was judged")
        why += code_change(row, here)
        if why:
            lines.append(f"{row['claim_id']}: " + "; ".join(why))
    return lines


def _inputs(row: dict, digests: dict[str, str]) -> str:
    try:
        return provenance.inputs_digest(row.get("experiments") or "", digests)
    except StoreError:
        return "missing"


def readable_summaries(root: Path, experiments: dict[str, str]) -> dict:
    """experiment -> its summary, for those that exist and pass their own checksums."""
    out: dict[str, object] = {}
    for name, kind in experiments.items():
        try:
            out |= io.load_summaries(root, {name: kind})
        except StoreError:
            continue
    return out


def verdict_change(row: dict, claim, unreadable: list[str]) -> list[str]:
    """The recomputed verdict and numbers against the stored row (and the design it was
    judged under)."""
    if claim is None:
        return ["no longer a claim of this attnsim"]
    stored = io.from_table_rows([row])[0]
    if stored.design and stored.design != claim.design:
        return [f"judged under {stored.design!r}, recomputed under {claim.design!r}"]
    if not changed(stored, claim):
        return []
    if stored.verdict != claim.verdict:
        cause = (
            f" (summaries that cannot be read: {', '.join(unreadable)})"
            if claim.verdict == "not measured" and unreadable
            else ""
        )
        return [f"verdict {stored.verdict}, recomputed {claim.verdict}{cause}"]
    return [f"measured {_number(stored.measured)}, recomputed {_number(claim.measured)}"]


def _number(value: float) -> str:
    return "none" if value is None or math.isnan(value) else f"{value:.6g}"


def code_change(row: dict, here: dict) -> list[str]:
    out = []
    for key, label in (("attnsim_version", "attnsim"), ("git_commit", "commit")):
        if (row.get(key) or "") != (here.get(key) or ""):
            judged, this = short_stamp(row.get(key)), short_stamp(here.get(key))
            out.append(f"judged by {label} {judged}, this is {this}")
    return out


def verify(root: Path) -> tuple[list[str], int, int]:
    """(one line per claim that no longer matches, how many measured claims were checked, how
    many need kinds the sweep does not run: checked too, nothing to recompute). The claims are
    recomputed under the sequential designs of the workspace's state record (`<workspace>/
    state.yaml`, the store's parent folder); rows judged under a design the record no longer
    holds are one line naming the record (a removed record cannot be recomputed, so those claims
    are not compared one by one)."""
    rows, experiments = read_claims(root)
    unmeasured = sum(1 for row in rows if row.get("verdict") == "not measured")
    workspace = Path(root).parent
    designs = workspace_state.read(workspace).designs
    lost = designs_lost(rows, designs)
    kept = [row for row in rows if row["claim_id"] not in lost]
    lines = claim_lines(kept, experiments, Path(root), designs)
    if lost:
        lines.insert(0, lost_line(workspace_state.path(workspace), lost))
    return lines, len(rows) - unmeasured, unmeasured


def designs_lost(rows: list[dict], designs: Mapping[str, ClaimDesign]) -> list[str]:
    """The claims claims.parquet says were judged under a sequential design that the state
    record does not hold."""
    return judged_under(io.from_table_rows(rows), designs)


def lost_line(record: Path, lost: list[str]) -> str:
    more = f" and {len(lost) - 1} more" if len(lost) > 1 else ""
    return (
        f"{record}: holds no sequential design for {lost[0]}{more}, which claims.parquet says "
        "were judged under one: restore the record (decide wrote it), or rerun to judge them "
        "at a single look"
    )
