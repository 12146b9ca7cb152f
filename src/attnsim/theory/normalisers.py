"""Predictions for the normalisers of `attnsim.subjects.normalisers` (docs/science.md §12), written
before any data, each law chosen by the record's form and properties, never by its name (a map
whose form or property is `Unknown` gets NaN: not predicted): the output's error under i.i.d.
gaussian logit noise (a variance term and the bias the normalisation may leave), the entropy and
gradient at large logit scale, and the entropy floor under cosine logits.

Error model (§12.2). With o = sum_i p_i v_i and noisy logits s + eps, eps_i ~ N(0, sigma^2):

- elementwise weights (the logistic and hinge forms: sigmoid, ReLU) are exact: o~ = sum_i
  p(s_i + eps_i) v_i has mean sum_i E[p(s_i + eps)] v_i and variance sum_i Var p(s_i + eps)
  ||v_i||^2 (gauss-hermite);
- the exponential and null-key forms (softmax, SSMax, the sink: multiplicative noise e^eps on each
  key): the delta method, kappa sum_j p_j^2 ||v_j - o||^2 with kappa = e^{sigma_eff^2} - 1,
  sigma_eff = sigma b log n with SSMax's gain; the null key keeps a bias (m - 1) p_0 / (p_0 +
  m (1 - p_0)) along o, m = E[e^eps];
- the other forms (soft-capping, softpick, sparsemax, 1.5-entmax): first order,
  sigma^2 ||do/ds||_F^2; the rectified exponential's mean (its -1 breaks the factorisation) in
  the mean-field limit of a self-averaging denominator.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from attnsim.subjects import known, normalisers
from attnsim.subjects.normalisers import (
    CAPPED,
    ELEMENTWISE,
    EXPONENTIAL,
    HINGE,
    LOGISTIC,
    NULL_KEY,
    RECTIFIED_EXPONENTIAL,
    THRESHOLD,
    Normaliser,
    mass_and_entropy,
)
from attnsim.theory.entropy import exact_gap_argmax

GAUSS_NODES = 24  # gauss-hermite nodes: ~1e-10 for the smooth (sigmoid) integrand at sigma <= 1
MULTIPLICATIVE = (EXPONENTIAL, NULL_KEY)  # the noise multiplies each key's weight by e^eps


def _nodes(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(GAUSS_NODES)
    return sigma * x, w / math.sqrt(2 * math.pi)


def mean_exp(sigma: float) -> float:
    """m = E[e^eps] = e^{sigma^2/2}: the factor sigmoid attention keeps and softmax divides out."""
    return math.exp(sigma**2 / 2)


def effective_sigma(name: str, n: int, sigma: float) -> float:
    """The noise's std on the scale the map's softmax sees: a gain (SSMax's b log n) multiplies
    the logits, noise included."""
    b = normalisers.get(name).log_gain
    return sigma * b * math.log(n) if b is not None else sigma


_erfc = np.frompyfunc(math.erfc, 1, 1)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erfc(-x / math.sqrt(2)), dtype=np.float64) / 2


def elementwise_moments(name: str, s: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of p(s_i + eps) per key for the elementwise normalisers: sigmoid by
    gauss-hermite quadrature over eps, ReLU in closed form (a kink defeats quadrature):
    E ReLU(x) = s Phi(s/sigma) + sigma phi(s/sigma), E ReLU(x)^2 = (s^2 + sigma^2) Phi + s sigma
    phi for x ~ N(s, sigma^2)."""
    n = s.shape[-1]
    form = normalisers.get(name).form
    if form == HINGE:
        if sigma == 0:
            p = np.maximum(s, 0.0) / n
            return p, np.zeros_like(p)
        z = s / sigma
        cdf = _normal_cdf(z)
        pdf = np.exp(-(z**2) / 2) / math.sqrt(2 * math.pi)
        mean = s * cdf + sigma * pdf
        second = (s**2 + sigma**2) * cdf + s * sigma * pdf
        return mean / n, np.maximum(second - mean**2, 0.0) / n**2
    if form != LOGISTIC:
        raise ValueError(f"{name!r} is not elementwise")
    x, w = _nodes(sigma)
    p = np.exp(-np.logaddexp(0.0, math.log(n) - (s[..., None] + x)))
    mean = p @ w
    return mean, np.maximum(p**2 @ w - mean**2, 0.0)


def grad_sq(name: str, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """||do/ds||_F^2 = sum_j ||sum_i (dp_i/ds_j) v_i||^2 per trial (s: (T, n), v: (T, n, d)),
    from the normaliser's Jacobian in closed form (its record's `output_gradient`): the
    first-order noise sensitivity."""
    g = normalisers.get(name).output_gradient(s, v)
    return np.einsum("tnd,tnd->t", g, g)


def _delta_grad_sq(p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """sum_j ||p_j (v_j - o)||^2: the delta method's sensitivity of multiplicative weights (the
    gain of the logits is in sigma_eff, not here)."""
    o = np.einsum("tn,tnd->td", p, v)
    g = p[..., None] * (v - o[:, None, :])
    return np.einsum("tnd,tnd->t", g, g)


def sink_bias(name: str, s: np.ndarray, sigma: float) -> np.ndarray:
    """Relative bias along o of the sink's output, (m - 1) p_0 / (p_0 + m (1 - p_0)) per trial:
    the noise multiplies the keys' mass by m = E[e^eps] (self-averaging over many keys) but not
    the sink's, so the cancellation is partial, of the order of the sink's weight p_0."""
    p0 = 1.0 - normalisers.get(name).weights(s).sum(axis=-1)
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
    cancels the noise's mean to this order); NaN for a map of unknown form (not predicted)."""
    record = normalisers.get(name)
    n = s.shape[-1]
    p = record.weights(s)
    o = np.einsum("tn,tnd->td", p, v)
    oo = np.einsum("td,td->t", o, o)
    if not known(record.form):
        nan = np.full(len(s), np.nan)
        return {"sq_err_pred": nan, "bias_pred": nan}
    if record.form in ELEMENTWISE:
        mean, var = elementwise_moments(name, s, sigma)
        bias = np.einsum("tn,tnd->td", mean - p, v)
        spread = np.einsum("tn,tnd,tnd->t", var, v, v)
        return {
            "sq_err_pred": np.einsum("td,td->t", bias, bias) + spread,
            "bias_pred": np.einsum("td,td->t", bias, o) / oo,
        }
    sig = effective_sigma(name, n, sigma)
    if record.form in MULTIPLICATIVE:
        variance = math.expm1(sig**2) * _delta_grad_sq(p, v)
    else:
        variance = sig**2 * grad_sq(name, s, v)
    if record.form == NULL_KEY:
        beta = sink_bias(name, s, sigma)
        return {"sq_err_pred": variance + beta**2 * oo, "bias_pred": beta}
    if record.form == RECTIFIED_EXPONENTIAL:
        bias = np.einsum("tn,tnd->td", softpick_mean_weights(s, sigma) - p, v)
        return {
            "sq_err_pred": variance + np.einsum("td,td->t", bias, bias),
            "bias_pred": np.einsum("td,td->t", bias, o) / oo,
        }
    return {"sq_err_pred": variance, "bias_pred": np.zeros(len(s))}


SECOND_ORDER_DRAWS = 2**21  # logits per quadrature below (2,048 rows at n = 1024): MC SE <~ 3%
SECOND_ORDER_SEED = 49  # a constant of the theory, not a run's seed (no draw of a run is reused)


def second_order_bias(name: str, n: int, logit_scale: float, sigma: float) -> float:
    """|beta_2|, the relative bias along o that the delta method neglects, in units of
    E[e^eps] - 1 (docs/science.md §12.2, "the second-order bias"): for multiplicative weights
    p~_i = p_i u_i / sum_j p_j u_j with u = e^eps / m (mean 1, variance kappa), expanding 1/sum
    to second order gives E p~_i = p_i (1 - kappa (p_i - sum p^2)), hence along o
    beta_2 = -kappa (sum p^3 / sum p^2 - sum p^2) (<v_i, o> ~ p_i d, ||o||^2 ~ d sum p^2),
    with the gain of SSMax in both the logits and the noise (kappa_eff, l_eff = b log n l).
    The expectation over gaussian logits is not self-averaging (sum p^3 is carried by the top
    keys), so it is taken over SECOND_ORDER_DRAWS / n fixed clean rows (a quadrature of the design's
    logit law, deterministic). Used for softmax's family and, as "kappa sum p^2 small", for every
    map predicted to have no first-order bias (its condition, not its law)."""
    gain = effective_sigma(name, n, 1.0)
    return _second_order(n, logit_scale * gain, sigma * gain, sigma)


@lru_cache(maxsize=512)
def _second_order(n: int, scale: float, sig: float, sigma: float) -> float:
    """second_order_bias on the scale the map's softmax sees (every map of a gain alike)."""
    unit = math.expm1(sigma**2 / 2)
    if unit <= 0:
        return 0.0
    rng = np.random.default_rng(SECOND_ORDER_SEED)
    s = scale * rng.standard_normal((max(256, SECOND_ORDER_DRAWS // n), n))
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    s2 = np.einsum("tn,tn->t", p, p)
    s3 = np.einsum("tn,tn,tn->t", p, p, p)
    return float(math.expm1(sig**2) * np.mean(s3 / s2 - s2) / unit)


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
    soft-capping: every positive key at the same weight), and the hinge's scale-free value (ReLU);
    NaN where the behaviour is unknown (not predicted)."""
    record = normalisers.get(name)
    if record.large_scale == "freezes":
        return 0.0
    if record.large_scale == "saturates":
        return math.log(n / 2)
    if record.large_scale == "scale-free" and record.form == HINGE:
        return math.log(n / 2) - relu_entropy_offset()
    return math.nan


def gradient_vanishes_at_large_scale(name: str) -> bool:
    """Whether ||do/ds|| -> 0 as the logit scale grows (§12.3): everywhere but where the weights
    are scale-free (ReLU attention, whose slope 1/n on the positive keys does not depend on the
    scale). Softmax-like maps lose it exponentially, sparse ones exactly (a one-key support),
    saturating ones (sigmoid, soft-capping) only like 1/scale: the keys within ~1/scale of the
    threshold keep a slope. Raises for a map whose large-scale behaviour is unknown."""
    return normalisers.get(name).large_scale != "scale-free"


# --- cosine logits at temperature tau (§12.4) ----------------------------------------------------

SPHERE_NODES = 512  # gauss-legendre nodes per panel of the angle: ~1e-9 on the kinked integrands
# the mean field is given only while its 1/n term is below this share of the gap: beyond, the
# expansion has broken down (few keys carry the weight: at small tau and large d, SSMax at n = 4096)
BREAKDOWN = 0.1


def effective_inverse_temperature(name: str, n: int, tau: float = 1.0) -> float:
    """u_eff = log(g(u) / g(-u)) / 2, u = 1/tau: two logit levels +-u give the weights of softmax at
    +-u_eff, since p / sum p depends only on the ratio g(u) / g(-u) (§12.4). Defined for the
    bounded-ratio forms; the null key's p / sum p is softmax's exactly."""
    u = 1.0 / tau
    record = normalisers.get(name)
    if record.form == EXPONENTIAL and record.log_gain is not None:
        return record.log_gain * math.log(n) * u
    if record.form in (EXPONENTIAL, NULL_KEY):
        return u
    if record.form == CAPPED and record.cap is not None:
        c = record.cap
        return c * math.tanh(u / c)
    if record.form == LOGISTIC:
        # log sigma(x) = -log(1 + e^{-x}), at x = +-u - log n
        log_n = math.log(n)
        return float(np.logaddexp(0.0, u + log_n) - np.logaddexp(0.0, log_n - u)) / 2
    raise ValueError(f"{name!r} has no bounded weight ratio: no effective temperature (§12.4)")


def two_level_entropy(name: str, n: int, k: int, tau: float = 1.0) -> float:
    """Entropy of p / sum p for k logits at +1/tau and n - k at -1/tau, through the map itself."""
    s = np.where(np.arange(n) < k, 1.0, -1.0)[None, :] / tau
    return float(mass_and_entropy(normalisers.get(name).weights(s))[1][0])


@lru_cache(maxsize=4096)
def cosine_floor(name: str, n: int, tau: float = 1.0) -> float:
    """The largest entropy deficit log n - H that cosine logits cos(theta)/tau can produce (§12.4):
    for the bounded-ratio normalisers softmax's exact finite-n worst case (§4.4) at the effective
    temperature 1/u_eff, evaluated through the normaliser's own weights at the worst k and its
    neighbours (G is unimodal in k; so the value is the kernel's, bit for bit the maximum over
    every k); for the others log n, reached by one key at +1 (exact zeros elsewhere); NaN where
    the ratio's boundedness is unknown (not predicted)."""
    bounded = normalisers.get(name).bounded_ratio
    if not known(bounded):
        return math.nan
    if not bounded:
        return math.log(n)
    worst = int(exact_gap_argmax(n, 1.0 / effective_inverse_temperature(name, n, tau)))
    candidates = range(max(1, worst - 1), min(n, worst + 1) + 1)
    return max(math.log(n) - two_level_entropy(name, n, k, tau) for k in candidates)


@lru_cache(maxsize=8)
def _legendre(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (an eigenvalue problem: computed once), on one
    BLAS thread: in a process with OpenBLAS's default threads (`attnsim claims`, the run's
    summary) the solve woke the others, which then spun on: 0.4-2.7 CPU-s for this 0.05 CPU-s
    solve (measured), paid by every command that imports the normaliser claims. The jobs run one
    BLAS thread anyway: the same numbers."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
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


def _cosine_g(record: Normaliser, n: int, d: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """(g(x / tau), weights) on the cosine nodes: the unnormalised weight of a key whose cosine is x
    (p / sum p = g / sum g), with the nodes split at g's kink, by the map's form."""
    u = 1.0 / tau
    if record.form == THRESHOLD and record.power is not None:
        power = record.power
        shrink = 1.0 / power  # sparsemax (s - t)_+, 1.5-entmax (s/2 - t)_+^2
        t = _threshold(n, d, tau, power, shrink)
        x, w = _sphere_nodes(d, (t / (shrink * u),))
        return np.maximum(shrink * u * x - t, 0.0) ** power, w
    x, w = _sphere_nodes(d, (0.0,) if record.form in (HINGE, RECTIFIED_EXPONENTIAL) else ())
    s = u * x
    if record.form == HINGE:
        return np.maximum(s, 0.0), w
    if record.form == RECTIFIED_EXPONENTIAL:
        return np.maximum(np.expm1(s), 0.0), w
    if record.form == LOGISTIC:
        return np.exp(-np.logaddexp(0.0, math.log(n) - s)), w
    # softmax-like: g = e^{u_eff x}, scaled by e^{-u_eff} (p / sum p does not see the scale)
    if record.form == CAPPED and record.cap is not None:
        c = record.cap
        return np.exp(c * np.tanh(s / c) - c * math.tanh(u / c)), w
    scale = effective_inverse_temperature(record.name, n, tau)
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
    1 / support, not 1/n). nan where the 1/n term exceeds BREAKDOWN of the gap, and for a map of
    unknown form (not predicted)."""
    record = normalisers.get(name)
    if not known(record.form):
        return math.nan, math.nan
    g, w = _cosine_g(record, n, d, tau)
    glogg = g * np.log(np.where(g > 0, g, 1.0))
    a, b = float(glogg @ w), float(g @ w)
    gap = a / b - math.log(b)
    support = n * float((g > 0) @ w)
    if record.form == THRESHOLD:
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
    2 a^2 b^2 / (a + b)^2 with a - b = y/2, a^2 + b^2 = 1, while y < 2. (The rectified exponential
    is e^s - 1 ~ e^s on the top keys: softmax's; SSMax's gain is applied by `mean_grad_sq`.)"""
    y = np.asarray(y, dtype=float)
    record = normalisers.get(name)
    if record.form in (EXPONENTIAL, NULL_KEY, RECTIFIED_EXPONENTIAL):
        p = 1.0 / (1.0 + np.exp(-y))
        return 2 * p**2 * (1 - p) ** 2
    if record.form == THRESHOLD and record.power == 1.0:
        return np.where(y < 1.0, 0.5, 0.0)
    if record.form == THRESHOLD and record.power == 2.0:
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
    2 d integral f(y / scale) profile(y) dy / scale with f the top spacing's density (a gain q, as
    SSMax's b log n: the law at scale q l, times q^2). It falls like 1/scale, not exponentially:
    the mean is carried by near-ties (§9.3). Soft-capping has no such law (its top keys saturate
    together), nor has a map whose large-scale gradient is unknown: nan."""
    record = normalisers.get(name)
    law = record.large_scale_gradient
    if law == "exact" and record.form == HINGE:
        return d / (2 * n)
    if law == "exact" and record.form == LOGISTIC:
        return _sigmoid_grad_sq(n, d, scale)
    if not (known(law) and law == "near ties"):
        return math.nan
    gain = record.log_gain * math.log(n) if record.log_gain is not None else 1.0
    return _two_key_mean(name, gain, n, d, scale)


@lru_cache(maxsize=4096)
def _two_key_mean(name: str, gain: float, n: int, d: int, scale: float) -> float:
    """The two-key law of a near-tie map at logit scale gain * scale, times gain^2 (a gain scales
    the logits and so their gradient)."""
    if gain != 1.0:
        return gain**2 * _two_key_mean(name, 1.0, n, d, gain * scale)
    record = normalisers.get(name)
    # the profile is 0 (or < 1e-34) past y = top: 1 for sparsemax, 2 for 1.5-entmax, 40 else
    top = record.power if record.form == THRESHOLD and record.power is not None else 40.0
    t, w = _legendre(TIE_NODES)
    y, w = (t + 1) * top / 2, w * top / 2
    return 2 * d * float((top_spacing_density(n, y / scale) * tie_profile(name, y)) @ w) / scale
