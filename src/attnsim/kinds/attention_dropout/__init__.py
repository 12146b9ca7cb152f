"""Kind `attention_dropout`: attention dropout as noise that is not the essay's (docs/science.md
§11.6),
as transformers apply it (weights masked after the softmax, rescaled by 1/(1 - rate), not
renormalised) and as logit noise (eps = -inf on dropped keys, renormalised)."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.attention_dropout import kernel
from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import (
    F64,
    GRAD_SQ,
    I64,
    N_EFF,
    STR,
    N,
    d_param,
    scale_param,
    with_ci,
)
from attnsim.stats import ratio_of_means
from attnsim.theory import dropout

PARAMS = (
    N,
    d_param("dimension of the values"),
    scale_param("logit_scale", "std of the logits s_i ~ N(0, logit_scale^2)"),
    Param(
        "value_mean",
        F64,
        "norm of the values' common mean: v_i = z_i + value_mean e_1, z_i ~ N(0, I)",
        minimum=0,
        maximum=1000,
    ),
    Param("noise_draws", I64, "dropout masks K per row", minimum=2, maximum=4096),
    Param("rate", F64, "dropout probability of a key", minimum=0, maximum=0.99),
    Param(
        "form",
        STR,
        "transformers (masked after softmax, x 1/(1 - rate), not renormalised) or logit (eps = "
        "-inf, renormalised)",
        choices=kernel.FORMS,
    ),
)

METRICS = (
    Column("sq_err", F64, "mean over the K masks of ||o~ - o||^2"),
    Column(
        "sq_err_exact",
        F64,
        "transformers form: rate/(1 - rate) sum p^2 ||v||^2, exact (nan for the logit form)",
    ),
    Column(
        "sq_err_iid",
        F64,
        "the essay's delta method kappa sum p^2 ||v - o||^2 with kappa = rate/(1 - rate)",
    ),
    Column(
        "sq_err_next",
        F64,
        "logit form: the next order p2 of docs/science.md §2.8 with the Bernoulli moments (nan "
        "for transformers)",
    ),
    Column("ratio_exact", F64, "sq_err / sq_err_exact of the row"),
    Column("ratio_iid", F64, "sq_err / sq_err_iid of the row"),
    Column("ratio_next", F64, "sq_err / sq_err_next of the row"),
    Column("bias_sq", F64, "unbiased estimate of ||E_mask o~ - o||^2 from the K masks"),
    Column(
        "bias_sq_pred",
        F64,
        "its prediction: 0 (transformers: E w~ = p), kappa^2 ||sum p^2 (v - o)||^2 (logit form, "
        "leading order)",
    ),
    Column("value_sq", F64, "sum p^2 ||v||^2"),
    GRAD_SQ,
    Column("spread", F64, "sum p ||v - o||^2"),
    Column("entropy", F64, "entropy of the clean weights, nats"),
    N_EFF,
    Column("all_dropped", F64, "share of the row's masks that dropped every key"),
)

THEORY = (
    Column("kappa", F64, "rate / (1 - rate): kappa of e^eps in {0, 1}"),
    Column(
        "first_correction",
        F64,
        "|3 kappa^2 - 2 mu3| / kappa of the Bernoulli law: the delta method's first correction is "
        "this times sum p^2",
    ),
    Column("all_dropped_prob", F64, "rate^n: the chance a mask drops every key"),
)


def theory(p) -> dict[str, object]:
    rate = float(p["rate"])
    return {
        "kappa": dropout.kappa(rate),
        "first_correction": dropout.first_correction(rate),
        "all_dropped_prob": dropout.all_dropped(rate, int(p["n"])),
    }


EXTRA = (
    *with_ci("err_ratio_exact", "mean(sq_err) / mean(sq_err_exact), paired"),
    *with_ci("err_ratio_iid", "mean(sq_err) / mean(sq_err_iid), paired"),
    *with_ci("err_ratio_next", "mean(sq_err) / mean(sq_err_next), paired"),
    Column(
        "value_factor",
        F64,
        "mean(value_sq) / mean(grad_sq): the exact transformers-form error over the essay's "
        "formula",
    ),
    Column(
        "delta_correction",
        F64,
        "logit form: |mean(sq_err_next) / mean(sq_err_iid) - 1|, the delta method's correction "
        "the next order predicts from the same rows (the regime's control variable; "
        "transformers: first_correction * mean sum p^2)",
    ),
)


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in ("exact", "iid", "next"):
        pred = metrics[f"sq_err_{name}"]
        r = ratio_of_means(metrics["sq_err"], pred) if np.all(np.isfinite(pred)) else {}
        for suffix, key in (("", "mean"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
            value = r.get(key, math.nan)
            out[f"err_ratio_{name}{suffix}"] = None if math.isnan(value) else value
    out["value_factor"] = (
        float(np.mean(metrics["value_sq"]) / np.mean(metrics["grad_sq"]))
        if np.mean(metrics["grad_sq"]) > 0
        else None
    )
    nxt, iid = metrics["sq_err_next"], metrics["sq_err_iid"]
    if np.all(np.isfinite(nxt)) and np.mean(iid) > 0:
        out["delta_correction"] = abs(float(np.mean(nxt) / np.mean(iid)) - 1.0)
    else:
        out["delta_correction"] = dropout.first_correction(float(p["rate"])) * float(
            np.mean(1.0 / metrics["n_eff"])
        )
    return out


def headline(s) -> str:
    rows = s[s["rate"] > 0]
    parts = []
    for form, part in rows.groupby("form"):
        parts.append(
            f"{form}: measured / essay's delta "
            f"{part['ratio_iid_mean'].min():.3f}-{part['ratio_iid_mean'].max():.3f}"
        )
    return "; ".join(parts)


KIND = Kind(
    name="attention_dropout",
    description=(
        "attention dropout (transformers' and as logit noise) vs the essay's delta method and the "
        "exact law"
    ),
    package=__name__,
    algorithm_version=1,
    schema=Schema(
        params=PARAMS,
        stream_params=("n", "d", "logit_scale", "value_mean", "noise_draws"),
        metrics=METRICS,
        main_metric="sq_err",
    ),
    compute=Compute(
        bytes_per_trial=lambda p: kernel.bytes_per_trial(
            int(p["n"]), int(p["d"]), int(p["noise_draws"])
        ),
        simulate_block=kernel.simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"]), int(p["noise_draws"])),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(
        # NaN where a quantity does not apply at a point (attnsim.jobs.validate)
        nonfinite_metrics=("sq_err_next", "ratio_next", "sq_err_exact", "ratio_exact", "ratio_iid"),
        extra_columns=EXTRA,
        extra=extra_summary,
        extreme_metrics=("entropy",),
    ),
    presentation=Presentation(figures=("dropout_error",), headline=headline),
    example={
        "trials": 100,
        "grid": {
            "n": [64, 256],
            "d": [16],
            "logit_scale": [0.5, 1.5],
            "value_mean": [0.0, 2.0],
            "noise_draws": [8],
            "rate": [0.1, 0.3],
            "form": ["transformers", "logit"],
        },
    },
)
