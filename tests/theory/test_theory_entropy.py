"""Tests for attnsim.theory.entropy against independent oracles (scipy, brute force, Monte
Carlo)."""

import numpy as np
import pytest
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.special import entr, logsumexp

from attnsim.theory import entropy as E

TAUS = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0]


# ----------------------------------------------------------------------------- oracles


def naive_two_point_gap(f, tau):
    """The formula of docs/science.md §4.2 verbatim (overflows for small tau; fine for tau >=
    0.05)."""
    a, b = np.exp(1 / tau), np.exp(-1 / tau)
    Z = f * a + (1 - f) * b
    return (f * a - (1 - f) * b) / (tau * Z) - np.log(Z)


def brute_entropy(cosines, tau):
    """Softmax entropy computed directly from the weights."""
    s = np.asarray(cosines) / tau
    p = np.exp(s - s.max())
    p /= p.sum()
    return entr(p).sum()


def brute_exact_gap(n, tau):
    gaps = []
    for k in range(1, n + 1):  # deliberately slow
        c = np.r_[np.ones(k), -np.ones(n - k)]
        gaps.append(np.log(n) - brute_entropy(c, tau))
    return max(gaps), 1 + int(np.argmax(gaps))


def gap_of_measure(theta, grid, u):
    """G(mu) and dG/dtheta for mu = softmax(theta) on the support points `grid`, cosine logits u*c.

    G(mu) = u E_mu[c e^{uc}] / E_mu[e^{uc}] - log E_mu[e^{uc}] is the n -> inf limit of
    log n - H when the n cosines are i.i.d. mu.
    """
    mu = np.exp(theta - logsumexp(theta))
    e = np.exp(u * (grid - 1))  # scaled by e^{-u} to avoid overflow
    A = mu @ e
    B = mu @ (grid * e)
    value = u * B / A - (np.log(A) + u)
    dmu = (e / A) * (u * grid - u * B / A - 1)
    return value, mu * (dmu - mu @ dmu)


def optimise_over_measures(tau, m=41, starts=6, seed=0):
    grid = np.linspace(-1, 1, m)
    rng = np.random.default_rng(seed)
    best = None
    for i in range(starts):
        theta0 = np.zeros(m) if i == 0 else rng.normal(scale=3, size=m)
        res = minimize(
            lambda th: tuple(-x for x in gap_of_measure(th, grid, 1 / tau)),
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 20000, "maxfun": 40000, "ftol": 1e-16, "gtol": 1e-13},
        )
        if best is None or res.fun < best.fun:
            best = res
    mu = np.exp(best.x - logsumexp(best.x))
    return -best.fun, grid, mu


# ----------------------------------------------------------------------------- asymptotic gap


@pytest.mark.parametrize("tau", TAUS)
def test_asymptotic_gap_is_the_optimum_over_all_measures_on_minus1_1(tau):
    value, grid, mu = optimise_over_measures(tau)
    # (a) no distribution of cosines beats the two-point formula, and the optimum attains it
    assert value <= E.asymptotic_gap(tau) + 1e-9
    assert value == pytest.approx(E.asymptotic_gap(tau), abs=1e-9)  # reached: ~1e-13
    # (b) the optimum is two-point: all mass at +-1, with mass f* at +1
    assert mu[1:-1].sum() < 1e-6  # reached: < 1e-10
    # even f* = 4e-8 at tau = 0.1
    assert mu[-1] == pytest.approx(E.asymptotic_gap_argmax(tau), rel=1e-4)


