"""Kind `real_entropy`: entropy of the attention rows of all-MiniLM-L6-v2, trained and
re-initialised
(docs/science.md §5.7).

init_std = 0 is the trained model; init_std > 0 the same architecture with BERT's
initialisation N(0, init_std^2) (0.02 is BERT's own). A trial is one real attention row: a
corpus window of n tokens and a query position, through one head of one layer.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds import real_model
from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import ENTROPY, F64, GRAD_SQ, LOG_N, N_EFF, STR
from attnsim.kinds.real_entropy import kernel
from attnsim.models import heads
from attnsim.theory.entropy import rem_entropy, small_scale_entropy

PARAMS = (
    real_model.n_param(),
    Param(
        "init_std",
        F64,
        "0: the trained weights of all-MiniLM-L6-v2; > 0: the same architecture re-initialised as "
        "BERT does, weights N(0, init_std^2) (BERT: 0.02)",
        minimum=0,
        maximum=10,
    ),
    *real_model.layer_head_params(),
)

METRICS = (
    ENTROPY,
    N_EFF,
    Column("max_weight", F64, "largest weight of the row"),
    GRAD_SQ,
    Column(
        "grad_rel",
        F64,
        "grad_sq / mean_i ||v_i - mean v||^2: the logit gradient in units of the values' spread "
        "(1/n at uniform weights, 0 when one-hot)",
    ),
    Column(
        "sink_weight",
        F64,
        "weight on the window's [CLS] and [SEP] keys (attention sinks; 2/n at uniform weights)",
    ),
    Column(
        "logit_std", F64, "standard deviation of the row's logits q.k_i/sqrt(32) over its n keys"
    ),
    Column(
        "cls_weight",
        F64,
        "weight on the window's [CLS] (its mean over rows: the attention [CLS] receives, "
        "docs/science.md §5.12)",
    ),
    Column("sep_weight", F64, "weight on the window's [SEP]"),
    Column(
        "punct_weight",
        F64,
        'weight on the window\'s "." and "," tokens (Clark et al. 2019\'s third sink)',
    ),
)

# A row is sink-dominated when [CLS] and [SEP] together hold more than half of its weight (§5.12).
SINK_ROW = 0.5
# Gu et al. 2024: a token is a sink of a head when the mean attention it receives exceeds this
SINK_EPSILON = 0.3


def median_columns(metric: str, how: str = "") -> tuple[Column, Column, Column]:
    """The summary columns `median_interval` fills for `metric`: its median over the rows (the
    typical row, which sink rows cannot drag as they drag the mean) and the interval's two ends."""
    interval = f"the distribution-free 95% interval of the median {metric}{how}"
    return (
        Column(f"{metric}_median", F64, f"median {metric} over the rows (the typical row)"),
        Column(f"{metric}_median_ci_low", F64, f"lower end of {interval}"),
        Column(f"{metric}_median_ci_high", F64, "upper end of that interval"),
    )


EXTRA = (
    Column("sink_rows", F64, f"share of rows whose [CLS] + [SEP] weight exceeds {SINK_ROW}"),
    Column("entropy_sink_rows", F64, "mean entropy of the sink-dominated rows; null without one"),
    Column("entropy_other_rows", F64, "mean entropy of the other rows; null without one"),
    Column("grad_rel_sink_rows", F64, "mean grad_rel of the sink-dominated rows; null without one"),
    Column("grad_rel_other_rows", F64, "mean grad_rel of the other rows; null without one"),
    *median_columns("entropy", " (order statistics)"),
    *median_columns("grad_rel"),
)


def median_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high): the distribution-free interval [x_(j), x_(T+1-j)] of order statistics,
    j the largest with P(Binomial(T, 1/2) < j) <= (1 - confidence)/2 (nan ends when T is too
    small)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    t = x.size
    tail, cumulative, j = (1 - confidence) / 2, 0.0, 0
    for k in range(t + 1):
        cumulative += math.comb(t, k) / 2.0**t
        if cumulative > tail:
            j = k  # P(B < k) <= tail < P(B <= k): j = k
            break
    median = float(np.median(x))
    if j < 1:
        return median, math.nan, math.nan
    return median, float(x[j - 1]), float(x[t - j])


