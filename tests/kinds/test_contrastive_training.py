"""The contrastive-training kernel: InfoNCE gradients (encoder and learnt temperature) against
central differences, the batched training against a naive one-run-at-a-time loop on the same
draws (class and instance positives, fixed and learnt tau), the positives built as documented,
the evaluations, the floors (loss and entropy) against brute force and simulation, determinism,
divergence and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles.training import contrastive_forward_backward, contrastive_train

from attnsim.errors import ConfigError
from attnsim.kinds import get_kind
from attnsim.kinds.contrastive_training import kernel as ct
from attnsim.theory.entropy import exact_gap

BASE = {
    "n": 6,
    "classes": 3,
    "latent_dim": 3,
    "input_dim": 7,
    "embed_dim": 4,
    "steps": 25,
    "tau": 0.2,
    "optimiser": "adam",
    "lr": 0.05,
}


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
            ct.infonce(up, x1, x2, tau, grad=False)["loss"].mean(-1)
            - ct.infonce(down, x1, x2, tau, grad=False)["loss"].mean(-1)
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
        np.testing.assert_allclose(
            out["gw"][t], np.mean([r["gw"] for r in refs], axis=0), rtol=1e-10, atol=1e-14
        )
        np.testing.assert_allclose(
            out["uniformity"][t],
            math.log(np.mean(np.concatenate([r["kernel"] for r in refs]))),
            rtol=1e-12,
        )


def _at(x, t, e=None):
    if x is None:
        return None
    return x[t] if e is None else x[t, e]


def run_both(points, trials=3, seed=11):
    results, draws = ct.simulate(np.random.default_rng(seed), trials, points, record=True)
    for point, result in zip(points, results):
        p = ct.resolved(point)
        for t in range(trials):
            ref = contrastive_train(
                p,
                draws.world.points[t],
                draws.init[t],
                (draws.monitor.labels[t], draws.monitor.noise[t], _at(draws.monitor.instance, t)),
                (draws.final.labels[t], draws.final.noise[t], _at(draws.final.instance, t)),
                (draws.probe.noise[t], _at(draws.probe.instance, t)),
                [(b.labels[t, 0], b.noise[t, 0], _at(b.instance, t, 0)) for b in draws.batches],
            )
            for name in ct.METRICS:
                assert result[name].shape == (trials,) and result[name].dtype == np.float64
                np.testing.assert_allclose(
                    result[name][t],
                    ref[name],
                    rtol=1e-7,
                    atol=1e-12,
                    err_msg=f"{name} {point} trial {t}",
                )
    return results


@pytest.mark.parametrize("tau", [0.05, 1.0])
def test_batched_training_matches_naive_loop(tau):
    points = [
        BASE | {"tau": tau, "optimiser": o, "lr": lr} for o, lr in (("sgd", 0.5), ("adam", 0.05))
    ]
    points.append(BASE | {"tau": tau, "steps": 9, "view_noise": 0.0})
    run_both(points)


@pytest.mark.parametrize("positives", ["class", "instance"])
def test_batched_training_matches_naive_loop_with_instances_and_learnt_tau(positives):
    """Instance noise on (both kinds of positives), fixed and learnt temperatures (Adam, SGD, CLIP's
    clamp: a large SGD step drives tau to the clamp), and a point without instance noise in the
    same block (it ignores the instance draws)."""
    inst = BASE | {"positives": positives, "instance_noise": 0.7}
    points = [
        inst,
        inst | {"tau": 1.0, "tau_mode": "learned"},
        inst | {"tau": 0.07, "tau_mode": "learned", "optimiser": "sgd", "lr": 0.5},
        inst | {"tau": 0.02, "tau_mode": "learned_clamped", "steps": 12},
        # tau under- or overflows: diverged
        inst | {"tau_mode": "learned", "optimiser": "sgd", "lr": 1e5, "steps": 6},
        BASE | {"positives": positives},
    ]
    results = run_both(points)
    assert results[4]["diverged"].all() and np.isfinite(results[4]["final_entropy_floor"]).all()
    assert np.all(results[3]["tau_final"] >= ct.TAU_CLAMP)
    assert np.all(results[1]["tau_final"] != 1.0)


def test_clamp_keeps_tau_at_least_one_hundredth(monkeypatch):
    """A loss that always asks for a smaller tau (dL/dt = -1): the clamped run stops at 0.01, the
    unclamped one goes below."""
    infonce = ct.infonce

    def pushing(*args, **kwargs):
        out = infonce(*args, **kwargs)
        if kwargs.get("grad_t"):
            out["gt"] = np.full_like(out["gt"], -1.0)
        return out

    monkeypatch.setattr(ct, "infonce", pushing)
    point = BASE | {"tau": 0.0105, "steps": 5}
    clamped, free = ct.simulate_block(
        np.random.default_rng(2),
        3,
        [point | {"tau_mode": m} for m in ("learned_clamped", "learned")],
    )
    np.testing.assert_allclose(clamped["tau_final"], ct.TAU_CLAMP, rtol=1e-12)
    np.testing.assert_allclose(clamped["tau_ckpt_1"], ct.TAU_CLAMP, rtol=1e-12)
    assert np.all(free["tau_final"] < 0.9 * ct.TAU_CLAMP)


def test_class_positives_without_instance_noise_do_not_draw_it():
    """The instance noise comes from a child generator: a block without it gives the same numbers
    for its points as a block with an instance-noise point beside them."""
    alone = ct.simulate_block(np.random.default_rng(8), 3, [BASE])[0]
    beside = ct.simulate_block(np.random.default_rng(8), 3, [BASE, BASE | {"instance_noise": 1.0}])[
        0
    ]
    for name in ct.METRICS:
        np.testing.assert_array_equal(alone[name], beside[name], err_msg=name)


@pytest.mark.parametrize("tau", [0.05, 0.3, 2.0])
def test_temperature_gradient_matches_central_differences(tau):
    """dL/dt for t = log(1/tau), per trial, against central differences of the loss in t."""
    _, (x1, x2) = small_inputs(7)
    w = np.random.default_rng(8).standard_normal((2, 4, 7))
    taus = np.array([tau, 1.7 * tau])
    out = ct.infonce(w, x1, x2, taus, grad=True, grad_t=True)
    h = 1e-6
    t = np.log(1 / taus)
    up = ct.infonce(w, x1, x2, np.exp(-(t + h)), grad=False)["loss"].mean(-1)
    down = ct.infonce(w, x1, x2, np.exp(-(t - h)), grad=False)["loss"].mean(-1)
    np.testing.assert_allclose(out["gt"], (up - down) / (2 * h), rtol=1e-6, atol=1e-9)
    # a per-trial tau gives each trial what a scalar tau gives it
    for i, one in enumerate(taus):
        alone = ct.infonce(w, x1, x2, float(one))
        np.testing.assert_allclose(out["loss"][i], alone["loss"][i], rtol=1e-13)
        np.testing.assert_allclose(out["gw"][i], alone["gw"][i], rtol=1e-12, atol=1e-15)


def test_positives_are_built_as_documented():
    """view = A mu_c + (instance_noise/sqrt D) eta + (view_noise/sqrt D) eps: with instance
    positives the two views share eta, so E[(x1 - P)·(x2 - P)] = instance_noise^2 and E||x - P||^2 =
    instance_noise^2 + view_noise^2; with class positives the views' deviations are independent
    (E[(x1 - P)·(x2 - P)] = 0). Checked on 4000 x 64 examples with a tolerance of 4 standard errors.
    """
    D, n, si, sv = 16, 64, 1.5, 0.8
    rng = np.random.default_rng(3)
    world = ct.draw_world(rng, 4, 3, 3, D)
    batches = ct.draw_batches(rng, 4, 1000, n, 3, D, aux=np.random.default_rng(4))
    signal = np.take_along_axis(world.points, batches.labels.reshape(4, -1, 1), axis=1).reshape(
        4, 1000, n, D
    )
    for positives, shared in (("instance", si**2), ("class", 0.0)):
        x1, x2 = batches.inputs(world, sv, si, positives)
        cross = np.einsum("...d,...d->...", x1 - signal, x2 - signal).ravel()
        own = np.einsum("...d,...d->...", x1 - signal, x1 - signal).ravel()
        se = cross.std() / math.sqrt(cross.size)
        assert abs(cross.mean() - shared) < 4 * se, (positives, cross.mean(), shared, se)
        assert abs(own.mean() - (si**2 + sv**2)) < 4 * own.std() / math.sqrt(own.size)
    # without instance noise both kinds are the same views
    for a, b in zip(
        batches.inputs(world, sv, 0.0, "instance"), batches.inputs(world, sv, 0.0, "class")
    ):
        np.testing.assert_array_equal(a, b)
    # held-out examples are one view of a fresh instance: E||x - P||^2 = si^2 + sv^2, and the fit
    # and test examples are independent
    probe = ct.Probe(
        *(
            ct.standard_normal(np.random.default_rng(s), (4, 2, 300, D)).astype(np.float64)
            for s in (5, 6)
        )
    )
    x, labels = probe.inputs(ct.World(world.points), sv, si)
    dev = x - world.points[:, None, labels]
    sq = np.einsum("...d,...d->...", dev, dev).ravel()
    assert abs(sq.mean() - (si**2 + sv**2)) < 4 * sq.std() / math.sqrt(sq.size)
    cross = np.einsum("...d,...d->...", dev[:, 0], dev[:, 1]).ravel()
    assert abs(cross.mean()) < 4 * cross.std() / math.sqrt(cross.size)


def test_evaluations_on_separable_and_blind_encoders():
    """A perfect encoder (the identity on noiseless, separated classes) scores 1 on all three
    evaluations; a blind one (every input to the same direction) scores chance or below."""
    C, D, per = 4, 6, ct.probe_per_class(4)
    points = np.eye(D)[:C][None]  # (1, C, D)
    probe = ct.Probe(np.zeros((1, 2, per * C, D)))
    acc = ct.evaluations(np.eye(D)[None], ct.World(points), probe, 0.0, 0.0)
    assert all(v[0] == 1.0 for v in acc.values()), acc
    rng = np.random.default_rng(0)
    probe = ct.Probe(rng.standard_normal((1, 2, per * C, D)))
    blind = np.zeros((1, 3, D))
    blind[0, 0, -1] = 1.0  # sees only a noise coordinate
    with np.errstate(invalid="ignore"):  # a class whose embeddings cancel has no mean direction
        acc = ct.evaluations(blind, ct.World(points), probe, 1.0, 0.0)
    for name, v in acc.items():
        assert v[0] < 1 / C + 4 * math.sqrt(0.25 * 0.75 / (per * C)), (name, v)


def test_normalisation_survives_huge_and_tiny_weights():
    _, (x1, _) = small_inputs(5)
    w = np.random.default_rng(6).standard_normal((2, 4, 7))
    z, _ = ct._embed(w, x1)
    for factor in (1e200, 1e-200):
        np.testing.assert_allclose(ct._embed(w * factor, x1)[0], z, rtol=1e-12)


def test_divergence_is_flagged(monkeypatch):
    """InfoNCE's normalisation bounds the gradient (~1 / (tau ||Wx||)), so real runs rarely diverge;
    a NaN is injected into trial 1's weights at step 3 to check the bookkeeping."""
    update = ct.Optimiser.update

    def poisoned(self, weights, grads, step):
        update(self, weights, grads, step)
        if step == 3:
            weights[0][1, 0, 0] = np.nan

    monkeypatch.setattr(ct.Optimiser, "update", poisoned)
    res = ct.simulate_block(np.random.default_rng(1), 3, [BASE])[0]
    assert list(res["diverged"]) == [0, 1, 0] and list(res["diverged_step"]) == [np.inf, 3, np.inf]
    assert (
        res["final_loss"][1] == np.inf
        and np.isnan(res["final_entropy"][1])
        and np.isnan(res["alignment"][1])
    )
    assert (
        res["probe_accuracy"][1] == 0
        and res["loss_ckpt_7"][1] == np.inf
        and np.isfinite(res["loss_ckpt_1"][1])
    )
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
    """Any embeddings: the mean row entropy stays above log n - exact_gap(n, tau), adversarial ones
    included."""
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
    assert out["entropy"].mean() == pytest.approx(
        ct.ideal_entropy(n, C, tau), abs=4 * out["entropy"].std() / math.sqrt(out["entropy"].size)
    )
    # trained encoders never go below the floor (mean over runs)
    res = ct.simulate_block(
        np.random.default_rng(3),
        16,
        [BASE | {"n": n, "classes": C, "tau": tau, "steps": 150, "view_noise": 0.3}],
    )[0]
    assert res["final_loss"].mean() >= ct.loss_floor(n, C, tau) - 3 * res["final_loss"].std() / 4


