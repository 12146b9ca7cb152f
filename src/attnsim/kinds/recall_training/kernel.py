"""Training one softmax attention head on associative recall, many independent runs at once.

Tests the claim that with very large initial logits the attention weights are one-hot and
training cannot start (vanishing gradients). A trial is one complete training run from its own
initial weights and its own stream of training examples; the trials of a block are trained
together, stacked on a leading axis (T), one batched array program per step.

Task (per example): n key/value pairs, keys k_i and values v_i i.i.d. uniform on the unit sphere
in R^d, and a query q = k_0 + (query_noise / sqrt(d)) xi, xi ~ N(0, I_d). The target is v_0. The
target is always pair 0: the model has no positions and is symmetric in the pairs, so this has
the law of a uniformly random target and saves drawing one.

Model: u = q W_q, a = u W_k^T / sqrt(d), s_i = k_i . a (= q W_q (k_i W_k)^T / sqrt(d)),
p = softmax(s), r = sum_i p_i v_i, o = r W_v; loss l = ||o - v_0||^2 per example, mean over the
minibatch. Initialisation: W_q, W_k entries N(0, scale^2) (logit std ~ scale^2, as in the
`init_gradient` kind), W_v entries N(0, 1/d) whatever the scale, so the scale acts on the logits
only (with W_v at scale 100 the output would be 100x too large and a failure to train would say
nothing about the softmax).

Losses are reported as a fraction of chance: the best prediction that ignores the query is the
mean of the example's values (E[v_0 | values] = mean_i v_i), whose loss is exactly 1 - 1/n (unit
values, E v_i . v_j = 0 for i != j); uniform attention with W_v = I attains it. Perfect is 0. The
Bayes loss is positive but small: unit keys make the exact posterior over the target pair
softmax((d / query_noise^2) q . k_i), which this model can represent exactly
(W_q W_k^T = (d^{3/2} / query_noise^2) I, W_v = I); see docs/science.md §6.2 for its size.

Hand-written gradients (per example, g = dl/do = 2 (o - v_0)):
  dW_v = r^T g,  dr = g W_v^T,  dp_i = v_i . dr,
  ds_i = p_i (c_i - sum_j p_j c_j) with c_i = dp_i - dp_m, m the top key (the centring is exact
         algebra; it makes ds_m = -p_m sum_{j != m} p_j c_j accurate when p is one-hot instead of
         a rounding residue of 1e-16),
  da = sum_i ds_i k_i,  dW_k = da^T u / sqrt(d),  du = da W_k / sqrt(d),  dW_q = q^T du.
The weights use the shared floor of `attnsim.kernels.softmax` (exp(-gap) >= e^-700, ~1e-304):
it avoids slow subnormals and changes no sum; a weight that truly is below 1e-304 is 0 for all
purposes, so the attention gradient of a one-hot start is (numerically) exactly 0.

Draws per block, in this order, all from `rng` (float32 Box-Muller, `attnsim.kernels.sampling`):
the monitor set (EVAL_EXAMPLES examples: keys, values, query noise), the final held-out set
(likewise), the initial weights Z_q, Z_k, Z_v (T, d, d) standard normals (W_q = scale Z_q,
W_k = scale Z_k, W_v = Z_v / sqrt(d)), then per step a fresh minibatch of `batch` examples.
Only n, d and batch shape the draws: scale, optimiser, lr, steps, query_noise and threshold
scale or consume the same numbers, so points that differ in them share data and initial
directions (common random numbers), and a run of 100 steps is the first 100 steps of a run of
300 (the held-out sets are drawn before training).

Evaluations: the loss on the (fixed) monitor set is measured at step 0 (before training) and
after the steps of `evaluation_steps(steps)`; checkpoint j (j = 0..7) is after step
round(steps^(j/7)) (round half up: j = 0 is after step 1, j = 7 after the last step).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from attnsim.kernels.sampling import standard_normal
from attnsim.kernels.softmax import EXP_FLOOR
from attnsim.kernels.training import (
    CHECKPOINTS,
    Optimiser,
    block_points,
    check_integer,
    check_number,
    check_training,
    checkpoint_steps,
    evaluation_steps,
    first_reached,
    not_finite,
)

EVAL_EXAMPLES = 64  # examples in the monitor set and in the final held-out set
DEFAULTS = {"query_noise": 0.3, "batch": 32, "threshold": 0.1}
# A run whose monitor loss exceeds this many times chance has diverged even if still finite (SGD
# with a large step size grows W_v geometrically: 1e120 x chance was seen while every weight was
# finite; such values would swamp any mean).
DIVERGED_LOSS = 1e6
STREAM_PARAMS = ("n", "d", "batch")  # the parameters that shape the draws (batch defaults to DEFAULTS)

METRICS = {
    "init_entropy": "entropy (nats) of the attention weights at initialisation, mean over the monitor set",
    "init_grad_logits": "RMS over the monitor set of ||dl/ds|| at initialisation: per-example gradient of the loss w.r.t. the n logits",
    "init_grad_qk": "||(dL/dW_q, dL/dW_k)||_F at initialisation, L the mean loss over the monitor set",
    "init_loss": "monitor-set loss at initialisation, as a fraction of chance (1 - 1/n)",
    **{f"loss_ckpt_{j}": f"monitor-set loss / chance after step round(steps^({j}/7)); +inf once diverged" for j in range(CHECKPOINTS)},
    "steps_to_threshold": "first evaluation step (0 or in evaluation_steps) with monitor loss / chance <= threshold; +inf if never",
    "final_loss": "loss / chance on the fresh held-out set after the last step; +inf if diverged",
    "final_accuracy": "share of held-out queries whose output o has its nearest value (max o.v_i, unit values) at the target; 0 if diverged",
    "final_entropy": "entropy (nats) of the attention weights after training, mean over the held-out set; NaN if diverged",
    "diverged": "1 if the weights became NaN/inf or a monitor loss NaN/inf or above DIVERGED_LOSS (1e6) x chance, else 0",
    "diverged_step": "the step whose update made the weights non-finite, or the evaluation step whose monitor loss was non-finite or above DIVERGED_LOSS x chance; +inf if never",
}


# --------------------------------------------------------------------------- schedule and validation


def chance_loss(n: int) -> float:
    """E||mean_i v_i - v_0||^2 = 1 - 1/n for unit values: the best loss without using the query."""
    return 1.0 - 1.0 / n


def resolved(params: Mapping) -> dict:
    """The point's parameters with DEFAULTS filled in."""
    return {**DEFAULTS, **params}


