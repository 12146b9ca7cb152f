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
- Values are measured from the top key's value: w_i = v_i - v_m (exact in float64, the
  values being float32 numbers; w_m = 0), u = o - v_m = sum_i p_i w_i (accurate even when
  1 - p_m is below the rounding of o), and
      grad_sq = sum_i p_i^2 ||w_i||^2 - 2 u . sum_i p_i^2 w_i + ||u||^2 sum_i p_i^2
  (= sum_i p_i^2 ||w_i - u||^2): with one-hot weights the first and last terms are both
  ~p_2^2 ||w_2||^2 and the middle one smaller by p_2, so nothing cancels; clipped at 0.

Streaming: the top key m (the argmax of z, the same for every scale since the logits are a
positive multiple of z) is swapped to index 0 (the metrics are symmetric in the keys and the
values are i.i.d. and independent of the logits, so the laws are unchanged); the values are
then drawn in chunks of keys (`key_chunk`) after z, and no trial ever holds all n x d values.
Per scale: a first pass over the gaps g = max z - z gives Z = sum e^{-c g}, the entropy and the
Jacobian sums; then each value chunk adds its share of sum p w, sum p^2 w and sum p^2 ||w||^2
through one (2 x m) by (m x d) product per scale. Draw order per block: the chi-square, z
(float32 Box-Muller), then the values chunk by chunk (float32 Box-Muller).

Common random numbers: z, r and the values serve every scale; each scale is computed on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels.sampling import query_factor, standard_normal
from attnsim.kernels.softmax import GapSoftmax, exp_neg, gaps

CHUNK_BYTES = (
    4 * 2**20
)  # working set of one key chunk per trial (part of the algorithm: it fixes the draw order)


def chunk_bytes_per_key(d: int) -> int:
    """Bytes per key of a chunk: drawing it (words, radius, float32 values: 10 d), then the float32
    values and their float64 differences (12 d), the norms and the weights (24)."""
    return 12 * d + 28


def key_chunk(n: int, d: int) -> int:
    """Keys per chunk: all n if they fit CHUNK_BYTES, else an even split into chunks that do."""
    count = math.ceil(n * chunk_bytes_per_key(d) / CHUNK_BYTES)
    return math.ceil(n / count)


def bytes_per_trial(n: int, d: int) -> int:
    """Peak working set per trial: z (float32), gaps and weights (float64), one key chunk."""
    return 20 * n + key_chunk(n, d) * chunk_bytes_per_key(d) + 32 * d + 256


@dataclass(frozen=True)
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    z: np.ndarray  # (T, n) float32 standard normals, the largest at index 0; logits = scale^2 * query_factor * z
    query_factor: np.ndarray  # (T,) r = sqrt(chi2_d / d)
    values: np.ndarray  # (T, n, d) float32


def simulate(rng: np.random.Generator, trials: int, n: int, d: int, scales, record: bool = False):
    """Per scale, metric -> (T,) float64: entropy, grad_sq, jacobian_fro, n_eff.

    With `record`, also returns the `Draws` (all values kept: for tests on small sizes only).
    """
    rows = np.arange(trials)
    factor = query_factor(rng, trials, d)
    z = standard_normal(rng, (trials, n))
    top = np.argmax(z, axis=1)
    peak = z[rows, top]
    z[rows, top] = z[:, 0]
    z[:, 0] = peak
    softmax = GapSoftmax(gaps(z))
    gap = softmax.gap
    multipliers = [float(scale) ** 2 * factor for scale in scales]

    # per scale: totals, entropy and the Jacobian's sums (key 0 is the top key, e_0 = 1)
    totals, results = [], []
    for c in multipliers:
        e = softmax.weights(c)
        others = e[:, 1:]
        rest = others.sum(axis=-1)
        total = 1.0 + rest
        entropy = np.log(total) + c * np.vecdot(e, gap) / total
        np.clip(entropy, 0.0, softmax.log_n, out=entropy)
        p_top = 1.0 / total
        r1 = rest / total
        r2 = np.vecdot(others, others) / total**2
        r3 = np.einsum("tn,tn,tn->t", others, others, others) / total**3
        sum_p2 = p_top**2 + r2
        jac_sq = (1 + sum_p2) * r2 - 2 * r3 + p_top**2 * (r1**2 + r2)
        totals.append(total)
        results.append(
            {
                "entropy": entropy,
                "jacobian_fro": np.sqrt(np.maximum(jac_sq, 0.0)),
                "n_eff": 1.0 / sum_p2,
                "sum_p2": sum_p2,
            }
        )

    # values chunk by chunk: sum p w, sum p^2 w (moments) and sum p^2 ||w||^2 per scale
    chunk = key_chunk(n, d)
    moments = np.zeros((len(scales), trials, 2, d))
    p2_ww = np.zeros((len(scales), trials))
    kept = [] if record else None
    head = None
    pair = np.empty((trials, 2, min(n, chunk)))
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        values = standard_normal(rng, (trials, stop - start, d))
        if record:
            kept.append(values.copy())
        if start == 0:
            head = values[:, :1, :].astype(np.float64)  # v_m
        rel = np.subtract(values, head, dtype=np.float64)  # w = v - v_m, exact
        del values
        norms = np.einsum("tmd,tmd->tm", rel, rel)
        weights = pair[:, :, : stop - start]
        for j, c in enumerate(multipliers):
            exp_neg(gap[:, start:stop], c, weights[:, 0], softmax.gap_max)
            weights[:, 0] /= totals[j][:, None]  # p
            np.square(weights[:, 0], out=weights[:, 1])  # p^2
            moments[j] += np.matmul(weights, rel)
            p2_ww[j] += np.vecdot(weights[:, 1], norms)
        del rel, norms  # before the next chunk is drawn
    for j, out in enumerate(results):
        u, p2_w = moments[j][:, 0], moments[j][:, 1]
        uu = np.einsum("td,td->t", u, u)
        out["grad_sq"] = np.maximum(
            p2_ww[j] - 2 * np.einsum("td,td->t", u, p2_w) + uu * out.pop("sum_p2"), 0.0
        )
    results = [
        {name: out[name] for name in ("entropy", "grad_sq", "jacobian_fro", "n_eff")}
        for out in results
    ]
    if record:
        return results, Draws(z=z, query_factor=factor, values=np.concatenate(kept, axis=1))
    return results
