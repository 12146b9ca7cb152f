"""Stored columns, per-trial metrics and summaries shared by the kinds that round attention to a
low-precision format (docs/science.md §11), whatever produced the rows (synthetic draws or a
trained model). The row computations are `attnsim.kernels.precision`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attnsim.kernels.block_sites import Scaling
from attnsim.kernels.blockscale import (
    ACCUMULATIONS,
    GRANULARITIES,
    RENAMED_SCALE_TYPES,
    SCALE_TYPES,
    SMOOTHINGS,
)
from attnsim.kernels.precision import METRIC_NAMES, SITES
from attnsim.kernels.rounding import CLASSIC_FORMAT_NAMES, FORMAT_NAMES, FORMATS, MX_ELEMENT_NAMES
from attnsim.kinds.base import Column, Counts, Param, Summary
from attnsim.kinds.columns import F64, GRAD_SQ, N_EFF, STR, with_ci
from attnsim.stats import median_ci, ratio_of_means

if TYPE_CHECKING:  # the simulate jobs import this module and draw no table: no pandas there
    import pandas as pd

FORMAT = Param(
    "format",
    STR,
    "number format of the rounding: bfloat16 (8 significand bits), float16 (11), float8_e4m3fn "
    "(4, max 448, no inf), "
    "float8_e5m2 (3, max 57344), and the microscaling elements float6_e2m3fn (4, max 7.5), "
    "float6_e3m2fn (3, max 28), float4_e2m1fn (2, max 6); round to nearest even with "
    "saturation (docs/science.md §11.1, §11.9)",
    choices=FORMAT_NAMES,
)
# The block-scaled axes (docs/science.md §11.9). Added after the kinds' points were stored: at
# their defaults (today's one rounding) they stay out of the point ids, which keeps those points.
GRANULARITY = Param(
    "granularity",
    STR,
    "which values share one scale, along the site's reduction axis: none (no scale: the plain "
    "cast), tensor, row (a token), channel, block32 / block16 (32 or 16 consecutive values: OCP "
    "MX, NVFP4)",
    choices=GRANULARITIES,
    default="none",
    id_omits_default=True,
)
# e8m0_ceil was `e8m0` until the OCP rule joined it: the same rule under its name now, with the
# point ids and rows stored under the old name (Param.renamed)
SCALE_TYPE = Param(
    "scale_type",
    STR,
    "the shared scale's format: fp32 (a / M, exact); e8m0_ceil (a power of two rounded up, "
    "2^ceil(log2(a / M)): never saturates, NVIDIA's MXFP8 recipe; called e8m0 before); e8m0_ocp "
    "(OCP MX v1.0: 2^(floor(log2 a) - emax), saturating the block maximum when its significand "
    "exceeds M / 2^emax); e4m3 (NVFP4's E4M3 block scale under a per-trial fp32 scale); a the "
    "group's largest magnitude, M the element's largest value; ignored at granularity none "
    "(docs/science.md §11.9)",
    choices=SCALE_TYPES,
    default="fp32",
    id_omits_default=True,
    renamed=tuple(RENAMED_SCALE_TYPES.items()),
)
ACCUMULATION = Param(
    "accumulation",
    STR,
    "accumulator of the q . k product at the qk sites: fp32, or fp16 (every partial sum rounded "
    "to float16); the other sites ignore it",
    choices=ACCUMULATIONS,
    default="fp32",
    id_omits_default=True,
)
SMOOTHING = Param(
    "smoothing",
    STR,
    "SageAttention's smoothing of the keys at the qk sites: none, or mean (k_i - mean_j k_j "
    "before quantising; exact by softmax's shift invariance); the other sites ignore it",
    choices=SMOOTHINGS,
    default="none",
    id_omits_default=True,
)
SCALING_PARAMS = (GRANULARITY, SCALE_TYPE, ACCUMULATION, SMOOTHING)


def has_plain(values) -> bool:
    """A grid (parameter -> distinct values) with today's one rounding of a classic format: the
    figures of §11.1-§11.5 apply."""
    return (
        "none" in values["granularity"]
        and "fp32" in values["accumulation"]
        and "none" in values["smoothing"]
        and any(f in CLASSIC_FORMAT_NAMES for f in values["format"])
    )


def has_scaled(values) -> bool:
    """A grid with scale groups, fp16 accumulation or a microscaling element: the atlas applies."""
    return (
        values["granularity"] != ["none"]
        or values["accumulation"] != ["fp32"]
        or values["smoothing"] != ["none"]
        or any(f in MX_ELEMENT_NAMES for f in values["format"])
    )


def scaling(p) -> Scaling:
    """The point's block-scaled quantisation (today's one rounding at the defaults, also for a
    point written before the axes existed, which lacks them)."""
    return Scaling(*(p.get(param.name, param.default) for param in SCALING_PARAMS))


SITE = Param(
    "site",
    STR,
    "where the one rounding happens: logits (s), qk (q and k, product accumulated in float32), "
    "qk_rotated (q and k after "
    "a random orthogonal rotation), probs (P = exp(s - max) before P V, row sum unrounded), "
    "output (o); everything else "
    "float64 (docs/science.md §11.1)",
    choices=SITES,
)

_DOCS = {
    "sq_err": "||o~ - o||^2: the output with the one rounding against the float64 reference",
    "sq_err_iid": "the essay's i.i.d. delta method kappa_pooled * sum p^2 ||v - o||^2 (nan at "
    "site output)",
    "sq_err_model": "the rounding model's first-order prediction (uniform errors of variance "
    "ulp^2/12 at the rounded "
    "numbers; logits: sum p^2 Var(eps_i | s_i) ||v_i - o||^2; qk: with the errors' covariance; "
    "probs: "
    "sum p^2 Var(P_i)/P_i^2 ||v_i||^2; output: sum_m ulp(o_m)^2/12), docs/science.md §11.2",
    "sq_err_next": "the model's next order with the bias of E[e^eps_i] (logits site only, else "
    "nan), docs/science.md §11.3",
    "ratio_iid": "sq_err / sq_err_iid of the row: its mean over rows is 1 if the i.i.d. method "
    "held (each prediction is "
    "conditional on the row), nan at site output",
    "ratio_model": "sq_err / sq_err_model of the row: its mean over rows is 1 if the rounding "
    "model's first order held",
    "kappa_pooled": "kappa = Var(e^eps)/E[e^eps]^2 of the row's own errors pooled over its keys "
    "(probs: e^eps = fl(P)/P)",
    "kappa_model": "sq_err_model / grad_sq: the effective variance the model gives the row's "
    "errors (nan at site output)",
    "grad_sq": GRAD_SQ.doc,
    "spread": "sum_i p_i ||v_i - o||^2",
    "entropy": "entropy of the clean weights, nats",
    "n_eff": N_EFF.doc,
    "logit_shift": "sum_i (w~_i - p_i) s_i: how far the rounding moves the weights' mean logit "
    "(logit sites, else nan)",
    "logit_shift_model": "the model's second-order mean of logit_shift from E[e^eps_i] depending "
    "on s_i (docs/science.md §11.3)",
    "shift_var_model": "the model's first-order variance of logit_shift, g^T C g with g_i = p_i "
    "(s_i - s_bar) (logit sites)",
    "flushed": "share of the site's nonzero cast numbers that became 0 (underflow)",
    "saturated": "share of the site's cast numbers beyond the format's largest finite value",
    "sq_err_unrotated": "at site qk_rotated: the same row's sq_err with q and k cast unrotated "
    "(else nan)",
    "sq_err_model_unrotated": "at site qk_rotated: the same row's sq_err_model unrotated (else "
    "nan)",
    "saturated_unrotated": "at site qk_rotated: the share of the unrotated casts that saturated "
    "(else nan)",
}
METRICS = tuple(Column(name, F64, _DOCS[name]) for name in METRIC_NAMES)
# NaN where a quantity does not apply at a point (attnsim.jobs.validate): at the sites their docs
# above leave out
NONFINITE_METRICS = (
    "sq_err_unrotated",
    "sq_err_model_unrotated",
    "saturated_unrotated",
    "sq_err_next",
    "logit_shift",
    "logit_shift_model",
    "shift_var_model",
    "sq_err_iid",
    "ratio_iid",
    "kappa_pooled",
    "kappa_model",
)

FORMAT_THEORY = (
    Column("significand_bits", F64, "t: significand bits of the format, the implicit bit included"),
    Column(
        "unit_roundoff", F64, "u = 2^-t: the largest relative rounding error in the normal range"
    ),
    Column("format_max", F64, "largest finite value of the format (saturation beyond)"),
)


def plain(rows: pd.DataFrame) -> pd.Series:
    """Today's one rounding (no scale groups, fp32 accumulation): the points §11.1-§11.5 are about.
    Summaries stored before the block-scaled axes existed lack them and are all plain."""
    import pandas as pd

    if "granularity" not in rows:
        return pd.Series(True, index=rows.index)
    out = (rows["granularity"] == "none") & (rows["accumulation"] == "fp32")
    return out & (rows["smoothing"] == "none") if "smoothing" in rows else out


def first_order_regime(rows: pd.DataFrame, kappa_eff_max: float, flushed_max: float) -> pd.Series:
    """The summary points where the rounding model's first order is predicted accurate
    (docs/science.md §11.4): kappa_eff <= `kappa_eff_max` (the output site has no expansion),
    nothing saturated, at most `flushed_max` of the cast numbers flushed to 0; today's plain
    rounding only (the block-scaled points have their own model and claims, §11.9)."""
    small = (rows["kappa_eff"] <= kappa_eff_max) | (rows["site"] == "output")
    clean = (rows["saturated_mean"] == 0) & (rows["flushed_mean"] <= flushed_max)
    return small.fillna(False) & clean & plain(rows)


def format_theory(p) -> dict[str, object]:
    fmt = FORMATS[p["format"]]
    return {
        "significand_bits": float(fmt.bits),
        "unit_roundoff": 2.0**-fmt.bits,
        "format_max": fmt.max,
    }


def _ratio(prefix: str, x: np.ndarray, y: np.ndarray) -> dict[str, object]:
    r = ratio_of_means(x, y) if np.all(np.isfinite(x)) and np.all(np.isfinite(y)) else {}
    keys = ("mean", "ci_low", "ci_high")
    names = (prefix, f"{prefix}_ci_low", f"{prefix}_ci_high")
    return {
        name: (None if key not in r or math.isnan(r[key]) else r[key])
        for name, key in zip(names, keys)
    }


def _median_ratio(prefix: str, x: np.ndarray, y: np.ndarray) -> dict[str, object]:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = x / y
    m = (
        median_ci(ratio[np.isfinite(ratio)])
        if np.any(np.isfinite(ratio))
        else {"mean": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    )
    return {prefix: m["mean"], f"{prefix}_ci_low": m["ci_low"], f"{prefix}_ci_high": m["ci_high"]}


def _mean_ratio(x: np.ndarray, y: np.ndarray) -> float | None:
    mx, my = float(np.mean(x)), float(np.mean(y))
    return mx / my if math.isfinite(mx) and math.isfinite(my) and my != 0 else None


EXTRA = (
    *with_ci(
        "err_ratio_iid",
        "mean(sq_err) / mean(sq_err_iid), paired over trials: 1 if the essay's i.i.d. delta "
        "method held",
    ),
    *with_ci(
        "err_ratio_model",
        "mean(sq_err) / mean(sq_err_model), paired: 1 if the rounding model's first order held",
    ),
    *with_ci("err_ratio_next", "mean(sq_err) / mean(sq_err_next), paired (logits site)"),
    *with_ci(
        "median_ratio_iid",
        "median over trials of sq_err / sq_err_iid, distribution-free 95% interval",
    ),
    *with_ci(
        "median_ratio_model",
        "median over trials of sq_err / sq_err_model, distribution-free 95% interval",
    ),
    Column(
        "iid_factor_model",
        F64,
        "mean(sq_err_model) / mean(sq_err_iid): the factor by which the model says the i.i.d. "
        "method falls short",
    ),
    Column(
        "next_correction",
        F64,
        "mean(sq_err_next) / mean(sq_err_model) - 1: the first-order model's error the next order "
        "predicts",
    ),
    Column(
        "kappa_eff_unrotated",
        F64,
        "at site qk_rotated: mean(sq_err_model_unrotated) / mean(grad_sq), the unrotated cast's "
        "kappa_eff",
    ),
    *with_ci(
        "kappa_measured",
        "mean(sq_err) / mean(grad_sq), paired: the effective variance of the errors the rows "
        "measured, the control variable of the first-order regime (docs/science.md §11.9)",
    ),
    Column(
        "kappa_eff",
        F64,
        "mean(sq_err_model) / mean(grad_sq): the effective error variance of the point (the "
        "regime's control variable)",
    ),
    *with_ci(
        "rotation_gain",
        "mean(sq_err_unrotated) / mean(sq_err) at site qk_rotated, paired: the error reduction of "
        "the rotation",
    ),
    *with_ci(
        "rotation_accuracy",
        "at site qk_rotated: mean over rows of sq_err_unrotated / sq_err_model_unrotated over the "
        "mean of sq_err / sq_err_model, "
        "paired: 1 when the model is as accurate with the rotation as without, i.e. when it "
        "predicts the gain",
    ),
    Column(
        "rotation_gain_model",
        F64,
        "mean(sq_err_model_unrotated) / mean(sq_err_model): the reduction the rounding model "
        "predicts",
    ),
    *with_ci(
        "shift_ratio",
        "mean(logit_shift) / mean(logit_shift_model), paired: 1 if the model's bias held",
    ),
    Column(
        "shift_z_model",
        F64,
        "|mean(logit_shift_model)| / its first-order standard error at this trial count (model "
        "only)",
    ),
)


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    m = metrics
    out: dict[str, object] = {}
    out.update(_ratio("err_ratio_iid", m["sq_err"], m["sq_err_iid"]))
    out.update(_ratio("err_ratio_model", m["sq_err"], m["sq_err_model"]))
    out.update(_ratio("err_ratio_next", m["sq_err"], m["sq_err_next"]))
    out.update(_median_ratio("median_ratio_iid", m["sq_err"], m["sq_err_iid"]))
    out.update(_median_ratio("median_ratio_model", m["sq_err"], m["sq_err_model"]))
    out["iid_factor_model"] = _mean_ratio(m["sq_err_model"], m["sq_err_iid"])
    nxt = _mean_ratio(m["sq_err_next"], m["sq_err_model"])
    out["next_correction"] = None if nxt is None else nxt - 1.0
    out["kappa_eff"] = _mean_ratio(m["sq_err_model"], m["grad_sq"])
    out.update(_ratio("kappa_measured", m["sq_err"], m["grad_sq"]))
    out.update(_ratio("rotation_gain", m["sq_err_unrotated"], m["sq_err"]))
    out["kappa_eff_unrotated"] = _mean_ratio(m["sq_err_model_unrotated"], m["grad_sq"])
    out["rotation_gain_model"] = _mean_ratio(m["sq_err_model_unrotated"], m["sq_err_model"])
    with np.errstate(divide="ignore", invalid="ignore"):
        plain = m["sq_err_unrotated"] / m["sq_err_model_unrotated"]
    out.update(_ratio("rotation_accuracy", plain, m["ratio_model"]))
    shift_model = m["logit_shift_model"]
    out.update(_signed_ratio("shift_ratio", m["logit_shift"], shift_model))
    out["shift_z_model"] = _z(shift_model, m["shift_var_model"])
    return out


def _signed_ratio(prefix: str, x: np.ndarray, y: np.ndarray) -> dict[str, object]:
    """mean(x)/mean(y) with the delta-method interval for a predicted mean of either sign."""
    names = (prefix, f"{prefix}_ci_low", f"{prefix}_ci_high")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or x.size < 2 or np.mean(y) == 0:
        return dict.fromkeys(names)
    sign = 1.0 if np.mean(y) > 0 else -1.0
    r = ratio_of_means(sign * x, sign * y)
    return {
        name: (None if math.isnan(r[key]) else r[key])
        for name, key in zip(names, ("mean", "ci_low", "ci_high"))
    }


def _z(mean_model: np.ndarray, var_model: np.ndarray) -> float | None:
    if not (np.all(np.isfinite(mean_model)) and np.all(np.isfinite(var_model))):
        return None
    se = math.sqrt(float(np.mean(var_model)) / mean_model.size)
    return abs(float(np.mean(mean_model))) / se if se > 0 else None


# the summary of both precision kinds: the same metrics, ratios and extremes, synthetic or MiniLM
SUMMARY = Summary(
    nonfinite_metrics=NONFINITE_METRICS,
    extra_columns=EXTRA,
    extra=extra_summary,
    extreme_metrics=("entropy",),
)


# The cost model's setup of the kinds that round (`Work.setup`): ml-dtypes' import, once per
# process (0.6.0's extension module: ~0.01 CPU-s measured, about 1e4 numpy calls' worth).
SETUP = Counts(calls=1e4)
