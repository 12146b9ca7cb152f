"""Kind `precision_attention`: attention with one rounding to bf16, fp16 or fp8, on synthetic rows
(docs/science.md §11): the measured error against the essay's i.i.d. delta method and the rounding
model's heteroscedastic prediction, incoherent processing on outlier features."""

from __future__ import annotations

import numpy as np

from attnsim.errors import ConfigError
from attnsim.kinds import low_precision
from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Theory
from attnsim.kinds.columns import F64, I64, N, d_param, scale_param
from attnsim.kinds.precision_attention import kernel

PARAMS = (
    N,
    d_param("dimension of queries, keys and values"),
    scale_param(
        "logit_scale",
        "std sigma of the logits: s_i = q . k_i / sqrt(d) ~ N(0, sigma^2) given q, i.i.d. over "
        "keys",
    ),
    Param(
        "outlier_channels",
        I64,
        "number of outlier feature channels of q and k (0: isotropic), docs/science.md §11.5",
        minimum=0,
        maximum=4096,
    ),
    Param(
        "outlier_scale",
        F64,
        "std of the outlier channels relative to the others (ignored when outlier_channels is 0)",
        minimum=1,
        maximum=1000,
    ),
    Param(
        "key_mean",
        F64,
        "a mean shared by all keys, in units of each channel's std (SageAttention's observed "
        "key bias; q . mean k moves every logit of a row alike, so p is unchanged): what its "
        "smoothing removes, docs/science.md §11.9",
        minimum=0,
        maximum=100,
        default=0.0,
        id_omits_default=True,
    ),
    low_precision.FORMAT,
    low_precision.SITE,
    *low_precision.SCALING_PARAMS,
)


def check_grid(grid) -> None:
    """The outlier channels are some of the d channels: more than d would be clipped to d by the
    kernel while the rows record the count asked for (and the claims count an outlier point)."""
    if max(grid["outlier_channels"]) > min(grid["d"]):
        raise ConfigError(
            f"grid.outlier_channels: {max(grid['outlier_channels'])} outlier channels but d = "
            f"{min(grid['d'])}; keep outlier_channels <= d for every combination"
        )


THEORY = (
    *low_precision.FORMAT_THEORY,
    Column(
        "rotation_gain_theory",
        F64,
        "(d + 2) sum lambda^2 / (sum lambda)^2: the qk error's reduction by a random rotation in "
        "the relative-rounding "
        "approximation, lambda the channel variances (docs/science.md §11.5)",
    ),
)


def theory(p) -> dict[str, object]:
    lam = kernel.channel_variances(
        int(p["d"]), int(p["outlier_channels"]), float(p["outlier_scale"])
    )
    gain = (len(lam) + 2) * float(np.sum(lam * lam)) / float(np.sum(lam)) ** 2
    return {**low_precision.format_theory(p), "rotation_gain_theory": gain}


def headline(s) -> str:
    rows = s[s["site"] == "logits"]
    if rows.empty:
        return ""
    iid = rows["err_ratio_iid"].dropna()
    model = rows["err_ratio_model"].dropna()
    return (
        f"logits rounded: measured / i.i.d. delta {iid.min():.2f}-{iid.max():.2f}, "
        f"measured / rounding model {model.min():.3f}-{model.max():.3f} ({len(rows)} points)"
    )


def simulate_block(rng, trials, points):
    return kernel.simulate_block(rng, trials, points)


KIND = Kind(
    name="precision_attention",
    description=(
        "attention rounded to bf16/fp16/fp8/fp6/fp4, per value or block-scaled (MX, NVFP4), vs "
        "the i.i.d. delta method and the rounding and block models"
    ),
    package=__name__,
    # 2: the rows gained saturated_unrotated (the others unchanged:
    # tests/kinds/test_reference_rows.py)
    algorithm_version=2,
    schema=Schema(
        params=PARAMS,
        stream_params=("n", "d", "logit_scale", "outlier_channels", "outlier_scale"),
        metrics=low_precision.METRICS,
        main_metric="sq_err",
        check_grid=check_grid,
    ),
    compute=Compute(
        bytes_per_trial=lambda p: kernel.bytes_per_trial(int(p["n"]), int(p["d"])),
        simulate_block=simulate_block,
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=low_precision.SUMMARY,
    presentation=Presentation(
        figures=("precision_error", "precision_rotation", "precision_bias", "precision_atlas"),
        figure_applies={
            "precision_error": low_precision.has_plain,
            "precision_rotation": low_precision.has_plain,
            "precision_bias": low_precision.has_plain,
            "precision_atlas": low_precision.has_scaled,
        },
        headline=headline,
    ),
    example={
        "trials": 100,
        "grid": {
            "n": [64, 256],
            "d": [16],
            "logit_scale": [1.0, 3.0],
            "outlier_channels": [2],
            "outlier_scale": [4.0],
            "format": ["bfloat16", "float8_e4m3fn"],
            "site": ["logits", "probs"],
        },
    },
)
