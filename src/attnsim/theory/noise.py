"""Delta-method theory for softmax attention under i.i.d. logit noise (docs/science.md §2.3, κ per
family §2.6, regimes §2.7).

With w_i = e^{eps_i} / E[e^eps] the noisy output is o~ = sum p_i w_i v_i / sum p_i w_i,
and to first order E||o~ - o||^2 = kappa * sum_i p_i^2 ||v_i - o||^2 with
kappa = Var(e^eps) / E[e^eps]^2. The prediction needs E[e^{2 eps}] < inf;
where that moment diverges kappa is +inf and the claim is outside its regime.
Every family is standardised so that `sigma` is the standard deviation of eps; each family's
closed forms are its record's (`attnsim.subjects.noise_families`), looked up by name.
"""

from __future__ import annotations

import math

from attnsim.subjects import noise_families


def kappa(family: str, sigma: float) -> float:
    """Relative variance of e^eps: E[e^{2 eps}] / E[e^eps]^2 - 1 (+inf where it diverges)."""
    law = noise_families.get(family)
    if sigma < 0:
        raise ValueError(f"noise scale must be >= 0, got {sigma}")
    if sigma == 0:
        return 0.0
    return law.kappa(sigma)


def mean_exp_finite(family: str, sigma: float) -> bool:
    """Whether E[e^eps] < inf, i.e. whether the cancellation argument applies at all."""
    law = noise_families.get(family)
    return sigma == 0 or law.mean_exp_finite(sigma)


def regime(family: str, sigma: float) -> str:
    """'delta' when kappa is finite, 'heavy' when only E[e^eps] is finite, 'no_mean' otherwise."""
    if math.isfinite(kappa(family, sigma)):
        return "delta"
    return "heavy" if mean_exp_finite(family, sigma) else "no_mean"
