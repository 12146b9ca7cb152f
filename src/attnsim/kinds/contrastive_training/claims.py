"""Claims of statement 3 (temperature bounds the entropy; hence contrastive learning shrinks tau,
docs/science.md §6.6) judged on `contrastive_training` summaries."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim
from attnsim.kinds.contrastive_training import SETTING


@dataclass(frozen=True)
class Thresholds:
    tau: float = 1.0  # the essay's temperature
    # The entropy floor is a bound, so no statistical tolerance: only float64 rounding
    # (the summary's entropy_floor_tolerance, 1e-12 (1 + log n + 2/tau) nats).


THRESHOLDS = Thresholds()


def _at_tau(s: pd.DataFrame) -> pd.DataFrame:
    return s[np.isclose(s["tau"], THRESHOLDS.tau)]


def training_entropy_floor(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "tau_one_training_entropy_floor",
        "At tau = 1 the batch softmax entropy never falls below log n - g(1) during contrastive training, whatever the encoder learns.",
        "contrastive_training, tau = 1, every training step of every run (exact finite-n floor log n - g_n(1))",
        statement="temperature",
        number="extreme over trials",
        compared_to="the floor log n - g_n(1); measured: the lowest batch entropy any run reached in training, range over points",
        threshold="holds if no run goes below the floor by more than float64 rounding (1e-12 (1 + log n + 2/tau) nats): a bound, so no statistical tolerance",
    )
    if s is None:
        return claim
    rows = _at_tau(s)
    rows = rows[rows["entropy_lowest"].notna()]
    if rows.empty:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(rows, figure="temperature_sweep")
    worst = rows.loc[rows["entropy_lowest_excess"].idxmin()]
    claim.predicted = float(worst["entropy_floor"])
    claim.measured = float(worst["entropy_lowest"])
    claim.ci_low, claim.ci_high = float(rows["entropy_lowest"].min()), float(rows["entropy_lowest"].max())
    claim.rel_deviation = (claim.measured - claim.predicted) / claim.predicted
    claim.verdict = "holds" if bool((rows["entropy_lowest_excess"] >= -rows["entropy_floor_tolerance"]).all()) else "fails"
    claim.evidence = (
        f"{int(rows['entropy_min_finite'].sum()):,} non-diverged runs; lowest training entropy {worst['entropy_lowest']:.4f} nats vs floor "
        f"{worst['entropy_floor']:.4f} (log n = {worst['log_n']:.4f}, g_n(1) = {worst['entropy_gap']:.4f}); "
        f"mean lowest per run {worst['entropy_min_mean']:.4f}; the ideal encoder's entropy {worst['ideal_entropy']:.4f}"
    )
    return claim


def worse_probe_at_tau_one(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "tau_one_worse_probe",
        "Because tau = 1 keeps the entropy near log n (too little information), the representation learnt at tau = 1 is worse "
        "than at a smaller temperature: lower held-out probe accuracy.",
        "contrastive_training, per setting (everything but tau): tau = 1 against the best tau of the sweep",
        statement="temperature",
        number="mean (95% CI)",
        compared_to="the probe accuracy at the best tau of the sweep; measured: probe accuracy at tau = 1 (mean over runs)",
        threshold="holds if, in every setting, the 95% interval at tau = 1 lies entirely below the best tau's (non-overlapping intervals)",
    )
    if s is None:
        return claim
    settings = [(key, g) for key, g in s.groupby(SETTING) if len(_at_tau(g)) and len(g) > 1]
    if not settings:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(pd.concat([g for _, g in settings]), figure="temperature_sweep")
    results = []
    for _, g in settings:
        one = _at_tau(g).iloc[0]
        best = g.loc[g["probe_accuracy_mean"].idxmax()]
        results.append((best["probe_accuracy_ci_low"] - one["probe_accuracy_ci_high"], one, best))
    margin, one, best = min(results, key=lambda r: r[0])  # the setting closest to failing
    claim.predicted = float(best["probe_accuracy_mean"])
    claim.measured = float(one["probe_accuracy_mean"])
    claim.ci_low, claim.ci_high = float(one["probe_accuracy_ci_low"]), float(one["probe_accuracy_ci_high"])
    claim.rel_deviation = (claim.measured - claim.predicted) / claim.predicted
    claim.verdict = "holds" if all(r[0] > 0 for r in results) else "fails"
    claim.evidence = (
        f"{len(settings)} setting(s); closest: probe {one['probe_accuracy_mean']:.3f} [{one['probe_accuracy_ci_low']:.3f}, {one['probe_accuracy_ci_high']:.3f}] "
        f"at tau = 1 vs {best['probe_accuracy_mean']:.3f} [{best['probe_accuracy_ci_low']:.3f}, {best['probe_accuracy_ci_high']:.3f}] at tau = {best['tau']:g} "
        f"(chance {best['probe_chance']:.3f}); alignment {one['alignment_mean']:.3f} vs {best['alignment_mean']:.3f}, "
        f"uniformity {one['uniformity_mean']:.3f} vs {best['uniformity_mean']:.3f}"
    )
    return claim


CLAIMS = (training_entropy_floor, worse_probe_at_tau_one)
