"""Measures and regimes shared by the kinds that measure the entropy gap log n - H of cosine
attention (docs/science.md §4): their summaries have `gap_max` (largest trial gap), `gap_mean`,
`gap_exact` (the exact finite-n worst case) per point, and the parameters `n` and `tau`. The
claims built on them are sanity checks: cosines lie in [-1, 1], so no configuration can break
the bounds, and at small tau the widening is near-certain by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnsim.claims.engine import Estimate
from attnsim.theory.entropy import asymptotic_gap, gap_tolerance

G1 = float(asymptotic_gap(1.0))  # the largest gap any cosines allow at tau = 1 (§4.3)


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


# TEMPORARY: the legacy form real_temperature uses until it is converted.
from attnsim.claims.engine import Claim, select_regime  # noqa: E402


def legacy_gap_at_most(claim: Claim, rows: pd.DataFrame, bound: float, evidence: str) -> Claim:
    """Sanity: holds when no trial's gap (the points' `gap_max`) exceeds `bound`; shown as the range
    from the smallest mean gap to the largest trial gap."""
    return claim.sanity_bound(
        float(rows["gap_max"].max()), bound, "below", evidence, low=float(rows["gap_mean"].min())
    )


def legacy_within_exact_bound(claim: Claim, s: pd.DataFrame) -> Claim:
    """Sanity: holds when every point's largest trial gap is within its exact finite-n worst case
    (`gap_within_bound`, which allows for float64 rounding); measured = the largest excess."""
    excess = s["gap_max"] - s["gap_exact"]
    claim.sanity_check(
        bool(s["gap_within_bound"].all()),
        f"largest gap_max - gap_exact over {len(s)} points: {excess.max():.3g} (<= 0 means within "
        "the bound)",
    )
    claim.bound, claim.side = 0.0, "below"
    claim.measured, claim.ci_low, claim.ci_high = (
        float(excess.max()),
        float(excess.min()),
        float(excess.max()),
    )
    return claim


def legacy_widens_beyond(claim: Claim, s: pd.DataFrame | None, figure: str, evidence) -> Claim:
    """Sanity: at the sweep's smallest tau < 1 the largest trial gap exceeds g(1); `evidence(rows,
    tau, g1)` says so in words."""
    g1 = float(asymptotic_gap(1.0))
    rows = select_regime(claim, s, lambda s: s["tau"] < 1)
    if rows is None:
        return claim
    rows = rows[rows["tau"] == rows["tau"].min()]
    claim.based_on(rows, figure=figure)
    tau = float(rows["tau"].iloc[0])
    claim.sanity_bound(
        float(rows["gap_max"].max()),
        g1,
        "above",
        evidence(rows, tau, g1),
        low=float(rows["gap_mean"].min()),
    )
    return claim
