"""Training one attention head (softmax, or another normaliser) on associative recall, many
independent runs at once.

Tests the claim that with very large initial logits the attention weights are one-hot and
training cannot start (vanishing gradients), as an escape time (docs/science.md §9): how many
steps a run needs to reach the loss threshold, right-censored at its budget. A trial is one
complete training run from its own initial weights and its own stream of training examples; the
trials of a block are trained together, stacked on a leading axis (T), one batched array
program per step.

Task (per example): n key/value pairs, keys k_i and values v_i i.i.d. uniform on the unit sphere
in R^d, and a query q = k_0 + (query_noise / sqrt(d)) xi, xi ~ N(0, I_d). The target is v_0. The
target is always pair 0: the model has no positions and is symmetric in the pairs, so this has
the law of a uniformly random target and saves drawing one.

Model: u = q W_q, a = u W_k^T / sqrt(d), s_i = k_i . a (= q W_q (k_i W_k)^T / sqrt(d)),
p = softmax(s), r = sum_i p_i v_i, o = r W_v; loss l = ||o - v_0||^2 per example, mean over the
minibatch. Initialisation: W_q, W_k entries N(0, scale^2) (logit std ~ scale^2, as in the
`init_gradient` kind), W_v entries N(0, 1/d) whatever the scale, so the scale acts on the logits
only. `values = identity`: W_v = I, fixed (o = r). `logits = qk_norm`: the logits are
s_i = g (u / ||u||) . (k_i W_k / ||k_i W_k||), a cosine times a trained gain g starting at
sqrt(d) (QK-norm, as LayerNorm'd queries and keys without their gains give; |s_i| <= |g|).

Losses are reported as a fraction of chance: the best prediction that ignores the query is the
mean of the example's values (E[v_0 | values] = mean_i v_i), whose loss is exactly 1 - 1/n (unit
values, E v_i . v_j = 0 for i != j); uniform attention with W_v = I attains it. Perfect is 0. The
Bayes loss is positive but small: unit keys make the exact posterior over the target pair
softmax((d / query_noise^2) q . k_i), which this model can represent exactly
(W_q W_k^T = (d^{3/2} / query_noise^2) I, W_v = I); see docs/science.md §6.2 for its size.

`normaliser` (default softmax): p = softmax(s) above is replaced by the map of
`attnsim.subjects.normalisers` (sigmoid, ssmax, soft-capping, a sink, softpick, sparsemax,
1.5-entmax, ReLU; docs/science.md §12, §12.7), o = sum_i p_i v_i with no renormalisation (sigmoid,
softpick and ReLU weights need not sum to one), and the backward's logit gradient is its
vector-Jacobian product ds = (dp/ds)^T dp. The softmax path below is untouched by this (its rows
are bit-identical to those before the axis). Entropies of the other maps are of p / sum p, over
the examples whose weights have mass (`mean_entropy`); the Zhai bound is softmax's only (NaN).
The normaliser does not shape the draws: every normaliser trains on the same data from the same
initial weights.

Hand-written gradients (per example, g = dl/do = 2 (o - v_0)):
  dW_v = r^T g,  dr = g W_v^T,  dp_i = v_i . dr,
  ds_i = p_i (c_i - sum_j p_j c_j) with c_i = dp_i - dp_m, m the top key (the centring is exact
         algebra; it makes ds_m = -p_m sum_{j != m} p_j c_j accurate when p is one-hot instead of
         a rounding residue of 1e-16),
  da = sum_i ds_i k_i,  dW_k = da^T u / sqrt(d),  du = da W_k / sqrt(d),  dW_q = q^T du.
With QK-norm (c_i the cosines, m_i = ||k_i W_k||, nu = ||u||, u^ = u / nu, k^_i = k_i W_k / m_i):
  dg = sum_i ds_i c_i,  du = g (sum_i ds_i k^_i - (sum_i ds_i c_i) u^) / nu,  dW_q = q^T du,
  dW_k = sum_i k_i^T g ds_i (u^ - c_i k^_i) / m_i.
The weights use the shared floor of `attnsim.kernels.softmax` (exp(-gap) >= e^-700, ~1e-304):
it avoids slow subnormals and changes no sum; a weight that truly is below 1e-304 is 0 for all
purposes, so the attention gradient of a one-hot start is (numerically) exactly 0.

Draws per block, in this order, all from `rng` (float32 Box-Muller, `attnsim.kernels.sampling`):
the monitor set (EVAL_EXAMPLES examples: keys, values, query noise), the final held-out set
(likewise), the initial weights Z_q, Z_k, Z_v (T, d, d) standard normals (W_q = scale Z_q,
W_k = scale Z_k, W_v = Z_v / sqrt(d)), then per step a fresh minibatch of `batch` examples for
every trial of the block, drawn whether or not its runs still train (so a trial's data never
depends on when another stopped). Only n, d and batch shape the draws: every other parameter
scales or consumes the same numbers, so points that differ in them share data and initial
directions (common random numbers), a run of 100 steps is the first 100 steps of a run of 300,
and a run that stopped at the threshold is the run that did not stop, up to its stop.
`optimiser = randdir` (the control of normgd: steps of norm lr in random directions) draws
nothing from `rng`: trial t's directions come from its own stream,
SeedSequence(the block's entropy, spawn_key = (*the block's key, DIRECTION_KEY, t))
(`attnsim.kernels.training.direction_streams`), one standard normal per entry of W_q, W_k (W_v,
the gain) per step, so a randdir run shares its data and initial weights with the normgd runs.

Evaluations: the monitor loss and entropy are measured at step 0 (before training) and after the
steps of `evaluation_steps(steps, EVALS_PER_CHECKPOINT)` (a geometric grid: 16 per checkpoint
interval, a step of 7% per evaluation at 10^4 steps); checkpoint j (j = 0..7) is after step
round(steps^(j/7)) (round half up: j = 0 is after step 1, j = 7 after the last step). The escape
time is the first evaluation step whose monitor loss / chance is <= threshold. With
`stop = threshold` a run stops there: its weights are frozen, so its later checkpoints and its
held-out metrics are those of the weights at the stop, and the kernel spends nothing on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnsim.kernels.sampling import standard_normal
from attnsim.kernels.softmax import EXP_FLOOR
from attnsim.kernels.training import (
    CHECKPOINTS,
    RANDOM_DIRECTION,
    Optimiser,
    block_points,
    checkpoint_steps,
    direction_streams,
    evaluation_steps,
    not_finite,
    train,
)
from attnsim.kinds.base import Counts, Work
from attnsim.subjects import normalisers

EVAL_EXAMPLES = 64  # examples in the monitor set and in the final held-out set
EVALS_PER_CHECKPOINT = 16  # evaluation grid: round(steps^(j / 112)), j = 0..112
VALUES = ("trainable", "identity")
LOGITS = ("dot", "qk_norm")
STOPS = ("never", "threshold")
SOFTMAX = normalisers.SOFTMAX.name  # the kernel's own path (below); every other normaliser
# goes through its record (attnsim.subjects.normalisers)
DEFAULTS: dict[str, Any] = {
    "query_noise": 0.3,
    "batch": 32,
    "threshold": 0.1,
    "values": "trainable",
    "logits": "dot",
    "stop": "never",
    "normaliser": SOFTMAX,
}
# A run whose monitor loss exceeds this many times chance has diverged even if still finite (SGD
# with a large step size grows W_v geometrically: 1e120 x chance was seen while every weight was
# finite; such values would swamp any mean).
DIVERGED_LOSS = 1e6
COLLAPSED_ENTROPY = 0.1  # nats: one-hot by the project's rule (init_gradient, the claims)
# the parameters that shape the draws (batch defaults to DEFAULTS)
STREAM_PARAMS = ("n", "d", "batch")
# A run's working arrays keep only unfinished trials; they are compacted once the unfinished
# trials are at most this share of the rows held (a compaction copies the rows' monitor set).
COMPACT_BELOW = 0.75

METRICS = {
    "init_entropy": "entropy (nats) of the attention weights at initialisation, mean over the "
    "monitor set (of p / sum p for the normalisers whose weights need not sum to one, over the "
    "examples with mass: subjects.normalisers.mass_and_entropy)",
    "init_logit_std": "std over the n keys of the initial logits, RMS over the monitor set",
    "init_grad_logits": "RMS over the monitor set of ||dl/ds|| at initialisation: per-example "
    "gradient of the loss w.r.t. the n logits",
    "init_grad_qk": "||(dL/dW_q, dL/dW_k)||_F at initialisation, L the mean loss over the monitor "
    "set",
    "init_loss": "monitor-set loss at initialisation, as a fraction of chance (1 - 1/n)",
    **{
        f"loss_ckpt_{j}": f"monitor-set loss / chance after step round(steps^({j}/7)); +inf once "
        "diverged"
        for j in range(CHECKPOINTS)
    },
    **{
        f"entropy_ckpt_{j}": "monitor-set mean attention entropy (nats; of p / sum p, as "
        f"init_entropy) after step round(steps^({j}/7)); NaN once diverged"
        for j in range(CHECKPOINTS)
    },
    **{
        f"zhai_bound_ckpt_{j}": "mean over the monitor set of the entropy lower bound from the "
        f"logits' norm bound after step round(steps^({j}/7)) "
        "(docs/science.md §9.6); NaN once diverged, and for every normaliser but softmax (the "
        "bound is softmax's)"
        for j in range(CHECKPOINTS)
    },
    "zhai_margin_min": "smallest (entropy - bound) over the monitor examples, at initialisation, "
    "the checkpoints and the stop (>= 0 by construction); NaN for every normaliser but softmax",
    "steps_to_threshold": "first evaluation step (0 or in evaluation_steps) with monitor loss / "
    "chance <= threshold; +inf if never",
    "escape_step": "the escape time as a right-censored time: steps_to_threshold if the run "
    "escaped, else the step it stopped at (its budget, or its divergence)",
    "escaped": "1 if the run reached the threshold (escape_step is its time), 0 if censored",
    "collapse_step": "first evaluation step (0 or in evaluation_steps) with monitor mean entropy < "
    "0.1 nats; +inf if never",
    "final_loss": "loss / chance on the fresh held-out set after the last step (or at the stop); "
    "+inf if diverged",
    "final_accuracy": "share of held-out queries whose output o has its nearest value (max o.v_i, "
    "unit values) at the target; 0 if diverged",
    "final_entropy": "entropy (nats; of p / sum p, as init_entropy) of the attention weights "
    "after training, mean over the held-out set; NaN if diverged",
    "diverged": "1 if the weights became NaN/inf or a monitor loss NaN/inf or above DIVERGED_LOSS "
    "(1e6) x chance, else 0",
    "diverged_step": "the step whose update made the weights non-finite, or the evaluation step "
    "whose monitor loss was non-finite or above DIVERGED_LOSS x chance; +inf if "
    "never",
}


# ------------------------------------------------------------------- schedule and validation


def chance_loss(n: int) -> float:
    """E||mean_i v_i - v_0||^2 = 1 - 1/n for unit values: the best loss without using the query."""
    return 1.0 - 1.0 / n


def resolved(params: Mapping) -> dict:
    """The point's parameters with DEFAULTS filled in."""
    return {**DEFAULTS, **params}


