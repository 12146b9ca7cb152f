"""Slow per-row reference for `attention_dropout`: one row and one mask at a time, plain loops."""

from __future__ import annotations

import numpy as np


def row(logits, values, uniforms, rate: float, form: str) -> dict[str, float]:
    s = np.asarray(logits, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    n = len(s)
    p = np.exp(s - s.max())
    p /= p.sum()
    o = sum(p[i] * v[i] for i in range(n))
    q = 1 - rate
    errors, diffs = [], []
    for u in uniforms:
        keep = [1.0 if u[i] >= np.float32(rate) else 0.0 for i in range(n)]
        if form == "transformers":
            out = sum(p[i] * keep[i] / q * v[i] for i in range(n))
        else:
            total = sum(p[i] * keep[i] for i in range(n))
            out = (
                sum(p[i] * keep[i] * v[i] for i in range(n)) / total
                if total > 0
                else np.zeros_like(o)
            )
        diffs.append(out - o)
        errors.append(float((out - o) @ (out - o)))
    kappa = rate / q
    grad_sq = sum(p[i] ** 2 * float((v[i] - o) @ (v[i] - o)) for i in range(n))
    value_sq = sum(p[i] ** 2 * float(v[i] @ v[i]) for i in range(n))
    k = len(errors)
    mean = np.mean(diffs, axis=0)
    out = {
        "sq_err": float(np.mean(errors)),
        "sq_err_iid": kappa * grad_sq,
        "value_sq": value_sq,
        "grad_sq": grad_sq,
        "bias_sq": (k * float(mean @ mean) - float(np.mean(errors))) / (k - 1),
    }
    if form == "transformers":
        out["sq_err_exact"] = kappa * value_sq
    return out
