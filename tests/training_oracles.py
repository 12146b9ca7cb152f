"""Naive one-run-at-a-time references for the training kernels (used by the tests and by
benchmarks/training.py).

Each trains ONE run (one trial of one point) with plain, literal float64 formulas written
independently of the kernels: the head is computed the textbook way (project every key and
value, K W_k and V W_v, then the logits), the softmax backward is the uncentred
p * (dp - p.dp), InfoNCE uses explicit log-sum-exp over rows and columns. They consume the
kernels' recorded draws (or draw their own, for the benchmark), so the same draws must give
the same numbers up to rounding.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels import recall_training as rt

# --------------------------------------------------------------------------- recall


def recall_forward_backward(wq, wk, wv, keys, values, q):
    """Literal head on unit keys/values (E, n, d), queries (E, d): per-example loss, entropy,
    correct, ||dl/ds||^2 and the gradients of the mean loss."""
    E, _n, d = keys.shape
    kw = keys @ wk  # (E, n, d)
    qw = q @ wq  # (E, d)
    s = np.einsum("ed,end->en", qw, kw) / math.sqrt(d)
    z = s - s.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(p > 0, p * np.log(p), 0.0), axis=1)
    vw = values @ wv  # (E, n, d)
    o = np.einsum("en,end->ed", p, vw)
    err = o - values[:, 0]
    loss = np.sum(err**2, axis=1)
    correct = np.array([float(np.argmin(np.sum((values[e] - o[e]) ** 2, axis=1)) == 0) for e in range(E)])
    do = 2 * err / E
    gv = np.zeros_like(wv)
    gk = np.zeros_like(wk)
    gq = np.zeros_like(wq)
    ds_all = np.zeros_like(s)
    for e in range(E):
        gv += np.einsum("n,na,b->ab", p[e], values[e], do[e])
        dp = vw[e] @ do[e]  # (n,)
        ds = p[e] * (dp - p[e] @ dp)
        ds_all[e] = ds * E
        dkw = np.outer(ds, qw[e]) / math.sqrt(d)  # (n, d)
        dqw = ds @ kw[e] / math.sqrt(d)  # (d,)
        gk += keys[e].T @ dkw
        gq += np.outer(q[e], dqw)
    return {"loss": loss, "entropy": entropy, "correct": correct, "grad_logits_sq": np.sum(ds_all**2, axis=1), "gq": gq, "gk": gk, "gv": gv}


def recall_train(params: dict, init, monitor, final, batches) -> dict[str, float]:
    """One run: `init` = (Z_q, Z_k, Z_v) (d, d); `monitor`, `final`, `batches[i]` = (keys, values, q)
    with unit keys and values; returns the kernel's metrics for this run."""
    p = rt.resolved(params)
    d = init[0].shape[0]
    n = monitor[0].shape[1]
    chance = 1 - 1 / n
    w = [p["scale"] * init[0], p["scale"] * init[1], init[2] / math.sqrt(d)]
    m = [np.zeros((d, d)) for _ in range(3)]
    v = [np.zeros((d, d)) for _ in range(3)]
    first = recall_forward_backward(*w, *monitor)
    out = {
        "init_entropy": first["entropy"].mean(),
        "init_grad_logits": math.sqrt(first["grad_logits_sq"].mean()),
        "init_grad_qk": math.sqrt(np.sum(first["gq"] ** 2) + np.sum(first["gk"] ** 2)),
        "init_loss": first["loss"].mean() / chance,
    }
    losses = {0: out["init_loss"]}
    evals = rt.evaluation_steps(p["steps"])
    diverged = math.inf
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, p["steps"] + 1):
        with np.errstate(all="ignore"):
            g = recall_forward_backward(*w, *batches[step - 1])
            grads = [g["gq"], g["gk"], g["gv"]]
            for i in range(3):
                if p["optimiser"] == "adam":
                    m[i] = b1 * m[i] + (1 - b1) * grads[i]
                    v[i] = b2 * v[i] + (1 - b2) * grads[i] ** 2
                    w[i] = w[i] - p["lr"] * (m[i] / (1 - b1**step)) / (np.sqrt(v[i] / (1 - b2**step)) + eps)
                else:
                    w[i] = w[i] - p["lr"] * grads[i]
            bad = not all(np.all(np.isfinite(x)) for x in w)
            if step in evals:
                losses[step] = recall_forward_backward(*w, *monitor)["loss"].mean() / chance
                bad = bad or not math.isfinite(losses[step])
        if bad:
            diverged = min(diverged, step)
            w = [np.zeros((d, d)) for _ in range(3)]
            m = [np.zeros((d, d)) for _ in range(3)]
            v = [np.zeros((d, d)) for _ in range(3)]
        if step in evals and math.isfinite(diverged):
            losses[step] = math.inf
    for j, step in enumerate(rt.checkpoint_steps(p["steps"])):
        out[f"loss_ckpt_{j}"] = losses[step]
    hits = [step for step in sorted(losses) if losses[step] <= p["threshold"]]
    out["steps_to_threshold"] = float(hits[0]) if hits else math.inf
    last = recall_forward_backward(*w, *final)
    gone = math.isfinite(diverged)
    out["final_loss"] = math.inf if gone else last["loss"].mean() / chance
    out["final_accuracy"] = 0.0 if gone else last["correct"].mean()
    out["final_entropy"] = math.nan if gone else last["entropy"].mean()
    out["diverged"] = float(gone)
    out["diverged_step"] = diverged
    return out


def recall_examples(ex: rt.Examples, t: int, query_noise: float):
    """(keys, values, q) of trial t of the kernel's recorded examples, as unit vectors."""
    one = ex.trial(t)
    return one.unit_keys()[0], one.unit_values()[0], one.queries(query_noise)[0]


def recall_draw(rng: np.random.Generator, examples: int, n: int, d: int, query_noise: float):
    """Fresh examples for one run from numpy's float64 sampler (for the benchmark)."""
    keys = rng.standard_normal((examples, n, d))
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
    values = rng.standard_normal((examples, n, d))
    values /= np.linalg.norm(values, axis=-1, keepdims=True)
    q = keys[:, 0] + query_noise / math.sqrt(d) * rng.standard_normal((examples, d))
    return keys, values, q


def recall_naive_run(rng: np.random.Generator, params: dict) -> dict[str, float]:
    """One complete run drawing its own data (for the benchmark): the literal loop end to end."""
    p = rt.resolved(params)
    n, d = p["n"], p["d"]
    init = tuple(rng.standard_normal((d, d)) for _ in range(3))
    monitor = recall_draw(rng, rt.EVAL_EXAMPLES, n, d, p["query_noise"])
    final = recall_draw(rng, rt.EVAL_EXAMPLES, n, d, p["query_noise"])

    class Lazy:
        def __getitem__(self, i):
            return recall_draw(rng, p["batch"], n, d, p["query_noise"])

    return recall_train(p, init, monitor, final, Lazy())
