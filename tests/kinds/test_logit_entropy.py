"""The logit-entropy kernel against a slow oracle, its sampling trick against direct sampling,
extremes and theory."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from helpers.points import make_point
from oracles import logit_entropy as oracle
from scipy import stats

from attnsim.jobs.simulate import simulate_points
from attnsim.kinds import get_kind
from attnsim.kinds.logit_entropy import KIND, kernel
from attnsim.records.experiment import TrialSettings
from attnsim.theory.entropy import small_scale_entropy

METRICS = ("entropy", "entropy_norm", "renyi2", "max_weight", "n_eff")


def point(**overrides):
    return make_point(
        "logit_entropy", {**dict(n=64, d=8, logits="gaussian", scale=1.0), **overrides}
    )


@pytest.mark.parametrize("logits", ["gaussian", "dot_product"])
@pytest.mark.parametrize("scale", [0.0, 0.5, 3.0, 50.0])
def test_kernel_matches_naive_oracle_on_the_same_draws(logits, scale):
    draws = kernel.draw(np.random.default_rng(1), 6, 33, 5, logits)
    fast = oracle.metrics(draws, logits, scale)
    logit_rows = oracle.make_logits(draws, logits, scale)
    expected_std = scale if logits == "gaussian" else scale**2 * draws.query_factor
    assert np.allclose(logit_rows, np.reshape(expected_std, (-1, 1)) * draws.z, rtol=1e-15, atol=0)
    for t in range(6):
        slow = oracle.naive_trial(logit_rows[t])
        for name in METRICS:
            assert fast[name][t] == pytest.approx(slow[name], rel=1e-9, abs=1e-12), name


def test_dot_product_trick_has_the_law_of_direct_sampling():
    """s = scale^2 sqrt(chi2_d/d) z against s = K q / sqrt(d) drawn entry by entry (d = 4: the query
    norm matters most)."""
    n, d, scale, trials = 64, 4, 1.2, 3000
    trick = oracle.make_logits(
        kernel.draw(np.random.default_rng(11), trials, n, d, "dot_product"), "dot_product", scale
    )
    rng = np.random.default_rng(12)
    direct = np.stack([oracle.naive_logits(rng, n, d, "dot_product", scale) for _ in range(trials)])

    # moments of the logits, with standard errors over (independent) trials:
    # E[s^2] = scale^4 and E[s^4] = 3 scale^8 E[(chi2_d/d)^2] = 3 scale^8 (1 + 2/d)
    for sample in (trick, direct):
        for power, exact in ((2, scale**4), (4, 3 * scale**8 * (1 + 2 / d))):
            per_trial = np.mean(sample**power, axis=1)
            se = per_trial.std(ddof=1) / math.sqrt(trials)
            assert abs(per_trial.mean() - exact) < 4 * se, (power, per_trial.mean(), exact, se)

    # whole-trial statistics have the same law (two-sample Kolmogorov-Smirnov, fixed seeds)
    for statistic in (
        lambda s: np.mean(s**2, axis=1),
        lambda s: np.apply_along_axis(lambda r: oracle.naive_trial(r)["entropy"], 1, s),
    ):
        assert stats.ks_2samp(statistic(trick), statistic(direct)).pvalue > 1e-3

    # ... and the test has power: dropping the query-norm factor is rejected
    wrong = scale**2 * np.random.default_rng(13).standard_normal((trials, n))
    assert stats.ks_2samp(np.mean(wrong**2, axis=1), np.mean(direct**2, axis=1)).pvalue < 1e-6


@pytest.mark.parametrize("logits", ["gaussian", "dot_product"])
@pytest.mark.parametrize(
    ("n", "scale"), [(2, 0.0), (2, 1e4), (65536, 1e4), (65536, 0.0), (65536, 1.0)]
)
def test_extreme_scales_and_sizes_give_bounded_finite_metrics(logits, n, scale):
    p = point(n=n, logits=logits, scale=scale)
    m = simulate_points(get_kind("logit_entropy"), TrialSettings(3, 5), [p])[p.id]
    for name in METRICS:
        assert np.all(np.isfinite(m[name])), name
    log_n = math.log(n)
    assert np.all((m["entropy"] >= 0) & (m["entropy"] <= log_n))
    assert np.all((m["entropy_norm"] >= 0) & (m["entropy_norm"] <= 1))
    assert np.all((m["renyi2"] >= 0) & (m["renyi2"] <= log_n * (1 + 1e-12)))
    assert np.all((m["n_eff"] >= 1 - 1e-12) & (m["n_eff"] <= n * (1 + 1e-12)))
    assert np.all((m["max_weight"] >= 1 / n * (1 - 1e-12)) & (m["max_weight"] <= 1))
    if scale == 0:
        assert np.allclose(m["entropy"], log_n, rtol=1e-12) and np.allclose(
            m["n_eff"], n, rtol=1e-12
        )
    if scale == 1e4:  # one-hot weights (dot-product logits are ~1e8)
        assert np.all(m["entropy"] < 1e-3) and np.all(m["max_weight"] > 0.999)


def test_gaussian_scale_one_n4096_matches_small_scale_theory_and_an_independent_estimate():
    """The issue's check: mean entropy within 0.01 of log n - 1/2, and within 3 SE of a direct naive
    simulation."""
    n, sigma = 4096, 1.0
    p = point(n=n, d=16, logits="gaussian", scale=sigma)
    fast = simulate_points(get_kind("logit_entropy"), TrialSettings(2024, 1000), [p])[p.id][
        "entropy"
    ]
    rng = np.random.default_rng(99)
    slow = np.array(
        [
            oracle.naive_trial(oracle.naive_logits(rng, n, 16, "gaussian", sigma))["entropy"]
            for _ in range(400)
        ]
    )
    se_fast = fast.std(ddof=1) / math.sqrt(fast.size)
    se_slow = slow.std(ddof=1) / math.sqrt(slow.size)
    assert abs(fast.mean() - slow.mean()) < 3 * math.hypot(se_fast, se_slow)
    prediction = float(small_scale_entropy(n, sigma))
    assert prediction == pytest.approx(math.log(n) - 0.5)
    assert abs(fast.mean() - prediction) < 0.01
    # sharper: with the finite-n bias (sigma^2 e^{sigma^2} - (e^{sigma^2} - 1)/2)/n of
    # theory/entropy.py
    bias = (sigma**2 * math.exp(sigma**2) - (math.exp(sigma**2) - 1) / 2) / n
    assert abs(fast.mean() - prediction - bias) < 4 * se_fast


def test_dot_product_small_scale_entropy_in_expectation():
    """E over queries of sigma_eff^2 is scale^4 exactly, so E[H] ~ log n - scale^4/2 (to O(1/n) and
    O(scale^8))."""
    n, scale = 4096, 0.7
    p = point(n=n, d=16, logits="dot_product", scale=scale)
    h = simulate_points(get_kind("logit_entropy"), TrialSettings(5, 1500), [p])[p.id]["entropy"]
    se = h.std(ddof=1) / math.sqrt(h.size)
    assert abs(h.mean() - (math.log(n) - scale**4 / 2)) < 4 * se + 2e-3


def test_theory_columns():
    g = KIND.theory.point(point(n=1024, logits="gaussian", scale=2.0).params)
    assert g["log_n"] == pytest.approx(math.log(1024)) and g["sigma_eff"] == 2.0
    assert g["entropy_small_scale"] == pytest.approx(math.log(1024) - 2.0)
    assert g["rem_x"] == pytest.approx(2.0 / math.sqrt(2 * math.log(1024)))
    assert (
        g["entropy_rem"] == pytest.approx(math.log(1024) * (1 - g["rem_x"] ** 2))
        and g["regime"] == "liquid"
    )
    dp = KIND.theory.point(point(n=16, d=32, logits="dot_product", scale=3.0).params)
    assert dp["sigma_eff"] == 9.0 and dp["regime"] == "frozen" and dp["entropy_rem"] == 0.0


def test_common_random_numbers_do_not_couple_points():
    """A scale's numbers are the same alone or with siblings; siblings share z (identical entropies
    at scale 0)."""
    pts = [point(logits="dot_product", scale=s) for s in (0.0, 0.5, 2.0)]
    together = simulate_points(get_kind("logit_entropy"), TrialSettings(4, 50), pts)
    for p in pts:
        alone = simulate_points(get_kind("logit_entropy"), TrialSettings(4, 50), [p])[p.id]
        for name in METRICS:
            assert np.array_equal(alone[name], together[p.id][name])
    # same draws across scales: the order of the keys' weights is the same, so n_eff falls
    # monotonically per trial
    assert np.all(together[pts[1].id]["n_eff"] >= together[pts[2].id]["n_eff"])


def test_declared_bytes_per_trial_match_the_measured_peak():
    """bytes_per_trial sets the block size and the memory check: numpy's allocations (traced) must
    match it."""
    for logits in ("gaussian", "dot_product"):
        points = [point(n=4096, logits=logits, scale=s).params for s in (0.5, 2.0)]
        assert 0.8 < peak_ratio(KIND, points) < 1.1


def peak_ratio(kind, points) -> float:
    trials = kind.block_trials(points[0])
    tracemalloc.start()
    try:
        kind.compute.simulate_block(np.random.default_rng(0), trials, points)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / (trials * kind.compute.bytes_per_trial(points[0]))


# --------------------------------------------------------- the claims: liquid and frozen phases


def entropy_rows(points, entropy, se=0.005, logits="gaussian"):
    """A logit_entropy summary at (n, sigma) points, H = entropy(n, sigma) with SE `se`."""
    import pandas as pd

    from attnsim.theory.entropy import rem_x

    rows = []
    for n, sigma in points:
        h = float(entropy(n, sigma))
        rows.append(
            dict(
                experiment="entropy_scale",
                n=n,
                d=64,
                logits=logits,
                scale=sigma,
                sigma_eff=sigma,
                n_trials=1000,
                log_n=math.log(n),
                rem_x=float(rem_x(n, sigma)),
                entropy_mean=h,
                entropy_se=se,
                entropy_ci_low=h - 1.96 * se,
                entropy_ci_high=h + 1.96 * se,
            )
        )
    return pd.DataFrame(rows)


def test_rem_liquid_deficit_is_judged_where_its_finite_n_correction_is_small():
    """x = 0.68 at n = 16384 (sigma = 3) is liquid, but its correction ~2 n^(2x^2 - 1) is large:
    outside the regime, where the exact value (0.926 of sigma^2/2) would fail the 5% band."""
    from attnsim.kinds.logit_entropy import claims
    from attnsim.theory.entropy import gaussian_entropy_exact

    grid = [(4096, 1.0), (16384, 2.0), (16384, 3.0)]
    exact = entropy_rows(grid, gaussian_entropy_exact, se=1e-3)
    result = claims.REM_LIQUID_DEFICIT(exact)
    assert result.verdict == "holds" and result.points == 2
    deficit = (math.log(16384) - gaussian_entropy_exact(16384, 3.0)) / 4.5
    assert deficit == pytest.approx(0.926, abs=1e-3)
    shifted = entropy_rows(grid, lambda n, s: gaussian_entropy_exact(n, s) + 0.1 * s * s / 2)
    assert claims.REM_LIQUID_DEFICIT(shifted).verdict == "fails"


def test_rem_frozen_entropy_against_poisson_dirichlet():
    from attnsim.kinds.logit_entropy import claims
    from attnsim.theory.entropy import frozen_entropy, gaussian_entropy_exact

    grid = [(16384, 5.0), (16384, 10.0), (16384, 30.0), (16384, 100.0), (64, 2.0)]
    exact = entropy_rows(grid, gaussian_entropy_exact)
    result = claims.REM_FROZEN_ENTROPY(exact)
    # sigma = 5 at n = 16384 is frozen (b_n = 3.84) but 1.4 nats from its PD prediction; sigma =
    # 2 at n = 64 is liquid; sigma = 100 predicts 0.065 nats, where one-hot (H = 0) lies inside
    # the band (issue 49: judged only where the prediction is >= 0.10): none of them is judged
    assert result.verdict == "holds" and result.points == 2, result.evidence
    assert result.alternative_value == -0.10 and result.redeclared_from
    assert result.outcome == "open" and result.tolerance == 0.05
    one_hot = entropy_rows(grid, lambda n, s: 0.0 * frozen_entropy(n, s))
    assert claims.REM_FROZEN_ENTROPY(one_hot).verdict == "fails"
    dot = entropy_rows(grid, gaussian_entropy_exact, logits="dot_product")
    assert claims.REM_FROZEN_ENTROPY(dot).verdict == "outside regime"


def test_the_frozen_regime_selects_planned_points_at_scale_zero_without_error():
    """A grid with logit scale 0 (sigma_eff = 0, no frozen phase): the frozen REM claim's regime,
    applied to the planned points before any row is read, leaves it out rather than raising."""
    import pandas as pd

    from attnsim.kinds.logit_entropy.claims import _frozen

    rows = pd.DataFrame(
        {"logits": ["gaussian"] * 3, "n": [16, 1024, 1024], "sigma_eff": [0.0, 0.0, 8.0]}
    )
    assert _frozen(rows).tolist() == [False, False, True]
