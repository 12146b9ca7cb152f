"""The recall-training kernel: gradients against finite differences (float64, and 120-digit decimals
for one-hot starts), the batched training against a naive one-run-at-a-time loop on the same
draws, determinism, common random numbers, divergence handling, schedule and bad input."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from oracles.training import (
    recall_direction_stream,
    recall_examples,
    recall_forward_backward,
    recall_train,
)

from attnsim.errors import ConfigError
from attnsim.kernels.training import Optimiser, direction_streams, random_directions
from attnsim.kinds.recall_training import kernel as rt
from attnsim.subjects.normalisers import names

BASE = {"n": 6, "d": 4, "batch": 5, "steps": 30, "scale": 1.0, "optimiser": "adam", "lr": 0.02}


def small_examples(seed, trials=2, examples=3, n=5, d=4):
    return rt.draw_examples(np.random.default_rng(seed), trials, examples, n, d)


def weights(seed, trials, d, scale):
    rng = np.random.default_rng(seed)
    return [scale * rng.standard_normal((trials, d, d)) for _ in range(2)] + [
        rng.standard_normal((trials, d, d)) / math.sqrt(d)
    ]


def mean_loss(w, ex, noise):
    return rt.attention(*w, ex, noise, grad=False)["loss"].mean(axis=-1)  # (T,)


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("scale", [0.1, 0.5, 1.0, 2.0])
def test_gradients_match_central_differences(scale):
    ex = small_examples(1)
    w = weights(2, 2, 4, scale)
    out = rt.attention(*w, ex, 0.3)
    for which, name in enumerate(("gq", "gk", "gv")):
        numeric = central_differences(lambda ws: mean_loss(ws, ex, 0.3), w, which)
        np.testing.assert_allclose(
            out[name], numeric, rtol=1e-5, atol=1e-8 * max(1.0, np.abs(numeric).max())
        )


def test_logit_gradient_matches_naive_and_sums_to_zero():
    ex = small_examples(3)
    w = weights(4, 2, 4, 1.3)
    out = rt.attention(*w, ex, 0.3)
    for t in range(2):
        ref = recall_forward_backward(*(x[t] for x in w), *recall_examples(ex, t, 0.3))
        np.testing.assert_allclose(out["grad_logits_sq"][t], ref["grad_logits_sq"], rtol=1e-10)
        for name in ("loss", "entropy", "correct", "gq", "gk", "gv"):
            np.testing.assert_allclose(out[name][t], ref[name], rtol=1e-10, atol=1e-14)


def precise_loss(wq, wk, wv, keys, values, q):
    """Mean loss over examples in 120-digit decimals, from the exact binary inputs."""
    E, n, d = keys.shape
    D = lambda x: x if isinstance(x, Decimal) else Decimal(float(x))
    root = Decimal(d).sqrt()
    total = Decimal(0)
    Wq = [[D(x) for x in row] for row in wq]
    Wk = [[D(x) for x in row] for row in wk]
    Wv = [[D(x) for x in row] for row in wv]
    for e in range(E):
        qv = [D(x) for x in q[e]]
        u = [sum(qv[i] * Wq[i][j] for i in range(d)) for j in range(d)]
        s = []
        for k in range(n):
            kv = [D(x) for x in keys[e, k]]
            kw = [sum(kv[i] * Wk[i][j] for i in range(d)) for j in range(d)]
            s.append(sum(u[j] * kw[j] for j in range(d)) / root)
        top = max(s)
        ex = [(x - top).exp() for x in s]
        z = sum(ex)
        r = [sum(ex[k] / z * D(values[e, k, i]) for k in range(n)) for i in range(d)]
        o = [sum(r[i] * Wv[i][j] for i in range(d)) for j in range(d)]
        total += sum((o[j] - D(values[e, 0, j])) ** 2 for j in range(d))
    return total / E


@pytest.mark.parametrize("scale", [6.0, 10.0, 100.0])
def test_one_hot_start_gradients_match_high_precision_differences(scale):
    """At one-hot starts dL/dW_q is ~p_2 (1e-20 .. 1e-300 here): float64 differences see nothing, so
    the
    central differences are taken in 120-digit decimals; the kernel must keep the relative accuracy
    (the centred softmax backward) or, where the exact gradient is below ~1e-290, be as small."""
    ex = small_examples(5, trials=1, examples=2, n=4, d=3)
    w = weights(6, 1, 3, scale)
    out = rt.attention(*w, ex, 0.3)
    assert out["entropy"].max() < 1e-6  # one-hot
    keys, values, q = recall_examples(ex, 0, 0.3)
    with localcontext() as ctx:
        ctx.prec = 120
        h = Decimal("1e-40")
        for which, name in enumerate(("gq", "gk")):
            numeric = np.zeros((3, 3))
            for i, j in np.ndindex(3, 3):
                mats = [[[Decimal(float(x)) for x in row] for row in m[0]] for m in w]
                base = mats[which][i][j]
                mats[which][i][j] = base + h
                up = precise_loss(*[np.array(m, dtype=object) for m in mats], keys, values, q)
                mats[which][i][j] = base - h
                down = precise_loss(*[np.array(m, dtype=object) for m in mats], keys, values, q)
                numeric[i, j] = float((up - down) / (2 * h))
            big = np.abs(numeric) > 1e-290
            assert np.any(big) or scale == 100.0
            np.testing.assert_allclose(out[name][0][big], numeric[big], rtol=1e-8)
            assert np.all(np.abs(out[name][0][~big]) < 1e-280)
    if scale == 100.0:  # the logit gradient has vanished exactly, not at a rounding floor
        assert out["grad_logits_sq"].max() < 1e-500 or out["grad_logits_sq"].max() == 0.0


# ------------------------------------------------------------ training against the naive loop


def run_both(points, trials=3, seed=11):
    results, draws = rt.simulate(np.random.default_rng(seed), trials, points, record=True)
    for point, result in zip(points, results):
        p = rt.resolved(point)
        for t in range(trials):
            init = tuple(z[t] for z in draws.init)
            monitor = recall_examples(draws.monitor, t, p["query_noise"])
            final = recall_examples(draws.final, t, p["query_noise"])
            batches = [recall_examples(b, t, p["query_noise"]) for b in draws.batches]
            directions = recall_direction_stream(seed, (), t)  # default_rng(seed)'s key is ()
            ref = recall_train(p, init, monitor, final, batches, directions)
            for name in rt.METRICS:
                assert result[name].shape == (trials,) and result[name].dtype == np.float64
                np.testing.assert_allclose(
                    result[name][t],
                    ref[name],
                    rtol=1e-7,
                    atol=1e-12,
                    err_msg=f"{name} {point} trial {t}",
                )
    return results


@pytest.mark.parametrize("scale", [0.5, 3.0, 30.0])
def test_batched_training_matches_naive_loop(scale, monkeypatch):
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    # normgd follows the gradient's direction whatever its size: at a one-hot start (scale 30) that
    # is the direction of a ~1e-100 gradient, which the oracle's uncentred softmax backward gets
    # from rounding residues (the kernel's centred one is accurate: the decimal test above)
    optimisers = (("sgd", 0.5), ("adam", 0.03)) + ((("normgd", 0.2),) if scale < 10 else ())
    points = [
        BASE | {"scale": scale, "optimiser": o, "lr": lr, "threshold": 0.9} for o, lr in optimisers
    ]
    points.append(BASE | {"scale": scale, "steps": 7, "query_noise": 0.0})
    points.append(
        BASE
        | {"scale": scale, "values": "identity", "optimiser": "sgd", "lr": 0.5, "threshold": 0.9}
    )
    points.append(BASE | {"scale": scale, "logits": "qk_norm", "threshold": 0.9})
    points.append(
        BASE
        | {
            "scale": scale,
            "logits": "qk_norm",
            "values": "identity",
            "optimiser": "normgd",
            "lr": 0.1,
        }
    )
    run_both(points)


OTHER_NORMALISERS = [name for name in names() if name != rt.SOFTMAX]


def central_differences(loss, arrays: list[np.ndarray], which: int, h: float = 1e-6):
    """d loss / d arrays[which] per trial, entry by entry (loss: arrays -> (T,))."""
    numeric = np.zeros_like(arrays[which])
    for idx in np.ndindex(*arrays[which].shape[1:]):
        up = [x.copy() for x in arrays]
        down = [x.copy() for x in arrays]
        up[which][(slice(None), *idx)] += h
        down[which][(slice(None), *idx)] -= h
        numeric[(slice(None), *idx)] = (loss(up) - loss(down)) / (2 * h)
    return numeric


@pytest.mark.parametrize("normaliser", OTHER_NORMALISERS)
@pytest.mark.parametrize("logits", ["dot", "qk_norm"])
def test_every_normaliser_trains_on_its_exact_gradient(normaliser, logits):
    """The whole training gradient (W_q, W_k, W_v, the QK-norm gain) against central differences
    of the mean loss, per normaliser, at logits of order one (no logit within the step of a kink:
    ReLU's 0, softpick's 0, a sparse support's edge), and against the literal oracle head."""
    ex = small_examples(11)
    w = weights(12, 2, 4, 1.2)
    gain = np.array([1.7, 2.9]).reshape(2, 1, 1) if logits == "qk_norm" else None
    arrays = w + ([gain] if gain is not None else [])
    names = ("gq", "gk", "gv", "gg")[: len(arrays)]

    def loss(a):
        g = a[3] if gain is not None else None
        out = rt.attention(*a[:3], ex, 0.3, grad=False, gain=g, normaliser=normaliser)
        return out["loss"].mean(axis=-1)

    out = rt.attention(*w, ex, 0.3, gain=gain, normaliser=normaliser)
    for which, name in enumerate(names):
        numeric = central_differences(loss, arrays, which)
        np.testing.assert_allclose(
            out[name], numeric, rtol=1e-5, atol=1e-8 * max(1.0, np.abs(numeric).max()), err_msg=name
        )
    for t in range(2):
        ref = recall_forward_backward(
            *(x[t] for x in w),
            *recall_examples(ex, t, 0.3),
            gain=None if gain is None else float(gain[t, 0, 0]),
            normaliser=normaliser,
        )
        for name in ("loss", "entropy", "correct", "grad_logits_sq", *names):
            np.testing.assert_allclose(out[name][t], ref[name], rtol=1e-9, atol=1e-13)


def test_softmax_rows_do_not_pass_through_the_normaliser_module(monkeypatch):
    """The default path is the kernel's own centred softmax: with the normaliser registry's
    lookup broken, softmax training is unchanged and every other normaliser fails."""
    from attnsim.subjects import normalisers

    point = BASE | {"steps": 5}
    before = rt.simulate(np.random.default_rng(3), 2, [point])[0]

    def broken(*args):
        raise AssertionError("the softmax path called the normaliser module")

    monkeypatch.setattr(normalisers, "get", broken)
    after = rt.simulate(np.random.default_rng(3), 2, [point | {"normaliser": "softmax"}])[0]
    for name in rt.METRICS:
        np.testing.assert_array_equal(before[name], after[name])
    with pytest.raises(AssertionError, match="normaliser module"):
        rt.simulate(np.random.default_rng(3), 2, [point | {"normaliser": "sigmoid"}])


def test_every_normaliser_trains_as_the_naive_loop_on_shared_draws(monkeypatch):
    """Batched training per normaliser against the one-run loop with the oracle's dense
    Jacobians; all normalisers share the block (the normaliser does not shape the draws), at a
    start where the softmax-like maps are near one-hot (scale 3) and with QK-norm."""
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    points = [
        BASE | {"scale": 3.0, "steps": 12, "normaliser": name, "threshold": 0.9}
        for name in OTHER_NORMALISERS
    ]
    points += [
        BASE | {"steps": 12, "normaliser": name, "logits": "qk_norm", "optimiser": "sgd", "lr": 0.5}
        for name in ("sigmoid", "softcap30", "ssmax")
    ]
    results = run_both(points)
    assert all(np.isnan(r["zhai_margin_min"]).all() for r in results)  # softmax's bound only


def test_random_direction_runs_match_the_naive_loop_and_share_the_data(monkeypatch):
    """randdir (normgd's control) against the naive loop with each run's own stream written out
    from its definition, trained weights of every kind (W_v, the QK-norm gain); its runs share
    data and initial weights with normgd's (nothing drawn from the block's generator), so the
    other points of the block are bit-identical with and without it."""
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    control = BASE | {"optimiser": "randdir", "lr": 0.2, "threshold": 0.9}
    points = [
        control,
        control | {"scale": 3.0, "values": "identity", "stop": "threshold"},
        control | {"logits": "qk_norm"},
        BASE | {"optimiser": "normgd", "lr": 0.2, "threshold": 0.9},
    ]
    results = run_both(points, trials=3)
    alone = rt.simulate_block(np.random.default_rng(11), 3, points[3:])[0]
    for name in rt.METRICS:
        np.testing.assert_array_equal(results[3][name], alone[name])
    np.testing.assert_array_equal(results[0]["init_loss"], results[3]["init_loss"])
    assert not np.array_equal(results[0]["final_loss"], results[3]["final_loss"])


def test_random_direction_streams_are_per_trial(monkeypatch):
    """A trial's directions come from its own stream: they do not depend on the block's other
    trials (a block of 2 gives the first 2 trials of a block of 5 the same directions when the
    data are the same) nor on when another trial stops."""
    shapes = [(4, 4), (4, 4), (1, 1)]
    rng = np.random.default_rng(21)
    five = random_directions(direction_streams(rng, 5), shapes)
    two = random_directions(direction_streams(np.random.default_rng(21), 2), shapes)
    for a, b in zip(five, two):
        np.testing.assert_array_equal(a[:2], b)
    for t in range(5):  # the naive per-run draws: each array in turn from the run's stream
        stream = recall_direction_stream(21, (), t)
        for a, shape in zip(five, shapes):
            np.testing.assert_array_equal(a[t], stream.standard_normal(shape))
    assert rng.bit_generator.state == np.random.default_rng(21).bit_generator.state  # not drawn


def test_random_direction_steps_have_the_learning_rate_as_their_size():
    rng = np.random.default_rng(4)
    w = [rng.standard_normal((3, 4, 4)), rng.standard_normal((3, 1, 1))]
    before = [x.copy() for x in w]
    opt = Optimiser("randdir", 0.25, w, direction_streams(rng, 3))
    opt.update(w, None, 1)
    for x, b in zip(w, before):
        np.testing.assert_allclose(np.sqrt(np.sum((x - b) ** 2, axis=(1, 2))), 0.25, rtol=1e-12)
    with pytest.raises(ValueError, match="one direction stream per trial"):
        Optimiser("randdir", 0.25, w, direction_streams(rng, 2))


def test_runs_that_stop_at_the_threshold_are_the_full_runs_up_to_the_stop(monkeypatch):
    """With stop = threshold a run is frozen at its first evaluation at or below the threshold; up
    to there every monitor loss, and its escape time, are those of the run that did not stop. Its
    later checkpoints keep the stop's values, and the stopped runs are checked against the naive
    loop too (which stops the same way)."""
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    base = BASE | {"steps": 120, "threshold": 0.6, "optimiser": "adam", "lr": 0.05, "scale": 1.0}
    points = [
        base,
        base | {"stop": "threshold"},
        base | {"stop": "threshold", "scale": 4.0},
        base | {"scale": 4.0},
    ]
    results = run_both(points, trials=6)
    _, draws = rt.simulate(np.random.default_rng(11), 6, points, record=True)
    for full, stopped, fh, sh in (
        (results[0], results[1], draws.history[0], draws.history[1]),
        (results[3], results[2], draws.history[3], draws.history[2]),
    ):
        np.testing.assert_array_equal(full["escape_step"], stopped["escape_step"])
        np.testing.assert_array_equal(full["escaped"], stopped["escaped"])
        for name in (
            "init_entropy",
            "init_logit_std",
            "init_grad_logits",
            "init_grad_qk",
            "init_loss",
        ):
            np.testing.assert_array_equal(full[name], stopped[name])
        stop = np.where(stopped["escaped"] == 1, stopped["escape_step"], np.inf)
        compared = 0
        for step, losses in sh.items():
            upto = step <= stop
            np.testing.assert_array_equal(losses[upto], fh[step][upto])
            compared += upto.sum()
            after = step > stop  # frozen: the loss at the stop
            np.testing.assert_array_equal(
                losses[after],
                np.array(
                    [sh[s][t] for s, t in zip(stop[after].astype(int), np.flatnonzero(after))]
                ),
            )
        assert compared > 6 * 10
    assert results[1]["escaped"].sum() >= 3  # the test compares runs that did stop
    done = np.flatnonzero(results[1]["escaped"] == 1)
    at_stop = [draws.history[1][int(results[1]["escape_step"][t])][t] for t in done]
    # the last checkpoint: frozen
    np.testing.assert_array_equal(results[1]["loss_ckpt_7"][done], at_stop)


def test_divergence_is_flagged_and_losses_are_infinite(monkeypatch):
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    points = [
        BASE | {"optimiser": "sgd", "lr": 1e12, "scale": 1.0},
        BASE | {"optimiser": "sgd", "lr": 0.1},
    ]
    wild, calm = run_both(points)
    assert np.all(wild["diverged"] == 1) and np.all(np.isfinite(wild["diverged_step"]))
    assert np.all(wild["final_loss"] == np.inf) and np.all(wild["loss_ckpt_7"] == np.inf)
    assert np.all(wild["final_accuracy"] == 0) and np.all(np.isnan(wild["final_entropy"]))
    assert np.all(np.isfinite(wild["init_loss"]))  # measured before training
    assert np.all(calm["diverged"] == 0) and np.all(calm["diverged_step"] == np.inf)
    assert all(
        np.all(np.isfinite(v))
        for k, v in calm.items()
        if k not in ("diverged_step", "steps_to_threshold", "collapse_step")
    )
    # censored when it diverged
    np.testing.assert_array_equal(wild["escape_step"], wild["diverged_step"])
    assert np.all(wild["escaped"] == 0)


def test_a_finite_but_exploding_loss_counts_as_divergence(monkeypatch):
    """SGD with a large step grows W_v geometrically while every weight stays finite (1e120 x chance
    was seen); above DIVERGED_LOSS x chance the run is flagged, so no such value reaches a mean."""
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    res = run_both([BASE | {"optimiser": "sgd", "lr": 16.0, "scale": 10.0, "steps": 60}])[0]
    assert np.all(res["diverged"] == 1)
    assert np.all(res["final_loss"] == np.inf) and np.all(np.isfinite(res["init_loss"]))


# --------------------------------------------------- determinism and common random numbers


def test_deterministic_and_points_do_not_interact(monkeypatch):
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    points = [
        BASE | {"scale": s, "optimiser": o, "lr": lr, "steps": st}
        for s, o, lr, st in ((0.3, "sgd", 0.3, 30), (10.0, "adam", 0.01, 12))
    ]
    together = rt.simulate_block(np.random.default_rng(5), 4, points)
    again = rt.simulate_block(np.random.default_rng(5), 4, points)
    alone = [rt.simulate_block(np.random.default_rng(5), 4, [p])[0] for p in points]
    for a, b, c in zip(together, again, alone):
        for name in rt.METRICS:
            np.testing.assert_array_equal(a[name], b[name])
            np.testing.assert_array_equal(a[name], c[name])


def test_shorter_run_is_a_prefix_of_a_longer_one(monkeypatch):
    monkeypatch.setattr(rt, "EVAL_EXAMPLES", 16)
    long, short = rt.simulate_block(
        np.random.default_rng(8), 3, [BASE | {"steps": 40}, BASE | {"steps": 10}]
    )
    long_steps, short_steps = rt.checkpoint_steps(40), rt.checkpoint_steps(10)
    common = set(long_steps) & set(short_steps)
    assert common == {1, 2, 3, 5}
    for step in common:
        np.testing.assert_array_equal(
            long[f"loss_ckpt_{long_steps.index(step)}"],
            short[f"loss_ckpt_{short_steps.index(step)}"],
        )
    np.testing.assert_array_equal(long["init_loss"], short["init_loss"])


@pytest.mark.parametrize("scale", [0.3, 1.0, 5.0])
def test_qk_norm_and_identity_value_gradients_match_central_differences(scale):
    ex = small_examples(7)
    w = weights(8, 2, 4, scale)
    gain = np.array([1.7, 2.9]).reshape(2, 1, 1)
    for wv in (w[2], None):
        out = rt.attention(w[0], w[1], wv, ex, 0.3, gain=gain)
        arrays = [w[0], w[1], gain]

        def loss(a, wv=wv):
            return rt.attention(a[0], a[1], wv, ex, 0.3, grad=False, gain=a[2])["loss"].mean(-1)

        for which, name in enumerate(("gq", "gk", "gg")):
            numeric = central_differences(loss, arrays, which)
            np.testing.assert_allclose(
                out[name], numeric, rtol=1e-5, atol=1e-8 * max(1.0, np.abs(numeric).max())
            )
        assert ("gv" in out) == (wv is not None)
        for t in range(2):
            ref = recall_forward_backward(
                w[0][t],
                w[1][t],
                None if wv is None else wv[t],
                *recall_examples(ex, t, 0.3),
                gain=float(gain[t, 0, 0]),
            )
            for name in ("loss", "entropy", "logits", "grad_logits_sq", "gq", "gk", "gg"):
                np.testing.assert_allclose(out[name][t], ref[name], rtol=1e-9, atol=1e-13)
    assert np.abs(rt.attention(w[0], w[1], None, ex, 0.3, gain=gain)["logits"]).max() <= gain.max()


def test_normalised_gradient_steps_have_the_learning_rate_as_their_size():
    rng = np.random.default_rng(3)
    w = [rng.standard_normal((3, 4, 4)), rng.standard_normal((3, 1, 1))]
    g = [1e-200 * rng.standard_normal((3, 4, 4)), np.array([0.5, 0.0, -2.0]).reshape(3, 1, 1)]
    before = [x.copy() for x in w]
    opt = Optimiser("normgd", 0.25, w)
    opt.update(w, g, 1)
    steps = np.sqrt(np.sum((w[0] - before[0]) ** 2, axis=(1, 2)))
    # the direction of a 1e-200 gradient, full size
    np.testing.assert_allclose(steps, 0.25, rtol=1e-12)
    # no step where g = 0
    np.testing.assert_array_equal((w[1] - before[1]).ravel(), [-0.25, 0.0, 0.25])


def test_entropy_is_never_below_the_norm_bound():
    """Zhai et al.'s bound, from the spectral norms, under the measured entropy on every example."""
    ex = small_examples(9, trials=3, examples=20, n=8, d=4)
    for scale in (0.2, 1.0, 3.0):
        w = weights(10, 3, 4, scale)
        out = rt.attention(*w, ex, 0.3, grad=False)
        keys, q = ex.unit_keys(), ex.queries(0.3)
        bound = rt.entropy_bound(
            w[0],
            w[1],
            None,
            np.linalg.norm(keys, ord=2, axis=(-2, -1)),
            np.linalg.norm(q, axis=-1),
            8,
        )
        assert np.all(out["entropy"] >= bound - 1e-12) and bound.max() > 0
    assert rt.two_level_entropy(np.array([0.0]), 8)[0] == pytest.approx(math.log(8))


def test_chance_and_bayes_losses():
    """Uniform attention with W_v = I scores chance (1 - 1/n); the Bayes head (W_q W_k^T =
    d^1.5/noise^2 I, W_v = I) is near perfect at the default noise."""
    n, d, E, noise = 8, 16, 4000, rt.DEFAULTS["query_noise"]
    ex = rt.draw_examples(np.random.default_rng(9), 1, E, n, d)
    eye = np.eye(d)[None]
    uniform = rt.attention(0 * eye, 0 * eye, eye, ex, noise, grad=False)
    assert uniform["loss"].mean() / rt.chance_loss(n) == pytest.approx(1.0, abs=0.02)
    bayes = rt.attention(eye * d**1.5 / noise**2, eye, eye, ex, noise, grad=False)
    assert bayes["loss"].mean() / rt.chance_loss(n) < 1e-3
    assert bayes["correct"].mean() > 0.999


# --------------------------------------------------------------------------- schedule and bad input


def test_schedule():
    assert rt.checkpoint_steps(300) == [1, 2, 5, 12, 26, 59, 133, 300]
    assert rt.checkpoint_steps(1) == [1] * 8
    for steps in (1, 2, 7, 300, 1000, 12345):
        for per in (4, rt.EVALS_PER_CHECKPOINT):
            evals = rt.evaluation_steps(steps, per)
            assert (
                set(rt.checkpoint_steps(steps)) <= set(evals)
                and evals[0] == 1
                and evals[-1] == steps
            )
    ratios = np.diff(np.log(rt.evaluation_steps(10000, rt.EVALS_PER_CHECKPOINT)[40:]))
    assert ratios.max() < math.log(1.09)  # the escape time's resolution at 10^4 steps


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"lr": 0.0}, "lr"),
        ({"lr": -1e-3}, "lr"),
        ({"steps": 0}, "steps"),
        ({"optimiser": "rmsprop"}, "optimiser"),
        ({"scale": 0.0}, "scale"),
        ({"n": 1}, "n"),
        ({"d": 1}, "d"),
        ({"batch": 0}, "batch"),
        ({"lr": float("nan")}, "lr"),
        ({"steps": 2.5}, "steps"),
        ({"normaliser": "tanh"}, "normaliser"),
        ({"threshold": 0.0}, "threshold"),
        ({"threshold": 0}, "threshold"),
        ({"values": "frozen"}, "values"),
        ({"logits": "cosine"}, "logits"),
        ({"stop": "early"}, "stop"),
    ],
)
def test_bad_input_is_refused_once_by_the_declarations(bad, key):
    """Every bound and choice is the kind's parameter declaration, checked once when the config is
    loaded (its schema is generated from them), in one line naming the value's key; the kernel
    does not check them again."""
    from attnsim.config.load import load

    grid = {name: [value] for name, value in (BASE | bad).items()}
    experiment = {"kind": "recall_training", "trials": 4, "grid": grid}
    with pytest.raises(ConfigError, match=f"experiments.x.grid.{key}") as info:
        load({"seed": 1, "experiments": {"x": experiment}})
    assert "\n" not in str(info.value)


