"""The contrastive-training kernel: InfoNCE gradients against central differences, the batched
training against a naive one-run-at-a-time loop on the same draws, the floors (loss and entropy)
against brute force and simulation, determinism, divergence and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from training_oracles import contrastive_forward_backward, contrastive_train

from attnsim.errors import ConfigError
from attnsim.kinds.contrastive_training import kernel as ct
from attnsim.theory.entropy import exact_gap

BASE = {"n": 6, "classes": 3, "latent_dim": 3, "input_dim": 7, "embed_dim": 4, "steps": 25, "tau": 0.2, "optimiser": "adam", "lr": 0.05}


def small_inputs(seed, trials=2, batches=2, n=5, D=7, classes=3):
    rng = np.random.default_rng(seed)
    world = ct.draw_world(rng, trials, classes, 3, D)
    return world, ct.draw_batches(rng, trials, batches, n, classes, D).inputs(world, 0.8)


@pytest.mark.parametrize("tau", [0.05, 0.2, 1.0, 5.0])
def test_gradient_matches_central_differences(tau):
    _, (x1, x2) = small_inputs(1)
    w = np.random.default_rng(2).standard_normal((2, 4, 7))
    out = ct.infonce(w, x1, x2, tau)
    h = 1e-6
    numeric = np.zeros_like(w)
    for idx in np.ndindex(4, 7):
        up, down = w.copy(), w.copy()
        up[(slice(None), *idx)] += h
        down[(slice(None), *idx)] -= h
        numeric[(slice(None), *idx)] = (
            ct.infonce(up, x1, x2, tau, grad=False)["loss"].mean(-1) - ct.infonce(down, x1, x2, tau, grad=False)["loss"].mean(-1)
        ) / (2 * h)
    np.testing.assert_allclose(out["gw"], numeric, rtol=1e-6, atol=1e-9)


def test_forward_and_gradient_match_the_literal_formulas():
    _, (x1, x2) = small_inputs(3)
    w = np.random.default_rng(4).standard_normal((2, 4, 7))
    out = ct.infonce(w, x1, x2, 0.1)
    for t in range(2):
        refs = [contrastive_forward_backward(w[t], x1[t, e], x2[t, e], 0.1) for e in range(2)]
        for e, ref in enumerate(refs):
            for name in ("loss", "entropy", "alignment"):
                np.testing.assert_allclose(out[name][t, e], ref[name], rtol=1e-12)
        np.testing.assert_allclose(out["gw"][t], np.mean([r["gw"] for r in refs], axis=0), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(out["uniformity"][t], math.log(np.mean(np.concatenate([r["kernel"] for r in refs]))), rtol=1e-12)


def run_both(points, trials=3, seed=11):
    results, draws = ct.simulate(np.random.default_rng(seed), trials, points, record=True)
    for point, result in zip(points, results):
        p = ct.resolved(point)
        for t in range(trials):
            ref = contrastive_train(
                p,
                draws.world.points[t],
                draws.init[t],
                (draws.monitor.labels[t], draws.monitor.noise[t]),
                (draws.final.labels[t], draws.final.noise[t]),
                draws.probe[t],
                [(b.labels[t, 0], b.noise[t, 0]) for b in draws.batches],
            )
            for name in ct.METRICS:
                assert result[name].shape == (trials,) and result[name].dtype == np.float64
                np.testing.assert_allclose(result[name][t], ref[name], rtol=1e-7, atol=1e-12, err_msg=f"{name} {point} trial {t}")
    return results


@pytest.mark.parametrize("tau", [0.05, 1.0])
def test_batched_training_matches_naive_loop(tau):
    points = [BASE | {"tau": tau, "optimiser": o, "lr": lr} for o, lr in (("sgd", 0.5), ("adam", 0.05))]
    points.append(BASE | {"tau": tau, "steps": 9, "view_noise": 0.0})
    run_both(points)


def test_normalisation_survives_huge_and_tiny_weights():
    _, (x1, _) = small_inputs(5)
    w = np.random.default_rng(6).standard_normal((2, 4, 7))
    z, _ = ct._embed(w, x1)
    for factor in (1e200, 1e-200):
        np.testing.assert_allclose(ct._embed(w * factor, x1)[0], z, rtol=1e-12)


def test_divergence_is_flagged(monkeypatch):
    """InfoNCE's normalisation bounds the gradient (~1 / (tau ||Wx||)), so real runs rarely diverge; a
    NaN is injected into trial 1's weights at step 3 to check the bookkeeping."""
    update = ct.Optimiser.update

    def poisoned(self, weights, grads, step):
        update(self, weights, grads, step)
        if step == 3:
            weights[0][1, 0, 0] = np.nan

    monkeypatch.setattr(ct.Optimiser, "update", poisoned)
    res = ct.simulate_block(np.random.default_rng(1), 3, [BASE])[0]
    assert list(res["diverged"]) == [0, 1, 0] and list(res["diverged_step"]) == [np.inf, 3, np.inf]
    assert res["final_loss"][1] == np.inf and np.isnan(res["final_entropy"][1]) and np.isnan(res["alignment"][1])
    assert res["probe_accuracy"][1] == 0 and res["loss_ckpt_7"][1] == np.inf and np.isfinite(res["loss_ckpt_1"][1])
    assert all(np.all(np.isfinite(v[[0, 2]])) for k, v in res.items() if k != "diverged_step")


