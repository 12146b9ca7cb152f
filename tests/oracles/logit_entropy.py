"""Slow references for `logit_entropy`: logits sampled literally and plain formulas per trial."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kinds.logit_entropy.kernel import Draws, logit_multiplier, simulate


def make_logits(draws: Draws, logits: str, scale: float) -> np.ndarray:
    return logit_multiplier(draws, logits, scale)[:, None] * draws.z.astype(np.float64)


def metrics(draws: Draws, logits: str, scale: float) -> dict[str, np.ndarray]:
    return simulate(draws, logits, [scale])[0]


def naive_logits(rng: np.random.Generator, n: int, d: int, logits: str, scale: float) -> np.ndarray:
    """One trial's logits sampled literally: s = scale z, or s = K q / sqrt(d) with all n*d + d
    entries drawn."""
    if logits == "gaussian":
        return scale * rng.standard_normal(n)
    q = scale * rng.standard_normal(d)
    keys = scale * rng.standard_normal((n, d))
    return keys @ q / math.sqrt(d)


def naive_trial(logits: np.ndarray) -> dict[str, float]:
    """Slow per-trial reference: plain formulas on one trial's logits."""
    p = np.exp(logits - logits.max())
    p /= p.sum()
    entropy = -sum(float(pi * np.log(pi)) for pi in p if pi > 0)
    sum_p2 = float(np.sum(p**2))
    return {
        "entropy": entropy,
        "entropy_norm": entropy / math.log(len(p)),
        "renyi2": -math.log(sum_p2),
        "max_weight": float(p.max()),
        "n_eff": 1 / sum_p2,
    }
