"""Numerical extremes for every kind: n from 2 to 2^20, logits and scales to 1e4, tau to 1e-3,
noise scales to 10. Outputs are finite, entropies lie in [0, log n], infinite kappa is flagged."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.points import make_point

from attnsim.jobs.simulate import simulate_points
from attnsim.kinds import all_kinds, get_kind
from attnsim.records.experiment import TrialSettings

EXTREMES = {
    "noisy_attention": [
        dict(n=2, d=1, logit_scale=1e4, noise=f, noise_draws=2, noise_scale=10.0)
        for f in ("gaussian", "uniform", "laplace", "gumbel", "student_t")
    ]
    + [
        dict(n=2**20, d=1, logit_scale=3.0, noise="student_t", noise_draws=1, noise_scale=10.0),
        dict(n=4096, d=2, logit_scale=1e4, noise="gaussian", noise_draws=2, noise_scale=1e-6),
    ],
    "logit_entropy": [
        dict(n=n, d=4, logits=t, scale=s)
        for n in (2, 2**20)
        for t in ("gaussian", "dot_product")
        for s in (0.0, 1e-4, 1e4)
    ],
    "temperature_entropy": [
        dict(n=n, d=d, tau=t) for n in (2, 2**20) for d in (2, 512) for t in (1e-3, 1e4)
    ],
    "init_gradient": [dict(n=n, d=3, scale=s) for n in (2, 2**20) for s in (0.0, 1e4)],
}


@pytest.mark.parametrize("kind", sorted(EXTREMES))
def test_extreme_points_are_finite_and_in_bounds(kind):
    assert kind in all_kinds()
    for params in EXTREMES[kind]:
        point = make_point(kind, params)
        metrics = simulate_points(get_kind(kind), TrialSettings(1, 2), [point])[point.id]
        for name, values in metrics.items():
            assert not np.isnan(values).any(), (params, name)
            # +inf where kappa = inf
            if name not in ("kappa", "sq_err_pred", "rel_err_pred", "sq_err_next"):
                assert np.isfinite(values).all(), (params, name)
        entropy = metrics["entropy"]
        assert (entropy >= 0).all() and (entropy <= math.log(params["n"]) * (1 + 1e-12)).all(), (
            params,
            entropy,
        )
        if kind == "noisy_attention" and params["noise"] == "student_t":
            assert (
                (metrics["kappa"] == np.inf).all()
                and (metrics["sq_err_pred"] == np.inf).all()
                and (metrics["sq_err_next"] == np.inf).all()
            )


def test_exp_floor_changes_no_softmax_statistic():
    """Large multipliers push exp(-c g) into subnormals (100x slower in numpy); the floor at
    e^-700 must leave Z and sum p^2 unchanged and the entropy within rounding (1e-15) of the plain
    formula."""
    from attnsim.kernels.softmax import EXP_FLOOR, GapSoftmax, exp_neg, gaps

    z = np.random.default_rng(5).standard_normal((64, 4096))
    softmax = GapSoftmax(gaps(z))
    for c in (0.5, 100.0, 300.0, 1e4):
        plain = np.exp(-c * softmax.gap)
        floored = exp_neg(softmax.gap, c, np.empty_like(plain), softmax.gap_max)
        normal = c * softmax.gap <= -EXP_FLOOR
        assert np.array_equal(floored[normal], plain[normal]) and np.all(
            floored[~normal] <= math.exp(EXP_FLOOR)
        )
        stats = softmax.stats(c)
        total = plain.sum(axis=-1)
        np.testing.assert_allclose(stats["total"], total, rtol=1e-14)
        np.testing.assert_allclose(
            stats["sum_p2"], np.einsum("tn,tn->t", plain, plain) / total**2, rtol=1e-14
        )
        entropy = np.log(total) + c * np.einsum("tn,tn->t", plain, softmax.gap) / total
        np.testing.assert_allclose(
            stats["entropy"], np.clip(entropy, 0, math.log(4096)), rtol=1e-13, atol=1e-15
        )
