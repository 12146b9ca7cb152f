"""Contrastive (InfoNCE) training of a linear encoder across temperatures, many runs at once.

Tests the claim that at tau = 1 the entropy of the cosine-logit softmax cannot fall below
log n - g(1) (g(1) = 0.4745 as n -> inf), so too little information is obtained, which is why
contrastive learning shrinks tau. A trial is one complete training run with its own latent
classes, embedding, initial weights and training stream; the trials of a block are trained
together, stacked on a leading axis (T).

Data (per trial): C class points mu_c uniform on the unit sphere in R^k and a random embedding
A (D x k, orthonormal columns, Haar: QR of a Gaussian matrix with the signs of R's diagonal
fixed). An example has a class c, uniform on 1..C, and two views
x = A mu_c + (view_noise / sqrt(D)) eps, eps ~ N(0, I_D) independent per view (the noise has
norm ~ view_noise, the signal norm 1). The two views of an example form the positive pair.
There is nothing example-specific besides the class: views of two examples of the same class
have the same law as the two views of one example.

Model: z = W x / ||W x||, W (d_out x D) initialised N(0, 1/D). Batch of n examples, anchors
z_a = view 1, candidates z'_b = view 2, logits S_ab = z_a . z'_b / tau; symmetric InfoNCE
L = (1/2n) sum_a [lse_b S_ab - S_aa] + (1/2n) sum_b [lse_a S_ab - S_bb]
(rows: anchors against candidates; columns: the same with the views' roles swapped).
Gradients (hand-written): dL/dS = ((P_row - I) + (P_col - I)) / (2n), P_row the row softmax and
P_col the column softmax; dz_a = sum_b dS_ab z'_b / tau, dz'_b = sum_a dS_ab z_a / tau;
through the normalisation dy = (dz - (dz . z) z) / ||y||; dW = sum over both views of dy^T x.

Measured (per trial): the batch softmax entropy, mean over anchors of H(P_row[a]), for every
training batch (its minimum over training) and on held-out batches; the held-out loss; the
alignment E||z - z'||^2 over positive pairs and the uniformity log E exp(-2 ||z_a - z_b||^2) over
pairs of distinct examples of a batch (view 1) (Wang & Isola 2020); the accuracy of a
nearest-class-mean probe (class means of PROBE_PER_CLASS embedded views per class, cosine
nearest, tested on as many fresh views per class). The floors are in `theory`.

Draws per block, in this order, from `rng`: the class points (T, C, k), the embedding's Gaussian
(T, D, k), the monitor batches (labels (T, EVAL_BATCHES, n) by rng.integers, noise (T, EVAL_BATCHES,
2, n, D)), the final held-out batches (likewise), the probe noise (T, 2, PROBE_PER_CLASS C, D),
the initial weights (T, d_out, D), then per step the labels (T, n) and noise (T, 2, n, D). Normals
are float32 Box-Muller (`attnsim.kernels.sampling`), used in float64. Only n, classes,
latent_dim, input_dim and embed_dim shape the draws; tau, optimiser, lr, steps and view_noise do
not (common random numbers; a short run is the start of a longer one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from attnsim.errors import ConfigError
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
    not_finite,
)
from attnsim.theory.entropy import asymptotic_gap, exact_gap

EVAL_BATCHES = 4  # held-out batches of n examples in the monitor set and in the final set
PROBE_PER_CLASS = 10  # probe views per class for the class means, and as many for testing
DEFAULTS = {"classes": 8, "latent_dim": 8, "input_dim": 64, "embed_dim": 16, "view_noise": 1.0}
STREAM_PARAMS = ("n", "classes", "latent_dim", "input_dim", "embed_dim")

METRICS = {
    "init_loss": "symmetric InfoNCE loss (nats) at initialisation, mean over the monitor batches",
    "init_entropy": "batch softmax entropy (nats, mean over anchors) at initialisation on the monitor batches",
    **{f"loss_ckpt_{j}": f"monitor loss (nats) after step round(steps^({j}/7)); +inf once diverged" for j in range(CHECKPOINTS)},
    "entropy_min": "minimum over training steps of the training batch's softmax entropy (mean over anchors, before the step's update); NaN if diverged",
    "final_loss": "InfoNCE loss (nats) on the fresh held-out batches after training; +inf if diverged",
    "final_entropy": "batch softmax entropy (nats, mean over anchors) on the held-out batches after training; NaN if diverged",
    "alignment": "E ||z - z'||^2 over held-out positive pairs (0 = perfectly aligned, max 4); NaN if diverged",
    "uniformity": "log E exp(-2 ||z_a - z_b||^2) over pairs of distinct held-out examples of a batch (-8 .. 0, lower = more uniform); NaN if diverged",
    "probe_accuracy": "held-out accuracy of the nearest-class-mean probe on the final embeddings (chance 1/C); 0 if diverged",
    "init_probe_accuracy": "the same probe on the initial (random) encoder",
    "diverged": "1 if the weights or a monitor loss became NaN/inf during training, else 0",
    "diverged_step": "the step whose update made the weights (or whose monitor loss) non-finite; +inf if never",
}


# --------------------------------------------------------------------------- validation and theory


def resolved(params: Mapping) -> dict:
    return {**DEFAULTS, **params}


def validate(params: Mapping) -> None:
    """Raise ConfigError (message starts with the offending key) for parameters the kernel cannot run."""
    p = resolved(params)
    check_integer(p, "n", 2, "examples per batch")
    check_integer(p, "classes", 2, "classes")
    if p["classes"] > p["n"]:
        raise ConfigError(f"classes: more classes ({p['classes']}) than examples per batch (n = {p['n']})")
    check_integer(p, "latent_dim", 2, "latent dimension(s)")
    check_integer(p, "input_dim", p["latent_dim"], "input dimension(s) (input_dim >= latent_dim)")
    check_integer(p, "embed_dim", 2, "embedding dimension(s)")
    check_training(p)
    check_number(p, "tau")
    check_number(p, "view_noise", positive=False)


def _binomial_pmf(trials: int, prob: float) -> np.ndarray:
    m = np.arange(trials + 1)
    log_comb = np.array([math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1) for k in m])
    return np.exp(log_comb + m * math.log(prob) + (trials - m) * math.log1p(-prob))


def loss_floor(n: int, classes: int, tau: float) -> float:
    """Lower bound on the expected symmetric InfoNCE loss for this data (docs/science.md §6.5):
    E_M log(1 + M + (n - 1 - M) exp(-C / ((C - 1) tau))), M ~ Binomial(n - 1, 1/C) the other
    examples of the anchor's class. Attained by perfectly aligned views, each class collapsed to a
    vertex of a regular simplex (needs C <= embed_dim + 1; otherwise a bound not attained)."""
    pmf = _binomial_pmf(n - 1, 1.0 / classes)
    m = np.arange(n)
    r = math.exp(-classes / ((classes - 1) * tau))
    return float(pmf @ np.log(1 + m + (n - 1 - m) * r))


def ideal_entropy(n: int, classes: int, tau: float) -> float:
    """Mean batch softmax entropy of the encoder attaining `loss_floor` (weights 1 on the 1 + M
    same-class candidates, r = exp(-C / ((C - 1) tau)) on the others)."""
    pmf = _binomial_pmf(n - 1, 1.0 / classes)
    m = np.arange(n)
    log_r = -classes / ((classes - 1) * tau)
    r = math.exp(log_r)
    z = 1 + m + (n - 1 - m) * r
    return float(pmf @ (np.log(z) - (n - 1 - m) * r * log_r / z))


def instance_loss_floor(n: int, tau: float) -> float:
    """The floor without classes (all examples distinct): log(1 + (n - 1) e^{(c - 1)/tau}), c = -1/(n - 1)."""
    return math.log1p((n - 1) * math.exp(-n / ((n - 1) * tau)))


def theory(params: Mapping) -> dict[str, float]:
    p = resolved(params)
    n, classes, tau = int(p["n"]), int(p["classes"]), float(p["tau"])
    gap = float(exact_gap(n, tau))
    return {
        "log_n": math.log(n),
        "entropy_gap": gap,  # exact finite-n worst case of log n - H for cosine logits / tau
        "entropy_gap_asymptotic": float(asymptotic_gap(tau)),
        "entropy_floor": math.log(n) - gap,
        "loss_floor": loss_floor(n, classes, tau),
        "ideal_entropy": ideal_entropy(n, classes, tau),
        "instance_loss_floor": instance_loss_floor(n, tau),
        "probe_chance": 1.0 / classes,
        "simplex_attainable": float(classes <= int(p["embed_dim"]) + 1),
    }


def bytes_per_trial(n: int, input_dim: int, embed_dim: int, classes: int) -> int:
    """Peak working set per trial (one point stepped at a time): the monitor and final batches
    (float64 noise, 2 x EVAL_BATCHES x 2 n D), the probe noise, a training batch (float32 draws and
    float64 inputs), the activations of an evaluation pass (inputs, embeddings, 4 n x n matrices
    per batch) and the weights with Adam's moments. Each further point adds 3 d_out D doubles."""
    D, d = input_dim, embed_dim
    held = 8 * (2 * EVAL_BATCHES * 2 * n * D + 2 * PROBE_PER_CLASS * classes * D)
    batch = 12 * 2 * n * D
    activations = 8 * EVAL_BATCHES * (2 * n * D + 4 * n * d + 5 * n * n)
    return held + batch + activations + 8 * 3 * d * D + 8 * classes * D + 256


