"""Attention normalisers other than softmax, on batched logits (trials, n): the forward map, its
Jacobian-vector product and vector-Jacobian product (the backward pass of training), and the
entropy and total mass of the weights (docs/science.md §12).

Each normaliser maps a row of logits s to weights p, and the attention output is o = sum p_i v_i
as the normaliser's paper defines it (no renormalisation: sigmoid, softpick and ReLU weights need
not sum to one; the sink's weights sum to less than one, its null key having a zero value).
Fixed constants, as the papers use them:

- `sigmoid`: p_i = sigma(s_i - log n) (Ramapuram et al. 2024, b = -log n);
- `ssmax`: softmax(SSMAX_B log(n) s) (Nakanishi 2025; b is learnt there, SSMAX_B = 0.43 is the
  value in its examples);
- `softcap50`, `softcap30`: softmax(c tanh(s / c)) with c = 50 and 30 (Gemma 2);
- `sink`: e^{s_i} / (e^{s_0} + sum_j e^{s_j}) with a fixed null logit s_0 = SINK_LOGIT = 0;
- `softpick`: ReLU(e^{s_i} - 1) / sum_j |e^{s_j} - 1| (Zuhri et al. 2025; 0 where every s_j = 0);
- `sparsemax`: the Euclidean projection of s onto the simplex (Martins & Astudillo 2016);
- `entmax15`: alpha-entmax with alpha = 1.5, p = ReLU(s/2 - tau)^2 (Peters et al. 2019);
- `relu`: ReLU(s_i) / n (Wortsman et al. 2023).

`softmax` is here too, for the tests and the theory; the kinds keep their own softmax paths
(kernels/softmax.py), so softmax rows are untouched by this module.
"""

from __future__ import annotations

import math

import numpy as np

