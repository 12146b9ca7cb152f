"""How far an `inconclusive` verdict is from a decision (docs/science.md §7.6).

At the current effect and variance, an interval of half-width h from n units narrows as
h sqrt(n / n'). It decides once it fits inside the band (holds) or clears it (fails):

    n' = n (h / margin)^2,   margin = tolerance - |value - predicted|  (inside: holds)
                                    = |value - predicted| - tolerance  (outside: fails)
                                    = |value - bound|                  (one-sided)

For a per-point rule every undecided point needs its own count (its interval and trials); the
claim needs the largest, and the table names the points that need more. A value exactly on an
edge never decides at its effect (margin 0): the count is then 0 and the text says so. The
count is in the estimate's unit: trials per point, heads, rows or points — only trials can be
topped up (`attnsim decide`); more heads or points mean a larger grid.

Rules are read by their fields (predicted, tolerance, bound, side, and `rule` for a per-point
rule), so that this module does not import the engine that calls it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

# a point's statistics and sample sizes; its other columns are the parameters that name it
TRIALS = "point_trials"  # engine.TRIALS_COLUMN (not imported: the engine imports this module)
POINT_COLUMNS = ("value", "mean", "ci_low", "ci_high", "se", "n", TRIALS, "points", "heads", "rows")
SHOWN_POINTS = 3  # points named in the text; the rest counted
NEVER = 1e-6  # a margin below this share of the half-width (10^12 times the data): on the edge


@dataclass(frozen=True)
class ToDecide:
    """The sample size at which the interval would decide (`count`, 0: never at this effect),
    the size now, its unit, which way it would go and the points that need more."""

    count: int
    now: int
    unit: str
    outcome: str
    points: tuple[str, ...] = ()

    def text(self) -> str:
        where = ""
        if self.points:
            shown = "; ".join(self.points[:SHOWN_POINTS])
            more = len(self.points) - SHOWN_POINTS
            where = f" at {shown}" + (f" and {more} more points" if more > 0 else "")
        if self.count == 0:
            return f"on a band edge at its current effect{where}: more {self.unit} cannot decide"
        return (
            f"~{self.count:,} {self.unit} would decide it ({self.outcome}) at the current effect "
            f"and variance{where} (now {self.now:,})"
        )


def needed(now: int, half: float, margin: float) -> int:
    """The n' at which the half-width `half` from `now` units shrinks to `margin`; 0: never (a
    centre on the edge, to rounding)."""
    if not (now > 0 and math.isfinite(half) and half > 0 and margin > half * NEVER):
        return 0
    return max(now + 1, math.ceil(now * (half / margin) ** 2))


def margin(rule, value: float) -> tuple[float, str]:
    """How far the interval's centre is from the nearest edge that would decide it, and the
    verdict it would give there."""
    if hasattr(rule, "tolerance"):
        distance = abs(value - rule.predicted)
        if distance < rule.tolerance:
            return rule.tolerance - distance, "holds"
        return distance - rule.tolerance, "fails"
    above = value > rule.bound
    claimed = above if rule.side == "above" else not above
    return abs(value - rule.bound), "holds" if claimed else "fails"


def to_decide(rule, estimate) -> ToDecide | None:
    """What would decide an inconclusive claim judged by `rule` on `estimate`; None when there
    is no interval to narrow (sanity rules, ranges, an estimate without n)."""
    inner = getattr(rule, "rule", None)
    if inner is not None:
        return _per_point(inner, estimate.points, estimate.unit)
    if not hasattr(rule, "tolerance") and not hasattr(rule, "side"):
        return None
    low, high = estimate.ci_low, estimate.ci_high
    if not (math.isfinite(low) and math.isfinite(high)) or estimate.n <= 0:
        return None
    space, outcome = margin(rule, (low + high) / 2)
    count = needed(int(estimate.n), (high - low) / 2, space)
    return ToDecide(count, int(estimate.n), estimate.unit or "units", outcome)


def _per_point(rule, points: pd.DataFrame | None, unit: str) -> ToDecide | None:
    """Per undecided point: its count from its own interval and sample (its trials, for a
    summary point; or the estimate's unit, e.g. the heads of a group)."""
    column = TRIALS if points is not None and TRIALS in points else unit
    if points is None or points.empty or column not in points:
        return None
    rows = []
    for _, point in points.iterrows():
        if rule.verdict(point["ci_low"], point["ci_high"]) != "inconclusive":
            continue
        centre = (point["ci_low"] + point["ci_high"]) / 2
        space, outcome = margin(rule, centre)
        half = (point["ci_high"] - point["ci_low"]) / 2
        rows.append((needed(int(point[column]), half, space), int(point[column]), outcome, point))
    if not rows:
        return None
    never = [r for r in rows if r[0] == 0]
    chosen = never or sorted(rows, key=lambda r: -r[0])
    count, now, _, _ = chosen[0]
    names = tuple(_name(r[3]) for r in chosen)
    outcome = "fails" if any(r[2] == "fails" for r in rows) else "holds"
    return ToDecide(
        count, now, f"{'trials' if column == TRIALS else column} per point", outcome, names
    )


def _name(point: pd.Series) -> str:
    params = [(k, v) for k, v in point.items() if k not in POINT_COLUMNS]
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params)
