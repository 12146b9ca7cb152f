"""Kind `normaliser_temperature`: the essay's third claim (a floor on the entropy of cosine
attention at tau = 1) under the normalisers proposed instead of softmax, on identical draws
(docs/science.md §12.4).

A kind of its own rather than a `normaliser` axis on temperature_entropy: a parameter with a
default still enters every point id (records/grid.py), so the axis would renew every softmax id
and its reference rows; and not new points of normaliser_attention, whose logits are gaussian
(a `logits` switch there would renew its ids alike). It shares the cosine sampler
(kernels/sampling.py) and the normalisers (subjects/normalisers.py), not a sibling kind."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Summary, Theory
from attnsim.kinds.columns import (
    BOOL,
    ENTROPY,
    F64,
    LOG_N,
    STR,
    N,
    d_param,
    normaliser_param,
    with_ci,
)
from attnsim.kinds.normaliser_temperature import kernel
from attnsim.stats import mean_ci
from attnsim.subjects import known, normalisers
from attnsim.theory import normalisers as th
from attnsim.theory.entropy import gap_tolerance

PARAMS = (
    normaliser_param(),
    N,
    d_param("dimension of the unit sphere the query and keys are uniform on (>= 2)", minimum=2),
    Param("tau", F64, "temperature: logits are cos(theta_i) / tau", minimum=0.0001, maximum=10000),
)

METRICS = (
    ENTROPY,
    Column("gap", F64, "log n - H of the weights p / sum p, nats (nan where every weight is 0)"),
    Column("mass", F64, "total weight sum_i p_i (1 for the normalised maps)"),
)

THEORY = (
    LOG_N,
    Column(
        "bounded_ratio",
        STR,
        "yes / no: are the weights strictly positive with a bounded ratio g(1/tau) / g(-1/tau) "
        "(§12.4's property for a floor); null where it is not known for the map",
    ),
    Column(
        "u_eff",
        F64,
        "effective inverse temperature log(g(1/tau) / g(-1/tau)) / 2 (null: no bounded ratio)",
    ),
    Column(
        "floor",
        F64,
        "largest log n - H any cosines give (§12.4): softmax's exact bound at 1/u_eff, or log n "
        "(no floor)",
    ),
    Column(
        "gap_mean_field",
        F64,
        "typical log n - H for uniform random directions (§12.4: mean field plus the 1/n term)",
    ),
    Column("support_mean_field", F64, "mean-field number of keys with nonzero weight"),
)

EXTRA = (
    Column("gap_max", F64, "largest gap over all trials of the point"),
    Column("gap_max_excess", F64, "gap_max - floor: negative while every trial respects the floor"),
    Column(
        "gap_within_floor",
        BOOL,
        "gap_max <= floor + tolerance, tolerance = 1e-12 (1 + log n + 2/tau) nats of rounding",
    ),
    *with_ci("gap_ratio", "mean gap / gap_mean_field"),
)


def bytes_per_trial(p) -> int:
    return kernel.bytes_per_trial(int(p["n"]))


def simulate_block(rng, trials, points):
    first = points[0]
    cosines = kernel.draw(rng, trials, first["n"], first["d"])
    return [kernel.simulate(cosines, p["normaliser"], p["tau"]) for p in points]


def theory(p) -> dict[str, object]:
    name, n, d, tau = p["normaliser"], int(p["n"]), int(p["d"]), float(p["tau"])
    bounded = normalisers.get(name).bounded_ratio
    gap, support = th.cosine_gap_mean_field(name, n, d, tau)
    return {
        "log_n": math.log(n),
        "bounded_ratio": ("yes" if bounded else "no") if known(bounded) else None,
        "u_eff": th.effective_inverse_temperature(name, n, tau)
        if known(bounded) and bounded
        else None,
        "floor": th.cosine_floor(name, n, tau),
        "gap_mean_field": gap,
        "support_mean_field": support,
    }


def extra_summary(metrics: dict[str, np.ndarray], p) -> dict[str, object]:
    """The largest gap against the floor, and the mean gap over its mean-field prediction (the
    prediction is a constant, so the ratio's interval is the mean's, divided)."""
    gap = metrics["gap"][np.isfinite(metrics["gap"])]
    n, tau = int(p["n"]), float(p["tau"])
    floor = th.cosine_floor(p["normaliser"], n, tau)
    gap_max = float(gap.max()) if gap.size else math.nan
    predicted = th.cosine_gap_mean_field(p["normaliser"], n, int(p["d"]), tau)[0]
    stats = mean_ci(gap)
    return {
        "gap_max": gap_max,
        "gap_max_excess": gap_max - floor,
        "gap_within_floor": bool(gap_max <= floor + gap_tolerance(n, tau)),
        "gap_ratio": stats["mean"] / predicted,
        "gap_ratio_ci_low": stats["ci_low"] / predicted,
        "gap_ratio_ci_high": stats["ci_high"] / predicted,
    }


def headline(s) -> str:
    """The largest gap at tau = 1 per normaliser, beside softmax's g(1) = 0.4745."""
    at_one = s[np.isclose(s["tau"], 1.0)]
    if not len(at_one):
        return ""
    worst = at_one.groupby("normaliser")["gap_max"].max()
    return "largest gap at τ = 1 (softmax's floor 0.4745): " + ", ".join(
        f"{k} {worst[k]:.3f}" for k in normalisers.names() if k in worst
    )


KIND = Kind(
    name="normaliser_temperature",
    description="entropy gap of cosine attention at temperature tau per normaliser (softmax and "
    "its rivals) on identical draws, against each one's floor",
    package=__name__,
    algorithm_version=1,
    schema=Schema(params=PARAMS, stream_params=("n", "d"), metrics=METRICS, main_metric="gap"),
    compute=Compute(
        simulate_block=simulate_block,
        bytes_per_trial=bytes_per_trial,
        counts=lambda p: kernel.counts(int(p["n"]), int(p["d"]), p["normaliser"]),
    ),
    theory=Theory(columns=THEORY, point=theory),
    summary=Summary(extreme_metrics=("entropy",), extra_columns=EXTRA, extra=extra_summary),
    presentation=Presentation(figures=("floor_vs_tau_by_normaliser",), headline=headline),
    example={
        "trials": 50,
        "grid": {
            "normaliser": [normalisers.SOFTMAX.name, normalisers.SPARSEMAX.name],
            "n": [16, 256],
            "d": [3],
            "tau": [0.5, 1.0],
        },
    },
)
