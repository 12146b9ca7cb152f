"""Kind `recall_training`: trainability of one softmax attention head from its initial scale
(associative recall, docs/science.md §6.1-§6.3).

A trial is one complete training run from its own seed. The weight scale sets the initial logit
spread (std ~ scale^2, the x-axis of `init_gradient`); the question is whether a start with
one-hot weights (entropy ~ 0, vanishing logit gradient) can be trained, by SGD or by Adam.

Diverged runs store +inf losses and NaN entropies (kernel.py); their summary: `finite_metrics`
(means over the finite runs, with counts), medians and quartiles over all runs (+inf last), the
share of runs that reached the loss threshold, and `diverged_mean`, the divergence rate.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from attnsim.kernels.training import CHECKPOINTS, OPTIMISERS, quantiles
from attnsim.kinds.base import Column, Kind, Param
from attnsim.kinds.columns import F64, I64, LOG_N, STR, d_param
from attnsim.kinds.recall_training import kernel

LOSSES = (*(f"loss_ckpt_{j}" for j in range(CHECKPOINTS)), "final_loss")

PARAMS = (
    Param("n", I64, "key/value pairs per example (the target is one of them)", minimum=2, maximum=4096),
    d_param("dimension of keys, values and queries (unit vectors); W_q, W_k, W_v are d x d", minimum=2),
    Param("batch", I64, "training examples per step (fresh each step)", minimum=1, maximum=4096),
    Param("scale", F64, "std of the initial entries of W_q and W_k (logit std ~ scale^2); W_v ~ N(0, 1/d) always", exclusive_minimum=0, maximum=10000),
    Param("optimiser", STR, "sgd, or adam (beta1 0.9, beta2 0.999, eps 1e-8)", choices=OPTIMISERS),
    Param("lr", F64, "learning rate", exclusive_minimum=0, maximum=1e6),
    Param("steps", I64, "optimiser steps per run", minimum=1, maximum=100000),
)

METRICS = tuple(Column(name, F64, doc) for name, doc in kernel.METRICS.items())
FINITE = (*LOSSES, "steps_to_threshold", "final_entropy", "diverged_step")

THEORY = (
    LOG_N,
    Column("chance_loss", F64, "1 - 1/n: the loss of predicting the mean value (losses are reported as fractions of it)"),
    Column("logit_std", F64, "scale^2 sqrt(1 + query_noise^2): std of the initial logits over the weights (unit keys, query norm^2 ~ 1 + query_noise^2)"),
    Column("entropy_small_scale", F64, "log n - logit_std^2 / 2: the small-scale entropy law (docs/science.md §3.3), valid while logit_std << 1"),
    Column("threshold", F64, f"loss / chance that counts as learnt ({kernel.DEFAULTS['threshold']}): steps_to_threshold and reached_share"),
)

EXTRA = (
    *(
        Column(f"{m}_{q}", F64, f"{label} over all trials of {m} (+inf, a diverged run, ranks last)")
        for m in LOSSES
        for q, label in (("q25", "lower quartile"), ("median", "median"), ("q75", "upper quartile"))
    ),
    Column("init_grad_logits_median", F64, "median over trials of init_grad_logits: the typical start (the mean is set by rare near-ties of the top logits)"),
    Column("init_grad_qk_median", F64, "median over trials of init_grad_qk"),
    Column("steps_to_threshold_median", F64, "median over all trials of steps_to_threshold (+inf if fewer than half reached it)"),
    Column("reached_share", F64, "share of trials whose monitor loss reached the threshold (finite steps_to_threshold)"),
    Column("reached_ci_low", F64, "lower end of the 95% Wilson interval of reached_share"),
    Column("reached_ci_high", F64, "upper end of the 95% Wilson interval of reached_share"),
)


def wilson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (sensible at 0 and at 1, unlike the t-interval)."""
    if trials == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if successes == 0 else low), (1.0 if successes == trials else high)  # exact at the ends (no rounding residue)


def bytes_per_trial(p) -> int:
    return kernel.bytes_per_trial(int(p["n"]), int(p["d"]), int(p["batch"]))


def theory(p) -> dict[str, object]:
    sigma = float(p["scale"]) ** 2 * math.sqrt(1 + kernel.DEFAULTS["query_noise"] ** 2)
    return {
        "log_n": math.log(p["n"]),
        "chance_loss": kernel.chance_loss(int(p["n"])),
        "logit_std": sigma,
        "entropy_small_scale": math.log(p["n"]) - sigma**2 / 2,
        "threshold": kernel.DEFAULTS["threshold"],
    }


def extra_summary(metrics, p) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in LOSSES:
        out[f"{name}_q25"], out[f"{name}_median"], out[f"{name}_q75"] = quantiles(metrics[name])
    out["init_grad_logits_median"] = float(np.median(metrics["init_grad_logits"]))
    out["init_grad_qk_median"] = float(np.median(metrics["init_grad_qk"]))
    out["steps_to_threshold_median"] = quantiles(metrics["steps_to_threshold"], (0.5,))[0]
    reached, trials = int(np.isfinite(metrics["steps_to_threshold"]).sum()), len(metrics["steps_to_threshold"])
    out["reached_share"] = reached / trials
    out["reached_ci_low"], out["reached_ci_high"] = wilson(reached, trials)
    return out


def headline(s) -> str:
    """Per optimiser: share of runs reaching the threshold at the most one-hot start and at the best start."""
    parts = []
    for (optimiser, lr), rows in s.groupby(["optimiser", "lr"]):
        low = rows.loc[rows["init_entropy_mean"].idxmin()]
        best = rows.loc[rows["reached_share"].idxmax()]
        parts.append(
            f"{optimiser} lr {lr:g}: {low['reached_share']:.0%} of runs learn from scale {low['scale']:g} (H0 = {low['init_entropy_mean']:.2g} nats), "
            f"{best['reached_share']:.0%} from scale {best['scale']:g}"
        )
    return "; ".join(parts)


KIND = Kind(
    # a small valid experiment: the docs' examples and the scale tests (which lengthen its numeric lists)
    example={"trials": 8, "grid": {"n": [8, 16], "d": [8, 16], "batch": [32], "scale": [0.1, 1.0], "optimiser": ["sgd"], "lr": [4.0], "steps": [50]}},
    name="recall_training",
    package=__name__,
    description="attention trained on associative recall from initial weight scales 0.1 ... 100: does a one-hot start train?",
    params=PARAMS,
    stream_params=kernel.STREAM_PARAMS,
    metrics=METRICS,
    theory_columns=THEORY,
    algorithm_version=1,
    bytes_per_trial=bytes_per_trial,
    simulate_block=kernel.simulate_block,
    theory=theory,
    main_metric="final_accuracy",
    figures=("trainability", "learning_curves"),
    headline=headline,
    extra_columns=EXTRA,
    extra_summary=extra_summary,
    finite_metrics=FINITE,
)
