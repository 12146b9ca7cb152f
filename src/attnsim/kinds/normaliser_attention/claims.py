"""Claims of the essay's conclusion — softmax in particular suits attention — judged per
normaliser on `normaliser_attention` summaries (docs/science.md §12). Every regime, tolerance and
alternative is fixed here from §12's theory, before any data.

Per normaliser: `normaliser_bias_<name>` (robustness: the bias along the clean output is the one
§12.2 predicts: none where the normalisation divides the noise's mean out, E[e^eps] - 1 for
sigmoid), `normaliser_error_<name>` (the predicted error to first order), and
`normaliser_entropy_<name>` (information: whether large logits drive the entropy to the bottom of
its range, §12.3). `normaliser_cancellation` states the conclusion: property X (§12.2) separates
the normalisers whose bias vanishes from those whose bias does not."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.claims.engine import (
    Alternative,
    ClaimSpec,
    Equivalence,
    Estimate,
    OneSided,
    PerPoint,
    Regime,
    not_predicted,
    per_point_estimate,
    per_subject,
)
from attnsim.kinds.ratio_claims import at_worst, ratio_is_one, ratio_points
from attnsim.subjects import Unknown, known, normalisers
from attnsim.subjects.normalisers import HINGE, THRESHOLD
from attnsim.theory.normalisers import mean_grad_sq

PARAMS = ("normaliser", "n", "logit_scale", "noise_scale")
FIGURE_BIAS, FIGURE_ERROR = "bias_by_normaliser", "error_vs_n_by_normaliser"


@dataclass(frozen=True)
class Thresholds:
    # §12.2: the bias is judged where E[e^eps] - 1 >= 0.03 (sigma >= 0.25: the unit is not lost in
    # the trials' scatter), logits of std <= 1 and n >= 64 (sigmoid's e^s/n << 1 and the sink's and
    # softpick's mean field within ~1/n), in units of E[e^eps] - 1
    bias_sigma_min: float = 0.25
    bias_logit_max: float = 1.0
    bias_n_min: int = 64
    # the neglected terms: softmax's second-order bias along o, kappa (sum p^2 - sum p^3 / sum
    # p^2) / (m - 1) ~ 2 e^{l^2}/n <= 0.085 at n = 64, l = 1; sigmoid's O(e^{l^2}/n) and the mean
    # field's O(1/n) alike
    bias_tolerance: float = 0.1
    # §12.2: the first-order error is judged at sigma <= 0.1 (neglected terms O(sigma_eff^2) <= 10%
    # up to SSMax at n = 1024, sigma_eff = 0.3), logits of std <= 1
    error_sigma_max: float = 0.1
    error_tolerance: float = 0.1
    # §12.3: at logit std >= 8 a freezing map's H / log n is the random energy model's frozen
    # O(1) / log n (< 0.25 from n = 64); a saturating one's >= log(n/2) / log n - dip (> 0.75)
    large_scale_min: float = 8.0
    frozen_max: float = 0.25
    saturated_min: float = 0.75
    # the conclusion: a normaliser cancels the mean when its bias is below this (units of
    # E[e^eps] - 1); the non-cancelling ones are predicted at >= 0.3 in the regime (§12.2)
    cancel_max: float = 0.1
    # §12.3: the mean gradient's two-key law is judged from logit std 16 (a tie's width 1/l small
    # against the top spacing); ReLU's and sigmoid's laws are exact at every scale
    gradient_scale_min: float = 16.0
    # neglected: a third key's weight e^{-l (z1 - z3)} and triple near-ties, O(1/l) of the mean
    # (<= 3.4% in the brute-force check at l = 16, 64, n = 64, 512); sparse maps: three-key
    # supports, probability O(1/l^2) against the pair's O(1/l) but of weight 2d (<= 14% there)
    gradient_tolerance: float = 0.1
    sparse_gradient_tolerance: float = 0.2
    exact_gradient_tolerance: float = 0.05


THRESHOLDS = Thresholds()
REASON = "docs/science.md §12.2"


def _unknown(family: str, name: str, unknown, figure: str) -> ClaimSpec:
    """The family's claim for a normaliser whose property the law needs is `Unknown`."""
    return not_predicted(family, "normaliser", name, "normalisers", unknown.reason, figure=figure)


