"""Slow per-row reference for the low-precision kinds (`attnsim.kernels.precision`): one row at a
time, plain float64 loops over keys and channels, the rounding by ml-dtypes' cast (`to_format`)."""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels.rounding import F32, FORMATS, to_format


def softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def ulp(x: float, fmt) -> float:
    a = abs(float(np.float32(x)))
    e = math.floor(math.log2(a)) if a > 0 else fmt.min_exp
    return 2.0 ** (max(e, fmt.min_exp) - fmt.bits + 1)


def row(logits, values, q, k, rotation, fmt_name: str, site: str) -> dict[str, float]:
    """Measured error and predictions of one row (logits (n,), values (n, dv), q (d,), k (n, d))."""
    fmt = FORMATS[fmt_name]
    s = np.asarray(logits, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    n = len(s)
    p = softmax(s)
    o = p @ v
    x = v - o
    dist2 = np.array([x[i] @ x[i] for i in range(n)])
    grad_sq = sum(p[i] ** 2 * dist2[i] for i in range(n))
    out = {"grad_sq": grad_sq, "spread": float(p @ dist2), "n_eff": 1 / float(p @ p)}
    if site == "logits":
        noisy = to_format(s.astype(F32), fmt).astype(np.float64)
        var = np.array([ulp(si, fmt) ** 2 / 12 for si in s])
        model = sum(p[i] ** 2 * var[i] * dist2[i] for i in range(n))
    elif site in ("qk", "qk_rotated"):
        q64, k64 = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
        if site == "qk_rotated":
            q64 = (rotation @ q64).astype(F32).astype(np.float64)
            k64 = (k64 @ rotation.T).astype(F32).astype(np.float64)
        d = len(q64)
        rq, rk = to_format(q64, fmt).astype(np.float64), to_format(k64, fmt).astype(np.float64)
        noisy = np.empty(n)
        # accumulated in float32, as the kernel's matrix product (in another order)
        for i in range(n):
            acc = np.float32(0)
            for m in range(d):
                acc = np.float32(acc + np.float32(rk[i, m]) * np.float32(rq[m]))
            noisy[i] = float(acc * np.float32(1 / math.sqrt(d)))
        vq = np.array([ulp(c, fmt) ** 2 / 12 for c in q64])
        vk = np.array([[ulp(c, fmt) ** 2 / 12 for c in key] for key in k64])
        cov = np.zeros((n, n))  # Cov(eps) = K diag(vq) K^T / d + diag(sum_m q_m^2 vk_im / d)
        for i in range(n):
            for j in range(n):
                cov[i, j] = sum(vq[m] * k64[i, m] * k64[j, m] for m in range(d)) / d
            cov[i, i] += sum(q64[m] ** 2 * vk[i, m] for m in range(d)) / d
        jac = p[:, None] * x  # d o / d s_i = p_i (v_i - o)
        model = float(np.trace(jac.T @ cov @ jac))
    elif site == "probs":
        weights = np.exp(s - s.max())
        rounded = to_format(weights.astype(F32), fmt).astype(np.float64)
        diff = sum((rounded[i] - weights[i]) * v[i] for i in range(n)) / weights.sum()
        rel = rounded / weights - 1
        kappa = np.var(rel) / (1 + np.mean(rel)) ** 2
        var = np.array([0.0 if w == 1.0 else ulp(w, fmt) ** 2 / 12 for w in weights])
        model = sum(var[i] * (v[i] @ v[i]) for i in range(n)) / weights.sum() ** 2
        return {
            **out,
            "sq_err": float(diff @ diff),
            "sq_err_iid": kappa * grad_sq,
            "sq_err_model": model,
        }
    elif site == "output":
        rounded = to_format(o.astype(F32), fmt).astype(np.float64)
        diff = rounded - o
        model = sum(ulp(c, fmt) ** 2 / 12 for c in o)
        return {**out, "sq_err": float(diff @ diff), "sq_err_model": model}
    w = softmax(noisy)
    diff = w @ v - o
    a = np.expm1(noisy - s)
    kappa = np.var(a) / (1 + np.mean(a)) ** 2
    shift = float((w - p) @ s)
    return {
        **out,
        "sq_err": float(diff @ diff),
        "sq_err_iid": kappa * grad_sq,
        "sq_err_model": model,
        "logit_shift": shift,
    }
