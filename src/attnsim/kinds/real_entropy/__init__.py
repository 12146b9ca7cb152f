"""Kind `real_entropy`: entropy of the attention rows of all-MiniLM-L6-v2, trained and re-initialised
(docs/science.md §5.7).

init_std = 0 is the trained model; init_std > 0 the same architecture with BERT's
initialisation N(0, init_std^2) (0.02 is BERT's own). A trial is one real attention row: a
corpus window of n tokens and a query position, through one head of one layer.
"""

from __future__ import annotations

import math

from attnsim.kinds import real_model
from attnsim.kinds.base import Column, Kind, Param
from attnsim.kinds.columns import ENTROPY, F64, GRAD_SQ, LOG_N, N_EFF, STR
from attnsim.kinds.real_entropy import kernel
from attnsim.models import heads
from attnsim.theory.entropy import rem_entropy, small_scale_entropy

BERT_STD = 0.02  # BERT's initializer_range

PARAMS = (
    real_model.n_param(),
    Param(
        "init_std",
        F64,
        "0: the trained weights of all-MiniLM-L6-v2; > 0: the same architecture re-initialised as BERT does, weights N(0, init_std^2) (BERT: 0.02)",
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
    Column("grad_rel", F64, "grad_sq / mean_i ||v_i - mean v||^2: the logit gradient in units of the values' spread (1/n at uniform weights, 0 when one-hot)"),
    Column("sink_weight", F64, "weight on the window's [CLS] and [SEP] keys (attention sinks; 2/n at uniform weights)"),
    Column("logit_std", F64, "standard deviation of the row's logits q.k_i/sqrt(32) over its n keys"),
)

THEORY = (
    LOG_N,
    Column("weights", STR, "trained, or init (re-initialised with std init_std)"),
    Column("logit_std_init", F64, "init_std^2 * 384: the logit std at initialisation (docs/science.md §5.3); null for trained weights"),
    Column("entropy_small_scale", F64, "log n - logit_std_init^2 / 2: the small-scale entropy (§3.3) at initialisation; null for trained weights"),
    Column("entropy_rem", F64, "random-energy-model entropy (§3.4) at logit_std_init; 0 once frozen; null for trained weights"),
    Column("sink_uniform", F64, "2/n: the weight on [CLS] and [SEP] under uniform weights"),
)


def bytes_per_trial(p) -> int:
    """The forward pass's activations per token as if the block went through at once (it goes in sub-batches: this is its cost)."""
    return int(p["n"]) * heads.FORWARD_BYTES_PER_TOKEN


def simulate_block(rng, trials, points):
    return kernel.simulate(rng, trials, points[0]["n"], points)


def theory(p) -> dict[str, object]:
    n, std = p["n"], p["init_std"]
    row = {"log_n": math.log(n), "weights": "trained" if std == 0 else "init", "sink_uniform": 2 / n}
    if std == 0:
        return row | {"logit_std_init": None, "entropy_small_scale": None, "entropy_rem": None}
    sigma = std**2 * heads.CONFIG.hidden
    return row | {"logit_std_init": sigma, "entropy_small_scale": float(small_scale_entropy(n, sigma)), "entropy_rem": float(rem_entropy(n, sigma))}


def headline(s) -> str:
    """Mean entropy / log n per weights, and the trained heads' weight on [CLS]/[SEP] per layer."""
    parts = []
    for std, part in s.groupby("init_std"):
        parts.append(f"{'trained' if std == 0 else f'init {std:g}'} H/log n {(part['entropy_mean'] / part['log_n']).mean():.2f}")
    trained = s[s["init_std"] == 0]
    if len(trained):
        sinks = trained.groupby("layer")["sink_weight_mean"].mean()
        parts.append("trained [CLS]/[SEP] weight per layer: " + ", ".join(f"L{k} {v:.2f}" for k, v in sinks.items()))
    return "; ".join(parts)


KIND = Kind(
    name="real_entropy",
    package=__name__,
    figures=("real_entropy_layers",),
    headline=headline,
    extreme_metrics=("entropy",),
    description="entropy of real attention rows of MiniLM, trained vs re-initialised, against log n",
    params=PARAMS,
    stream_params=("n",),  # the windows and the random weights; every init_std, layer and head shares them
    metrics=METRICS,
    theory_columns=THEORY,
    algorithm_version=1,
    bytes_per_trial=bytes_per_trial,
    simulate_block=simulate_block,
    theory=theory,
    main_metric="entropy",
    block_factor=16,  # each block draws a whole model (~0.4 s): large blocks amortise it
    check_grid=heads.check_windows,
    assets=("minilm",),
    provenance=heads.provenance,
)
