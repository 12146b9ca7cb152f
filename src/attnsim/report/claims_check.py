"""What `cite`, `claims --diff`, `verify` and the run's summary check of a claims table before they
print from it: the file, each row's verdict, and the data it rests on. The full recomputation of
every verdict from the trials stays `attnsim verify`'s; this is what can be checked in a moment.

1. The file (`read`): attnsim's provenance and its checksum, every page's CRC, every column's
   content sha256 and footer statistics (`parquet.verify_file`), the columns of this attnsim's
   table. A flipped bit, a file written by another tool (a pandas round-trip) or a query's output
   put in its place is one line naming the file.
2. Each row's verdict (`check_verdicts`), re-derived from what the row stores: its interval and
   the bounds of its rule (the claim's declared rule says which rule: equivalence, one-sided, a
   sanity bound or range). A claim judged at every point stores only its worst point and its
   range: a `holds` must have them inside the band (or on the claimed side), a `fails` its worst
   point outside the band. A claim with a sequential design in the workspace's state record may
   have been judged on a wider interval than the 95% one: there a decided verdict must follow
   from the stored interval too (a wider interval decides only what the narrower does), an
   undecided one cannot be contradicted. A verdict edited into a file whose checksums were
   rewritten to match is refused here.
3. The data (`check_inputs`): each printed row's `inputs_sha256` against the digests of the
   summaries as they are now (from their provenance), so a verdict whose summaries were rebuilt
   or replaced since is not cited as if it described them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from attnsim.claims.engine import (
    ENTROPY_BOUNDS,
    ClaimSpec,
    Equivalence,
    OneSided,
    PerPoint,
    Sanity,
    SanityRange,
    equivalence_verdict,
    one_sided_verdict,
)
from attnsim.errors import StoreError
from attnsim.records import state as workspace_state
from attnsim.report import provenance
from attnsim.store import parquet as store

DECIDED = ("holds", "fails")
UNJUDGED = ("outside regime", "not measured")


def read(file: Path) -> tuple[list[dict], dict[str, Any]]:
    """The rows of the claims table at `file` and its provenance, once the file passes its
    checks (see the module docstring, 1); StoreError naming it otherwise."""
    from attnsim.report.claims import SCHEMA

    file = Path(file)
    try:
        meta = store.read_meta(file)
    except StoreError as error:
        text = str(error)
        if "foreign Parquet file" in text:
            raise StoreError(
                f"{file}: not a claims table attnsim wrote (no attnsim provenance: rewritten by "
                "another tool?); rerun `attnsim run` (or `attnsim claims --write`) to write it "
                "again"
            ) from None
        raise StoreError(_claims_fix(text)) from None
    if meta.get("table") != "claims":
        raise StoreError(
            f"{file}: holds attnsim's {meta.get('table')!r} table, not the claims; rerun "
            "`attnsim run` to write the claims again"
        )
    try:
        store.verify_file(file)
        table = store.read_table(file)
    except StoreError as error:
        raise StoreError(_claims_fix(str(error))) from None
    expected = {f.name: f.type for f in SCHEMA}
    found = {f.name: f.type for f in table.schema}
    if found != expected:
        differing = sorted(set(found) ^ set(expected)) or sorted(
            n for n in found if found[n] != expected[n]
        )
        raise StoreError(
            f"{file}: its columns are not this attnsim's claims table's (column "
            f"{differing[0]!r}); rerun `attnsim run` to judge the claims again"
        )
    if "experiments" not in meta:
        raise StoreError(
            f"{file}: records no experiments (written by an older attnsim); rerun `attnsim run` "
            "to judge the claims again"
        )
    return table.to_pylist(), meta


def _claims_fix(message: str) -> str:
    """A store file's one line, with the remedy for the claims table: write it again."""
    head, sep, _ = message.rpartition("; delete it and rerun to recompute it")
    return f"{head}; rerun `attnsim run` to write the claims again" if sep else message


def experiments(meta: Mapping[str, Any], file: Path) -> dict[str, str]:
    """The experiments (name -> kind) a claims table was judged on, from its provenance."""
    try:
        found = json.loads(meta["experiments"])
        if isinstance(found, dict) and all(isinstance(v, str) for v in found.values()):
            return found
    except (KeyError, TypeError, ValueError):
        pass
    raise StoreError(f"{file}: its record of the experiments is not readable; rerun `attnsim run`")