def bytes_per_trial(n: int, d: int, batch: int = DEFAULTS["batch"]) -> int:
    """Peak working set per trial (one point being stepped): the two held-out sets (float64), a
    minibatch (float64 plus its float32 draws, and a gathered copy once runs stop), the
    activations of one evaluation pass over the monitor set (about 8 arrays of n and 10 of d per
    example, n d more with QK-norm) and the weights and Adam moments. Each further point in the
    block adds 9 d^2 doubles per trial."""
    example = 2 * n * d + d
    sets = 8 * (2 * EVAL_EXAMPLES * example + 2 * batch * example) + 4 * batch * example
    activations = 8 * EVAL_EXAMPLES * (8 * n + 10 * d + n * d)
    return sets + activations + 8 * 9 * d * d + 256


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
        return (
            self.keys[:, :, 0] * self.ikey[:, :, :1]
            + (float(query_noise) / math.sqrt(d)) * self.noise
        )

    def target(self) -> np.ndarray:
        return self.values[:, :, 0] * self.ival[:, :, :1]

    def unit_keys(self) -> np.ndarray:
        return self.keys * self.ikey[..., None]

    def unit_values(self) -> np.ndarray:
        return self.values * self.ival[..., None]

    def take(self, rows: np.ndarray) -> Examples:
        """The examples of the selected trials (indices on the leading axis)."""
        return Examples(
            *(x[rows] for x in (self.keys, self.values, self.ikey, self.ival, self.noise))
        )

    def trial(self, t: int) -> Examples:
        return Examples(
            *(x[t : t + 1] for x in (self.keys, self.values, self.ikey, self.ival, self.noise))
        )


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


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...d,...d->...", a, b)


