"""Kind `init_gradient`: size of the logit gradient of attention at initialisation vs the weight
scale (docs/science.md §3.6).

Large dot-product logits make the weights one-hot: the entropy, the softmax Jacobian and
the gradient of the output with respect to the logits all vanish together.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.base import Column, Compute, Kind, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import ENTROPY, F64, GRAD_SQ, LOG_N, N_EFF, N, d_param, scale_param
from attnsim.kinds.init_gradient import kernel
from attnsim.theory.entropy import effective_dot_product_scale, small_scale_entropy

PARAMS = (
    N,
    d_param("dimension of queries, keys and values"),
    scale_param(
        "scale",
        "std of the entries of q and k_i; logits s_i = q.k_i / sqrt(d); values v_i ~ N(0, I_d)",
    ),
)

METRICS = (
    ENTROPY,
    GRAD_SQ,
    Column("jacobian_fro", F64, "||diag(p) - p p^T||_F = sqrt(sum p^2 - 2 sum p^3 + (sum p^2)^2)"),
    N_EFF,
)

THEORY = (
    LOG_N,
    Column(
        "sigma_eff",
        F64,
        "effective logit std scale^2 (given q the logits are N(0, scale^2 ||q||^2 / d), ||q||^2/d "
        "-> scale^2)",
    ),
    Column(
        "entropy_small_scale", F64, "log n - sigma_eff^2 / 2, the small-scale entropy prediction"
    ),
    Column(
        "grad_sq_uniform",
        F64,
        "(d/n)(1 - 1/n): E[grad_sq] for uniform weights p = 1/n (scale -> 0)",
    ),
    Column("jacobian_fro_uniform", F64, "sqrt((1/n)(1 - 1/n)): jacobian_fro for uniform weights"),
)

EXTRA = (
    Column("entropy_median", F64, "median over trials of the entropy"),
    Column(
        "grad_sq_median",
        F64,
        "median over trials of grad_sq: the typical trial, where the mean is set by rare near-ties "
        "of the top logits",
    ),
    Column("jacobian_fro_median", F64, "median over trials of jacobian_fro"),
)


def bytes_per_trial(p) -> int:
    """Peak working set per trial of `kernel.simulate` (z, gaps, weights, one key chunk of values).
    Each further scale in the block adds 16 (d + 1) bytes per trial."""
    return kernel.bytes_per_trial(int(p["n"]), int(p["d"]))


def simulate_block(rng, trials, points):
    first = points[0]
    return kernel.simulate(rng, trials, first["n"], first["d"], [p["scale"] for p in points])


def theory(p) -> dict[str, object]:
    n, d = p["n"], p["d"]
    sigma = float(effective_dot_product_scale(d, p["scale"]))
    return {
        "log_n": math.log(n),
        "sigma_eff": sigma,
        "entropy_small_scale": float(small_scale_entropy(n, sigma)),
        "grad_sq_uniform": d / n * (1 - 1 / n),
        "jacobian_fro_uniform": math.sqrt((1 - 1 / n) / n),
    }


def extra_summary(metrics, p) -> dict[str, object]:
    return {
        f"{name}_median": float(np.median(metrics[name]))
        for name in ("entropy", "grad_sq", "jacobian_fro")
    }


def headline(s) -> str:
    """Entropy and gradient at the largest scale against the gradient's peak."""
    top = s[s["scale"] == s["scale"].max()]
    return (
        f"at scale {top['scale'].iloc[0]:g}: mean entropy ≤ {top['entropy_mean'].max():.2g} "
        f"nats, mean grad_sq ≤ {top['grad_sq_mean'].max():.2g} (peak "
        f"{s['grad_sq_mean'].max():.2g})"
    )


KIND = Kind(
    name="init_gradient",
    description=(
        "gradient of the attention output w.r.t. the logits and softmax Jacobian at initialisation "
        "vs the weight scale"
    ),
    package=__name__,
    algorithm_version=4,  # 4: grad_sq's sums in float32, relative to the runner-up (kernel doc)
    schema=Schema(params=PARAMS, stream_params=("n", "d"), metrics=METRICS, main_metric="grad_sq"),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"])),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(extreme_metrics=("entropy",), extra_columns=EXTRA, extra=extra_summary),
    presentation=Presentation(figures=("gradient_vs_entropy",), headline=headline),
    example={"trials": 100, "grid": {"n": [16, 256], "d": [16], "scale": [0.1, 1.0]}},
)
