"""Kind `temperature_entropy`: entropy of cosine-similarity attention at temperature tau
(docs/science.md §4).

The gap log n - H can never exceed the exact finite-n worst case `exact_gap(n, tau)`;
the summary records the largest gap seen over all trials and whether it respects that bound.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import BOOL, ENTROPY, F64, LOG_N, N, d_param
from attnsim.kinds.temperature_entropy import kernel
from attnsim.theory.entropy import asymptotic_gap, exact_gap, gap_tolerance, random_direction_gap

PARAMS = (
    N,
    d_param("dimension of the unit sphere the query and keys are uniform on (>= 2)", minimum=2),
    Param("tau", F64, "temperature: logits are cos(theta_i) / tau", minimum=0.0001, maximum=10000),
)

METRICS = (
    ENTROPY,
    Column("gap", F64, "log n - H = KL(p || uniform), nats, >= 0"),
)

THEORY = (
    LOG_N,
    Column(
        "gap_exact",
        F64,
        "exact finite-n worst case of log n - H over all cosine configurations (k keys at +1, n - "
        "k at -1)",
    ),
    Column("gap_asymptotic", F64, "g(tau): the n -> inf worst case; g(1) = 0.4745"),
    Column(
        "gap_random_direction",
        F64,
        "1 / (2 d tau^2): the gap for random directions while it is small (d tau^2 >> 1, large n)",
    ),
)

EXTRA = (
    Column("gap_max", F64, "largest gap over all trials of the point"),
    Column(
        "gap_max_excess",
        F64,
        "gap_max - gap_exact: negative while every trial respects the worst-case bound",
    ),
    Column(
        "gap_within_bound",
        BOOL,
        "gap_max <= gap_exact + tolerance, tolerance = 1e-12 (1 + log n + 2/tau) nats of float64 "
        "rounding",
    ),
)


def bytes_per_trial(p) -> int:
    # drawing: angles and radii (float32, 4 + 4 bytes per key, plus the words); then the
    # cosines (float32), the gaps and the weights buffer (float64): 20 bytes per key
    return 20 * int(p["n"]) + 128


def simulate_block(rng, trials, points):
    first = points[0]
    cosines = kernel.draw_cosines(rng, trials, first["n"], first["d"])
    return kernel.simulate(cosines, [p["tau"] for p in points])


def theory(p) -> dict[str, object]:
    n, d, tau = p["n"], p["d"], p["tau"]
    return {
        "log_n": math.log(n),
        "gap_exact": float(exact_gap(n, tau)),
        "gap_asymptotic": float(asymptotic_gap(tau)),
        "gap_random_direction": float(random_direction_gap(d, tau)),
    }


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    gap_max = float(np.max(metrics["gap"]))
    bound = float(exact_gap(p["n"], p["tau"]))
    return {
        "gap_max": gap_max,
        "gap_max_excess": gap_max - bound,
        "gap_within_bound": bool(gap_max <= bound + gap_tolerance(p["n"], p["tau"])),
    }


def headline(s) -> str:
    """Whether every trial respects its exact bound, and the largest gap at tau = 1 against g(1)."""
    at_one = s[np.isclose(s["tau"], 1.0)]
    text = f"every trial within its exact bound: {bool(s['gap_within_bound'].all())}"
    if len(at_one):
        text += (
            f"; largest gap at τ = 1: {at_one['gap_max'].max():.4f} (bound g(1) = "
            f"{at_one['gap_asymptotic'].iloc[0]:.4f})"
        )
    return text


KIND = Kind(
    name="temperature_entropy",
    description=(
        "entropy gap log n - H of cosine attention at temperature tau for random directions, "
        "against the worst-case bound"
    ),
    package=__name__,
    algorithm_version=3,
    schema=Schema(params=PARAMS, stream_params=("n", "d"), metrics=METRICS, main_metric="gap"),
    compute=Compute(
        bytes_per_trial=bytes_per_trial,
        simulate_block=simulate_block,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"])),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(extreme_metrics=("entropy",), extra_columns=EXTRA, extra=extra_summary),
    presentation=Presentation(figures=("temperature_gap",), headline=headline),
    example={"trials": 100, "grid": {"n": [16, 256], "d": [3, 32], "tau": [0.1, 1.0]}},
)