THEORY = (
    LOG_N,
    Column("weights", STR, "trained, or init (re-initialised with std init_std)"),
    Column(
        "logit_std_init",
        F64,
        "init_std^2 * 384: the logit std at initialisation (docs/science.md §5.3); null for "
        "trained weights",
    ),
    Column(
        "entropy_small_scale",
        F64,
        "log n - logit_std_init^2 / 2: the small-scale entropy (§3.3) at initialisation; null for "
        "trained weights",
    ),
    Column(
        "entropy_rem",
        F64,
        "random-energy-model entropy (§3.4) at logit_std_init; 0 once frozen; null for trained "
        "weights",
    ),
    Column("sink_uniform", F64, "2/n: the weight on [CLS] and [SEP] under uniform weights"),
)


def bytes_per_trial(p) -> int:
    """The forward pass's activations per token as if the block went through at once (it goes in
    sub-batches: this is its cost)."""
    return int(p["n"]) * heads.FORWARD_BYTES_PER_TOKEN


def simulate_block(rng, trials, points):
    return kernel.simulate(rng, trials, points[0]["n"], points)


def theory(p) -> dict[str, object]:
    n, std = p["n"], p["init_std"]
    row = {
        "log_n": math.log(n),
        "weights": "trained" if std == 0 else "init",
        "sink_uniform": 2 / n,
    }
    if std == 0:
        return row | {"logit_std_init": None, "entropy_small_scale": None, "entropy_rem": None}
    sigma = std**2 * heads.CONFIG.hidden
    return row | {
        "logit_std_init": sigma,
        "entropy_small_scale": float(small_scale_entropy(n, sigma)),
        "entropy_rem": float(rem_entropy(n, sigma)),
    }


def extra_summary(metrics, p) -> dict[str, object]:
    sink = metrics["sink_weight"] > SINK_ROW
    out: dict[str, object] = {"sink_rows": float(np.mean(sink))}
    for name in ("entropy", "grad_rel"):
        for label, mask in (("sink", sink), ("other", ~sink)):
            out[f"{name}_{label}_rows"] = (
                float(np.mean(metrics[name][mask])) if mask.any() else None
            )
        out[f"{name}_median"], out[f"{name}_median_ci_low"], out[f"{name}_median_ci_high"] = (
            median_interval(metrics[name])
        )
    return out


def headline(s) -> str:
    """Mean entropy / log n per weights, and the trained heads' weight on [CLS]/[SEP] per layer."""
    parts = []
    for std, part in s.groupby("init_std"):
        label = "trained" if std == 0 else f"init {std:g}"
        parts.append(f"{label} H/log n {(part['entropy_mean'] / part['log_n']).mean():.2f}")
    trained = s[s["init_std"] == 0]
    if len(trained):
        sinks = trained.groupby("layer")["sink_weight_mean"].mean()
        parts.append(
            "trained [CLS]/[SEP] weight per layer: "
            + ", ".join(f"L{k} {v:.2f}" for k, v in sinks.items())
        )
        if "cls_weight_mean" in trained:
            per_head = trained.groupby(["layer", "head"])[
                ["cls_weight_mean", "sep_weight_mean"]
            ].mean()
            sink = per_head.max(axis=1) > SINK_EPSILON
            parts.append(
                f"heads with a sink (mean attention received > {SINK_EPSILON}): {int(sink.sum())} "
                f"of {len(sink)}"
            )
    return "; ".join(parts)


KIND = Kind(
    name="real_entropy",
    description=(
        "entropy of real attention rows of MiniLM, trained vs re-initialised, against log n"
    ),
    package=__name__,
    # 2: rows gained cls_weight, sep_weight and punct_weight, the summary the sink-row and median
    # columns; the version-1 metrics are unchanged (tests/kinds/test_real_kinds.py)
    algorithm_version=2,
    schema=Schema(
        params=PARAMS,
        # The windows and the random weights; every init_std, layer and head shares them.
        stream_params=("n",),
        metrics=METRICS,
        main_metric="entropy",
        check_grid=heads.check_windows,
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"])),
        block_factor=16,  # each block draws a whole model (~0.4 s): large blocks amortise it
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(extreme_metrics=("entropy",), extra_columns=EXTRA, extra=extra_summary),
    presentation=Presentation(
        figures=("real_entropy_layers", "real_entropy_sinks"),
        headline=headline,
    ),
    assets=real_model.MINILM_ASSETS,
    example={
        "trials": 16,
        "grid": {"n": [16, 32], "init_std": [0.0, 0.02], "layer": [0], "head": [0, 1]},
    },
)
