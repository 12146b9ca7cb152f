from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from attnsim.stats import mean_ci, ratio_of_means, t_quantile


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 30, 60, 61, 199, 10_000])
@pytest.mark.parametrize("p", [0.025, 0.6, 0.975])
def test_t_quantile_matches_scipy(df, p):
    assert t_quantile(p, df) == pytest.approx(sps.t.ppf(p, df), rel=1e-8)


def test_mean_ci_values_and_coverage():
    x = np.array([1.0, 2.0, 4.0])
    out = mean_ci(x)
    assert out["mean"] == pytest.approx(7 / 3) and out["se"] == pytest.approx(
        np.std(x, ddof=1) / math.sqrt(3)
    )
    assert out["ci_high"] - out["mean"] == pytest.approx(sps.t.ppf(0.975, 2) * out["se"], rel=1e-6)
    rng = np.random.default_rng(5)
    covered = 0
    for _ in range(4000):
        s = mean_ci(rng.standard_normal(8))
        covered += s["ci_low"] <= 0 <= s["ci_high"]
    # 95% nominal; binomial SE over 4000 is 0.0034
    assert abs(covered / 4000 - 0.95) < 4 * 0.0034


def test_mean_ci_with_infinite_trials_is_infinite_not_nan():
    out = mean_ci(np.array([1.0, np.inf]))
    assert (
        out["mean"] == math.inf
        and out["se"] == math.inf
        and not any(math.isnan(v) for v in out.values())
    )


def test_ratio_of_means_paired_interval_covers():
    rng = np.random.default_rng(9)
    covered = 0
    for _ in range(2000):
        y = rng.exponential(size=50)
        x = 1.3 * y * rng.gamma(20, 1 / 20, size=50)
        r = ratio_of_means(x, y)
        covered += r["ci_low"] <= 1.3 <= r["ci_high"]
    assert abs(covered / 2000 - 0.95) < 0.02
    assert math.isnan(ratio_of_means(np.ones(3), np.full(3, np.inf))["mean"])
