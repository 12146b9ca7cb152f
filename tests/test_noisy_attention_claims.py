"""The noisy_attention claims that judge every point (delta_method_<family>, next_order_theory) and the
delta_slow exponent fit, on synthetic summaries that hold, fail, and fail at one point only."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from attnsim.kinds.noisy_attention import claims
from attnsim.theory.noise import kappa


def summary(family="gaussian", sigmas=(0.1, 0.3), ratio=1.0, next_err=1.0, se=0.004, shortfall=None, ns=(64, 256, 1024, 4096)):
    """Rows of a noisy_attention summary at uniform and non-uniform weights; err_ratio = `ratio` (a number,
    or a function of the row) or 1 - shortfall(sum p^2, logit_scale, sigma)."""
    rows = []
    for sigma in sigmas:
        k = kappa(family, sigma)
        for logit_scale in (0.0, 1.0):
            for n in ns:
                sum_p2 = (1 if logit_scale == 0 else math.e) / n
                row = dict(experiment="robustness", n=n, d=16, logit_scale=logit_scale, noise=family, noise_draws=8, noise_scale=sigma, n_trials=1000)
                r = 1 - shortfall(sum_p2, logit_scale, sigma) if shortfall else ratio(row) if callable(ratio) else ratio
                row.update(
                    kappa=k,
                    kappa_finite=math.isfinite(k),
                    kappa_sum_p2=k * sum_p2,
                    err_ratio=r,
                    err_ratio_se=se,
                    err_ratio_ci_low=r - 1.96 * se,
                    err_ratio_ci_high=r + 1.96 * se,
                    next_ratio=r,
                    next_err_ratio=next_err(row) if callable(next_err) else next_err,
                    next_err_ratio_se=se,
                )
                rows.append(row)
    return pd.DataFrame(rows)


def test_every_point_within_tolerance_holds():
    c = claims.delta_method(summary(ratio=0.98), "gaussian")
    assert c.verdict == "holds" and c.number == "range over points" and c.statement == "robustness"
    assert c.evidence.startswith("16 of 16 points within tolerance") and c.figure == "robustness/delta_shortfall"
    assert c.points == 16 and c.trials == 16000


def test_every_point_off_fails():
    c = claims.delta_method(summary(ratio=0.8), "gaussian")
    assert c.verdict == "fails" and c.measured == pytest.approx(0.8) and c.evidence.startswith("0 of 16")


def test_one_point_off_fails_although_the_mean_is_within_tolerance():
    """Fifteen points at 1.01 and one at 0.78: the mean over points (0.996) is within 5%, the claim is not."""
    s = summary(ratio=lambda row: 0.78 if (row["n"], row["noise_scale"], row["logit_scale"]) == (64, 0.3, 1.0) else 1.01)
    assert abs(s["err_ratio"].mean() - 1) < 0.05
    c = claims.delta_method(s, "gaussian")
    assert c.verdict == "fails" and c.measured == pytest.approx(0.78)
    assert c.ci_low == pytest.approx(0.78) and c.ci_high == pytest.approx(1.01)
    assert "15 of 16 points within tolerance, worst 0.780 at (n=64, σ=0.3, logit_scale=1)" in c.evidence


def test_a_point_whose_interval_reaches_the_band_is_within():
    s = summary(ratio=0.94, se=0.01)  # 0.94 + 1.96 * 0.01 >= 0.95
    assert claims.delta_method(s, "gaussian").verdict == "holds"
    assert claims.delta_method(summary(ratio=0.94, se=0.001), "gaussian").verdict == "fails"


def test_misses_are_counted_by_regime():
    s = summary("laplace", sigmas=(0.1, 0.5), ratio=lambda row: 0.8 if row["noise_scale"] == 0.5 else 1.0)
    c = claims.delta_method(s, "laplace")
    assert c.verdict == "fails" and "delta_slow, k* = 2.83" in c.evidence and "misses by regime: " in c.evidence


def test_next_order_theory_per_point_and_its_n_eff_bound():
    assert claims.next_order(summary(next_err=1.01)).verdict == "holds"
    one_off = claims.next_order(summary(next_err=lambda row: 1.2 if row["n"] == 1024 and row["logit_scale"] == 0 else 1.0))
    assert one_off.verdict == "fails" and one_off.measured == pytest.approx(1.2)
    # a miss at n_eff < 100 is not judged but reported
    small = claims.next_order(summary(next_err=lambda row: 1.3 if row["n"] == 64 else 1.0))
    assert small.verdict == "holds" and "not judged: 6 points with n_eff < 100, 4 of them off" in small.evidence


@pytest.mark.parametrize(("alpha", "verdict"), [(0.83, "holds"), (1.0, "fails")])
def test_delta_slow_exponent_is_recovered(alpha, verdict):
    """1 - ratio = A (sum p^2)^alpha with an amplitude per logit scale, at laplace sigma = 0.5 (k* = 2.83):
    the fit recovers alpha, the claim holds when it is below 1."""
    amp = {0.0: 20.0, 1.0: 35.0}
    s = summary("laplace", sigmas=(0.5,), shortfall=lambda p2, ls, sigma: amp[ls] * p2**alpha, ns=(256, 1024, 4096, 16384, 65536), se=1e-4)
    c = claims.delta_slow_rate(s, "laplace")
    assert c.verdict == verdict and c.measured == pytest.approx(alpha, abs=2e-3)
    assert c.predicted == pytest.approx(2 * math.sqrt(2) - 2) and c.number == "fitted slope (95% CI)"
    assert c.ci_low - 1e-9 <= alpha <= c.ci_high + 1e-9
    assert ("matches k* - 2" in c.evidence) == (alpha == 0.83)


def test_shortfall_fit_is_not_biased_by_unresolved_points():
    """Points whose shortfall is below its SE (even negative) enter as they are: the exponent from noisy
    data scatters around the truth (a log-log fit of the resolved points only would be too flat)."""
    rng = np.random.default_rng(0)
    fits = []
    for _ in range(200):
        s = summary("laplace", sigmas=(0.5,), shortfall=lambda p2, ls, sigma: 20 * p2**0.8, ns=(64, 256, 1024, 4096, 16384), se=0.004)
        s["err_ratio"] += rng.normal(0, 0.004, len(s))
        fits.append(claims.shortfall_fit(s, 1 - s["err_ratio"], s["err_ratio_se"])[0])
    assert abs(np.median(fits) - 0.8) < 0.03


def test_delta_slow_is_outside_regime_without_delta_slow_points():
    assert claims.delta_slow_rate(summary("laplace", sigmas=(0.1, 0.3)), "laplace").verdict == "outside regime"
    assert claims.delta_slow_rate(None, "gumbel").verdict == "not measured"
