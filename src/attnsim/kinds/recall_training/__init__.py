"""Kind `recall_training`: trainability of one softmax attention head from its initial scale
(associative recall, docs/science.md §6.1-§6.3 and §9).

A trial is one complete training run from its own seed. The weight scale sets the initial logit
spread (std ~ scale^2, the x-axis of `init_gradient`); the question is how long a start with
one-hot weights (entropy ~ 0, vanishing logit gradient) takes to escape its plateau, by SGD,
Adam or normalised gradient descent, and whether entropy collapses when the learning rate is
too large (with and without QK-norm). Escape times are right-censored survival data: per point
the Kaplan-Meier median with its 95% interval and the share escaped by each checkpoint
(`escape_summary`, on `attnsim.stats`' Kaplan-Meier).

Diverged runs store +inf losses and NaN entropies (kernel.py); their summary: `finite_metrics`
(means over the finite runs, with counts), medians and quartiles over all runs (+inf last), the
share of runs that reached the loss threshold, and `diverged_mean`, the divergence rate.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels.training import ALL_OPTIMISERS, CHECKPOINTS, checkpoint_steps, quantiles
from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import F64, I64, LOG_N, STR, d_param, normaliser_param, with_ci
from attnsim.kinds.recall_training import kernel
from attnsim.kinds.recall_training.plateau import setting_text
from attnsim.kinds.training_runs import LOSS_QUARTILES, LOSSES, LR, loss_quartiles, steps_param
from attnsim.stats import escaped_share, kaplan_meier, wilson

TRAJECTORIES = tuple(f"{m}_ckpt_{j}" for m in ("entropy", "zhai_bound") for j in range(CHECKPOINTS))

PARAMS = (
    Param(
        "n", I64, "key/value pairs per example (the target is one of them)", minimum=2, maximum=4096
    ),
    d_param(
        "dimension of keys, values and queries (unit vectors); W_q, W_k, W_v are d x d", minimum=2
    ),
    Param("batch", I64, "training examples per step (fresh each step)", minimum=1, maximum=4096),
    Param(
        "scale",
        F64,
        "std of the initial entries of W_q and W_k (logit std ~ scale^2); W_v ~ N(0, 1/d) always",
        exclusive_minimum=0,
        maximum=10000,
    ),
    Param(
        "optimiser",
        STR,
        "sgd, adam (beta1 0.9, beta2 0.999, eps 1e-8), normgd (W -= lr g / ||g||_F per weight "
        "matrix: the step's size fixed, its direction from the gradient) or randdir (normgd's "
        "control: W -= lr z / ||z||_F, z standard normal from the run's own stream)",
        choices=ALL_OPTIMISERS,
    ),
    LR,
    steps_param("optimiser steps per run: the budget of a run that stops at the threshold"),
    Param(
        "values",
        STR,
        "trainable (W_v ~ N(0, 1/d), trained) or identity (W_v = I, fixed)",
        choices=kernel.VALUES,
        default="trainable",
    ),
    Param(
        "logits",
        STR,
        "dot: q W_q (k W_k)^T / sqrt(d); qk_norm: g cos(q W_q, k W_k), a trained gain g from "
        "sqrt(d) (QK-norm)",
        choices=kernel.LOGITS,
        default="dot",
    ),
    Param(
        "stop",
        STR,
        "threshold: a run stops (weights frozen) at its first evaluation with loss / chance <= "
        "threshold; never: runs all steps",
        choices=kernel.STOPS,
        default="never",
    ),
    normaliser_param(
        "the map from logits to attention weights (docs/science.md §12)",
        "; o = sum p_i v_i without renormalisation. A softmax point keeps its id",
        default=kernel.SOFTMAX,
        id_omits_default=True,
    ),
    Param(
        "threshold",
        F64,
        "loss / chance that counts as escaped (steps_to_threshold, escape_step, the stop); 0.5 in "
        "the normaliser comparison, whose unnormalised maps cannot reach 0.1 (docs/science.md "
        "§12.7). A point at the default 0.1 keeps its id",
        exclusive_minimum=0,
        maximum=10,
        default=kernel.DEFAULTS["threshold"],
        id_omits_default=True,
    ),
)

METRICS = tuple(Column(name, F64, doc) for name, doc in kernel.METRICS.items())
FINITE = (
    *LOSSES,
    *TRAJECTORIES,
    "zhai_margin_min",
    "steps_to_threshold",
    "collapse_step",
    "final_entropy",
    "diverged_step",
)
ESCAPED = tuple(f"escaped_ckpt_{j}" for j in range(CHECKPOINTS))

THEORY = (
    LOG_N,
    Column(
        "chance_loss",
        F64,
        "1 - 1/n: the loss of predicting the mean value (losses are reported as fractions of it)",
    ),
    Column(
        "logit_std",
        F64,
        "scale^2 sqrt(1 + query_noise^2): std of the initial logits over the weights (unit keys, "
        "query norm^2 ~ 1 + query_noise^2); 1 with QK-norm (sqrt(d) times a cosine of std "
        "1/sqrt(d))",
    ),
    Column(
        "entropy_small_scale",
        F64,
        "log n - logit_std^2 / 2: softmax's small-scale entropy law (docs/science.md §3.3), valid "
        "while logit_std << 1; NaN for the other normalisers",
    ),
    Column(
        "escape_exponent",
        F64,
        "predicted exponent b of escape time ~ logit_std^b from one-hot starts (docs/science.md "
        "§9.4): 1 for sgd, 1/2 for adam and normgd; NaN for randdir (no escape predicted, "
        "§9.5)",
    ),
)


def _wilson(prefix: str, doc: str) -> tuple[Column, ...]:
    """A share of runs, `prefix`_share, with its Wilson interval `prefix`_ci_low/_ci_high."""
    return with_ci(f"{prefix}_share", doc, "95% Wilson interval", prefix)


EXTRA = (
    *LOSS_QUARTILES,
    Column(
        "init_grad_logits_median",
        F64,
        "median over trials of init_grad_logits: the typical start (the mean is set by rare "
        "near-ties of the top logits)",
    ),
    Column("init_grad_qk_median", F64, "median over trials of init_grad_qk"),
    Column(
        "steps_to_threshold_median",
        F64,
        "median over all trials of steps_to_threshold (+inf if fewer than half reached it)",
    ),
    *_wilson(
        "reached",
        "share of trials whose monitor loss reached the threshold (finite steps_to_threshold)",
    ),
    Column(
        "escape_median",
        F64,
        "Kaplan-Meier median of the escape time (escape_step, escaped): the first event time with "
        "S <= 1/2; +inf if more than half censored",
    ),
    Column(
        "escape_median_ci_low",
        F64,
        "lower end of the 95% interval of escape_median (Brookmeyer-Crowley on the log-log band)",
    ),
    Column(
        "escape_median_ci_high",
        F64,
        "upper end of the 95% interval of escape_median; +inf when the band's lower edge never "
        "reaches 1/2",
    ),
    *(
        Column(
            f"escape_q{q}",
            F64,
            f"Kaplan-Meier time by which {q}% of the runs had escaped; +inf if fewer did",
        )
        for q in (10, 25, 75, 90)
    ),
    *(
        Column(
            f"{name}{end}",
            F64,
            f"{label} share of runs escaped by checkpoint {j} (step round(steps^({j}/7))): 1 - S, "
            f"Kaplan-Meier{note}",
        )
        for j, name in enumerate(ESCAPED)
        for end, label, note in (
            ("", "the", ""),
            ("_ci_low", "lower end of the 95% interval of the", ", log-log band"),
            ("_ci_high", "upper end of the 95% interval of the", ", log-log band"),
        )
    ),
    *_wilson(
        "collapsed",
        "share of runs whose monitor entropy fell below 0.1 nats at some evaluation (finite "
        "collapse_step)",
    ),
    *_wilson(
        "collapsed_early",
        "share of runs whose entropy collapsed (< 0.1 nats) while the loss was still above the "
        "threshold (collapse_step < escape time; a run that never escaped counts from its "
        "collapse): collapse before learning",
    ),
    Column("diverged_count", I64, "runs that diverged"),
    *_wilson(
        "collapse_first",
        "among the diverged runs, the share whose entropy had collapsed (< 0.1 nats) before they "
        "diverged; NaN if none diverged",
    ),
)


def bytes_per_trial(p) -> int:
    return kernel.bytes_per_trial(int(p["n"]), int(p["d"]), int(p["batch"]))


# The plateau law's exponent (docs/science.md §9.4): escape time ~ logit_std^b from a one-hot
# start,
# b = 1 for SGD (the step shrinks with the gradient, ~1/logit_std), 1/2 for the optimisers whose
# step does not (Adam while the gradient is well above its eps, normgd): they travel ~scale.
ESCAPE_EXPONENT = {"sgd": 1.0, "adam": 0.5, "normgd": 0.5}
# randdir's steps carry no information from the loss: no escape law (§9.5)
NO_LAW = "randdir"


def logit_std(logits: str, scale: float) -> float:
    """The initial logits' standard deviation: 1 under QK-norm, ~scale^2 for dot products."""
    if logits == "qk_norm":
        return 1.0
    return float(scale) ** 2 * math.sqrt(1 + kernel.DEFAULTS["query_noise"] ** 2)


