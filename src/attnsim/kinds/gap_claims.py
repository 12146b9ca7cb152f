"""Measures and regimes shared by the kinds that measure the entropy gap log n - H of cosine
attention (docs/science.md §4): their summaries have `gap_max` (largest trial gap), `gap_mean`,
`gap_exact` (the exact finite-n worst case) per point, and the parameters `n` and `tau`. The
claims built on them are sanity checks: cosines lie in [-1, 1], so no configuration can break
the bounds, and at small tau the widening is near-certain by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnsim.claims.engine import Estimate
from attnsim.theory.entropy import G1, asymptotic_gap, gap_tolerance


def at_tau_one(rows: pd.DataFrame) -> pd.Series:
    return pd.Series(np.isclose(rows["tau"], 1.0), index=rows.index)


def every_point(rows: pd.DataFrame) -> pd.Series:
    return rows["n"] > 0


def smallest_tau_below_one(rows: pd.DataFrame) -> pd.Series:
    """The sweep's smallest tau < 1: where the widening is largest (and near-certain)."""
    below = rows["tau"] < 1
    return below & (rows["tau"] == rows.loc[below, "tau"].min())


def largest_gap(rows: pd.DataFrame) -> Estimate:
    """The largest trial gap, shown with the range from the smallest mean gap to it."""
    return Estimate(
        value=float(rows["gap_max"].max()),
        number="extreme over trials",
        range_min=float(rows["gap_mean"].min()),
        range_max=float(rows["gap_max"].max()),
        n=int(rows["n_trials"].sum()),
        unit="trials",
        facts={"points": len(rows), "tau": float(rows["tau"].min())},
    )


def largest_excess(rows: pd.DataFrame) -> Estimate:
    """The largest excess of a point's largest trial gap over its exact worst case beyond the
    float64 rounding slack (`gap_tolerance`): <= 0 when every trial respects its bound."""
    slack = np.array([gap_tolerance(n, tau) for n, tau in zip(rows["n"], rows["tau"])])
    excess = rows["gap_max"] - rows["gap_exact"]
    return Estimate(
        value=float((excess - slack).max()),
        number="extreme over trials",
        range_min=float(excess.min()),
        range_max=float(excess.max()),
        n=int(rows["n_trials"].sum()),
        unit="trials",
        facts={"points": len(rows), "largest_excess": float(excess.max())},
    )


def describe_excess(e: Estimate) -> str:
    return (
        f"largest gap_max - gap_exact over {e.facts['points']} points: "
        f"{e.facts['largest_excess']:.3g} (<= 0 means within the bound)"
    )


def describe_widening(e: Estimate) -> str:
    tau = e.facts["tau"]
    return (
        f"tau = {tau:g}: mean gap from {e.range_min:.3f}, largest {e.value:.3f} vs g(1) = "
        f"{G1:.4f}; the widest possible there is g({tau:g}) = {float(asymptotic_gap(tau)):.4g}"
    )
