"""Kind `shifted_logits` (an attnsim plugin): adding one constant c to every logit leaves softmax
unchanged.

The essay's cancellation argument rests on it (docs/science.md §2.2 in attnsim): only the shape of
the noise law matters. Each trial draws gaussian logits s and measures |H(s + c) - H(s)| in nats,
which must be rounding only.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.base import Column, Compute, Kind, Param, Presentation, Schema, Theory
from attnsim.kinds.columns import F64, N

SHIFT = Param("shift", F64, "constant c added to every logit", minimum=-1000, maximum=1000)
DEVIATION = Column(
    "shift_deviation", F64, "|H(s + c) - H(s)|, nats: rounding only, by shift invariance"
)


def entropy(logits: np.ndarray) -> np.ndarray:
    """H = log Z - sum p (s - max s) along the last axis, written plainly (this kind is a demo)."""
    centred = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(centred)
    total = weights.sum(axis=-1)
    return np.log(total) - (weights * centred).sum(axis=-1) / total


def simulate_block(rng, trials, points):
    logits = rng.standard_normal((trials, int(points[0]["n"])))
    base = entropy(logits)
    return [{"shift_deviation": np.abs(entropy(logits + p["shift"]) - base)} for p in points]


KIND = Kind(
    name="shifted_logits",
    description="softmax entropy is unchanged by a common shift of the logits (a plugin kind)",
    package=__name__,
    algorithm_version=1,
    schema=Schema(
        params=(N, SHIFT),
        stream_params=("n",),
        metrics=(DEVIATION,),
        main_metric="shift_deviation",
    ),
    compute=Compute(bytes_per_trial=lambda p: 32 * int(p["n"]), simulate_block=simulate_block),
    theory=Theory(
        columns=(
            Column(
                "rounding_bound", F64, "1e-12 (1 + log n + |c|): float64 rounding of both entropies"
            ),
        ),
        point=lambda p: {"rounding_bound": 1e-12 * (1 + math.log(p["n"]) + abs(p["shift"]))},
    ),
    presentation=Presentation(
        figures=("shift_deviation",),
        headline=lambda s: (
            f"largest mean |H(s + c) - H(s)|: {s['shift_deviation_mean'].max():.2g} nats"
        ),
    ),
    example={"trials": 50, "grid": {"n": [8, 64], "shift": [0.0, 10.0]}},
)
