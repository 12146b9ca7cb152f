"""Kind `noisy_attention`: how far i.i.d. logit noise moves the attention output (docs/science.md
§2)."""

from __future__ import annotations

import numpy as np

from attnsim.kinds.base import Compute, Kind, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import N, d_param, scale_param
from attnsim.kinds.logit_noise import (
    CONSTANT_METRICS,
    EXTRA,
    METRICS,
    NOISE_DRAWS,
    NOISE_SCALE,
    NONFINITE_METRICS,
    THEORY,
    extra_summary,
    noise_param,
    sq_err_next,
    theory,
    trial_metrics,
)
from attnsim.kinds.noisy_attention import kernel
from attnsim.subjects import noise_families

__all__ = (
    "KIND",
    "EXTRA",
    "METRICS",
    "THEORY",
    "extra_summary",
    "sq_err_next",
    "theory",
    "trial_metrics",
)

PARAMS = (
    N,
    d_param("dimension of the values"),
    scale_param("logit_scale", "std of the clean logits s_i ~ N(0, logit_scale^2)"),
    noise_param("§1.3"),
    NOISE_DRAWS,
    NOISE_SCALE,
)


def bytes_per_trial(p) -> int:
    """Peak working set per trial of `kernel.simulate` (logits, noise, one key chunk, a group of
    scales; see there). Beyond 8 noise scales sharing a block, each adds 8 K (d + 1) bytes per
    trial when n takes several key chunks (their float64 sums)."""
    return kernel.bytes_per_trial(int(p["n"]), int(p["d"]), int(p["noise_draws"]))


def simulate_block(rng, trials, points):
    first = points[0]
    per_scale = kernel.simulate(
        rng,
        trials,
        first["n"],
        first["d"],
        first["logit_scale"],
        first["noise"],
        first["noise_draws"],
        [p["noise_scale"] for p in points],
    )
    return [trial_metrics(out, p, trials) for p, out in zip(points, per_scale)]


def headline(s) -> str:
    """Measured over predicted squared error where the delta method applies (its predicted first
    correction small, the delta_method claims' regime), and how many points have kappa = inf."""
    from attnsim.kinds.noisy_attention.claims import THRESHOLDS, predicted_correction

    finite = s[s["kappa_finite"] & (s["kappa"] > 0) & s["err_ratio"].notna()]
    ok = (
        finite[predicted_correction(finite) <= THRESHOLDS.correction_max] if len(finite) else finite
    )
    parts = []
    if len(ok):
        parts.append(
            "measured/predicted sq_err where the predicted first correction is <= "
            f"{THRESHOLDS.correction_max:g}: "
            f"median {np.median(ok['err_ratio']):.3f} (range "
            f"{ok['err_ratio'].min():.3f}–{ok['err_ratio'].max():.3f}, {len(ok)} points)"
        )
    infinite = int((~s["kappa_finite"]).sum())
    if infinite:
        parts.append(f"κ = ∞ flagged on {infinite} points")
    return "; ".join(parts)


KIND = Kind(
    name="noisy_attention",
    description="attention output under i.i.d. logit noise vs the delta-method prediction",
    package=__name__,
    # 3: the trial rows gained sq_err_next (the older metrics' values unchanged,
    # tests/kinds/test_reference_rows.py); 4: form 1 (expm1) only up to sigma max|z| = 1 (kernel
    # doc); 5: up to 0.5, and Exp(1) draws (gumbel, student_t) through SIMD log, not log1p
    algorithm_version=5,
    schema=Schema(
        params=PARAMS,
        stream_params=("n", "d", "logit_scale", "noise", "noise_draws"),
        metrics=METRICS,
        main_metric="rel_err",
    ),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"]), int(p["noise_draws"]), p["noise"]),
        # Small n: the K x d outputs per scale are as large as the inputs; bigger blocks amortise
        # the calls.
        block_factor=2,
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(
        extreme_metrics=("entropy",),
        extra_columns=EXTRA,
        extra=extra_summary,
        constant_metrics=CONSTANT_METRICS,
        nonfinite_metrics=NONFINITE_METRICS,
    ),
    presentation=Presentation(
        figures=("rel_err_vs_n", "collapse", "delta_shortfall"),
        headline=headline,
        # the delta method's claim of each family with a finite kappa (claims.DELTA_METHOD):
        # delta_shortfall draws its boundaries along noise_scale at their predicted correction
        boundary_figures={
            f"delta_method_{family}": "delta_shortfall"
            for family in noise_families.names(lambda f: f.kappa_can_be_finite)
        },
    ),
    example={
        "trials": 100,
        "grid": {
            "n": [16, 64],
            "d": [16],
            "logit_scale": [0.0, 1.0],
            "noise": [noise_families.GAUSSIAN.name, noise_families.LAPLACE.name],
            "noise_draws": [8],
            "noise_scale": [0.1, 0.5],
        },
    },
)
