"""Claims of statement 2 judged on `recall_training` summaries (docs/science.md §6.3 and §9.7).

The essay says one-hot starts make training "impossible". What is tested: the escape time (steps
to the loss threshold, right-censored at the run's budget; Kaplan-Meier per point) from one-hot
starts, how it grows with the initial logit scale against the law derived in §9.4, an
experiment that separates the essay's information story from the vanishing gradient (§9.5:
normalised gradient descent), and entropy collapse at large learning rates (§9.6). Every
regime, tolerance and decision rule below is fixed from theory, before the data, with its reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist

import numpy as np
import pandas as pd

from attnsim.claims.engine import Claim, combine_verdicts, one_sided_verdict, select_regime
from attnsim.kernels.survival import wilson
from attnsim.kernels.training import ALL_OPTIMISERS
from attnsim.kinds.recall_training import ESCAPE_EXPONENT
from attnsim.kinds.recall_training.plateau import (
    PREDICTORS,
    SETTING,
    fit_setting,
    out_of_sample,
    setting_text,
)

LAST = "escaped_ckpt_7"  # share escaped by the budget (checkpoint 7 is the last step)


@dataclass(frozen=True)
class Thresholds:
    # a start is one-hot below this mean initial entropy (as in init_gradient, §3.6)
    one_hot_entropy: float = 0.1
    # "impossible": no run escapes; up to this share is allowed (a rare near-tie start), §9.7
    impossible_share: float = 0.05
    # the law's regime: initial logit std >= 4, where the top gap of n = 16 logits is many
    # times the unit scale on which e^-gap varies and the gradient law of §9.3 applies
    law_logit_std: float = 4.0
    # on the fitted exponent: the leading-order law ignores logarithmic factors (§9.4), which over
    # the two decades of logit std swept move a fitted exponent by up to ~0.2
    law_tolerance: float = 0.25
    # the essay's information story predicts normalised steps stall like SGD: share <= 5% (§9.5)
    information_share: float = 0.05
    # collapse precedes divergence "as a rule" (Zhai et al. 2023): more than half the diverged runs
    collapse_first_share: float = 0.5
    # QK-norm "prevents" collapse: at most half the runs collapse where most did without it
    qk_collapse_share: float = 0.5
    # a collapse-or-divergence share is judged only on points with at least this many runs (§9.6)
    min_runs: int = 8
    # the rank correlation needs at least this many distinct initial scales per setting
    min_points: int = 4


THRESHOLDS = Thresholds()
REASON = "docs/science.md §9.7"


def _escape(rows: pd.DataFrame) -> pd.Series:
    """Every run has an escape time (the first evaluation at or below the threshold), whether it
    stops there or trains on: the time is the same (tests/test_training_recall.py)."""
    return rows["stop"].isin(("threshold", "never"))


def _one_hot(rows: pd.DataFrame) -> pd.Series:
    return (
        _escape(rows)
        & (rows["init_entropy_mean"] < THRESHOLDS.one_hot_entropy)
        & (rows["logits"] == "dot")
    )


def _shares_below(
    claim: Claim, rows: pd.DataFrame, column: str, bound: float, interval: str = ""
) -> tuple[list[str], pd.Series]:
    """Judge every point's share `column` (95% interval: the columns `interval`_ci_low and
    _ci_high, `interval` = `column` unless given) one-sided below `bound`, combined as the
    engine's per-point rule (fails if any fails, inconclusive if any is, else holds). Number
    "range over points": measured = the largest share, interval = the smallest to the largest.
    Returns the points' verdicts and the point of the largest share."""
    interval = interval or column
    verdicts = [
        one_sided_verdict(lo, hi, bound, "below")
        for lo, hi in zip(rows[f"{interval}_ci_low"], rows[f"{interval}_ci_high"])
    ]
    top = rows.loc[rows[column].idxmax()]
    claim.measured, claim.ci_low, claim.ci_high = (
        float(top[column]),
        float(rows[column].min()),
        float(rows[column].max()),
    )
    claim.bound, claim.side = bound, "below"
    claim.verdict = combine_verdicts(verdicts)
    return verdicts, top