def _bias_regime(name: str):
    t = THRESHOLDS

    def select(r: pd.DataFrame) -> pd.Series:
        return (
            (r["normaliser"] == name)
            & (r["noise_scale"] >= t.bias_sigma_min)
            & (r["logit_scale"] <= t.bias_logit_max)
            & (r["n"] >= t.bias_n_min)
        )

    return select


def _bias_points(rows: pd.DataFrame) -> Estimate:
    return per_point_estimate(
        rows,
        "bias_unexplained_mean",
        "bias_unexplained_ci_low",
        "bias_unexplained_ci_high",
        "bias_unexplained_se" if "bias_unexplained_se" in rows else None,
        0.0,
        PARAMS,
        predicted_bias=(
            float((rows["bias_pred_mean"] / rows["mean_exp_minus_1"]).min()),
            float((rows["bias_pred_mean"] / rows["mean_exp_minus_1"]).max()),
        ),
    )


def _describe_bias(e: Estimate) -> str:
    low, high = e.facts["predicted_bias"]
    return (
        f"{at_worst(PARAMS)(e)}; the predicted bias itself is {low:.3f}-{high:.3f} units of "
        "E[e^eps] - 1"
    )


def _bias_alternative(name: str) -> Alternative:
    record = normalisers.get(name)
    if record.cancels_noise_mean == "yes":
        return Alternative(
            "no cancellation: the noise's mean factor kept as by sigmoid attention (+1 unit)",
            1.0,
            "§12.2: without the division by the weights' sum E[e^eps] survives",
        )
    # minus the predicted bias, where it is one number (sigmoid's whole factor: -1 unit)
    bias = record.noise_bias
    return Alternative(
        "the mean cancelled as by softmax (bias 0, so minus the predicted bias)",
        -bias if isinstance(bias, float) else math.nan,
        "§12.2: the essay's argument applied to a map that lacks its property",
    )


def bias_claim(name: str) -> ClaimSpec:
    t = THRESHOLDS
    cancels = normalisers.get(name).cancels_noise_mean
    if isinstance(cancels, Unknown):
        return _unknown("normaliser_bias", name, cancels, FIGURE_BIAS)
    verb = {
        "yes": "cancels the noise's mean: no bias along o",
        "no": "does not cancel the noise's mean: the bias along o is the one §12.2 predicts",
        "partly": "cancels the noise's mean only partly: a bias (m - 1) p_0 / (p_0 + m (1 - "
        "p_0)) along o, the sink's share",
    }[cancels]
    return ClaimSpec(
        **per_subject("normaliser_bias", "normaliser", name),
        statement="normalisers",
        text=f"Under i.i.d. gaussian logit noise, {name} {verb} (docs/science.md §12.2).",
        role="evidence",
        regime=Regime(
            f"normaliser_attention, {name}, noise_scale >= {t.bias_sigma_min}, logit_scale <= "
            f"{t.bias_logit_max}, n >= {t.bias_n_min}",
            f"{REASON}: E[e^eps] - 1 >= 0.03 resolvable; sigmoid's e^s/n and the mean field's "
            "1/n small",
            _bias_regime(name),
        ),
        rule=PerPoint(
            Equivalence(
                0.0,
                t.bias_tolerance,
                "the neglected terms (softmax's second-order bias, sigmoid's e^{l^2}/n, the mean "
                "field's 1/n) <= 0.085 units in the regime",
            )
        ),
        alternative=_bias_alternative(name),
        measure=_bias_points,
        compared_to="0: (bias - bias_pred) / (E[e^eps] - 1) at every point, the bias along o "
        "left unexplained by §12.2, in units of the noise's mean factor",
        figure=FIGURE_BIAS,
        describe=_describe_bias,
    )


