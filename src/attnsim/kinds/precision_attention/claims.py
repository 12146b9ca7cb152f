"""Claims of statement 1 (robustness to logit noise) for the noise attention meets in practice:
rounding to bf16, fp16 and fp8 (docs/science.md §11), judged on `precision_attention` summaries.
Every regime and tolerance is fixed here from the theory of §11.4, before any data."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from attnsim.claims.engine import Claim, select_regime
from attnsim.kernels.rounding import FORMAT_NAMES
from attnsim.kinds.low_precision import first_order_regime
from attnsim.kinds.ratio_claims import legacy_ratio_is_one as ratio_is_one
from attnsim.kinds.ratio_claims import within_one


@dataclass(frozen=True)
class Thresholds:
    # §11.4: the first-order prediction neglects terms of relative size c * kappa_eff with c <~ 3
    # (next order ~1, the bias ~1/4, the within-bin covariance of p^2 and eps^2 ~1.6):
    # kappa_eff <= 0.01 keeps them <= 3%, inside the tolerance
    kappa_eff_max: float = 0.01
    # measured / predicted error within 1 +- 0.05 (as the essay's delta-method claims)
    ratio_tolerance: float = 0.05
    # the standard model ignores underflow (error -x, not uniform): at most this share flushed
    flushed_max: float = 1e-3
    # a gain is a ratio of two first-order predictions: twice their ~3-5%
    rotation_tolerance: float = 0.10
    # a bias is judged where the model's own first-order SE puts it >= 4 SE from 0
    shift_z_min: float = 4.0
    # the bias is second order: the uniform model's own third-order terms are ~kappa_eff
    shift_tolerance: float = 0.25


THRESHOLDS = Thresholds()
FIGURE_ERROR, FIGURE_ROTATION, FIGURE_BIAS = (
    "precision_error",
    "precision_rotation",
    "precision_bias",
)
REASON = "docs/science.md §11.4"


def in_model_regime(rows: pd.DataFrame) -> pd.Series:
    """Where the first-order model is predicted accurate: kappa_eff <= 0.01 (the output site has no
    expansion), nothing saturated, at most 0.1% of the cast numbers flushed to 0."""
    t = THRESHOLDS
    return first_order_regime(rows, t.kappa_eff_max, t.flushed_max) & (rows["logit_scale"] > 0)


def _point(row) -> str:
    return (
        f"({row['format']}, {row['site']}, σ={row['logit_scale']:g}, n={row['n']}, "
        f"outliers={row['outlier_channels']}x{row['outlier_scale']:g})"
    )


def iid_delta(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "rounding_iid_delta",
        "Rounding the logits to a low-precision format acts like i.i.d. logit noise: the essay's "
        "delta method with kappa of "
        "the pooled rounding errors predicts the mean squared change of the output (per-row ratio "
        "1).",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime="precision_attention, site logits, the first-order regime kappa_eff <= "
        f"{t.kappa_eff_max} (the expansion itself "
        f"accurate to ~3%), no saturation, <= {t.flushed_max:g} flushed",
        reason=REASON,
        compared_to="1: mean over rows of sq_err / (kappa_pooled sum p^2 |v - o|^2), at every "
        "point; compared with the "
        "factor sum p^2 Var(eps|s)|v - o|^2 / (kappa_pooled sum p^2 |v - o|^2) the rounding model "
        "predicts",
        threshold=within_one(t.ratio_tolerance),
    )
    rows = ratio_is_one(
        claim,
        s,
        lambda r: (r["site"] == "logits") & in_model_regime(r),
        FIGURE_ERROR,
        "ratio_iid",
        t.ratio_tolerance,
        _point,
    )
    if rows is None:
        return claim
    factor = rows["iid_factor_model"]
    claim.evidence += (
        f"; measured factor {rows['ratio_iid_mean'].min():.2f}-{rows['ratio_iid_mean'].max():.2f} "
        "(median ratio "
        f"{rows['median_ratio_iid'].min():.2f}-{rows['median_ratio_iid'].max():.2f}), compared "
        "with the rounding model's "
        f"{factor.min():.2f}-{factor.max():.2f}: the error of a logit grows with |s_i|, largest "
        "on the heavy keys"
    )
    return claim


def model_delta(fmt: str):
    def judge(s: pd.DataFrame | None) -> Claim:
        t = THRESHOLDS
        claim = Claim(
            f"rounding_model_{fmt}",
            f"In {fmt}, the rounding model (errors uniform on ± ulp/2 of each rounded number, Var "
            "= ulp^2/12) predicts the "
            "mean squared change of the output to first order at every site: sum p^2 "
            "Var(eps_i|s_i) |v_i - o|^2 for the "
            "logits, the errors' covariance for q and k, sum p^2 Var(P_i)/P_i^2 |v_i|^2 for P, "
            "sum ulp(o_m)^2/12 for o.",
            statement="robustness",
            number="mean (95% CI)",
            role="evidence",
            regime=f"precision_attention, format {fmt}, kappa_eff <= {t.kappa_eff_max} (or site "
            "output), no saturation, "
            f"<= {t.flushed_max:g} of the cast numbers flushed to 0",
            reason=REASON,
            compared_to="1: mean over rows of sq_err / sq_err_model, at every point of the regime",
            threshold=within_one(t.ratio_tolerance),
        )
        rows = ratio_is_one(
            claim,
            s,
            lambda r: (r["format"] == fmt) & in_model_regime(r),
            FIGURE_ERROR,
            "ratio_model",
            t.ratio_tolerance,
            _point,
        )
        if rows is None:
            return claim
        outside = s[(s["format"] == fmt) & ~in_model_regime(s) & (s["logit_scale"] > 0)]
        if len(outside):
            claim.evidence += (
                f"; outside the regime ({len(outside)} points, kappa_eff up to "
                f"{outside['kappa_eff'].max():.3g}) the ratio is "
                f"{outside['ratio_model_mean'].min():.3f}-{outside['ratio_model_mean'].max():.3f}"
            )
        return claim

    judge.__name__ = f"model_delta_{fmt}"
    return judge


def rotation(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "rotation_gain_fp8",
        "A random orthogonal rotation of q and k before an fp8 cast (incoherent processing) "
        "divides the error on inputs "
        "with outlier features by the factor the rounding model predicts from the same rows.",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime="precision_attention, site qk_rotated, fp8 formats, outlier_channels > 0, "
        "outlier_scale > 1, kappa_eff of "
        f"both casts <= {t.kappa_eff_max}, nothing saturated in either cast",
        reason="docs/science.md §11.5",
        compared_to="1: measured gain mean(sq_err_unrotated) / mean(sq_err) over the model's "
        "mean(sq_err_model_unrotated) / mean(sq_err_model), at every point; compared with the "
        "paired per-row form (rotation_accuracy: shown, never judged, as it was picked after a "
        "first run) and the closed form (d + 2) sum lambda^2 / (sum lambda)^2",
        threshold=within_one(t.rotation_tolerance),
    )

    def regime(r):
        fp8 = r["format"].str.startswith("float8")
        outliers = (r["outlier_channels"] > 0) & (r["outlier_scale"] > 1)
        small = (r["kappa_eff"] <= t.kappa_eff_max) & (r["kappa_eff_unrotated"] <= t.kappa_eff_max)
        unsaturated = (r["saturated_mean"] == 0) & (r["saturated_unrotated_mean"] == 0)
        return (r["site"] == "qk_rotated") & fp8 & outliers & small.fillna(False) & unsaturated

    rows = select_regime(claim, s, regime, FIGURE_ROTATION)
    if rows is None:
        return claim
    # The statistic declared before the data: measured over predicted gain as a ratio of mean
    # errors. The paired per-row form (half the interval) was picked after a first run showed
    # this one inconclusive, so it is reported beside the verdict and never decides it.
    scaled = rows.assign(
        gain_ratio=rows["rotation_gain"] / rows["rotation_gain_model"],
        gain_low=rows["rotation_gain_ci_low"] / rows["rotation_gain_model"],
        gain_high=rows["rotation_gain_ci_high"] / rows["rotation_gain_model"],
    )
    claim.per_point(
        scaled, "gain_ratio", "gain_low", "gain_high", 1.0, t.rotation_tolerance, describe=_point
    )
    claim.evidence += (
        f"; paired per-row form (not judged) {rows['rotation_accuracy'].min():.3f}-"
        f"{rows['rotation_accuracy'].max():.3f}"
        f"; measured gains {rows['rotation_gain'].min():.2f}-{rows['rotation_gain'].max():.2f} "
        "(ratio of means, 95% CI "
        f"{rows['rotation_gain_ci_low'].min():.2f}-{rows['rotation_gain_ci_high'].max():.2f}), "
        "model "
        f"{rows['rotation_gain_model'].min():.2f}-{rows['rotation_gain_model'].max():.2f}, closed "
        "form "
        f"{rows['rotation_gain_theory'].min():.2f}-{rows['rotation_gain_theory'].max():.2f} "
        "(FlashAttention-3 reports 2.6)"
    )
    return claim


def bias(s: pd.DataFrame | None) -> Claim:
    t = THRESHOLDS
    claim = Claim(
        "rounding_bias_model",
        "Because E[e^eps_i] = sinh(h_i)/h_i now depends on s_i (h_i = ulp(s_i)/2), the essay's "
        "cancellation fails and "
        "rounding the logits shifts the weights' mean logit by sum p_i (s_i - s_bar)(1/2 - p_i) "
        "Var(eps_i|s_i).",
        statement="robustness",
        number="mean (95% CI)",
        role="evidence",
        regime="precision_attention, site logits, points where the predicted shift is >= "
        f"{t.shift_z_min:g} of its own "
        "first-order standard errors from 0 (model only), nothing saturated",
        reason=REASON,
        compared_to="1: mean(logit_shift) / mean(logit_shift_model), at every point",
        threshold=within_one(t.shift_tolerance),
    )

    def regime(r):
        return (
            (r["site"] == "logits")
            & (r["shift_z_model"] >= t.shift_z_min).fillna(False)
            & (r["saturated_mean"] == 0)
        )

    rows = ratio_is_one(
        claim, s, regime, FIGURE_BIAS, "shift_ratio", t.shift_tolerance, _point, mean=""
    )
    if rows is None:
        return claim
    if math.isfinite(claim.measured) and claim.verdict == "fails":
        claim.evidence += (
            "; the mean of the first-order term is not 0: within its rounding bin an error "
            "correlates with the weight, "
            "and bins at powers of two are asymmetric (docs/science.md §11.3)"
        )
    return claim


CLAIMS = (iid_delta, *(model_delta(f) for f in FORMAT_NAMES), rotation, bias)
