"""Slow per-trial reference for `real_noise`: one window through the model alone, the head's q, k,
v, and plain formulas, one noisy draw at a time."""

from __future__ import annotations

import math

import numpy as np


def head_row(
    bert, ids: np.ndarray, position: int, layer: int, head: int
) -> tuple[np.ndarray, np.ndarray]:
    """(logits (n,), values (n, 32)) of one query row, from a forward pass of this window alone."""
    out = bert.forward(ids[None, :], np.ones((1, len(ids)), dtype=bool), capture=[layer])
    a = out.attention[layer].head(head)
    q, k = a.q[0, position].astype(np.float64), a.k[0].astype(np.float64)
    return np.array([q @ k[i] for i in range(len(ids))]) / math.sqrt(len(q)), a.v[0].astype(
        np.float64
    )


def naive_trial(logits, values, noise, noise_scale: float) -> dict[str, float]:
    """Plain float64 formulas for one row and its K noise vectors."""
    p = np.exp(logits - logits.max())
    p /= p.sum()
    o = p @ values
    errors = []
    for eps in np.asarray(noise, dtype=np.float64):
        x = logits + noise_scale * eps
        q = np.exp(x - x.max())
        q /= q.sum()
        errors.append(float(np.sum((q @ values - o) ** 2)))
    dist2 = np.sum((values - o) ** 2, axis=1)
    return {
        "sq_err": float(np.mean(errors)),
        "entropy": float(-sum(pi * math.log(pi) for pi in p if pi > 0)),
        "n_eff": float(1 / np.sum(p**2)),
        "grad_sq": float(np.sum(p**2 * dist2)),
        "spread": float(np.sum(p * dist2)),
    }


def within_head_slopes(s, value: str = "rel_err_mean", se: str = "rel_err_se"):
    """The within-head slopes one nest at a time (a pandas loop): the reference for the grouped
    sums of `attnsim.kinds.real_noise.claims.within_head_slopes`."""
    import pandas as pd

    from attnsim.kinds.real_noise.claims import SLOPE_KEYS, THRESHOLDS

    nested = s[(s["keys"] > 0) & s[value].notna() & (s[value] > 0)]
    out = []
    for key, part in nested.groupby(SLOPE_KEYS):
        if part["n_keys"].nunique() < THRESHOLDS.min_windows:
            continue
        part = part.sort_values("n_keys")
        x = np.log(part["n_keys"].to_numpy(float))
        y = np.log(part[value].to_numpy(float))
        w = (part[value] / part[se]).to_numpy(float) ** 2
        xm = np.sum(w * x) / np.sum(w)
        sxx = np.sum(w * (x - xm) ** 2)
        slope = np.sum(w * (x - xm) * y) / sxx
        residual = y - (np.sum(w * y) / np.sum(w) - slope * xm) - slope * x
        chi2_dof = np.sum(w * residual**2) / (len(part) - 2)
        n_eff = 1.0 / part["sum_p2_mean"].to_numpy(float)
        out.append(
            dict(zip(SLOPE_KEYS, key, strict=True))
            | {
                "slope": float(slope),
                "slope_se": float(math.sqrt(max(1.0, chi2_dof) / sxx)),
                "n_eff_slope": float(np.polyfit(x, np.log(n_eff), 1)[0]),
                "n_eff_share": float(n_eff[0] / part["n_keys"].iloc[0]),
                "in_delta": bool(
                    (part["predicted_correction"] <= THRESHOLDS.delta_correction).all()
                ),
                "windows": len(part),
                "n_trials": int(part["n_trials"].sum()),
            }
        )
    return pd.DataFrame(out)
