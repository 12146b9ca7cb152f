"""Contrastive (InfoNCE) training of a linear encoder across temperatures, many runs at once.

Tests the claim that at tau = 1 the entropy of the cosine-logit softmax cannot fall below
log n - g(1) (g(1) = 0.4745 as n -> inf), so too little information is obtained, which is why
contrastive learning shrinks tau (docs/science.md §6.4-§6.6, §10). A trial is one complete
training run with its own latent classes, embedding, initial weights and training stream; the
trials of a block are trained together, stacked on a leading axis (T).

Data (per trial): C class points mu_c uniform on the unit sphere in R^k and a random embedding
A (D x k, orthonormal columns, Haar: QR of a Gaussian matrix with the signs of R's diagonal
fixed). An example has a class c, uniform on 1..C; an *instance* of it is
A mu_c + (instance_noise / sqrt(D)) eta, eta ~ N(0, I_D), and a *view* of an instance adds
(view_noise / sqrt(D)) eps, eps ~ N(0, I_D), independent per view (each noise has norm ~ its
parameter, the signal norm 1). The positive pair of an example (`positives`):
- `class`: two views of two independent instances of the class (supervised-contrastive-like:
  the pair shares only the class; other examples of the class have the same law);
- `instance`: two views of one instance (SimCLR-like: the pair shares the instance's eta, and
  other instances of the same class are negatives like any other).
With instance_noise = 0 the two coincide.

Model: z = W x / ||W x||, W (d_out x D) initialised N(0, 1/D). Batch of n examples, anchors
z_a = view 1, candidates z'_b = view 2, logits S_ab = z_a . z'_b / tau; symmetric InfoNCE
L = (1/2n) sum_a [lse_b S_ab - S_aa] + (1/2n) sum_b [lse_a S_ab - S_bb]
(rows: anchors against candidates; columns: the same with the views' roles swapped).
Gradients (hand-written): dL/dS = ((P_row - I) + (P_col - I)) / (2n), P_row the row softmax and
P_col the column softmax; dz_a = sum_b dS_ab z'_b / tau, dz'_b = sum_a dS_ab z_a / tau;
through the normalisation dy = (dz - (dz . z) z) / ||y||; dW = sum over both views of dy^T x.
Learned temperature (`tau_mode` learned / learned_clamped, CLIP): t = log(1/tau) is a parameter
per run, initialised at log(1/tau), trained by the same optimiser and learning rate as W, with
dL/dt = sum_ab dL/dS_ab S_ab; `learned_clamped` sets t = min(t, log 100) (tau >= 0.01) after
every step.
Losses (`loss`): `infonce` (above); `debiased` (Chuang et al. 2020, with the labels known: the
anchor's same-class candidates other than its positive are left out of both softmaxes, so the
gradient never repels them; the intervention on the share of same-class negatives); `siglip`
(Zhai et al. 2023): per batch L = (1/n) sum_ab log(1 + exp(-y_ab (cos_ab / tau + b))), y_ab = 1 iff
a = b, with the bias b a parameter per run from `bias_init` (default SIGLIP_BIAS_INIT = -10;
the theory's start is `prior_bias`, -log(n - 1)), trained like t. Whatever
the loss, the entropy and the negative shares measured are those of the row softmax of cos / tau
(the weights whose floor is log n - g_n(tau)), and the losses stored are the run's own loss.

Measured (per trial): the batch softmax entropy, mean over anchors of H(P_row[a]), for every
training batch (its minimum over training, and its smallest excess over the floor
log n - g_n(tau_t)) and on held-out batches; the held-out loss; the alignment E||z - z'||^2 over
positive pairs and the uniformity log E exp(-2 ||z_a - z_b||^2) over pairs of distinct examples
of a batch (view 1) (Wang & Isola 2020); the share of each anchor's negative weight on its
hardest negative and on same-class negatives (Wang & Liu 2021); tau and the monitor entropy at
the checkpoints; three evaluations of the final encoder on held-out examples (one view each of
fresh instances, probe_per_class(C) per class to fit and as many to test): the nearest-class-mean
probe (cosine), 5-NN (cosine; votes tied broken by the larger summed cosine) and a least-squares
linear probe (ridge RIDGE * N on [z, 1], one-hot targets, argmax).

Draws per block, in this order, from `rng`: the class points (T, C, k), the embedding's Gaussian
(T, D, k), the monitor batches (labels (T, EVAL_BATCHES, n) by rng.integers, noise (T, EVAL_BATCHES,
2, n, D)), the final held-out batches (likewise), the probe noise (T, 2, probe_per_class(C) C, D),
the initial weights (T, d_out, D), then per step the labels (T, n) and noise (T, 2, n, D). The
instance noise comes from a child generator (`rng.spawn(1)`, which leaves rng's stream as it is)
in this order: monitor and final (T, EVAL_BATCHES, 2, n, D) each, probe (T, 2, probe_per_class(C) C,
D), then per step (T, 2, n, D) (row 0: the instance of view 1, and of both views with instance
positives); it is drawn only when a point of the block has instance_noise > 0 (it would be
multiplied by 0 otherwise). Normals are float32 Box-Muller (`attnsim.kernels.sampling`), used in
float64. Only n, classes, latent_dim, input_dim and embed_dim shape the draws; tau, tau_mode,
positives, instance_noise, optimiser, lr, steps and view_noise do not (common random numbers; a
short run is the start of a longer one).
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
    train,
)
from attnsim.kinds.base import Counts, Work
from attnsim.theory.entropy import asymptotic_gap, exact_gap

EVAL_BATCHES = 4  # held-out batches of n examples in the monitor set and in the final set
# probe examples per class to fit the evaluations (as many to test them): at least PROBE_PER_CLASS,
# and at least PROBE_EXAMPLES in all (the test set's binomial noise: sd <= 0.031 per run)
PROBE_PER_CLASS = 10
PROBE_EXAMPLES = 256
KNN = 5  # neighbours of the k-NN evaluation
EVAL_SLICE = 16  # trials whose k-NN cosine matrices are held at once
RIDGE = 1e-3  # ridge of the linear probe, per fitting example
TAU_CLAMP = 0.01  # CLIP's clamp: logit scale <= 100
POSITIVES = ("class", "instance")
TAU_MODES = ("fixed", "learned", "learned_clamped")
# the loss trained: InfoNCE; debiased InfoNCE (same-class negatives left out of the denominators);
# SigLIP's pairwise sigmoid loss with a learnt bias
LOSS_FUNCTIONS = ("infonce", "debiased", "siglip")
SIGLIP_BIAS_INIT = -10.0  # SigLIP's initial bias (Zhai et al. 2023)


def prior_bias(n: int) -> float:
    """SigLIP's bias start from theory (docs/science.md §10.9): -log(n - 1), the constant logit
    that minimises the loss of a batch of n positives among n^2 pairs while every cosine is 0
    (sigmoid(b) = 1/n; SigLIP's -10 is this prior for n ~ 22,000, the size of its batches)."""
    return -math.log(n - 1)


SIGLIP_TAU_INIT = 0.1  # SigLIP's initial temperature, t' = log 10 (the grid's tau sets the start)
DEFAULTS = {
    "classes": 8,
    "latent_dim": 8,
    "input_dim": 64,
    "embed_dim": 16,
    "view_noise": 1.0,
    "positives": "class",
    "instance_noise": 0.0,
    "tau_mode": "fixed",
    "loss": "infonce",
    "bias_init": SIGLIP_BIAS_INIT,
}
STREAM_PARAMS = ("n", "classes", "latent_dim", "input_dim", "embed_dim")

_NAN_IF_DIVERGED = "; NaN if diverged"
METRICS = {
    "init_loss": "symmetric InfoNCE loss (nats) at initialisation, mean over the monitor batches",
    "init_entropy": "batch softmax entropy (nats, mean over anchors) at initialisation on the "
    "monitor batches",
    **{
        f"loss_ckpt_{j}": f"monitor loss (nats) after step round(steps^({j}/7)); +inf once diverged"
        for j in range(CHECKPOINTS)
    },
    "entropy_min": "minimum over training steps of the training batch's softmax entropy (mean over "
    "anchors, before the step's update)" + _NAN_IF_DIVERGED,
    "entropy_floor_excess_min": "minimum over training steps of the training batch's entropy minus "
    "its floor log n - g_n(tau_t) at the step's tau" + _NAN_IF_DIVERGED,
    "final_loss": "InfoNCE loss (nats) on the fresh held-out batches after training; +inf if "
    "diverged",
    "final_entropy": "batch softmax entropy (nats, mean over anchors) on the held-out batches "
    "after training" + _NAN_IF_DIVERGED,
    "final_entropy_floor": "log n - g_n(tau_final): the floor of final_entropy at the run's final "
    "temperature",
    "alignment": "E ||z - z'||^2 over held-out positive pairs (0 = perfectly aligned, max 4)"
    + _NAN_IF_DIVERGED,
    "uniformity": "log E exp(-2 ||z_a - z_b||^2) over pairs of distinct held-out examples of a "
    "batch (-8 .. 0, lower = more uniform)" + _NAN_IF_DIVERGED,
    "hardest_negative_share": "held-out: per anchor, the largest softmax weight on a negative over "
    "the total weight on negatives, "
    "mean over anchors (1/(n-1) for uniform weights, 1 if one negative takes it all)"
    + _NAN_IF_DIVERGED,
    "same_class_negative_share": "held-out: per anchor with a negative of its own class, the share "
    "of its negative weight on such "
    "negatives, mean over those anchors; NaN if diverged or no anchor has one",
    "same_class_negative_count_share": "the same share for uniform weights: per such anchor, its "
    "same-class negatives over n - 1 "
    "(what same_class_negative_share is compared with); NaN if no anchor has one",
    "probe_accuracy": "held-out accuracy of the nearest-class-mean probe on the final embeddings "
    "(chance 1/C); 0 if diverged",
    "knn_accuracy": f"held-out accuracy of {KNN}-NN (cosine) on the final embeddings (chance 1/C); "
    f"0 if diverged",
    "linear_probe_accuracy": "held-out accuracy of the least-squares linear probe on the final "
    "embeddings (chance 1/C); 0 if diverged",
    "init_probe_accuracy": "the nearest-class-mean probe on the initial (random) encoder",
    **{
        f"tau_ckpt_{j}": f"temperature after step round(steps^({j}/7)) (= tau unless learned); NaN "
        f"once diverged"
        for j in range(CHECKPOINTS)
    },
    **{
        f"entropy_ckpt_{j}": f"monitor batch softmax entropy (nats, mean over anchors) after step "
        f"round(steps^({j}/7)), at tau_ckpt_{j}" + _NAN_IF_DIVERGED
        for j in range(CHECKPOINTS)
    },
    **{
        f"entropy_floor_ckpt_{j}": f"log n - g_n(tau_ckpt_{j}): the floor of entropy_ckpt_{j}; NaN "
        f"once diverged"
        for j in range(CHECKPOINTS)
    },
    "tau_final": "temperature after training (= tau unless learned; 1 if a learnt run diverged: "
    "its t is reset to 0)",
    "log_tau_final": "log(tau_final) = -t (nats); averages the learned temperature on its own "
    "(log) scale",
    "diverged": "1 if the weights or a monitor loss became NaN/inf during training, else 0",
    "diverged_step": "the step whose update made the weights (or whose monitor loss) non-finite; "
    "+inf if never",
}


# --------------------------------------------------------------------------- validation and theory


def resolved(params: Mapping) -> dict:
    return {**DEFAULTS, **params}


def validate(params: Mapping) -> None:
    """Raise ConfigError (message starts with the offending key) for parameters the kernel cannot
    run."""
    p = resolved(params)
    check_integer(p, "n", 2, "examples per batch")
    check_integer(p, "classes", 2, "classes")
    if p["classes"] > p["n"]:
        raise ConfigError(
            f"classes: more classes ({p['classes']}) than examples per batch (n = {p['n']})"
        )
    check_integer(p, "latent_dim", 2, "latent dimension(s)")
    check_integer(p, "input_dim", p["latent_dim"], "input dimension(s) (input_dim >= latent_dim)")
    check_integer(p, "embed_dim", 2, "embedding dimension(s)")
    check_training(p)
    check_number(p, "tau")
    check_number(p, "view_noise", positive=False)
    check_number(p, "instance_noise", positive=False)
    if p["positives"] not in POSITIVES:
        raise ConfigError(f"positives: {p['positives']!r} is not one of {', '.join(POSITIVES)}")
    if p["loss"] not in LOSS_FUNCTIONS:
        raise ConfigError(f"loss: {p['loss']!r} is not one of {', '.join(LOSS_FUNCTIONS)}")
    bias = p["bias_init"]
    if isinstance(bias, bool) or not isinstance(bias, int | float) or not math.isfinite(bias):
        raise ConfigError(f"bias_init: expected a finite number, got {bias!r}")
    if p["bias_init"] != DEFAULTS["bias_init"] and p["loss"] != "siglip":
        raise ConfigError(f"bias_init: {p['bias_init']!r} is SigLIP's bias; loss is {p['loss']!r}")
    if p["tau_mode"] not in TAU_MODES:
        raise ConfigError(f"tau_mode: {p['tau_mode']!r} is not one of {', '.join(TAU_MODES)}")
    if p["tau_mode"] == "learned_clamped" and p["tau"] < TAU_CLAMP:
        raise ConfigError(
            f"tau: the initial temperature {p['tau']} is below the clamp {TAU_CLAMP} of tau_mode "
            f"learned_clamped"
        )


def _binomial_pmf(trials: int, prob: float) -> np.ndarray:
    m = np.arange(trials + 1)
    log_comb = np.array(
        [math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1) for k in m]
    )
    return np.exp(log_comb + m * math.log(prob) + (trials - m) * math.log1p(-prob))