def declared_specs() -> dict[str, ClaimSpec]:
    """claim id -> its declaration, for every claim this attnsim declares as a ClaimSpec."""
    from attnsim.kinds import all_kinds

    specs = {ENTROPY_BOUNDS.claim_id: ENTROPY_BOUNDS}
    for kind in all_kinds().values():
        for entry in kind.submodule("claims").CLAIMS:
            if isinstance(entry, ClaimSpec):
                specs[entry.claim_id] = entry
    return specs


def check_verdicts(rows: Iterable[dict], file: Path, designed: Iterable[str] = ()) -> None:
    """StoreError naming the first row whose verdict does not follow from what it stores (the
    module docstring, 2). `designed`: claims with a sequential design (a possibly wider
    interval)."""
    specs, wider = declared_specs(), set(designed)
    for row in rows:
        claim_id, verdict = row.get("claim_id"), row.get("verdict")
        why = _contradiction(row, specs.get(str(claim_id)), claim_id in wider)
        if why:
            raise StoreError(
                f"{file}: claim {claim_id} says {verdict!r}, but {why} (edited since it was "
                "judged?); rerun `attnsim run` to judge it again, `attnsim verify` for details"
            )


def _number(row: dict, key: str) -> float:
    value = row.get(key)
    return math.nan if value is None else float(value)


def _contradiction(row: dict, spec: ClaimSpec | None, wider: bool) -> str | None:
    """Why the row's verdict cannot have come from its own numbers, or None."""
    verdict, points = row.get("verdict"), row.get("points") or 0
    if verdict in UNJUDGED:
        return f"it rests on {points} points" if points > 0 else None
    if verdict not in (*DECIDED, "inconclusive"):
        return "that is no verdict of attnsim's"
    if points <= 0:
        return "it rests on no point"
    if spec is None:  # a claim this attnsim no longer declares: nothing to re-derive it by
        return None
    rule = spec.rule
    low, high = _number(row, "ci_low"), _number(row, "ci_high")
    if isinstance(rule, Equivalence):
        derived = equivalence_verdict(
            low, high, _number(row, "predicted"), _number(row, "tolerance")
        )
    elif isinstance(rule, OneSided):
        derived = one_sided_verdict(low, high, _number(row, "bound"), str(row.get("side")))
    elif isinstance(rule, Sanity):
        derived = _sanity(row)
    elif isinstance(rule, SanityRange):
        derived = _sanity_range(row, rule.low)
    elif isinstance(rule, PerPoint):
        return _per_point(row, rule, wider)
    else:
        return None
    if verdict == derived or (wider and verdict == "inconclusive"):
        return None
    interval = f"[{low:.6g}, {high:.6g}]"
    return f"its stored numbers (interval {interval}) give {derived!r}"


def _sanity(row: dict) -> str:
    value, bound = _number(row, "measured"), _number(row, "bound")
    if math.isnan(value):
        return "inconclusive"
    inside = value <= bound if row.get("side") == "below" else value >= bound
    return "holds" if inside else "fails"


def _sanity_range(row: dict, low: float) -> str:
    lo, hi = _number(row, "value_min"), _number(row, "value_max")
    if math.isnan(lo) or math.isnan(hi):
        return "inconclusive"
    return "holds" if low <= lo and hi <= _number(row, "bound") else "fails"


