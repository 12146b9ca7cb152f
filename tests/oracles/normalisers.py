"""Slow references for `attnsim.kernels.normalisers`: one row at a time, each normaliser written
straight from its paper's formula, thresholds found by bisection rather than by sorting, and
Jacobians as explicit matrices (entmax and sparsemax on their support, from the implicit function
theorem; the others by the chain rule)."""

from __future__ import annotations

import math

import numpy as np

SSMAX_B = 0.43  # the values the module documents, repeated here so a change there is caught
SINK_LOGIT = 0.0
CAPS = {"softcap50": 50.0, "softcap30": 30.0}


def softmax_row(s: np.ndarray) -> np.ndarray:
    e = np.array([math.exp(x - max(s)) for x in s])
    return e / sum(e)


def threshold(z: np.ndarray, power: float) -> float:
    """tau with sum max(z - tau, 0)^power = 1, by bisection on [max z - 1, max z]."""
    lo, hi = max(z) - 1.0, max(z)
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(max(x - mid, 0.0) ** power for x in z) > 1.0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def weights_row(name: str, s: np.ndarray) -> np.ndarray:
    n = len(s)
    if name == "softmax":
        return softmax_row(s)
    if name == "sigmoid":
        return np.array([1.0 / (1.0 + math.exp(-(x - math.log(n)))) for x in s])
    if name == "ssmax":
        return softmax_row(SSMAX_B * math.log(n) * s)
    if name in CAPS:
        c = CAPS[name]
        return softmax_row(np.array([c * math.tanh(x / c) for x in s]))
    if name == "sink":
        e = np.array([math.exp(x) for x in s])
        return e / (math.exp(SINK_LOGIT) + sum(e))
    if name == "softpick":
        d = np.array([math.expm1(x) for x in s])
        total = sum(abs(d))
        return np.maximum(d, 0.0) / total if total > 0 else np.zeros(n)
    if name == "sparsemax":
        tau = threshold(s, 1.0)
        return np.array([max(x - tau, 0.0) for x in s])
    if name == "entmax15":
        tau = threshold(s / 2, 2.0)
        return np.array([max(x / 2 - tau, 0.0) ** 2 for x in s])
    if name == "relu":
        return np.array([max(x, 0.0) / n for x in s])
    raise ValueError(name)


def jacobian_row(name: str, s: np.ndarray) -> np.ndarray:
    """dp_i / ds_j as an n x n matrix."""
    n = len(s)
    p = weights_row(name, s)
    if name in ("softmax", "sink"):
        return np.diag(p) - np.outer(p, p)
    if name == "sigmoid":
        return np.diag(p * (1 - p))
    if name == "ssmax":
        q = SSMAX_B * math.log(n)
        return q * (np.diag(p) - np.outer(p, p))
    if name in CAPS:
        slope = np.array([1 - math.tanh(x / CAPS[name]) ** 2 for x in s])
        return (np.diag(p) - np.outer(p, p)) @ np.diag(slope)
    if name == "softpick":
        d = np.array([math.expm1(x) for x in s])
        e = np.array([math.exp(x) for x in s])
        total = sum(abs(d))
        jac = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                num = e[i] if (i == j and d[i] > 0) else 0.0
                jac[i, j] = num / total - max(d[i], 0.0) * np.sign(d[j]) * e[j] / total**2
        return jac
    if name == "sparsemax":
        on = (p > 0).astype(float)
        return np.diag(on) - np.outer(on, on) / on.sum()
    if name == "entmax15":
        g = np.sqrt(p)
        return np.diag(g) - np.outer(g, g) / g.sum()  # 2 g (I - 1 g^T / sum g) times 1/2
    if name == "relu":
        return np.diag([1.0 / n if x > 0 else 0.0 for x in s])
    raise ValueError(name)


def vjp_row(name: str, s: np.ndarray, g: np.ndarray) -> np.ndarray:
    """J^T g from the dense Jacobian: the backward pass, as the literal matrix product."""
    return jacobian_row(name, s).T @ g


def mass_entropy_row(p: np.ndarray) -> tuple[float, float]:
    mass = float(sum(p))
    if mass == 0:
        return 0.0, math.nan
    return mass, -sum(x / mass * math.log(x / mass) for x in p if x > 0)


def two_level_floor(name: str, n: int, tau: float) -> float:
    """The largest log n - H over the two-level cosine configurations (k keys at +1/tau, the
    rest at -1/tau), k = 1..n, each row computed from the paper's formula."""
    best = 0.0
    for k in range(1, n + 1):
        s = np.array([1.0 / tau] * k + [-1.0 / tau] * (n - k))
        _, entropy = mass_entropy_row(weights_row(name, s))
        best = max(best, math.log(n) - entropy)
    return best
