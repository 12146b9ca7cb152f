"""Kind `precision_attention`: attention with one rounding to bf16, fp16 or fp8, on synthetic rows
(docs/science.md §11): the measured error against the essay's i.i.d. delta method and the rounding
model's heteroscedastic prediction, incoherent processing on outlier features."""

from __future__ import annotations

import math
from functools import cache

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
    Column(
        "saturated_theory",
        F64,
        "site logits with E8M0 scale groups: the share of the logits the OCP rule clips, sum_e "
        "(G(2^(e+1)) - G(m 2^e)) G(2^(e+1))^(k-1) for groups of k N(0, sigma^2) values (0 under "
        "round-up; nan elsewhere), docs/science.md §11.9",
    ),
    Column(
        "kappa_theory",
        F64,
        "site logits with E8M0 scale groups: the effective variance E[q g] / E[q] of the logits' "
        "rounding and clipping errors under the point's rule, q = p^2 (1 - p)^2 the weight "
        "softmax gives a key (nan elsewhere), docs/science.md §11.9",
    ),
    Column(
        "rule_ratio_theory",
        F64,
        "site logits with E8M0 scale groups: kappa_theory under OCP MX (e8m0_ocp) over "
        "round-up (e8m0_ceil) at the point's format, sigma, group size and n (nan elsewhere), "
        "docs/science.md §11.9",
    ),
)
E8M0_RULES = ("e8m0_ceil", "e8m0_ocp")


def group_size(granularity: str, n: int) -> int:
    """Values sharing a scale at site logits (one row of n keys): a block, the row, or one."""
    if granularity.startswith("block"):
        return min(int(granularity.removeprefix("block")), n)
    return 1 if granularity == "channel" else n


@cache
def _kappa(fmt: str, rule: str, sigma: float, k: int, n: int):
    from attnsim.kernels.rounding import FORMATS
    from attnsim.theory import blockscale

    return blockscale.kappa(FORMATS[fmt], rule, sigma, k, n)


def block_theory(p) -> dict[str, float]:
    """The saturation theory's columns of a point (nan off the logits site's E8M0 groups)."""
    nan = {"saturated_theory": math.nan, "kappa_theory": math.nan, "rule_ratio_theory": math.nan}
    rule, granularity = p.get("scale_type", "fp32"), p.get("granularity", "none")
    if p["site"] != "logits" or granularity == "none" or rule not in E8M0_RULES:
        return nan
    from attnsim.kernels.rounding import FORMATS
    from attnsim.theory import blockscale

    fmt, sigma, n = p["format"], float(p["logit_scale"]), int(p["n"])
    k = group_size(granularity, n)
    ceil, ocp = (_kappa(fmt, r, sigma, k, n).total for r in E8M0_RULES)
    clipped = blockscale.saturation(FORMATS[fmt], sigma, k)[1] if rule == "e8m0_ocp" else 0.0
    return {
        "saturated_theory": clipped,
        "kappa_theory": ocp if rule == "e8m0_ocp" else ceil,
        "rule_ratio_theory": ocp / ceil if ceil > 0 else math.nan,
    }


def theory(p) -> dict[str, object]:
    lam = kernel.channel_variances(
        int(p["d"]), int(p["outlier_channels"]), float(p["outlier_scale"])
    )
    gain = (len(lam) + 2) * float(np.sum(lam * lam)) / float(np.sum(lam)) ** 2
    return {**low_precision.format_theory(p), "rotation_gain_theory": gain, **block_theory(p)}


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
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"]), p["site"], p["granularity"]),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=low_precision.SUMMARY,
    presentation=Presentation(
        figures=(
            "precision_error",
            "precision_rotation",
            "precision_bias",
            "precision_atlas",
            "precision_mx_rules",
        ),
        figure_applies={
            "precision_error": low_precision.has_plain,
            "precision_rotation": low_precision.has_plain,
            "precision_bias": low_precision.has_plain,
            "precision_atlas": low_precision.has_scaled,
            "precision_mx_rules": lambda values: (
                "logits" in values["site"]
                and any(g != "none" for g in values["granularity"])
                and any(r in E8M0_RULES for r in values["scale_type"])
            ),
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
