"""The measure shared by the claims that a prediction of the output's error holds to first
order (dropout and rounding, docs/science.md §11): at every point of the claim's regime, the
mean over rows of measured / predicted error, its 95% interval and SE, judged point by point
against 1 ± a tolerance fixed before the data (`PerPoint(Equivalence(1, tolerance, ...))`)."""

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