def test_entropy_never_below_the_floor_at_a_learnt_tau():
    """Training with a learnt temperature: every step's batch entropy stays above log n -
    g_n(tau_t)."""
    res = ct.simulate_block(
        np.random.default_rng(4),
        6,
        [BASE | {"tau": t, "tau_mode": "learned", "steps": 60} for t in (0.07, 1.0)],
    )
    for r in res:
        assert np.all(
            r["entropy_floor_excess_min"]
            >= -1e-12 * (1 + math.log(BASE["n"]) + 2 / r["tau_final"].min())
        )
        for j in range(ct.CHECKPOINTS):
            assert np.all(r[f"entropy_ckpt_{j}"] >= r[f"entropy_floor_ckpt_{j}"] - 1e-9)


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
        ({"positives": "pairs"}, "positives"),
        ({"tau_mode": "annealed"}, "tau_mode"),
        ({"instance_noise": -0.5}, "instance_noise"),
        ({"tau_mode": "learned_clamped", "tau": 0.005}, "tau"),
    ],
)
def test_bad_input(bad, key):
    with pytest.raises(ConfigError, match=f"^{key}:"):
        ct.validate(BASE | bad)
    with pytest.raises(ConfigError, match=f"^{key}:"):
        ct.simulate_block(np.random.default_rng(0), 2, [BASE | bad])


