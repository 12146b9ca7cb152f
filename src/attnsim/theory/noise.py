"""Delta-method theory for softmax attention under i.i.d. logit noise (docs/science.md §2.3, κ per
family §2.6, regimes §2.7).

With w_i = e^{eps_i} / E[e^eps] the noisy output is o~ = sum p_i w_i v_i / sum p_i w_i,
and to first order E||o~ - o||^2 = kappa * sum_i p_i^2 ||v_i - o||^2 with
kappa = Var(e^eps) / E[e^eps]^2. The prediction needs E[e^{2 eps}] < inf;
where that moment diverges kappa is +inf and the claim is outside its regime.
Every family is standardised so that `sigma` is the standard deviation of eps.
"""

from __future__ import annotations

import math

NOISE_FAMILIES = ("gaussian", "uniform", "laplace", "gumbel", "student_t")
STUDENT_T_DOF = 3


def _log_sinhc(x: float) -> float:
    """log(sinh(x)/x), stable for tiny and large x."""
    if x < 1e-3:
        x2 = x * x
        return x2 / 6 - x2 * x2 / 180 + 2 * x2**3 / 2835
    return x + math.log1p(-math.exp(-2 * x)) - math.log(2 * x)


def kappa(family: str, sigma: float) -> float:
    """Relative variance of e^eps: E[e^{2 eps}] / E[e^eps]^2 - 1 (+inf where it diverges)."""
    if sigma < 0:
        raise ValueError(f"noise scale must be >= 0, got {sigma}")
    if sigma == 0:
        return 0.0
    if family == "gaussian":
        return math.expm1(sigma**2) if sigma**2 < 709 else math.inf
    if family == "uniform":
        a = math.sqrt(3) * sigma
        exponent = _log_sinhc(2 * a) - 2 * _log_sinhc(a)
        return math.expm1(exponent) if exponent < 709 else math.inf
    if family == "laplace":
        b = sigma / math.sqrt(2)
        if b >= 0.5:
            return math.inf
        return (2 * b**2 + b**4) / (1 - 4 * b**2)
    if family == "gumbel":
        beta = sigma * math.sqrt(6) / math.pi
        if beta >= 0.5:
            return math.inf
        return math.expm1(math.lgamma(1 - 2 * beta) - 2 * math.lgamma(1 - beta))
    if family == "student_t":
        return math.inf  # E[e^eps] itself diverges for every sigma > 0
    raise ValueError(
        f"unknown noise family {family!r}; expected one of {', '.join(NOISE_FAMILIES)}"
    )


def mean_exp_finite(family: str, sigma: float) -> bool:
    """Whether E[e^eps] < inf, i.e. whether the cancellation argument applies at all."""
    if sigma == 0 or family in ("gaussian", "uniform"):
        return True
    if family == "laplace":
        return sigma / math.sqrt(2) < 1
    if family == "gumbel":
        return sigma * math.sqrt(6) / math.pi < 1
    if family == "student_t":
        return False
    raise ValueError(f"unknown noise family {family!r}")


def regime(family: str, sigma: float) -> str:
    """'delta' when kappa is finite, 'heavy' when only E[e^eps] is finite, 'no_mean' otherwise."""
    if math.isfinite(kappa(family, sigma)):
        return "delta"
    return "heavy" if mean_exp_finite(family, sigma) else "no_mean"
