"""Slow per-trial reference for `real_temperature`: cosines from the raw vectors, plain formulas."""

from __future__ import annotations

import math

import numpy as np


def naive_trial(query, keys, tau: float) -> dict[str, float]:
    """One trial: the query and key vectors (not necessarily unit), at temperature tau."""
    q = np.asarray(query, np.float64)
    cos = np.array(
        [
            float(q @ k) / (np.linalg.norm(q) * np.linalg.norm(k))
            for k in np.asarray(keys, np.float64)
        ]
    )
    s = cos / tau
    p = np.exp(s - s.max())
    p /= p.sum()
    entropy = -sum(float(pi * math.log(pi)) for pi in p if pi > 0)
    var = float(np.mean((cos - cos.mean()) ** 2))
    return {
        "entropy": entropy,
        "gap": math.log(len(p)) - entropy,
        "var_cos": var,
        "gap_var_pred": var / (2 * tau * tau),
        "mean_cos": float(cos.mean()),
    }


def participation_ratio(vectors) -> float:
    x = np.asarray(vectors, np.float64)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    centred = x - x.mean(axis=0)
    cov = centred.T @ centred / (len(x) - 1)
    return float(np.trace(cov) ** 2 / np.trace(cov @ cov))