def validate(params: Mapping) -> None:
    """Raise ConfigError (message starts with the offending key) for parameters the kernel cannot run."""
    p = resolved(params)
    check_integer(p, "n", 2, "key/value pairs")
    check_integer(p, "d", 2, "dimension(s)")
    check_integer(p, "batch", 1, "example(s) per step")
    check_training(p)
    check_number(p, "scale")
    check_number(p, "query_noise", positive=False)
    check_number(p, "threshold")


def bytes_per_trial(n: int, d: int, batch: int = DEFAULTS["batch"]) -> int:
    """Peak working set per trial (one point being stepped): the two held-out sets (float64), a
    minibatch (float64 plus its float32 draws), the activations of one evaluation pass over the
    monitor set (about 8 arrays of n and 10 of d per example) and the weights and Adam moments.
    Each further point in the block adds 9 d^2 doubles per trial."""
    example = 2 * n * d + d
    return 8 * (2 * EVAL_EXAMPLES * example + batch * example) + 4 * batch * example + 8 * EVAL_EXAMPLES * (8 * n + 10 * d) + 8 * 9 * d * d + 256


# --------------------------------------------------------------------------- data


@dataclass
class Examples:
    """Examples of a block, (T, E, ...). Keys and values are stored as drawn (float64 copies of
    float32 standard normals) with their inverse norms: the unit vectors k_i = raw_k_i * ikey_i
    enter the model only through products with them, so the normalisation costs (T, E, n)
    multiplies instead of passes over (T, E, n, d). Pair 0 is the target's; noise (T, E, d) is
    the query noise xi."""

    keys: np.ndarray  # (T, E, n, d) raw
    values: np.ndarray  # (T, E, n, d) raw
    ikey: np.ndarray  # (T, E, n) 1 / ||raw key||
    ival: np.ndarray  # (T, E, n) 1 / ||raw value||
    noise: np.ndarray  # (T, E, d)

    def queries(self, query_noise: float) -> np.ndarray:
        d = self.keys.shape[-1]
        return self.keys[:, :, 0] * self.ikey[:, :, :1] + (float(query_noise) / math.sqrt(d)) * self.noise

    def target(self) -> np.ndarray:
        return self.values[:, :, 0] * self.ival[:, :, :1]

    def unit_keys(self) -> np.ndarray:
        return self.keys * self.ikey[..., None]

    def unit_values(self) -> np.ndarray:
        return self.values * self.ival[..., None]

    def trial(self, t: int) -> Examples:
        return Examples(*(x[t : t + 1] for x in (self.keys, self.values, self.ikey, self.ival, self.noise)))


