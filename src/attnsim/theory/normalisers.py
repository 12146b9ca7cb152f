"""Predictions for the normalisers of `attnsim.kernels.normalisers` (docs/science.md §12), written
before any data: the output's error under i.i.d. gaussian logit noise (a variance term and the
bias the normalisation may leave), the entropy and gradient at large logit scale, and the entropy
floor under cosine logits.

Error model (§12.2). With o = sum_i p_i v_i and noisy logits s + eps, eps_i ~ N(0, sigma^2):

- elementwise weights (sigmoid, ReLU) are exact: o~ = sum_i p(s_i + eps_i) v_i has mean
  sum_i E[p(s_i + eps)] v_i and variance sum_i Var p(s_i + eps) ||v_i||^2 (gauss-hermite);
- softmax, SSMax and the sink (multiplicative noise e^eps on each key): the delta method,
  kappa sum_j p_j^2 ||v_j - o||^2 with kappa = e^{sigma_eff^2} - 1, sigma_eff = sigma (SSMax:
  sigma b log n); the sink keeps a bias (m - 1) p_0 / (p_0 + m (1 - p_0)) along o, m = E[e^eps];
- soft-capping, softpick, sparsemax, 1.5-entmax: first order, sigma^2 ||do/ds||_F^2; softpick's
  mean (its -1 breaks the factorisation) in the mean-field limit of a self-averaging denominator.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from attnsim.kernels import normalisers as nz

GAUSS_NODES = 24  # gauss-hermite nodes: ~1e-10 for the smooth (sigmoid) integrand at sigma <= 1
ELEMENTWISE = ("sigmoid", "relu")
MULTIPLICATIVE = ("softmax", "ssmax", "sink")
# the normalisers whose weights are g(s_i) / sum_j g(s_j) (or elementwise) with g increasing:
# the worst cosine configuration has two levels (§12.4); the others reach one-hot weights
MONOTONE = ("softmax", "ssmax", "softcap50", "softcap30", "sink", "sigmoid")


def _nodes(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(GAUSS_NODES)
    return sigma * x, w / math.sqrt(2 * math.pi)


def mean_exp(sigma: float) -> float:
    """m = E[e^eps] = e^{sigma^2/2}: the factor sigmoid attention keeps and softmax divides out."""
    return math.exp(sigma**2 / 2)


def effective_sigma(name: str, n: int, sigma: float) -> float:
    """The noise's std on the scale softmax sees: SSMax multiplies the logits by b log n."""
    return sigma * nz.SSMAX_B * math.log(n) if name == "ssmax" else sigma


_erfc = np.frompyfunc(math.erfc, 1, 1)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erfc(-x / math.sqrt(2)), dtype=np.float64) / 2