def one_hot_start_impossible(s: pd.DataFrame | None) -> Claim:
    """The essay's literal word, judged point by point on the share escaped within the budget."""
    t = THRESHOLDS
    claim = Claim(
        "one_hot_start_impossible",
        "With one-hot initial weights (large initial logits) training is impossible: runs do not "
        "escape the plateau.",
        statement="information",
        number="range over points",
        regime="recall_training runs from one-hot starts (mean initial entropy < "
        f"{t.one_hot_entropy} nats), any optimiser, within each run's budget",
        reason=REASON,
        compared_to=f"at most {t.impossible_share:.0%} of runs escape; measured: the Kaplan-Meier "
        "share escaped by the budget, per point (95% interval)",
        threshold=f"holds if every one-hot point's interval lies below {t.impossible_share:.0%}, "
        "fails if any lies entirely above it (runs escape), else inconclusive",
    )
    rows = select_regime(claim, s, _one_hot, figure="escape_survival")
    if rows is None:
        return claim
    verdicts, top = _shares_below(claim, rows, LAST, t.impossible_share)
    escaping = [v == "fails" for v in verdicts]
    claim.evidence = (
        f"{sum(escaping)} of {len(rows)} one-hot points have runs escaping beyond "
        f"{t.impossible_share:.0%}; most: "
        f"{top[LAST]:.0%} [{top[f'{LAST}_ci_low']:.0%}, {top[f'{LAST}_ci_high']:.0%}] within "
        f"{top['steps']:g} steps "
        f"({setting_text(top)}, scale {top['scale']:g}, H0 = {top['init_entropy_mean']:.2g} nats, "
        f"median escape {top['escape_median']:.4g} steps)"
    )
    return claim


def _law_rows(rows: pd.DataFrame, optimiser: str) -> pd.Series:
    return (
        _escape(rows)
        & (rows["optimiser"] == optimiser)
        & (rows["logits"] == "dot")
        & (rows["logit_std"] >= THRESHOLDS.law_logit_std)
    )


def _fits(rows: pd.DataFrame, predictor: str = "logit_std") -> list[tuple[pd.Series, dict]]:
    out = []
    for _, group in rows.groupby(SETTING):
        law = fit_setting(group, predictor)
        if law is not None:
            out.append((group.iloc[0], law))
    return out


def _law_fits(
    claim: Claim, s: pd.DataFrame | None, optimiser: str
) -> tuple[pd.DataFrame, list[tuple[pd.Series, dict]]] | None:
    """The law's regime rows of `optimiser` and their fits per setting; None once the verdict is
    set: not measured, outside regime, or inconclusive when no setting can be fitted."""
    rows = select_regime(claim, s, lambda r: _law_rows(r, optimiser), figure="escape_law")
    if rows is None:
        return None
    fits = _fits(rows)
    if not fits:  # measured, but the medians are beyond the budget: the growth cannot be fitted
        claim.verdict = "inconclusive"
        claim.evidence = (
            f"no setting has 3 points with a finite median escape time ({len(rows)} points in "
            "regime: the medians are censored)"
        )
        return None
    return rows, fits


def escape_time_grows(s: pd.DataFrame | None, optimiser: str) -> Claim:
    """The reworded essay claim: from one-hot starts the escape time grows with the initial
    scale."""
    t = THRESHOLDS
    claim = Claim(
        f"escape_time_grows_with_scale_{optimiser}",
        f"From one-hot starts, training by {optimiser} is not impossible but slow: the median "
        "escape time grows with the initial logit scale.",
        statement="information",
        number="fitted slope (95% CI)",
        regime=f"recall_training runs, {optimiser}, no QK-norm, initial logit std >= "
        f"{t.law_logit_std:g}; per run setting (lr, W_v) with at least 3 points whose "
        "median escape time is finite",
        reason="docs/science.md §9.4",
        compared_to="a positive exponent; measured: the slope of log median escape time against "
        "log initial logit std (weighted fit to the Kaplan-Meier medians)",
        threshold="holds if every setting's 95% interval lies above 0, fails if any lies entirely "
        "below, else inconclusive",
    )
    judged = _law_fits(claim, s, optimiser)
    if judged is None:
        return claim
    _, fits = judged
    low = min(fits, key=lambda f: f[1]["slope_low"])
    claim.one_sided(
        {"mean": low[1]["slope"], "ci_low": low[1]["slope_low"], "ci_high": low[1]["slope_high"]},
        0.0,
        "above",
        "",
    )
    claim.verdict = combine_verdicts(
        one_sided_verdict(f["slope_low"], f["slope_high"], 0.0, "above") for _, f in fits
    )
    claim.evidence = "; ".join(
        f"{setting_text(row)}: slope {f['slope']:.2f} "
        f"[{f['slope_low']:.2f}, {f['slope_high']:.2f}] over {f['points']} points"
        + (f" ({f['censored']} censored medians left out)" if f["censored"] else "")
        for row, f in fits
    )
    return claim


