"""Gradient of the attention output with respect to the logits at initialisation, batched over trials.

Logits are dot products s_i = q.k_i / sqrt(d) with entries of q, k_i i.i.d. N(0, scale^2),
drawn with the exact trick of `attnsim.kernels.logit_entropy` (s = scale^2 r z,
r = sqrt(chi2_d / d)); values v_i ~ N(0, I_d). Shapes: z (T, n), values (T, n, d).

Per trial, with p = softmax(s) and o = sum_i p_i v_i:

- grad_sq = ||do/ds||_F^2 = sum_i p_i^2 ||v_i - o||^2   (column i of do/ds is p_i (v_i - o)),
- jacobian_fro = ||diag(p) - p p^T||_F = sqrt(sum p^2 - 2 sum p^3 + (sum p^2)^2).

Both vanish as the weights become one-hot, and both are computed so that they keep
their relative accuracy there instead of stopping at a rounding floor:

- The literal closed form of ||J||_F^2 cancels 1 - 2 + 1 when p is one-hot, leaving
  ~1e-16 of noise (a floor of ~1e-8 on jacobian_fro). We use the same polynomial
  regrouped into non-negative terms around the largest weight p_m (index m):
      ||J||_F^2 = (1 + S2) R2 - 2 sum_{i != m} p_i^3 + p_m^2 (R1^2 + R2),
  with R1 = sum_{i != m} p_i (= 1 - p_m), R2 = sum_{i != m} p_i^2, S2 = p_m^2 + R2;
  since p_i <= 1/2 for i != m, (1 + S2) R2 - 2 sum p_i^3 >= S2 R2 >= 0: no cancellation.
  The result is still clipped at 0 before the square root.
- ||v_i - o||^2 is computed relative to the value of the top key: with w_i = v_i - v_m
  and u = o - v_m = sum_i p_i w_i (w_m = 0 exactly, so u is accurate even when
  1 - p_m is below the rounding of o), ||v_i - o||^2 = ||w_i||^2 - 2 w_i.u + ||u||^2,
  exact for i = m and a benign sum elsewhere (clipped at 0).

The top key m is the argmax of z, the same for every scale (the logits are a positive
multiple of z), so the centred values are computed once per block. Common random
numbers: z, r and the values serve every scale; each scale is computed on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnsim.kernels.logit_entropy import query_factor
from attnsim.kernels.softmax import softmax_stats


@dataclass(frozen=True)
class Draws:
    z: np.ndarray  # (T, n) standard normals; logits = scale^2 * query_factor * z
    query_factor: np.ndarray  # (T,) r = sqrt(chi2_d / d)
    values: np.ndarray  # (T, n, d) standard normals


def draw(rng: np.random.Generator, trials: int, n: int, d: int) -> Draws:
    """The block's random numbers: chi-square (T,), then z (T, n), then values (T, n, d)."""
    factor = query_factor(rng, trials, d)
    z = rng.standard_normal((trials, n))
    return Draws(z=z, query_factor=factor, values=rng.standard_normal((trials, n, d)))


def make_logits(draws: Draws, scale: float) -> np.ndarray:
    return (float(scale) ** 2 * draws.query_factor)[:, None] * draws.z


@dataclass(frozen=True)
class Centred:
    """Values relative to the top key's value; shared by every scale of a block."""

    top: np.ndarray  # (T,) index m of the largest logit
    rel: np.ndarray  # (T, n, d) w_i = v_i - v_m
    rel_sq: np.ndarray  # (T, n) ||w_i||^2


def centre(draws: Draws) -> Centred:
    top = np.argmax(draws.z, axis=-1)
    rel = draws.values - draws.values[np.arange(len(top)), top][:, None, :]
    return Centred(top=top, rel=rel, rel_sq=np.einsum("tnd,tnd->tn", rel, rel))


def metrics(draws: Draws, centred: Centred, scale: float) -> dict[str, np.ndarray]:
    """Per-trial entropy, grad_sq, jacobian_fro and n_eff at one scale."""
    weights, entropy = softmax_stats(make_logits(draws, scale))
    rows = np.arange(weights.shape[0])
    p_top = weights[rows, centred.top]
    others = weights.copy()
    others[rows, centred.top] = 0.0
    others_sq = others * others
    r1 = others.sum(axis=-1)
    r2 = others_sq.sum(axis=-1)
    sum_p2 = p_top**2 + r2
    jac_sq = (1 + sum_p2) * r2 - 2 * np.einsum("tn,tn->t", others_sq, others) + p_top**2 * (r1**2 + r2)

    u = np.matmul(weights[:, None, :], centred.rel)[:, 0, :]  # o - v_m, (T, d)
    cross = np.matmul(centred.rel, u[:, :, None])[:, :, 0]  # w_i . u, (T, n)
    dist2 = centred.rel_sq - 2 * cross
    dist2 += np.einsum("td,td->t", u, u)[:, None]
    np.maximum(dist2, 0.0, out=dist2)
    others_sq[rows, centred.top] = p_top**2  # now p_i^2 for every key
    return {
        "entropy": entropy,
        "grad_sq": np.einsum("tn,tn->t", others_sq, dist2),
        "jacobian_fro": np.sqrt(np.maximum(jac_sq, 0.0)),
        "n_eff": 1.0 / sum_p2,
    }


# --------------------------------------------------------------------------- oracles for the tests


def naive_draw(rng: np.random.Generator, n: int, d: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """One trial's logits and values sampled literally: s = K q / sqrt(d), all n*d + d entries drawn."""
    q = scale * rng.standard_normal(d)
    keys = scale * rng.standard_normal((n, d))
    return keys @ q / np.sqrt(d), rng.standard_normal((n, d))


def naive_trial(logits: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """Slow per-trial reference: plain formulas (the literal closed form for ||J||_F, and the full matrix)."""
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