def attention(
    wq,
    wk,
    wv,
    ex: Examples,
    query_noise: float,
    grad: bool = True,
    gain=None,
    correct: bool = True,
    normaliser: str = SOFTMAX,
) -> dict[str, np.ndarray]:
    """Forward (and backward) pass of the head for weights (T, d, d) on examples (T, E, ...);
    `wv` None is W_v = I; `gain` (T, 1, 1) switches QK-norm on (logits = gain x cosine);
    `normaliser` other than softmax maps the logits by its record's `weights` and
    back-propagates by its `vjp` (softmax keeps the centred path written here). The entropy of
    a non-softmax row is that of p / sum p, NaN where the mass is zero (`mass_and_entropy`).

    Returns per example (T, E): `loss` l = ||o - v_0||^2, `entropy`, `logits` (T, E, n), with
    `correct` also `correct` (1.0 where the nearest value to o is v_0); with `grad`,
    `grad_logits_sq`
    ||dl/ds||^2 per example and `gq`, `gk`, `gv` (T, d, d), `gg` (T, 1, 1) with QK-norm, the
    gradients of the mean loss over the E examples.
    """
    keys, values = ex.keys, ex.values
    trials, examples, n, d = keys.shape
    q = ex.queries(query_noise)
    root = math.sqrt(d)
    u = q @ wq  # (T, E, d)
    if gain is None:
        a = (u @ _t(wk)) / root  # (T, E, d): s_i = k_i . a
        s = (keys @ a[..., None])[..., 0] * ex.ikey  # (T, E, n)
    else:
        nu = np.sqrt(_dot(u, u))  # (T, E)
        uh = u / nu[..., None]
        # raw k_i W_k
        kw = (keys.reshape(trials, examples * n, d) @ wk).reshape(trials, examples, n, d)
        m = np.sqrt(_dot(kw, kw))  # (T, E, n): the unit key's norm cancels in the cosine
        kh = kw / m[..., None]
        cos = (kh @ uh[..., None])[..., 0]
        s = gain * cos  # gain (T, 1, 1)
    softmax = normaliser == SOFTMAX
    if softmax:
        top = np.argmax(s, axis=-1)[..., None]
        gap = np.take_along_axis(s, top, axis=-1) - s  # >= 0, exactly 0 at the top
        e = np.exp(np.maximum(-gap, EXP_FLOOR))
        total = e.sum(axis=-1)
        p = e / total[..., None]
        entropy = np.clip(np.log(total) + _dot(p, gap), 0.0, math.log(n))
    else:
        p = normalisers.get(normaliser).weights(s)
        entropy = normalisers.mass_and_entropy(p)[1]
    r = ((p * ex.ival)[..., None, :] @ values)[..., 0, :]  # (T, E, d) sum_i p_i v_i
    o = r if wv is None else r @ wv
    err = o - ex.target()
    out = {"loss": _dot(err, err), "entropy": entropy, "logits": s}
    if correct:
        scores = (values @ o[..., None])[..., 0] * ex.ival  # o . v_i
        out["correct"] = (np.argmax(scores, axis=-1) == 0).astype(np.float64)
        if not softmax:  # an all-zero output (ReLU, softpick: no weight) ties every key: wrong
            out["correct"] *= scores[..., 0] > scores[..., 1:].max(axis=-1)
    if not grad:
        return out
    g = 2.0 * err  # dl/do per example
    gr = g if wv is None else g @ _t(wv)
    gp = (values @ gr[..., None])[..., 0] * ex.ival  # (T, E, n) dl/dp_i = v_i . dr
    if softmax:
        c = gp - np.take_along_axis(gp, top, axis=-1)  # centred on the top key: c_top = 0 exactly
        ds = p * (c - _dot(p, c)[..., None])
    else:
        ds = normalisers.get(normaliser).vjp(s, gp)
    out["grad_logits_sq"] = _dot(ds, ds)
    scale = 1.0 / examples
    if wv is not None:
        out["gv"] = (_t(r) @ g) * scale
    if gain is None:
        da = ((ds * ex.ikey)[..., None, :] @ keys)[..., 0, :]  # (T, E, d) dl/da = sum_i ds_i k_i
        out["gk"] = (_t(da) @ u) * (scale / root)
        out["gq"] = (_t(q) @ (da @ wk)) * (scale / root)
        return out
    dsc = _dot(ds, cos)  # (T, E) sum_i ds_i c_i
    out["gg"] = (dsc.sum(axis=-1) * scale).reshape(trials, 1, 1)
    dk = (ds[..., None, :] @ kh)[..., 0, :]  # (T, E, d) sum_i ds_i k^_i
    du = gain * (dk - dsc[..., None] * uh) / nu[..., None]
    out["gq"] = (_t(q) @ du) * scale
    dkw = (gain * ds / m)[..., None] * (uh[..., None, :] - cos[..., None] * kh)  # (T, E, n, d)
    out["gk"] = (
        _t(keys.reshape(trials, examples * n, d)) @ dkw.reshape(trials, examples * n, d)
    ) * scale
    return out