def plateau_law(s: pd.DataFrame | None, optimiser: str) -> Claim:
    """The exponent of the law against the prediction of §9.4, with the out-of-sample comparison of
    the three predictors (logit std, entropy, gradient norm) in the evidence."""
    t = THRESHOLDS
    predicted = ESCAPE_EXPONENT[optimiser]
    claim = Claim(
        f"plateau_law_{optimiser}",
        f"From one-hot starts the median escape time of {optimiser} grows like (initial logit "
        f"std)^{predicted:g} (docs/science.md §9.4).",
        statement="information",
        number="fitted slope (95% CI)",
        regime=f"as escape_time_grows_with_scale_{optimiser}",
        reason="docs/science.md §9.4",
        compared_to=f"predicted exponent {predicted:g} (within ±{t.law_tolerance:g}); measured: "
        "the fitted slope per setting",
        threshold=f"per setting, holds if the slope's 95% interval lies inside {predicted:g} ± "
        f"{t.law_tolerance:g}, fails if entirely outside; all settings must hold",
        tolerance=t.law_tolerance,
    )
    judged = _law_fits(claim, s, optimiser)
    if judged is None:
        return claim
    rows, fits = judged
    table = pd.DataFrame(
        [
            {
                "slope": f["slope"],
                "low": f["slope_low"],
                "high": f["slope_high"],
                "setting": setting_text(row),
            }
            for row, f in fits
        ]
    )
    claim.per_point(table, "slope", "low", "high", predicted, describe=lambda r: r["setting"])
    claim.number = "fitted slope (95% CI)"
    worst = table.loc[(table["slope"] - predicted).abs().idxmax()]
    claim.measured, claim.ci_low, claim.ci_high = (
        float(worst["slope"]),
        float(worst["low"]),
        float(worst["high"]),
    )
    cv = out_of_sample(rows)
    if cv["points"]:
        ranked = sorted((k for k in PREDICTORS if math.isfinite(cv[k])), key=lambda k: cv[k])
        scores = ", ".join(f"{PREDICTORS[k][1]} {cv[k]:.3f}" for k in ranked)
        claim.evidence += (
            f"; out of sample (leave one scale out, RMSE of log10 median over {cv['points']} "
            f"points): {scores}"
        )
    claim.evidence += "; " + "; ".join(
        f"{r}: {sl:.2f} [{lo:.2f}, {hi:.2f}]"
        for r, sl, lo, hi in zip(table["setting"], table["slope"], table["low"], table["high"])
    )
    return claim


def information_story(s: pd.DataFrame | None) -> Claim:
    """The separating experiment: normalised gradient descent from one-hot starts (§9.5)."""
    t = THRESHOLDS
    claim = Claim(
        "normalised_steps_stall",
        "The essay's explanation: a one-hot start stalls because the gradient carries no "
        "information; "
        "then full-size steps in the gradient's direction (normalised gradient descent) stall too.",
        statement="information",
        number="range over points",
        regime="recall_training runs by normgd from one-hot starts (mean initial entropy < "
        f"{t.one_hot_entropy} nats), no QK-norm",
        reason="docs/science.md §9.5",
        compared_to=f"at most {t.information_share:.0%} of runs escape (the information story); "
        "measured: the share escaped by the budget, per point",
        threshold=f"holds if every point's 95% interval lies below {t.information_share:.0%}, "
        "fails if any lies entirely above (the direction carries the information; the "
        "stall was the gradient's size)",
    )
    rows = select_regime(
        claim, s, lambda r: _one_hot(r) & (r["optimiser"] == "normgd"), figure="separating"
    )
    if rows is None:
        return claim
    assert s is not None  # rows were selected from it
    verdicts, top = _shares_below(claim, rows, LAST, t.information_share)
    others = s[_one_hot(s) & (s["optimiser"] == "sgd") & s["scale"].isin(rows["scale"])]
    beside = (
        f"; SGD at the same scales: at most {others[LAST].max():.0%} escaped" if len(others) else ""
    )
    claim.evidence = (
        f"{sum(v == 'fails' for v in verdicts)} of {len(rows)} one-hot normgd points escape beyond "
        f"{t.information_share:.0%}; most: "
        f"{top[LAST]:.0%} [{top[f'{LAST}_ci_low']:.0%}, {top[f'{LAST}_ci_high']:.0%}] "
        f"({setting_text(top)}, scale {top['scale']:g}, "
        f"H0 = {top['init_entropy_mean']:.2g} nats, median escape {top['escape_median']:.4g} of "
        f"{top['steps']:g} steps){beside}"
    )
    return claim


