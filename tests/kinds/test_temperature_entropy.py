"""The temperature kernel against a slow oracle, its cosine sampler against direct sampling,
extremes and the worst-case bound."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from helpers.points import make_point
from oracles import temperature_entropy as oracle
from scipy import stats

from attnsim.jobs.simulate import simulate_points
from attnsim.kinds import get_kind
from attnsim.kinds.temperature_entropy import KIND, extra_summary, gap_tolerance, kernel
from attnsim.records.experiment import TrialSettings
from attnsim.theory.entropy import exact_gap, exact_gap_argmax


def point(**overrides):
    return make_point("temperature_entropy", {**dict(n=64, d=8, tau=1.0), **overrides})


@pytest.mark.parametrize("d", [2, 3, 7])
@pytest.mark.parametrize("tau", [1e-3, 0.1, 1.0, 10.0])
def test_kernel_matches_naive_oracle_on_the_same_draws(d, tau):
    cosines = kernel.draw_cosines(np.random.default_rng(d), 5, 40, d)
    fast = oracle.metrics(cosines, tau)
    for t in range(5):
        slow = oracle.naive_trial(cosines[t], tau)
        for name in ("entropy", "gap"):
            assert fast[name][t] == pytest.approx(slow[name], rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize("d", [2, 3, 5, 32, 1000])
def test_cosine_sampler_has_the_beta_law_of_direct_sampling(d):
    """(cos + 1)/2 ~ Beta((d-1)/2, (d-1)/2); compared with scipy's CDF, with normalised Gaussian
    vectors, and by moments."""
    fast = kernel.draw_cosines(np.random.default_rng(100 + d), 50, 2000, d).ravel()
    assert np.all(np.abs(fast) <= 1)
    half = (d - 1) / 2
    assert stats.kstest((fast + 1) / 2, stats.beta(half, half).cdf).pvalue > 1e-3
    rng = np.random.default_rng(200 + d)
    direct = np.concatenate([oracle.naive_cosines(rng, 40, d) for _ in range(500)])
    assert stats.ks_2samp(fast, direct).pvalue > 1e-3
    # E[c] = 0, E[c^2] = 1/d, E[c^4] = 3/(d(d+2)), within 4 standard errors (the draws are i.i.d.)
    for power, exact in ((1, 0.0), (2, 1 / d), (4, 3 / (d * (d + 2)))):
        values = fast**power
        assert abs(values.mean() - exact) < 4 * values.std(ddof=1) / math.sqrt(values.size), power


@pytest.mark.parametrize(
    ("n", "d", "tau"),
    [
        (65536, 2, 1e-3),
        (65536, 32, 1e-3),
        (65536, 32, 1e4),
        (2, 2, 1e-3),
        (2, 3, 1e4),
        (16, 4096, 1e-4),
    ],
)
def test_extreme_temperatures_and_sizes_give_bounded_finite_metrics(n, d, tau):
    p = point(n=n, d=d, tau=tau)
    m = simulate_points(get_kind("temperature_entropy"), TrialSettings(8, 5), [p])[p.id]
    log_n = math.log(n)
    for name in ("entropy", "gap"):
        assert np.all(np.isfinite(m[name])) and np.all((m[name] >= 0) & (m[name] <= log_n)), name
    assert np.allclose(m["entropy"] + m["gap"], log_n, rtol=0, atol=1e-12)
    if tau == 1e4:
        assert np.all(m["gap"] < 1e-8)


def test_no_trial_exceeds_the_exact_worst_case_gap():
    """Every trial of every point, small n (where random cosines get closest to the bound)
    included."""
    points = [
        point(n=n, d=d, tau=tau)
        for n in (2, 3, 16, 256)
        for d in (2, 3, 32)
        for tau in (0.01, 0.05, 0.2, 1.0, 5.0)
    ]
    results = simulate_points(get_kind("temperature_entropy"), TrialSettings(31, 2000), points)
    closest = -math.inf
    for p in points:
        gaps = results[p.id]["gap"]
        bound = float(exact_gap(p.params["n"], p.params["tau"]))
        assert np.all(gaps <= bound + gap_tolerance(p.params["n"], p.params["tau"])), p.params
        extra = extra_summary(results[p.id], p.params)
        assert extra["gap_within_bound"] is True and extra["gap_max"] == gaps.max()
        assert extra["gap_max_excess"] == pytest.approx(gaps.max() - bound)
        closest = max(closest, extra["gap_max_excess"])
    # the sweep does probe the bound: at n = 2, tau = 0.01 one-hot trials reach it
    assert closest > -1e-6


@pytest.mark.parametrize(
    ("n", "tau"), [(2, 0.3), (16, 1.0), (1000, 0.5), (4096, 1e-3), (65536, 1.0)]
)
def test_the_kernel_attains_the_bound_at_the_worst_configuration(n, tau):
    """k keys at cos = +1, the rest at -1 (k from exact_gap_argmax): the kernel's gap equals
    exact_gap within the rounding tolerance used by `gap_within_bound`, so the tolerance neither
    hides violations nor flags the optimum."""
    k = int(exact_gap_argmax(n, tau))
    cosines = np.r_[np.ones(k), -np.ones(n - k)][None, :]
    gap = oracle.metrics(cosines, tau)["gap"][0]
    assert abs(gap - float(exact_gap(n, tau))) <= gap_tolerance(n, tau)
    assert extra_summary({"gap": np.array([gap])}, {"n": n, "tau": tau})["gap_within_bound"] is True
    assert (
        extra_summary({"gap": np.array([gap + 1e-6])}, {"n": n, "tau": tau})["gap_within_bound"]
        is False
    )


def test_random_directions_follow_one_over_two_d_tau_squared():
    """Mean gap ~ (1 - 1/n)/(2 d tau^2) while d tau^2 >> 1; next order ~ 1/(d tau^2) relative (0.8%
    here)."""
    n, d, tau = 4096, 32, 2.0
    p = point(n=n, d=d, tau=tau)
    gap = simulate_points(get_kind("temperature_entropy"), TrialSettings(3, 400), [p])[p.id]["gap"]
    se = gap.std(ddof=1) / math.sqrt(gap.size)
    assert gap.mean() == pytest.approx((1 - 1 / n) / (2 * d * tau**2), abs=4 * se, rel=0.02)


def test_theory_columns_and_g_of_one():
    t = KIND.theory.point(point(n=4096, d=16, tau=1.0).params)
    assert t["gap_asymptotic"] == pytest.approx(0.4745, abs=5e-5)
    assert t["gap_exact"] <= t["gap_asymptotic"] and t["gap_exact"] == pytest.approx(
        t["gap_asymptotic"], abs=1e-3
    )
    assert t["gap_random_direction"] == pytest.approx(1 / 32) and t["log_n"] == pytest.approx(
        math.log(4096)
    )


def test_common_random_numbers_do_not_couple_points():
    pts = [point(tau=t) for t in (0.1, 1.0, 3.0)]
    together = simulate_points(get_kind("temperature_entropy"), TrialSettings(4, 60), pts)
    for p in pts:
        alone = simulate_points(get_kind("temperature_entropy"), TrialSettings(4, 60), [p])[p.id]
        assert np.array_equal(alone["gap"], together[p.id]["gap"])
    # shared cosines: per trial the gap shrinks as tau grows
    assert np.all(together[pts[0].id]["gap"] > together[pts[1].id]["gap"])
    assert np.all(together[pts[1].id]["gap"] > together[pts[2].id]["gap"])


def test_declared_bytes_per_trial_match_the_measured_peak():
    for d in (2, 16):
        points = [point(n=4096, d=d, tau=t).params for t in (0.1, 1.0)]
        trials = KIND.block_trials(points[0])
        tracemalloc.start()
        try:
            KIND.compute.simulate_block(np.random.default_rng(0), trials, points)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert 0.8 < peak / (trials * KIND.compute.bytes_per_trial(points[0])) < 1.1
