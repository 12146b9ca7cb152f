"""Kind `contrastive_training`: InfoNCE training of a linear encoder across temperatures
(docs/science.md §6.4-§6.6).

A trial is one complete training run from its own seed (its own classes, embedding, initial
weights and data). Per run: the final loss beside its floor at this tau, the batch softmax
entropy during training beside its floor log n - g_n(tau), alignment, uniformity and a held-out
probe. Tests whether tau = 1 (entropy pinned near log n) gives worse representations than a
small tau, as the essay argues.

Diverged runs store +inf losses and NaN entropies/geometry (kernel.py); the summary treats them
as in `recall_training` (finite_metrics, medians with +inf last, `diverged_mean` = the rate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from attnsim.errors import ConfigError
from attnsim.kernels.training import CHECKPOINTS, OPTIMISERS, quantiles
from attnsim.kinds.base import Column, Kind, Param
from attnsim.kinds.columns import F64, I64, LOG_N, STR
from attnsim.kinds.contrastive_training import kernel

LOSSES = (*(f"loss_ckpt_{j}" for j in range(CHECKPOINTS)), "final_loss")


def _dim(name: str, doc: str) -> Param:
    return Param(name, I64, doc, minimum=2, maximum=4096)


PARAMS = (
    Param("n", I64, "examples per batch: each anchor's softmax is over n candidates", minimum=2, maximum=4096),
    _dim("classes", "number of latent classes C (2 <= C <= n); class points uniform on the unit sphere of R^latent_dim"),
    _dim("latent_dim", "dimension k of the latent class points"),
    _dim("input_dim", "dimension D of the inputs (>= latent_dim): class point embedded by a random isometry, plus noise"),
    _dim("embed_dim", "dimension of the encoder's output z = W x / ||W x||"),
    Param("view_noise", F64, "norm of each view's Gaussian noise (the signal has norm 1)", minimum=0, maximum=1000),
    Param("tau", F64, "temperature: logits are cosines / tau", exclusive_minimum=0, maximum=10000),
    Param("optimiser", STR, "sgd, or adam (beta1 0.9, beta2 0.999, eps 1e-8)", choices=OPTIMISERS),
    Param("lr", F64, "learning rate", exclusive_minimum=0, maximum=1e6),
    Param("steps", I64, "optimiser steps per run (one batch of n examples each)", minimum=1, maximum=100000),
)

SETTING = [p.name for p in PARAMS if p.name != "tau"]  # a curve of the figure / a comparison of the claims: everything but tau

METRICS = tuple(Column(name, F64, doc) for name, doc in kernel.METRICS.items())
FINITE = (*LOSSES, "entropy_min", "final_entropy", "alignment", "uniformity", "diverged_step")

THEORY = (
    LOG_N,
    Column("entropy_gap", F64, "g_n(tau): exact finite-n worst case of log n - H for logits cos / tau (attnsim.theory.entropy.exact_gap)"),
    Column("entropy_gap_asymptotic", F64, "g(tau): the n -> inf worst case; g(1) = 0.4745"),
    Column("entropy_floor", F64, "log n - g_n(tau): no batch softmax entropy can be lower, whatever the encoder"),
    Column("loss_floor", F64, "E_M log(1 + M + (n - 1 - M) exp(-C / ((C - 1) tau))), M ~ Bin(n - 1, 1/C): floor of the expected loss with C classes"),
    Column("ideal_entropy", F64, "batch entropy of the encoder that attains loss_floor (classes collapsed to a regular simplex)"),
    Column("instance_loss_floor", F64, "log(1 + (n - 1) exp(-n / ((n - 1) tau))): the floor if every example were its own class"),
    Column("probe_chance", F64, "1 / C: the probe's chance accuracy"),
    Column("simplex_attainable", F64, "1 if C <= embed_dim + 1 (loss_floor can be attained), else 0"),
)

EXTRA = (
    *(
        Column(f"{m}_{q}", F64, f"{label} over all trials of {m} (+inf, a diverged run, ranks last)")
        for m in LOSSES
        for q, label in (("q25", "lower quartile"), ("median", "median"), ("q75", "upper quartile"))
    ),
    Column("entropy_lowest", F64, "smallest entropy_min over the point's non-diverged trials: the lowest batch entropy any run reached in training"),
    Column("entropy_lowest_excess", F64, "entropy_lowest - entropy_floor: >= 0 while every run respects the floor"),
    Column("entropy_floor_tolerance", F64, "float64 rounding allowance on entropy >= entropy_floor: 1e-12 (1 + log n + 2/tau) nats"),
)


def bytes_per_trial(p) -> int:
    return kernel.bytes_per_trial(int(p["n"]), int(p["input_dim"]), int(p["embed_dim"]), int(p["classes"]))


def check_grid(grid: Mapping[str, list]) -> None:
    """Combinations the schema cannot refuse: more classes than examples per batch, inputs narrower than the latent space."""
    if max(grid["classes"]) > min(grid["n"]):
        raise ConfigError(f"grid.classes: {max(grid['classes'])} classes but batches of n = {min(grid['n'])} examples; need classes <= n for every combination")
    if min(grid["input_dim"]) < max(grid["latent_dim"]):
        raise ConfigError(
            f"grid.input_dim: {min(grid['input_dim'])} is below latent_dim = {max(grid['latent_dim'])}; need input_dim >= latent_dim for every combination"
        )


def theory(p) -> dict[str, object]:
    return kernel.theory(p)


def extra_summary(metrics, p) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in LOSSES:
        out[f"{name}_q25"], out[f"{name}_median"], out[f"{name}_q75"] = quantiles(metrics[name])
    finite = metrics["entropy_min"][np.isfinite(metrics["entropy_min"])]
    lowest = float(finite.min()) if finite.size else float("nan")
    out["entropy_lowest"] = lowest
    out["entropy_lowest_excess"] = lowest - kernel.theory(p)["entropy_floor"]
    out["entropy_floor_tolerance"] = 1e-12 * (1 + math.log(p["n"]) + 2 / p["tau"])  # float64 rounding of H and of the floor
    return out


def headline(s) -> str:
    """Probe accuracy at tau = 1 against the best tau."""
    best = s.loc[s["probe_accuracy_mean"].idxmax()]
    text = f"best probe accuracy {best['probe_accuracy_mean']:.3f} at τ = {best['tau']:g}"
    one = s[np.isclose(s["tau"], 1.0)]
    if len(one):
        text += f"; at τ = 1: {one['probe_accuracy_mean'].min():.3f}, lowest training entropy − floor {one['entropy_lowest_excess'].min():.3f} nats"
    return text


KIND = Kind(
    # a small valid experiment: the docs' examples and the scale tests (which lengthen its last float list)
    example={"trials": 8, "grid": {"n": [16, 32], "classes": [8, 16], "latent_dim": [8], "input_dim": [32], "embed_dim": [8], "view_noise": [2.0], "tau": [0.1, 0.2], "optimiser": ["adam"], "lr": [0.01], "steps": [50]}},
    name="contrastive_training",
    package=__name__,
    description="InfoNCE training of a linear encoder across temperatures: loss and entropy floors, alignment, uniformity, probe accuracy",
    params=PARAMS,
    stream_params=kernel.STREAM_PARAMS,
    metrics=METRICS,
    theory_columns=THEORY,
    algorithm_version=1,
    bytes_per_trial=bytes_per_trial,
    simulate_block=kernel.simulate_block,
    theory=theory,
    main_metric="probe_accuracy",
    figures=("temperature_sweep",),
    headline=headline,
    extra_columns=EXTRA,
    extra_summary=extra_summary,
    finite_metrics=FINITE,
    check_grid=check_grid,
)