# --------------------------------------------------------------------------- data


@dataclass
class World:
    """A trial's fixed structure: class points embedded in input space, P[c] = A mu_c (T, C, D)."""

    points: np.ndarray


@dataclass
class Batches:
    """Examples (T, E, n): labels (int), view noise (T, E, 2, n, D) float64 standard normal."""

    labels: np.ndarray
    noise: np.ndarray

    def inputs(self, world: World, view_noise: float) -> tuple[np.ndarray, np.ndarray]:
        """The two views (T, E, n, D) each."""
        T, E, n = self.labels.shape
        D = world.points.shape[-1]
        signal = np.take_along_axis(world.points, self.labels.reshape(T, E * n, 1), axis=1).reshape(T, E, n, D)
        c = float(view_noise) / math.sqrt(D)
        return signal + c * self.noise[:, :, 0], signal + c * self.noise[:, :, 1]

    def trial(self, t: int) -> Batches:
        return Batches(self.labels[t : t + 1], self.noise[t : t + 1])


def draw_world(rng: np.random.Generator, trials: int, classes: int, latent_dim: int, input_dim: int) -> World:
    mu = standard_normal(rng, (trials, classes, latent_dim)).astype(np.float64)
    mu /= np.sqrt(np.einsum("tck,tck->tc", mu, mu))[..., None]
    gauss = standard_normal(rng, (trials, input_dim, latent_dim)).astype(np.float64)
    q, r = np.linalg.qr(gauss)  # (T, D, k), (T, k, k)
    q *= np.sign(np.diagonal(r, axis1=-2, axis2=-1))[:, None, :]  # Haar: R with a positive diagonal
    return World(mu @ np.swapaxes(q, -1, -2))  # (T, C, D), unit rows


