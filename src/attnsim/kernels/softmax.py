"""Numerically stable softmax statistics shared by all kernels (last axis = keys)."""

from __future__ import annotations

import math

import numpy as np

# exp(x) for x below about -708 is subnormal or 0, and numpy computes those ~10-100x slower
# than normal results (measured on AVX-512: 0.01-0.13 vs 1 G/s). Arguments are floored here:
# e^-700 = 1e-304 next to the largest weight, exactly 1, changes no sum of weights in float64.
EXP_FLOOR = -700.0


def exp_neg(gap: np.ndarray, multiplier, out: np.ndarray, gap_max: float) -> np.ndarray:
    """e = exp(-c g) into `out` (same shape as `gap`), c >= 0 a scalar or one per row;
    `gap_max` >= max g decides whether the floor is needed (one pass less when it is not)."""
    c = np.asarray(multiplier, dtype=np.float64)
    np.multiply(gap, -(c[:, None] if c.ndim else c), out=out)
    if float(np.max(c)) * gap_max > -EXP_FLOOR:
        np.maximum(out, EXP_FLOOR, out=out)
    return np.exp(out, out=out)


def from_top(logits: np.ndarray):
    """Softmax of rows of logits (last axis = keys) measured from each row's top key, so nothing
    cancels at one-hot weights (docs/science.md §1.5): the top key's index, the gaps s_max - s_i
    (>= 0), Z = sum_i e^(-gap_i) (keepdims, >= 1), the weights p and the entropy log Z + sum p gap
    (clipped to [0, log n])."""
    n = logits.shape[-1]
    top = np.argmax(logits, axis=-1)
    gap = np.max(logits, axis=-1, keepdims=True) - logits
    e = np.exp(np.maximum(-gap, EXP_FLOOR))
    z = e.sum(axis=-1, keepdims=True)
    p = e / z
    entropy = np.clip(np.log(z[..., 0]) + np.sum(p * gap, axis=-1), 0.0, math.log(n))
    return top, gap, z, p, entropy


def gaps(values: np.ndarray) -> np.ndarray:
    """g = max - values along the last axis, float64 (T, n), >= 0 and exactly 0 at the maximum.

    Logits s = c * values with c >= 0 have s_max - s = c * g: one array of gaps serves every
    scale c (common random numbers), each scale then needing one multiply and one exp.
    """
    peak = values.max(axis=-1, keepdims=True).astype(np.float64)
    return np.subtract(peak, values, dtype=np.float64)


class GapSoftmax:
    """Softmax statistics of logits c_t * (peak_t - g_ti) for several multipliers c >= 0, one at a
    time.

    For each multiplier: e = exp(-c g) (in a reused buffer, largest entry exactly 1, arguments
    floored at EXP_FLOOR), Z = sum e, H = log Z + c sum(e g) / Z (two non-negative terms, no
    cancellation; clipped to [0, log n]), sum p^2 = sum(e^2) / Z^2 and max p = 1 / Z.
    Reductions are BLAS products (Z = e @ 1, a matrix-vector product: faster than np.sum).
    """

    def __init__(self, gap: np.ndarray):
        self.gap = gap
        self.gap_max = float(gap.max(initial=0.0))
        self.buffer = np.empty_like(gap)
        self.ones = np.ones(gap.shape[-1])
        self.log_n = math.log(gap.shape[-1])

    def weights(self, multiplier) -> np.ndarray:
        """e = exp(-c g), (T, n), in the shared buffer (overwritten by the next call)."""
        return exp_neg(self.gap, multiplier, self.buffer, self.gap_max)

    def stats(self, multiplier, sum_p2: bool = True) -> dict[str, np.ndarray]:
        """total Z, entropy H and (unless `sum_p2` is False: one pass less) sum p^2 per row."""
        e = self.weights(multiplier)
        total = e @ self.ones
        entropy = np.log(total) + np.asarray(multiplier) * np.vecdot(e, self.gap) / total
        np.clip(entropy, 0.0, self.log_n, out=entropy)
        out = {"total": total, "entropy": entropy}
        if sum_p2:
            out["sum_p2"] = np.vecdot(e, e) / total**2
        return out
