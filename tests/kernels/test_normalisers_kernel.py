"""The normaliser kernel (attnsim.kernels.normalisers) against its naive per-row oracle on the
same draws: weights, Jacobian-vector products (also against central finite differences), the
mass and entropy; and the invariants each normaliser's paper states."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import normalisers as oracle

from attnsim.kernels import normalisers as nz


def draws(n: int, scale: float, seed: int = 0, trials: int = 12) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal((trials, n))


@pytest.mark.parametrize("name", nz.NORMALISERS)
@pytest.mark.parametrize(("n", "scale"), [(5, 0.5), (16, 2.0), (64, 6.0)])
def test_weights_jvp_entropy_equal_the_oracle(name, n, scale):
    s = draws(n, scale)
    ds = draws(n, 1.0, seed=1)
    p = nz.weights(name, s)
    dp = nz.jvp(name, s, ds)
    mass, entropy = nz.mass_and_entropy(p)
    for t in range(len(s)):
        want = oracle.weights_row(name, s[t])
        np.testing.assert_allclose(p[t], want, rtol=1e-9, atol=1e-12)
        jac = oracle.jacobian_row(name, s[t])
        np.testing.assert_allclose(dp[t], jac @ ds[t], rtol=1e-7, atol=1e-10)
        want_mass, want_entropy = oracle.mass_entropy_row(want)
        assert mass[t] == pytest.approx(want_mass, rel=1e-9, abs=1e-12)
        assert entropy[t] == pytest.approx(want_entropy, rel=1e-8, abs=1e-10, nan_ok=True)


@pytest.mark.parametrize("name", nz.NORMALISERS)
@pytest.mark.parametrize(("n", "scale"), [(5, 0.5), (16, 2.0), (64, 6.0)])
def test_vjp_equals_the_dense_jacobian_transposed(name, n, scale):
    """The backward pass J^T g against the oracle's dense Jacobian, on the draws of the jvp test,
    and the adjoint identity <g, J ds> = <J^T g, ds> between the kernel's two products."""
    s, ds, g = draws(n, scale), draws(n, 1.0, seed=1), draws(n, 1.0, seed=4)
    back = nz.vjp(name, s, g)
    for t in range(len(s)):
        np.testing.assert_allclose(back[t], oracle.vjp_row(name, s[t], g[t]), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(
        np.sum(g * nz.jvp(name, s, ds), axis=-1), np.sum(back * ds, axis=-1), atol=1e-12
    )


def test_softcap_and_softpick_jacobians_are_not_symmetric():
    """So their vjp cannot be their jvp: the test above would pass for a wrong symmetric vjp only
    if these Jacobians were symmetric."""
    # soft-capping's asymmetry is the slope 1 - tanh^2(s/c): logits sharing weight at |s| ~ c
    rows = {
        "softcap30": [20.0, 22.0, 24.0, 0.0, -5.0, 1.0],
        "softpick": [0.3, -0.5, 1.2, 0.8, -1.0],
    }
    for name, s in rows.items():
        jac = oracle.jacobian_row(name, np.array(s))
        assert np.abs(jac - jac.T).max() > 0.01 * np.abs(jac).max(), name


@pytest.mark.parametrize("name", ["softmax", "ssmax"])
def test_vjp_is_accurate_at_one_hot_weights(name):
    """The shift-invariant maps' backward sums to zero (J 1 = 0, J symmetric); at a top gap of
    ~40 the uncentred p (g - p.g) leaves the top entry a rounding residue ~1e-16 |g| against a
    true value ~1e-17, the centred form keeps the sum at rounding of the small entries."""
    s = draws(8, 1.0, seed=6)
    s[:, 0] += 40.0
    back = nz.vjp(name, s, draws(8, 1.0, seed=7))
    assert np.abs(back[:, 1:]).max() > 0
    assert np.all(np.abs(back.sum(axis=-1)) <= 1e-12 * np.abs(back[:, 1:]).max(axis=-1))


@pytest.mark.parametrize("name", nz.NORMALISERS)
def test_jvp_is_the_derivative(name):
    """Central differences, away from the kinks (ReLU at 0, softpick at 0, a support's edge):
    the draws are generic, so no logit sits within the step of a kink."""
    s, ds, h = draws(9, 1.5, seed=2), draws(9, 1.0, seed=3), 1e-6
    numeric = (nz.weights(name, s + h * ds) - nz.weights(name, s - h * ds)) / (2 * h)
    np.testing.assert_allclose(nz.jvp(name, s, ds), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", nz.NORMALISED)
def test_normalised_weights_sum_to_one(name):
    p = nz.weights(name, draws(33, 4.0))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-12)
    assert (p >= 0).all()


def test_sparse_normalisers_give_exact_zeros_and_softmax_none():
    s = draws(64, 3.0)
    assert (nz.weights("sparsemax", s) == 0).any(axis=-1).all()
    assert (nz.weights("entmax15", s) == 0).any(axis=-1).all()
    assert (nz.weights("softmax", s) > 0).all()


def test_large_logits_stay_finite():
    """No overflow at logits far beyond exp's range (each normaliser's stable form)."""
    s = np.array([[1000.0, -1000.0, 0.0, 800.0]])
    for name in nz.NORMALISERS:
        p, dp = nz.weights(name, s), nz.jvp(name, s, np.ones_like(s))
        back = nz.vjp(name, s, np.ones_like(s))
        assert np.isfinite(p).all() and np.isfinite(dp).all() and np.isfinite(back).all(), name


def test_sigmoid_at_minus_log_n_is_exp_over_n_for_small_logits():
    """The approximation the bias prediction rests on: sigma(s - log n) = e^s / n (1 + O(e^s/n))."""
    n = 4096
    s = draws(n, 0.3)
    ratio = nz.weights("sigmoid", s) / (np.exp(s) / n)
    assert np.abs(ratio - 1).max() < 3 * math.exp(1.5) / n


def test_softpick_all_zero_row_has_no_mass_and_no_entropy():
    mass, entropy = nz.mass_and_entropy(nz.weights("softpick", np.zeros((1, 5))))
    assert mass[0] == 0 and math.isnan(entropy[0])


def test_unknown_normaliser_is_named():
    with pytest.raises(ValueError, match="unknown normaliser 'tanh'"):
        nz.weights("tanh", np.zeros((1, 3)))
