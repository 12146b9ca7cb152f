"""The normaliser predictions (attnsim.theory.normalisers) against brute force at small n: Monte
Carlo over the noise on fixed logits and values (tolerances from the Monte Carlo SE plus the
stated order of the approximation), explicit Jacobians, and a direct search over cosine
configurations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import normalisers as oracle

from attnsim.subjects import normalisers as nz
from attnsim.theory import normalisers as th
from attnsim.theory.entropy import exact_gap


def setup(n: int, trials: int = 4, scale: float = 0.7, d: int = 3, seed: int = 5):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((trials, n)), rng.standard_normal((trials, n, d))


def brute_force(name, s, v, sigma, draws=40000, seed=9):
    """Mean over noise draws of ||o~ - o||^2 and of <o~ - o, o> / ||o||^2, with their SEs."""
    rng = np.random.default_rng(seed)
    o = np.einsum("tn,tnd->td", nz.get(name).weights(s), v)
    sq, beta = [], []
    for t in range(len(s)):
        noisy = s[t] + sigma * rng.standard_normal((draws, s.shape[-1]))
        diff = nz.get(name).weights(noisy) @ v[t] - o[t]
        sq.append(np.einsum("kd,kd->k", diff, diff))
        beta.append(diff @ o[t] / (o[t] @ o[t]))
    sq, beta = np.array(sq), np.array(beta)
    se = lambda x: x.std(axis=1) / math.sqrt(draws)  # noqa: E731
    return sq.mean(axis=1), se(sq), beta.mean(axis=1), se(beta)


@pytest.mark.parametrize("name", nz.names())
def test_grad_sq_is_the_jacobians_norm(name):
    s, v = setup(7)
    got = th.grad_sq(name, s, v)
    for t in range(len(s)):
        jac = oracle.jacobian_row(name, s[t])
        assert got[t] == pytest.approx(np.sum((jac.T @ v[t]) ** 2), rel=1e-9)


@pytest.mark.parametrize("name", ["sigmoid", "relu"])
def test_elementwise_predictions_are_exact(name):
    """Exact for any sigma and n: only the Monte Carlo error remains (4 SE)."""
    s, v = setup(8)
    sigma = 0.5
    pred = th.predicted_error(name, s, v, sigma)
    sq, sq_se, beta, beta_se = brute_force(name, s, v, sigma)
    assert np.all(np.abs(sq - pred["sq_err_pred"]) < 4 * sq_se)
    assert np.all(np.abs(beta - pred["bias_pred"]) < 4 * beta_se)


@pytest.mark.parametrize(
    "name", ["softmax", "ssmax", "sink", "softcap50", "softcap30", "sparsemax", "entmax15"]
)
def test_first_order_predictions_at_small_noise(name):
    """At sigma = 0.03 the neglected terms are O(sigma^2) relative (a few 1e-3, and the kinks of
    the sparse maps lie further than 4 sigma from these logits): within 5% plus 4 SE."""
    s, v = setup(6, scale=2.0)
    sigma = 0.03
    pred = th.predicted_error(name, s, v, sigma)
    sq, sq_se, _, _ = brute_force(name, s, v, sigma)
    # (a one-hot sparse row has no error and a zero prediction: both 0, so <= not <)
    assert np.all(np.abs(sq - pred["sq_err_pred"]) <= 0.05 * pred["sq_err_pred"] + 4 * sq_se)


def test_sigmoid_bias_is_the_noise_mean_factor_whatever_n():
    """sigma(s - log n) = e^s / n (1 + O(e^s / n)): the relative bias along o is m - 1 =
    e^{sigma^2/2} - 1, the same at n = 64 and n = 4096."""
    sigma = 0.5
    for n in (64, 4096):
        s, v = setup(n, trials=3, scale=0.3)
        beta = th.predicted_error("sigmoid", s, v, sigma)["bias_pred"]
        assert np.all(np.abs(beta / (th.mean_exp(sigma) - 1) - 1) < 20 / n)


def test_sink_bias_against_brute_force():
    """Mean field: exact up to O(1/n) fluctuations of the keys' mass; at n = 32 within 15%."""
    s, v = setup(32, trials=3, scale=0.5)
    sigma = 0.5
    pred = th.predicted_error("sink", s, v, sigma)["bias_pred"]
    _, _, beta, se = brute_force("sink", s, v, sigma, draws=100000)
    np.testing.assert_array_less(np.abs(beta - pred), 0.15 * np.abs(pred) + 4 * se)


