"""The AFT fit of escape times (attnsim.stats): against a scipy reference
fit (tests/oracles), on constructed censored data with known exponents (bias and coverage of the
profile interval at fixed seeds, tolerances from binomial and sampling SEs), and its refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsim.stats import AFT_FAMILIES, NotIdentified, fit_aft
from tests.oracles.censored_regression import reference_fit

LOGIT_STD = np.array([4.0, 16.0, 64.0, 256.0])  # the plateau sweep's initial logit stds
RUNS = 12  # runs per point, as in the default sweep


def censored_sample(rng, slope, family, sigma=0.2, budget=2000.0, runs=RUNS):
    """Runs at each LOGIT_STD with log T = log 30 + slope log(std) + sigma W, censored at the
    budget (escape_step = budget, escaped = 0), as the kernel records them."""
    x = np.repeat(np.log(LOGIT_STD), runs)
    w = np.log(rng.exponential(size=x.size)) if family == "weibull" else rng.normal(size=x.size)
    time = np.exp(math.log(30.0) + slope * x + sigma * w)
    event = (time <= budget).astype(float)
    return x, np.minimum(time, budget), event


@pytest.mark.parametrize("family", AFT_FAMILIES)
def test_agrees_with_the_scipy_reference(family):
    rng = np.random.default_rng(20261203)
    x, time, event = censored_sample(rng, 0.9, family)
    assert 0 < event.mean() < 1  # some runs censored, as at the plateau's largest scale
    fit = fit_aft(x, time, event, family)
    ref = reference_fit(x, time, event, family)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-7)
    for name in ("intercept", "slope", "sigma"):
        assert getattr(fit, name) == pytest.approx(ref[name], abs=1e-5), name
    assert fit.slope_low == pytest.approx(ref["slope_low"], abs=1e-5)
    assert fit.slope_high == pytest.approx(ref["slope_high"], abs=1e-5)
    assert fit.runs == x.size and fit.events == int(event.sum())


@pytest.mark.parametrize("family, slope", [("weibull", 0.5), ("lognormal", 1.0)])
def test_known_exponent_is_recovered_and_covered(family, slope):
    """400 censored data sets (a quarter of the largest scale's runs censored or more): the
    estimate is unbiased within 3 of its SEs, the 95% profile interval covers the true exponent
    in 95% of them within 3 binomial SEs, and the Wald SE matches the estimates' spread."""
    rng = np.random.default_rng(7 if family == "weibull" else 8)
    sets = 400
    fits = [fit_aft(*censored_sample(rng, slope, family), family) for _ in range(sets)]
    slopes = np.array([f.slope for f in fits])
    covered = np.mean([f.slope_low <= slope <= f.slope_high for f in fits])
    spread = slopes.std(ddof=1)
    assert abs(slopes.mean() - slope) < 3 * spread / math.sqrt(sets)
    assert abs(covered - 0.95) < 3 * math.sqrt(0.95 * 0.05 / sets)
    # the SE of a sample standard deviation of 400 is ~3.5%: the Wald SE within 15% of it
    assert np.median([f.slope_se for f in fits]) == pytest.approx(spread, rel=0.15)


def test_censored_runs_count_as_later_not_as_missing():
    """Dropping the censored runs (what a fit to uncensored times does) biases the exponent down;
    the censored likelihood does not."""
    rng = np.random.default_rng(11)
    x, time, event = censored_sample(rng, 1.0, "weibull", sigma=0.6, budget=3000.0, runs=40)
    assert 0.5 < 1 - event[x == x.max()].mean() < 0.9
    full = fit_aft(x, time, event)
    kept = event == 1
    dropped = fit_aft(x[kept], time[kept], event[kept])
    assert full.slope_low <= 1.0 <= full.slope_high
    assert dropped.slope_high < 1.0  # censoring ignored: the truth lies above its interval


def test_the_order_of_the_runs_does_not_matter():
    rng = np.random.default_rng(3)
    x, time, event = censored_sample(rng, 0.7, "lognormal")
    order = rng.permutation(x.size)
    one, two = (
        fit_aft(x, time, event, "lognormal"),
        fit_aft(x[order], time[order], event[order], "lognormal"),
    )
    for name in ("slope", "slope_low", "slope_high", "sigma", "loglik"):
        assert getattr(one, name) == pytest.approx(getattr(two, name), rel=1e-9, abs=1e-9)


def test_not_identified_without_escapes_at_two_scales():
    x = np.log(np.repeat([4.0, 16.0, 64.0], 4))
    time = np.array([50, 60, 70, 80] + [300] * 8, dtype=float)
    event = np.array([1] * 4 + [0] * 8, dtype=float)
    with pytest.raises(NotIdentified):
        fit_aft(x, time, event)
    with pytest.raises(NotIdentified):
        fit_aft(x, np.full(12, 300.0), np.zeros(12))


@pytest.mark.parametrize(
    "x, time, event",
    [
        ([0.0, 1.0], [1.0, 2.0, 3.0], [1, 1, 1]),
        ([0.0, 1.0], [1.0, 2.0], [1, 2]),
        ([0.0, 1.0], [0.0, 2.0], [1, 1]),
        ([0.0, math.nan], [1.0, 2.0], [1, 1]),
    ],
)
def test_bad_input(x, time, event):
    with pytest.raises(ValueError):
        fit_aft(x, time, event)


def test_unknown_family():
    with pytest.raises(ValueError, match="family"):
        fit_aft([0.0, 1.0], [1.0, 2.0], [1, 1], "gamma")
