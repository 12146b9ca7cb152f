"""Stored columns, per-trial metrics and summaries shared by the kinds that put i.i.d. noise on
attention logits (docs/science.md §2, §5.6): the measured error beside the delta-method and
next-order predictions, whatever produced the clean rows (synthetic draws or a trained model).

A kind's kernel returns per-trial sums (sq_err, spread, grad_sq, entropy, n_eff and the
next-order sums of `attnsim.theory.delta_next`); `trial_metrics` turns them into the stored
metrics, `theory` gives the per-point theory columns, `extra_summary` the paired ratios."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.base import Column, Param
from attnsim.kinds.columns import BOOL, F64, GRAD_SQ, I64, N_EFF, STR, paired_ratio
from attnsim.stats import ratio_of_means
from attnsim.subjects import noise_families
from attnsim.theory import delta_next
from attnsim.theory.noise import kappa


def noise_param(section: str) -> Param:
    """The `noise` parameter: its choices are the registry's (`attnsim.subjects.noise_families`),
    so a kind that has it takes a new family as soon as it is registered."""
    names = noise_families.names()
    return Param(
        "noise",
        STR,
        f"noise family: {', '.join(names)}, standardised to std noise_scale (docs/science.md "
        f"{section})",
        choices=names,
    )


NOISE_SCALE = Param("noise_scale", F64, "std sigma of the logit noise", minimum=0, maximum=100)
NOISE_DRAWS = Param(
    "noise_draws", I64, "noisy outputs K per trial, each with fresh noise", minimum=1, maximum=4096
)
# kappa is a number of the point's noise law (the same on every trial) and +inf, with the
# predictions built on it, where the law lacks the moment the delta method needs
CONSTANT_METRICS = ("kappa",)
NONFINITE_METRICS = ("kappa", "rel_err_pred", "sq_err_pred", "sq_err_next")


def safe_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator with 0/0 = 0 and x/0 = +inf (one-hot weights), never NaN."""
    out = np.zeros_like(numerator)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    out[(denominator <= 0) & (numerator > 0)] = np.inf
    return out


METRICS = (
    Column("sq_err", F64, "mean over the K noisy draws of ||o~_k - o||^2"),
    Column("rel_err", F64, "sqrt(sq_err / sum_i p_i ||v_i - o||^2); 0 when both are 0"),
    Column(
        "rel_err_pred", F64, "delta-method rel_err: sqrt(sq_err_pred / sum_i p_i ||v_i - o||^2)"
    ),
    Column("entropy", F64, "entropy of the clean weights, nats"),
    N_EFF,
    GRAD_SQ,
    Column("kappa", F64, "Var(e^eps)/E[e^eps]^2 of the noise law; +inf where it diverges"),
    Column("sq_err_pred", F64, "delta-method prediction kappa * grad_sq; +inf when kappa is"),
    Column(
        "sq_err_next",
        F64,
        "next-order prediction of sq_err from the trial's clean weights and values "
        "(docs/science.md §2.8): "
        "p2 where k* > 3, p1 where 2 < k* <= 3, with the heavy-tail term where k* < 5; +inf where "
        "k* <= 2 (kappa = inf), nan at an integer k*",
    ),
)

THEORY = (
    Column("kappa", F64, "Var(e^eps)/E[e^eps]^2; +inf where E[e^{2 eps}] diverges"),
    Column("kappa_finite", BOOL, "False flags kappa = +inf: the delta method does not apply"),
    Column(
        "noise_regime",
        STR,
        "delta (E[e^{k eps}] finite for k <= 4), delta_slow (kappa finite, E[e^{3 eps}] or E[e^{4 "
        "eps}] = inf), heavy (only E[e^eps] finite) or no_mean (E[e^eps] = inf)",
    ),
    Column(
        "moment_order",
        F64,
        "k* = sup{k : E[e^{k eps}] < inf}: +inf for gaussian and uniform, sqrt2/sigma (laplace), "
        "pi/(sqrt6 sigma) (gumbel), 0 (student_t)",
    ),
    Column(
        "finite_moment_order",
        I64,
        "highest integer k <= 4 with E[e^{k eps}] < inf (4: every moment of the next-order theory "
        "finite; >= 2: kappa finite)",
    ),
    Column("rel_err_uniform", F64, "sqrt(kappa / n): the predicted rel_err for uniform weights"),
)

