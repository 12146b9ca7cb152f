"""Claims of statement 3 (temperature bounds the entropy, docs/science.md §4) judged on `temperature_entropy` summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim
from attnsim.theory.entropy import asymptotic_gap


def judge_gap_at_most(claim: Claim, rows: pd.DataFrame, bound: float) -> Claim:
    """holds when no trial's gap (the points' `gap_max`) exceeds `bound`; interval = smallest mean gap to largest trial gap."""
    claim.predicted, claim.measured = bound, float(rows["gap_max"].max())
    claim.ci_low, claim.ci_high = float(rows["gap_mean"].min()), claim.measured
    claim.rel_deviation = (claim.measured - bound) / bound
    claim.verdict = "holds" if claim.measured <= bound else "fails"
    return claim


def judge_exact_bound(claim: Claim, s: pd.DataFrame) -> Claim:
    """holds when every point's largest trial gap is within its exact finite-n worst case (`gap_within_bound`)."""
    excess = s["gap_max"] - s["gap_exact"]
    claim.predicted, claim.measured = 0.0, float(excess.max())
    claim.ci_low, claim.ci_high = float(excess.min()), float(excess.max())
    claim.verdict = "holds" if bool(s["gap_within_bound"].all()) else "fails"
    claim.evidence = f"largest gap_max - gap_exact over {len(s)} points: {excess.max():.3g} (<= 0 means within the bound)"
    return claim


def tau_one_bound(s: pd.DataFrame | None) -> Claim:
    g1 = float(asymptotic_gap(1.0))
    claim = Claim(
        "tau_one_gap",
        f"At tau = 1 cosine logits keep the entropy within {g1:.4f} nats of log n.",
        "temperature_entropy, tau = 1, every trial",
        statement="temperature",
        number="extreme over trials",
        compared_to="g(1), the largest gap log n - H any cosines allow at tau = 1; measured: the largest gap of any trial, smallest = the smallest mean gap",
        threshold=f"holds if no trial's gap exceeds g(1) = {g1:.4f} nats: a bound, so no tolerance",
    )
    if s is None:
        return claim
    rows = s[np.isclose(s["tau"], 1.0)]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, figure="temperature_gap")
    judge_gap_at_most(claim, rows, g1)
    claim.evidence = f"largest gap over {int(rows['n_trials'].sum()):,} trials ({len(rows)} points); interval = smallest mean gap to largest trial gap"
    return claim


def exact_bound(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "exact_gap_bound",
        "No trial's gap log n - H exceeds the exact finite-n worst case.",
        "temperature_entropy, every point and trial",
        statement="temperature",
        number="extreme over trials",
        compared_to="the exact finite-n worst case, an excess of 0; measured: largest trial gap minus the exact worst case, largest over points, <= 0 within",
        threshold="holds if at every point the largest trial gap is within the exact bound, up to float64 rounding of 1e-12 (1 + log n + 2/tau) nats",
    )
    if s is None:
        return claim
    claim.based_on(s, figure="temperature_gap")
    return judge_exact_bound(claim, s)


def smaller_tau_widens(s: pd.DataFrame | None) -> Claim:
    g1 = float(asymptotic_gap(1.0))
    claim = Claim(
        "smaller_tau_widens",
        "Smaller tau widens the range of entropies beyond what tau = 1 allows.",
        "temperature_entropy, the smallest tau < 1 of the sweep",
        statement="temperature",
        number="extreme over trials",
        compared_to="g(tau), the widest gap possible at the smallest tau; measured: the largest gap of any trial there, smallest = the smallest mean gap",
        threshold=f"holds if the largest trial gap exceeds g(1) = {g1:.4f} nats, the most tau = 1 allows",
    )
    if s is None:
        return claim
    below = s[s["tau"] < 1]
    if below.empty:
        claim.verdict = "outside regime"
        return claim
    rows = below[below["tau"] == below["tau"].min()]
    tau = float(rows["tau"].iloc[0])
    claim.based_on(rows, figure="temperature_gap")
    claim.predicted, claim.measured = float(asymptotic_gap(tau)), float(rows["gap_max"].max())
    claim.ci_low, claim.ci_high = float(rows["gap_mean"].min()), float(rows["gap_max"].max())
    claim.rel_deviation = (claim.measured - claim.predicted) / claim.predicted
    claim.verdict = "holds" if claim.measured > g1 else "fails"
    claim.evidence = f"largest gap at tau = {tau:g} vs g(1) = {g1:.4f}; predicted = g({tau:g}), the widest range possible"
    return claim


CLAIMS = (tau_one_bound, exact_bound, smaller_tau_widens)