def _collapse_rows(rows: pd.DataFrame) -> pd.Series:
    return (
        (rows["stop"] == "never")
        & (rows["n_trials"] >= THRESHOLDS.min_runs)
        & (rows["scale"] <= 1.0)
    )


def collapse_precedes_divergence(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "entropy_collapse_precedes_divergence",
        "Too large a learning rate first collapses the attention entropy, then training diverges "
        "(Zhai et al. 2023).",
        statement="information",
        number="mean (95% CI)",
        regime="recall_training runs of a fixed budget from a healthy start (scale <= 1) without "
        "QK-norm, at least 8 per point; the diverged ones, all learning rates pooled",
        reason="docs/science.md §9.6",
        compared_to=f"more than {t.collapse_first_share:.0%}; measured: the share of diverged runs "
        "whose monitor entropy fell below 0.1 nats before they diverged (Wilson 95%)",
        threshold=f"holds if the interval lies above {t.collapse_first_share:.0%}, fails if "
        "entirely below, else inconclusive",
    )
    rows = select_regime(
        claim, s, lambda r: _collapse_rows(r) & (r["logits"] == "dot"), figure="training_entropy"
    )
    if rows is None:
        return claim
    if rows["diverged_count"].sum() == 0:
        claim.verdict = "inconclusive"
        rates = ", ".join(f"{v:g}" for v in sorted(rows["lr"].unique()))
        claim.evidence = (
            f"no run diverged at the {len(rows)} points in regime (learning rates {rates}): "
            "nothing to order"
        )
        return claim
    rows = rows[rows["diverged_count"] > 0]
    diverged = int(rows["diverged_count"].sum())
    first = int(np.round((rows["collapse_first_share"] * rows["diverged_count"]).sum()))
    low, high = wilson(first, diverged)
    claim.one_sided(
        {"mean": first / diverged, "ci_low": low, "ci_high": high},
        t.collapse_first_share,
        "above",
        "",
    )
    per = "; ".join(
        f"{setting_text(r)}: {int(r['diverged_count'])} diverged, {r['collapse_first_share']:.0%} "
        "collapsed first, "
        f"{r['collapsed_early_share']:.0%} of all runs collapsed before learning"
        for _, r in rows.iterrows()
    )
    claim.evidence = f"{first} of {diverged} diverged runs had collapsed first; {per}"
    return claim


def qk_norm_prevents_collapse(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "qk_norm_prevents_collapse",
        "QK-norm prevents the entropy collapse that a large learning rate causes.",
        statement="information",
        number="range over points",
        regime="recall_training runs of a fixed budget from a healthy start (scale <= 1) with "
        "QK-norm, at least 8 per point; judged at the "
        "optimiser and learning rates where, without QK-norm, the collapsed share's interval lies "
        "above 50%",
        reason="docs/science.md §9.6",
        compared_to=f"at most {t.qk_collapse_share:.0%}; measured: the share of runs whose entropy "
        "fell below 0.1 nats at some evaluation, per point (Wilson 95%)",
        threshold=f"holds if every such point's interval lies below {t.qk_collapse_share:.0%}, "
        "fails if any lies entirely above, else inconclusive "
        "(also when no learning rate collapses without QK-norm: nothing to prevent)",
    )
    rows = select_regime(
        claim,
        s,
        lambda r: _collapse_rows(r) & (r["logits"] == "qk_norm"),
        figure="training_entropy",
    )
    if rows is None:
        return claim
    assert s is not None  # rows were selected from it
    key = ["optimiser", "lr", "values", "n", "d", "batch", "steps", "scale"]
    base = s[_collapse_rows(s)]
    off = base[(base["logits"] == "dot") & (base["collapsed_ci_low"] > t.qk_collapse_share)]
    judged = rows.merge(off[key], on=key)
    if judged.empty:
        claim.verdict = "inconclusive"
        claim.evidence = (
            f"without QK-norm no learning rate of these {len(rows)} points collapsed in most runs: "
            "nothing to prevent"
        )
        return claim
    _shares_below(claim, judged, "collapsed_share", t.qk_collapse_share, "collapsed")
    claim.evidence = (
        f"{len(off)} learning rates collapse without QK-norm; with it: "
        + "; ".join(
            f"{setting_text(r)}: {r['collapsed_share']:.0%} collapsed "
            f"({r['collapsed_early_share']:.0%} before learning), {r['diverged_mean']:.0%} diverged"
            for _, r in judged.iterrows()
        )
        + " (a sharp head is this task's solution: a collapse after learning is no pathology)"
    )
    return claim