def test_points_of_one_block_must_share_the_stream():
    with pytest.raises(ValueError, match="share"):
        rt.simulate_block(np.random.default_rng(0), 2, [BASE, BASE | {"n": 7}])


def test_escape_by_normaliser_draws_each_normalisers_kaplan_meier_curve():
    """One non-increasing Kaplan-Meier curve per normaliser and large scale, each the estimate of
    its point's runs, and the medians panel with the two laws."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from attnsim.kinds.recall_training import escape_summary
    from attnsim.kinds.recall_training.figures import escape_by_normaliser
    from attnsim.stats import kaplan_meier

    rng = np.random.default_rng(5)
    summary, trials = [], []
    for name, b in (("softmax", 1.0), ("relu", 0.5), ("sparsemax", 1.0)):
        for scale in (1.0, 2.0, 4.0, 8.0):
            sigma = scale**2 * math.sqrt(1.09)
            raw = 20 * sigma**b * rng.exponential(size=10) ** 0.3
            time, event = np.minimum(raw, 1000.0), (raw <= 1000).astype(float)
            point = f"{name}{scale:g}"
            summary.append(
                dict(point_id=point, scale=scale, logit_std=sigma, normaliser=name)
                | dict(optimiser="adam", lr=0.03, values="trainable", logits="dot")
                | dict(stop="threshold", threshold=0.5, n=16, d=16, batch=32, steps=1000)
                | escape_summary(time, event, rt.checkpoint_steps(1000))
            )
            trials += [
                dict(point_id=point, trial=i, escape_step=t, escaped=e)
                for i, (t, e) in enumerate(zip(time, event))
            ]
    fig = escape_by_normaliser(pd.DataFrame(summary), pd.DataFrame(trials))
    curves = [
        line for ax in fig.axes for line in ax.lines if str(line.get_gid()).startswith("kaplan")
    ]
    assert len(curves) == 3 * 3  # the three scales with logit std >= 4, every normaliser
    for line in curves:
        assert np.all(np.diff(np.asarray(line.get_ydata(), dtype=float)) <= 0)
    first = kaplan_meier(
        *(np.array([t[k] for t in trials[10:20]]) for k in ("escape_step", "escaped"))
    )
    np.testing.assert_array_equal(np.asarray(curves[0].get_ydata())[1:-1], first.survival)
    labels = [line.get_label() for line in fig.axes[-1].lines]
    assert any("1/2" in label for label in labels) and any("σ^1" in label for label in labels)
