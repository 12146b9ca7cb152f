"""Slow per-trial references for `noisy_attention`: plain formulas, one trial at a time."""

from __future__ import annotations

import numpy as np


def naive_trial(logits, values, noise, noise_scale: float) -> dict[str, float]:
    """Slow per-trial reference: plain float64 formulas, one trial, one noisy draw at a time."""
    logits = np.asarray(logits, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    o = p @ values
    entropy = -sum(pi * np.log(pi) for pi in p if pi > 0)
    errors = []
    for eps in np.asarray(noise, dtype=np.float64):
        x = logits + noise_scale * eps
        q = np.exp(x - x.max())
        q /= q.sum()
        errors.append(float(np.sum((q @ values - o) ** 2)))
    dist2 = np.sum((values - o) ** 2, axis=1)
    return {
        "sq_err": float(np.mean(errors)),
        "entropy": float(entropy),
        "n_eff": float(1 / np.sum(p**2)),
        "grad_sq": float(np.sum(p**2 * dist2)),
        "spread": float(np.sum(p * dist2)),
    }
