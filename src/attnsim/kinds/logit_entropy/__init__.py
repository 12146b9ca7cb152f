"""Kind `logit_entropy`: entropy of the attention weights vs the scale of the logits
(docs/science.md §3)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import F64, LOG_N, STR, N, d_param, scale_param
from attnsim.kinds.logit_entropy import kernel
from attnsim.theory.entropy import (
    effective_dot_product_scale,
    rem_entropy,
    rem_regime,
    rem_x,
    small_scale_entropy,
)

PARAMS = (
    N,
    d_param("dimension of queries and keys (used by dot_product logits only)"),
    Param(
        "logits",
        STR,
        "gaussian: s_i ~ N(0, scale^2); dot_product: s_i = q.k_i / sqrt(d), entries of q, k_i ~ "
        "N(0, scale^2)",
        choices=kernel.LOGITS,
    ),
    scale_param(
        "scale", "std of the logits (gaussian) or of the entries of q and k_i (dot_product)"
    ),
)

METRICS = (
    Column("entropy", F64, "entropy H = -sum_i p_i log p_i of the weights, nats, in [0, log n]"),
    Column("entropy_norm", F64, "H / log n, in [0, 1]"),
    Column("renyi2", F64, "Renyi-2 entropy -log sum_i p_i^2, nats"),
    Column("max_weight", F64, "largest weight max_i p_i"),
    Column("n_eff", F64, "effective number of keys 1 / sum_i p_i^2 = exp(renyi2)"),
)

THEORY = (
    LOG_N,
    Column(
        "sigma_eff",
        F64,
        "effective logit std sigma: scale (gaussian) or scale^2 (dot_product, ||q||^2/d -> "
        "scale^2)",
    ),
    Column(
        "entropy_small_scale",
        F64,
        "log n - sigma^2/2, the small-scale (self-averaging) prediction; negative values mean it "
        "no longer applies",
    ),
    Column("entropy_rem", F64, "random-energy-model asymptote log n (1 - x^2) for x < 1, 0 beyond"),
    Column(
        "rem_x", F64, "x = sigma / sqrt(2 log n): weights spread over ~n^(1-x^2) keys while x < 1"
    ),
    Column("regime", STR, "liquid (x < 1) or frozen (x >= 1: weights condense on O(1) keys)"),
)


def bytes_per_trial(p) -> int:
    # z (float32), the gaps and the weights buffer (float64): 20 bytes per key
    return 20 * int(p["n"]) + 128


def simulate_block(rng, trials, points):
    first = points[0]
    draws = kernel.draw(rng, trials, first["n"], first["d"], first["logits"])
    return kernel.simulate(draws, first["logits"], [p["scale"] for p in points])


def sigma_eff(p) -> float:
    if p["logits"] == "gaussian":
        return float(p["scale"])
    return float(effective_dot_product_scale(p["d"], p["scale"]))


def theory(p) -> dict[str, object]:
    n, sigma = p["n"], sigma_eff(p)
    return {
        "log_n": math.log(n),
        "sigma_eff": sigma,
        "entropy_small_scale": float(small_scale_entropy(n, sigma)),
        "entropy_rem": float(rem_entropy(n, sigma)),
        "rem_x": float(rem_x(n, sigma)),
        "regime": str(rem_regime(n, sigma)),
    }


def theory_table(c: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`theory` over columns: the theory module's functions take arrays."""
    n = np.asarray(c["n"], dtype=np.float64)
    scale = np.asarray(c["scale"], dtype=np.float64)
    gaussian = np.asarray(c["logits"]) == "gaussian"
    sigma = np.where(gaussian, scale, effective_dot_product_scale(np.asarray(c["d"]), scale))
    return {
        "log_n": np.array([math.log(v) for v in c["n"]]),  # math.log, as `theory` computes it
        "sigma_eff": sigma,
        "entropy_small_scale": small_scale_entropy(n, sigma),
        "entropy_rem": rem_entropy(n, sigma),
        "rem_x": rem_x(n, sigma),
        "regime": rem_regime(n, sigma),
    }


def headline(s) -> str:
    """How far the small-scale prediction log n - sigma^2/2 is from the measured entropy where sigma
    <= 0.3."""
    small = s[(s["logits"] == "gaussian") & (s["sigma_eff"] > 0) & (s["sigma_eff"] <= 0.3)]
    if not len(small):
        return ""
    worst = (small["entropy_mean"] - small["entropy_small_scale"]).abs().max()
    return f"|H − (log n − σ²/2)| ≤ {worst:.2g} nats where σ ≤ 0.3 ({len(small)} points)"


KIND = Kind(
    name="logit_entropy",
    description=(
        "entropy of softmax weights over gaussian or dot-product logits vs their scale, against "
        "small-scale and REM theory"
    ),
    package=__name__,
    algorithm_version=3,
    schema=Schema(
        params=PARAMS,
        stream_params=("n", "d", "logits"),
        metrics=METRICS,
        main_metric="entropy",
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"])),
    ),
    theory=Theory(columns=THEORY, point=theory, table=theory_table),
    summary=Summary(extreme_metrics=("entropy",)),
    presentation=Presentation(
        figures=("entropy_vs_scale", "entropy_collapse"),
        entropy_figure="entropy_vs_scale",
        # the small-scale law's boundary along the scale, drawn where its line is
        boundary_figures={"small_scale_entropy": "entropy_vs_scale"},
        headline=headline,
        # its figures bin a line's points and spread its values of n (figures.common)
        figure_points=1_000_000,
    ),
    example={
        "trials": 100,
        "grid": {
            "n": [16, 64],
            "d": [64],
            "logits": ["gaussian", "dot_product"],
            "scale": [0.1, 1.0],
        },
    },
)
