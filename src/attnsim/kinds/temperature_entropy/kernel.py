"""Entropy of cosine-similarity attention at temperature tau, batched over trials.

A query and n keys uniform on the unit sphere of R^d; logits s_i = cos(theta_i) / tau,
theta_i the angle between the query and key i. Shapes: cosines (T, n).

Sampling (exact in distribution, n draws per trial instead of n*d + d): by rotation
invariance the cosines are i.i.d. and each has the law of the first coordinate x_1 of
one uniform point on the sphere, whatever the query; that law is
(x_1 + 1)/2 ~ Beta((d-1)/2, (d-1)/2). We draw it by projecting the point onto its
first two coordinates, (x_1, x_2) = R (cos phi, sin phi): the angle phi is uniform on
[0, 2 pi) and independent of R, and R^2 = x_1^2 + x_2^2 ~ Beta(1, (d-2)/2), i.e.
1 - R^2 ~ Beta((d-2)/2, 1), whose CDF is t^{(d-2)/2}, so 1 - R^2 = U^{2/(d-2)}:

    cos(theta) = sqrt(1 - U^{2/(d-2)}) cos(2 pi V),   U, V ~ U(0, 1] i.i.d.   (d >= 3)
    cos(theta) = cos(2 pi V)                                                   (d = 2)

(Ulrich 1984's symmetric-beta generator). U and V are 32-bit words of the generator
(`attnsim.kernels.sampling`), the transforms float32 ufuncs: ~10x `Generator.beta`. The law
is exact up to the 32-bit resolution of U and V (the cosines themselves are float32, relative
precision 6e-8; every statistic is then computed in float64).

Common random numbers: one block of cosines serves every tau. The logits cos/tau of any tau
are a positive multiple of the cosines, so the gaps g = max cos - cos (float64, exact) are
computed once and each tau costs one multiply, one exp and two row reductions
(`GapSoftmax`); each tau is computed on its own, so a point's numbers do not depend on its
siblings.

Rounding: gap = log n - H is a difference, so its absolute error is ~ 1e-15 (log n + 2/tau);
negligible next to the gaps of interest (>= 1e-6 for tau <= 100 and d <= 4096).
Why float64 (though numpy's float64 exp costs 3.5x float32's on AVX2-only CPUs): float32 weights
(relative rounding ~6e-8) would put an error of ~1e-6 nats on H = log n - gap, i.e. ~1% of the
default sweep's smallest mean gaps (1/(2 d tau^2) = 1.6e-4 at tau = 10, d = 32), which the
log-log figure shows to <= 0.5%.
"""

from __future__ import annotations

import numpy as np

from attnsim.kernels import sampling
from attnsim.kernels.softmax import GapSoftmax, gaps
from attnsim.kinds.base import Counts, Work

# one sampler for every kind with cosine logits (kernels/sampling.py)
draw_cosines = sampling.sphere_cosines


def simulate(cosines: np.ndarray, taus) -> list[dict[str, np.ndarray]]:
    """Per tau: per-trial entropy H (nats) and gap = log n - H (>= 0) of softmax(cos / tau)."""
    softmax = GapSoftmax(gaps(cosines))
    results = []
    for tau in taus:
        entropy = softmax.stats(1.0 / float(tau), sum_p2=False)["entropy"]
        results.append({"entropy": entropy, "gap": softmax.log_n - entropy})
    return results


def counts(n: int, d: int) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream the
    cosines (`sampling.sphere_cosines`: 2n words, a float32 cos, and for d > 2 a log, an expm1 and
    a sqrt) and the float64 gaps; per tau one float64 exp per logit and the entropy's reductions
    (~6 passes of 8 bytes). Calls: ~10 per tau and block, ~15 per stream and block."""
    radius = Counts(exps32=2 * n, expm1s=n, words=n, bytes=24 * n) if d > 2 else Counts()
    return Work(
        own=Counts(exps=n, bytes=48 * n),
        shared=Counts(words=n, exps32=n, bytes=52 * n) + radius,
        own_block=Counts(calls=10),
        shared_block=Counts(calls=15),
    )
