"""Slow per-trial reference for `real_entropy`: plain formulas on one row of one head."""

from __future__ import annotations

import math

import numpy as np


def naive_trial(logits, values) -> dict[str, float]:
    logits, values = np.asarray(logits, np.float64), np.asarray(values, np.float64)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    o = p @ values
    dist2 = np.sum((values - o) ** 2, axis=1)
    spread_uniform = np.mean(np.sum((values - values.mean(axis=0)) ** 2, axis=1))
    grad_sq = float(np.sum(p**2 * dist2))
    return {
        "entropy": float(-sum(pi * math.log(pi) for pi in p if pi > 0)),
        "n_eff": float(1 / np.sum(p**2)),
        "max_weight": float(p.max()),
        "grad_sq": grad_sq,
        "grad_rel": grad_sq / spread_uniform,
        "sink_weight": float(p[0] + p[-1]),
        "logit_std": float(np.sqrt(np.mean((logits - logits.mean()) ** 2))),
    }


def naive_init(std: float, seed: int, config):
    """BERT's initialisation at `std`, drawn literally (the kernel draws it at std 1 and scales)."""
    from attnsim.models.minilm import Bert

    return Bert.random(np.random.default_rng(seed), std=std, config=config)