def theory(p) -> dict[str, object]:
    sigma = logit_std(p["logits"], p["scale"])
    return {
        "log_n": math.log(p["n"]),
        "chance_loss": kernel.chance_loss(int(p["n"])),
        "logit_std": sigma,
        "entropy_small_scale": (
            math.log(p["n"]) - sigma**2 / 2 if p["normaliser"] == kernel.SOFTMAX else math.nan
        ),
        "escape_exponent": ESCAPE_EXPONENT.get(p["optimiser"], math.nan),
    }


def _scale_sweep(g) -> bool:
    """A fixed-budget sweep over initial scales: what trainability and learning_curves show."""
    return len(g["scale"]) >= 2 and "never" in g["stop"]


LAW_LOGIT_STD = 4.0  # claims.THRESHOLDS.law_logit_std (the claims module imports pandas)


def _plateau_law(g) -> bool:
    """Escape runs at 3 or more scales whose initial logit std is >= 4 (the law's fit: claims)."""
    steep = {s for s in g["scale"] for lg in g["logits"] if logit_std(lg, s) >= LAW_LOGIT_STD}
    return "threshold" in g["stop"] and len(steep) >= 3


def _remedy_sweep(g) -> bool:
    """SGD with a trained W_v, with and without a remedy of entropy collapse (§9.6)."""
    variants = len(g["logits"]) * len(g.get("normaliser", [kernel.SOFTMAX]))
    return "sgd" in g["optimiser"] and "trainable" in g["values"] and variants >= 2


