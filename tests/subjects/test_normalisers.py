"""The normaliser records (attnsim.subjects.normalisers) against their naive per-row oracle on the
same draws: weights, Jacobian-vector products (also against central finite differences), the
mass and entropy; the invariants each normaliser's paper states; each record's stated properties
against its own map; and one registry whose unknown names fail loudly."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from oracles import normalisers as oracle

from attnsim.subjects import Unknown, known, normalisers


def draws(n: int, scale: float, seed: int = 0, trials: int = 12) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal((trials, n))


@pytest.mark.parametrize("name", normalisers.names())
@pytest.mark.parametrize(("n", "scale"), [(5, 0.5), (16, 2.0), (64, 6.0)])
def test_weights_jvp_entropy_equal_the_oracle(name, n, scale):
    s = draws(n, scale)
    ds = draws(n, 1.0, seed=1)
    p = normalisers.get(name).weights(s)
    dp = normalisers.get(name).jvp(s, ds)
    mass, entropy = normalisers.mass_and_entropy(p)
    for t in range(len(s)):
        want = oracle.weights_row(name, s[t])
        np.testing.assert_allclose(p[t], want, rtol=1e-9, atol=1e-12)
        jac = oracle.jacobian_row(name, s[t])
        np.testing.assert_allclose(dp[t], jac @ ds[t], rtol=1e-7, atol=1e-10)
        want_mass, want_entropy = oracle.mass_entropy_row(want)
        assert mass[t] == pytest.approx(want_mass, rel=1e-9, abs=1e-12)
        assert entropy[t] == pytest.approx(want_entropy, rel=1e-8, abs=1e-10, nan_ok=True)


@pytest.mark.parametrize("name", normalisers.names())
@pytest.mark.parametrize(("n", "scale"), [(5, 0.5), (16, 2.0), (64, 6.0)])
def test_vjp_equals_the_dense_jacobian_transposed(name, n, scale):
    """The backward pass J^T g against the oracle's dense Jacobian, on the draws of the jvp test,
    and the adjoint identity <g, J ds> = <J^T g, ds> between the kernel's two products."""
    s, ds, g = draws(n, scale), draws(n, 1.0, seed=1), draws(n, 1.0, seed=4)
    back = normalisers.get(name).vjp(s, g)
    for t in range(len(s)):
        np.testing.assert_allclose(back[t], oracle.vjp_row(name, s[t], g[t]), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(
        np.sum(g * normalisers.get(name).jvp(s, ds), axis=-1),
        np.sum(back * ds, axis=-1),
        atol=1e-12,
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
    back = normalisers.get(name).vjp(s, draws(8, 1.0, seed=7))
    assert np.abs(back[:, 1:]).max() > 0
    assert np.all(np.abs(back.sum(axis=-1)) <= 1e-12 * np.abs(back[:, 1:]).max(axis=-1))


@pytest.mark.parametrize("name", normalisers.names())
def test_jvp_is_the_derivative(name):
    """Central differences, away from the kinks (ReLU at 0, softpick at 0, a support's edge):
    the draws are generic, so no logit sits within the step of a kink."""
    s, ds, h = draws(9, 1.5, seed=2), draws(9, 1.0, seed=3), 1e-6
    numeric = (
        normalisers.get(name).weights(s + h * ds) - normalisers.get(name).weights(s - h * ds)
    ) / (2 * h)
    np.testing.assert_allclose(normalisers.get(name).jvp(s, ds), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", [m.name for m in normalisers.NORMALISERS if m.sums_to_one])
def test_normalised_weights_sum_to_one(name):
    p = normalisers.get(name).weights(draws(33, 4.0))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-12)
    assert (p >= 0).all()


def test_sparse_normalisers_give_exact_zeros_and_softmax_none():
    s = draws(64, 3.0)
    assert (normalisers.get("sparsemax").weights(s) == 0).any(axis=-1).all()
    assert (normalisers.get("entmax15").weights(s) == 0).any(axis=-1).all()
    assert (normalisers.get("softmax").weights(s) > 0).all()


def test_large_logits_stay_finite():
    """No overflow at logits far beyond exp's range (each normaliser's stable form)."""
    s = np.array([[1000.0, -1000.0, 0.0, 800.0]])
    for name in normalisers.names():
        p, dp = normalisers.get(name).weights(s), normalisers.get(name).jvp(s, np.ones_like(s))
        back = normalisers.get(name).vjp(s, np.ones_like(s))
        assert np.isfinite(p).all() and np.isfinite(dp).all() and np.isfinite(back).all(), name


def test_sigmoid_at_minus_log_n_is_exp_over_n_for_small_logits():
    """The approximation the bias prediction rests on: sigma(s - log n) = e^s / n (1 + O(e^s/n))."""
    n = 4096
    s = draws(n, 0.3)
    ratio = normalisers.get("sigmoid").weights(s) / (np.exp(s) / n)
    assert np.abs(ratio - 1).max() < 3 * math.exp(1.5) / n


def test_softpick_all_zero_row_has_no_mass_and_no_entropy():
    mass, entropy = normalisers.mass_and_entropy(
        normalisers.get("softpick").weights(np.zeros((1, 5)))
    )
    assert mass[0] == 0 and math.isnan(entropy[0])


def test_unknown_normaliser_is_named():
    with pytest.raises(ValueError, match="unknown normaliser 'tanh'"):
        normalisers.get("tanh")


# --- each record's stated properties against its own map ---------------------------------------

RECORDS = {m.name: m for m in normalisers.NORMALISERS}


@pytest.mark.parametrize("name", normalisers.names())
def test_sums_to_one_and_shift_invariance_are_what_the_map_does(name):
    record = normalisers.get(name)
    s = draws(17, 2.0, seed=8)
    p = record.weights(s)
    assert np.allclose(p.sum(axis=-1), 1.0, rtol=1e-12) == record.sums_to_one
    shifted = record.weights(s + 0.7)
    assert np.allclose(shifted, p, rtol=1e-12, atol=1e-15) == record.shift_invariant


@pytest.mark.parametrize("name", normalisers.names())
def test_bounded_ratio_is_what_the_map_does(name):
    """Strictly positive weights of bounded ratio at two logit levels +-1, or an exact zero (keys
    at +1 take every weight from keys at -1: the maps without a floor, §12.4)."""
    record = normalisers.get(name)
    s = np.where(np.arange(16) < 3, 1.0, -1.0)[None, :]
    p = record.weights(s)
    assert bool((p > 0).all() and np.isfinite(p.max() / p.min())) == record.bounded_ratio


@pytest.mark.parametrize("name", normalisers.names())
def test_large_scale_behaviour_is_what_the_map_does(name):
    """At gaussian logits of std 10^4 (10^6 for the caps, to pass their saturation) the entropy
    of p / sum p is ~0 for a freezing map, ~log(n/2) for a saturating one, and for a scale-free
    one the same as at std 1."""
    record = normalisers.get(name)
    n = 512
    z = draws(n, 1.0, seed=9, trials=8)
    scale = 1e6 if record.cap is not None else 1e4
    _, entropy = normalisers.mass_and_entropy(record.weights(scale * z))
    if record.large_scale == "freezes":
        assert np.nanmean(entropy) < 0.1
    elif record.large_scale == "saturates":
        assert np.nanmean(entropy) == pytest.approx(math.log(n / 2), abs=0.1)
    else:
        _, at_one = normalisers.mass_and_entropy(record.weights(z))
        np.testing.assert_allclose(entropy, at_one, rtol=1e-9)


def test_the_noise_and_gradient_properties_follow_the_form():
    """§12.2-§12.3's properties, stated per record, agree with its form: the elementwise forms
    have exact laws and keep the noise's mean (as the rectified exponential does); a null key
    cancels only its keys' share; only capping has no large-scale gradient law; a map that
    cancels the mean leaves no bias."""
    for record in normalisers.NORMALISERS:
        elementwise = record.form in normalisers.ELEMENTWISE
        assert (record.large_scale_gradient == "exact") == elementwise, record.name
        kept = elementwise or record.form == normalisers.RECTIFIED_EXPONENTIAL
        assert (record.cancels_noise_mean == "no") == kept, record.name
        assert (record.cancels_noise_mean == "partly") == (record.form == normalisers.NULL_KEY)
        assert (record.large_scale_gradient == "none") == (record.form == normalisers.CAPPED)
        assert (record.noise_bias == 0.0) == (record.cancels_noise_mean == "yes"), record.name


# --- the registry --------------------------------------------------------------------------------


def test_one_registry_of_distinct_names_each_found_by_its_name():
    names = normalisers.names()
    assert len(set(names)) == len(names) == len(normalisers.NORMALISERS)
    assert all(normalisers.get(name) is RECORDS[name] for name in names)
    assert all(str(record) == record.name for record in normalisers.NORMALISERS)


def test_an_unknown_property_has_no_truth_value():
    """A law cannot read an Unknown as yes or no by accident: testing it raises."""
    unknown = Unknown("nobody derived it")
    assert not known(unknown) and known(False) and known(None)
    with pytest.raises(TypeError, match="nobody derived it"):
        bool(unknown)


def test_a_record_refuses_a_value_outside_its_properties():
    with pytest.raises(ValueError, match="large_scale 'melts'"):
        dataclasses.replace(normalisers.SOFTMAX, name="x", large_scale="melts")
