"""Kind `noisy_attention`: how far i.i.d. logit noise moves the attention output (docs/science.md §2)."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.base import Column, Kind, Param
from attnsim.kinds.columns import BOOL, F64, GRAD_SQ, I64, N_EFF, STR, N, d_param, scale_param
from attnsim.kinds.noisy_attention import kernel
from attnsim.stats import ratio_of_means
from attnsim.theory.noise import NOISE_FAMILIES, kappa, regime

PARAMS = (
    N,
    d_param("dimension of the values"),
    scale_param("logit_scale", "std of the clean logits s_i ~ N(0, logit_scale^2)"),
    Param(
        "noise",
        STR,
        "noise family: gaussian, uniform, laplace, gumbel or student_t (3 dof), standardised to std noise_scale (docs/science.md §1.3)",
        choices=NOISE_FAMILIES,
    ),
    Param("noise_draws", I64, "noisy outputs K per trial, each with fresh noise", minimum=1, maximum=4096),
    Param("noise_scale", F64, "std sigma of the logit noise", minimum=0, maximum=100),
)

METRICS = (
    Column("sq_err", F64, "mean over the K noisy draws of ||o~_k - o||^2"),
    Column("rel_err", F64, "sqrt(sq_err / sum_i p_i ||v_i - o||^2); 0 when both are 0"),
    Column("rel_err_pred", F64, "delta-method rel_err: sqrt(sq_err_pred / sum_i p_i ||v_i - o||^2)"),
    Column("entropy", F64, "entropy of the clean weights, nats"),
    N_EFF,
    GRAD_SQ,
    Column("kappa", F64, "Var(e^eps)/E[e^eps]^2 of the noise law; +inf where it diverges"),
    Column("sq_err_pred", F64, "delta-method prediction kappa * grad_sq; +inf when kappa is"),
)

THEORY = (
    Column("kappa", F64, "Var(e^eps)/E[e^eps]^2; +inf where E[e^{2 eps}] diverges"),
    Column("kappa_finite", BOOL, "False flags kappa = +inf: the delta method does not apply"),
    Column("noise_regime", STR, "delta (kappa finite), heavy (only E[e^eps] finite) or no_mean (E[e^eps] = inf)"),
    Column("rel_err_uniform", F64, "sqrt(kappa / n): the predicted rel_err for uniform weights"),
)

EXTRA = (
    Column("err_ratio", F64, "mean(sq_err) / mean(sq_err_pred), paired over trials; null when kappa is 0 or inf"),
    Column("err_ratio_se", F64, "delta-method standard error of err_ratio"),
    Column("err_ratio_ci_low", F64, "lower end of the 95% interval of err_ratio"),
    Column("err_ratio_ci_high", F64, "upper end of the 95% interval of err_ratio"),
    Column("kappa_sum_p2", F64, "kappa * mean(sum_i p_i^2): small means the delta method should hold"),
)


def bytes_per_trial(p) -> int:
    """Peak working set per trial of `kernel.simulate` (logits, noise, one key chunk, a group of
    scales; see there). Beyond 8 noise scales sharing a block, each adds 8 K (d + 1) bytes per
    trial when n takes several key chunks (their float64 sums)."""
    return kernel.bytes_per_trial(int(p["n"]), int(p["d"]), int(p["noise_draws"]))


def simulate_block(rng, trials, points):
    first = points[0]
    per_scale = kernel.simulate(
        rng, trials, first["n"], first["d"], first["logit_scale"], first["noise"], first["noise_draws"], [p["noise_scale"] for p in points]
    )
    results = []
    for p, out in zip(points, per_scale):
        k = kappa(p["noise"], p["noise_scale"])
        sq_err_pred = k * out["grad_sq"] if math.isfinite(k) else np.full(trials, np.inf)
        results.append(
            {
                "sq_err": out["sq_err"],
                "rel_err": np.sqrt(kernel.safe_ratio(out["sq_err"], out["spread"])),
                "rel_err_pred": np.sqrt(kernel.safe_ratio(sq_err_pred, out["spread"])),
                "entropy": out["entropy"],
                "n_eff": out["n_eff"],
                "grad_sq": out["grad_sq"],
                "kappa": np.full(trials, k),
                "sq_err_pred": sq_err_pred,
            }
        )
    return results


def theory(p) -> dict[str, object]:
    k = kappa(p["noise"], p["noise_scale"])
    return {
        "kappa": k,
        "kappa_finite": math.isfinite(k),
        "noise_regime": regime(p["noise"], p["noise_scale"]),
        "rel_err_uniform": math.sqrt(k / p["n"]),
    }


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    ratio = ratio_of_means(metrics["sq_err"], metrics["sq_err_pred"])
    ratio = {k: (None if math.isnan(v) else v) for k, v in ratio.items()}
    k = metrics["kappa"][0]
    return {
        "err_ratio": ratio["mean"],
        "err_ratio_se": ratio["se"],
        "err_ratio_ci_low": ratio["ci_low"],
        "err_ratio_ci_high": ratio["ci_high"],
        "kappa_sum_p2": float(k * np.mean(1.0 / metrics["n_eff"])) if math.isfinite(k) else math.inf,
    }


def headline(s) -> str:
    """Measured over predicted squared error where the delta method applies, and how many points have kappa = inf."""
    ok = s[s["kappa_finite"] & (s["kappa"] > 0) & (s["kappa_sum_p2"] < 0.01)]
    parts = []
    if len(ok):
        parts.append(
            f"measured/predicted sq_err where κΣp² < 0.01: median {np.median(ok['err_ratio']):.3f} (range {ok['err_ratio'].min():.3f}–{ok['err_ratio'].max():.3f}, {len(ok)} points)"
        )
    infinite = int((~s["kappa_finite"]).sum())
    if infinite:
        parts.append(f"κ = ∞ flagged on {infinite} points")
    return "; ".join(parts)


KIND = Kind(
    name="noisy_attention",
    package=__name__,
    figures=("rel_err_vs_n", "collapse"),
    headline=headline,
    extreme_metrics=("entropy",),
    description="attention output under i.i.d. logit noise vs the delta-method prediction",
    params=PARAMS,
    stream_params=("n", "d", "logit_scale", "noise", "noise_draws"),
    metrics=METRICS,
    theory_columns=THEORY,
    algorithm_version=2,
    bytes_per_trial=bytes_per_trial,
    simulate_block=simulate_block,
    theory=theory,
    main_metric="rel_err",
    extra_columns=EXTRA,
    extra_summary=extra_summary,
    constant_metrics=("kappa",),
    block_factor=2,  # small n: the K x d outputs per scale are as large as the inputs; bigger blocks amortise the calls
)
