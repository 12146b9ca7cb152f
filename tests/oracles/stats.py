"""scipy's versions of `attnsim.stats` (test-only: scipy is a test dependency, never imported by
the package): each written from scipy's own routines, independent of the package's arithmetic."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats


def weighted_slope(x, y, w) -> dict[str, float]:
    """scipy.optimize.curve_fit of a line with sigma = 1/sqrt(w): `absolute_sigma=True` gives the
    covariance from the weights alone, `False` the one scaled by chi^2/dof; the fit's SE is the
    larger of the two, its interval Student t with m - 2 degrees of freedom."""
    x, y, w = (np.asarray(v, dtype=float) for v in (x, y, w))
    sigma = 1 / np.sqrt(w)
    coef, absolute = optimize.curve_fit(
        lambda t, a, b: a + b * t, x, y, sigma=sigma, absolute_sigma=True
    )
    _, scaled = optimize.curve_fit(lambda t, a, b: a + b * t, x, y, sigma=sigma)
    se = math.sqrt(max(absolute[1, 1], scaled[1, 1]))
    half = stats.t.ppf(0.975, x.size - 2) * se
    chi2 = float(np.sum(w * (y - coef[0] - coef[1] * x) ** 2) / (x.size - 2))
    return {
        "slope": coef[1],
        "intercept": coef[0],
        "se": se,
        "ci_low": coef[1] - half,
        "ci_high": coef[1] + half,
        "chi2_dof": chi2,
    }


def mcnemar_p(saved: int, lost: int) -> float:
    """The exact McNemar test: a two-sided binomial test of the discordant pairs at 1/2."""
    if saved + lost == 0:
        return 1.0
    return float(stats.binomtest(saved, saved + lost, 0.5).pvalue)


def spearman(x, y) -> float:
    return float(stats.spearmanr(x, y).statistic)


def fisher_interval(rho: float, count: int) -> tuple[float, float]:
    """Fisher's z with the Bonett-Wright variance, from scipy's normal quantile."""
    z, half = np.arctanh(rho), stats.norm.ppf(0.975) * math.sqrt((1 + rho**2 / 2) / (count - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def wilson(successes: int, trials: int) -> tuple[float, float]:
    ci = stats.binomtest(successes, trials).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


def median_ci(values) -> tuple[float, float, float]:
    """The median and the order statistics of ranks T/2 -+ z sqrt(T)/2 (scipy's median and normal
    quantile, to 1.96 as the package rounds it)."""
    x = np.sort(np.asarray(values, dtype=float))
    half = round(stats.norm.ppf(0.975), 2) * math.sqrt(x.size) / 2
    low = max(0, math.floor(x.size / 2 - half))
    high = min(x.size - 1, math.ceil(x.size / 2 + half))
    return float(np.median(x)), float(x[low]), float(x[high])
