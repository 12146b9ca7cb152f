"""Naive per-trial numpy loops: the reference each kernel is measured against (benchmark only).

What a careful first version would be: one trial of one grid point at a time, fresh draws from
numpy's own float64 samplers (no common random numbers across scales, no sampling tricks beyond
the ones noted), plain float64 formulas vectorised within the trial. Each function draws and
computes one trial and returns the number of attention evaluations (or softmaxes) it made.
The test oracles (`naive_trial` in the kernel modules) check the numbers; these only set the pace.
"""

from __future__ import annotations

import math

import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    w = np.exp(x - x.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def noisy_attention(
    rng: np.random.Generator, n: int, d: int, k: int, logit_scale: float, sigma: float
) -> int:
    """Gaussian logit noise: K noisy outputs against the clean one."""
    s = logit_scale * rng.standard_normal(n)
    v = rng.standard_normal((n, d))
    eps = sigma * rng.standard_normal((k, n))
    p = softmax(s)
    o = p @ v
    shift = softmax(s + eps) @ v - o
    sq_err = np.mean(np.sum(shift**2, axis=1))
    dist2 = np.sum((v - o) ** 2, axis=1)
    spread, grad_sq = p @ dist2, (p * p) @ dist2
    _ = (sq_err, math.sqrt(sq_err / spread), entropy(p), 1 / np.sum(p * p), grad_sq)
    return k


def logit_entropy(rng: np.random.Generator, n: int, scale: float) -> int:
    """Gaussian logits (the dot-product trick is left out: a literal q.k_i would cost d times more
    draws)."""
    p = softmax(scale * rng.standard_normal(n))
    h, sum_p2 = entropy(p), float(np.sum(p * p))
    _ = (h, h / math.log(n), -math.log(sum_p2), p.max(), 1 / sum_p2)
    return 1


def temperature_entropy(rng: np.random.Generator, n: int, d: int, tau: float) -> int:
    """Cosines from numpy's Beta sampler (exact, n draws; literal unit vectors would cost n d)."""
    cosines = 2 * rng.beta((d - 1) / 2, (d - 1) / 2, n) - 1
    h = entropy(softmax(cosines / tau))
    _ = (h, math.log(n) - h)
    return 1


def init_gradient(rng: np.random.Generator, n: int, d: int, scale: float) -> int:
    """Dot-product logits by the chi-square trick (n + 1 draws), values drawn in full."""
    r = math.sqrt(rng.chisquare(d) / d)
    p = softmax(scale**2 * r * rng.standard_normal(n))
    v = rng.standard_normal((n, d))
    o = p @ v
    grad_sq = (p * p) @ np.sum((v - o) ** 2, axis=1)
    s2, s3 = np.sum(p * p), np.sum(p**3)
    _ = (entropy(p), grad_sq, math.sqrt(max(s2 - 2 * s3 + s2 * s2, 0.0)), 1 / s2)
    return 1