def test_softpick_mean_field_bias_at_moderate_n():
    s, v = setup(256, trials=2, scale=0.7)
    sigma = 0.3
    pred = th.predicted_error("softpick", s, v, sigma)["bias_pred"]
    _, _, beta, se = brute_force("softpick", s, v, sigma, draws=20000)
    np.testing.assert_array_less(np.abs(beta - pred), 0.1 * np.abs(pred) + 4 * se)


def gap_formula(tau: float) -> float:
    """SCIENCE's asymptotic softmax gap g(tau), maximised over f on a fine grid."""
    f = np.linspace(1e-6, 1 - 1e-6, 200001)
    a, b = math.exp(1 / tau), math.exp(-1 / tau)
    z = f * a + (1 - f) * b
    return float(np.max((f * a - (1 - f) * b) / (tau * z) - np.log(z)))


def test_softmax_cosine_floor_approaches_the_known_gap():
    assert gap_formula(1.0) == pytest.approx(0.4745, abs=1e-4)
    assert th.cosine_floor("softmax", 4096) == pytest.approx(gap_formula(1.0), abs=1e-3)
    assert th.cosine_floor("softmax", 4096) <= gap_formula(1.0) + 1e-9


def test_ssmax_floor_is_softmax_at_temperature_one_over_b_log_n():
    n = 512
    assert th.cosine_floor("ssmax", n) == pytest.approx(
        gap_formula(1 / (nz.SSMAX_B * math.log(n))), abs=2e-2
    )


def test_cosine_floor_matches_exhaustive_search_at_small_n():
    """Every configuration of n = 6 cosines on a grid of [-1, 1]: no config beats the formula's
    deficit (monotone normalisers), and the sparse ones reach log n."""
    import itertools

    grid = np.linspace(-1, 1, 5)
    configs = np.array(list(itertools.product(grid, repeat=6)))
    for name in nz.names():
        _, h = nz.mass_and_entropy(nz.get(name).weights(configs))
        best = math.log(6) - np.nanmin(h)
        assert best == pytest.approx(th.cosine_floor(name, 6), abs=1e-9), name


def test_large_scale_entropy_limits():
    rng = np.random.default_rng(3)
    n = 4096
    z = rng.standard_normal((4, n))
    for name in nz.names():
        scale = 1e4 if nz.get(name).cap is None else 1e6
        _, h = nz.mass_and_entropy(nz.get(name).weights(scale * z))
        tol = 0.05 if name == "relu" else 0.01
        assert np.all(np.abs(h - th.large_scale_entropy(name, n)) < tol + 2 / math.sqrt(n)), name


