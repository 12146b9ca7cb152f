"""Entropy of softmax attention weights (docs/science.md §3.2–§3.5, §4.2–§4.5).

H = -sum_i p_i log p_i with p = softmax(s). Everything below rests on the exact identity

    log n - H = KL(p || uniform) = sum_i p_i s_i - log((1/n) sum_i e^{s_i}),

i.e. the entropy deficit is "mean logit under p" minus "log of the mean exponential".
When the s_i are i.i.d. and n is large, both averages obey the law of large numbers,
which is where the Gaussian and temperature formulas come from.

All functions broadcast over numpy arrays and return numpy float64 (0-d results come
back as numpy scalars). Only numpy and the standard library are used.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "small_scale_entropy",
    "rem_x",
    "rem_regime",
    "rem_entropy",
    "effective_dot_product_scale",
    "asymptotic_gap",
    "asymptotic_gap_argmax",
    "exact_gap",
    "exact_gap_argmax",
    "random_direction_gap",
    "digamma",
    "gaussian_max_level",
    "frozen_entropy",
    "gaussian_entropy_exact",
]


def _check(name: str, value, minimum: float, strict: bool = False) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    bad = ~(arr > minimum) if strict else ~(arr >= minimum)
    if np.any(bad):
        op = ">" if strict else ">="
        raise ValueError(f"{name} must be {op} {minimum}, got {arr[bad].ravel()[0]!r}")
    return arr


# --------------------------------------------------------------------------- Gaussian logits


def small_scale_entropy(n, sigma):
    """H ~= log n - sigma^2/2 for i.i.d. Gaussian logits s_i ~ N(0, sigma^2).

    Why: with S = mean e^s and T = mean s e^s, H = log n + log S - T/S; by the law of
    large numbers S -> E[e^s] = e^{sigma^2/2} and T/S -> E[s e^s]/E[e^s] = sigma^2.
    For Gaussian logits this n -> inf limit is exact at every fixed sigma (no sigma^4
    term); the conditions are finite-n ones: the sums must self-average, i.e.
    e^{sigma^2} << n (equivalently sigma well below sqrt(2 log n), see `rem_x`).
    Leading finite-n bias (delta method): E[H] - prediction
    ~= (sigma^2 e^{sigma^2} - (e^{sigma^2} - 1)/2) / n ~= sigma^2 / (2n) for small sigma.
    """
    n = _check("n", n, 1)
    sigma = _check("sigma", sigma, 0)
    return (np.log(n) - 0.5 * sigma**2)[()]


def rem_x(n, sigma):
    """x = sigma / sqrt(2 log n), the random-energy-model control parameter.

    Why: the largest of n Gaussian logits is ~ sigma sqrt(2 log n); x compares the
    logit spread with it. x = +inf for n = 1 (a single key is always 'frozen').
    """
    n = _check("n", n, 1)
    sigma = _check("sigma", sigma, 0)
    log_n = np.log(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(log_n > 0, sigma / np.sqrt(2 * log_n), np.inf)
    return x[()]


def rem_regime(n, sigma):
    """'liquid' where x = rem_x(n, sigma) < 1 (weights spread over ~n^{1-x^2} keys),
    'frozen' where x >= 1 (weights condense onto O(1) keys)."""
    regime = np.where(np.asarray(rem_x(n, sigma)) < 1, "liquid", "frozen")
    return str(regime) if regime.ndim == 0 else regime


def rem_entropy(n, sigma):
    """Random-energy-model asymptote: log n * (1 - x^2) for x < 1, and 0 for x >= 1.

    Why: as n -> inf at fixed x = sigma/sqrt(2 log n), H / log n -> 1 - x^2 in the
    liquid phase (there log n (1 - x^2) = log n - sigma^2/2, the same formula as
    `small_scale_entropy`) and H = O(1) in the frozen phase (the weights converge to a
    Poisson-Dirichlet law with H of order one), so the asymptote of H / log n is 0.
    We return 0 there: the leading-order prediction, continuous at x = 1. Convergence
    in n is slow (corrections ~ log log n / log n), so expect visible departures.
    """
    n = np.asarray(_check("n", n, 1))
    x = np.asarray(rem_x(n, sigma))
    return np.where(x < 1, np.log(n) * (1 - np.minimum(x, 1) ** 2), 0.0)[()]


def effective_dot_product_scale(d, scale):
    """Effective logit std for s_i = q.k_i / sqrt(d) with q, k_i entries i.i.d. N(0, scale^2).

    Why: given q, s_i ~ N(0, scale^2 ||q||^2 / d) exactly, and ||q||^2/d -> scale^2 by
    the law of large numbers, so the logit std is ~ scale^2. This is an approximation
    in d: sigma_eff = scale^2 sqrt(chi2_d / d) fluctuates from query to query with
    relative std ~ 1/sqrt(2d); E[sigma_eff^2] = scale^4 exactly, while
    E[sigma_eff] = scale^2 (1 - 1/(4d) + O(d^-2)). `d` only broadcasts the result.
    """
    d = _check("d", d, 1)
    scale = _check("scale", scale, 0)
    return (scale**2 + 0 * d)[()]


# --------------------------------------------------------------------------- temperature


def _gap_parts(tau):
    """Return u = 1/tau, r = e^{-2u}, w = 1 - r and t = 2u/w - 1 >= 0, all stably."""
    u = 1.0 / _check("tau", tau, 0, strict=True)
    r = np.exp(-2 * u)  # underflows to 0 harmlessly for small tau
    w = -np.expm1(-2 * u)
    small = u < 0.05
    us = np.where(small, u, 0.0)
    # t = u (1 + coth u) - 1; below u = 0.05 its Taylor series avoids cancellation in 2u - w.
    t_series = us + us**2 / 3 - us**4 / 45 + 2 * us**6 / 945 - us**8 / 4725
    with np.errstate(divide="ignore", invalid="ignore"):
        t_direct = (2 * u - w) / w
    return u, r, w, np.where(small, t_series, t_direct)


def _phi(t):
    """phi(t) = t - log(1 + t) >= 0, with a series for small t (cancellation)."""
    t = np.asarray(t, dtype=np.float64)
    ts = np.where(t < 0.05, t, 0.0)
    series = np.zeros_like(ts)
    for k in range(14, 1, -1):  # Horner for sum_{k>=2} (-1)^k t^k / k, error < t^15
        series = ts * (series + (-1) ** k / k)
    series *= ts
    return np.where(t < 0.05, series, t - np.log1p(np.maximum(t, 0.05)))  # max(): no warnings


def asymptotic_gap(tau):
    """g(tau) = max_f [(f a - (1-f) b) / (tau Z) - log Z], a = e^{1/tau}, b = 1/a, Z = f a + (1-f)
    b.

    This is the n -> inf worst case of log n - H for cosine logits s_i = cos(theta_i)/tau:
    with u = 1/tau, d(log n - H)/ds_j = p_j (s_j - sum_i p_i s_i), so the gap only grows as
    a logit moves away from the p-weighted mean: every logit ends at +-u, and the worst
    configuration puts a fraction f of the keys at cos = +1, the rest at -1.
    Closed form: dG/df = 2u/Z^2 - (a - b)/Z (because (a+b)Z - (fa-(1-f)b)(a-b) = 2ab = 2),
    so the unique maximiser has Z* = u / sinh u, and substituting,

        g = y - 1 - log y,   y = a / Z* = u (1 + coth u) = 2u / (1 - e^{-2u}).

    Limits: g = 2/tau - log(2/tau) - 1 + (2/tau - 1) e^{-2/tau} + ... as tau -> 0, and
    g = 1/(2 tau^2) - 1/(36 tau^4) + O(tau^-6) as tau -> inf. Evaluated with expm1/log1p and series,
    stable for tau in [1e-300, 1e300].
    """
    _, _, _, t = _gap_parts(tau)
    return _phi(t)[()]


# g(1) = 0.4745...: at tau = 1 no cosines open a gap wider than this as n -> infinity (§4.3); the
# bound the temperature kinds judge and draw, and softmax's floor among the normalisers
G1 = float(asymptotic_gap(1.0))


def asymptotic_gap_argmax(tau):
    """f*(tau), the fraction of keys at cos = +1 in the worst case of `asymptotic_gap`.

    Closed form from Z* = u / sinh u (u = 1/tau):
    f* = (u / sinh u - e^{-u}) / (2 sinh u) = t e^{-2u} / (1 - e^{-2u}), t = 2u/(1 - e^{-2u}) - 1.
    f* -> 1/2 as tau -> inf and f* ~ (2u - 1) e^{-2u} -> 0 as tau -> 0.
    """
    _, r, w, t = _gap_parts(tau)
    with np.errstate(invalid="ignore"):
        f = np.where(w > 0, t * r / w, 0.5)  # w = 0 only when u underflows (tau ~ inf)
    return f[()]


def _two_point_gap(f, u):
    """log n - H when a fraction f > 0 of the n keys sit at s = +u and the rest at -u.

    Exact at any n (it only depends on f = k/n): with D = f + (1-f) e^{-2u} = Z/a,
    log n - H = -2u (1-f) e^{-2u} / D - log D, computed without overflow.
    """
    r = np.exp(-2 * u)
    w = -np.expm1(-2 * u)
    D = 1 - (1 - f) * w
    return np.maximum(-2 * u * (1 - f) * r / D - np.log1p(-(1 - f) * w), 0.0)


def _exact_candidates(n, tau):
    n = _check("n", n, 1)
    if np.any(n != np.floor(n)):
        raise ValueError("n must be an integer number of keys")
    n, tau = np.broadcast_arrays(n, _check("tau", tau, 0, strict=True))
    k0 = np.floor(np.asarray(asymptotic_gap_argmax(tau)) * n)
    ks = np.stack([np.clip(k0 + j, 1, n) for j in (-1, 0, 1, 2)])
    return ks, _two_point_gap(ks / n, 1.0 / tau)


def exact_gap(n, tau):
    """Exact finite-n worst case of log n - H: max over k = 1..n of the gap with k keys at
    cos = +1 and n - k at cos = -1.

    The gap with k keys at +1 is G(k/n), G the function maximised in `asymptotic_gap`
    (exact, not asymptotic), and G is unimodal in f (dG/df has the sign of Z* - Z, Z
    increasing in f), so the maximum over k is at floor(f* n) or floor(f* n) + 1; we
    evaluate k in floor(f* n) + {-1, 0, 1, 2} (clipped to [1, n]) to absorb rounding.
    O(1) per (n, tau), any n. Always <= asymptotic_gap(tau), approaching it as n grows.
    """
    _, gaps = _exact_candidates(n, tau)
    return gaps.max(axis=0)[()]


def exact_gap_argmax(n, tau):
    """The k (number of keys at cos = +1) attaining `exact_gap`; the smallest on ties."""
    ks, gaps = _exact_candidates(n, tau)
    best = np.argmax(gaps, axis=0)
    return np.take_along_axis(ks, best[None], axis=0)[0].astype(np.int64)[()]


def random_direction_gap(d, tau):
    """log n - H ~= 1 / (2 d tau^2) for query and keys uniform on the unit sphere in R^d.

    Why: cos(theta_i) has mean 0 and variance 1/d, so the logits have variance
    1/(d tau^2); to second order in the logit spread log n - H ~= Var(s)/2 (n -> inf).
    Valid while this is small (d tau^2 >> 1) and n is large.
    """
    d = _check("d", d, 1)
    tau = _check("tau", tau, 0, strict=True)
    return (0.5 / (d * tau**2))[()]


def gap_tolerance(n: int, tau: float) -> float:
    """Allowance for float64 rounding when comparing a measured gap with `exact_gap`.

    Both sides are sums of terms no larger than log n and the logit range 2/tau, each
    rounded with relative error ~1e-16 (times log2 n for the pairwise sums): at most
    ~1e-14 (log n + 2/tau). A real violation of the bound would be far larger.
    """
    return 1e-12 * (1 + math.log(n) + 2 / tau)


# --------------------------------------------------------------------------- the frozen phase

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def digamma(x):
    """psi(x) = d log Gamma(x)/dx for x > 0 (numpy, no scipy): the recurrence psi(x) = psi(x + 1)
    - 1/x up to x >= 10, then the asymptotic series (error < 1e-15 there)."""
    x = _check("x", x, 0, strict=True).copy()
    shift = np.zeros_like(x)
    while np.any(x < 10):
        low = x < 10
        shift -= np.where(low, 1 / x, 0.0)
        x = np.where(low, x + 1, x)
    inv2 = 1 / x**2
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return (np.log(x) - 0.5 / x - series + shift)[()]


def _gaussian_tail(x: float) -> float:
    """P(Z > x) for a standard normal Z."""
    return 0.5 * math.erfc(x / math.sqrt(2))


def _normal_quantile_above(q: float) -> float:
    """x with P(Z > x) = q, 0 < q < 1 (bisection: 200 halvings of [-10, 40])."""
    low, high = -10.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if _gaussian_tail(mid) > q else (low, mid)
    return (low + high) / 2


def gaussian_max_level(n: float) -> float:
    """b_n with P(Z > b_n) = 1/n: the level of the largest of n standard normals."""
    return _normal_quantile_above(1 / n)


def frozen_entropy(n, sigma):
    """E[H] of softmax(sigma z), z_i i.i.d. N(0, 1), in the frozen phase (docs/science.md §3.4).

    Why: near the top the z_i form a Poisson process of intensity n phi(z) ~ n phi(b_n) e^{-b_n (z
    - b_n)} (the log-density's slope at the level b_n of the maximum, `gaussian_max_level`), so the
    weights e^{sigma z_i}, normalised, follow the Poisson-Dirichlet law PD(m, 0), m = b_n / sigma.
    For PD(m, 0), E[sum_i f(p_i)] = E[f(B)/B] with B ~ Beta(1 - m, m) (the size-biased pick), so
    E[H] = -E[log B] = psi(1) - psi(1 - m): 0 as m -> 0 (one-hot), infinite at m = 1 (the freezing
    point); E[sum p^2] = 1 - m. b_n -> sqrt(2 log n) gives Derrida's m = 1/x; what the
    linearisation leaves out (the curvature of the normal density, the keys below the top) is
    O(1 / log n), largest near m = 1 (`gaussian_entropy_exact` measures it). nan where m >= 1.
    """
    n = np.asarray(_check("n", n, 2), dtype=float)
    sigma = np.asarray(_check("sigma", sigma, 0, strict=True), dtype=float)
    n, sigma = np.broadcast_arrays(n, sigma)
    level = np.vectorize(gaussian_max_level, otypes=[float])(n) if n.size else n
    m = level / sigma
    frozen = m < 1
    safe = np.where(frozen, 1 - m, 1.0)
    return np.where(frozen, digamma(np.ones_like(safe)) - digamma(safe), np.nan)[()]


# ----------------------------------------------------- exact E[H] for gaussian logits (quadrature)


def _log_ndtr_scaled(x: np.ndarray) -> np.ndarray:
    """log P(Z <= x) + x^2/2, without overflow or cancellation for very negative x."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    far = x < -30
    erfc = np.vectorize(math.erfc, otypes=[float])
    near = x[~far]
    out[~far] = np.log(0.5 * erfc(-near / math.sqrt(2))) + near**2 / 2
    xf = x[far]
    inv2 = 1 / xf**2
    out[far] = (
        -np.log(-xf)
        - LOG_SQRT_2PI
        + np.log1p(-inv2 * (1 - 3 * inv2 * (1 - 5 * inv2 * (1 - 7 * inv2))))
    )
    return out


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


def _panels(low: np.ndarray, high: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights over [low, high] (arrays, one interval per row), split
    into `count` equal panels: shape (rows, count * 16); weight 0 where high <= low."""
    width = np.maximum(high - low, 0.0)[:, None] / count
    starts = low[:, None] + width * np.arange(count)
    nodes = starts[:, :, None] + width[:, :, None] * (_GL_NODES + 1) / 2
    weights = width[:, :, None] * _GL_WEIGHTS / 2 * np.ones_like(nodes)
    return nodes.reshape(len(low), -1), weights.reshape(len(low), -1)


# below this u = sigma z - y, 1 - exp(-e^u) = e^u to double precision; above U_HIGH it is 1
U_LOW, U_HIGH, Z_LIMIT = 40.0, 4.0, 14.0


def _laplace_parts(sigma: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F(y) = 1 - E exp(-e^{sigma z - y}) and G(y) = E[sigma z e^{sigma z - y} exp(-e^{sigma z -
    y})], z ~ N(0, 1): closed forms where u = sigma z - y < -U_LOW (there 1 - e^{-e^u} = e^u) or
    u > U_HIGH (there it is 1 and G's integrand vanishes), Gauss-Legendre between."""
    c1, c2 = (y - U_LOW) / sigma, (y + U_HIGH) / sigma
    x = c1 - sigma
    common = -U_LOW - (y - U_LOW) ** 2 / (2 * sigma**2)  # sigma^2/2 - y - x^2/2
    left_f = np.exp(common + _log_ndtr_scaled(x))
    left_g = sigma * (sigma * left_f - np.exp(common - LOG_SQRT_2PI))
    right_f = 0.5 * np.vectorize(math.erfc, otypes=[float])(c2 / math.sqrt(2))
    low, high = np.maximum(c1, -Z_LIMIT), np.minimum(c2, Z_LIMIT)
    count = max(
        1, int(math.ceil(min(high.max() - low.min(), (U_LOW + U_HIGH) / sigma) * max(sigma, 1) / 2))
    )
    z, w = _panels(low, high, count)
    u = sigma * z - y[:, None]
    density = w * np.exp(-(z**2) / 2 - LOG_SQRT_2PI)
    eu = np.exp(u)
    mid_f = (density * -np.expm1(-eu)).sum(axis=1)
    mid_g = (density * sigma * z * eu * np.exp(-eu)).sum(axis=1)
    return left_f + mid_f + right_f, left_g + mid_g


@functools.lru_cache(maxsize=4096)
def gaussian_entropy_exact(n: int, sigma: float, step: float | None = None) -> float:
    """E[H] of softmax(s), s_i i.i.d. N(0, sigma^2), at finite n, by quadrature (no sampling).

    Why: H = log Z - sum_i p_i s_i, Z = sum_i e^{s_i}, and with L(t) = E exp(-t e^s),
        E log Z = int_0^inf (e^{-t} - L(t)^n) dt / t,
        E sum_i p_i s_i = n int_0^inf E[s e^s e^{-t e^s}] L(t)^{n-1} dt
    (1/Z = int_0^inf e^{-tZ} dt and independence). With t = e^{-y} both are integrals over y of
    one-dimensional normal integrals (`_laplace_parts`); Gauss-Legendre panels of width `step`
    in y (default max(2, sigma/20)). Exact up to quadrature error (below 1e-8 nats; checked
    against brute force and a finer grid in tests/theory/test_theory_entropy.py). Used to say where
    the asymptotic predictions (§3.3, §3.4) are accurate.
    """
    if n < 1 or sigma < 0:
        raise ValueError(f"need n >= 1 and sigma >= 0, got n={n!r}, sigma={sigma!r}")
    if n == 1:
        return 0.0
    if sigma == 0:
        return math.log(n)
    # Where y is below sigma z_full - U_HIGH, P(u > U_HIGH) >= 40/n, so L^n < e^-40: there the
    # log Z integrand is exp(-e^{-y}) (1 beyond y = U_LOW) and the sum p s integrand 0. Above
    # sigma z_none + log n + U_LOW + 10, n (1 - L) < 1e-17: both integrands vanish.
    z_full = _normal_quantile_above(min(40 / n, 0.5))
    z_none = _normal_quantile_above(1e-20 / n)
    skip_low, skip_high = U_LOW, max(sigma * z_full - U_HIGH, U_LOW)
    top = sigma * z_none + math.log(n) + U_LOW + 10
    log_z, mean_ps = skip_high - skip_low, 0.0
    width = step or max(2.0, sigma / 20)  # the y integrands vary on the scale sigma / b_n or 1
    for low, high in ((-U_LOW - 5, skip_low), (skip_high, top)):
        y, w = _panels(np.array([low]), np.array([high]), int(math.ceil((high - low) / width)))
        y, w = y[0], w[0]
        f, g = _laplace_parts(sigma, y)
        with np.errstate(divide="ignore"):
            log_l = np.log1p(-np.minimum(f, 1.0))
        log_z += (w * (np.exp(-np.exp(-y)) - np.exp(n * log_l))).sum()
        mean_ps += n * (w * g * np.exp((n - 1) * log_l)).sum()
    return float(log_z - mean_ps)


def deficit_ratio_exact(n: int, sigma: float) -> float:
    """(log n - E[H]) / (sigma^2/2) for i.i.d. N(0, sigma^2) logits at finite n, from
    `gaussian_entropy_exact`: the expected value of the statistic the small-scale law (§3.3)
    predicts to be 1, with no sampling."""
    if sigma <= 0:
        raise ValueError(f"the deficit ratio needs sigma > 0, got {sigma!r}")
    return (math.log(n) - gaussian_entropy_exact(int(n), float(sigma))) / (sigma**2 / 2)


CROSSING_SCAN = 16  # first look over the range: the ratio is monotone on every range tested
CROSSING_STEPS = 50  # bisection steps: the bracket shrinks 2^-50, far below any located interval


def deficit_ratio_crossing(n: int, edge: float, lo: float, hi: float) -> float | None:
    """The smallest sigma in [lo, hi] (lo > 0) at which the exact deficit ratio crosses `edge`
    (first a scan of `CROSSING_SCAN` points, then bisection), or None if it does not cross
    there. Why: where the small-scale law stops holding at finite n is a property of E[H], which
    the quadrature gives exactly; a boundary located from samples should find the same place,
    so this is a check of the kernels and of the locating method, not a prediction of a theory
    that could be wrong (docs/science.md §7.9)."""
    grid = np.linspace(lo, hi, CROSSING_SCAN)
    offset = np.array([deficit_ratio_exact(n, float(s)) - edge for s in grid])
    change = np.flatnonzero(np.sign(offset[1:]) != np.sign(offset[:-1]))
    if change.size == 0:
        return None
    low, high = float(grid[change[0]]), float(grid[change[0] + 1])
    below = offset[change[0]] < 0
    for _ in range(CROSSING_STEPS):
        middle = (low + high) / 2
        if (deficit_ratio_exact(n, middle) - edge < 0) == below:
            low = middle
        else:
            high = middle
    return (low + high) / 2
