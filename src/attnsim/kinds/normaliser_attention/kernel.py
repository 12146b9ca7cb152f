"""One set of draws, every normaliser: clean logits s = logit_scale z, values v ~ N(0, I_d) and K
noisy copies s + sigma eps (eps ~ N(0, 1)), the same for every normaliser and noise scale of a
stream (common random numbers: differences between normalisers are not sampling noise).

Draw order per block: z (T, n), v (T, n, d), eps (T, K, n), float32 by Box-Muller, used in
float64. The normaliser maps are `attnsim.subjects.normalisers`' records; the predictions
`attnsim.theory.normalisers` (docs/science.md §12)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels.sampling import standard_normal
from attnsim.kinds.base import Counts, Work
from attnsim.subjects import normalisers
from attnsim.theory import normalisers as th


@dataclass(frozen=True)
class Draws:
    z: np.ndarray  # (T, n)
    values: np.ndarray  # (T, n, d)
    eps: np.ndarray  # (T, K, n)


def bytes_per_trial(n: int, d: int, k: int) -> int:
    """float32 draws plus float64 copies of the noisy logits and weights (three (K, n) arrays)
    and of the values."""
    return 4 * (n + n * d + k * n) + 8 * (3 * k * n + n * d + 4 * n) + 256


def draw(rng: np.random.Generator, trials: int, n: int, d: int, k: int) -> Draws:
    z = standard_normal(rng, (trials, n))
    values = standard_normal(rng, (trials, n, d))
    eps = standard_normal(rng, (trials, k, n))
    return Draws(z, values, eps)


def simulate(draws: Draws, name: str, logit_scale: float, sigma: float) -> dict[str, np.ndarray]:
    """Per trial: the error of the K noisy outputs, its bias along the clean output, the clean
    weights' entropy, mass and gradient, and the predictions for each."""
    s = logit_scale * draws.z.astype(np.float64)
    v = draws.values.astype(np.float64)
    trials, k, n = draws.eps.shape
    record = normalisers.get(name)
    p = record.weights(s)
    o = np.einsum("tn,tnd->td", p, v)
    eps = draws.eps.astype(np.float64)
    noisy = record.weights((s[:, None, :] + sigma * eps).reshape(trials * k, n))
    outputs = np.einsum("tkn,tnd->tkd", noisy.reshape(trials, k, n), v)
    diff = outputs - o[:, None, :]
    oo = np.einsum("td,td->t", o, o)
    beta = np.einsum("tkd,td->t", diff, o) / (k * oo)
    pred = th.predicted_error(name, s, v, sigma)
    mass, entropy = normalisers.mass_and_entropy(p)
    unit = th.mean_exp(sigma) - 1.0
    return {
        "sq_err": np.einsum("tkd,tkd->t", diff, diff) / k,
        "sq_err_pred": pred["sq_err_pred"],
        "bias": beta,
        "bias_pred": pred["bias_pred"],
        "bias_unexplained": (beta - pred["bias_pred"]) / unit if unit > 0 else np.zeros(trials),
        "entropy": entropy,
        "entropy_norm": entropy / np.log(n),
        "mass": mass,
        "grad_sq": th.grad_sq(name, s, v),
    }


def counts(n: int, d: int, k: int, normaliser: str) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate`: per stream the
    normals; per point the float64 copies, the normaliser of the clean row and of its K noisy
    copies (one exp each, or a sort of the row for the sparse maps), two (K + 1) x n by n x d
    float64 products, its predictions (`theory.normalisers`: a few more passes over n d) and ~25
    passes over K n doubles. Calls: ~60 per point and block."""
    rows = (k + 1) * n
    normalise = (
        Counts(bytes=16 * rows * max(1.0, math.log2(n)))
        if normalisers.get(normaliser).sorts_rows
        else Counts(exps=rows)
    )
    return Work(
        own=normalise + Counts(flops64=4 * rows * d, bytes=60 * n * d + 200 * rows),
        shared=Counts(normals=n + n * d + k * n, bytes=8 * (n + n * d + k * n)),
        own_block=Counts(calls=60),
        shared_block=Counts(calls=5),
    )
