"""Synthetic rows for `precision_attention`: logits i.i.d. N(0, logit_scale^2), values N(0, I_d),
and, for the sites that round q and k, a query and keys with exactly those logits, optionally with
outlier features (docs/science.md §11.5).

Draw order per block (common random numbers across formats and sites): the query's standard
normals (T, d), the logits' (T, n), the values' (T, n, d), all float32 Box-Muller
(`kernels.sampling.standard_normal`); then, only when a point of the block rounds q and k, the
keys' normals (T, n, d); then, only for `qk_rotated`, the rotations' (T, d, d). What a site does
not need is drawn after everything it does, so no point's numbers depend on its siblings.

Features: channel m has variance lambda_m = outlier_scale^2 for the first `outlier_channels`
channels, 1 for the others. With sigma = logit_scale, q = sqrt(sigma) qhat, qhat = z_q sqrt(lambda)
normalised to sum_m lambda_m qhat_m^2 = d, and Lambda = sigma diag(lambda), the keys are drawn
given their logits: k_i = z_i + Lambda q (s_i - q . z_i / sqrt(d)) / (sqrt(d) sigma^2) with
z_i ~ N(0, Lambda), the Gaussian conditional law of k_i ~ N(0, Lambda) given q . k_i / sqrt(d) = s_i
(whose variance q^T Lambda q / d is sigma^2). So q . k_i / sqrt(d) = s_i: the outliers change only
how each logit is spread over the channels. q and k are kept as float32 (the numbers a kernel
casts); their float32 representation of s, ~1e-7 relative, joins the qk sites' error (below 1e-6
of it even in fp16).
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels import block_sites, precision
from attnsim.kernels.sampling import standard_normal
from attnsim.kinds import low_precision
from attnsim.kinds.base import Counts, Work


def channel_variances(d: int, outlier_channels: int, outlier_scale: float) -> np.ndarray:
    lam = np.ones(d)
    lam[: min(int(outlier_channels), d)] = float(outlier_scale) ** 2
    return lam


def draw(
    rng: np.random.Generator,
    trials: int,
    n: int,
    d: int,
    sigma: float,
    outlier_channels: int,
    outlier_scale: float,
    keys: bool,
    rotate: bool,
):
    """(logits (T, n) float64, values (T, n, d) float64, q (T, d) float32, k (T, n, d) float32 or
    None,
    rotations (T, d, d) float64 or None); k when `keys` or `rotate`, rotations when `rotate`."""
    lam = channel_variances(d, outlier_channels, outlier_scale)
    zq = standard_normal(rng, (trials, d)).astype(np.float64)
    logits = standard_normal(rng, (trials, n)).astype(np.float64)
    logits *= sigma
    values = standard_normal(rng, (trials, n, d)).astype(np.float64)
    qhat = zq * np.sqrt(lam)
    qhat *= np.sqrt(d / np.sum(lam * qhat * qhat, axis=-1))[:, None]
    q = math.sqrt(sigma) * qhat
    k = None
    if keys or rotate:
        z = standard_normal(rng, (trials, n, d)).astype(np.float64)
        z *= np.sqrt(sigma * lam)
        if sigma > 0:
            # Lambda q / (sqrt(d) sigma^2), (T, d)
            spread = (sigma * lam) * q / (math.sqrt(d) * sigma**2)
            # s_i - q . z_i / sqrt(d)
            gap = logits - np.matmul(z, q[:, :, None])[:, :, 0] / math.sqrt(d)
            z += gap[:, :, None] * spread[:, None, :]
        k = z.astype(np.float32)
    rotations = precision.rotations(standard_normal(rng, (trials, d, d))) if rotate else None
    return logits, values, q.astype(np.float32), k, rotations


def simulate_block(rng: np.random.Generator, trials: int, points) -> list[dict[str, np.ndarray]]:
    first = points[0]
    rotate = any(p["site"] == "qk_rotated" for p in points)
    keys = any(p["site"] == "qk" for p in points)
    logits, values, q, k, rotations = draw(
        rng,
        trials,
        int(first["n"]),
        int(first["d"]),
        float(first["logit_scale"]),
        int(first["outlier_channels"]),
        float(first["outlier_scale"]),
        keys,
        rotate,
    )
    blocks: dict[float, block_sites.Block] = {}
    out = []
    for p in points:
        shift = float(p.get("key_mean", 0.0))
        if shift not in blocks:
            blocks[shift] = block_sites.Block(
                logits, values, q, with_key_mean(k, first, shift), rotations
            )
        out.append(blocks[shift].metrics(p["site"], p["format"], low_precision.scaling(p)))
    return out


def with_key_mean(k, point, key_mean: float):
    """The keys plus a mean shared by all of them, key_mean times each channel's std
    sqrt(sigma lambda_m) on every channel (a drawn k unchanged at 0, and no random numbers
    drawn: points differing in key_mean share their draws). q . mean k / sqrt(d) is the same for
    every key of a row, so the logits' softmax is unchanged."""
    if k is None or key_mean == 0:
        return k
    lam = channel_variances(
        int(point["d"]), int(point["outlier_channels"]), float(point["outlier_scale"])
    )
    offset = key_mean * np.sqrt(float(point["logit_scale"]) * lam)
    return (k.astype(np.float64) + offset).astype(np.float32)


def bytes_per_trial(n: int, d: int) -> int:
    """q, k, values, v - o, a rotated copy of k and the float32 casts (~6 float64 n x d arrays),
    the (d x d) rotation and the (d x d) sums of the qk model."""
    return 8 * (6 * n * d + 3 * d * d + 8 * n)


def counts(n: int, d: int, site: str, granularity: str) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate_block`: per stream
    the normals (query, logits, values) and the clean rows in float64 (`precision.clean_rows`,
    ~12 passes over n d doubles); per point its site's numbers rounded (n logits or weights;
    (n + 1) d for q and k, twice for qk_rotated: rotated and not), the rounding model's passes
    over them (~40 doubles each, ~3x with a scale: its groups' maxima and the scaled copies),
    and at the qk sites the keys' normals and float64 products with q, the values and the
    rotation. Calls: ~80 per point and block. Setup: ml-dtypes' import (`low_precision.SETUP`)."""
    scaled = 1.0 if granularity == "none" else 3.0
    if site in ("logits", "probs", "output"):
        size = n if site != "output" else d
        own = Counts(casts=size, exps=n if site == "probs" else 0, bytes=320 * size * scaled)
        own += Counts(bytes=40 * n * d)
    else:
        rotated = site == "qk_rotated"
        size = (n + 1) * d * (2 if rotated else 1)
        own = Counts(
            normals=n * d,
            casts=size,
            flops64=8 * n * d * d + 12 * n * d + (4 * n * d * d if rotated else 0),
            bytes=320 * size * scaled + 200 * n * d,
        )
    return Work(
        own=own,
        shared=Counts(normals=d + n + n * d, exps=n, bytes=100 * n * d + 100 * n),
        own_block=Counts(calls=80),
        shared_block=Counts(calls=30),
        setup=low_precision.SETUP,
    )