def draw_batches(rng: np.random.Generator, trials: int, batches: int, n: int, classes: int, input_dim: int) -> Batches:
    labels = rng.integers(0, classes, size=(trials, batches, n))
    noise = standard_normal(rng, (trials, batches, 2, n, input_dim)).astype(np.float64)
    return Batches(labels, noise)


# --------------------------------------------------------------------------- forward and backward


def _t(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _embed(w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z = W x / ||W x|| for x (T, E, n, D), W (T, d, D): returns z (T, E, n, d) and ||W x|| (T, E, n)."""
    T, E, n, D = x.shape
    y = (x.reshape(T, E * n, D) @ _t(w)).reshape(T, E, n, -1)
    sq = np.einsum("...d,...d->...", y, y)
    if not np.all((sq > 1e-280) & (sq < 1e280)):  # rare: huge or tiny weights; rescale as np.linalg.norm does
        big = np.max(np.abs(y), axis=-1, keepdims=True)
        with np.errstate(all="ignore"):
            norm = big[..., 0] * np.sqrt(np.einsum("...d,...d->...", y / big, y / big))
    else:
        norm = np.sqrt(sq)
    return y / norm[..., None], norm


def _softmax(s: np.ndarray, axis: int, floor: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights, log-sum-exp and entropy of softmax(s) along `axis` (-1 rows, -2 columns).

    e = exp(s - max) (floored at EXP_FLOOR when `floor`: only needed for gaps beyond 700, i.e.
    tau < 1/350), Z = sum e, H = log Z + max - sum p s: with |s| <= 1/tau the absolute rounding
    of H is ~1e-16 / tau, far below anything measured."""
    top = s.max(axis=axis, keepdims=True)
    e = np.subtract(s, top)
    if floor:
        np.maximum(e, EXP_FLOOR, out=e)
    np.exp(e, out=e)
    total = e.sum(axis=axis, keepdims=True)
    e /= total
    log_total = np.log(total)
    mean_s = np.einsum("...ij,...ij->...j" if axis == -2 else "...ij,...ij->...i", e, s)
    lse = np.squeeze(top + log_total, axis)
    return e, lse, lse - mean_s


def infonce(w: np.ndarray, x1: np.ndarray, x2: np.ndarray, tau: float, grad: bool = True, stats: bool = True) -> dict[str, np.ndarray]:
    """Symmetric InfoNCE of the encoder W (T, d, D) on batches of views x1, x2 (T, E, n, D).

    Returns per batch (T, E): `loss`, `entropy` (mean over anchors of the row-softmax entropy);
    with `stats`, also `alignment` (mean ||z - z'||^2) per batch and `uniformity` (T,) over all
    batches' pairs of distinct examples; with `grad`, `gw` (T, d, D): the gradient of the mean
    loss over the E batches.
    """
    T, E, n, D = x1.shape
    z1, norm1 = _embed(w, x1)
    z2, norm2 = _embed(w, x2)
    s = z1 @ _t(z2)  # (T, E, n, n) cosines
    diag = np.diagonal(s, axis1=-2, axis2=-1).copy()  # positive-pair cosines (T, E, n)
    s *= 1.0 / tau
    floor = 2.0 / tau > -EXP_FLOOR
    p_row, lse_row, h_row = _softmax(s, -1, floor)
    p_col, lse_col, _ = _softmax(s, -2, floor)
    out = {
        "loss": 0.5 * (lse_row.mean(axis=-1) + lse_col.mean(axis=-1)) - diag.mean(axis=-1) / tau,
        "entropy": np.clip(h_row, 0.0, math.log(n)).mean(axis=-1),
    }
    if stats:
        out["alignment"] = (2.0 - 2.0 * diag).mean(axis=-1)
        gram = z1 @ _t(z1)  # cosines between the examples of a batch (view 1)
        off = ~np.eye(n, dtype=bool)
        kernel = np.exp(-4.0 + 4.0 * gram[..., off])  # exp(-2 ||z_a - z_b||^2), ||.||^2 = 2 - 2 cos
        out["uniformity"] = np.log(kernel.reshape(T, -1).mean(axis=-1))
    if not grad:
        return out
    ds = np.add(p_row, p_col, out=p_row)  # dL/dS = (P_row + P_col - 2 I) / (2 n E)
    np.einsum("...ii->...i", ds)[...] -= 2.0
    ds *= 1.0 / (2.0 * n * E * tau)  # with the 1/tau of dS/dz folded in
    dz1 = ds @ z2
    dz2 = _t(ds) @ z1
    dz1 -= np.einsum("...d,...d->...", dz1, z1)[..., None] * z1
    dz1 /= norm1[..., None]  # dy1
    dz2 -= np.einsum("...d,...d->...", dz2, z2)[..., None] * z2
    dz2 /= norm2[..., None]  # dy2
    d = w.shape[1]
    out["gw"] = _t(dz1.reshape(T, E * n, d)) @ x1.reshape(T, E * n, D) + _t(dz2.reshape(T, E * n, d)) @ x2.reshape(T, E * n, D)
    return out


def probe_accuracy(w: np.ndarray, world: World, probe_noise: np.ndarray, view_noise: float) -> np.ndarray:
    """Nearest-class-mean probe: class means of the embedded fit views, cosine-nearest class of the
    embedded test views; (T,) accuracy. probe_noise (T, 2, PROBE_PER_CLASS * C, D), class-major."""
    T, C, D = world.points.shape
    per = probe_noise.shape[2] // C
    signal = np.repeat(world.points, per, axis=1)  # (T, per C, D), class-major
    x = signal[:, None] + (float(view_noise) / math.sqrt(D)) * probe_noise  # (T, 2, per C, D)
    z, _ = _embed(w, x)
    means = z[:, 0].reshape(T, C, per, -1).mean(axis=2)  # (T, C, d)
    scores = z[:, 1] @ _t(means)  # (T, per C, C)
    scores /= np.sqrt(np.einsum("tcd,tcd->tc", means, means))[:, None, :]  # cosines to the means
    labels = np.repeat(np.arange(C), per)
    return (np.argmax(scores, axis=-1) == labels).mean(axis=-1)


# --------------------------------------------------------------------------- training


@dataclass
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    world: World
    monitor: Batches
    final: Batches
    probe: np.ndarray
    init: np.ndarray  # (T, d, D) standard normals; W = init / sqrt(D)
    batches: list[Batches]


class Run:
    """One grid point's runs of a block."""

    def __init__(self, params: dict, world: World, init: np.ndarray, monitor: Batches, probe: np.ndarray):
        self.p = params
        self.world = world
        self.steps = int(params["steps"])
        self.tau = float(params["tau"])
        self.noise = float(params["view_noise"])
        self.w = [init / math.sqrt(init.shape[-1])]
        self.opt = Optimiser(params["optimiser"], params["lr"], self.w)
        self.evals = set(evaluation_steps(self.steps))
        self.monitor = monitor.inputs(world, self.noise)
        trials = init.shape[0]
        self.diverged_step = np.full(trials, np.inf)
        self.entropy_min = np.full(trials, np.inf)
        first = infonce(self.w[0], *self.monitor, self.tau, grad=False, stats=False)
        self.init = {
            "init_loss": first["loss"].mean(axis=-1),
            "init_entropy": first["entropy"].mean(axis=-1),
            "init_probe_accuracy": probe_accuracy(self.w[0], world, probe, self.noise),
        }
        self.losses = {0: self.init["init_loss"]}

    def step(self, batch: Batches, step: int) -> None:
        with np.errstate(all="ignore"):  # diverging trials overflow; they are caught below
            out = infonce(self.w[0], *batch.inputs(self.world, self.noise), self.tau, grad=True, stats=False)
            np.fmin(self.entropy_min, out["entropy"][:, 0], out=self.entropy_min)  # fmin: NaN-safe
            self.opt.update(self.w, [out["gw"]], step)
            bad = not_finite(self.w)
            if step in self.evals:
                loss = infonce(self.w[0], *self.monitor, self.tau, grad=False, stats=False)["loss"].mean(axis=-1)
                bad |= ~np.isfinite(loss)
                self.losses[step] = loss
        new = bad & ~np.isfinite(self.diverged_step)
        self.diverged_step[new] = step
        if np.any(bad):
            self.opt.reset(self.w, bad)
        if step in self.evals:
            self.losses[step] = np.where(np.isfinite(self.diverged_step), np.inf, self.losses[step])

    def finish(self, final: Batches, probe: np.ndarray) -> dict[str, np.ndarray]:
        out = dict(self.init)
        for j, step in enumerate(checkpoint_steps(self.steps)):
            out[f"loss_ckpt_{j}"] = self.losses[step]
        diverged = np.isfinite(self.diverged_step)
        with np.errstate(all="ignore"):
            last = infonce(self.w[0], *final.inputs(self.world, self.noise), self.tau, grad=False)
            probe_acc = probe_accuracy(self.w[0], self.world, probe, self.noise)
        out["entropy_min"] = np.where(diverged, np.nan, self.entropy_min)
        out["final_loss"] = np.where(diverged, np.inf, last["loss"].mean(axis=-1))
        out["final_entropy"] = np.where(diverged, np.nan, last["entropy"].mean(axis=-1))
        out["alignment"] = np.where(diverged, np.nan, last["alignment"].mean(axis=-1))
        out["uniformity"] = np.where(diverged, np.nan, last["uniformity"])
        out["probe_accuracy"] = np.where(diverged, 0.0, probe_acc)
        out["diverged"] = diverged.astype(np.float64)
        out["diverged_step"] = self.diverged_step.copy()
        return {name: np.asarray(out[name], dtype=np.float64) for name in METRICS}


def simulate_block(rng: np.random.Generator, trials: int, points: Sequence[Mapping]) -> list[dict[str, np.ndarray]]:
    """Kernel contract: per point, metric -> (trials,) float64 (see METRICS)."""
    return simulate(rng, trials, points)


def simulate(rng: np.random.Generator, trials: int, points: Sequence[Mapping], record: bool = False):
    """Train `trials` independent runs per point; the points share the block's draws (all must have
    the same STREAM_PARAMS). With `record`, also return the `Draws` (small sizes only: tests)."""
    pts = block_points(points, resolved, validate, STREAM_PARAMS)
    n, classes, latent_dim, input_dim, embed_dim = (int(pts[0][k]) for k in STREAM_PARAMS)
    world = draw_world(rng, trials, classes, latent_dim, input_dim)
    monitor = draw_batches(rng, trials, EVAL_BATCHES, n, classes, input_dim)
    final = draw_batches(rng, trials, EVAL_BATCHES, n, classes, input_dim)
    probe = standard_normal(rng, (trials, 2, PROBE_PER_CLASS * classes, input_dim)).astype(np.float64)
    init = standard_normal(rng, (trials, embed_dim, input_dim)).astype(np.float64)
    runs = [Run(p, world, init, monitor, probe) for p in pts]
    batches = [] if record else None
    for step in range(1, max(run.steps for run in runs) + 1):
        batch = draw_batches(rng, trials, 1, n, classes, input_dim)
        if record:
            batches.append(batch)
        for run in runs:
            if step <= run.steps:
                run.step(batch, step)
    results = [run.finish(final, probe) for run in runs]
    if record:
        return results, Draws(world, monitor, final, probe, init, batches)
    return results