def mean_entropy(per_example: np.ndarray) -> np.ndarray:
    """Mean entropy over the examples (last axis) whose weights have mass; NaN where none has. A
    ReLU or softpick row with no positive weight has no distribution (NaN entropy); softmax rows
    always have one, and then this is the plain mean."""
    missing = np.isnan(per_example)
    if not missing.any():
        return per_example.mean(axis=-1)
    count = (~missing).sum(axis=-1)
    total = np.where(missing, 0.0, per_example).sum(axis=-1)
    return np.divide(total, count, out=np.full(count.shape, np.nan), where=count > 0)


def two_level_entropy(gap: np.ndarray, n: int) -> np.ndarray:
    """Entropy of softmax over n logits, one of them `gap` above the n - 1 others:
    log(1 + (n-1) b) + gap (n-1) b / (1 + (n-1) b), b = e^-gap (the least entropy of any logit
    vector whose centred norm is gap sqrt((n-1)/n): Zhai et al. 2023)."""
    b = np.exp(-np.asarray(gap, dtype=np.float64))
    z = 1.0 + (n - 1) * b
    return np.log(z) + gap * (n - 1) * b / z


def entropy_bound(
    wq, wk, gain, key_norms: np.ndarray, query_norms: np.ndarray, n: int
) -> np.ndarray:
    """(T, E) lower bound on each monitor example's entropy from a bound R on the norm of its
    logit vector: R = ||W_q W_k^T||_2 / sqrt(d) ||K||_2 ||q|| (K the n x d unit keys), or with
    QK-norm R = |g| sqrt(n) (|s_i| <= |g|); the bound is `two_level_entropy(R sqrt(n/(n-1)))`."""
    if gain is None:
        d = wq.shape[-1]
        spectral = np.linalg.norm(wq @ _t(wk), ord=2, axis=(-2, -1)) / math.sqrt(d)  # (T,)
        radius = spectral[:, None] * key_norms * query_norms
    else:
        radius = np.abs(gain[:, 0, 0])[:, None] * math.sqrt(n) * np.ones_like(key_norms)
    return two_level_entropy(radius * math.sqrt(n / (n - 1)), n)


