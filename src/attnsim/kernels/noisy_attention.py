"""Softmax attention with i.i.d. noise on the logits, batched over trials.

Shapes: logits (T, n), values (T, n, d), standard noise (T, K, n). One set of
draws serves every noise scale (common random numbers), and each scale is
computed on its own, so a point's numbers do not depend on its siblings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnsim.kernels.noise import standard_noise
from attnsim.kernels.softmax import softmax_stats


@dataclass(frozen=True)
class Draws:
    logits: np.ndarray  # (T, n)
    values: np.ndarray  # (T, n, d)
    noise: np.ndarray  # (T, K, n), unit variance


def draw(rng: np.random.Generator, trials: int, n: int, d: int, logit_scale: float, noise: str, noise_draws: int) -> Draws:
    logits = logit_scale * rng.standard_normal((trials, n))
    values = rng.standard_normal((trials, n, d))
    return Draws(logits, values, standard_noise(rng, noise, (trials, noise_draws, n)))


@dataclass(frozen=True)
class Clean:
    """Statistics of the noise-free attention that every noise scale reuses."""

    weights: np.ndarray  # (T, n)
    centred: np.ndarray  # v_i - o, (T, n, d)
    entropy: np.ndarray  # (T,)
    sum_p2: np.ndarray  # sum p_i^2 = 1 / n_eff
    spread: np.ndarray  # sum p_i ||v_i - o||^2
    grad_sq: np.ndarray  # sum p_i^2 ||v_i - o||^2 = ||do/ds||_F^2


def clean_attention(draws: Draws) -> Clean:
    weights, entropy = softmax_stats(draws.logits)
    output = np.einsum("tn,tnd->td", weights, draws.values)
    centred = draws.values - output[:, None, :]
    dist2 = np.einsum("tnd,tnd->tn", centred, centred)
    return Clean(
        weights=weights,
        centred=centred,
        entropy=entropy,
        sum_p2=np.einsum("tn,tn->t", weights, weights),
        spread=np.einsum("tn,tn->t", weights, dist2),
        grad_sq=np.einsum("tn,tn,tn->t", weights, weights, dist2),
    )


def safe_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator with 0/0 = 0 and x/0 = +inf (one-hot weights), never NaN."""
    out = np.zeros_like(numerator)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    out[(denominator <= 0) & (numerator > 0)] = np.inf
    return out


def noisy_metrics(draws: Draws, clean: Clean, noise_scale: float, kappa: float) -> dict[str, np.ndarray]:
    """Per-trial metrics at one noise scale; kappa may be +inf (prediction +inf, flagged)."""
    noisy_weights, _ = softmax_stats(draws.logits[:, None, :] + noise_scale * draws.noise)
    shift = np.matmul(noisy_weights, clean.centred)  # o~_k - o, (T, K, d)
    sq_err = np.einsum("tkd,tkd->t", shift, shift) / shift.shape[1]
    if np.isfinite(kappa):
        sq_err_pred = kappa * clean.grad_sq
    else:
        sq_err_pred = np.full_like(sq_err, np.inf)
    return {
        "sq_err": sq_err,
        "rel_err": np.sqrt(safe_ratio(sq_err, clean.spread)),
        "entropy": clean.entropy,
        "n_eff": 1.0 / clean.sum_p2,
        "grad_sq": clean.grad_sq,
        "kappa": np.full_like(sq_err, kappa),
        "sq_err_pred": sq_err_pred,
    }


def naive_trial(logits, values, noise, noise_scale: float) -> dict[str, float]:
    """Slow per-trial reference: plain formulas, one trial, one noisy draw at a time."""
    p = np.exp(logits - logits.max())
    p /= p.sum()
    o = p @ values
    entropy = -sum(pi * np.log(pi) for pi in p if pi > 0)
    errors = []
    for eps in noise:
        q = np.exp(logits + noise_scale * eps - (logits + noise_scale * eps).max())
        q /= q.sum()
        errors.append(float(np.sum((q @ values - o) ** 2)))
    dist2 = np.array([np.sum((v - o) ** 2) for v in values])
    return {
        "sq_err": float(np.mean(errors)),
        "entropy": float(entropy),
        "n_eff": float(1 / np.sum(p**2)),
        "grad_sq": float(np.sum(p**2 * dist2)),
        "spread": float(np.sum(p * dist2)),
    }