def zhai_bound(s: pd.DataFrame | None) -> Claim:
    claim = Claim(
        "entropy_above_norm_bound",
        "The attention entropy is at least the two-level entropy set by the norm of the logits "
        "(Zhai et al. 2023), on every example at every evaluation.",
        statement="information",
        number="extreme over trials",
        role="sanity",
        regime="every recall_training run, every monitor example and evaluation before divergence",
        reason="docs/science.md §9.6",
        compared_to="0; measured: the smallest entropy minus bound over all runs",
        threshold="holds if the smallest margin is >= -1e-9 (rounding)",
    )
    rows = select_regime(
        claim, s, lambda r: np.isfinite(r["zhai_margin_min_min"]), figure="training_entropy"
    )
    if rows is None:
        return claim
    low = float(rows["zhai_margin_min_min"].min())
    return claim.sanity_bound(
        low,
        -1e-9,
        "above",
        f"smallest margin {low:.3g} nats over {int(rows['n_trials'].sum())} runs",
    )


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if np.std(rx) == 0 or np.std(ry) == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def fisher_interval(rho: float, count: int, confidence: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman correlation over `count` points, with the Bonett-Wright
    variance (1 + rho^2 / 2) / (count - 3)."""
    if count <= 3 or not math.isfinite(rho):
        return math.nan, math.nan
    z = math.atanh(max(-0.999999, min(0.999999, rho)))
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt((1 + rho * rho / 2) / (count - 3))
    return math.tanh(z - half), math.tanh(z + half)


def entropy_predicts_final_loss(s: pd.DataFrame | None) -> Claim:
    """Over distinct initial conditions, per run setting (one point per initial scale)."""
    t = THRESHOLDS
    claim = Claim(
        "entropy_predicts_final_loss",
        "The lower the entropy of the weights at initialisation, the worse training ends: initial "
        "entropy and final loss are negatively rank-correlated.",
        statement="information",
        number="rank correlation (95% CI)",
        regime="recall_training runs of a fixed budget (no stop at the threshold), no QK-norm; "
        "per run setting (optimiser, lr, W_v, budget), its distinct initial scales, at "
        f"least {t.min_points}",
        reason="docs/science.md §6.3",
        compared_to="a negative correlation; measured: Spearman correlation over a setting's "
        "initial scales of the mean initial entropy and the median final loss / chance",
        threshold="per setting, holds if the 95% interval (Fisher z, Bonett-Wright variance) lies "
        "below 0, fails if entirely above; all settings must hold",
    )
    rows = select_regime(claim, s, lambda r: (r["stop"] == "never") & (r["logits"] == "dot"))
    if rows is None:
        return claim
    results = []
    for _, group in rows.groupby(SETTING):
        group = group.drop_duplicates("scale")
        if len(group) < t.min_points:
            continue
        rho = spearman(group["init_entropy_mean"], group["final_loss_median"])
        low, high = fisher_interval(rho, len(group))
        results.append((group, rho, low, high))
    if not results:
        claim.verdict = "outside regime"
        return claim
    claim.based_on(pd.concat([g for g, *_ in results]), figure="trainability")
    worst = max(results, key=lambda r: r[3] if math.isfinite(r[3]) else math.inf)
    claim.one_sided({"mean": worst[1], "ci_low": worst[2], "ci_high": worst[3]}, 0.0, "below", "")
    claim.verdict = combine_verdicts(
        one_sided_verdict(lo, hi, 0.0, "below") for _, _, lo, hi in results
    )
    claim.evidence = "; ".join(
        f"{setting_text(g.iloc[0])}: {rho:.2f} [{lo:.2f}, {hi:.2f}] over {len(g)} scales"
        for g, rho, lo, hi in results
    )
    return claim


OPTIMISERS_LAW = ALL_OPTIMISERS
CLAIMS = (
    one_hot_start_impossible,
    *(partial(escape_time_grows, optimiser=o) for o in OPTIMISERS_LAW),
    *(partial(plateau_law, optimiser=o) for o in OPTIMISERS_LAW),
    information_story,
    collapse_precedes_divergence,
    qk_norm_prevents_collapse,
    zhai_bound,
    entropy_predicts_final_loss,
)