def test_config_refuses_a_clamped_start_below_the_clamp(tmp_path, capsys):
    """tau_mode learned_clamped with an initial tau below 0.01: one line naming grid.tau."""
    import yaml

    from attnsim.cli.main import main

    grid = {k: [v] for k, v in ct.resolved(BASE).items()} | {
        "tau": [0.005, 0.1],
        "tau_mode": ["learned_clamped"],
    }
    config = {
        "seed": 1,
        "experiments": {"c": {"kind": "contrastive_training", "trials": 2, "grid": grid}},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("attnsim: error: experiments.c.grid.tau: 0.005 is below the clamp")
        and err.count("\n") == 1
    ), err


# --------------------------------------------------------------------------- debiased and SigLIP


def _losses(w, x1, x2, tau, labels, loss, bias, grad=True, grad_t=True):
    if loss == "siglip":
        return ct.sigmoid_loss(w, x1, x2, tau, bias, grad, True, labels, grad_t)
    return ct.infonce(
        w, x1, x2, tau, grad, True, labels, grad_t, exclude=ct.same_class_pairs(labels)
    )


@pytest.mark.parametrize("loss", ["debiased", "siglip"])
@pytest.mark.parametrize("tau", [0.05, 0.3, 2.0])
def test_new_losses_match_central_differences(loss, tau):
    """dL/dW, dL/dt (t = log 1/tau) and SigLIP's dL/db against central differences."""
    rng = np.random.default_rng(21)
    world = ct.draw_world(rng, 2, 3, 3, 7)
    batch = ct.draw_batches(rng, 2, 2, 6, 3, 7)
    x1, x2 = batch.inputs(world, 0.8)
    w = np.random.default_rng(22).standard_normal((2, 4, 7))
    taus, bias = np.array([tau, 1.7 * tau]), np.array([-3.0, 1.5])
    out = _losses(w, x1, x2, taus, batch.labels, loss, bias)
    h = 1e-6

    def mean_loss(w_=w, taus_=taus, bias_=bias):
        return _losses(w_, x1, x2, taus_, batch.labels, loss, bias_, grad=False)["loss"].mean(-1)

    numeric = np.zeros_like(w)
    for idx in np.ndindex(4, 7):
        up, down = w.copy(), w.copy()
        up[(slice(None), *idx)] += h
        down[(slice(None), *idx)] -= h
        numeric[(slice(None), *idx)] = (mean_loss(w_=up) - mean_loss(w_=down)) / (2 * h)
    np.testing.assert_allclose(out["gw"], numeric, rtol=1e-6, atol=1e-9)
    t = np.log(1 / taus)
    gt = (mean_loss(taus_=np.exp(-(t + h))) - mean_loss(taus_=np.exp(-(t - h)))) / (2 * h)
    np.testing.assert_allclose(out["gt"], gt, rtol=1e-6, atol=1e-9)
    if loss == "siglip":
        gb = (mean_loss(bias_=bias + h) - mean_loss(bias_=bias - h)) / (2 * h)
        np.testing.assert_allclose(out["gb"], gb, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("loss", ["debiased", "siglip"])
def test_new_losses_match_the_literal_formulas(loss):
    """Loss, entropy (of the full row softmax), shares and gradients against the literal oracle."""
    rng = np.random.default_rng(23)
    world = ct.draw_world(rng, 2, 3, 3, 7)
    batch = ct.draw_batches(rng, 2, 2, 6, 3, 7)
    x1, x2 = batch.inputs(world, 0.8)
    w = np.random.default_rng(24).standard_normal((2, 4, 7))
    out = _losses(w, x1, x2, 0.1, batch.labels, loss, -2.0)
    for t in range(2):
        refs = [
            contrastive_forward_backward(
                w[t], x1[t, e], x2[t, e], 0.1, batch.labels[t, e], loss, -2.0
            )
            for e in range(2)
        ]
        for e, ref in enumerate(refs):
            for name in ("loss", "entropy", "alignment"):
                np.testing.assert_allclose(out[name][t, e], ref[name], rtol=1e-12)
        for name in ("gw", "gt") + (("gb",) if loss == "siglip" else ()):
            np.testing.assert_allclose(
                out[name][t], np.mean([r[name] for r in refs], axis=0), rtol=1e-10, atol=1e-14
            )


def test_debiasing_without_same_class_pairs_is_infonce():
    """With every example of its own class nothing is left out: the debiased loss is InfoNCE."""
    _, (x1, x2) = small_inputs(25)
    w = np.random.default_rng(26).standard_normal((2, 4, 7))
    labels = np.broadcast_to(np.arange(5), (2, 2, 5))
    plain = ct.infonce(w, x1, x2, 0.2, labels=labels, grad_t=True)
    debiased = ct.infonce(
        w, x1, x2, 0.2, labels=labels, grad_t=True, exclude=ct.same_class_pairs(labels)
    )
    for name in ("loss", "entropy", "gw", "gt"):
        np.testing.assert_allclose(debiased[name], plain[name], rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("positives", ["class", "instance"])
def test_batched_training_of_new_losses_matches_naive_loop(positives):
    """Debiased InfoNCE and SigLIP (fixed, learnt and clamped tau; its bias learnt from -10) on the
    same draws as InfoNCE points of the block, against the one-run-at-a-time oracle."""
    inst = BASE | {"positives": positives, "instance_noise": 0.7}
    points = [
        inst | {"loss": "debiased"},
        inst | {"loss": "debiased", "tau": 1.0, "tau_mode": "learned"},
        inst | {"loss": "siglip", "tau": 0.1},
        inst | {"loss": "siglip", "tau": 0.1, "tau_mode": "learned", "optimiser": "sgd"},
        inst | {"loss": "siglip", "tau": 0.02, "tau_mode": "learned_clamped", "steps": 12},
        inst,
        inst | {"loss": "siglip", "tau": 0.1, "bias_init": ct.prior_bias(BASE["n"])},
        inst | {"loss": "siglip", "tau": 0.1, "bias_init": 0.0},
    ]
    results = run_both(points)
    assert np.all(results[4]["tau_final"] >= ct.TAU_CLAMP)
    assert not np.array_equal(results[0]["final_loss"], results[5]["final_loss"])
    # the bias start changes the runs (same draws: only b0 differs)
    assert not np.array_equal(results[2]["final_loss"], results[6]["final_loss"])


def test_siglip_bias_start_from_theory():
    """docs/science.md §10.9: with every cosine 0 the sigmoid loss of a batch (n positives among
    n^2 pairs) is minimised by the constant logit b = -log(n - 1); SigLIP's -10 is that prior at
    n ~ 22,000. Checked by minimising the loss over b numerically."""
    from scipy.optimize import minimize_scalar

    for n in (8, 32, 128):

        def loss(b: float, n: int = n) -> float:
            return (n * np.logaddexp(0.0, -b) + n * (n - 1) * np.logaddexp(0.0, b)) / n

        found = minimize_scalar(loss, bounds=(-20, 5), method="bounded", options={"xatol": 1e-9})
        assert found.x == pytest.approx(ct.prior_bias(n), abs=1e-6)
    assert ct.prior_bias(22027) == pytest.approx(ct.SIGLIP_BIAS_INIT, abs=1e-3)


def test_bias_start_is_siglip_only_and_keeps_old_point_ids(capsys):
    """`bias_init` at its default (-10) is left out of point ids (the siglip points the kind had
    keep their ids); another start with a loss that has no bias is one clear line."""
    from oracles.points import point_id

    from attnsim.records.grid import points_from_rows

    kind_params = [p.name for p in ct_kind().schema.params]
    base = ct.resolved(BASE | {"loss": "siglip"})
    rows = [[base[name] for name in kind_params]]
    rows.append([(0.0 if name == "bias_init" else v) for name, v in zip(kind_params, rows[0])])
    made = points_from_rows(get_kind("contrastive_training"), rows)
    before = {k: v for k, v in made[0].params.items() if k != "bias_init"}
    assert made[0].id == point_id("contrastive_training", before)
    assert made[1].id != made[0].id
    with pytest.raises(ConfigError, match="^bias_init: 0.0 is SigLIP's bias"):
        ct.validate(BASE | {"bias_init": 0.0})


def test_a_new_loss_changes_only_its_own_point_ids():
    """`loss` is left out of a point's id at its default (infonce), so the points the kind had
    before the axis keep their ids and stored rows; a debiased point gets an id of its own. The
    columnar ids (attnsim.records.grid) equal the oracle's definition."""
    from oracles.points import point_id, reference_point

    from attnsim.records.grid import points_from_rows

    kind_params = [p.name for p in ct_kind().schema.params]
    base = ct.resolved(BASE)
    rows = [[base[name] if name in base else "infonce" for name in kind_params]]
    rows.append([("debiased" if name == "loss" else v) for name, v in zip(kind_params, rows[0])])
    made = points_from_rows(get_kind("contrastive_training"), rows)
    before = {k: v for k, v in made[0].params.items() if k != "loss"}
    assert made[0].id == point_id("contrastive_training", before)
    assert made[1].id == point_id("contrastive_training", made[1].params)
    for point in made:
        assert point.id == reference_point("contrastive_training", point.params).id


def ct_kind():
    from attnsim.kinds import get_kind

    return get_kind("contrastive_training")


@pytest.mark.parametrize("tau", [0.3, 1.0, 2.0])
def test_the_loss_optimal_encoder_found_by_direct_optimisation_is_the_ideal_one(tau):
    """The floor the optimum reaches (docs/science.md §10.7): class points optimised freely on the
    sphere (exact expectation over every batch of n = 5 with 3 classes in R^2) end at the loss
    floor, and their batch entropy is `ideal_entropy`: log n - ideal_entropy is the optimum's gap,
    below the worst case g_n(tau) that no encoder can exceed."""
    from oracles.training import contrastive_optimum

    n, C = 5, 3
    loss, entropy = contrastive_optimum(n, C, 2, tau)
    assert loss == pytest.approx(ct.loss_floor(n, C, tau), rel=1e-6)
    assert entropy == pytest.approx(ct.ideal_entropy(n, C, tau), rel=1e-6)
    assert math.log(n) - entropy < float(exact_gap(n, tau))


def test_a_summary_from_before_bias_init_reads_with_its_default():
    """A summary collected before the kind had `bias_init` (left out of ids at its default)
    gets the default -10, which its points computed, so the claims' settings can name it."""
    import pandas as pd

    from attnsim.report.claims import current_names

    old = pd.DataFrame({"n": [32], "loss": ["siglip"], "tau": [1.0]})
    assert current_names(old, "contrastive_training")["bias_init"].tolist() == [-10.0]
