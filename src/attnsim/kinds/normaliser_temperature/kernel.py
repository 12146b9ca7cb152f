"""One block of cosines serves every normaliser and temperature of a stream: logits
s_i = cos(theta_i) / tau for a uniform query and n uniform keys on the sphere of R^d (the sampler
of docs/science.md §4.1, `attnsim.kernels.sampling.sphere_cosines`), then each normaliser's
weights (`attnsim.subjects.normalisers`) and the entropy of p / sum p, in float64 (common random
numbers: differences between normalisers and temperatures are not sampling noise)."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels.sampling import sphere_cosines
from attnsim.kinds.base import Counts, Work
from attnsim.subjects import normalisers


def bytes_per_trial(n: int) -> int:
    """float32 cosines and their words, then float64 logits, weights and the entropy's temporaries
    (four (n,) float64 arrays), and the sparse maps' sort (two more)."""
    return 8 * n + 8 * 6 * n + 256


def draw(rng: np.random.Generator, trials: int, n: int, d: int) -> np.ndarray:
    return sphere_cosines(rng, trials, n, d)


def simulate(cosines: np.ndarray, name: str, tau: float) -> dict[str, np.ndarray]:
    """Per trial: the entropy of p / sum p (nats), the gap log n - H and the total mass sum p."""
    n = cosines.shape[-1]
    p = normalisers.get(name).weights(cosines.astype(np.float64) / tau)
    mass, entropy = normalisers.mass_and_entropy(p)
    return {"entropy": entropy, "gap": math.log(n) - entropy, "mass": mass}


def counts(n: int, d: int, normaliser: str) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream the
    cosines (`sampling.sphere_cosines`); per point the float64 logits, the normaliser (one exp,
    or a sort for the sparse maps) and the entropy (a log and ~8 passes of 8 bytes per key).
    Calls: ~25 per point and block."""
    normalise = (
        Counts(bytes=16 * n * max(1.0, math.log2(n)))
        if normalisers.get(normaliser).sorts_rows
        else Counts(exps=n)
    )
    radius = Counts(exps32=2 * n, expm1s=n, words=n, bytes=24 * n) if d > 2 else Counts()
    return Work(
        own=normalise + Counts(exps=n, bytes=80 * n),
        shared=Counts(words=n, exps32=n, bytes=12 * n) + radius,
        own_block=Counts(calls=25),
        shared_block=Counts(calls=10),
    )
