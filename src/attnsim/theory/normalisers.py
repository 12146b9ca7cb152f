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
from attnsim.theory.entropy import exact_gap_argmax

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


# --- cosine logits at temperature tau (§12.4) ----------------------------------------------------

SPHERE_NODES = 512  # gauss-legendre nodes per panel of the angle: ~1e-9 on the kinked integrands
# the mean field is given only while its 1/n term is below this share of the gap: beyond, the
# expansion has broken down (few keys carry the weight: at small tau and large d, SSMax at n = 4096)
BREAKDOWN = 0.1


def effective_inverse_temperature(name: str, n: int, tau: float = 1.0) -> float:
    """u_eff = log(g(u) / g(-u)) / 2, u = 1/tau: two logit levels +-u give the weights of softmax at
    +-u_eff, since p / sum p depends only on the ratio g(u) / g(-u) (§12.4). Defined for the
    bounded-ratio normalisers (`MONOTONE`); the sink's p / sum p is softmax's exactly."""
    u = 1.0 / tau
    if name in ("softmax", "sink"):
        return u
    if name == "ssmax":
        return nz.SSMAX_B * math.log(n) * u
    if name in nz.SOFTCAPS:
        c = nz.SOFTCAPS[name]
        return c * math.tanh(u / c)
    if name == "sigmoid":
        # log sigma(x) = -log(1 + e^{-x}), at x = +-u - log n
        log_n = math.log(n)
        return float(np.logaddexp(0.0, u + log_n) - np.logaddexp(0.0, log_n - u)) / 2
    raise ValueError(f"{name!r} has no bounded weight ratio: no effective temperature (§12.4)")


def two_level_entropy(name: str, n: int, k: int, tau: float = 1.0) -> float:
    """Entropy of p / sum p for k logits at +1/tau and n - k at -1/tau, through the kernel."""
    s = np.where(np.arange(n) < k, 1.0, -1.0)[None, :] / tau
    return float(nz.mass_and_entropy(nz.weights(name, s))[1][0])


@lru_cache(maxsize=4096)
def cosine_floor(name: str, n: int, tau: float = 1.0) -> float:
    """The largest entropy deficit log n - H that cosine logits cos(theta)/tau can produce (§12.4):
    for the bounded-ratio normalisers softmax's exact finite-n worst case (§4.4) at the effective
    temperature 1/u_eff, evaluated through the normaliser's own weights at the worst k and its
    neighbours (G is unimodal in k; so the value is the kernel's, bit for bit the maximum over
    every k); for the others log n, reached by one key at +1 (exact zeros elsewhere)."""
    if name not in MONOTONE:
        return math.log(n)
    worst = int(exact_gap_argmax(n, 1.0 / effective_inverse_temperature(name, n, tau)))
    candidates = range(max(1, worst - 1), min(n, worst + 1) + 1)
    return max(math.log(n) - two_level_entropy(name, n, k, tau) for k in candidates)