def test_gradient_vanishes_at_large_scale_except_relu():
    """Softmax-like maps lose their gradient exponentially in the scale, saturating ones (sigmoid,
    soft-capping) like 1/scale (keys within ~1/scale of the threshold keep a slope), sparse ones
    exactly once one key is left; ReLU's is the same at every scale."""
    rng = np.random.default_rng(4)
    z, v = rng.standard_normal((4, 256)), rng.standard_normal((4, 256, 3))
    for name in nz.names():
        small, large = th.grad_sq(name, 1e2 * z, v), th.grad_sq(name, 1e5 * z, v)
        if th.gradient_vanishes_at_large_scale(name):
            assert np.all(large < 0.1 * small + 1e-300), name
        else:
            np.testing.assert_allclose(large, small, rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("tau", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("n", [5, 40])
def test_bounded_ratio_floor_is_softmax_at_the_effective_temperature(n, tau):
    """§12.4: two levels +-1/tau give softmax's weights at +-u_eff, so the floor is softmax's exact
    bound at 1/u_eff; against every two-level configuration computed from the papers' formulas."""
    for name in [m.name for m in nz.NORMALISERS if m.bounded_ratio]:
        want = oracle.two_level_floor(name, n, tau)
        assert th.cosine_floor(name, n, tau) == pytest.approx(want, abs=1e-9), name
        u_eff = th.effective_inverse_temperature(name, n, tau)
        assert float(exact_gap(n, 1 / u_eff)) == pytest.approx(want, abs=1e-9), name


def test_no_floor_without_a_bounded_ratio():
    """One key at +1 and the rest at -1 leave one nonzero weight: H = 0, the floor is log n."""
    for name in set(nz.names()) - set([m.name for m in nz.NORMALISERS if m.bounded_ratio]):
        s = np.array([1.0] + [-1.0] * 9)
        _, entropy = oracle.mass_entropy_row(oracle.weights_row(name, s))
        assert entropy == 0.0 and th.cosine_floor(name, 10) == pytest.approx(math.log(10)), name


@pytest.mark.parametrize("d", [2, 3, 16, 300])
def test_cosine_nodes_have_the_spheres_moments(d):
    """E cos^2 = 1/d and E cos^4 = 3 / (d (d + 2)) for uniform directions of R^d."""
    x, w = th._sphere_nodes(d, (0.3,))
    assert w.sum() == pytest.approx(1.0)
    assert float(x**2 @ w) == pytest.approx(1 / d, rel=1e-9)
    assert float(x**4 @ w) == pytest.approx(3 / (d * (d + 2)), rel=1e-9)


def sphere_gaps(name: str, n: int, d: int, tau: float, trials: int, seed: int) -> np.ndarray:
    """log n - H on cosines from numpy's beta sampler (not the kind's): (x + 1)/2 ~ Beta."""
    rng = np.random.default_rng(seed)
    x = 2 * rng.beta((d - 1) / 2, (d - 1) / 2, size=(trials, n)) - 1
    _, entropy = nz.mass_and_entropy(nz.get(name).weights(x / tau))
    return math.log(n) - entropy


@pytest.mark.parametrize("d", [3, 16])
def test_mean_field_gap_against_monte_carlo(d):
    """Smooth g: the mean field with its 1/n term within 0.5% + 4 SE at n = 512; sparse maps (no
    1/n term, the threshold's fluctuation O(1/support)): within 3% + 4 SE."""
    n, tau = 512, 1.0
    for name in nz.names():
        gaps = sphere_gaps(name, n, d, tau, trials=300, seed=d)
        mean, se = gaps.mean(), gaps.std(ddof=1) / math.sqrt(len(gaps))
        want, _ = th.cosine_gap_mean_field(name, n, d, tau)
        rel = 0.03 if name in ("sparsemax", "entmax15") else 0.005
        assert abs(mean - want) <= rel * want + 4 * se, (name, mean, want, se)


def test_mean_field_one_over_n_term_is_the_finite_n_bias():
    """At n = 16 softmax's mean gap at tau = 0.5 departs from the n -> infinity value; the 1/n
    term accounts for it (to O(1/n^2)), the plain limit does not."""
    n, d, tau = 16, 3, 0.5
    gaps = sphere_gaps("softmax", n, d, tau, trials=40000, seed=1)
    mean, se = gaps.mean(), gaps.std(ddof=1) / math.sqrt(len(gaps))
    with_term, _ = th.cosine_gap_mean_field("softmax", n, d, tau)
    limit, _ = th.cosine_gap_mean_field("softmax", 10**9, d, tau)
    assert abs(mean - with_term) < abs(mean - limit) / 3
    assert abs(mean - limit) > 8 * se


def brute_grad_sq(name, n, d, scale, trials, seed=0):
    rng = np.random.default_rng(seed)
    z, v = rng.standard_normal((trials, n)), rng.standard_normal((trials, n, d))
    g = th.grad_sq(name, scale * z, v)
    return g.mean(), g.std(ddof=1) / math.sqrt(trials)


def test_top_spacing_density_integrates_to_one():
    t, w = np.polynomial.legendre.leggauss(200)
    delta, w = 4 * (t + 1), 4 * w
    for n in (2, 64, 1024):
        assert float(th.top_spacing_density(n, delta) @ w) == pytest.approx(1.0, abs=1e-6)
    # n = 2: the gap of two normals is |N(0, 2)|, density 1/sqrt(pi) at 0
    assert th.top_spacing_density(2, np.array([0.0]))[0] == pytest.approx(1 / math.sqrt(math.pi))


@pytest.mark.parametrize("name", ["sigmoid", "relu"])
def test_elementwise_mean_gradient_is_exact_at_every_scale(name):
    for scale in (0.5, 16.0):
        mean, se = brute_grad_sq(name, 64, 4, scale, trials=4000)
        assert abs(mean - th.mean_grad_sq(name, 64, 4, scale)) < 4 * se, scale


@pytest.mark.parametrize(
    "name", [m.name for m in nz.NORMALISERS if m.large_scale_gradient == "near ties"]
)
def test_two_key_law_at_large_scale(name):
    """At logit std 64 the pair of top keys carries the mean gradient: within 10% + 4 SE
    (third keys and triple ties are O(1/scale)); it falls like 1/scale, not exponentially."""
    mean, se = brute_grad_sq(name, 64, 4, 64.0, trials=20000, seed=3)
    law = th.mean_grad_sq(name, 64, 4, 64.0)
    assert abs(mean - law) < 0.1 * law + 4 * se
    assert th.mean_grad_sq(name, 64, 4, 640.0) == pytest.approx(law / 10, rel=0.05)


def test_mean_field_is_withheld_where_its_expansion_breaks_down():
    """SSMax at n = 4096, d = 32, tau = 0.1 (u_eff = 36): a few keys carry the weight, the 1/n
    term is no longer small, and the mean field is nan rather than a wrong number; never within
    the claims' regime (n >= 256, tau >= 0.5) on the preset's grid."""
    assert math.isnan(th.cosine_gap_mean_field("ssmax", 4096, 32, 0.1)[0])
    for name in nz.names():
        for n in (256, 4096):
            for d in (2, 128):
                assert not math.isnan(th.cosine_gap_mean_field(name, n, d, 0.5)[0]), (name, n, d)


@pytest.mark.parametrize(("n", "scale"), [(64, 1.0), (64, 0.5), (512, 1.0)])
def test_second_order_bias_against_brute_force(n, scale):
    """§12.2's second-order coefficient: softmax's relative bias along o under i.i.d. noise is
    -kappa E[sum p^3 / sum p^2 - sum p^2] / (m - 1) (the cut of the bias claims): Monte Carlo of
    the noisy softmax itself at sigma = 0.5, within 3 SE and the third order's 15%."""
    from attnsim.kinds.normaliser_attention import kernel

    rng = np.random.default_rng(20261207)
    stat = np.concatenate(
        [
            kernel.simulate(kernel.draw(rng, 1000, n, 16, 16), "softmax", scale, 0.5)["bias"]
            for _ in range(3)
        ]
    ) / math.expm1(0.5**2 / 2)
    beta = th.second_order_bias("softmax", n, scale, 0.5)
    se = stat.std(ddof=1) / math.sqrt(len(stat))
    assert abs(stat.mean() + beta) <= 3 * se + 0.15 * beta, (stat.mean(), beta, se)


def test_second_order_bias_puts_ssmax_default_points_outside():
    """The numbers the regimes state: SSMax at logit std 0.5, sigma 0.5 is beyond the 0.085 cut
    at n = 64 and 512 (kappa_eff 1.2 and 5), inside at logit std 0.25, sigma 0.25; softmax at
    logit std <= 1, n >= 64 inside."""
    assert th.second_order_bias("ssmax", 64, 0.5, 0.5) > 0.085
    assert th.second_order_bias("ssmax", 512, 0.5, 0.5) > 0.085
    assert th.second_order_bias("ssmax", 512, 0.25, 0.25) < 0.085
    assert th.second_order_bias("softmax", 64, 1.0, 1.0) < 0.085
    assert th.second_order_bias("softmax", 64, 1.0, 0.5) == pytest.approx(0.065, rel=0.1)