def error_claim(name: str) -> ClaimSpec:
    t = THRESHOLDS
    return ClaimSpec(
        **per_subject("normaliser_error", "normaliser", name),
        statement="normalisers",
        text=f"For {name}, the mean squared change of the output under small i.i.d. logit noise "
        "is the prediction of §12.2 (variance sigma^2 ||do/ds||^2 plus the bias), measured / "
        "predicted 1.",
        role="evidence",
        regime=Regime(
            f"normaliser_attention, {name}, 0 < noise_scale <= {t.error_sigma_max}, logit_scale "
            f"<= {t.bias_logit_max}",
            f"{REASON}: the neglected terms O(sigma_eff^2) <= 10%",
            lambda r: (
                (r["normaliser"] == name)
                & (r["noise_scale"] > 0)
                & (r["noise_scale"] <= t.error_sigma_max)
                & (r["logit_scale"] <= t.bias_logit_max)
            ),
        ),
        rule=ratio_is_one(t.error_tolerance, "the first-order terms neglected, <= 10%"),
        alternative=Alternative(
            "softmax's rate applied to every map: kappa sum p^2 ||v - o||^2 (the sparse maps' "
            "error grows with the support instead, §12.2)",
            math.nan,
            "§12.2: each weight moves by sigma p_i under softmax, by sigma under sparsemax",
        ),
        measure=ratio_points("err_ratio", PARAMS, mean=""),
        compared_to="1: mean(sq_err) / mean(sq_err_pred), paired over trials, at every point",
        figure=FIGURE_ERROR,
        describe=at_worst(PARAMS),
    )


def _entropy_points(rows: pd.DataFrame) -> Estimate:
    return per_point_estimate(
        rows,
        "entropy_norm_mean",
        "entropy_norm_ci_low",
        "entropy_norm_ci_high",
        None,
        0.0,
        PARAMS,
    )


def entropy_claim(name: str) -> ClaimSpec:
    t = THRESHOLDS
    behaviour = normalisers.get(name).large_scale
    if not known(behaviour):
        return _unknown("normaliser_entropy", name, behaviour, "verdict_matrix")
    frozen = (
        behaviour == "freezes"
    )  # §12.3: onto the top key; the others saturate or are scale-free
    side, bound = ("below", t.frozen_max) if frozen else ("above", t.saturated_min)
    what = (
        "large logits drive the entropy to the bottom of its range (H / log n below "
        f"{t.frozen_max}): the weights freeze onto a few keys"
        if frozen
        else f"large logits leave the entropy near the top of its range (H / log n above "
        f"{t.saturated_min}): the weights saturate (or, for ReLU, do not depend on the scale)"
    )
    return ClaimSpec(
        **per_subject("normaliser_entropy", "normaliser", name),
        statement="normalisers",
        text=f"For {name}, {what} (docs/science.md §12.3).",
        role="evidence",
        regime=Regime(
            f"normaliser_attention, {name}, logit_scale >= {t.large_scale_min}, n >= 64",
            "docs/science.md §12.3: frozen beyond logit std sqrt(2 log n) <= 4.7 up to n = 65536",
            lambda r: (
                (r["normaliser"] == name) & (r["logit_scale"] >= t.large_scale_min) & (r["n"] >= 64)
            ),
        ),
        rule=PerPoint(
            OneSided(bound, side, "§12.3: frozen O(1)/log n vs saturated log(n/2)/log n")
        ),
        alternative=Alternative(
            "the other behaviour: saturated (about log(n/2) / log n)"
            if frozen
            else "the other behaviour: frozen (about 0)",
            0.9 if frozen else 0.0,
            "§12.3: which of the two a map does is the point of the claim",
        ),
        measure=_entropy_points,
        compared_to=f"{bound}: H / log n of the clean weights at every point",
        figure="verdict_matrix",
        describe=at_worst(PARAMS),
    )


