"""The batched noisy-attention kernel against a slow per-trial oracle, at extremes, and against theory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsim.grid import make_point
from attnsim.kernels import noisy_attention as kernel
from attnsim.kinds.noisy_attention import KIND
from attnsim.simulate import simulate_points
from attnsim.theory.noise import kappa


def point(**overrides):
    return make_point("noisy_attention", {**dict(n=64, d=4, logit_scale=1.0, noise="gaussian", noise_draws=4, noise_scale=0.5), **overrides})


@pytest.mark.parametrize("family", ["gaussian", "uniform", "laplace", "gumbel", "student_t"])
@pytest.mark.parametrize("logit_scale", [0.0, 1.0, 5.0])
def test_kernel_matches_naive_oracle_on_the_same_draws(family, logit_scale):
    draws = kernel.draw(np.random.default_rng(1), 6, 33, 5, logit_scale, family, 3)
    clean = kernel.clean_attention(draws)
    for sigma in (0.0, 0.3, 2.0):
        fast = kernel.noisy_metrics(draws, clean, sigma, kappa(family, sigma))
        for t in range(6):
            slow = kernel.naive_trial(draws.logits[t], draws.values[t], draws.noise[t], sigma)
            for name in ("sq_err", "entropy", "n_eff", "grad_sq"):
                assert fast[name][t] == pytest.approx(slow[name], rel=1e-9, abs=1e-14), name
            assert fast["rel_err"][t] == pytest.approx(math.sqrt(slow["sq_err"] / slow["spread"]), rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("logit_scale", [1e2, 1e4])
def test_huge_logits_give_finite_results_and_one_hot_weights(logit_scale):
    out = simulate_points("noisy_attention", 3, 40, [point(logit_scale=logit_scale, noise=f, noise_scale=10.0) for f in ("gaussian", "student_t")])
    for metrics in out.values():
        for name in ("sq_err", "rel_err", "entropy", "n_eff", "grad_sq"):
            assert np.all(np.isfinite(metrics[name])), name
        assert np.all(metrics["entropy"] >= 0) and np.all(metrics["entropy"] <= math.log(64))
        assert not np.isnan(metrics["sq_err_pred"]).any()
    if logit_scale == 1e4:
        assert np.median(next(iter(out.values()))["n_eff"]) == pytest.approx(1.0)


def test_infinite_kappa_is_stored_as_inf_and_flagged():
    p = point(noise="student_t", noise_scale=0.5)
    metrics = simulate_points("noisy_attention", 1, 10, [p])[p.id]
    assert np.all(metrics["kappa"] == np.inf) and np.all(metrics["sq_err_pred"] == np.inf)
    assert np.all(np.isfinite(metrics["sq_err"]))
    theory = KIND.theory(p.params)
    assert theory["kappa_finite"] is False and theory["noise_regime"] == "no_mean"


def test_zero_noise_gives_zero_error():
    p = point(noise_scale=0.0)
    metrics = simulate_points("noisy_attention", 1, 10, [p])[p.id]
    assert np.all(metrics["sq_err"] < 1e-28) and np.all(metrics["sq_err_pred"] == 0)


@pytest.mark.parametrize("sigma", [0.25, 0.5])
@pytest.mark.parametrize("n", [1024, 4096])
def test_gaussian_noise_error_matches_delta_method(n, sigma):
    """Ratio of mean measured to mean predicted sq_err is 1 within 4 standard errors plus the
    second-order term of the delta method (relative size ~ kappa * sum p^2)."""
    p = point(n=n, d=8, noise_scale=sigma, noise_draws=8)
    metrics = simulate_points("noisy_attention", 2026, 300, [p])[p.id]
    extra = KIND.extra_summary(metrics, p.params)
    assert abs(extra["err_ratio"] - 1) < 4 * extra["err_ratio_se"] + 3 * extra["kappa_sum_p2"]
    assert abs(extra["err_ratio"] - 1) < 0.05  # the 5% criterion


def test_uniform_weights_error_scales_like_sqrt_kappa_over_n():
    sigma = 0.3
    for n in (256, 2048):
        p = point(n=n, d=8, logit_scale=0.0, noise_scale=sigma, noise_draws=8)
        rel = simulate_points("noisy_attention", 5, 200, [p])[p.id]["rel_err"]
        se = rel.std(ddof=1) / math.sqrt(rel.size)
        # E[rel_err] <= sqrt(E[rel_err^2]) = sqrt(kappa / n) (Jensen); the gap is O(1/(d K))
        assert np.mean(rel) == pytest.approx(math.sqrt(kappa("gaussian", sigma) / n), rel=4 * se / np.mean(rel) + 0.05)