def _per_point(row: dict, rule: PerPoint, wider: bool) -> str | None:
    """A claim judged at every point stores one of its points (`measured` with that point's
    interval: the one shown) or its worst point and the range of the points' values: what they
    rule out. Every point holds for `holds`, none fails for `inconclusive`, one fails for
    `fails`."""
    verdict, inner = row.get("verdict"), rule.rule
    tallied = _tally(str(row.get("evidence") or ""))
    if tallied is not None and tallied != verdict and not (wider and verdict == "inconclusive"):
        return f"its evidence counts the points' verdicts as {tallied!r}"
    low, high = _number(row, "ci_low"), _number(row, "ci_high")
    if not (math.isnan(low) or math.isnan(high)):
        shown = inner.verdict(low, high)
        if (verdict == "holds" and shown != "holds") or (
            verdict == "inconclusive" and shown == "fails" and not wider
        ):
            return f"the point it shows (interval [{low:.6g}, {high:.6g}]) {shown}"
    lo, hi = _number(row, "value_min"), _number(row, "value_max")
    if math.isnan(lo) or math.isnan(hi):
        return None
    if isinstance(inner, Equivalence):
        centre, tolerance = _number(row, "predicted"), _number(row, "tolerance")
        inside = centre - tolerance <= lo and hi <= centre + tolerance
        if verdict == "holds" and not (inside and _number(row, "detectable") <= tolerance):
            return (
                f"its points' values ({lo:.6g} to {hi:.6g}) or intervals reach outside "
                f"{centre:g} ± {tolerance:g}"
            )
        if verdict == "fails" and inside:
            return f"its points' values ({lo:.6g} to {hi:.6g}) lie in {centre:g} ± {tolerance:g}"
        return None
    bound, side = _number(row, "bound"), row.get("side")
    on_side = lo > bound if side == "above" else hi < bound
    wrong_side = lo < bound if side == "above" else hi > bound
    if verdict == "holds" and not on_side:
        return f"its points' values ({lo:.6g} to {hi:.6g}) are not all {side} {bound:g}"
    if verdict == "fails" and not wrong_side:
        return f"its points' values ({lo:.6g} to {hi:.6g}) are all {side} {bound:g} or on it"
    return None


# the engine's tally opening a per-point claim's evidence (`engine.point_counts`)
TALLY = re.compile(r"^(no point|([0-9]+) of ([0-9]+) [^,(]*? hold(?: \(([^)]*)\))?), worst ")


def _tally(evidence: str) -> str | None:
    """The verdict the engine's tally of a per-point claim's points gives (`combine_verdicts`),
    or None when the evidence does not open with one."""
    found = TALLY.match(evidence)
    if found is None:
        return None
    if found.group(1) == "no point":
        return "inconclusive"
    others = found.group(4) or ""
    if " fails" in others:
        return "fails"
    if " inconclusive" in others or int(found.group(2)) != int(found.group(3)):
        return "inconclusive"
    return "holds" if int(found.group(3)) > 0 else "inconclusive"


def designed_claims(folder: Path) -> set[str]:
    """The claims with a sequential design in the state record of the workspace `folder` (none
    when it has no record)."""
    try:
        return set(workspace_state.read(folder).designs)
    except StoreError:
        return set()


def check_inputs(rows: Iterable[dict], file: Path, root: Path, judged: dict[str, str]) -> None:
    """StoreError naming the first row whose `inputs_sha256` is not the digest of the summaries
    of the store at `root` as they are now (`judged`: the experiments name -> kind)."""
    digests = provenance.summary_digests(root, judged)
    for row in rows:
        recorded = row.get("inputs_sha256")
        if recorded is None:
            raise StoreError(
                f"{file}: claim {row.get('claim_id')} records no digest of its data (an older "
                "attnsim's); rerun `attnsim run` to judge it again"
            )
        try:
            current = provenance.inputs_digest(row.get("experiments") or "", digests)
        except StoreError as error:
            current = f"missing ({error})"
        if recorded != current:
            raise StoreError(
                f"{file}: claim {row.get('claim_id')} was judged on summaries that have changed "
                f"since (or are gone from {root}); rerun `attnsim run` to judge it again"
            )


def checked(file: Path, root: Path | None, claims: Iterable[str] | None = None) -> list[dict]:
    """The rows of the claims table at `file` after every check (the module docstring): the
    file, every row's verdict, and the data of the rows in `claims` (all when None) against the
    store at `root` (skipped when there is none)."""
    rows, meta = read(file)
    check_verdicts(rows, file, designed_claims(Path(file).parent))
    if root is not None:
        wanted = None if claims is None else set(claims)
        printed = [r for r in rows if wanted is None or r.get("claim_id") in wanted]
        check_inputs(printed, file, Path(root), experiments(meta, file))
    return rows
