"""Claims of statement 3 (temperature bounds the entropy; hence contrastive learning shrinks tau,
docs/science.md §6.6, §10) judged on `contrastive_training` summaries.

Every regime, bound and tolerance below is fixed before the data, with its reason in
docs/science.md §10.4. Claims judged per setting (a task: every parameter but the temperature)
combine the settings' verdicts as the engine's per-point rule does: holds if every setting
holds, fails if any fails, else inconclusive; the evidence counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import (
    Claim,
    combine_verdicts,
    equivalence_verdict,
    one_sided_verdict,
    select_regime,
)
from attnsim.kinds.contrastive_training.besttau import CLAIM_METRIC, best_tau, fixed, same_setting
from attnsim.theory.entropy import exact_gap


@dataclass(frozen=True)
class Thresholds:
    tau: float = 1.0  # the essay's temperature
    # The entropy floors are bounds, so no statistical tolerance: only float64 rounding
    # (the summary's entropy_floor_tolerance / entropy_excess_tolerance, 1e-12 (1 + log n + 2/tau)).
    # tau = 1 "worse": acc(1) - max_{tau<1} acc(tau) below 0 (one-sided, 95%).
    difference_bound: float = 0.0
    # The floor "binds" when the trained tau = 1 encoder uses at least this share of the entropy
    # range (log n - H) / g_n(1) that the floor allows (§10.4: an optimiser stopped by the floor
    # sits at it; one stopped by anything else leaves room).
    floor_share: float = 0.9
    # A learnt tau "settles at the best fixed tau" when its 95% interval (log scale) lies inside
    # the range of fixed tau tied with the best, widened by half a grid step, a factor sqrt(2).
    settle_widening: float = math.sqrt(2.0)


THRESHOLDS = Thresholds()
REASON = "docs/science.md §10.4"


def _learned(s: pd.DataFrame) -> pd.Series:
    return s["tau_mode"] != "fixed"


def _counts(verdicts: list[str]) -> str:
    return ", ".join(
        f"{verdicts.count(v)} {v}" for v in ("holds", "fails", "inconclusive") if verdicts.count(v)
    )


def _setting_text(row) -> str:
    keys = ("n", "classes", "view_noise", "instance_noise")
    return ", ".join(f"{k} {row[k]:g}" for k in keys if k in row)


# --------------------------------------------------------------------------- sanity


def _closest_to_floor(
    claim: Claim, rows: pd.DataFrame, excess: str, tolerance: str, shown: str
) -> tuple[pd.Series, bool]:
    """A floor checked on every run: the point whose `excess` over its floor is smallest, and
    whether every point's is at least -`tolerance` (float64 rounding). The claim shows `shown`:
    measured at that point, the range over points."""
    worst = rows.loc[rows[excess].idxmin()]
    claim.side = "above"
    claim.measured = float(worst[shown])
    claim.ci_low, claim.ci_high = float(rows[shown].min()), float(rows[shown].max())
    return worst, bool((rows[excess] >= -rows[tolerance]).all())


def training_entropy_floor(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "tau_one_training_entropy_floor",
        "At tau = 1 the batch softmax entropy never falls below log n - g(1) during contrastive "
        "training, whatever the encoder learns.",
        statement="temperature",
        number="extreme over trials",
        role="sanity",
        regime="contrastive_training, fixed tau = 1, every training step of every run (exact "
        "finite-n floor log n - g_n(1))",
        reason="docs/science.md §6.5 (cosine logits lie in [-1/tau, 1/tau]: true for any encoder)",
        compared_to="the floor log n - g_n(1); measured: the lowest batch entropy any run reached "
        "in training, range over points",
        threshold="holds if no run goes below the floor by more than float64 rounding (1e-12 (1 + "
        "log n + 2/tau) nats): a bound, so no statistical tolerance",
    )
    rows = select_regime(
        claim,
        s,
        lambda r: np.isclose(r["tau"], THRESHOLDS.tau) & ~_learned(r) & r["entropy_lowest"].notna(),
        figure="temperature_sweep",
    )
    if rows is None:
        return claim
    worst, ok = _closest_to_floor(
        claim, rows, "entropy_lowest_excess", "entropy_floor_tolerance", "entropy_lowest"
    )
    claim.bound = float(worst["entropy_floor"])
    return claim.sanity_check(
        ok,
        f"{int(rows['entropy_min_finite'].sum()):,} non-diverged runs; lowest training entropy "
        f"{worst['entropy_lowest']:.4f} nats vs floor "
        f"{worst['entropy_floor']:.4f} (log n = {worst['log_n']:.4f}, g_n(1) = "
        f"{worst['entropy_gap']:.4f}); "
        f"mean lowest per run {worst['entropy_min_mean']:.4f}; the ideal encoder's entropy "
        f"{worst['ideal_entropy']:.4f}",
    )


def learned_entropy_floor(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "learned_tau_entropy_floor",
        "Along a learnt temperature's trajectory the batch entropy never falls below log n - "
        "g_n(tau_t) at the current tau_t.",
        statement="temperature",
        number="extreme over trials",
        role="sanity",
        regime="contrastive_training, learnt tau (tau_mode learned or learned_clamped), every "
        "training step of every run",
        reason="docs/science.md §10.2 (the floor of §6.5 at each step's temperature: true for any "
        "encoder and any tau)",
        compared_to="0: no excess below the floor; measured: the smallest entropy - floor(tau_t) "
        "of any run's training batch, range over points",
        threshold="holds if no run's excess is below -1e-12 (1 + log n + 2/tau_min) nats (float64 "
        "rounding): a bound",
    )
    rows = select_regime(
        claim,
        s,
        lambda r: _learned(r) & r["entropy_excess_lowest"].notna(),
        figure="learned_temperature",
    )
    if rows is None:
        return claim
    worst, ok = _closest_to_floor(
        claim, rows, "entropy_excess_lowest", "entropy_excess_tolerance", "entropy_excess_lowest"
    )
    claim.bound = 0.0
    return claim.sanity_check(
        ok,
        f"{int(rows['n_trials'].sum()):,} runs at {len(rows)} points; closest approach "
        f"{worst['entropy_excess_lowest']:.4f} nats above the floor "
        f"(tau_0 = {worst['tau']:g}, tau ends at {math.exp(worst['log_tau_final_mean']):.3g})",
    )


# ------------------------------------------------------------------ tau = 1 against smaller tau


def _tau_one_worse(
    s: pd.DataFrame | None, positives: str, claim_id: str, text: str, regime: str, measured: str
) -> Claim:
    """tau = 1 against the best tau < 1 per setting, one-sided below 0 on the difference of the
    positives' claim accuracy (`measured`: what it is, in the claim's words)."""
    claim = Claim(
        claim_id,
        text,
        statement="temperature",
        number="range over points",
        regime=regime,
        reason=REASON,
        compared_to=f"0; measured: {measured}, the setting farthest from the claim",
        threshold="per setting, holds if the difference's 95% interval lies below 0, fails if "
        "above; the claim holds if every setting holds, fails if any fails",
    )
    metric = CLAIM_METRIC[positives]

    def in_regime(r):
        mask = (r["positives"] == positives) & ~_learned(r)
        return mask & (r["instance_noise"] > 0) if positives == "instance" else mask

    rows = select_regime(claim, s, in_regime)
    if rows is None:
        return claim
    table = best_tau(rows, metric)
    table = table[table["diff"].notna()] if "diff" in table else table.iloc[:0]
    if table.empty:
        claim.verdict = "outside regime"
        return claim
    used = pd.concat([same_setting(rows, r) for _, r in table.iterrows()])
    claim.based_on(used, figure="temperature_sweep")
    verdicts = [
        one_sided_verdict(lo, hi, THRESHOLDS.difference_bound, "below")
        for lo, hi in zip(table["diff_low"], table["diff_high"])
    ]
    table = table.assign(verdict=verdicts)
    decisive = table.loc[table["diff"].idxmax()]  # the setting farthest from the essay's side
    claim.bound, claim.side = THRESHOLDS.difference_bound, "below"
    claim.measured = float(decisive["diff"])
    claim.ci_low, claim.ci_high = float(decisive["diff_low"]), float(decisive["diff_high"])
    claim.detectable = float(((table["diff_high"] - table["diff_low"]) / 2).max())
    claim.verdict = combine_verdicts(verdicts)
    best = table.loc[table["diff"].idxmin()]
    claim.evidence = (
        f"{len(table)} setting(s): {_counts(verdicts)}. Farthest from the claim "
        f"({_setting_text(decisive)}): {metric} {decisive['one_mean']:.3f} at tau = 1 "
        f"vs {decisive['smaller_mean']:.3f} at tau = {decisive['smaller_tau']:g}, difference "
        f"{decisive['diff']:+.3f} "
        f"[{decisive['diff_low']:+.3f}, {decisive['diff_high']:+.3f}]; best tau there "
        f"{decisive['best_tau']:g} "
        f"(tied {decisive['tau_low']:g}-{decisive['tau_high']:g}). Most in favour "
        f"({_setting_text(best)}): difference {best['diff']:+.3f} "
        f"[{best['diff_low']:+.3f}, {best['diff_high']:+.3f}]"
    )
    claim.setting_verdicts = table  # type: ignore[attr-defined]  # for the tests: per setting
    return claim


def worse_probe_at_tau_one(s: pd.DataFrame | None) -> Claim:
    return _tau_one_worse(
        s,
        "class",
        "tau_one_worse_probe",
        "Because tau = 1 keeps the entropy near log n (too little information), the representation "
        "learnt at tau = 1 is worse than at a smaller temperature: lower held-out probe accuracy "
        "(class positives).",
        "contrastive_training, class positives, fixed tau; per setting (every parameter but tau): "
        "tau = 1 against the best tau < 1",
        "probe accuracy at tau = 1 minus the best at tau < 1 (nearest class mean, 95% interval)",
    )


def instance_worse_knn_at_tau_one(s: pd.DataFrame | None) -> Claim:
    return _tau_one_worse(
        s,
        "instance",
        "instance_tau_one_worse_knn",
        "With instance positives (SimCLR-style: two views of one instance, same-class instances "
        "are negatives) too, tau = 1 learns a worse representation than a smaller temperature: "
        "lower held-out 5-NN accuracy.",
        "contrastive_training, instance positives with instance_noise > 0, fixed tau; per "
        "setting: tau = 1 against the best tau < 1",
        "5-NN accuracy at tau = 1 minus the best at tau < 1 (95% interval)",
    )


def floor_limits_accuracy(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "tau_one_floor_binds",
        "The entropy floor is what limits tau = 1: trained at tau = 1, the encoder presses the "
        "batch entropy against the floor "
        "log n - g_n(1) (it would go lower if it could).",
        statement="temperature",
        number="range over points",
        regime="contrastive_training, class positives, fixed tau = 1, every setting",
        reason=REASON,
        compared_to=f"{THRESHOLDS.floor_share:g}; measured: the share (log n - H) / g_n(1) of the "
        f"allowed range that the trained encoder's "
        "held-out batch entropy uses (95% interval), the setting farthest from the claim",
        threshold=f"per setting, holds if the share's 95% interval lies above "
        f"{THRESHOLDS.floor_share:g}, fails if below; combined as per setting",
    )
    rows = select_regime(
        claim,
        s,
        lambda r: (r["positives"] == "class") & ~_learned(r) & np.isclose(r["tau"], THRESHOLDS.tau),
        figure="temperature_sweep",
    )
    if rows is None:
        return claim
    gap = rows["entropy_gap"]
    share = (rows["log_n"] - rows["final_entropy_mean"]) / gap
    low = (rows["log_n"] - rows["final_entropy_ci_high"]) / gap
    high = (rows["log_n"] - rows["final_entropy_ci_low"]) / gap
    verdicts = [
        one_sided_verdict(lo, hi, THRESHOLDS.floor_share, "above") for lo, hi in zip(low, high)
    ]
    worst = share.idxmin()
    claim.bound, claim.side = THRESHOLDS.floor_share, "above"
    claim.measured, claim.ci_low, claim.ci_high = (
        float(share[worst]),
        float(low[worst]),
        float(high[worst]),
    )
    claim.detectable = float(((high - low) / 2).max())
    claim.verdict = combine_verdicts(verdicts)
    w = rows.loc[worst]
    text = (
        f"{len(rows)} setting(s): {_counts(verdicts)}. Farthest ({_setting_text(w)}): H = "
        f"{w['final_entropy_mean']:.3f} nats, "
        f"log n = {w['log_n']:.3f}, floor {w['entropy_floor']:.3f}: {share[worst]:.2f} "
        f"[{low[worst]:.2f}, {high[worst]:.2f}] of the range used"
    )
    # what the best tau's encoder needs: its own entropy range, against what tau = 1 allows
    if s is not None:
        same = same_setting(fixed(s), w)
        if len(same) > 1:
            best = same.loc[same[f"{CLAIM_METRIC['class']}_mean"].idxmax()]
            used = best["log_n"] - best["final_entropy_mean"]
            text += (
                f"; the best tau there ({best['tau']:g}, probe {best['probe_accuracy_mean']:.3f} "
                f"vs {w['probe_accuracy_mean']:.3f}) ends at "
                f"log n - H = {used:.3f} nats, compared with g_n(1) = "
                f"{float(exact_gap(int(w['n']), 1.0)):.3f}"
            )
    claim.evidence = text
    return claim


# --------------------------------------------------------------------------- learned temperature


def _learned_from_one(s: pd.DataFrame | None, claim: Claim) -> pd.DataFrame | None:
    return select_regime(
        claim,
        s,
        lambda r: _learned(r) & np.isclose(r["tau"], THRESHOLDS.tau),
        figure="learned_temperature",
    )


def _geometric(r) -> tuple[float, float, float]:
    """The learnt tau's geometric mean over runs with its 95% interval: exp of log tau_final's."""
    mean, low, high = (math.exp(r[f"log_tau_final_{k}"]) for k in ("mean", "ci_low", "ci_high"))
    return mean, low, high


def _geometric_detectable(rows) -> float:
    """The widest half-width of the points' tau_final intervals, on tau's own scale."""
    return float(
        max(
            (math.exp(r["log_tau_final_ci_high"]) - math.exp(r["log_tau_final_ci_low"])) / 2
            for r in rows
        )
    )


def learned_tau_falls(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "learned_tau_falls",
        "Trained by gradient descent from tau = 1, a learnt temperature falls: the loss itself "
        "asks for a smaller tau.",
        statement="temperature",
        number="range over points",
        regime="contrastive_training, learnt tau (learned or learned_clamped) starting at tau = 1, "
        "every setting",
        reason=REASON,
        compared_to="the start, tau = 1; measured: tau after training, geometric mean over runs "
        "(95% interval), the point farthest from the claim",
        threshold="per point, holds if the interval of tau_final lies below 1, fails if above; "
        "combined as per setting",
    )
    rows = _learned_from_one(s, claim)
    if rows is None:
        return claim
    verdicts = [
        one_sided_verdict(lo, hi, 0.0, "below")
        for lo, hi in zip(rows["log_tau_final_ci_low"], rows["log_tau_final_ci_high"])
    ]
    w = rows.loc[rows["log_tau_final_mean"].idxmax()]
    claim.bound, claim.side = 1.0, "below"
    claim.measured, claim.ci_low, claim.ci_high = _geometric(w)
    claim.detectable = _geometric_detectable(r for _, r in rows.iterrows())
    claim.verdict = combine_verdicts(verdicts)
    ends = ", ".join(f"{math.exp(v):.3g}" for v in rows["log_tau_final_mean"])
    claim.evidence = (
        f"{len(rows)} point(s): {_counts(verdicts)}; tau after training (geometric mean over "
        f"runs): {ends}; "
        f"least fall ({_setting_text(w)}, {w['positives']} positives): tau {claim.measured:.3g} "
        f"[{claim.ci_low:.3g}, {claim.ci_high:.3g}] after {int(w['steps'])} steps"
    )
    return claim


def learned_tau_settles_at_best(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "learned_tau_settles_at_best",
        "A temperature learnt from tau = 1 settles where the best fixed temperature of the same "
        "task is.",
        statement="temperature",
        number="range over points",
        regime="contrastive_training, learnt tau from tau = 1, in settings that also ran at least "
        "two fixed temperatures",
        reason=REASON,
        compared_to="the best fixed tau of the same setting (by its claim's accuracy: probe for "
        "class, 5-NN for instance positives); "
        "measured: tau after training, geometric mean over runs (95% interval), the point farthest "
        "from it",
        threshold="per point, holds if the interval of tau_final lies inside [tau_low / sqrt 2, "
        "tau_high * sqrt 2] "
        "(the fixed tau tied with the best, widened by half a grid step), fails if outside; "
        "combined as per setting",
    )
    rows = _learned_from_one(s, claim)
    if rows is None:
        return claim
    judged = []
    for _, r in rows.iterrows():
        metric = CLAIM_METRIC[r["positives"]]
        table = best_tau(same_setting(fixed(s), r), metric)
        if table.empty:
            continue
        b = table.iloc[0]
        lo, hi = (
            math.log(b["tau_low"] / THRESHOLDS.settle_widening),
            math.log(b["tau_high"] * THRESHOLDS.settle_widening),
        )
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        verdict = equivalence_verdict(
            r["log_tau_final_ci_low"], r["log_tau_final_ci_high"], centre, half
        )
        judged.append((r, b, verdict, abs(r["log_tau_final_mean"] - math.log(b["best_tau"]))))
    if not judged:
        claim.verdict = "outside regime"
        return claim
    verdicts = [v for _, _, v, _ in judged]
    r, b, _, _ = max(judged, key=lambda j: j[3])
    claim.predicted = float(b["best_tau"])
    claim.measured, claim.ci_low, claim.ci_high = _geometric(r)
    claim.rel_deviation = (claim.measured - claim.predicted) / claim.predicted
    claim.detectable = _geometric_detectable(j[0] for j in judged)
    claim.verdict = combine_verdicts(verdicts)
    parts = [
        f"{j[0]['positives']} ({_setting_text(j[0])}): learnt "
        f"{math.exp(j[0]['log_tau_final_mean']):.3g} vs best fixed {j[1]['best_tau']:g} "
        f"(tied {j[1]['tau_low']:g}-{j[1]['tau_high']:g}) → {j[2]}"
        for j in judged
    ]
    claim.evidence = f"{len(judged)} point(s): {_counts(verdicts)}; " + "; ".join(parts)
    return claim


CLAIMS = (
    training_entropy_floor,
    learned_entropy_floor,
    worse_probe_at_tau_one,
    instance_worse_knn_at_tau_one,
    floor_limits_accuracy,
    learned_tau_falls,
    learned_tau_settles_at_best,
)