EXTRA = (
    *paired_ratio(
        "err_ratio",
        "mean(sq_err) / mean(sq_err_pred), paired over trials; null when kappa is 0 or inf",
    ),
    Column(
        "kappa_sum_p2", F64, "kappa * mean(sum_i p_i^2): small means the delta method should hold"
    ),
    Column(
        "next_ratio",
        F64,
        "mean(sq_err_next) / mean(sq_err_pred): the err_ratio the next-order theory predicts; null "
        "where it has none",
    ),
    Column(
        "next_err_ratio",
        F64,
        "mean(sq_err) / mean(sq_err_next), paired over trials: 1 when the next-order theory is "
        "exact; null where it has none",
    ),
    Column("next_err_ratio_se", F64, "delta-method standard error of next_err_ratio"),
)


def trial_metrics(out: dict[str, np.ndarray], p, trials: int) -> dict[str, np.ndarray]:
    """The stored metrics of one point from a kernel's per-trial sums (sq_err, spread, grad_sq,
    entropy,
    n_eff and the next-order sums): the delta-method and next-order predictions beside the
    measurement."""
    k = kappa(p["noise"], p["noise_scale"])
    sq_err_pred = k * out["grad_sq"] if math.isfinite(k) else np.full(trials, np.inf)
    return {
        "sq_err": out["sq_err"],
        "rel_err": np.sqrt(safe_ratio(out["sq_err"], out["spread"])),
        "rel_err_pred": np.sqrt(safe_ratio(sq_err_pred, out["spread"])),
        "entropy": out["entropy"],
        "n_eff": out["n_eff"],
        "grad_sq": out["grad_sq"],
        "kappa": np.full(trials, k),
        "sq_err_pred": sq_err_pred,
        "sq_err_next": sq_err_next(out, p["noise"], p["noise_scale"]),
    }


def sq_err_next(stats: dict[str, np.ndarray], noise: str, sigma: float) -> np.ndarray:
    """Per trial, the next-order prediction of E||o~ - o||^2 (`delta_next.next_order_from_stats`) at
    the
    highest order this noise allows (`delta_next.prediction_order`); +inf where there is none (k*
    <= 2)."""
    order = delta_next.prediction_order(noise, sigma)
    if order is None:
        return np.full(len(stats["grad_sq"]), np.inf)
    return np.asarray(
        delta_next.next_order_from_stats(stats, noise, sigma, order), dtype=np.float64
    )


def theory(p) -> dict[str, object]:
    k = kappa(p["noise"], p["noise_scale"])
    return {
        "kappa": k,
        "kappa_finite": math.isfinite(k),
        "noise_regime": delta_next.regime(p["noise"], p["noise_scale"]),
        "moment_order": delta_next.moment_order(p["noise"], p["noise_scale"]),
        "finite_moment_order": delta_next.finite_moment_order(p["noise"], p["noise_scale"]),
        "rel_err_uniform": math.sqrt(k / p["n"]),
    }


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    ratio: dict[str, float | None] = {
        k: (None if math.isnan(v) else v)
        for k, v in ratio_of_means(metrics["sq_err"], metrics["sq_err_pred"]).items()
    }
    nxt = {
        k: (None if math.isnan(v) else v)
        for k, v in ratio_of_means(metrics["sq_err"], metrics["sq_err_next"]).items()
    }
    predicted = np.mean(metrics["sq_err_pred"])
    next_ratio = (
        float(np.mean(metrics["sq_err_next"]) / predicted) if 0 < predicted < math.inf else math.nan
    )
    k = metrics["kappa"][0]
    return {
        "err_ratio": ratio["mean"],
        "err_ratio_se": ratio["se"],
        "err_ratio_ci_low": ratio["ci_low"],
        "err_ratio_ci_high": ratio["ci_high"],
        "kappa_sum_p2": float(k * np.mean(1.0 / metrics["n_eff"]))
        if math.isfinite(k)
        else math.inf,
        "next_ratio": None if not math.isfinite(next_ratio) else next_ratio,
        "next_err_ratio": nxt["mean"],
        "next_err_ratio_se": nxt["se"],
    }