SSMAX_B = 0.43
SINK_LOGIT = 0.0
SOFTCAPS = {"softcap50": 50.0, "softcap30": 30.0}
NORMALISERS = (
    "softmax",
    "sigmoid",
    "ssmax",
    "softcap50",
    "softcap30",
    "sink",
    "softpick",
    "sparsemax",
    "entmax15",
    "relu",
)
# the weights of these sum to one on every row (the others' total mass is a measurement)
NORMALISED = ("softmax", "ssmax", "softcap50", "softcap30", "sparsemax", "entmax15")


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_jvp(p: np.ndarray, ds: np.ndarray) -> np.ndarray:
    """(diag p - p p^T) ds, row by row; also right for a sink (p summing to less than one)."""
    return p * (ds - np.sum(p * ds, axis=-1, keepdims=True))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _sink_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys' weights and the null key's own weight e^{s_0} / (e^{s_0} + sum_j e^{s_j})."""
    peak = np.maximum(s.max(axis=-1, keepdims=True), SINK_LOGIT)
    e = np.exp(s - peak)
    null = np.exp(SINK_LOGIT - peak)
    total = null + e.sum(axis=-1, keepdims=True)
    return e / total, null / total


def _sink(s: np.ndarray) -> np.ndarray:
    return _sink_parts(s)[0]


def _softmax_vjp(p: np.ndarray, g: np.ndarray, null: np.ndarray | float = 0.0) -> np.ndarray:
    """J^T g = p (g - sum p g) (J symmetric), with a null key of weight `null` and g = 0 (the
    sink's zero value), centred on the heaviest key's g: with c = g - g_top,
    p (c - sum p c - null (0 - g_top)) is the same algebra (the weights and the null's sum to
    one), and at one-hot weights it is accurate instead of a rounding residue of g_top (as a
    training kernel's softmax backward must be, docs/science.md §12.7)."""
    top = np.argmax(p, axis=-1)[..., None]
    ref = np.take_along_axis(g, top, axis=-1)
    ref = np.where(np.take_along_axis(p, top, axis=-1) >= null, ref, 0.0)  # the null key on top
    c = g - ref
    return p * (c - (np.sum(p * c, axis=-1, keepdims=True) - null * ref))


def _softpick_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(e^{s} - 1) and e^{s} scaled by e^{-m}, m = max(0, max s) (no overflow), and the scale."""
    m = np.maximum(s.max(axis=-1, keepdims=True), 0.0)
    shift = np.exp(-m)
    # expm1 keeps e^s - 1 accurate near s = 0; beyond m = 700 e^{-m} is negligible anyway
    small = m < 700.0
    d = np.where(small, np.expm1(np.minimum(s, 700.0)) * shift, np.exp(s - m) - shift)
    return d, np.exp(s - m), shift


def _softpick(s: np.ndarray) -> np.ndarray:
    d, _, _ = _softpick_parts(s)
    total = np.abs(d).sum(axis=-1, keepdims=True)
    return np.divide(np.maximum(d, 0.0), total, out=np.zeros_like(d), where=total > 0)


def _softpick_jvp(s: np.ndarray, ds: np.ndarray) -> np.ndarray:
    d, e, _ = _softpick_parts(s)
    total = np.abs(d).sum(axis=-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    p = np.maximum(d, 0.0) / safe
    d_num = np.where(d > 0, e * ds, 0.0)
    d_total = np.sum(np.sign(d) * e * ds, axis=-1, keepdims=True)
    return np.where(total > 0, (d_num - p * d_total) / safe, 0.0)


def sparsemax_threshold(z: np.ndarray) -> np.ndarray:
    """tau per row with sum_i max(z_i - tau, 0) = 1 (sort, cumulative sums, the support size)."""
    zs = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    cum = np.cumsum(zs, axis=-1)
    support = (1.0 + k * zs > cum).sum(axis=-1, keepdims=True)
    return (np.take_along_axis(cum, support - 1, axis=-1) - 1.0) / support


def entmax15_threshold(z: np.ndarray) -> np.ndarray:
    """tau per row with sum_i max(z_i - tau, 0)^2 = 1, z = s/2 (the exact sort-based algorithm
    of Peters et al. 2019)."""
    zs = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    mean = np.cumsum(zs, axis=-1) / k
    mean_sq = np.cumsum(zs**2, axis=-1) / k
    delta = (1.0 - k * (mean_sq - mean**2)) / k
    tau = mean - np.sqrt(np.maximum(delta, 0.0))
    support = (tau <= zs).sum(axis=-1, keepdims=True)
    return np.take_along_axis(tau, support - 1, axis=-1)


def weights(name: str, s: np.ndarray) -> np.ndarray:
    """The weights p (trials, n) of logits s (trials, n) under normaliser `name`."""
    s = np.asarray(s, dtype=np.float64)
    n = s.shape[-1]
    if name == "softmax":
        return _softmax(s)
    if name == "sigmoid":
        return _sigmoid(s - math.log(n))
    if name == "ssmax":
        return _softmax(SSMAX_B * math.log(n) * s)
    if name in SOFTCAPS:
        c = SOFTCAPS[name]
        return _softmax(c * np.tanh(s / c))
    if name == "sink":
        return _sink(s)
    if name == "softpick":
        return _softpick(s)
    if name == "sparsemax":
        return np.maximum(s - sparsemax_threshold(s), 0.0)
    if name == "entmax15":
        z = s / 2.0
        return np.maximum(z - entmax15_threshold(z), 0.0) ** 2
    if name == "relu":
        return np.maximum(s, 0.0) / n
    raise ValueError(f"unknown normaliser {name!r} (one of {', '.join(NORMALISERS)})")


def _rows(s, v) -> tuple[np.ndarray, np.ndarray, int]:
    """Logits and a vector per row as float64, and the row length n."""
    s = np.asarray(s, dtype=np.float64)
    return s, np.asarray(v, dtype=np.float64), s.shape[-1]


def jvp(name: str, s: np.ndarray, ds: np.ndarray) -> np.ndarray:
    """dp = (dp/ds) ds per row: the Jacobian-vector product at logits s (trials, n)."""
    s, ds, n = _rows(s, ds)
    if name == "softmax":
        return _softmax_jvp(_softmax(s), ds)
    if name == "sigmoid":
        p = _sigmoid(s - math.log(n))
        return p * (1.0 - p) * ds
    if name == "ssmax":
        scale = SSMAX_B * math.log(n)
        return _softmax_jvp(_softmax(scale * s), scale * ds)
    if name in SOFTCAPS:
        c = SOFTCAPS[name]
        t = np.tanh(s / c)
        return _softmax_jvp(_softmax(c * t), (1.0 - t**2) * ds)
    if name == "sink":
        return _softmax_jvp(_sink(s), ds)
    if name == "softpick":
        return _softpick_jvp(s, ds)
    if name == "sparsemax":
        on = s > sparsemax_threshold(s)
        mean = np.sum(ds * on, axis=-1, keepdims=True) / on.sum(axis=-1, keepdims=True)
        return np.where(on, ds - mean, 0.0)
    if name == "entmax15":
        z = s / 2.0
        g = np.maximum(z - entmax15_threshold(z), 0.0)  # sqrt(p), the weights' slope
        dz = ds / 2.0
        return 2.0 * g * (dz - np.sum(g * dz, axis=-1, keepdims=True) / g.sum(-1, keepdims=True))
    if name == "relu":
        return np.where(s > 0, ds, 0.0) / n
    raise ValueError(f"unknown normaliser {name!r} (one of {', '.join(NORMALISERS)})")


def _softpick_vjp(s: np.ndarray, g: np.ndarray) -> np.ndarray:
    """J^T g for softpick, whose Jacobian is not symmetric: with d_i = e^{s_i} - 1, T = sum |d_j|,
    dp_i/ds_j = ([d_i > 0] e^{s_i} delta_ij - p_i sign(d_j) e^{s_j}) / T, so
    (J^T g)_j = e^{s_j} ([d_j > 0] g_j - sign(d_j) sum_i p_i g_i) / T (every factor scaled by
    e^{-m} as in the forward, which cancels in e/T)."""
    d, e, _ = _softpick_parts(s)
    total = np.abs(d).sum(axis=-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    p = np.maximum(d, 0.0) / safe
    # g_j - sum p g on the positive keys, centred on the top key m: (g_j - g_m) + g_m (1 - mass)
    # + sum_i p_i (g_m - g_i), with 1 - mass = sum_{d<0} |d| / T exact (no 1 - p_m cancellation
    # at one-hot weights)
    ref = np.take_along_axis(g, np.argmax(s, axis=-1)[..., None], axis=-1)
    rest = np.sum(np.where(d < 0, -d, 0.0), axis=-1, keepdims=True) / safe
    top_minus_mean = ref * rest + np.sum(p * (ref - g), axis=-1, keepdims=True)
    positive = (g - ref) + top_minus_mean
    negative = ref - top_minus_mean  # -sign(d_j) sum p g with sign -1: sum p g
    back = e * np.where(d > 0, positive, np.where(d < 0, negative, 0.0))
    return np.where(total > 0, back / safe, 0.0)


# the maps whose Jacobian is symmetric (diag(a) - b b^T up to a scalar, or diagonal): J^T g = J g
SYMMETRIC_JACOBIAN = ("softmax", "sigmoid", "ssmax", "sink", "sparsemax", "entmax15", "relu")


def vjp(name: str, s: np.ndarray, g: np.ndarray) -> np.ndarray:
    """ds = (dp/ds)^T g per row: the vector-Jacobian product at logits s (trials, n), the backward
    pass from dl/dp = g to dl/ds. The softmax family, the sink, sigmoid, sparsemax, 1.5-entmax and
    ReLU have symmetric Jacobians (J^T g = J g; the softmax family's written centred, accurate at
    one-hot weights); soft-capping's is softmax's times diag(sech^2(s/c)) on the right, so its
    transpose puts the slope after the softmax product; softpick's is derived in
    `_softpick_vjp`."""
    s, g, n = _rows(s, g)
    if name == "softmax":
        return _softmax_vjp(_softmax(s), g)
    if name == "ssmax":
        scale = SSMAX_B * math.log(n)
        return scale * _softmax_vjp(_softmax(scale * s), g)
    if name == "sink":
        p, null = _sink_parts(s)
        return _softmax_vjp(p, g, null)
    if name in SYMMETRIC_JACOBIAN:
        return jvp(name, s, g)
    if name in SOFTCAPS:
        c = SOFTCAPS[name]
        t = np.tanh(s / c)
        return (1.0 - t**2) * _softmax_vjp(_softmax(c * t), g)
    if name == "softpick":
        return _softpick_vjp(s, g)
    raise ValueError(f"unknown normaliser {name!r} (one of {', '.join(NORMALISERS)})")


def mass_and_entropy(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Total mass sum p and the entropy of p / sum p (0 log 0 = 0) per row; nan where the mass is
    zero (ReLU or softpick with no positive logit: no distribution to measure)."""
    mass = p.sum(axis=-1)
    safe = np.where(mass > 0, mass, 1.0)[..., None]
    q = p / safe
    logq = np.log(np.where(q > 0, q, 1.0))
    entropy = -np.sum(q * logq, axis=-1)
    return mass, np.where(mass > 0, entropy, np.nan)