def loss_floor(n: int, classes: int, tau: float) -> float:
    """Lower bound on the expected symmetric InfoNCE loss with class positives (docs/science.md
    §6.5): E_M log(1 + M + (n - 1 - M) exp(-C / ((C - 1) tau))), M ~ Binomial(n - 1, 1/C) the other
    examples of the anchor's class. Attained by perfectly aligned views, each class collapsed to a
    vertex of a regular simplex (needs C <= embed_dim + 1; otherwise a bound not attained). It
    holds at any instance noise. With instance positives it is no bound (same-class instances can
    be told apart, docs/science.md §10.1): compare with `instance_loss_floor` there."""
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
    """The floor without classes (all examples distinct): log(1 + (n - 1) e^{(c - 1)/tau}), c =
    -1/(n - 1)."""
    return math.log1p((n - 1) * math.exp(-n / ((n - 1) * tau)))


def entropy_floor(n: int, tau) -> np.ndarray | float:
    """log n - g_n(tau): no batch entropy at temperature tau (a scalar or an array) can be lower."""
    return math.log(n) - exact_gap(n, tau)


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
        "hardest_share_uniform": 1.0 / (n - 1),
        "simplex_attainable": float(classes <= int(p["embed_dim"]) + 1),
    }


def probe_per_class(classes: int) -> int:
    """Probe examples per class, in the fit set and in the test set: PROBE_PER_CLASS, or more so
    that there are at least PROBE_EXAMPLES in all."""
    return max(PROBE_PER_CLASS, -(-PROBE_EXAMPLES // classes))


def bytes_per_trial(n: int, input_dim: int, embed_dim: int, classes: int) -> int:
    """Working set per trial of the training loop (one point stepped at a time): the monitor and
    final batches (float64 view and instance noise, 2 x 2 x EVAL_BATCHES x 2 n D), the probe noise
    (view and instance), a training batch (float32 draws and float64 inputs, view and instance),
    the activations of an evaluation pass (inputs, embeddings, 6 n x n matrices per batch) and the
    weights with Adam's moments. Each further point adds 3 d_out D doubles. The evaluations' cosine
    matrices ((probe_per_class(C) C)^2 per trial) are held EVAL_SLICE trials at a time, once per
    run, and are not counted."""
    D, d = input_dim, embed_dim
    probe = probe_per_class(classes) * classes
    held = 8 * 2 * (2 * EVAL_BATCHES * 2 * n * D + 2 * probe * D)
    batch = 2 * 12 * 2 * n * D
    activations = 8 * EVAL_BATCHES * (2 * n * D + 4 * n * d + 6 * n * n)
    evaluations = 8 * (2 * probe * (KNN + classes) + 4 * probe * d)
    return held + batch + activations + evaluations + 8 * 3 * d * D + 8 * classes * D + 256


# --------------------------------------------------------------------------- data


@dataclass
class World:
    """A trial's fixed structure: class points embedded in input space, P[c] = A mu_c (T, C, D)."""

    points: np.ndarray


@dataclass
class Batches:
    """Examples (T, E, n): labels (int), view noise (T, E, 2, n, D) float64 standard normal, and
    instance noise of the same shape or None (no point of the block has instance noise)."""

    labels: np.ndarray
    noise: np.ndarray
    instance: np.ndarray | None = None

    def inputs(
        self, world: World, view_noise: float, instance_noise: float = 0.0, positives: str = "class"
    ) -> tuple[np.ndarray, np.ndarray]:
        """The two views (T, E, n, D) each: the class point, plus the instance noise (one instance
        for both views with `instance` positives, one each with `class` positives), plus the view
        noise."""
        T, E, n = self.labels.shape
        D = world.points.shape[-1]
        signal = np.take_along_axis(world.points, self.labels.reshape(T, E * n, 1), axis=1).reshape(
            T, E, n, D
        )
        c = float(view_noise) / math.sqrt(D)
        x1, x2 = signal + c * self.noise[:, :, 0], signal + c * self.noise[:, :, 1]
        if instance_noise > 0:
            assert self.instance is not None  # drawn for every block with instance noise
            ci = float(instance_noise) / math.sqrt(D)
            x1 += ci * self.instance[:, :, 0]
            x2 += ci * self.instance[:, :, 0 if positives == "instance" else 1]
        return x1, x2

    def trial(self, t: int) -> Batches:
        inst = None if self.instance is None else self.instance[t : t + 1]
        return Batches(self.labels[t : t + 1], self.noise[t : t + 1], inst)


def draw_world(
    rng: np.random.Generator, trials: int, classes: int, latent_dim: int, input_dim: int
) -> World:
    mu = standard_normal(rng, (trials, classes, latent_dim)).astype(np.float64)
    mu /= np.sqrt(np.einsum("tck,tck->tc", mu, mu))[..., None]
    gauss = standard_normal(rng, (trials, input_dim, latent_dim)).astype(np.float64)
    q, r = np.linalg.qr(gauss)  # (T, D, k), (T, k, k)
    q *= np.sign(np.diagonal(r, axis1=-2, axis2=-1))[:, None, :]  # Haar: R with a positive diagonal
    return World(mu @ np.swapaxes(q, -1, -2))  # (T, C, D), unit rows


def draw_batches(
    rng: np.random.Generator,
    trials: int,
    batches: int,
    n: int,
    classes: int,
    input_dim: int,
    aux: np.random.Generator | None = None,
) -> Batches:
    """Labels and view noise from `rng`; instance noise from `aux` when given."""
    labels = rng.integers(0, classes, size=(trials, batches, n))
    noise = standard_normal(rng, (trials, batches, 2, n, input_dim)).astype(np.float64)
    instance = (
        None
        if aux is None
        else standard_normal(aux, (trials, batches, 2, n, input_dim)).astype(np.float64)
    )
    return Batches(labels, noise, instance)


@dataclass
class Probe:
    """Held-out examples of the evaluations: view noise (T, 2, probe_per_class(C) C, D), class-major
    (row 0 fits, row 1 tests), and instance noise of the same shape or None."""

    noise: np.ndarray
    instance: np.ndarray | None = None

    def inputs(
        self, world: World, view_noise: float, instance_noise: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """(T, 2, per C, D) inputs, one view of a fresh instance each, and their labels (per C,)."""
        T, C, D = world.points.shape
        per = self.noise.shape[2] // C
        signal = np.repeat(world.points, per, axis=1)  # (T, per C, D), class-major
        x = signal[:, None] + (float(view_noise) / math.sqrt(D)) * self.noise
        if instance_noise > 0:
            assert self.instance is not None  # drawn for every block with instance noise
            x += (float(instance_noise) / math.sqrt(D)) * self.instance
        return x, np.repeat(np.arange(C), per)


# --------------------------------------------------------------------------- forward and backward


def _t(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _embed(w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z = W x / ||W x|| for x (T, E, n, D), W (T, d, D): returns z (T, E, n, d) and ||W x|| (T, E,
    n)."""
    T, E, n, D = x.shape
    y = (x.reshape(T, E * n, D) @ _t(w)).reshape(T, E, n, -1)
    sq = np.einsum("...d,...d->...", y, y)
    # rare: huge or tiny weights; rescale as np.linalg.norm does
    if not np.all((sq > 1e-280) & (sq < 1e280)):
        big = np.max(np.abs(y), axis=-1, keepdims=True)
        with np.errstate(all="ignore"):
            norm = big[..., 0] * np.sqrt(np.einsum("...d,...d->...", y / big, y / big))
    else:
        norm = np.sqrt(sq)
    return y / norm[..., None], norm


def _softmax(
    s: np.ndarray, axis: int, floor: bool, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights, log-sum-exp and entropy of softmax(s) along `axis` (-1 rows, -2 columns), over the
    entries where `keep` is True (all when None).

    e = exp(s - max) (floored at EXP_FLOOR when `floor`: only needed for gaps beyond 700, i.e.
    tau < 1/350), Z = sum e, H = log Z + max - sum p s: with |s| <= 1/tau the absolute rounding
    of H is ~1e-16 / tau, far below anything measured."""
    top = s.max(axis=axis, keepdims=True)
    e = np.subtract(s, top)
    if floor:
        np.maximum(e, EXP_FLOOR, out=e)
    np.exp(e, out=e)
    if keep is not None:
        e *= keep
    total = e.sum(axis=axis, keepdims=True)
    e /= total
    log_total = np.log(total)
    mean_s = np.einsum("...ij,...ij->...j" if axis == -2 else "...ij,...ij->...i", e, s)
    lse = np.squeeze(top + log_total, axis)
    return e, lse, lse - mean_s


def _per_trial(tau, ndim: int):
    """A scalar tau as it is, a (T,) array shaped to broadcast against (T, ...) of `ndim` axes."""
    if np.ndim(tau) == 0:
        return float(tau)
    return np.asarray(tau, dtype=np.float64).reshape((-1,) + (1,) * (ndim - 1))


def negative_shares(p_row: np.ndarray, labels: np.ndarray | None) -> dict[str, np.ndarray]:
    """Where each anchor's negative weight goes (p_row (T, E, n, n), anchor rows). `hardest` (T, E):
    the mean over anchors of the hardest negative's share of the negative weight. With labels (T, E,
    n), over the anchors of all E batches that have a negative of their own class (T,):
    `same_class`, the mean share of negative weight on those negatives, and `same_class_count`, the
    mean of their count over n - 1 (the share under uniform weights); NaN where no anchor has one.
    """
    n = p_row.shape[-1]
    off = ~np.eye(n, dtype=bool)
    neg = np.where(off, p_row, 0.0)
    total = neg.sum(axis=-1)
    out = {"hardest": (neg.max(axis=-1) / total).mean(axis=-1)}
    if labels is None:
        return out
    T = p_row.shape[0]
    same = (labels[..., :, None] == labels[..., None, :]) & off  # (T, E, n, n)
    count = same.sum(axis=-1)
    has = count > 0
    share = np.where(same, neg, 0.0).sum(axis=-1) / total
    anchors = has.reshape(T, -1).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["same_class"] = np.where(has, share, 0.0).reshape(T, -1).sum(axis=-1) / anchors
        out["same_class_count"] = (count / (n - 1)).reshape(T, -1).sum(axis=-1) / anchors
    return out


def _pairs(w: np.ndarray, x1: np.ndarray, x2: np.ndarray, tau):
    """Embeddings, their norms, the logits cos / tau (T, E, n, n), the positive cosines (T, E, n)
    and tau shaped per trial."""
    z1, norm1 = _embed(w, x1)
    z2, norm2 = _embed(w, x2)
    s = z1 @ _t(z2)  # (T, E, n, n) cosines
    diag = np.diagonal(s, axis1=-2, axis2=-1).copy()  # positive-pair cosines (T, E, n)
    tau_b = _per_trial(tau, 4)
    s *= 1.0 / tau_b
    return z1, norm1, z2, norm2, s, diag, tau_b


def _add_stats(out: dict, z1: np.ndarray, diag: np.ndarray, p_row: np.ndarray, labels) -> None:
    """Alignment, uniformity and the negative shares of the row softmax `p_row`."""
    T, _, n, _ = z1.shape
    out["alignment"] = (2.0 - 2.0 * diag).mean(axis=-1)
    gram = z1 @ _t(z1)  # cosines between the examples of a batch (view 1)
    off = ~np.eye(n, dtype=bool)
    kernel = np.exp(-4.0 + 4.0 * gram[..., off])  # exp(-2 ||z_a - z_b||^2), ||.||^2 = 2 - 2 cos
    out["uniformity"] = np.log(kernel.reshape(T, -1).mean(axis=-1))
    out.update({f"{k}_share": v for k, v in negative_shares(p_row, labels).items()})


def _weight_gradient(dcos, z1, norm1, z2, norm2, x1, x2) -> np.ndarray:
    """dL/dW (T, d, D) from dL/dcos (T, E, n, n): through z = y / ||y|| and y = W x."""
    T, E, n, D = x1.shape
    dz1 = dcos @ z2
    dz2 = _t(dcos) @ z1
    dz1 -= np.einsum("...d,...d->...", dz1, z1)[..., None] * z1
    dz1 /= norm1[..., None]  # dy1
    dz2 -= np.einsum("...d,...d->...", dz2, z2)[..., None] * z2
    dz2 /= norm2[..., None]  # dy2
    d = z1.shape[-1]
    return _t(dz1.reshape(T, E * n, d)) @ x1.reshape(T, E * n, D) + _t(
        dz2.reshape(T, E * n, d)
    ) @ x2.reshape(T, E * n, D)


def same_class_pairs(labels: np.ndarray) -> np.ndarray:
    """(T, E, n, n) True where candidate b is another example of anchor a's class: the pairs
    debiased InfoNCE leaves out of its denominators."""
    n = labels.shape[-1]
    return (labels[..., :, None] == labels[..., None, :]) & ~np.eye(n, dtype=bool)


def _read_row_softmax(
    out: dict, h_row: np.ndarray, p_row: np.ndarray | None, z1: np.ndarray, diag: np.ndarray, labels
) -> None:
    """Both losses report what the row softmax of cos / tau shows (its entropy, whose floor holds
    whatever the loss, and with its weights `p_row` the stats), so one place reads it for both
    and their columns stay comparable."""
    out["entropy"] = np.clip(h_row, 0.0, math.log(h_row.shape[-1])).mean(axis=-1)
    if p_row is not None:
        _add_stats(out, z1, diag, p_row, labels)


def infonce(
    w: np.ndarray,
    x1: np.ndarray,
    x2: np.ndarray,
    tau,
    grad: bool = True,
    stats: bool = True,
    labels: np.ndarray | None = None,
    grad_t: bool = False,
    exclude: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Symmetric InfoNCE of the encoder W (T, d, D) on batches of views x1, x2 (T, E, n, D) at
    temperature tau (a scalar, or one per trial: (T,)).

    Returns per batch (T, E): `loss`, `entropy` (mean over anchors of the row-softmax entropy);
    with `stats`, also `alignment` (mean ||z - z'||^2) per batch, `uniformity` (T,) over all
    batches' pairs of distinct examples and the negative shares (`negative_shares`; the
    same-class ones need `labels`); with `grad`, `gw` (T, d, D): the gradient of the mean loss
    over the E batches, and with `grad_t` also `gt` (T,): its derivative with respect to
    t = log(1/tau). With `exclude` (T, E, n, n; `same_class_pairs`), the debiased loss: those
    pairs are left out of both softmaxes of the loss and its gradient; `entropy` and the stats
    stay those of the full row softmax (the weights whose floor is log n - g_n(tau)).
    """
    T, E, n, D = x1.shape
    z1, norm1, z2, norm2, s, diag, tau_b = _pairs(w, x1, x2, tau)
    floor = float(np.max(2.0 / tau_b)) > -EXP_FLOOR
    keep = None if exclude is None else ~exclude
    p_row, lse_row, h_row = _softmax(s, -1, floor, keep)
    p_col, lse_col, _ = _softmax(s, -2, floor, keep)
    out = {
        "loss": 0.5 * (lse_row.mean(axis=-1) + lse_col.mean(axis=-1))
        - diag.mean(axis=-1) / (tau_b if np.ndim(tau_b) == 0 else tau_b[..., 0, 0]),
    }
    full_row = p_row
    if keep is not None:  # the full row softmax, for the entropy and the stats
        full_row, _, h_row = _softmax(s, -1, floor)
    _read_row_softmax(out, h_row, full_row if stats else None, z1, diag, labels)
    if not grad:
        return out
    ds = np.add(p_row, p_col, out=p_row)  # dL/dS = (P_row + P_col - 2 I) / (2 n E)
    np.einsum("...ii->...i", ds)[...] -= 2.0
    if grad_t:  # dL/dt = sum_ab dL/dS_ab S_ab (S = cos e^t)
        out["gt"] = np.einsum("teab,teab->t", ds, s) / (2.0 * n * E)
    ds *= 1.0 / (2.0 * n * E * tau_b)  # with the 1/tau of dS/dz folded in
    out["gw"] = _weight_gradient(ds, z1, norm1, z2, norm2, x1, x2)
    return out


def sigmoid_loss(
    w: np.ndarray,
    x1: np.ndarray,
    x2: np.ndarray,
    tau,
    bias,
    grad: bool = True,
    stats: bool = True,
    labels: np.ndarray | None = None,
    grad_t: bool = False,
) -> dict[str, np.ndarray]:
    """SigLIP's pairwise sigmoid loss (Zhai et al. 2023) of the encoder W on batches of views x1, x2
    (T, E, n, D): per batch L = (1/n) sum_ab log(1 + exp(-y_ab (cos_ab / tau + b))), y = +1 on the
    positive pairs (a = b), -1 elsewhere; bias b a scalar or (T,). The same outputs as `infonce`
    (`entropy` and the stats from the row softmax of cos / tau, whose floor holds whatever the
    loss), and with `grad` also `gb` (T,), dL/db; `gt` is dL/dt with t = log(1/tau)."""
    T, E, n, D = x1.shape
    z1, norm1, z2, norm2, s, diag, tau_b = _pairs(w, x1, x2, tau)
    sign = 2.0 * np.eye(n) - 1.0  # y_ab
    margin = sign * (s + _per_trial(bias, 4))  # y (cos / tau + b)
    out = {"loss": np.logaddexp(0.0, -margin).sum(axis=(-2, -1)) / n}
    floor = float(np.max(2.0 / tau_b)) > -EXP_FLOOR
    p_row, _, h_row = _softmax(s, -1, floor)
    _read_row_softmax(out, h_row, p_row if stats else None, z1, diag, labels)
    if not grad:
        return out
    dl = -sign * (0.5 - 0.5 * np.tanh(0.5 * margin)) / (n * E)  # dL/dlogit: -y sigmoid(-margin)
    out["gb"] = dl.sum(axis=(1, 2, 3))
    if grad_t:  # dlogit/dt = cos e^t = S
        out["gt"] = np.einsum("teab,teab->t", dl, s)
    out["gw"] = _weight_gradient(dl / tau_b, z1, norm1, z2, norm2, x1, x2)
    return out


# --------------------------------------------------------------------------- evaluations


def _embed_probe(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Embeddings (T, 2, per C, d) of the probe inputs; a diverged trial's NaN embeddings are 0."""
    z, _ = _embed(w, x)
    return np.where(np.isfinite(z), z, 0.0)


def probe_accuracy(
    w: np.ndarray, world: World, probe: Probe, view_noise: float, instance_noise: float = 0.0
) -> np.ndarray:
    """Nearest-class-mean probe: class means of the embedded fit examples, cosine-nearest class of
    the embedded test examples; (T,) accuracy."""
    x, labels = probe.inputs(world, view_noise, instance_noise)
    T, C = world.points.shape[:2]
    per = labels.size // C
    z, _ = _embed(w, x)
    means = z[:, 0].reshape(T, C, per, -1).mean(axis=2)  # (T, C, d)
    scores = z[:, 1] @ _t(means)  # (T, per C, C)
    scores /= np.sqrt(np.einsum("tcd,tcd->tc", means, means))[:, None, :]  # cosines to the means
    return (np.argmax(scores, axis=-1) == labels).mean(axis=-1)


def knn_accuracy(z: np.ndarray, labels: np.ndarray, classes: int, k: int = KNN) -> np.ndarray:
    """k-NN by cosine: z (T, 2, N, d) unit rows (row 0 fits, row 1 tests), labels (N,); each of
    the k nearest fit examples votes for its class, ties broken by the larger summed cosine."""
    sims = z[:, 1] @ _t(z[:, 0])  # (T, N_test, N_fit)
    top = np.argpartition(-sims, k - 1, axis=-1)[..., :k]
    cos = np.take_along_axis(sims, top, axis=-1)  # (T, N, k), in [-1, 1]
    votes = (labels[top][..., None] == np.arange(classes)) * (1.0 + 1e-3 * (cos[..., None] + 1.0))
    return (np.argmax(votes.sum(axis=-2), axis=-1) == labels).mean(axis=-1)


def linear_probe_accuracy(z: np.ndarray, labels: np.ndarray, classes: int) -> np.ndarray:
    """Least-squares linear probe: ridge regression (RIDGE * N) of one-hot targets on [z, 1] over
    the fit examples, argmax on the test examples."""
    T, _, N, d = z.shape
    ones = np.ones((T, 2, N, 1))
    f = np.concatenate([z, ones], axis=-1)  # (T, 2, N, d + 1)
    y = (labels[:, None] == np.arange(classes)).astype(np.float64)  # (N, C)
    a = _t(f[:, 0]) @ f[:, 0] + RIDGE * N * np.eye(d + 1)
    b = _t(f[:, 0]) @ y
    coef = np.linalg.solve(a, b)  # (T, d + 1, C)
    return (np.argmax(f[:, 1] @ coef, axis=-1) == labels).mean(axis=-1)


def evaluations(
    w: np.ndarray, world: World, probe: Probe, view_noise: float, instance_noise: float
) -> dict[str, np.ndarray]:
    """The three held-out evaluations of the encoder W: (T,) accuracies. k-NN and the linear probe
    run EVAL_SLICE trials at a time (their cosine matrix is (N_test, N_fit) per trial)."""
    x, labels = probe.inputs(world, view_noise, instance_noise)
    classes = world.points.shape[1]
    z = _embed_probe(w, x)
    slices = [slice(i, i + EVAL_SLICE) for i in range(0, z.shape[0], EVAL_SLICE)]
    return {
        "probe_accuracy": probe_accuracy(w, world, probe, view_noise, instance_noise),
        "knn_accuracy": np.concatenate([knn_accuracy(z[sl], labels, classes) for sl in slices]),
        "linear_probe_accuracy": np.concatenate(
            [linear_probe_accuracy(z[sl], labels, classes) for sl in slices]
        ),
    }


# --------------------------------------------------------------------------- training


@dataclass
class Draws:
    """A block's random numbers as the kernel used them (recorded for the tests' oracles)."""

    world: World
    monitor: Batches
    final: Batches
    probe: Probe
    init: np.ndarray  # (T, d, D) standard normals; W = init / sqrt(D)
    batches: list[Batches]


class Run:
    """One grid point's runs of a block."""

    def __init__(
        self, params: dict, world: World, init: np.ndarray, monitor: Batches, probe: Probe
    ):
        self.p = params
        self.world = world
        self.steps = int(params["steps"])
        self.n = int(params["n"])
        self.noise = (
            float(params["view_noise"]),
            float(params["instance_noise"]),
            params["positives"],
        )
        self.learned = params["tau_mode"] != "fixed"
        self.clamp = params["tau_mode"] == "learned_clamped"
        self.loss = params["loss"]
        trials = init.shape[0]
        self.w = [init / math.sqrt(init.shape[-1])]
        if self.learned:
            # t = log(1/tau), per trial
            self.w.append(np.full(trials, math.log(1.0 / float(params["tau"]))))
        if self.loss == "siglip":
            start = float(params["bias_init"])
            self.w.append(np.full(trials, start))  # SigLIP's bias b, always learnt
        self.opt = Optimiser(params["optimiser"], params["lr"], self.w)
        self.evals = set(evaluation_steps(self.steps))
        self.monitor = monitor.inputs(world, *self.noise)
        self.diverged_step = np.full(trials, np.inf)
        self.entropy_min = np.full(trials, np.inf)
        self.excess_min = np.full(trials, np.inf)
        self.fixed_floor = float(entropy_floor(self.n, float(params["tau"])))
        self.monitor_labels = monitor.labels
        first = self.objective(self.monitor, monitor.labels, self.tau(), grad=False, stats=False)
        self.init = {
            "init_loss": first["loss"].mean(axis=-1),
            "init_entropy": first["entropy"].mean(axis=-1),
            "init_probe_accuracy": probe_accuracy(self.w[0], world, probe, *self.noise[:2]),
        }
        self.losses = {0: self.init["init_loss"]}
        self.entropies = {0: self.init["init_entropy"]}
        self.taus = {0: np.broadcast_to(self.tau(), (trials,)).copy()}

    def objective(self, views, labels, tau, grad: bool, stats: bool) -> dict[str, np.ndarray]:
        """The point's loss (`infonce`, its debiased form, or `sigmoid_loss`) on views (x1, x2)."""
        grad_t = grad and self.learned
        x1, x2 = views
        if self.loss == "siglip":
            return sigmoid_loss(self.w[0], x1, x2, tau, self.w[-1], grad, stats, labels, grad_t)
        exclude = same_class_pairs(labels) if self.loss == "debiased" else None
        return infonce(self.w[0], x1, x2, tau, grad, stats, labels, grad_t=grad_t, exclude=exclude)

    def gradients(self, out: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The gradients in the order of the weights: W, then t if learnt, then SigLIP's b."""
        grads = [out["gw"]]
        if self.learned:
            grads.append(out["gt"])
        if self.loss == "siglip":
            grads.append(out["gb"])
        return grads

    def tau(self):
        """The temperature: the point's tau, or per trial exp(-t)."""
        if not self.learned:
            return float(self.p["tau"])
        with np.errstate(over="ignore"):
            return np.exp(-self.w[1])

    def floor(self, tau):
        """log n - g_n(tau); a learnt tau that left (0, inf) (its run has diverged) gives NaN."""
        if not self.learned:
            return self.fixed_floor
        ok = (tau > 0) & np.isfinite(tau)
        return np.where(ok, entropy_floor(self.n, np.where(ok, tau, 1.0)), np.nan)

    def step(self, batch: Batches, step: int) -> None:
        with np.errstate(all="ignore"):  # diverging trials overflow; they are caught below
            tau = self.tau()
            out = self.objective(
                batch.inputs(self.world, *self.noise), batch.labels, tau, grad=True, stats=False
            )
            np.fmin(self.entropy_min, out["entropy"][:, 0], out=self.entropy_min)  # fmin: NaN-safe
            np.fmin(self.excess_min, out["entropy"][:, 0] - self.floor(tau), out=self.excess_min)
            self.opt.update(self.w, self.gradients(out), step)
            if self.clamp:
                np.minimum(self.w[1], math.log(1.0 / TAU_CLAMP), out=self.w[1])
            bad = not_finite(self.w)
            if self.learned:  # a temperature that under- or overflowed diverged too
                tau = self.tau()
                bad |= ~((tau > 0) & np.isfinite(tau))
            if step in self.evals:
                tau = self.tau()
                monitor = self.objective(
                    self.monitor, self.monitor_labels, tau, grad=False, stats=False
                )
                loss = monitor["loss"].mean(axis=-1)
                bad |= ~np.isfinite(loss)
                self.losses[step] = loss
                self.entropies[step] = monitor["entropy"].mean(axis=-1)
                self.taus[step] = np.broadcast_to(tau, bad.shape).copy()
        new = bad & ~np.isfinite(self.diverged_step)
        self.diverged_step[new] = step
        if np.any(bad):
            self.opt.reset(self.w, bad)
        if step in self.evals:
            gone = np.isfinite(self.diverged_step)
            self.losses[step] = np.where(gone, np.inf, self.losses[step])
            self.entropies[step] = np.where(gone, np.nan, self.entropies[step])
            self.taus[step] = np.where(gone, np.nan, self.taus[step])

    def finish(self, final: Batches, probe: Probe) -> dict[str, np.ndarray]:
        out = dict(self.init)
        for j, step in enumerate(checkpoint_steps(self.steps)):
            out[f"loss_ckpt_{j}"] = self.losses[step]
            out[f"entropy_ckpt_{j}"] = self.entropies[step]
            out[f"tau_ckpt_{j}"] = self.taus[step]
            floor = np.broadcast_to(self.floor(self.taus[step]), self.taus[step].shape)
            out[f"entropy_floor_ckpt_{j}"] = np.where(np.isnan(self.taus[step]), np.nan, floor)
        diverged = np.isfinite(self.diverged_step)
        tau = self.tau()
        with np.errstate(all="ignore"):
            labels = final.labels
            last = self.objective(
                final.inputs(self.world, *self.noise), labels, tau, grad=False, stats=True
            )
            accuracy = evaluations(self.w[0], self.world, probe, *self.noise[:2])
        out["entropy_min"] = np.where(diverged, np.nan, self.entropy_min)
        out["entropy_floor_excess_min"] = np.where(diverged, np.nan, self.excess_min)
        out["final_loss"] = np.where(diverged, np.inf, last["loss"].mean(axis=-1))
        out["final_entropy"] = np.where(diverged, np.nan, last["entropy"].mean(axis=-1))
        out["final_entropy_floor"] = np.broadcast_to(self.floor(tau), diverged.shape)
        out["alignment"] = np.where(diverged, np.nan, last["alignment"].mean(axis=-1))
        out["uniformity"] = np.where(diverged, np.nan, last["uniformity"])
        out["hardest_negative_share"] = np.where(
            diverged, np.nan, last["hardest_share"].mean(axis=-1)
        )
        out["same_class_negative_share"] = np.where(diverged, np.nan, last["same_class_share"])
        out["same_class_negative_count_share"] = last["same_class_count_share"]
        for name, value in accuracy.items():
            out[name] = np.where(diverged, 0.0, value)
        out["tau_final"] = np.broadcast_to(tau, diverged.shape)
        out["log_tau_final"] = np.log(out["tau_final"])
        out["diverged"] = diverged.astype(np.float64)
        out["diverged_step"] = self.diverged_step.copy()
        return {name: np.array(out[name], dtype=np.float64) for name in METRICS}


def simulate_block(
    rng: np.random.Generator, trials: int, points: Sequence[Mapping]
) -> list[dict[str, np.ndarray]]:
    """Kernel contract: per point, metric -> (trials,) float64 (see METRICS)."""
    return simulate(rng, trials, points)


def simulate(
    rng: np.random.Generator, trials: int, points: Sequence[Mapping], record: bool = False
):
    """Train `trials` independent runs per point; the points share the block's draws (all must have
    the same STREAM_PARAMS). With `record`, also return the `Draws` (small sizes only: tests)."""
    pts = block_points(points, resolved, validate, STREAM_PARAMS)
    n, classes, latent_dim, input_dim, embed_dim = (int(pts[0][k]) for k in STREAM_PARAMS)
    # leaves rng's stream as it is
    aux = rng.spawn(1)[0] if any(float(p["instance_noise"]) > 0 for p in pts) else None
    world = draw_world(rng, trials, classes, latent_dim, input_dim)
    monitor = draw_batches(rng, trials, EVAL_BATCHES, n, classes, input_dim)
    final = draw_batches(rng, trials, EVAL_BATCHES, n, classes, input_dim)
    probe = Probe(
        standard_normal(rng, (trials, 2, probe_per_class(classes) * classes, input_dim)).astype(
            np.float64
        )
    )
    init = standard_normal(rng, (trials, embed_dim, input_dim)).astype(np.float64)
    if aux is not None:
        for held in (monitor, final):
            held.instance = standard_normal(aux, held.noise.shape).astype(np.float64)
        probe.instance = standard_normal(aux, probe.noise.shape).astype(np.float64)
    runs = [Run(p, world, init, monitor, probe) for p in pts]

    def draw() -> Batches:
        batch = draw_batches(rng, trials, 1, n, classes, input_dim)
        if aux is not None:
            batch.instance = standard_normal(aux, batch.noise.shape).astype(np.float64)
        return batch

    batches: list[Batches] | None = [] if record else None
    train(runs, draw, batches)  # no run stops early: every run trains to its own budget
    results = [run.finish(final, probe) for run in runs]
    if batches is not None:
        return results, Draws(world, monitor, final, probe, init, batches)
    return results


def counts(n: int, input_dim: int, embed_dim: int, steps: int, instance: bool) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `train`: per step and stream
    the batch's view noise (2 n input_dim float32 normals, twice with instance noise); per step and
    point the encoder's forward and backward pass in float64 (~3 x 2 x 2n input_dim embed_dim
    flops), the 2n x 2n similarities with their softmax in both directions (exps, ~3 x 2 (2n)^2
    embed_dim flops) and ~20 passes over the batch, and Adam's update. Calls: ~500
    call-equivalents per step and point (measured ~0.6 ms per step and point whatever the block's
    trials), ~20 per step and stream. A run is charged its whole step budget."""
    m = 2 * n
    per_step = Counts(
        flops64=6 * m * input_dim * embed_dim + 6 * m * m * embed_dim,
        exps=2 * m * m,
        bytes=8 * 20 * (m * input_dim + m * m) + 8 * 12 * input_dim * embed_dim,
    )
    draws = m * input_dim * (2 if instance else 1)
    return Work(
        own=per_step * steps,
        shared=Counts(normals=draws, bytes=12 * draws) * steps,
        own_block=Counts(calls=500 * steps),
        shared_block=Counts(calls=20 * steps),
    )