@pytest.mark.parametrize("tau", np.geomspace(0.05, 30, 23).round(4).tolist())
def test_asymptotic_gap_matches_scalar_optimisation_of_the_verbatim_formula(tau):
    # optimise over log f: at small tau the maximiser f* ~ (2/tau) e^{-2/tau} is tiny
    res = minimize_scalar(
        lambda v: -naive_two_point_gap(np.exp(v), tau),
        bounds=(-80, 0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert E.asymptotic_gap(tau) == pytest.approx(-res.fun, rel=1e-10, abs=1e-15)
    assert E.asymptotic_gap(tau) >= -res.fun - 1e-15
    # f* is the root of dG/df, checked against a bracketed root find of the numerical derivative
    a, b = np.exp(1 / tau), np.exp(-1 / tau)
    root = brentq(
        lambda f: 2 / (tau * (f * a + (1 - f) * b) ** 2) - (a - b) / (f * a + (1 - f) * b),
        0,
        1,
        xtol=1e-300,
        rtol=1e-15,
    )
    assert E.asymptotic_gap_argmax(tau) == pytest.approx(root, rel=1e-9)


def test_known_values():
    assert E.asymptotic_gap(1.0) == pytest.approx(0.4745, abs=5e-5)
    assert E.asymptotic_gap_argmax(1.0) == pytest.approx(0.2055, abs=5e-5)
    assert E.asymptotic_gap(0.5) == pytest.approx(1.67, abs=5e-3)


@pytest.mark.parametrize("tau", [0.01, 0.05, 0.1])
def test_small_tau_asymptote(tau):
    # Exactly g = y - 1 - log y with y = 2u/(1 - r), u = 1/tau, r = e^{-2u}, so
    # g - (2u - log(2u) - 1) = 2u r/(1 - r) + log(1 - r) = (2u - 1) r + O(u r^2).
    u = 1 / tau
    asymptote = 2 * u - np.log(2 * u) - 1
    correction = (2 * u - 1) * np.exp(-2 * u)
    g = E.asymptotic_gap(tau)
    assert abs(g - asymptote - correction) <= 1e-14 * asymptote + 2 * u * np.exp(-4 * u) * 2 * u
    if tau == 0.01:  # correction ~ 1e-85: the asymptote is exact to rounding
        assert g == pytest.approx(asymptote, rel=1e-14)


@pytest.mark.parametrize("tau", [10.0, 100.0, 1e3, 1e6])
def test_large_tau_asymptote(tau):
    # g = 1/(2 tau^2) - 1/(36 tau^4) + O(tau^-6): random-like worst case with Var(cos) = f(1-f)*4 ->
    # 1
    g = E.asymptotic_gap(tau)
    assert abs(g - (0.5 / tau**2 - 1 / (36 * tau**4))) <= 1e-2 / tau**6 + 1e-14 * g
    assert E.asymptotic_gap_argmax(tau) == pytest.approx(0.5, abs=1 / tau)


def test_extreme_temperatures_are_finite_and_monotone():
    taus = np.geomspace(1e-3, 1e3, 601)
    g = E.asymptotic_gap(taus)
    f = E.asymptotic_gap_argmax(taus)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(f))
    assert np.all(np.diff(g) < 0) and np.all(g > 0)
    assert np.all((f >= 0) & (f <= 0.5)) and np.all(np.diff(f) >= 0)
    assert E.asymptotic_gap(1e-3) == pytest.approx(2e3 - np.log(2e3) - 1, rel=1e-14)
    assert 0 < E.asymptotic_gap(1e3) < 5e-7


def test_scalar_in_scalar_out_and_broadcasting():
    assert np.ndim(E.asymptotic_gap(1.0)) == 0
    assert np.ndim(E.exact_gap_argmax(10, 1.0)) == 0
    assert E.exact_gap([[10], [100]], [0.5, 1.0, 2.0]).shape == (2, 3)
    with pytest.raises(ValueError):
        E.asymptotic_gap(0.0)
    with pytest.raises(ValueError):
        E.exact_gap(2.5, 1.0)


# ----------------------------------------------------------------------------- exact finite-n gap


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 37])
@pytest.mark.parametrize("tau", [0.05, 0.3, 1.0, 3.0])
def test_exact_gap_matches_brute_force(n, tau):
    gap, k = brute_exact_gap(n, tau)
    assert E.exact_gap(n, tau) == pytest.approx(gap, rel=1e-10, abs=1e-13)
    if n > 1:
        assert E.exact_gap_argmax(n, tau) == k


