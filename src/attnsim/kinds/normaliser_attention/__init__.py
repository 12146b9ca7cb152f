"""Kind `normaliser_attention`: the essay's robustness and information arguments under the
normalisers proposed instead of softmax (sigmoid, SSMax, soft-capping, a sink logit, softpick,
sparsemax, 1.5-entmax, ReLU), on identical draws (docs/science.md §12).

A kind of its own rather than a `normaliser` axis on noisy_attention and logit_entropy: a
parameter with a default still enters every point id (records/grid.py), so the axis would renew
every softmax id, and those kinds' kernels and claims are written for softmax's multiplicative
noise (the delta method's kappa, the next-order theory)."""

from __future__ import annotations

import math

from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import F64, I64, LOG_N, STR, N, d_param, normaliser_param, paired_ratio
from attnsim.kinds.normaliser_attention import kernel
from attnsim.stats import ratio_of_means
from attnsim.subjects import known, normalisers
from attnsim.theory import normalisers as th

PARAMS = (
    normaliser_param(),
    N,
    d_param("dimension of the values"),
    Param(
        "logit_scale",
        F64,
        "std of the clean logits s_i ~ N(0, logit_scale^2); > 0 (ReLU and softpick weights "
        "vanish at 0)",
        exclusive_minimum=0,
        maximum=10000,
    ),
    Param("noise_scale", F64, "std sigma of the gaussian logit noise", minimum=0, maximum=10),
    Param("noise_draws", I64, "noisy outputs K per trial", minimum=1, maximum=1024),
)

METRICS = (
    Column("sq_err", F64, "mean over the K noisy draws of ||o~_k - o||^2"),
    Column(
        "sq_err_pred",
        F64,
        "predicted E||o~ - o||^2 (§12.2): exact for sigmoid and ReLU, the delta method for "
        "softmax, SSMax and the sink, first order for the others",
    ),
    Column("bias", F64, "relative bias along the clean output <mean_k o~_k - o, o> / ||o||^2"),
    Column("bias_pred", F64, "the predicted relative bias along o (§12.2)"),
    Column(
        "bias_unexplained",
        F64,
        "(bias - bias_pred) / (E[e^eps] - 1): the bias theory leaves unexplained, in units of the "
        "noise's mean factor (sigmoid's whole bias is 1 unit); 0 at noise_scale 0",
    ),
    Column("entropy", F64, "entropy of the clean weights p / sum p, nats"),
    Column("entropy_norm", F64, "entropy / log n"),
    Column("mass", F64, "total clean weight sum_i p_i (1 for the normalised maps)"),
    Column("grad_sq", F64, "||do/ds||_F^2 of the clean output: the first-order noise sensitivity"),
)

THEORY = (
    LOG_N,
    Column("mean_exp_minus_1", F64, "E[e^eps] - 1 = e^{sigma^2/2} - 1: sigmoid's bias factor"),
    Column("cosine_floor", F64, "largest log n - H under cosine logits at tau = 1 (§12.4)"),
    Column(
        "entropy_limit",
        F64,
        "entropy of p / sum p as logit_scale -> infinity (§12.3), n large",
    ),
    Column(
        "cancels_mean",
        STR,
        "yes / partly / no: does the normalisation cancel E[e^eps] (null: not known for the map)",
    ),
)

EXTRA = paired_ratio("err_ratio", "mean(sq_err) / mean(sq_err_pred), paired over trials")


def bytes_per_trial(p) -> int:
    return kernel.bytes_per_trial(int(p["n"]), int(p["d"]), int(p["noise_draws"]))


def simulate_block(rng, trials, points):
    first = points[0]
    draws = kernel.draw(rng, trials, first["n"], first["d"], first["noise_draws"])
    return [
        kernel.simulate(draws, p["normaliser"], p["logit_scale"], p["noise_scale"]) for p in points
    ]


def extra_summary(metrics, p) -> dict[str, object]:
    """The paired ratio of measured to predicted error (null at noise_scale 0: no error)."""
    ratio = ratio_of_means(metrics["sq_err"], metrics["sq_err_pred"])
    return {
        f"err_ratio{'' if k == 'mean' else '_' + k}": (None if math.isnan(v) else v)
        for k, v in ratio.items()
    }


def theory(p) -> dict[str, object]:
    name, n = p["normaliser"], int(p["n"])
    cancels = normalisers.get(name).cancels_noise_mean
    return {
        "log_n": math.log(n),
        "mean_exp_minus_1": math.expm1(p["noise_scale"] ** 2 / 2),
        "cosine_floor": th.cosine_floor(name, n),
        "entropy_limit": th.large_scale_entropy(name, n),
        "cancels_mean": cancels if known(cancels) else None,
    }


def headline(s) -> str:
    """The bias along o per normaliser at the largest noise scale, in units of E[e^eps] - 1."""
    if not len(s) or s["noise_scale"].max() <= 0:
        return ""
    top = s[s["noise_scale"] == s["noise_scale"].max()]
    bias = (top["bias_mean"] / top["mean_exp_minus_1"]).groupby(top["normaliser"]).median()
    return "bias / (E[e^ε] − 1): " + ", ".join(f"{k} {v:.2f}" for k, v in bias.items())


KIND = Kind(
    name="normaliser_attention",
    description="attention output under logit noise and the weights' entropy, per normaliser "
    "(softmax and its rivals) on identical draws",
    package=__name__,
    algorithm_version=1,
    schema=Schema(
        params=PARAMS,
        stream_params=("n", "d", "logit_scale", "noise_draws"),
        metrics=METRICS,
        main_metric="bias",
    ),
    compute=Compute(
        simulate_block=simulate_block,
        bytes_per_trial=bytes_per_trial,
        counts=lambda p: kernel.counts(
            int(p["n"]), int(p["d"]), int(p["noise_draws"]), p["normaliser"]
        ),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(extra_columns=EXTRA, extra=extra_summary),
    presentation=Presentation(
        figures=("bias_by_normaliser", "error_vs_n_by_normaliser", "verdict_matrix"),
        # drawn from the kind's judged claims (every normalisers experiment's rows at once)
        claims_figures=("verdict_matrix",),
        headline=headline,
    ),
    example={
        "trials": 50,
        "grid": {
            "normaliser": [normalisers.SOFTMAX.name, normalisers.SIGMOID.name],
            "n": [16, 64],
            "d": [8],
            "logit_scale": [0.5],
            "noise_draws": [8],
            "noise_scale": [0.1, 0.5],
        },
    },
)
