"""The statistics (attnsim.stats) against scipy (tests/oracles/stats.py), by coverage where an
interval's promise is its coverage, and at their edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from attnsim import stats
from attnsim.stats import mean_ci, ratio_of_means, t_quantile
from tests.oracles import stats as oracle


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


@pytest.mark.parametrize("scatter", [0.3, 1.0, 3.0])  # chi^2/dof below, near and above 1
def test_weighted_slope_matches_scipy(scatter):
    """The slope, intercept and chi^2/dof as curve_fit's; the SE the larger of its absolute and
    scaled covariances: sqrt(cov max(1, chi^2/dof)), never below what the weights give."""
    rng = np.random.default_rng(11)
    x = np.log([16.0, 64, 256, 1024, 4096, 16384])
    se = rng.uniform(0.02, 0.1, x.size)
    y = 0.3 - 0.5 * x + scatter * se * rng.standard_normal(x.size)
    got, ref = stats.weighted_slope(x, y, 1 / se**2), oracle.weighted_slope(x, y, 1 / se**2)
    for name in ("slope", "intercept", "se", "ci_low", "ci_high", "chi2_dof"):
        assert got[name] == pytest.approx(ref[name], rel=1e-6), name
    assert got["points"] == x.size


def test_weighted_slopes_per_group_equal_one_fit_each():
    rng = np.random.default_rng(3)
    x, y, w = rng.normal(size=12), rng.normal(size=12), rng.uniform(1, 4, 12)
    group = np.repeat([0, 1, 2], 4)
    fits = stats.weighted_slopes(x, y, w, group)
    for g in range(3):
        one = stats.weighted_slope(x[group == g], y[group == g], w[group == g])
        assert fits.slope[g] == pytest.approx(one["slope"], rel=1e-12)
        assert fits.se[g] == pytest.approx(one["se"], rel=1e-12)
    two = stats.weighted_slope(x[:2], y[:2], w[:2])  # no degree of freedom left: no interval
    assert math.isnan(two["se"]) and math.isnan(two["ci_low"]) and math.isfinite(two["slope"])


def test_weighted_slope_interval_covers():
    """95% coverage of the true slope when the points scatter by their SEs (3 binomial SEs)."""
    rng = np.random.default_rng(8)
    x = np.log([16.0, 64, 256, 1024, 4096])
    se = np.full(x.size, 0.05)
    runs = 2000
    covered = 0
    for _ in range(runs):
        fit = stats.weighted_slope(x, -0.5 * x + se * rng.standard_normal(x.size), 1 / se**2)
        covered += fit["ci_low"] <= -0.5 <= fit["ci_high"]
    # max(1, chi^2/dof) only widens: at least the nominal coverage, within sampling error
    assert covered / runs > 0.95 - 3 * math.sqrt(0.95 * 0.05 / runs)


@pytest.mark.parametrize("saved, lost", [(0, 0), (10, 0), (3, 3), (1, 5), (17, 4), (40, 31)])
def test_mcnemar_matches_scipy(saved, lost):
    assert stats.mcnemar_p(saved, lost) == pytest.approx(oracle.mcnemar_p(saved, lost), rel=1e-12)


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(4)
    for _ in range(20):
        x, y = rng.integers(0, 5, 12).astype(float), rng.normal(size=12)
        assert stats.spearman(x, y) == pytest.approx(oracle.spearman(x, y), rel=1e-12)
    assert math.isnan(stats.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(stats.spearman([1.0, math.nan, 3.0], [1.0, 2.0, 3.0]))


@pytest.mark.parametrize("rho, count", [(0.0, 12), (-0.6, 5), (0.9, 40)])
def test_fisher_interval_matches_scipy(rho, count):
    assert stats.fisher_interval(rho, count) == pytest.approx(
        oracle.fisher_interval(rho, count), rel=1e-12
    )
    assert all(math.isnan(end) for end in stats.fisher_interval(rho, 3))  # no interval from 3


@pytest.mark.parametrize("successes, trials", [(0, 10), (3, 10), (10, 10), (412, 1000), (1, 2)])
def test_wilson_matches_scipy(successes, trials):
    assert stats.wilson(successes, trials) == pytest.approx(
        oracle.wilson(successes, trials), abs=1e-12
    )


def test_median_ci_matches_the_order_statistics_and_covers():
    rng = np.random.default_rng(6)
    x = rng.exponential(size=101)
    got = stats.median_ci(x)
    assert (got["mean"], got["ci_low"], got["ci_high"]) == oracle.median_ci(x)
    runs, covered = 2000, 0
    for _ in range(runs):
        m = stats.median_ci(rng.exponential(size=60))
        covered += m["ci_low"] <= math.log(2) <= m["ci_high"]
    # order statistics of ranks rounded outwards: at least nominal, within sampling error
    assert covered / runs > 0.95 - 3 * math.sqrt(0.95 * 0.05 / runs)
