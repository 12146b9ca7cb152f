"""kappa of each noise family against numerical integration; the sampler's laws against kappa."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.points import standard_noise
from scipy import integrate, stats

from attnsim.theory.noise import kappa, mean_exp_finite, regime


def law(family, sigma):
    if family == "gaussian":
        return stats.norm(scale=sigma)
    if family == "uniform":
        a = math.sqrt(3) * sigma
        return stats.uniform(loc=-a, scale=2 * a)
    if family == "laplace":
        return stats.laplace(scale=sigma / math.sqrt(2))
    if family == "gumbel":
        return stats.gumbel_r(scale=sigma * math.sqrt(6) / math.pi)
    raise ValueError(family)


def integrated_kappa(family, sigma):
    dist = law(family, sigma)
    lo, hi = dist.support()
    # cut where the integrands are < e^-45 of their bulk: exponential tails decay like e^{(2 -
    # 1/scale) x}
    tail = 45 / (1 / dist.kwds["scale"] - 2) if family in ("laplace", "gumbel") else 0.0
    lo, hi = max(lo, -60 * sigma), min(hi, 60 * sigma + tail)
    m1 = integrate.quad(
        lambda x: np.exp(x + dist.logpdf(x)), lo, hi, limit=2000, epsrel=1e-11, points=[0.0]
    )[0]
    m2 = integrate.quad(
        lambda x: np.exp(2 * x + dist.logpdf(x)), lo, hi, limit=2000, epsrel=1e-11, points=[0.0]
    )[0]
    return m2 / m1**2 - 1


@pytest.mark.parametrize("family", ["gaussian", "uniform", "laplace", "gumbel"])
@pytest.mark.parametrize("sigma", [1e-3, 0.1, 0.3, 0.6])
def test_kappa_matches_numerical_integration(family, sigma):
    assert kappa(family, sigma) == pytest.approx(integrated_kappa(family, sigma), rel=1e-6)


def test_kappa_thresholds_and_flags():
    assert kappa("laplace", 0.7) < math.inf and kappa("laplace", math.sqrt(2) / 2) == math.inf
    assert (
        kappa("gumbel", 0.64) < math.inf
        and kappa("gumbel", math.pi / (2 * math.sqrt(6))) == math.inf
    )
    assert kappa("student_t", 1e-6) == math.inf and kappa("student_t", 0) == 0
    assert (
        regime("gaussian", 3) == "delta"
        and regime("laplace", 1.0) == "heavy"
        and regime("laplace", 1.5) == "no_mean"
    )
    assert not mean_exp_finite("student_t", 0.1) and mean_exp_finite("gumbel", 1.0)
    assert kappa("gaussian", 40) == math.inf  # overflow is reported as divergence, not an error
    assert kappa("uniform", 100) > 0
    with pytest.raises(ValueError, match="unknown noise family"):
        kappa("cauchy", 1)


@pytest.mark.parametrize("family", ["gaussian", "uniform", "laplace", "gumbel", "student_t"])
def test_standard_noise_has_unit_variance(family):
    x = standard_noise(np.random.default_rng(3), family, 400_000)
    # standard error of the sample variance: sqrt((mu4 - 1) / N); student_t(3) has no 4th moment,
    # use a loose bound
    kurt = 9.0 if family != "student_t" else 200.0
    assert np.var(x) == pytest.approx(1.0, abs=5 * math.sqrt(kurt / x.size))


@pytest.mark.parametrize(
    "family,sigma", [("gaussian", 0.4), ("uniform", 0.5), ("laplace", 0.3), ("gumbel", 0.3)]
)
def test_kappa_matches_monte_carlo_of_the_sampler(family, sigma):
    w = np.exp(sigma * standard_noise(np.random.default_rng(11), family, 2_000_000))
    estimate = np.var(w) / np.mean(w) ** 2
    w2 = w / w.mean()
    se = np.std((w2 - 1) ** 2) / math.sqrt(w.size)  # standard error of the mean of (w-1)^2
    assert estimate == pytest.approx(kappa(family, sigma), abs=5 * se)