def _clean(r: pd.DataFrame) -> pd.Series:
    """One row per clean draw: grad_sq is of the clean logits, the same trials at every noise
    scale, so the regime keeps each (normaliser, n, d, logit scale) at its smallest noise scale."""
    keys = ["normaliser", "n", "d", "logit_scale"]
    return r["noise_scale"] == r.groupby(keys)["noise_scale"].transform("min")


def _gradient_points(rows: pd.DataFrame) -> Estimate:
    """Per point, mean ||do/ds||^2 over the §12.3 law's E ||do/ds||^2 (a constant of the point:
    the interval is the mean's, divided). The gradient is of the clean logits, the same trials at
    every noise scale: one point per (normaliser, n, d, logit scale), the smallest noise scale's."""
    rows = rows.sort_values("noise_scale", kind="stable").drop_duplicates(
        ["normaliser", "n", "d", "logit_scale"]
    )
    law = np.array(
        [
            mean_grad_sq(str(name), int(n), int(d), float(scale))
            for name, n, d, scale in zip(
                rows["normaliser"], rows["n"], rows["d"], rows["logit_scale"]
            )
        ]
    )
    frame = rows.assign(
        gradient_ratio=rows["grad_sq_mean"] / law,
        gradient_ratio_ci_low=rows["grad_sq_ci_low"] / law,
        gradient_ratio_ci_high=rows["grad_sq_ci_high"] / law,
    )
    return per_point_estimate(
        frame,
        "gradient_ratio",
        "gradient_ratio_ci_low",
        "gradient_ratio_ci_high",
        None,
        1.0,
        PARAMS,
    )


def gradient_claim(name: str) -> ClaimSpec | None:
    """The mean gradient at large logit scale (§12.3); None for soft-capping (no law: its top keys
    saturate together)."""
    t = THRESHOLDS
    record = normalisers.get(name)
    if not known(record.large_scale_gradient):
        return _unknown("normaliser_gradient", name, record.large_scale_gradient, "verdict_matrix")
    if record.large_scale_gradient == "near ties":
        sparse = record.form == THRESHOLD  # three-key supports: a larger neglected share
        tolerance = t.sparse_gradient_tolerance if sparse else t.gradient_tolerance
        law = "the two-key law: it falls like 1/l, carried by near-ties of the top two keys"
        scale_min = t.gradient_scale_min
        reason = "docs/science.md §12.3: a tie's width 1/l small against the top keys' spacing"
    elif record.large_scale_gradient == "exact":
        tolerance = t.exact_gradient_tolerance
        law = (
            "exact: d / (2n) at every scale (slope 1/n on the positive keys)"
            if record.form == HINGE
            else "exact: n d E[sigma'(l z - log n)^2] at every scale"
        )
        scale_min = 0.0
        reason = "docs/science.md §12.3: elementwise, so the expectation is exact"
    else:
        return None
    return ClaimSpec(
        **per_subject("normaliser_gradient", "normaliser", name),
        statement="normalisers",
        text=f"For {name}, the mean squared gradient of the output through the normaliser, "
        f"E ||do/ds||^2, is {law} (docs/science.md §12.3): measured / predicted 1.",
        role="evidence",
        regime=Regime(
            f"normaliser_attention, {name}, logit_scale >= {scale_min:g}",
            reason,
            lambda r: (r["normaliser"] == name) & (r["logit_scale"] >= scale_min) & _clean(r),
        ),
        rule=ratio_is_one(
            tolerance,
            "quadrature only (exact law)"
            if scale_min == 0
            else "third keys and triple ties, O(1/l), neglected",
        ),
        alternative=Alternative(
            "the essay's vanishing gradient: the mean falls with the weights' entropy, "
            "exponentially in l (the typical e^{-l gap}), a ratio near 0",
            0.0,
            "§3.6: the Jacobian diag(p) - p p^T vanishes at one-hot weights",
        ),
        measure=_gradient_points,
        compared_to="1: mean ||do/ds||^2 / the §12.3 law at every point",
        figure="verdict_matrix",
        describe=at_worst(PARAMS),
    )