def _softmax_only(g) -> bool:
    """§9's figures draw one curve per run setting, not per normaliser: softmax grids only."""
    return set(g.get("normaliser", [kernel.SOFTMAX])) == {kernel.SOFTMAX}


def _normaliser_escape(g) -> bool:
    """Escape runs of two or more normalisers (the comparison of docs/science.md §12.7)."""
    return len(set(g.get("normaliser", []))) >= 2 and "threshold" in g["stop"]


# which figures an experiment's grid (parameter -> distinct values) has something to show in
FIGURE_APPLIES = {
    name: (lambda g, applies=applies: _softmax_only(g) and applies(g))
    for name, applies in {
        "trainability": _scale_sweep,
        "learning_curves": _scale_sweep,
        "escape_survival": lambda g: "threshold" in g["stop"],
        "escape_law": _plateau_law,
        "separating": lambda g: "normgd" in g["optimiser"] and "threshold" in g["stop"],
        "training_entropy": lambda g: len(g["lr"]) >= 2,
        "plateau_map": lambda g: _plateau_law(g) and len(g["batch"]) * len(g["lr"]) >= 2,
    }.items()
} | {"escape_by_normaliser": _normaliser_escape, "divergence": _remedy_sweep}


ESCAPE_QUANTILES = (0.1, 0.25, 0.75, 0.9)  # escape-time quantiles kept besides the median


def escape_summary(time, event, checkpoints) -> dict[str, object]:
    """Per grid point: the median escape time with its 95% interval, the times by which 10%, 25%,
    75% and 90% have escaped (+inf if not reached), and the share escaped by each checkpoint step
    with its 95% interval (`escaped_share`)."""
    km = kaplan_meier(time, event)
    median, low, high = km.quantile(0.5)
    out: dict[str, object] = {
        "escape_median": median,
        "escape_median_ci_low": low,
        "escape_median_ci_high": high,
    }
    for share in ESCAPE_QUANTILES:
        out[f"escape_q{round(100 * share)}"] = km.quantile(share)[0]
    for j, step in enumerate(checkpoints):
        share, s_low, s_high = escaped_share(km, time, event, step)
        out[f"escaped_ckpt_{j}"] = share
        out[f"escaped_ckpt_{j}_ci_low"] = s_low
        out[f"escaped_ckpt_{j}_ci_high"] = s_high
    return out