def test_deterministic_and_points_do_not_interact():
    points = [BASE | {"tau": 1.0}, BASE | {"tau": 0.1, "optimiser": "sgd", "lr": 1.0, "steps": 10}]
    together = ct.simulate_block(np.random.default_rng(5), 4, points)
    again = ct.simulate_block(np.random.default_rng(5), 4, points)
    alone = [ct.simulate_block(np.random.default_rng(5), 4, [p])[0] for p in points]
    for a, b, c in zip(together, again, alone):
        for name in ct.METRICS:
            np.testing.assert_array_equal(a[name], b[name])
            np.testing.assert_array_equal(a[name], c[name])


def test_world_is_orthonormally_embedded():
    world = ct.draw_world(np.random.default_rng(0), 3, 5, 4, 9)
    np.testing.assert_allclose(np.linalg.norm(world.points, axis=-1), 1.0, rtol=1e-12)


# --------------------------------------------------------------------------- floors


@pytest.mark.parametrize("tau", [0.05, 0.2, 1.0])
def test_entropy_never_below_the_exact_floor(tau):
    """Any embeddings: the mean row entropy stays above log n - exact_gap(n, tau), adversarial ones included."""
    n = 8
    rng = np.random.default_rng(1)
    x1 = rng.standard_normal((50, 1, n, 5))
    x2 = rng.standard_normal((50, 1, n, 5))
    floor = math.log(n) - float(exact_gap(n, tau))
    out = ct.infonce(np.eye(5)[None].repeat(50, 0), x1, x2, tau, grad=False)
    assert np.all(out["entropy"] >= floor - 1e-12)


@pytest.mark.parametrize("tau", [0.05, 0.3, 1.0])
def test_loss_floor_is_attained_by_the_ideal_encoder_and_not_beaten(tau):
    """Views collapsed to their class's simplex vertex attain the floor in expectation (simulated
    batches); the floor matches brute-force enumeration of the batch composition for small n."""
    n, C = 6, 3
    # brute force over all label assignments of the other n - 1 examples
    r = math.exp(-C / ((C - 1) * tau))
    brute = 0.0
    for labels in np.ndindex(*(C,) * (n - 1)):
        m = sum(1 for lab in labels if lab == 0)
        brute += math.log(1 + m + (n - 1 - m) * r) / C ** (n - 1)
    assert ct.loss_floor(n, C, tau) == pytest.approx(brute, rel=1e-12)
    # the ideal encoder: class points at a regular simplex in R^(C-1) inside R^d, no noise
    simplex = np.eye(C) - 1.0 / C
    simplex /= np.linalg.norm(simplex, axis=1, keepdims=True)
    rng = np.random.default_rng(2)
    labels = rng.integers(0, C, (20000, n))
    z = simplex[labels][:, None]  # (T, 1, n, C)
    out = ct.infonce(np.eye(C)[None].repeat(len(labels), 0), z, z, tau, grad=False)
    sem = out["loss"].std() / math.sqrt(out["loss"].size)
    assert out["loss"].mean() == pytest.approx(ct.loss_floor(n, C, tau), abs=4 * sem)
    assert out["entropy"].mean() == pytest.approx(ct.ideal_entropy(n, C, tau), abs=4 * out["entropy"].std() / math.sqrt(out["entropy"].size))
    # trained encoders never go below the floor (mean over runs)
    res = ct.simulate_block(np.random.default_rng(3), 16, [BASE | {"n": n, "classes": C, "tau": tau, "steps": 150, "view_noise": 0.3}])[0]
    assert res["final_loss"].mean() >= ct.loss_floor(n, C, tau) - 3 * res["final_loss"].std() / 4


def test_theory_columns():
    th = ct.theory(BASE | {"n": 64, "tau": 1.0})
    assert th["entropy_gap"] <= th["entropy_gap_asymptotic"] == pytest.approx(0.4745, abs=1e-4)
    assert th["entropy_floor"] == pytest.approx(math.log(64) - th["entropy_gap"])
    assert th["instance_loss_floor"] < th["loss_floor"]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"lr": 0.0}, "lr"),
        ({"lr": -1.0}, "lr"),
        ({"steps": 0}, "steps"),
        ({"tau": 0.0}, "tau"),
        ({"tau": -0.1}, "tau"),
        ({"classes": 7}, "classes"),
        ({"classes": 1}, "classes"),
        ({"optimiser": "lion"}, "optimiser"),
        ({"input_dim": 2}, "input_dim"),
        ({"view_noise": -1.0}, "view_noise"),
        ({"tau": float("inf")}, "tau"),
    ],
)
def test_bad_input(bad, key):
    with pytest.raises(ConfigError, match=f"^{key}:"):
        ct.validate(BASE | bad)
    with pytest.raises(ConfigError, match=f"^{key}:"):
        ct.simulate_block(np.random.default_rng(0), 2, [BASE | bad])
