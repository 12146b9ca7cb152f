"""How each verdict of the table controls its error: the `level` and `design` columns of
claims.parquet (docs/science.md §7.8).

A claim is judged at a single look (its 95% intervals, level 0.95) unless the workspace's state
record (`records.state`, `designs`) holds a sequential design for it: `attnsim decide` records
one for every claim whose rows a top-up changed, targeted or not. Such a claim is judged on the
same summaries with every deciding interval widened to the design's at its last recorded look
(`judging`), so claims.parquet is a function of the summaries, the code and the design record: a
rerun, `attnsim claims`, `verify` and `cite` all judge it the same way.

Two methods are read: the anytime-valid confidence sequence decide uses
(`claims.confidence_sequence`: never spent, a later decide continues its error budget) and the
group-sequential design an earlier decide recorded (`claims.sequential`: spent at its last
planned look).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from attnsim.claims import confidence_sequence as cs
from attnsim.claims import sequential
from attnsim.claims.engine import ClaimResult, Interval
from attnsim.errors import StoreError
from attnsim.records.state import ClaimDesign

SINGLE = "single look"
SINGLE_LEVEL = 0.95  # the run's own 95% intervals
SEQUENTIAL = "sequential"  # how every sequential design's text starts (verify reads it)


@dataclass(frozen=True)
class Judging:
    """What a claim is judged with: the widening of its deciding intervals (None: as measured),
    the coverage they keep over every look at once, and the design's one line for the table."""

    interval: Interval | None
    level: float
    text: str


SINGLE_LOOK = Judging(None, SINGLE_LEVEL, SINGLE)


def judging(record: ClaimDesign | None) -> Judging:
    """The claim's judging under its recorded design (a single look without one). A record that
    cannot be read back is a StoreError naming the claim (state.yaml was edited by hand)."""
    if record is None or not record.looks:
        return SINGLE_LOOK
    look = len(record.looks)
    try:
        if record.method == cs.METHOD:
            sequence = cs.ConfidenceSequence.from_parameters(record.parameters)
            trials = record.looks[-1].trials
            return Judging(
                lambda low, high, n: sequence.widen(low, high, trials, n),
                sequence.level,
                _text(record, f"critical {sequence.critical(trials):.3f}"),
            )
        if record.method == "group sequential":
            factors = [int(f) for f in record.parameters["factors"]]
            design = sequential.Design.for_counts(factors)
            index = min(look, len(factors)) - 1
            return Judging(
                lambda low, high, n: sequential.widened(low, high, n, design, index),
                1 - 2 * sequential.TOTAL_ALPHA,
                _text(record, f"critical {design.critical[index]:.3f}"),
            )
    except (KeyError, TypeError, ValueError) as error:
        raise StoreError(
            f"state.yaml: the design of {record.claim_id} cannot be read ({error}); restore the "
            "record decide wrote"
        ) from None
    return SINGLE_LOOK  # "single look" recorded as such


def _text(record: ClaimDesign, critical: str) -> str:
    """`sequential: look k of K planned, <boundary>, <critical> at <trials>, since <declared>`
    (K: the looks the last decide call planned; a confidence sequence may look again)."""
    look = len(record.looks)
    planned = f"look {look} of {record.planned_looks} planned" if record.planned_looks else ""
    planned = planned or f"look {look}"
    if record.method == cs.METHOD:
        method = "normal-mixture confidence sequence (Howard et al. 2021, open-ended)"
    else:
        planned += ", spent" if record.spent else ""
        method = "group sequential (Lan-DeMets O'Brien-Fleming spending)"
    trials = f"{record.looks[-1].trials:,} trials per point"
    since = f", since {record.declared}" if record.declared else ""
    return f"{SEQUENTIAL}: {planned}, {method}, {critical} at {trials}{since}"


def sequential_text(text: str) -> bool:
    """Whether a row's `design` names a sequential design (its record must exist)."""
    return text.startswith(SEQUENTIAL)


def judged_under(claims: Iterable[ClaimResult], designs: Mapping[str, ClaimDesign]) -> list[str]:
    """The claims whose rows say sequential but that the state record holds no design for:
    judged afresh they would be single looks (a removed or reset record)."""
    return [c.claim_id for c in claims if sequential_text(c.design) and c.claim_id not in designs]


def design_summary(claims: Iterable[ClaimResult]) -> str:
    """One line for the headline: the levels and designs the table's verdicts were judged
    under, e.g. "every verdict at a single look (95% intervals)" or "158 verdicts at a single
    look (level 0.95); 3 under decide's confidence sequence (level 0.90, look 3): a, b, c"."""
    judged = [c for c in claims if c.design]
    if not judged:
        return ""
    single = [c for c in judged if not sequential_text(c.design)]
    later = [c for c in judged if sequential_text(c.design)]
    if not later:
        return f"every verdict at a single look (level {_level(single)})"
    parts = [f"{_count(len(single))} at a single look (level {_level(single)})"] if single else []
    groups: Counter[tuple[str, str]] = Counter()
    for claim in later:
        groups[(_method(claim.design), _level([claim]))] += 1
    for (method, level), count in sorted(groups.items()):
        names = [c.claim_id for c in later if _method(c.design) == method]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        parts.append(f"{_count(count)} under decide's {method} (level {level}): {shown}")
    return "; ".join(parts)


def _count(count: int) -> str:
    return f"{count} verdict" + ("" if count == 1 else "s")


def _level(claims: list[ClaimResult]) -> str:
    levels = sorted({c.level for c in claims if not math.isnan(c.level)})
    return "/".join(f"{v:.2f}" for v in levels) or "unstated"


def _method(text: str) -> str:
    return "group-sequential design" if "group sequential" in text else "confidence sequence"