def extra_summary(metrics, p) -> dict[str, object]:
    out: dict[str, object] = loss_quartiles(metrics)
    out["init_grad_logits_median"] = float(np.median(metrics["init_grad_logits"]))
    out["init_grad_qk_median"] = float(np.median(metrics["init_grad_qk"]))
    out["steps_to_threshold_median"] = quantiles(metrics["steps_to_threshold"], (0.5,))[0]
    reached, trials = (
        int(np.isfinite(metrics["steps_to_threshold"]).sum()),
        len(metrics["steps_to_threshold"]),
    )
    out["reached_share"] = reached / trials
    out["reached_ci_low"], out["reached_ci_high"] = wilson(reached, trials)
    out |= escape_summary(
        metrics["escape_step"], metrics["escaped"], checkpoint_steps(int(p["steps"]))
    )
    collapsed = int(np.isfinite(metrics["collapse_step"]).sum())
    out["collapsed_share"] = collapsed / trials
    out["collapsed_ci_low"], out["collapsed_ci_high"] = wilson(collapsed, trials)
    escape = np.where(metrics["escaped"] == 1, metrics["escape_step"], np.inf)
    early = int(np.sum(metrics["collapse_step"] < escape))
    out["collapsed_early_share"] = early / trials
    out["collapsed_early_ci_low"], out["collapsed_early_ci_high"] = wilson(early, trials)
    gone = metrics["diverged"] == 1
    first = int(np.sum(metrics["collapse_step"][gone] < metrics["diverged_step"][gone]))
    diverged = int(gone.sum())
    out["diverged_count"] = diverged
    out["collapse_first_share"] = first / diverged if diverged else math.nan
    out["collapse_first_ci_low"], out["collapse_first_ci_high"] = wilson(first, diverged)
    return out


def headline(s) -> str:
    """Per run setting: the median escape time (Kaplan-Meier) at the most one-hot start that has
    one, and the share escaped within the budget at the most one-hot start."""
    parts = []
    for _, rows in s.groupby(["optimiser", "lr", "values", "logits"]):
        low = rows.loc[rows["init_entropy_mean"].idxmin()]
        parts.append(
            f"{setting_text(low)}: {low['escaped_ckpt_7']:.0%} escape within {low['steps']:g} "
            f"steps from scale {low['scale']:g} "
            f"(H0 = {low['init_entropy_mean']:.2g} nats), median {low['escape_median']:.4g} steps"
        )
    return "; ".join(parts)


KIND = Kind(
    name="recall_training",
    description=(
        "attention trained on associative recall from initial weight scales 0.1 ... 100: how long "
        "does a one-hot start take to escape, and does a large learning rate collapse the entropy?"
    ),
    package=__name__,
    # 2: escape times (stop at the threshold), normgd, W_v = I, QK-norm, entropy trajectories
    algorithm_version=2,
    schema=Schema(
        params=PARAMS,
        stream_params=kernel.STREAM_PARAMS,
        metrics=METRICS,
        main_metric="final_accuracy",
        # the escape-time fits read every run's escape step (right-censored at the budget); the
        # logit path's sanity claim every run's losses (docs/science.md §9.6)
        run_columns=("escape_step", "escaped", "diverged", *LOSSES),
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=kernel.simulate_block,
        # ~28 trials per block: a step's array calls cost ~1 ms per point whatever the trials
        block_factor=4,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"]), int(p["batch"]), int(p["steps"])),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(
        extra_columns=EXTRA,
        extra=extra_summary,
        finite_metrics=FINITE,
        extreme_metrics=("zhai_margin_min",),
    ),
    presentation=Presentation(
        figures=(
            "trainability",
            "learning_curves",
            "escape_survival",
            "escape_law",
            "separating",
            "training_entropy",
            "plateau_map",
            "divergence",
            "escape_by_normaliser",
        ),
        figure_applies=FIGURE_APPLIES,
        headline=headline,
    ),
    example={
        "trials": 8,
        "grid": {
            "n": [8, 16],
            "d": [8, 16],
            "batch": [32],
            "scale": [0.1, 1.0],
            "optimiser": ["sgd"],
            "lr": [4.0],
            "steps": [50],
        },
    },
)