@pytest.mark.parametrize("n", [3, 5, 8])
@pytest.mark.parametrize("tau", [0.3, 1.0])
def test_exact_gap_is_the_worst_case_over_all_cosine_configurations(n, tau):
    """Minimise H over c in [-1, 1]^n (not only two-point configurations) from random starts."""
    rng = np.random.default_rng(n)

    def neg_gap(c):
        s = c / tau
        p = np.exp(s - logsumexp(s))
        mean_s = p @ s
        return -(mean_s - logsumexp(s) + np.log(n)), -(p * (s - mean_s)) / tau

    best = max(
        -minimize(
            neg_gap, rng.uniform(-1, 1, n), jac=True, method="L-BFGS-B", bounds=[(-1, 1)] * n
        ).fun
        for _ in range(20)
    )
    assert best <= E.exact_gap(n, tau) + 1e-12
    assert best == pytest.approx(E.exact_gap(n, tau), abs=1e-9)


def test_exact_gap_is_below_and_converges_to_asymptotic_gap():
    ns = np.array([2, 3, 4, 7, 10, 33, 100, 1000, 4097, 65536, 2**20])[:, None]
    taus = np.geomspace(1e-3, 1e3, 41)[None, :]
    exact = E.exact_gap(ns, taus)
    g = E.asymptotic_gap(taus)
    assert np.all(np.isfinite(exact))
    assert np.all(exact <= g * (1 + 1e-12) + 1e-15)
    assert np.all(exact <= np.log(ns) + 1e-12)  # cannot exceed the entropy range
    assert E.exact_gap(65536, 1.0) == pytest.approx(E.asymptotic_gap(1.0), abs=1e-3)
    # the deficit shrinks like 1/n^2 (f* n rounded to an integer, G quadratic at its peak)
    deficit = E.asymptotic_gap(1.0) - E.exact_gap(np.array([10, 100, 1000, 10000]), 1.0)
    assert np.all(deficit >= 0) and np.all(deficit * np.array([10, 100, 1000, 10000]) ** 2 < 1.0)


def test_exact_gap_argmax_tracks_f_star_n():
    n = 2**20
    for tau in [0.2, 1.0, 5.0]:
        assert abs(E.exact_gap_argmax(n, tau) - E.asymptotic_gap_argmax(tau) * n) <= 1


# ----------------------------------------------------------------------------- Gaussian logits


