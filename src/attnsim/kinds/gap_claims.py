"""Sanity checks shared by the kinds that measure the entropy gap log n - H of cosine attention
(docs/science.md §4): their summaries have `gap_max` (largest trial gap), `gap_mean`, `gap_exact`
and `gap_within_bound` per point."""

from __future__ import annotations

import pandas as pd

from attnsim.claims.engine import Claim, select_regime
from attnsim.theory.entropy import asymptotic_gap


def gap_at_most(claim: Claim, rows: pd.DataFrame, bound: float, evidence: str) -> Claim:
    """Sanity: holds when no trial's gap (the points' `gap_max`) exceeds `bound`; shown as the range
    from the smallest mean gap to the largest trial gap."""
    return claim.sanity_bound(
        float(rows["gap_max"].max()), bound, "below", evidence, low=float(rows["gap_mean"].min())
    )


def within_exact_bound(claim: Claim, s: pd.DataFrame) -> Claim:
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


def widens_beyond(claim: Claim, s: pd.DataFrame | None, figure: str, evidence) -> Claim:
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