# --------------------------------------------------------------------------- training


@dataclass
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles), and
    each run's monitor losses per evaluation step (`history`)."""

    monitor: Examples
    final: Examples
    init: tuple[np.ndarray, np.ndarray, np.ndarray]  # Z_q, Z_k, Z_v (T, d, d) float64
    batches: list[Examples]  # one per step
    history: list[dict[int, np.ndarray]] = field(default_factory=list)


def initial_weights(init, params: Mapping) -> list[np.ndarray]:
    """The trained weights of a run, in the optimiser's order: W_q, W_k, then W_v if trainable,
    then the QK-norm gain (T, 1, 1) = sqrt(d)."""
    zq, zk, zv = init
    scale, d = float(params["scale"]), zq.shape[-1]
    w = [scale * zq, scale * zk]
    if params["values"] == "trainable":
        w.append(zv / math.sqrt(d))
    if params["logits"] == "qk_norm":
        w.append(np.full((zq.shape[0], 1, 1), math.sqrt(d)))
    return w


class Run:
    """One grid point's runs of a block. The working arrays (weights, optimiser state, monitor set)
    hold the rows `rows` of the block's trials, of which `live` are still training; a run that
    stops (escaped with `stop = threshold`, or diverged) keeps its weights in `saved`."""

    def __init__(self, params: dict, init, monitor: Examples, trials: int, directions=()):
        self.p = params
        self.n = monitor.keys.shape[-2]
        self.steps = int(params["steps"])
        self.noise = float(params["query_noise"])
        self.threshold = float(params["threshold"])
        self.stop = params["stop"] == "threshold"
        self.trainable_v = params["values"] == "trainable"
        self.qk = params["logits"] == "qk_norm"
        self.normaliser = params["normaliser"]
        self.w = initial_weights(init, params)
        self.saved = [x.copy() for x in self.w]
        self.opt = Optimiser(params["optimiser"], params["lr"], self.w, directions)
        self.evals = set(evaluation_steps(self.steps, EVALS_PER_CHECKPOINT))
        self.checkpoints = checkpoint_steps(self.steps)
        self.rows = np.arange(trials)
        self.live = np.ones(trials, dtype=bool)
        self.monitor = monitor
        self.key_norms = np.linalg.norm(monitor.unit_keys(), ord=2, axis=(-2, -1))  # (T, E)
        self.query_norms = np.sqrt(_dot(monitor.queries(self.noise), monitor.queries(self.noise)))
        chance = chance_loss(self.n)
        self.diverged_step = np.full(trials, np.inf)
        self.escape_step = np.full(trials, np.inf)
        self.collapse_step = np.full(trials, np.inf)
        self.margin = np.full(trials, np.inf)
        self.bound = np.full(trials, np.nan)
        self.losses: dict[int, np.ndarray] = {}
        self.ckpt: dict[int, dict[str, np.ndarray]] = {}
        first = attention(
            *self._model(self.w),
            monitor,
            self.noise,
            grad=True,
            gain=self._gain(self.w),
            correct=False,
            normaliser=self.normaliser,
        )
        s = first["logits"]
        self.init = {
            "init_entropy": mean_entropy(first["entropy"]),
            "init_logit_std": np.sqrt(np.var(s, axis=-1).mean(axis=-1)),
            "init_grad_logits": np.sqrt(first["grad_logits_sq"].mean(axis=-1)),
            "init_grad_qk": np.sqrt(
                np.sum(first["gq"] ** 2, axis=(1, 2)) + np.sum(first["gk"] ** 2, axis=(1, 2))
            ),
        }
        # (T,) the latest monitor loss of every trial
        self.loss = first["loss"].mean(axis=-1) / chance
        self.entropy = mean_entropy(first["entropy"])
        self._record(
            0, self.loss.copy(), self.entropy.copy(), np.ones(trials, dtype=bool), first["entropy"]
        )

    # the model's arguments from the optimiser's weight list
    def _model(self, w: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        return w[0], w[1], (w[2] if self.trainable_v else None)

    def _gain(self, w: list[np.ndarray]) -> np.ndarray | None:
        return w[-1] if self.qk else None

    @property
    def finished(self) -> bool:
        return not self.live.any()

    def _record(
        self, step: int, loss: np.ndarray, entropy: np.ndarray, ok: np.ndarray, per_example
    ) -> None:
        """Bookkeeping after an evaluation of the rows `self.rows`: `loss`, `entropy` (rows,) of the
        current weights, `ok` the rows that are live and did not diverge, `per_example` (rows, E)
        their entropies (for the bound). A stopped trial keeps its last values (frozen weights)."""
        rows = self.rows[ok]
        self.loss[rows] = loss[ok]
        self.entropy[rows] = entropy[ok]
        first = lambda times, hit: np.where(
            np.isinf(times[rows]) & hit[ok], float(step), times[rows]
        )
        escapes = ok & np.isinf(self.escape_step[self.rows]) & (loss <= self.threshold)  # (rows,)
        self.escape_step[rows] = first(self.escape_step, loss <= self.threshold)
        self.collapse_step[rows] = first(self.collapse_step, entropy < COLLAPSED_ENTROPY)
        # the bound (an SVD per trial; softmax's: NaN for the other normalisers) at the checkpoints,
        # and for a run that stops here (its frozen value)
        take = (
            ok
            if (step == 0 or step in self.checkpoints)
            else (escapes if self.stop else np.zeros_like(ok))
        )
        if np.any(take) and self.normaliser == SOFTMAX:
            wq, wk = self.w[:2]
            bound = entropy_bound(
                wq, wk, self._gain(self.w), self.key_norms, self.query_norms, self.n
            )
            at = self.rows[take]
            self.bound[at] = bound.mean(axis=-1)[take]
            self.margin[at] = np.fmin(self.margin[at], np.min(per_example - bound, axis=-1)[take])
        self.losses[step] = self._current()["loss"]
        if step in self.checkpoints:
            self.ckpt[step] = self._current()

    def _current(self) -> dict[str, np.ndarray]:
        """Every trial's latest monitor values: +inf loss, NaN entropy and bound once diverged."""
        gone = np.isfinite(self.diverged_step)
        return {
            "loss": np.where(gone, np.inf, self.loss),
            "entropy": np.where(gone, np.nan, self.entropy),
            "bound": np.where(gone, np.nan, self.bound),
        }

    def step(self, ex: Examples, step: int) -> None:
        batch = ex if self.rows.size == ex.keys.shape[0] else ex.take(self.rows)
        with np.errstate(all="ignore"):  # diverging trials overflow; they are caught below
            grads = self._gradients(batch) if self.opt.needs_gradient else None
            self.opt.update(self.w, grads, step)
            bad = not_finite(self.w) & self.live
            if step in self.evals:
                ev = attention(
                    *self._model(self.w),
                    self.monitor,
                    self.noise,
                    grad=False,
                    gain=self._gain(self.w),
                    correct=False,
                    normaliser=self.normaliser,
                )
                loss = ev["loss"].mean(axis=-1) / chance_loss(self.n)
                bad |= self.live & ~(loss <= DIVERGED_LOSS)  # also NaN
                self._diverge(bad, step)
                self._record(step, loss, mean_entropy(ev["entropy"]), self.live, ev["entropy"])
                if self.stop:
                    self._freeze(self.live & np.isfinite(self.escape_step[self.rows]))
            else:
                self._diverge(bad, step)
        if step == self.steps:
            self._freeze(self.live)
        elif 0 < self.live.sum() <= COMPACT_BELOW * self.rows.size:
            self._compact()

    def _gradients(self, batch: Examples) -> list[np.ndarray]:
        """The minibatch-mean gradients of the trained weights, in the optimiser's order."""
        out = attention(
            *self._model(self.w),
            batch,
            self.noise,
            grad=True,
            gain=self._gain(self.w),
            correct=False,
            normaliser=self.normaliser,
        )
        return (
            [out["gq"], out["gk"]]
            + ([out["gv"]] if self.trainable_v else [])
            + ([out["gg"]] if self.qk else [])
        )

    def _diverge(self, bad: np.ndarray, step: int) -> None:
        if not np.any(bad):
            return
        rows = self.rows[bad]
        self.diverged_step[rows] = step
        self.loss[rows] = np.inf
        self.entropy[rows] = np.nan
        self.live &= ~bad

    def _freeze(self, rows_mask: np.ndarray) -> None:
        """Stop the selected live rows: their weights are kept as they are now."""
        if not np.any(rows_mask):
            return
        for saved, w in zip(self.saved, self.w):
            saved[self.rows[rows_mask]] = w[rows_mask]
        self.live &= ~rows_mask

    def _compact(self) -> None:
        keep = self.live
        self.rows = self.rows[keep]
        self.w = [w[keep] for w in self.w]
        self.opt.keep(keep)
        self.monitor = self.monitor.take(np.flatnonzero(keep))
        self.key_norms, self.query_norms = self.key_norms[keep], self.query_norms[keep]
        self.live = np.ones(self.rows.size, dtype=bool)

    def finish(self, final: Examples) -> dict[str, np.ndarray]:
        # runs that never reached their last step (none: the loop runs to it)
        self._freeze(self.live)
        out = dict(self.init)
        out["init_loss"] = self.losses[0]
        for j, step in enumerate(self.checkpoints):
            # a checkpoint after every trial stopped is not evaluated: the frozen weights' last
            # values
            values = self.ckpt.get(step) or self._current()
            out[f"loss_ckpt_{j}"] = values["loss"]
            out[f"entropy_ckpt_{j}"] = values["entropy"]
            out[f"zhai_bound_ckpt_{j}"] = values["bound"]
        diverged = np.isfinite(self.diverged_step)
        escaped = np.isfinite(self.escape_step)
        out["zhai_margin_min"] = np.where(np.isinf(self.margin), np.nan, self.margin)
        out["steps_to_threshold"] = self.escape_step.copy()
        stopped = np.where(diverged, self.diverged_step, float(self.steps))
        out["escape_step"] = np.where(escaped, self.escape_step, stopped)
        out["escaped"] = escaped.astype(np.float64)
        out["collapse_step"] = self.collapse_step.copy()
        with np.errstate(all="ignore"):
            last = attention(
                *self._model(self.saved),
                final,
                self.noise,
                grad=False,
                gain=self._gain(self.saved),
                normaliser=self.normaliser,
            )
        out["final_loss"] = np.where(
            diverged, np.inf, last["loss"].mean(axis=-1) / chance_loss(self.n)
        )
        out["final_accuracy"] = np.where(diverged, 0.0, last["correct"].mean(axis=-1))
        out["final_entropy"] = np.where(diverged, np.nan, mean_entropy(last["entropy"]))
        out["diverged"] = diverged.astype(np.float64)
        out["diverged_step"] = self.diverged_step.copy()
        return {name: np.asarray(out[name], dtype=np.float64) for name in METRICS}


def simulate_block(
    rng: np.random.Generator, trials: int, points: Sequence[Mapping]
) -> list[dict[str, np.ndarray]]:
    """Kernel contract: per point, metric -> (trials,) float64 (see METRICS)."""
    return simulate(rng, trials, points)


def simulate(
    rng: np.random.Generator, trials: int, points: Sequence[Mapping], record: bool = False
):
    """Train `trials` independent runs per point; the points share the block's draws (all must have
    the same n, d, batch). With `record`, also return the `Draws` (small sizes only: tests)."""
    # every value was checked once, against the parameter declarations (config/schema.yaml)
    pts = block_points(points, resolved, None, STREAM_PARAMS)
    n, d, batch = (int(pts[0][k]) for k in STREAM_PARAMS)
    monitor = draw_examples(rng, trials, EVAL_EXAMPLES, n, d)
    final = draw_examples(rng, trials, EVAL_EXAMPLES, n, d)
    zq, zk, zv = (standard_normal(rng, (trials, d, d)).astype(np.float64) for _ in range(3))
    init = (zq, zk, zv)
    runs = [
        Run(
            p,
            init,
            monitor,
            trials,
            direction_streams(rng, trials) if p["optimiser"] == RANDOM_DIRECTION else (),
        )
        for p in pts
    ]
    batches: list[Examples] | None = [] if record else None
    train(runs, lambda: draw_examples(rng, trials, batch, n, d), batches)
    results = [run.finish(final) for run in runs]
    if batches is not None:
        return results, Draws(monitor, final, init, batches, [run.losses for run in runs])
    return results


def counts(n: int, d: int, batch: int, steps: int, logits: str = "dot") -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `train`: per step and stream
    the minibatch's float32 normals (keys, values, query noise); per step and point the forward
    and backward pass in float64 (three projections of n keys, the logits, the softmax and the
    output: ~3 x 2 (2 n d^2 + 3 n d + d^2) flops, n exps and ~20 passes over n d doubles per
    example) and the optimiser's update. Calls: ~400 call-equivalents per step and point (its
    ~100 array operations on small arrays, each a few times a bare call, whatever the block's
    trials; measured ~0.5 ms per step and point; QK-norm's normalisations and their gradients
    ~200 more), ~20 per step and stream. A run that stops at its threshold or diverges is charged
    its whole step budget (an upper bound)."""
    per_example = Counts(
        flops64=6 * (2 * n * d * d + 3 * n * d + d * d), exps=n, bytes=160 * n * d + 80 * n
    )
    return Work(
        own=(per_example * batch + Counts(bytes=8 * 30 * d * d)) * steps,
        shared=Counts(normals=batch * (2 * n * d + d), bytes=16 * batch * n * d) * steps,
        own_block=Counts(calls=(600 if logits == "qk_norm" else 400) * steps),
        shared_block=Counts(calls=20 * steps),
    )