def test_small_scale_entropy_against_monte_carlo():
    n, sigma, trials = 4096, 0.1, 2000
    rng = np.random.default_rng(20240613)
    H = []
    for _ in range(trials // 250):
        s = sigma * rng.standard_normal((250, n))
        logp = s - logsumexp(s, axis=1, keepdims=True)
        H.append(-(np.exp(logp) * logp).sum(axis=1))
    H = np.concatenate(H)
    se = H.std(ddof=1) / np.sqrt(trials)
    # documented finite-n bias (delta method), ~ sigma^2/(2n) = 1.2e-6 here; the n -> inf
    # limit log n - sigma^2/2 has no sigma^4 term for Gaussian logits
    bias = (sigma**2 * np.exp(sigma**2) - np.expm1(sigma**2) / 2) / n
    assert abs(H.mean() - E.small_scale_entropy(n, sigma)) <= 4 * se + abs(bias)
    assert se < 1e-5  # the test is sharp enough to see an O(sigma^4) = 1e-4 error


def test_rem_functions():
    n = np.array([2, 16, 1024, 2**20])
    sigma = np.array([0.1, 1.0, 2.0, 10.0])
    x = E.rem_x(n[:, None], sigma[None, :])
    assert x == pytest.approx(sigma[None, :] / np.sqrt(2 * np.log(n[:, None])))
    h = E.rem_entropy(n[:, None], sigma[None, :])
    liquid = x < 1
    assert np.all(np.isfinite(h)) and np.all(h >= 0)
    assert h[liquid] == pytest.approx(np.log(n[:, None] + 0 * x)[liquid] * (1 - x[liquid] ** 2))
    assert np.all(h[~liquid] == 0)
    # in the liquid phase the REM asymptote is the small-scale formula
    assert h[liquid] == pytest.approx(
        np.broadcast_to(E.small_scale_entropy(n[:, None], sigma), x.shape)[liquid]
    )
    regime = E.rem_regime(n[:, None], sigma[None, :])
    assert np.array_equal(regime == "liquid", liquid)
    assert E.rem_regime(1024, 1.0) == "liquid" and E.rem_regime(16, 10.0) == "frozen"
    assert E.rem_regime(4, np.sqrt(2 * np.log(4))) == "frozen"  # x = 1 is frozen
    assert E.rem_x(1, 0.0) == np.inf and E.rem_entropy(1, 0.0) == 0.0
    assert isinstance(E.rem_regime(10, 0.5), str)


def test_effective_dot_product_scale_against_monte_carlo():
    assert E.effective_dot_product_scale(64, 0.5) == 0.25
    assert E.effective_dot_product_scale([8, 64], 2.0).tolist() == [4.0, 4.0]
    rng = np.random.default_rng(7)
    d, scale, trials = 256, 0.7, 4000
    q = scale * rng.standard_normal((trials, d))
    k = scale * rng.standard_normal((trials, d))
    s = (q * k).sum(axis=1) / np.sqrt(d)  # one logit per independent (q, k) pair
    # E[s^2] = E[sigma_eff^2] = scale^4 exactly; relative SE of a variance ~ sqrt(2/trials) (+
    # kurtosis)
    assert s.var() == pytest.approx(
        E.effective_dot_product_scale(d, scale) ** 2, rel=4 * np.sqrt(3 / trials)
    )


def test_random_direction_gap():
    assert E.random_direction_gap(64, 0.5) == pytest.approx(1 / 32)
    rng = np.random.default_rng(3)
    n, d, tau = 20000, 64, 0.5
    keys = rng.standard_normal((n, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    q = rng.standard_normal(d)
    q /= np.linalg.norm(q)
    gap = np.log(n) - brute_entropy(keys @ q, tau)
    # second-order prediction; third-order terms are O(1/(d tau^2))^2 relative, sampling ~ 1/sqrt(n)
    assert gap == pytest.approx(E.random_direction_gap(d, tau), rel=0.1)


# ----------------------------------------------------------------- the frozen phase, exact E[H]


def brute_mean_entropy(n: int, sigma: float, trials: int, seed: int) -> tuple[float, float]:
    """Monte Carlo E[H] of softmax(sigma z) with its standard error (the oracle)."""
    rng = np.random.default_rng(seed)
    s = sigma * rng.standard_normal((trials, n))
    logp = s - logsumexp(s, axis=1, keepdims=True)
    h = -(np.exp(logp) * logp).sum(axis=1)
    return float(h.mean()), float(h.std(ddof=1) / np.sqrt(trials))


def test_digamma_against_scipy():
    from scipy.special import digamma

    x = np.array([1e-3, 0.05, 0.5, 0.9, 1.0, 3.3, 12.0, 250.0])
    assert E.digamma(x) == pytest.approx(digamma(x), rel=1e-13, abs=1e-13)


def test_gaussian_max_level_is_the_1_over_n_quantile():
    from scipy.stats import norm

    for n in (2, 16, 4096, 16384):
        assert E.gaussian_max_level(n) == pytest.approx(norm.isf(1 / n), abs=1e-10)


@pytest.mark.parametrize(
    "n, sigma", [(2, 0.5), (16, 1.0), (16, 5.0), (64, 3.0), (256, 0.3), (64, 30.0)]
)
def test_exact_entropy_against_monte_carlo(n, sigma):
    mean, se = brute_mean_entropy(n, sigma, 100_000 if n <= 64 else 20_000, seed=n + int(sigma))
    assert abs(E.gaussian_entropy_exact(n, sigma) - mean) <= 4 * se


def test_exact_entropy_limits_and_quadrature_convergence():
    assert E.gaussian_entropy_exact(1, 3.0) == 0.0
    assert E.gaussian_entropy_exact(100, 0.0) == pytest.approx(np.log(100))
    # small sigma: log n - sigma^2/2 plus the §3.3 bias (sigma^2 e^{s^2} - (e^{s^2} - 1)/2)/n
    n, sigma = 4096, 0.1
    bias = (sigma**2 * np.exp(sigma**2) - np.expm1(sigma**2) / 2) / n
    assert E.gaussian_entropy_exact(n, sigma) == pytest.approx(
        np.log(n) - sigma**2 / 2 + bias, abs=1e-8
    )
    # halving the panel width changes nothing at the precision the claims use
    for n, sigma in ((16384, 3.0), (16384, 100.0), (64, 0.5)):
        coarse = E.gaussian_entropy_exact(n, sigma)
        assert E.gaussian_entropy_exact(n, sigma, step=0.5) == pytest.approx(coarse, abs=1e-8)


def test_frozen_entropy_is_poisson_dirichlet():
    # m = b_n / sigma; E[H] = psi(1) - psi(1 - m): 0 at m -> 0, ~ zeta(2) m for small m
    n, sigma = 4096, 1e4
    m = E.gaussian_max_level(n) / sigma
    assert E.frozen_entropy(n, sigma) == pytest.approx(np.pi**2 / 6 * m, rel=2 * m)
    assert np.isnan(E.frozen_entropy(4096, 1.0))  # liquid: no frozen prediction
    assert np.all(np.diff(E.frozen_entropy(1024, [5.0, 7.0, 10.0, 30.0])) < 0)


def test_frozen_entropy_approaches_the_exact_value_deep_in_the_frozen_phase():
    # the linearised Poisson process leaves out O(1/log n): small far from x = 1, large near it
    for n, sigma in ((16, 100.0), (1024, 30.0), (16384, 30.0)):
        assert abs(E.frozen_entropy(n, sigma) - E.gaussian_entropy_exact(n, sigma)) < 0.01
    assert abs(E.frozen_entropy(4096, 5.0) - E.gaussian_entropy_exact(4096, 5.0)) > 0.5


def test_the_deficit_ratios_crossing_is_where_the_small_scale_series_cannot_reach():
    """docs/science.md §7.9's entropy boundary (n = 1024, edge 0.95): the exact crossing solves the
    quadrature's ratio and lies past sqrt(log n / 2), where the series' third-moment term
    overtakes its first, so no expansion places the edge; the leading finite-n bias of §3.3 puts
    it lower, before that point (the bias overstates the correction once it is large)."""
    n, edge = 1024, 0.95
    x = E.deficit_ratio_crossing(n, edge, 0.1, 3.0)
    assert x is not None and E.deficit_ratio_exact(n, x) == pytest.approx(edge, abs=1e-9)
    assert E.deficit_ratio_exact(n, x - 1e-3) > edge > E.deficit_ratio_exact(n, x + 1e-3)

    def leading(sigma):
        bias = (sigma**2 * np.exp(sigma**2) - np.expm1(sigma**2) / 2) / n
        return 1 - bias / (sigma**2 / 2)

    series = brentq(lambda s: leading(s) - edge, 0.5, 3.0)
    assert series < np.sqrt(np.log(n) / 2) < x
    assert E.deficit_ratio_crossing(n, edge, 0.1, 1.0) is None  # no crossing in that range
    with pytest.raises(ValueError, match="sigma > 0"):
        E.deficit_ratio_exact(n, 0.0)
