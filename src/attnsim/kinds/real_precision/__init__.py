"""Kind `real_precision`: the trained heads of all-MiniLM-L6-v2 with one rounding to bf16, fp16 or
fp8 (docs/science.md §11.7): the same measurements and predictions as `precision_attention`, on
real rows (a corpus window, a query position, one head of one layer)."""

from __future__ import annotations

from attnsim.kinds import low_precision, real_model
from attnsim.kinds.base import Compute, Kind, Presentation, Schema, Theory
from attnsim.kinds.real_precision import kernel
from attnsim.models import heads

PARAMS = (
    real_model.n_param(),
    *real_model.layer_head_params(),
    low_precision.FORMAT,
    low_precision.SITE,
    *low_precision.SCALING_PARAMS,
)


def bytes_per_trial(p) -> int:
    """The forward pass's activations per token (the planner's cost measure, as the other real
    kinds)
    and one head's rows through the precision kernel."""
    n = int(p["n"])
    return n * heads.FORWARD_BYTES_PER_TOKEN + 8 * 6 * n * heads.HEAD_SIZE


def simulate_block(rng, trials, points):
    return kernel.simulate(rng, trials, int(points[0]["n"]), points)


def headline(s) -> str:
    rows = s[s["site"] == "logits"]
    if rows.empty:
        return ""
    per_layer = rows.groupby("layer")["ratio_iid_mean"].mean()
    return "trained heads, logits rounded: measured / i.i.d. delta per layer " + ", ".join(
        f"L{k} {v:.2f}" for k, v in per_layer.items()
    )


KIND = Kind(
    name="real_precision",
    description=(
        "trained MiniLM heads rounded to bf16/fp16/fp8/fp6/fp4, per value or block-scaled, vs the "
        "i.i.d. delta method and the rounding and block models"
    ),
    package=__name__,
    algorithm_version=2,  # 2: the rows gained saturated_unrotated
    schema=Schema(
        params=PARAMS,
        stream_params=("n",),  # the windows; every layer, head, format and site shares them
        metrics=low_precision.METRICS,
        main_metric="sq_err",
        check_grid=heads.check_windows,
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), p["site"]),
        block_factor=8,
    ),
    theory=Theory(columns=low_precision.FORMAT_THEORY, point=low_precision.format_theory),
    summary=low_precision.SUMMARY,
    presentation=Presentation(
        figures=("real_precision_layers", "real_precision_atlas"),
        figure_applies={
            "real_precision_layers": low_precision.has_plain,
            "real_precision_atlas": low_precision.has_scaled,
        },
        headline=headline,
    ),
    assets=real_model.MINILM_ASSETS,
    example={
        "trials": 16,
        "grid": {
            "n": [16, 512],
            "layer": [0, 5],
            "head": [0, 11],
            "format": ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"],
            "site": ["logits", "qk", "qk_rotated", "probs", "output"],
        },
    },
)
