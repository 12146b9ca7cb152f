"""Kaplan-Meier, Greenwood and the log-log intervals (attnsim.stats) against examples
computed by hand and against a textbook table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsim.kinds.recall_training import escape_summary
from attnsim.stats import Z95, kaplan_meier, wilson

# 7 runs: escaped at 2, 3, 5, 8; censored at 3 (a tie with an escape: at risk at 3), 8 and 9
TIMES = [2, 3, 3, 5, 8, 8, 9]
EVENTS = [1, 1, 0, 1, 1, 0, 0]


def test_a_hand_computed_example():
    km = kaplan_meier(TIMES, EVENTS)
    np.testing.assert_array_equal(km.times, [2, 3, 5, 8])
    np.testing.assert_array_equal(km.at_risk, [7, 6, 4, 3])
    np.testing.assert_array_equal(km.events, [1, 1, 1, 1])
    # S = 6/7, 6/7 * 5/6 = 5/7, 5/7 * 3/4 = 15/28, 15/28 * 2/3 = 5/14
    np.testing.assert_allclose(km.survival, [6 / 7, 5 / 7, 15 / 28, 5 / 14], rtol=1e-15)
    # Greenwood: sum d / (n (n - d)) = 1/42, + 1/30, + 1/12, + 1/6
    np.testing.assert_allclose(km.greenwood, np.cumsum([1 / 42, 1 / 30, 1 / 12, 1 / 6]), rtol=1e-15)
    # the log-log band at t = 8: v = (1/42 + 1/30 + 1/12 + 1/6) / log(5/14)^2, S^exp(-+ z sqrt v)
    s, v = 5 / 14, (1 / 42 + 1 / 30 + 1 / 12 + 1 / 6) / math.log(5 / 14) ** 2
    assert km.at(8) == pytest.approx(
        (s, s ** math.exp(Z95 * math.sqrt(v)), s ** math.exp(-Z95 * math.sqrt(v))), rel=1e-12
    )
    assert (
        km.at(1.9) == (1.0, 1.0, 1.0)
        and km.at(4.99)[0] == pytest.approx(5 / 7)
        and km.at(100)[0] == pytest.approx(5 / 14)
    )
    # the median: the first time S <= 1/2 is 8 (S(5) = 0.536); its interval from the bands
    median, low, high = km.quantile(0.5)
    assert median == 8.0
    first_low = km.times[np.flatnonzero(km.low <= 0.5)[0]]
    assert low == first_low and low <= median
    assert high == math.inf  # the upper band never reaches 1/2 (5/14 with 3 runs at risk: wide)


def test_the_textbook_table_of_the_6mp_trial():
    """Freireich et al. 1963, 6-MP arm (21 remission times, 12 censored): the estimates and
    Greenwood standard errors of Klein & Moeschberger (2003), Table 4.1A, and the median 23 with
    lower 95% limit 13 and no upper limit (R: survfit(..., conf.type = "log-log"))."""
    t = [6, 6, 6, 6, 7, 9, 10, 10, 11, 13, 16, 17, 19, 20, 22, 23, 25, 32, 32, 34, 35]
    e = [1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]
    km = kaplan_meier(t, e)
    np.testing.assert_array_equal(km.times, [6, 7, 10, 13, 16, 22, 23])
    np.testing.assert_allclose(
        km.survival, [0.857, 0.807, 0.753, 0.690, 0.627, 0.538, 0.448], atol=5e-4
    )
    np.testing.assert_allclose(
        km.survival * np.sqrt(km.greenwood),
        [0.076, 0.087, 0.096, 0.107, 0.114, 0.128, 0.135],
        atol=5e-4,
    )
    # R's log-log limits at 6 and 7
    np.testing.assert_allclose(km.low[:2], [0.620, 0.563], atol=5e-4)
    np.testing.assert_allclose(km.high[:2], [0.952, 0.923], atol=5e-4)
    assert km.quantile(0.5) == (23.0, 13.0, math.inf)


def test_without_censoring_the_estimate_is_the_empirical_share():
    rng = np.random.default_rng(4)
    times = rng.integers(1, 50, size=40).astype(float)
    km = kaplan_meier(times, np.ones(40))
    for t in (0, 5, 17, 30, 49, 60):
        assert km.at(t)[0] == pytest.approx(np.mean(times > t), abs=1e-12)
    assert km.quantile(0.5)[0] == np.sort(times)[19]  # the 20th of 40: the first with S <= 1/2


def test_escape_summary_per_checkpoint_and_all_censored():
    out = escape_summary(TIMES, EVENTS, [1, 3, 8, 9])
    assert out["escape_median"] == 8.0
    assert [out[f"escaped_ckpt_{j}"] for j in range(4)] == pytest.approx(
        [0.0, 2 / 7, 9 / 14, 9 / 14]
    )
    assert out["escaped_ckpt_1_ci_low"] < 2 / 7 < out["escaped_ckpt_1_ci_high"]
    none = escape_summary([100.0] * 5, [0] * 5, [10, 100])
    assert none["escape_median"] == math.inf and none["escape_median_ci_low"] == math.inf
    # no escape in 5 runs: 0 with the Wilson interval [0, 0.43], not a band of no width
    assert none["escaped_ckpt_1"] == 0.0 and none["escaped_ckpt_1_ci_high"] == pytest.approx(
        wilson(0, 5)[1]
    )
    assert 0.4 < wilson(0, 5)[1] < 0.45
    every = escape_summary([3.0] * 4, [1] * 4, [2, 3])
    assert (
        every["escape_median"] == 3.0
        and every["escaped_ckpt_1"] == 1.0
        and every["escaped_ckpt_0"] == 0.0
    )
    assert every["escaped_ckpt_1_ci_low"] == pytest.approx(wilson(4, 4)[0]) and every[
        "escaped_ckpt_0_ci_high"
    ] == pytest.approx(wilson(0, 4)[1])


@pytest.mark.parametrize(
    "time, event", [([1.0, math.inf], [1, 0]), ([1.0, 2.0], [1, 2]), ([1.0], [1, 0])]
)
def test_bad_input(time, event):
    with pytest.raises(ValueError):
        kaplan_meier(time, event)


def test_every_survival_curve_drawn_is_non_increasing():
    """The escape_survival figure draws each point's Kaplan-Meier estimate as the step function
    of its runs' event times: never going back up, even with ties (several runs escaping at one
    evaluation, as on the kernel's evaluation grid) and censored runs at the budget. (The figure
    used to rebuild curves from checkpoint shares and quantiles, which went up.)"""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from attnsim.kinds.recall_training.figures import escape_survival

    rng = np.random.default_rng(12)
    grid = np.unique(np.round(np.geomspace(1, 2000, 113)))  # the evaluation steps
    summary, trials = [], []
    for scale in (1.0, 2.0, 4.0, 8.0, 16.0):
        logit_std = scale**2 * math.sqrt(1.09)
        raw = 30 * logit_std**0.9 * rng.exponential(size=12) ** 0.2
        time = grid[np.minimum(np.searchsorted(grid, raw), grid.size - 1)]  # ties on the grid
        event = (raw <= 2000).astype(float)
        point = f"p{scale:g}"
        summary.append(
            dict(point_id=point, scale=scale, logit_std=logit_std, init_entropy_mean=1 / scale)
            | dict(optimiser="adam", lr=0.03, values="trainable", logits="dot", stop="threshold")
            | dict(n=16, d=16, batch=32, steps=2000)
            | escape_summary(time, event, [1, 3, 9, 26, 77, 230, 680, 2000])
        )
        trials += [
            dict(point_id=point, trial=i, escape_step=t, escaped=e)
            for i, (t, e) in enumerate(zip(time, event))
        ]
    fig = escape_survival(pd.DataFrame(summary), pd.DataFrame(trials))
    curves = [line for ax in fig.axes for line in ax.lines if line.get_gid() == "kaplan-meier"]
    assert len(curves) == 5
    for line in curves:
        y = np.asarray(line.get_ydata(), dtype=float)
        x = np.asarray(line.get_xdata(), dtype=float)
        assert y[0] == 1.0 and np.all(np.diff(y) <= 0) and np.all(np.diff(x) >= 0)
    # each curve is the estimate itself: its levels are S at the point's event times
    first = kaplan_meier(
        [t["escape_step"] for t in trials[:12]], [t["escaped"] for t in trials[:12]]
    )
    np.testing.assert_array_equal(np.asarray(curves[0].get_ydata())[1:-1], first.survival)
