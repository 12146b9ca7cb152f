"""The rule and measure shared by the claims that a measured / predicted ratio is 1 at every point
of their regime (the delta method, dropout and rounding, the entropy and gap laws): each point's
ratio, its 95% interval and SE, judged point by point against 1 ± a tolerance fixed before the
data. One rule for all of them, so that "predicts" means the same test in every kind."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from attnsim.claims.engine import Equivalence, Estimate, PerPoint, per_point_estimate


def ratio_is_one(tolerance: float, reason: str) -> PerPoint:
    """Every point's 95% interval of the ratio inside 1 ± `tolerance`."""
    return PerPoint(Equivalence(1.0, tolerance, reason))


def ratio_points(
    ratio: str, params: tuple[str, ...], mean: str = "_mean", **facts
) -> Callable[[pd.DataFrame], Estimate]:
    """The measure: each point's `ratio` (column `ratio` + `mean`, 95% interval
    `ratio`_ci_low/_ci_high, SE `ratio`_se when the summary keeps it), named by `params`."""

    def measure(rows: pd.DataFrame) -> Estimate:
        se = f"{ratio}_se" if f"{ratio}_se" in rows else None
        return per_point_estimate(
            rows,
            f"{ratio}{mean}",
            f"{ratio}_ci_low",
            f"{ratio}_ci_high",
            se,
            1.0,
            params,
            **{name: f(rows) for name, f in facts.items()},
        )

    return measure


def at_worst(params: tuple[str, ...], labels: dict[str, str] | None = None):
    """describe(estimate): 'at (form, rate=0.1, ...)', the worst point by its parameters."""
    labels = labels or {}

    def describe(e: Estimate) -> str:
        worst = e.facts["worst"]
        parts = [
            f"{labels.get(p, p)}={_fmt(worst[p])}" if labels.get(p, p) else _fmt(worst[p])
            for p in params
        ]
        return f"at ({', '.join(parts)})"

    return describe


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
