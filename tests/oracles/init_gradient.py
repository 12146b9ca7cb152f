"""Slow references for `init_gradient`: logits and values sampled literally and plain formulas per
trial."""

from __future__ import annotations

import numpy as np

from attnsim.kinds.init_gradient.kernel import Draws


def make_logits(draws: Draws, scale: float) -> np.ndarray:
    return (float(scale) ** 2 * draws.query_factor)[:, None] * draws.z.astype(np.float64)


def naive_draw(
    rng: np.random.Generator, n: int, d: int, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """One trial's logits and values sampled literally: s = K q / sqrt(d), all n*d + d entries
    drawn."""
    q = scale * rng.standard_normal(d)
    keys = scale * rng.standard_normal((n, d))
    return keys @ q / np.sqrt(d), rng.standard_normal((n, d))


def naive_trial(logits: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Slow per-trial reference: plain formulas (the literal closed form for ||J||_F, and the full
    matrix)."""
    logits = np.asarray(logits, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    p = np.exp(logits - logits.max())
    p /= p.sum()
    o = p @ values
    dist2 = np.array([np.sum((v - o) ** 2) for v in values])
    s2, s3 = float(np.sum(p**2)), float(np.sum(p**3))
    jacobian = np.diag(p) - np.outer(p, p)  # ds -> dp
    return {
        "entropy": -sum(float(pi * np.log(pi)) for pi in p if pi > 0),
        "grad_sq": float(np.sum(p**2 * dist2)),
        "grad_sq_matrix": float(np.sum((values.T @ jacobian) ** 2)),  # ||V^T J||_F^2, do/ds = V^T J
        "jacobian_fro": float(np.sqrt(max(s2 - 2 * s3 + s2**2, 0.0))),
        "jacobian_fro_matrix": float(np.linalg.norm(jacobian)),
        "n_eff": 1 / s2,
    }