def _raw_and_inverse_norm(x32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = x32.astype(np.float64)
    return x, 1.0 / np.sqrt(np.einsum("...d,...d->...", x, x))


def draw_examples(rng: np.random.Generator, trials: int, examples: int, n: int, d: int) -> Examples:
    """Draw order: keys, values, query noise (float32 Box-Muller normals, used in float64). A raw
    vector is 0 with probability ~0 (d >= 2, Box-Muller radii are > 0 except at u = 1)."""
    keys, ikey = _raw_and_inverse_norm(standard_normal(rng, (trials, examples, n, d)))
    values, ival = _raw_and_inverse_norm(standard_normal(rng, (trials, examples, n, d)))
    noise = standard_normal(rng, (trials, examples, d)).astype(np.float64)
    return Examples(keys, values, ikey, ival, noise)


# --------------------------------------------------------------------------- forward and backward


def _t(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def attention(wq, wk, wv, ex: Examples, query_noise: float, grad: bool = True) -> dict[str, np.ndarray]:
    """Forward (and backward) pass of the head for weights (T, d, d) on examples (T, E, ...).

    Returns per example (T, E): `loss` l = ||o - v_0||^2, `entropy`, `correct` (1.0 where the
    nearest value to o is v_0); with `grad`, also `grad_logits_sq` ||dl/ds||^2 per example and
    `gq`, `gk`, `gv` (T, d, d), the gradients of the mean loss over the E examples.
    """
    keys, values = ex.keys, ex.values
    examples, n, d = keys.shape[-3:]
    q = ex.queries(query_noise)
    root = math.sqrt(d)
    u = q @ wq  # (T, E, d)
    a = (u @ _t(wk)) / root  # (T, E, d): s_i = k_i . a
    s = (keys @ a[..., None])[..., 0] * ex.ikey  # (T, E, n)
    top = np.argmax(s, axis=-1)[..., None]
    gap = np.take_along_axis(s, top, axis=-1) - s  # >= 0, exactly 0 at the top
    e = np.exp(np.maximum(-gap, EXP_FLOOR))
    total = e.sum(axis=-1)
    p = e / total[..., None]
    entropy = np.clip(np.log(total) + np.einsum("...n,...n->...", p, gap), 0.0, math.log(n))
    r = ((p * ex.ival)[..., None, :] @ values)[..., 0, :]  # (T, E, d) sum_i p_i v_i
    o = r @ wv
    err = o - ex.target()
    out = {"loss": np.einsum("...d,...d->...", err, err), "entropy": entropy}
    scores = (values @ o[..., None])[..., 0] * ex.ival  # o . v_i
    out["correct"] = (np.argmax(scores, axis=-1) == 0).astype(np.float64)
    if not grad:
        return out
    g = 2.0 * err  # dl/do per example
    gr = g @ _t(wv)
    gp = (values @ gr[..., None])[..., 0] * ex.ival  # (T, E, n) dl/dp_i = v_i . dr
    c = gp - np.take_along_axis(gp, top, axis=-1)  # centred on the top key: c_top = 0 exactly
    ds = p * (c - np.einsum("...n,...n->...", p, c)[..., None])
    out["grad_logits_sq"] = np.einsum("...n,...n->...", ds, ds)
    da = ((ds * ex.ikey)[..., None, :] @ keys)[..., 0, :]  # (T, E, d) dl/da = sum_i ds_i k_i
    scale = 1.0 / examples
    out["gv"] = (_t(r) @ g) * scale
    out["gk"] = (_t(da) @ u) * (scale / root)
    out["gq"] = (_t(q) @ (da @ wk)) * (scale / root)
    return out


# --------------------------------------------------------------------------- training


@dataclass
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    monitor: Examples
    final: Examples
    init: tuple[np.ndarray, np.ndarray, np.ndarray]  # Z_q, Z_k, Z_v (T, d, d) float64
    batches: list[Examples]  # one per step


def initial_weights(init, scale: float) -> list[np.ndarray]:
    zq, zk, zv = init
    d = zq.shape[-1]
    return [float(scale) * zq, float(scale) * zk, zv / math.sqrt(d)]


class Run:
    """One grid point's runs of a block: weights, optimiser state and measurements, (T, ...)."""

    def __init__(self, params: dict, init, monitor: Examples, trials: int):
        self.p = params
        self.n = monitor.keys.shape[-2]
        self.steps = int(params["steps"])
        self.noise = float(params["query_noise"])
        self.w = initial_weights(init, params["scale"])
        self.opt = Optimiser(params["optimiser"], params["lr"], self.w)
        self.evals = set(evaluation_steps(self.steps))
        self.monitor = monitor
        self.diverged_step = np.full(trials, np.inf)
        self.losses: dict[int, np.ndarray] = {}
        first = attention(*self.w, monitor, self.noise, grad=True)
        self.init = {
            "init_entropy": first["entropy"].mean(axis=-1),
            "init_grad_logits": np.sqrt(first["grad_logits_sq"].mean(axis=-1)),
            "init_grad_qk": np.sqrt(np.sum(first["gq"] ** 2, axis=(1, 2)) + np.sum(first["gk"] ** 2, axis=(1, 2))),
        }
        self.losses[0] = first["loss"].mean(axis=-1) / chance_loss(self.n)

    def step(self, ex: Examples, step: int) -> None:
        with np.errstate(all="ignore"):  # diverging trials overflow; they are caught below
            out = attention(*self.w, ex, self.noise, grad=True)
            self.opt.update(self.w, [out["gq"], out["gk"], out["gv"]], step)
            bad = not_finite(self.w)
            if step in self.evals:
                loss = attention(*self.w, self.monitor, self.noise, grad=False)["loss"].mean(axis=-1) / chance_loss(self.n)
                bad |= ~(loss <= DIVERGED_LOSS)  # also NaN
                self.losses[step] = loss
            self._mark(bad, step)
            if step in self.evals:
                self.losses[step] = np.where(np.isfinite(self.diverged_step), np.inf, self.losses[step])

    def _mark(self, bad: np.ndarray, step: int) -> None:
        """Record newly diverged trials and reset all diverged trials' state to 0 (no NaN spreads)."""
        if not np.any(bad):
            return
        new = bad & ~np.isfinite(self.diverged_step)
        self.diverged_step[new] = step
        self.opt.reset(self.w, bad)

    def finish(self, final: Examples) -> dict[str, np.ndarray]:
        out = dict(self.init)
        out["init_loss"] = self.losses[0]
        for j, step in enumerate(checkpoint_steps(self.steps)):
            out[f"loss_ckpt_{j}"] = self.losses[step]
        out["steps_to_threshold"] = first_reached(self.losses, float(self.p["threshold"]), self.diverged_step.size)
        diverged = np.isfinite(self.diverged_step)
        with np.errstate(all="ignore"):
            last = attention(*self.w, final, self.noise, grad=False)
        out["final_loss"] = np.where(diverged, np.inf, last["loss"].mean(axis=-1) / chance_loss(self.n))
        out["final_accuracy"] = np.where(diverged, 0.0, last["correct"].mean(axis=-1))
        out["final_entropy"] = np.where(diverged, np.nan, last["entropy"].mean(axis=-1))
        out["diverged"] = diverged.astype(np.float64)
        out["diverged_step"] = self.diverged_step.copy()
        return {name: np.asarray(out[name], dtype=np.float64) for name in METRICS}


def simulate_block(rng: np.random.Generator, trials: int, points: Sequence[Mapping]) -> list[dict[str, np.ndarray]]:
    """Kernel contract: per point, metric -> (trials,) float64 (see METRICS)."""
    return simulate(rng, trials, points)


def simulate(rng: np.random.Generator, trials: int, points: Sequence[Mapping], record: bool = False):
    """Train `trials` independent runs per point; the points share the block's draws (all must have
    the same n, d, batch). With `record`, also return the `Draws` (small sizes only: tests)."""
    pts = block_points(points, resolved, validate, STREAM_PARAMS)
    n, d, batch = (int(pts[0][k]) for k in STREAM_PARAMS)
    monitor = draw_examples(rng, trials, EVAL_EXAMPLES, n, d)
    final = draw_examples(rng, trials, EVAL_EXAMPLES, n, d)
    init = tuple(standard_normal(rng, (trials, d, d)).astype(np.float64) for _ in range(3))
    runs = [Run(p, init, monitor, trials) for p in pts]
    batches = [] if record else None
    for step in range(1, max(run.steps for run in runs) + 1):
        ex = draw_examples(rng, trials, batch, n, d)
        if record:
            batches.append(ex)
        for run in runs:
            if step <= run.steps:
                run.step(ex, step)
    results = [run.finish(final) for run in runs]
    if record:
        return results, Draws(monitor, final, init, batches)
    return results