@lru_cache(maxsize=8)
def _legendre(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (an eigenvalue problem: computed once)."""
    return np.polynomial.legendre.leggauss(count)


def _sphere_nodes(d: int, cuts: tuple[float, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Nodes x = cos(theta) and probability weights of the law of one cosine between uniform
    directions of R^d (density of theta proportional to sin^{d-2} theta on [0, pi]): gauss-legendre
    in theta, in panels split where the integrand has a kink (`cuts`, values of x)."""
    edges = [0.0, *sorted(math.acos(c) for c in cuts if -1.0 < c < 1.0), math.pi]
    t, w = _legendre(SPHERE_NODES)
    thetas, weights = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi > lo:
            thetas.append(lo + (hi - lo) * (t + 1) / 2)
            weights.append(w * (hi - lo) / 2)
    theta, weight = np.concatenate(thetas), np.concatenate(weights)
    log_density = (d - 2) * np.log(np.sin(theta))
    weight = weight * np.exp(log_density - log_density.max())
    return np.cos(theta), weight / weight.sum()


def _threshold(n: int, d: int, tau: float, power: float, shrink: float) -> float:
    """The mean-field threshold t of sparsemax (power 1, shrink 1) or 1.5-entmax (power 2, shrink
    1/2): n E[(shrink s - t)_+^power] = 1 over the cosine law, by bisection."""
    x, w = _sphere_nodes(d)
    z = shrink * x / tau
    lo, hi = float(z.min()) - 1.0, float(z.max())
    for _ in range(100):
        mid = (lo + hi) / 2
        if n * float(np.maximum(z - mid, 0.0) ** power @ w) > 1.0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _cosine_g(name: str, n: int, d: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """(g(x / tau), weights) on the cosine nodes: the unnormalised weight of a key whose cosine is x
    (p / sum p = g / sum g), with the nodes split at g's kink."""
    u = 1.0 / tau
    if name in ("sparsemax", "entmax15"):
        power, shrink = (1.0, 1.0) if name == "sparsemax" else (2.0, 0.5)
        t = _threshold(n, d, tau, power, shrink)
        x, w = _sphere_nodes(d, (t / (shrink * u),))
        return np.maximum(shrink * u * x - t, 0.0) ** power, w
    x, w = _sphere_nodes(d, (0.0,) if name in ("relu", "softpick") else ())
    s = u * x
    if name == "relu":
        return np.maximum(s, 0.0), w
    if name == "softpick":
        return np.maximum(np.expm1(s), 0.0), w
    if name == "sigmoid":
        return np.exp(-np.logaddexp(0.0, math.log(n) - s)), w
    # softmax-like: g = e^{u_eff x}, scaled by e^{-u_eff} (p / sum p does not see the scale)
    if name in nz.SOFTCAPS:
        c = nz.SOFTCAPS[name]
        return np.exp(c * np.tanh(s / c) - c * math.tanh(u / c)), w
    scale = effective_inverse_temperature(name, n, tau)
    return np.exp(scale * (x - 1.0)), w


@lru_cache(maxsize=4096)
def cosine_gap_mean_field(name: str, n: int, d: int, tau: float = 1.0) -> tuple[float, float]:
    """(gap, support): the typical log n - H for a uniform query and n uniform keys in R^d (§12.4),
    and the mean-field number of keys with nonzero weight.

    With p / sum p = g(s_i) / sum_j g(s_j) and the s_i i.i.d., H = log n + log B^ - A^ / B^ with
    A^, B^ the key means of g log g and g, so gap = A/B - log B as n -> infinity (A, B their
    expectations over the cosine law) plus the delta method's 1/n term,
    [f_BB Var g / 2 + f_AB Cov(g log g, g)] / n, f = A/B - log B, f_BB = 2A/B^3 + 1/B^2,
    f_AB = -1/B^2. For sparsemax and 1.5-entmax g has a threshold fixed by the normalisation:
    its mean-field value (n E[g] = 1), and no 1/n term (the threshold's fluctuation is of order
    1 / support, not 1/n). nan where the 1/n term exceeds BREAKDOWN of the gap."""
    g, w = _cosine_g(name, n, d, tau)
    glogg = g * np.log(np.where(g > 0, g, 1.0))
    a, b = float(glogg @ w), float(g @ w)
    gap = a / b - math.log(b)
    support = n * float((g > 0) @ w)
    if name in ("sparsemax", "entmax15"):
        return gap, support
    var_g = float(g**2 @ w) - b**2
    cov = float(glogg * g @ w) - a * b
    f_bb, f_ab = 2 * a / b**3 + 1 / b**2, -1 / b**2
    term = (f_bb * var_g / 2 + f_ab * cov) / n
    if abs(term) > BREAKDOWN * gap:
        return math.nan, support  # the keys do not self-average (the frozen phase of §3.4)
    return gap + term, support


# --- the mean gradient at large logit scale (§12.3) ----------------------------------------------

SPACING_NODES = 400  # gauss-legendre nodes over the top key's position x in [-12, 12]
TIE_NODES = 200  # gauss-legendre nodes over the scaled gap y = scale * (z_(1) - z_(2))
# the gradient law at large scale: two keys near a tie carry the mean (§12.3)
TWO_KEY = ("softmax", "sink", "softpick", "ssmax", "sparsemax", "entmax15")


def top_spacing_density(n: int, delta: np.ndarray) -> np.ndarray:
    """Density of z_(1) - z_(2), the gap between the two largest of n i.i.d. N(0, 1), at `delta`:
    n (n - 1) integral phi(x) phi(x - delta) Phi(x - delta)^{n-2} dx (gauss-legendre in x)."""
    t, w = _legendre(SPACING_NODES)
    x, w = 12.0 * t, 12.0 * w
    second = x[None, :] - np.asarray(delta, dtype=float)[:, None]
    pdf = lambda u: np.exp(-(u**2) / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    body = pdf(x)[None, :] * pdf(second) * _normal_cdf(second) ** (n - 2)
    return n * (n - 1) * (body @ w)


def tie_profile(name: str, y: np.ndarray) -> np.ndarray:
    """||do/ds||^2 / (2 d) of two keys whose logits differ by y, the others at zero weight, in
    expectation over values v ~ N(0, I_d) (E||v_1 - v_2||^2 = 2d): softmax-like 2 p^2 (1 - p)^2
    with p = sigma(y); sparsemax 1/2 on its two-key support (y < 1: J = I - 1 1^T / 2); 1.5-entmax
    2 a^2 b^2 / (a + b)^2 with a - b = y/2, a^2 + b^2 = 1, while y < 2."""
    y = np.asarray(y, dtype=float)
    if name in ("softmax", "sink", "softpick", "ssmax"):
        p = 1.0 / (1.0 + np.exp(-y))
        return 2 * p**2 * (1 - p) ** 2
    if name == "sparsemax":
        return np.where(y < 1.0, 0.5, 0.0)
    if name == "entmax15":
        q = np.minimum(y, 2.0) ** 2 / 4
        return np.where(y < 2.0, (1 - q) ** 2 / (2 * (2 - q)), 0.0)
    raise ValueError(f"{name!r} has no two-key law (§12.3)")


def _sigmoid_grad_sq(n: int, d: int, scale: float) -> float:
    """Exact: n d E_z[sigma'(scale z - log n)^2], over y = scale z - log n (sigma' decays like
    e^{-|y|}, so y in [-60, 60] with the gaussian density of z = (y + log n) / scale)."""
    t, w = _legendre(TIE_NODES * 2)
    y, w = 60.0 * t, 60.0 * w
    slope = np.exp(-np.logaddexp(0.0, -y) - np.logaddexp(0.0, y))  # sigma(y) (1 - sigma(y))
    z = (y + math.log(n)) / scale
    density = np.exp(-(z**2) / 2) / (math.sqrt(2 * math.pi) * scale)
    return n * d * float((slope**2 * density) @ w)


@lru_cache(maxsize=4096)
def mean_grad_sq(name: str, n: int, d: int, scale: float) -> float:
    """E ||do/ds||_F^2 for gaussian logits s = scale z and values N(0, I_d) (§12.3): exact for
    ReLU (d / (2n): slope 1/n on the ~n/2 positive keys, at every scale) and sigmoid
    (quadrature); for the maps that freeze onto the top key, the two-key law at large scale,
    2 d integral f(y / scale) profile(y) dy / scale with f the top spacing's density (SSMax:
    softmax at scale b log n, times (b log n)^2). It falls like 1/scale, not exponentially: the
    mean is carried by near-ties (§9.3). Soft-capping has no such law (its top keys saturate
    together): nan."""
    if name == "relu":
        return d / (2 * n)
    if name == "sigmoid":
        return _sigmoid_grad_sq(n, d, scale)
    if name == "ssmax":
        q = nz.SSMAX_B * math.log(n)
        return q**2 * mean_grad_sq("softmax", n, d, q * scale)
    if name not in TWO_KEY:
        return math.nan
    top = {"sparsemax": 1.0, "entmax15": 2.0}.get(name, 40.0)  # the profile is 0 (or < 1e-34) past
    t, w = _legendre(TIE_NODES)
    y, w = (t + 1) * top / 2, w * top / 2
    return 2 * d * float((top_spacing_density(n, y / scale) * tie_profile(name, y)) @ w) / scale
