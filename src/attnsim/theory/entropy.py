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
