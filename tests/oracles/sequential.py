"""Group-sequential crossing probabilities by scipy's multivariate normal CDF (Genz's method): the
independent reference `attnsim.claims.sequential.boundaries` (grid integration) is checked
against. Z_k = S_k / sqrt(t_k) with S Brownian motion, so corr(Z_i, Z_j) = sqrt(t_i / t_j)."""

from __future__ import annotations

import numpy as np
from scipy.stats import multivariate_normal


def cumulative_crossing(fractions, critical) -> np.ndarray:
    """P(Z_j >= c_j for some j <= k), for every look k; an infinite c_j never crosses."""
    t = np.asarray(fractions, dtype=float)
    c = np.asarray(critical, dtype=float)
    out = []
    for k in range(1, t.size + 1):
        corr = np.sqrt(np.minimum.outer(t[:k], t[:k]) / np.maximum.outer(t[:k], t[:k]))
        upper = np.where(np.isfinite(c[:k]), c[:k], 40.0)
        normal = multivariate_normal(mean=np.zeros(k), cov=corr, abseps=1e-7, releps=1e-7)
        out.append(1 - normal.cdf(upper, rng=np.random.default_rng(k)))
    return np.asarray(out)