def elementwise_moments(name: str, s: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of p(s_i + eps) per key for the elementwise normalisers: sigmoid by
    gauss-hermite quadrature over eps, ReLU in closed form (a kink defeats quadrature):
    E ReLU(x) = s Phi(s/sigma) + sigma phi(s/sigma), E ReLU(x)^2 = (s^2 + sigma^2) Phi + s sigma
    phi for x ~ N(s, sigma^2)."""
    n = s.shape[-1]
    if name == "relu":
        if sigma == 0:
            p = np.maximum(s, 0.0) / n
            return p, np.zeros_like(p)
        z = s / sigma
        cdf = _normal_cdf(z)
        pdf = np.exp(-(z**2) / 2) / math.sqrt(2 * math.pi)
        mean = s * cdf + sigma * pdf
        second = (s**2 + sigma**2) * cdf + s * sigma * pdf
        return mean / n, np.maximum(second - mean**2, 0.0) / n**2
    if name != "sigmoid":
        raise ValueError(f"{name!r} is not elementwise")
    x, w = _nodes(sigma)
    p = np.exp(-np.logaddexp(0.0, math.log(n) - (s[..., None] + x)))
    mean = p @ w
    return mean, np.maximum(p**2 @ w - mean**2, 0.0)


def grad_sq(name: str, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """||do/ds||_F^2 = sum_j ||sum_i (dp_i/ds_j) v_i||^2 per trial (s: (T, n), v: (T, n, d)),
    from each normaliser's Jacobian in closed form: the first-order noise sensitivity."""
    n = s.shape[-1]
    p = nz.weights(name, s)
    o = np.einsum("tn,tnd->td", p, v)
    if name in ("softmax", "ssmax", "sink", "softcap50", "softcap30"):
        slope = np.ones_like(s)
        if name == "ssmax":
            slope *= nz.SSMAX_B * math.log(n)
        elif name in nz.SOFTCAPS:
            slope = 1.0 - np.tanh(s / nz.SOFTCAPS[name]) ** 2
        g = (p * slope)[..., None] * (v - o[:, None, :])
    elif name in ("sigmoid", "relu"):
        diag = nz.jvp(name, s, np.ones_like(s))  # the Jacobian is diagonal
        g = diag[..., None] * v
    elif name == "softpick":
        d, e, _ = nz._softpick_parts(s)
        total = np.abs(d).sum(axis=-1)[:, None, None]
        g = (np.where(d > 0, e, 0.0)[..., None] * v - (np.sign(d) * e)[..., None] * o[:, None]) / (
            total
        )
    elif name in ("sparsemax", "entmax15"):
        # J = c (diag g - g g^T / sum g) with g the support's indicator (sparsemax, c = 1) or
        # sqrt(p) (entmax, c = 1: 2 from the square times 1/2 from z = s/2)
        gw = (p > 0).astype(float) if name == "sparsemax" else np.sqrt(p)
        centre = np.einsum("tn,tnd->td", gw, v) / gw.sum(axis=-1, keepdims=True)
        g = gw[..., None] * (v - centre[:, None, :])
    else:
        raise ValueError(f"unknown normaliser {name!r}")
    return np.einsum("tnd,tnd->t", g, g)


def sink_bias(s: np.ndarray, sigma: float) -> np.ndarray:
    """Relative bias along o of the sink's output, (m - 1) p_0 / (p_0 + m (1 - p_0)) per trial:
    the noise multiplies the keys' mass by m = E[e^eps] (self-averaging over many keys) but not
    the sink's, so the cancellation is partial, of the order of the sink's weight p_0."""
    p0 = 1.0 - nz.weights("sink", s).sum(axis=-1)
    m = mean_exp(sigma)
    return (m - 1.0) * p0 / (p0 + m * (1.0 - p0))


def softpick_mean_weights(s: np.ndarray, sigma: float) -> np.ndarray:
    """E[p~_i] in the mean-field limit: E ReLU(e^{s_i+eps} - 1) / sum_j E|e^{s_j+eps} - 1|."""
    x, w = _nodes(sigma)
    noisy = s[..., None] + x
    # scaled by e^{-m}, m = max(0, largest noisy logit of the row), as in the kernel: no overflow
    m = np.maximum(noisy.max(axis=(-2, -1), keepdims=True), 0.0)
    d = np.where(m < 700.0, np.expm1(np.minimum(noisy, 700.0)) * np.exp(-m), np.exp(noisy - m))
    top = np.maximum(d, 0.0) @ w
    return top / (np.abs(d) @ w).sum(axis=-1, keepdims=True)


def predicted_error(name: str, s: np.ndarray, v: np.ndarray, sigma: float) -> dict[str, np.ndarray]:
    """Per trial: `sq_err_pred`, the predicted E||o~ - o||^2, and `bias_pred`, the predicted
    relative bias along the clean output <E o~ - o, o> / ||o||^2 (0 where the normalisation
    cancels the noise's mean to this order)."""
    n = s.shape[-1]
    p = nz.weights(name, s)
    o = np.einsum("tn,tnd->td", p, v)
    oo = np.einsum("td,td->t", o, o)
    if name in ELEMENTWISE:
        mean, var = elementwise_moments(name, s, sigma)
        bias = np.einsum("tn,tnd->td", mean - p, v)
        spread = np.einsum("tn,tnd,tnd->t", var, v, v)
        return {
            "sq_err_pred": np.einsum("td,td->t", bias, bias) + spread,
            "bias_pred": np.einsum("td,td->t", bias, o) / oo,
        }
    sig = effective_sigma(name, n, sigma)
    if name in MULTIPLICATIVE:
        # SSMax is softmax of logits b log(n) s, the noise scaled alike (sigma_eff)
        logits = nz.SSMAX_B * math.log(n) * s if name == "ssmax" else s
        variance = math.expm1(sig**2) * grad_sq("softmax" if name == "ssmax" else name, logits, v)
    else:
        variance = sig**2 * grad_sq(name, s, v)
    if name == "sink":
        beta = sink_bias(s, sigma)
        return {"sq_err_pred": variance + beta**2 * oo, "bias_pred": beta}
    if name == "softpick":
        bias = np.einsum("tn,tnd->td", softpick_mean_weights(s, sigma) - p, v)
        return {
            "sq_err_pred": variance + np.einsum("td,td->t", bias, bias),
            "bias_pred": np.einsum("td,td->t", bias, o) / oo,
        }
    return {"sq_err_pred": variance, "bias_pred": np.zeros(len(s))}


def two_level_entropy(name: str, n: int, k: int, tau: float = 1.0) -> float:
    """Entropy of p / sum p for k logits at +1/tau and n - k at -1/tau."""
    s = np.where(np.arange(n) < k, 1.0, -1.0)[None, :] / tau
    return float(nz.mass_and_entropy(nz.weights(name, s))[1][0])


@lru_cache(maxsize=256)
def cosine_floor(name: str, n: int, tau: float = 1.0) -> float:
    """The largest entropy deficit log n - H that cosine logits cos(theta)/tau can produce (§12.4):
    for the monotone normalisers the maximum over the two-level configurations (k keys at +1);
    for the others log n, reached by one key at +1 (exact zeros elsewhere)."""
    if name not in MONOTONE:
        return math.log(n)
    return max(math.log(n) - two_level_entropy(name, n, k, tau) for k in range(1, n + 1))


def relu_entropy_offset() -> float:
    """c in H -> log(n/2) - c for ReLU attention, whatever the logit scale: with x half-normal,
    c = E[x log x] / E[x] - log E[x] (the weights x / sum x over the ~n/2 positive keys)."""
    x, w = np.polynomial.laguerre.laggauss(80)  # integral over t = x^2/2 in [0, inf)
    r = np.sqrt(2 * x)
    # half-normal density 2 phi(r) dr = sqrt(2/pi) e^{-t} dt / r
    dens = math.sqrt(2 / math.pi) / r
    mean = float(np.sum(w * dens * r))
    xlogx = float(np.sum(w * dens * r * np.log(r)))
    return xlogx / mean - math.log(mean)


def large_scale_entropy(name: str, n: int) -> float:
    """Entropy of p / sum p for gaussian logits s = l z as l -> infinity (§12.3), n large: 0 where
    the weights freeze onto the top key, log(n/2) where the normaliser saturates (sigmoid,
    soft-capping: every positive key at the same weight), and ReLU's scale-free value."""
    if name in ("sigmoid", "softcap50", "softcap30"):
        return math.log(n / 2)
    if name == "relu":
        return math.log(n / 2) - relu_entropy_offset()
    return 0.0


def gradient_vanishes_at_large_scale(name: str) -> bool:
    """Whether ||do/ds|| -> 0 as the logit scale grows (§12.3): everywhere but ReLU attention,
    whose slope 1/n on the positive keys does not depend on the scale. Softmax-like maps lose it
    exponentially, sparse ones exactly (a one-key support), saturating ones (sigmoid,
    soft-capping) only like 1/scale: the keys within ~1/scale of the threshold keep a slope."""
    return name != "relu"
