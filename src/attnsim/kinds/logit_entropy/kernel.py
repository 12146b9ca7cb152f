"""Entropy of softmax weights over i.i.d. Gaussian or dot-product logits, batched over trials.

Shapes: standard normals z (T, n), query factor r (T,), logits (T, n).

Logit models (`logits`):

- ``gaussian``: s_i = scale * z_i, z_i ~ N(0, 1) i.i.d.
- ``dot_product``: s_i = q.k_i / sqrt(d), entries of q and k_i i.i.d. N(0, scale^2).

Sampling trick for ``dot_product`` (exact in distribution): given q, the k_i are
independent and q.k_i ~ N(0, scale^2 ||q||^2), so s_i = scale * (||q|| / sqrt(d)) * z_i
with z_i i.i.d. N(0, 1) independent of q; and ||q||^2 = scale^2 chi2_d. Hence

    s_i = scale^2 * r * z_i,   r = sqrt(chi2_d / d),

one chi-square per trial and n normals instead of n*d + d normals.

Draws: the chi-square (dot_product only) with numpy's sampler, then z in float32 from
`attnsim.kernels.sampling` (Box-Muller, ~3x numpy's normals; exact in law to |z| <= 6.66).

Common random numbers: one draw of (z, r) per block serves every `scale`. The logits of any
scale are a non-negative multiple of z, so the gaps g = max z - z (float64, exact) are computed
once and each scale costs one multiply, one exp and three row reductions (`GapSoftmax`); each
scale is computed on its own, so a point's numbers never depend on which other scales share
the block.

Why float64 (though numpy's float64 exp costs 3.5x float32's on AVX2-only CPUs): the claim
small_scale_entropy (docs/science.md §3.7) judges the deficit log n - H = sigma^2/2 to 5% down to
sigma = 0.01, i.e. 5e-5 nats to ~2.5e-6; float32 weights (relative rounding ~6e-8, ~1e-6 nats on
H near log n) would take that margin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnsim.kernels.sampling import query_factor, standard_normal
from attnsim.kernels.softmax import GapSoftmax, gaps
from attnsim.kinds.base import Counts, Work

LOGITS = ("gaussian", "dot_product")


@dataclass(frozen=True)
class Draws:
    z: np.ndarray  # (T, n) standard normals, float32
    # (T,) r = sqrt(chi2_d / d) = ||q|| / (scale sqrt(d)); ones for gaussian logits
    query_factor: np.ndarray


def draw(rng: np.random.Generator, trials: int, n: int, d: int, logits: str) -> Draws:
    """The block's random numbers (the chi-square first, then the normals)."""
    if logits not in LOGITS:
        raise ValueError(f"logits must be one of {', '.join(LOGITS)}, got {logits!r}")
    factor = query_factor(rng, trials, d) if logits == "dot_product" else np.ones(trials)
    return Draws(z=standard_normal(rng, (trials, n)), query_factor=factor)


def logit_multiplier(draws: Draws, logits: str, scale: float) -> np.ndarray:
    """Per-trial logit std, shape (T,): scale (gaussian) or scale^2 r (dot_product)."""
    if logits == "gaussian":
        return np.full(draws.z.shape[0], float(scale))
    return float(scale) ** 2 * draws.query_factor


def gap_metrics(softmax: GapSoftmax, multiplier: np.ndarray) -> dict[str, np.ndarray]:
    """Per-trial entropy (nats), entropy / log n, Renyi-2 entropy, largest weight and n_eff.

    All finite for any finite logits: H in [0, log n], and sum p^2 lies in [1/n, 1] because the
    largest weight is 1/Z >= 1/n.
    """
    stats = softmax.stats(multiplier)
    sum_p2 = stats["sum_p2"]
    return {
        "entropy": stats["entropy"],
        "entropy_norm": stats["entropy"] / softmax.log_n,
        "renyi2": -np.log(sum_p2),
        "max_weight": 1.0 / stats["total"],
        "n_eff": 1.0 / sum_p2,
    }


def simulate(draws: Draws, logits: str, scales) -> list[dict[str, np.ndarray]]:
    """Metrics for each scale, from one block of draws."""
    softmax = GapSoftmax(gaps(draws.z))
    return [gap_metrics(softmax, logit_multiplier(draws, logits, scale)) for scale in scales]


def counts(n: int) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream n
    normals and the float64 gaps; per scale one float64 exp per logit (`GapSoftmax.stats`: a
    multiply, the exp, three row reductions, ~7 passes of 8 bytes per logit). Calls: ~12 per scale
    and block, ~10 per stream and block."""
    return Work(
        own=Counts(exps=n, bytes=56 * n),
        shared=Counts(normals=n, bytes=40 * n),
        own_block=Counts(calls=12),
        shared_block=Counts(calls=10),
    )
