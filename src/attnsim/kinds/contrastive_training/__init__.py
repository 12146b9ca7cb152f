"""Kind `contrastive_training`: InfoNCE training of a linear encoder across temperatures
(docs/science.md §6.4-§6.6, §10).

A trial is one complete training run from its own seed (its own classes, embedding, initial
weights and data). Positives are two views of one instance (SimCLR-like) or of two instances of
one class (supervised-contrastive-like); the temperature is fixed or learnt (CLIP). Per run: the
final loss beside its floor at this tau, the batch softmax entropy during training beside its
floor log n - g_n(tau), alignment, uniformity, where the negative weight goes, the temperature's
trajectory and three held-out evaluations (nearest class mean, 5-NN, linear probe). Tests
whether tau = 1 (entropy pinned near log n) gives worse representations than a small tau, as
the essay argues, and where it does not.

Diverged runs store +inf losses and NaN entropies/geometry (kernel.py); the summary treats them
as in `recall_training` (finite_metrics, medians with +inf last, `diverged_mean` = the rate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from attnsim.errors import ConfigError
from attnsim.kernels.training import CHECKPOINTS, OPTIMISERS
from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import F64, I64, LOG_N, STR
from attnsim.kinds.contrastive_training import kernel
from attnsim.kinds.training_runs import LOSS_QUARTILES, LOSSES, LR, loss_quartiles, steps_param


def _dim(name: str, doc: str) -> Param:
    return Param(name, I64, doc, minimum=2, maximum=4096)


PARAMS = (
    Param(
        "n",
        I64,
        "examples per batch: each anchor's softmax is over n candidates",
        minimum=2,
        maximum=4096,
    ),
    _dim(
        "classes",
        "number of latent classes C (2 <= C <= n); class points uniform on the unit sphere of "
        "R^latent_dim",
    ),
    _dim("latent_dim", "dimension k of the latent class points"),
    _dim(
        "input_dim",
        "dimension D of the inputs (>= latent_dim): class point embedded by a random isometry, "
        "plus noise",
    ),
    _dim("embed_dim", "dimension of the encoder's output z = W x / ||W x||"),
    Param(
        "view_noise",
        F64,
        "norm of each view's Gaussian noise (the signal has norm 1)",
        minimum=0,
        maximum=1000,
    ),
    Param(
        "positives",
        STR,
        "the positive pair: 'class', two views of two instances of the class "
        "(supervised-contrastive-like); "
        "'instance', two views of one instance (SimCLR-like: same-class instances are negatives)",
        choices=kernel.POSITIVES,
        default="class",
    ),
    Param(
        "instance_noise",
        F64,
        "norm of each instance's Gaussian deviation from its class point (0: instances of a class "
        "are identical)",
        minimum=0,
        maximum=1000,
        default=0.0,
    ),
    Param(
        "tau",
        F64,
        "temperature: logits are cosines / tau (the initial temperature if learnt)",
        exclusive_minimum=0,
        maximum=10000,
    ),
    Param(
        "tau_mode",
        STR,
        "'fixed'; 'learned': t = log(1/tau) trained with the encoder (same optimiser and lr); "
        "'learned_clamped': the same with CLIP's clamp tau >= 0.01 after every step",
        choices=kernel.TAU_MODES,
        default="fixed",
    ),
    Param(
        "loss",
        STR,
        "'infonce' (symmetric InfoNCE); 'debiased': InfoNCE with the anchor's same-class negatives "
        "left out of both denominators (Chuang et al. 2020, labels known); 'siglip': the pairwise "
        "sigmoid loss with a learnt bias from -10 (Zhai et al. 2023); added after the kind had "
        "points, so the default is left out of point ids",
        choices=kernel.LOSS_FUNCTIONS,
        default="infonce",
        id_omits_default=True,
    ),
    Param(
        "bias_init",
        F64,
        "SigLIP's initial bias (loss siglip only): -10 as Zhai et al. 2023; the theory's start is "
        "-log(n - 1) (docs/science.md §10.9); added after the kind had points, so the default is "
        "left out of point ids",
        minimum=-100,
        maximum=100,
        default=kernel.SIGLIP_BIAS_INIT,
        id_omits_default=True,
    ),
    Param("optimiser", STR, "sgd, or adam (beta1 0.9, beta2 0.999, eps 1e-8)", choices=OPTIMISERS),
    LR,
    steps_param("optimiser steps per run (one batch of n examples each)"),
)

# a task (a curve of the figures, a comparison of the claims): everything but the temperature
SETTING = [p.name for p in PARAMS if p.name not in ("tau", "tau_mode")]

METRICS = tuple(Column(name, F64, doc) for name, doc in kernel.METRICS.items())
FINITE = (
    *LOSSES,
    "entropy_min",
    "entropy_floor_excess_min",
    "final_entropy",
    "alignment",
    "uniformity",
    "hardest_negative_share",
    "same_class_negative_share",
    "same_class_negative_count_share",
    *(f"{m}_ckpt_{j}" for m in ("entropy", "tau", "entropy_floor") for j in range(CHECKPOINTS)),
    "diverged_step",
)

THEORY = (
    LOG_N,
    Column(
        "entropy_gap",
        F64,
        "g_n(tau): exact finite-n worst case of log n - H for logits cos / tau "
        "(attnsim.theory.entropy.exact_gap)",
    ),
    Column("entropy_gap_asymptotic", F64, "g(tau): the n -> inf worst case; g(1) = 0.4745"),
    Column(
        "entropy_floor",
        F64,
        "log n - g_n(tau): no batch softmax entropy can be lower, whatever the encoder",
    ),
    Column(
        "loss_floor",
        F64,
        "E_M log(1 + M + (n - 1 - M) exp(-C / ((C - 1) tau))), M ~ Bin(n - 1, 1/C): floor of the "
        "expected loss with C classes",
    ),
    Column(
        "ideal_entropy",
        F64,
        "batch entropy of the encoder that attains loss_floor (classes collapsed to a regular "
        "simplex)",
    ),
    Column(
        "instance_loss_floor",
        F64,
        "log(1 + (n - 1) exp(-n / ((n - 1) tau))): the floor if every example were its own class",
    ),
    Column("probe_chance", F64, "1 / C: the probe's chance accuracy"),
    Column(
        "hardest_share_uniform", F64, "1 / (n - 1): hardest_negative_share under uniform weights"
    ),
    Column(
        "simplex_attainable", F64, "1 if C <= embed_dim + 1 (loss_floor can be attained), else 0"
    ),
)

EXTRA = (
    *LOSS_QUARTILES,
    Column(
        "entropy_lowest",
        F64,
        "smallest entropy_min over the point's non-diverged trials: the lowest batch entropy any "
        "run reached in training",
    ),
    Column(
        "entropy_lowest_excess",
        F64,
        "entropy_lowest - entropy_floor: >= 0 while every run respects the floor",
    ),
    Column(
        "entropy_floor_tolerance",
        F64,
        "float64 rounding allowance on entropy >= entropy_floor: 1e-12 (1 + log n + 2/tau) nats",
    ),
    Column(
        "entropy_excess_lowest",
        F64,
        "smallest entropy_floor_excess_min over the point's non-diverged trials: the closest any "
        "run's training batch came "
        "to the floor log n - g_n(tau_t) at its own temperature (learned tau included)",
    ),
    Column(
        "entropy_excess_tolerance",
        F64,
        "float64 rounding allowance at the smallest temperature reached: 1e-12 (1 + log n + "
        "2/tau_min) nats",
    ),
)


def bytes_per_trial(p) -> int:
    return kernel.bytes_per_trial(
        int(p["n"]), int(p["input_dim"]), int(p["embed_dim"]), int(p["classes"])
    )


def check_grid(grid: Mapping[str, list]) -> None:
    """Combinations the schema cannot refuse: more classes than examples per batch, inputs narrower
    than the latent space."""
    if max(grid["classes"]) > min(grid["n"]):
        raise ConfigError(
            f"grid.classes: {max(grid['classes'])} classes but batches of n = {min(grid['n'])} "
            f"examples; need classes <= n for every combination"
        )
    if min(grid["input_dim"]) < max(grid["latent_dim"]):
        raise ConfigError(
            f"grid.input_dim: {min(grid['input_dim'])} is below latent_dim = "
            f"{max(grid['latent_dim'])}; need input_dim >= latent_dim for every combination"
        )
    if "learned_clamped" in grid.get("tau_mode", []) and min(grid["tau"]) < kernel.TAU_CLAMP:
        raise ConfigError(
            f"grid.tau: {min(grid['tau'])} is below the clamp {kernel.TAU_CLAMP} of tau_mode "
            f"learned_clamped (tau is its initial value)"
        )


def theory(p) -> dict[str, object]:
    return dict(kernel.theory(p))


def extra_summary(metrics, p) -> dict[str, object]:
    out: dict[str, object] = loss_quartiles(metrics)
    finite = metrics["entropy_min"][np.isfinite(metrics["entropy_min"])]
    lowest = float(finite.min()) if finite.size else float("nan")
    out["entropy_lowest"] = lowest
    out["entropy_lowest_excess"] = lowest - kernel.theory(p)["entropy_floor"]
    # float64 rounding of H and of the floor
    out["entropy_floor_tolerance"] = 1e-12 * (1 + math.log(p["n"]) + 2 / p["tau"])
    excess = metrics["entropy_floor_excess_min"]
    excess = excess[np.isfinite(excess)]
    out["entropy_excess_lowest"] = float(excess.min()) if excess.size else float("nan")
    taus = np.concatenate(
        [metrics[f"tau_ckpt_{j}"] for j in range(CHECKPOINTS)] + [metrics["tau_final"], [p["tau"]]]
    )
    tau_min = float(np.min(taus[np.isfinite(taus) & (taus > 0)]))
    out["entropy_excess_tolerance"] = 1e-12 * (1 + math.log(p["n"]) + 2 / tau_min)
    return out


def headline(s) -> str:
    """Per positive kind: the best fixed tau (by its claim's accuracy) and the accuracy at tau = 1;
    the learned temperature's end point."""
    from attnsim.kinds.contrastive_training.besttau import CLAIM_METRIC, best_tau

    parts = []
    for positives, metric in CLAIM_METRIC.items():
        rows = s[(s["positives"] == positives) & (s["tau_mode"] == "fixed")]
        if rows.empty:
            continue
        best = rows.loc[rows[f"{metric}_mean"].idxmax()]
        text = (
            f"{positives} positives: best {metric.replace('_accuracy', '')} "
            f"{best[f'{metric}_mean']:.3f} at τ = {best['tau']:g}"
        )
        one = rows[np.isclose(rows["tau"], 1.0)]
        if len(one):
            text += f", at τ = 1 {one[f'{metric}_mean'].min():.3f}"
        parts.append(text + f" ({len(best_tau(rows, metric))} setting(s))")
    learned = s[s["tau_mode"] != "fixed"]
    if len(learned):
        end = np.exp(learned["log_tau_final_mean"])
        parts.append(
            f"learnt τ ends at {end.min():.3g}–{end.max():.3g} from τ₀ = "
            f"{learned['tau'].min():g}–{learned['tau'].max():g}"
        )
    return "; ".join(parts)


KIND = Kind(
    name="contrastive_training",
    description=(
        "InfoNCE training of a linear encoder across temperatures, class or instance positives, "
        "fixed or learnt tau: loss and entropy floors, alignment, uniformity, negative weights, "
        "three held-out evaluations"
    ),
    package=__name__,
    algorithm_version=3,
    schema=Schema(
        params=PARAMS,
        stream_params=kernel.STREAM_PARAMS,
        metrics=METRICS,
        main_metric="probe_accuracy",
        check_grid=check_grid,
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=kernel.simulate_block,
        # Blocks of ~6 x 8 MiB: every step of a block costs Python overhead, so small blocks are
        # slow (48 runs of the default task: 5.4 CPU-s in blocks of 5 trials, 3.5 in 16, 2.9 in 48).
        block_factor=6,
        counts=lambda p: kernel.counts(
            int(p["n"]),
            int(p["input_dim"]),
            int(p["embed_dim"]),
            int(p["steps"]),
            float(p["instance_noise"]) > 0,
        ),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(extra_columns=EXTRA, extra=extra_summary, finite_metrics=FINITE),
    presentation=Presentation(
        figures=("temperature_sweep", "temperature_map", "learned_temperature", "flip_map"),
        # the fixed temperatures' figures, the learnt ones': each where the grid has them
        figure_applies={
            "temperature_sweep": lambda g: "fixed" in g["tau_mode"],
            "temperature_map": lambda g: "fixed" in g["tau_mode"] and len(g["tau"]) >= 2,
            "learned_temperature": lambda g: any(mode != "fixed" for mode in g["tau_mode"]),
            # the flip along a difficulty axis: instance positives over three or more view noises
            "flip_map": lambda g: (
                "instance" in g["positives"]
                and "fixed" in g["tau_mode"]
                and len(g["tau"]) >= 2
                and len(g["view_noise"]) >= 3
            ),
        },
        headline=headline,
    ),
    example={
        "trials": 8,
        "grid": {
            "n": [16, 32],
            "classes": [8, 16],
            "latent_dim": [8],
            "input_dim": [32],
            "embed_dim": [8],
            "view_noise": [2.0],
            "tau": [0.1, 0.2],
            "optimiser": ["adam"],
            "lr": [0.01],
            "steps": [50],
        },
    },
)
