"""Kind `real_noise`: i.i.d. logit noise on the trained heads of all-MiniLM-L6-v2 (docs/science.md
§5.6, §5.9-5.12).

The same metrics, theory and summary as `noisy_attention` (§2, `attnsim.kinds.logit_noise`), but
each trial's logits and values are one real attention row: a corpus window of n tokens, a query
position, and the queries, keys and values of one head of one layer of the trained model. With
`keys` > 0 the row is one of nested windows over the same text and query (the rate within a
head, §5.9); per row the weight on [CLS] and [SEP] (attention sinks, §5.12) and the concentration
grad_sq / (sum p^2 spread) (§5.11) are kept beside the error.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.errors import ConfigError
from attnsim.kinds import logit_noise, real_model
from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import F64, I64
from attnsim.kinds.real_noise import kernel
from attnsim.models import heads
from attnsim.stats import mean_ci, ratio_of_means
from attnsim.subjects import noise_families
from attnsim.theory import delta_next

# A row is sink-dominated when [CLS] and [SEP] together hold more than half of its weight (§5.12).
# noise with every moment of the expansion finite (k* = inf): §2.8's regime "delta"; the sigma
# and rows figures are about it, so a sweep of heavy tails alone does not draw them (the
# within-heads figure shows a heavy-tailed sweep's errors too)
LIGHT = noise_families.names(lambda f: f.every_moment)  # k* = inf: §2.8's regime "delta"


def has_light_noise(values) -> bool:
    """Whether a grid (its distinct values per parameter) has light-tailed noise of scale > 0."""
    return any(n in LIGHT for n in values["noise"]) and any(s > 0 for s in values["noise_scale"])


SINK_ROW = 0.5
# A row is in the delta method's regime when its predicted first correction
# |3 kappa^2 - 2 mu3| / kappa * sum p^2 is at most this, half the delta method's tolerance 0.05, so
# the neglected term alone cannot move the ratio out of its band (§2.8, §5.10): the per-row law's
# rows.
ROW_CORRECTION = 0.025

# `keys` before layer and head: points are enumerated (and cut into chunk jobs) in this order, so a
# job holds one window length and makes one model pass per trial, not one per window.
PARAMS = (
    real_model.n_param(),
    logit_noise.NOISE_DRAWS,
    Param(
        "keys",
        I64,
        "keys per row of a nested window (docs/science.md §5.9): [CLS], the first keys - 2 word "
        "pieces of the trial's n-token text, [SEP], the query among the first "
        f"{kernel.NEST_QUERIES} positions, the same text and query for every keys; 0 (default): "
        "the trial's own n-token window, its query anywhere in it",
        minimum=0,
        maximum=heads.corpus.MAX_POSITIONS,
        default=0,
    ),
    *real_model.layer_head_params(),
    logit_noise.noise_param("§2.3"),
    logit_noise.NOISE_SCALE,
)

METRICS = (
    *logit_noise.METRICS,
    Column(
        "spread", F64, "sum_i p_i ||v_i - o||^2: the spread of the values under the clean weights"
    ),
    Column("sink_weight", F64, "weight of the row on [CLS] and [SEP] (attention sinks)"),
    Column(
        "concentration",
        F64,
        "grad_sq / (sum p^2 * spread): 1 where rel_err^2 = kappa / n_eff (the shorthand) follows "
        "from the delta method; -> 0 as the weights concentrate on one or two keys (§5.11)",
    ),
)

THEORY = (
    *logit_noise.THEORY,
    Column("n_keys", I64, "keys of each row: keys, or n where keys = 0"),
    Column(
        "correction_coefficient",
        F64,
        "|3 kappa^2 - 2 mu3| / kappa: the first correction of the delta method is this times "
        "sum p^2 (§2.8); null where kappa is 0 or infinite or mu3 diverges",
    ),
)

EXTRA = (
    *logit_noise.EXTRA,
    Column(
        "sum_p2_mean", F64, "mean over the rows of sum p^2 (1 / sum_p2_mean: the harmonic n_eff)"
    ),
    Column(
        "predicted_correction",
        F64,
        "correction_coefficient * the grad_sq-weighted mean of sum p^2 over the rows: the "
        "predicted "
        "relative size of the delta method's first correction to err_ratio (a ratio of means, so "
        "rows count by their predicted error; §2.8, §5.10); null where there is none",
    ),
    Column(
        "next_truncation",
        F64,
        "the grad_sq-weighted mean over rows of (correction_coefficient * sum p^2)^3: the size of "
        "the first term the next-order theory neglects (§5.10); null where there is none",
    ),
    Column(
        "row_ratio",
        F64,
        f"mean over rows with correction below {ROW_CORRECTION} of sq_err / sq_err_pred: the "
        f"per-row law",
    ),
    Column("row_ratio_se", F64, "standard error of row_ratio (rows as independent)"),
    Column("row_ratio_rows", I64, "rows row_ratio averages over"),
    Column("sink_rows", F64, f"share of rows whose [CLS] + [SEP] weight exceeds {SINK_ROW}"),
    Column(
        "err_ratio_sink", F64, "err_ratio over the sink-dominated rows only; null with fewer than 2"
    ),
    Column("err_ratio_sink_se", F64, "standard error of err_ratio_sink"),
    Column("err_ratio_rest", F64, "err_ratio over the other rows only; null with fewer than 2"),
    Column("err_ratio_rest_se", F64, "standard error of err_ratio_rest"),
)


def n_keys(p) -> int:
    return int(p["keys"]) or int(p["n"])


def correction_coefficient(noise: str, sigma: float) -> float:
    """|3 kappa^2 - 2 mu3| / kappa (§2.8); nan where kappa is 0 or infinite or mu3 diverges."""
    kappa, mu3, _ = delta_next.u_moments(noise, sigma)
    if not (0 < kappa < math.inf and math.isfinite(mu3)):
        return math.nan
    return abs(3 * kappa * kappa - 2 * mu3) / kappa


def theory(p) -> dict[str, object]:
    m = n_keys(p)
    row = logit_noise.theory({**p, "n": m})
    coefficient = correction_coefficient(p["noise"], float(p["noise_scale"]))
    return row | {
        "n_keys": m,
        "correction_coefficient": None if math.isnan(coefficient) else coefficient,
    }


def bytes_per_trial(p) -> int:
    """The noise of up to every family (float32 K x n each) and the forward pass's activations per
    token as if the block went through at once (it goes in sub-batches: this is its cost). Nested
    windows are charged as n-token ones (an overestimate: the block's cost depends on n only)."""
    n, k = int(p["n"]), int(p["noise_draws"])
    return n * (4 * k * len(noise_families.NOISE_FAMILIES) + heads.FORWARD_BYTES_PER_TOKEN)


def simulate_block(rng, trials, points):
    first = points[0]
    out = kernel.simulate(rng, trials, first["n"], first["noise_draws"], points)
    return [trial_metrics(sums, p, trials) for p, sums in zip(points, out)]


def trial_metrics(sums: dict[str, np.ndarray], p, trials: int) -> dict[str, np.ndarray]:
    metrics = logit_noise.trial_metrics(sums, p, trials)
    shorthand = sums["spread"] / sums["n_eff"]  # sum p^2 * spread
    metrics["spread"] = sums["spread"]
    metrics["sink_weight"] = sums["sink_weight"]
    metrics["concentration"] = logit_noise.safe_ratio(sums["grad_sq"], shorthand)
    return metrics


def _ratio(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    r = ratio_of_means(x, y) if x.size >= 2 else {"mean": math.nan, "se": math.nan}
    mean, se = (None if not math.isfinite(r[k]) else r[k] for k in ("mean", "se"))
    return mean, se


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    out = logit_noise.extra_summary(metrics, p)
    sum_p2 = 1.0 / metrics["n_eff"]
    coefficient = correction_coefficient(p["noise"], float(p["noise_scale"]))
    out["sum_p2_mean"] = float(np.mean(sum_p2))
    pred = metrics["sq_err_pred"]
    grad = metrics["grad_sq"]
    if math.isnan(coefficient) or not np.sum(grad) > 0:
        out["predicted_correction"] = out["next_truncation"] = None
    else:
        weight = grad / np.sum(grad)
        out["predicted_correction"] = float(coefficient * np.dot(weight, sum_p2))
        out["next_truncation"] = float(np.dot(weight, (coefficient * sum_p2) ** 3))
    rows = (
        (coefficient * sum_p2 < ROW_CORRECTION) & (pred > 0) & np.isfinite(pred)
        if math.isfinite(coefficient)
        else np.zeros(len(pred), bool)
    )
    if rows.sum() >= 2:
        stats = mean_ci(metrics["sq_err"][rows] / pred[rows])
        out["row_ratio"], out["row_ratio_se"] = stats["mean"], stats["se"]
    else:
        out["row_ratio"] = out["row_ratio_se"] = None
    out["row_ratio_rows"] = int(rows.sum())
    sink = metrics["sink_weight"] > SINK_ROW
    out["sink_rows"] = float(np.mean(sink))
    finite = bool(np.all(np.isfinite(pred)))
    for name, mask in (("sink", sink), ("rest", ~sink)):
        mean, se = _ratio(metrics["sq_err"][mask], pred[mask]) if finite else (None, None)
        out[f"err_ratio_{name}"], out[f"err_ratio_{name}_se"] = mean, se
    return out


def check_grid(grid) -> None:
    """The corpus must fill the windows; nested windows need room for their query and fit in every
    n."""
    heads.check_windows(grid)
    nested = [k for k in grid.get("keys", [0]) if k]
    if nested and min(nested) <= kernel.NEST_QUERIES:
        raise ConfigError(
            f"grid.keys: {min(nested)} keys leave no room for the nested query (one of the first "
            f"{kernel.NEST_QUERIES} positions, before [SEP]); use 0 or at least "
            f"{kernel.NEST_QUERIES + 1}"
        )
    if nested and max(nested) > min(grid["n"]):
        raise ConfigError(
            f"grid.keys: {max(nested)} keys exceed n = {min(grid['n'])}, the text each trial "
            f"draws; keep keys <= every n"
        )


def headline(s) -> str:
    """Measured over predicted error per layer where the predicted correction is small."""
    ok = s[
        s["kappa_finite"]
        & (s["kappa"] > 0)
        & (s["predicted_correction"] < ROW_CORRECTION)
        & s["err_ratio"].notna()
    ]
    if ok.empty:
        return f"no point in the delta method's regime (predicted correction < {ROW_CORRECTION})"
    per_layer = ok.groupby("layer")["err_ratio"].median()
    return (
        f"trained heads, measured/predicted sq_err where the predicted correction < "
        f"{ROW_CORRECTION}, median per layer: "
        + ", ".join(f"L{k} {v:.3f}" for k, v in per_layer.items())
    )


KIND = Kind(
    name="real_noise",
    description=(
        "attention output of trained MiniLM heads under i.i.d. logit noise vs the delta-method "
        "prediction"
    ),
    package=__name__,
    # 2: rows gained spread, sink_weight and concentration, points the `keys` parameter (nested
    # windows); the version-1 metrics of keys = 0 are unchanged (tests/kinds/test_real_kinds.py);
    # 3: student_t noise's Exp(1) draws through SIMD log, not log1p (attnsim.kernels.sampling)
    algorithm_version=3,
    schema=Schema(
        params=PARAMS,
        # The texts; every keys, layer, head, family and scale shares them.
        stream_params=("n", "noise_draws"),
        metrics=METRICS,
        main_metric="rel_err",
        check_grid=check_grid,
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["keys"]), int(p["noise_draws"])),
        block_factor=8,
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(
        extreme_metrics=("entropy",),
        extra_columns=EXTRA,
        extra=extra_summary,
        constant_metrics=logit_noise.CONSTANT_METRICS,
        nonfinite_metrics=logit_noise.NONFINITE_METRICS,
    ),
    presentation=Presentation(
        figures=(
            "real_noise_map",
            "real_noise_sigma",
            "real_noise_within_heads",
            "real_noise_rows",
        ),
        figure_applies={
            "real_noise_sigma": has_light_noise,
            "real_noise_rows": has_light_noise,
        },
        headline=headline,
    ),
    assets=real_model.MINILM_ASSETS,
    example={
        "trials": 16,
        "grid": {
            "n": [16, 32],
            "noise_draws": [4],
            "layer": [0],
            "head": [0, 1],
            "noise": [noise_families.GAUSSIAN.name],
            "noise_scale": [0.1, 0.5],
        },
    },
)