def _margins(rows: pd.DataFrame) -> Estimate:
    """Per point, its distance from the cut `cancel_max` on the side property X predicts (units
    of E[e^eps] - 1): cancel_max - |bias| where X holds, bias - cancel_max where it does not;
    the interval from the point's 95% interval of the bias (of |bias|: its ends' absolute values,
    0 when it straddles 0)."""
    c = THRESHOLDS.cancel_max
    unit = rows["mean_exp_minus_1"]
    b, lo, hi = (rows[f"bias{k}"] / unit for k in ("_mean", "_ci_low", "_ci_high"))
    x = rows["cancels_mean"] == "yes"
    far = np.maximum(lo.abs(), hi.abs())
    near = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(lo.abs(), hi.abs()))
    value = np.where(x, c - b.abs(), b - c)
    low = np.where(x, c - far, lo - c)
    high = np.where(x, c - near, hi - c)
    frame = rows.assign(margin=value, margin_ci_low=low, margin_ci_high=high)
    return per_point_estimate(frame, "margin", "margin_ci_low", "margin_ci_high", None, 0.0, PARAMS)


def _cancellation_regime(r: pd.DataFrame) -> pd.Series:
    t = THRESHOLDS
    return (
        (r["noise_scale"] >= t.bias_sigma_min)
        & (r["logit_scale"] <= t.bias_logit_max)
        & (r["n"] >= t.bias_n_min)
        & r["cancels_mean"].isin(["yes", "no"])
    )


CANCELLATION = ClaimSpec(
    claim_id="normaliser_cancellation",
    statement="normalisers",
    text="The essay's robustness argument is specific to property X (§12.2): weights g(s_i) / "
    "sum_j g(s_j) with g(s + eps) = g(s) h(eps), or a shift-invariant map summing to one. Every "
    "normaliser with X (softmax, SSMax, soft-capping, sparsemax, 1.5-entmax) leaves no bias along "
    "o (below 0.1 units of E[e^eps] - 1 at every point); every one without it (sigmoid, ReLU, "
    "softpick) a bias above that cut at every point and every n.",
    role="evidence",
    regime=Regime(
        f"normaliser_attention, every normaliser but the sink (partial by design), noise_scale "
        f">= {THRESHOLDS.bias_sigma_min}, logit_scale <= {THRESHOLDS.bias_logit_max}, n >= "
        f"{THRESHOLDS.bias_n_min}",
        REASON,
        _cancellation_regime,
    ),
    rule=PerPoint(
        OneSided(0.0, "above", "§12.2: X predicts 0 for the first group, >= 0.3 for the second")
    ),
    alternative=Alternative(
        "the essay's argument general to any normaliser: every bias 0, the separation at most 0",
        0.0,
        "§12.2: the argument needs both e^{s+eps} = e^s e^eps and the division",
    ),
    measure=_margins,
    compared_to=f"0: each point's margin from the cut {THRESHOLDS.cancel_max} units of E[e^eps] "
    "- 1 on the side X predicts (below it with X, above it without)",
    figure=FIGURE_BIAS,
    describe=at_worst(PARAMS),
)


PER_NORMALISER = {
    "bias": bias_claim,
    "error": error_claim,
    "entropy": entropy_claim,
    "gradient": gradient_claim,
}
NAMES = normalisers.names()
CLAIMS = (
    *(bias_claim(name) for name in NAMES),
    *(error_claim(name) for name in NAMES),
    *(entropy_claim(name) for name in NAMES),
    *(spec for name in NAMES if (spec := gradient_claim(name)) is not None),
    CANCELLATION,
)
