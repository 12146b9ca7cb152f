"""Attention dropout in its two forms (docs/science.md §11.6), batched over rows, K masks per row.

Draw order per block: the logits' standard normals (T, n), the values' (T, n, d) (float32
Box-Muller), then the masks' uniforms (T, K, n) (float32, `kernels.sampling.uniform`). A key is
kept where u >= rate: every rate and form of a stream shares the uniforms (common random numbers).
Values: v_i = z_i + value_mean e_1 (a common mean, as trained heads' values have).

Per point, in float64: transformers' form o~ - o = sum_i p_i (m_i / q - 1) v_i; the logit form
o~ - o = sum_i w~_i (v_i - o), w~ = p m / sum p m (o~ = 0 where a mask drops every key). The bias
sum is the unbiased estimate (K |mean_k d_k|^2 - mean_k |d_k|^2) / (K - 1) of |E_mask o~ - o|^2.
"""

from __future__ import annotations

import numpy as np

from attnsim.kernels import precision
from attnsim.kernels.sampling import standard_normal, uniform
from attnsim.kinds.base import Counts, Work
from attnsim.theory import delta_next, dropout

FORMS = ("transformers", "logit")


def draw(
    rng: np.random.Generator, trials: int, n: int, d: int, sigma: float, value_mean: float, k: int
):
    logits = standard_normal(rng, (trials, n)).astype(np.float64) * sigma
    values = standard_normal(rng, (trials, n, d)).astype(np.float64)
    values[:, :, 0] += value_mean
    u = uniform(rng, (trials, k, n), 0.0, 1.0)
    return logits, values, u


def sums(clean: precision.Clean) -> dict[str, np.ndarray]:
    """The clean row's sums of the next-order theory (`delta_next.expansion_from_moments`)."""
    p, x = clean.p, clean.dev
    p2 = p * p
    m2 = np.einsum("tn,tnd->td", p2, x)
    return {
        "grad_sq": clean.grad_sq,
        "sum_p2": p2.sum(axis=-1),
        "sum_p3": (p2 * p).sum(axis=-1),
        "c3": np.sum(p2 * p * clean.dist2, axis=-1),
        "c4": np.sum(p2 * p2 * clean.dist2, axis=-1),
        "m2": np.einsum("td,td->t", m2, m2),
    }


def point_metrics(clean, stats, u, rate: float, form: str) -> dict[str, np.ndarray]:
    trials, k, n = u.shape
    keep = (u >= np.float32(rate)).astype(np.float64)
    q = 1.0 - rate
    kappa = dropout.kappa(rate)
    v2 = np.einsum("tnd,tnd->tn", clean.values, clean.values)
    value_sq = np.sum(clean.p * clean.p * v2, axis=-1)
    nan = np.full(trials, np.nan)
    if form == "transformers":
        coefficient = clean.p[:, None, :] * (keep / q - 1.0)  # (T, K, n)
        diff = np.matmul(coefficient, clean.values)  # (T, K, d)
        exact = kappa * value_sq
        nxt = nan
        bias_pred = np.zeros(trials)
    else:
        weights = clean.p[:, None, :] * keep
        total = weights.sum(axis=-1, keepdims=True)
        weights /= np.where(total > 0, total, 1.0)
        diff = np.matmul(weights, clean.dev)  # (T, K, d): o~ - o where some key is kept
        empty = total[:, :, 0] == 0
        if empty.any():
            diff[empty] = -clean.o[np.nonzero(empty)[0]]
        exact = nan
        k2, mu3, mu4 = dropout.u_moments(rate)
        nxt = delta_next.expansion_from_moments(stats, k2, mu3, mu4, "p2")
        bias_pred = kappa * kappa * stats["m2"]  # E o~ - o = -kappa sum p^2 (v - o) + ...
    per_mask = np.einsum("tkd,tkd->tk", diff, diff)
    sq_err = per_mask.mean(axis=-1)
    mean = diff.mean(axis=1)
    bias_sq = (k * np.einsum("td,td->t", mean, mean) - sq_err) / (k - 1) if k > 1 else nan
    iid = kappa * clean.grad_sq
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = {
            name: np.where(pred > 0, sq_err / pred, np.where(sq_err > 0, np.inf, 0.0))
            for name, pred in (("exact", exact), ("iid", iid), ("next", nxt))
        }
    for name, pred in (("exact", exact), ("next", nxt)):
        ratio[name][np.isnan(pred)] = np.nan
    return {
        "sq_err": sq_err,
        "sq_err_exact": exact,
        "sq_err_iid": iid,
        "sq_err_next": nxt,
        "ratio_exact": ratio["exact"],
        "ratio_iid": ratio["iid"],
        "ratio_next": ratio["next"],
        "bias_sq": bias_sq,
        "bias_sq_pred": bias_pred,
        "value_sq": value_sq,
        "grad_sq": clean.grad_sq,
        "spread": clean.spread,
        "entropy": clean.entropy,
        "n_eff": clean.n_eff,
        "all_dropped": (keep.sum(axis=-1) == 0).mean(axis=-1),
    }


def simulate_block(rng, trials: int, points) -> list[dict[str, np.ndarray]]:
    first = points[0]
    logits, values, u = draw(
        rng,
        trials,
        int(first["n"]),
        int(first["d"]),
        float(first["logit_scale"]),
        float(first["value_mean"]),
        int(first["noise_draws"]),
    )
    clean = precision.clean_rows(logits, values)
    stats = sums(clean)
    return [point_metrics(clean, stats, u, float(p["rate"]), p["form"]) for p in points]


def bytes_per_trial(n: int, d: int, k: int) -> int:
    """Values, v - o (float64), the masks' uniforms, keep, weights (float64 K x n) and K outputs."""
    return 8 * (3 * n * d + 3 * k * n + 2 * k * d) + 4 * k * n


def counts(n: int, d: int, k: int) -> Work:
    """What one trial costs (`attnsim.kinds.base.Work`), counted from `simulate_block`: per stream
    the normals, the masks' K n words and the clean rows in float64 (`precision.clean_rows`, ~12
    passes over n d doubles, and the next-order sums); per point the masks as float64, |v|^2, and
    the K noisy outputs, a (K x n) by (n x d) float64 product and ~10 passes over K n doubles.
    Calls: ~40 per point and block, ~40 per stream."""
    return Work(
        own=Counts(flops64=2 * k * n * d, bytes=16 * n * d + 80 * k * n + 16 * k * d),
        shared=Counts(normals=n + n * d, words=k * n, exps=n, bytes=100 * n * d + 100 * n),
        own_block=Counts(calls=40),
        shared_block=Counts(calls=40),
    )
