"""Synthetic rows for `precision_attention`: queries, keys and values drawn so that the logits
are i.i.d. N(0, logit_scale^2) given the query, optionally with outlier features.

Draw order per block (every point of a stream shares it: common random numbers across formats
and sites): the query's standard normals (T, d), the keys' (T, n, d), the values' (T, n, d),
all float32 Box-Muller (`kernels.sampling.standard_normal`); then, only when a point of the
block rounds at `qk_rotated`, the (T, d, d) normals of the rotations. The rotations are drawn
last, so whether a block has that site changes no other point's numbers.

Features: channel m has variance lambda_m = outlier_scale^2 for the first `outlier_channels`
channels, 1 for the others. With z_q, z_k standard normals, sigma = logit_scale:

    q = sqrt(sigma) qhat,  qhat_m = z_q,m sqrt(lambda_m) sqrt(d / sum_m lambda_m^2 z_q,m^2),
    k_im = sqrt(sigma lambda_m) z_k,im,

so s_i = q . k_i / sqrt(d) is exactly N(0, sigma^2) given q, i.i.d. over keys, for every
outlier setting (docs/science.md §11.5); the outliers change only how the logit is spread over
the channels, which is what rounding q and k sees. Values: v ~ N(0, I_d).
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels import precision
from attnsim.kernels.sampling import standard_normal


def channel_variances(d: int, outlier_channels: int, outlier_scale: float) -> np.ndarray:
    lam = np.ones(d)
    lam[: min(int(outlier_channels), d)] = float(outlier_scale) ** 2
    return lam


def draw(rng: np.random.Generator, trials: int, n: int, d: int, sigma: float, outlier_channels: int, outlier_scale: float, rotate: bool):
    """(logits (T, n) float64, values (T, n, d) float64, q (T, d) and k (T, n, d) float32, rotations
    (T, d, d) float64 or None); the logits are q . k / sqrt(d) in float64 of the float32 q and k."""
    lam = channel_variances(d, outlier_channels, outlier_scale)
    zq = standard_normal(rng, (trials, d)).astype(np.float64)
    zk = standard_normal(rng, (trials, n, d)).astype(np.float64)
    values = standard_normal(rng, (trials, n, d)).astype(np.float64)
    root = np.sqrt(lam)
    qhat = zq * root
    qhat *= np.sqrt(d / np.sum(lam * qhat * qhat, axis=-1))[:, None]
    q = (math.sqrt(sigma) * qhat).astype(np.float32)  # the numbers a kernel would cast: the reference uses them exactly
    k = (zk * (math.sqrt(sigma) * root)).astype(np.float32)
    logits = np.matmul(k.astype(np.float64), q.astype(np.float64)[:, :, None])[:, :, 0] / math.sqrt(d)
    rotations = precision.rotations(standard_normal(rng, (trials, d, d))) if rotate else None
    return logits, values, q, k, rotations


def simulate_block(rng: np.random.Generator, trials: int, points) -> list[dict[str, np.ndarray]]:
    first = points[0]
    rotate = any(p["site"] == "qk_rotated" for p in points)
    logits, values, q, k, rotations = draw(
        rng, trials, int(first["n"]), int(first["d"]), float(first["logit_scale"]), int(first["outlier_channels"]), float(first["outlier_scale"]), rotate
    )
    block = precision.Block(logits, values, q, k, rotations)
    return [block.metrics(p["site"], p["format"]) for p in points]


def bytes_per_trial(n: int, d: int) -> int:
    """q, k, values, v - o, a rotated copy of k and the float32 casts (~6 float64 n x d arrays),
    the (d x d) rotation and the (d x d) sums of the qk model."""
    return 8 * (6 * n * d + 3 * d * d + 8 * n)
