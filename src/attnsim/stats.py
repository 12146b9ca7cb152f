"""Means with standard errors and Student-t 95% confidence intervals.

Only numpy and the standard library. The t quantile inverts the exact
finite-series CDF (Abramowitz & Stegun 26.7.3-4) by bisection for up to 60
degrees of freedom and uses the Cornish-Fisher expansion (26.7.5, error
< 1e-8 there) beyond.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
# The normal quantiles every interval and power calculation uses, defined here once: Z95 for a
# two-sided 95% interval, Z80 for 80% power (one-sided).
Z95 = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)  # 1.9599639845400536
Z80 = NormalDist().inv_cdf(0.80)
EXACT_DF = 60


def _t_cdf_integer_df(t: float, df: int) -> float:
    """P(T <= t) for integer df from the closed finite series in theta = atan(t / sqrt(df))."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:  # odd
        term, total = math.cos(theta), 0.0
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):
                term *= c2 * (k - 1) / k
                total += term
        a = (2 / math.pi) * (theta + math.sin(theta) * total)
    else:
        term = total = 1.0
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        a = math.sin(theta) * total
    return 0.5 + a / 2  # a = P(|T| <= t) signed by t


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t with `df` >= 1 degrees of freedom."""
    if df < 1:
        raise ValueError(f"t_quantile needs df >= 1, got {df}")
    z = NormalDist().inv_cdf(p)
    if df <= EXACT_DF and float(df).is_integer():
        lo, hi = (0.0, 1e6) if p >= 0.5 else (-1e6, 0.0)
        for _ in range(200):
            mid = (lo + hi) / 2
            if _t_cdf_integer_df(mid, int(df)) < p:
                lo = mid
            else:
                hi = mid
            if hi - lo < 1e-12 * max(1.0, abs(mid)):
                break
        return (lo + hi) / 2
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def mean_ci(values: np.ndarray) -> dict[str, float]:
    """Mean, standard error and 95% t-interval of i.i.d. trial values.

    Infinite values make the mean infinite and the interval unbounded
    rather than NaN, so a diverging quantity stays visible as +inf.
    """
    x = np.asarray(values, dtype=np.float64)
    count = x.size
    if count == 0:
        nan = float("nan")
        return {"mean": nan, "se": nan, "ci_low": nan, "ci_high": nan}
    if not np.all(np.isfinite(x)):
        mean = float(np.mean(x))  # +inf when a trial diverged (e.g. kappa = inf)
        return {"mean": mean, "se": float("inf"), "ci_low": mean, "ci_high": mean}
    mean = float(np.mean(x))
    se = float(np.std(x, ddof=1) / math.sqrt(count)) if count > 1 else float("inf")
    half = t_quantile(0.5 + CONFIDENCE / 2, count - 1) * se if count > 1 else float("inf")
    return {"mean": mean, "se": se, "ci_low": mean - half, "ci_high": mean + half}


def ratio_of_means(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """mean(x)/mean(y) for paired trials, with a delta-method standard error and 95% interval.

    Var(R) ~ Var(x - R y) / (T mean(y)^2): pairing cancels the variation the
    two share, which is what makes a measured-vs-predicted ratio sharp.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    nan = float("nan")
    if x.size < 2 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.mean(y) <= 0:
        return {"mean": nan, "se": nan, "ci_low": nan, "ci_high": nan}
    ratio = float(np.mean(x) / np.mean(y))
    se = float(np.std(x - ratio * y, ddof=1) / (math.sqrt(x.size) * np.mean(y)))
    half = t_quantile(0.5 + CONFIDENCE / 2, x.size - 1) * se
    return {"mean": ratio, "se": se, "ci_low": ratio - half, "ci_high": ratio + half}


def wilson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (sensible at 0 and at 1, unlike the
    t-interval)."""
    if trials == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z
        / (1 + z * z / trials)
        * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    )
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if successes == 0 else low), (
        1.0 if successes == trials else high
    )  # exact at the ends
