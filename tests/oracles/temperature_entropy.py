"""Slow references for `temperature_entropy`: directions sampled literally and plain formulas per
trial."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.temperature_entropy.kernel import simulate


def metrics(cosines: np.ndarray, tau: float) -> dict[str, np.ndarray]:
    """Per-trial entropy H (nats) and gap = log n - H (>= 0) of softmax(cos / tau)."""
    return simulate(cosines, [tau])[0]


def naive_cosines(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """One trial's cosines sampled literally: normalised Gaussian query and keys (n*d + d draws)."""
    q = rng.standard_normal(d)
    keys = rng.standard_normal((n, d))
    return keys @ q / (np.linalg.norm(keys, axis=1) * np.linalg.norm(q))


def naive_trial(cosines: np.ndarray, tau: float) -> dict[str, float]:
    """Slow per-trial reference: plain formulas on one trial's cosines."""
    s = np.asarray(cosines, dtype=np.float64) / tau
    p = np.exp(s - s.max())
    p /= p.sum()
    entropy = -sum(float(pi * np.log(pi)) for pi in p if pi > 0)
    return {"entropy": entropy, "gap": math.log(len(p)) - entropy}
