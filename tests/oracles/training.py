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

from attnsim.kinds.contrastive_training import kernel as ct
from attnsim.kinds.recall_training import kernel as rt
from oracles import normalisers as normaliser_oracle

# --------------------------------------------------------------------------- recall


def recall_forward_backward(wq, wk, wv, keys, values, q, gain=None, normaliser="softmax"):
    """Literal head on unit keys/values (E, n, d), queries (E, d): per-example loss, entropy,
    correct, logits, ||dl/ds||^2 and the gradients of the mean loss. `wv` None: W_v = I;
    `gain` (a float): QK-norm logits gain * cos(q W_q, k_i W_k), and `gg` its gradient. Another
    `normaliser`: its weights row by row from its paper's formula and the logit gradient
    J^T dl/dp from the dense Jacobian (oracles/normalisers.py); the entropy of p / sum p (NaN
    without mass)."""
    E, _n, d = keys.shape
    kw = keys @ wk  # (E, n, d)
    qw = q @ wq  # (E, d)
    if gain is None:
        s = np.einsum("ed,end->en", qw, kw) / math.sqrt(d)
    else:
        qn = qw / np.linalg.norm(qw, axis=1, keepdims=True)
        kn = kw / np.linalg.norm(kw, axis=2, keepdims=True)
        s = gain * np.einsum("ed,end->en", qn, kn)
    if normaliser == "softmax":
        z = s - s.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.nansum(np.where(p > 0, p * np.log(p), 0.0), axis=1)
    else:
        p = np.stack([normaliser_oracle.weights_row(normaliser, row) for row in s])
        entropy = np.array([normaliser_oracle.mass_entropy_row(row)[1] for row in p])
    w_v = np.eye(d) if wv is None else wv
    vw = values @ w_v  # (E, n, d)
    o = np.einsum("en,end->ed", p, vw)
    err = o - values[:, 0]
    loss = np.sum(err**2, axis=1)
    correct = np.array(
        [float(np.argmin(np.sum((values[e] - o[e]) ** 2, axis=1)) == 0) for e in range(E)]
    )
    if normaliser != "softmax":  # strictly nearest: an output of 0 (no weight) is nearest to none
        scores = np.einsum("end,ed->en", values, o)
        correct = (scores[:, 0] > scores[:, 1:].max(axis=1)).astype(float)
    do = 2 * err / E
    gv = np.zeros_like(w_v)
    gk = np.zeros_like(wk)
    gq = np.zeros_like(wq)
    gg = 0.0
    ds_all = np.zeros_like(s)
    for e in range(E):
        gv += np.einsum("n,na,b->ab", p[e], values[e], do[e])
        dp = vw[e] @ do[e]  # (n,)
        if normaliser == "softmax":
            ds = p[e] * (dp - p[e] @ dp)
        else:
            ds = normaliser_oracle.vjp_row(normaliser, s[e], dp)
        ds_all[e] = ds * E
        if gain is None:
            dkw = np.outer(ds, qw[e]) / math.sqrt(d)  # (n, d)
            dqw = ds @ kw[e] / math.sqrt(d)  # (d,)
        else:  # s_i = gain qw.kw_i / (|qw| |kw_i|): the quotient rule, literally
            nq, nk = np.linalg.norm(qw[e]), np.linalg.norm(kw[e], axis=1)
            cos = s[e] / gain
            gg += ds @ cos
            dqw = gain * sum(
                ds[i] * (kw[e][i] / (nq * nk[i]) - cos[i] * qw[e] / nq**2) for i in range(len(ds))
            )
            dkw = np.stack(
                [
                    gain * ds[i] * (qw[e] / (nq * nk[i]) - cos[i] * kw[e][i] / nk[i] ** 2)
                    for i in range(len(ds))
                ]
            )
        gk += keys[e].T @ dkw
        gq += np.outer(q[e], dqw)
    out = {
        "loss": loss,
        "entropy": entropy,
        "correct": correct,
        "logits": s,
        "grad_logits_sq": np.sum(ds_all**2, axis=1),
        "gq": gq,
        "gk": gk,
    }
    if wv is not None:
        out["gv"] = gv
    if gain is not None:
        out["gg"] = gg
    return out


def recall_bound(wq, wk, gain, keys, q):
    """Per example: Zhai et al.'s least entropy for a logit vector of norm <= R, with R from the
    spectral norms (or |gain| sqrt(n) with QK-norm): two-level logits with gap R sqrt(n/(n-1))."""
    E, n, d = keys.shape
    if gain is None:
        radius = np.array(
            [
                np.linalg.svd(wq @ wk.T / math.sqrt(d), compute_uv=False)[0]
                * np.linalg.svd(keys[e], compute_uv=False)[0]
                * np.linalg.norm(q[e])
                for e in range(E)
            ]
        )
    else:
        radius = np.full(E, abs(gain) * math.sqrt(n))
    gap = radius * math.sqrt(n / (n - 1))
    b = np.exp(-gap)
    return np.log(1 + (n - 1) * b) + gap * (n - 1) * b / (1 + (n - 1) * b)


def recall_direction_stream(entropy: int, block_key: tuple, trial: int) -> np.random.Generator:
    """A randdir run's own generator, written out from its definition (kernel.py's docstring):
    SFC64 seeded by SeedSequence(entropy, spawn_key = (*block key, 0x646972 "dir", trial))."""
    sequence = np.random.SeedSequence(entropy, spawn_key=(*block_key, 0x646972, trial))
    return np.random.Generator(np.random.SFC64(sequence))


def recall_train(params: dict, init, monitor, final, batches, directions=None) -> dict[str, float]:
    """One run: `init` = (Z_q, Z_k, Z_v) (d, d); `monitor`, `final`, `batches[i]` = (keys, values,
    q) with unit keys and values; returns the kernel's metrics for this run. A run that stops
    (`stop = threshold`) or diverges keeps its weights from then on (diverged: its losses +inf).
    `directions`: the run's generator for randdir (each step, each weight in turn: W -= lr z /
    ||z||, z standard normal of W's shape)."""
    p = rt.resolved(params)
    d = init[0].shape[0]
    n = monitor[0].shape[1]
    chance = 1 - 1 / n
    w = [p["scale"] * init[0], p["scale"] * init[1]]
    if p["values"] == "trainable":
        w.append(init[2] / math.sqrt(d))
    if p["logits"] == "qk_norm":
        w.append(np.array(math.sqrt(d)))
    trainable_v, qk = p["values"] == "trainable", p["logits"] == "qk_norm"
    normaliser = p["normaliser"]

    def model(w, data):
        out = recall_forward_backward(
            w[0],
            w[1],
            w[2] if trainable_v else None,
            *data,
            gain=float(w[-1]) if qk else None,
            normaliser=normaliser,
        )
        # the mean entropy over the examples that have a distribution (all, for softmax)
        out["entropy_mean"] = (
            np.nanmean(out["entropy"]) if np.isfinite(out["entropy"]).any() else math.nan
        )
        return out

    def bound(w):
        if normaliser != "softmax":  # the bound is softmax's
            return np.full(len(monitor[0]), math.nan)
        return recall_bound(w[0], w[1], float(w[-1]) if qk else None, monitor[0], monitor[2])

    m = [np.zeros_like(x) for x in w]
    v = [np.zeros_like(x) for x in w]
    first = model(w, monitor)
    out = {
        "init_entropy": first["entropy_mean"],
        "init_logit_std": math.sqrt(np.mean(np.var(first["logits"], axis=1))),
        "init_grad_logits": math.sqrt(first["grad_logits_sq"].mean()),
        "init_grad_qk": math.sqrt(np.sum(first["gq"] ** 2) + np.sum(first["gk"] ** 2)),
        "init_loss": first["loss"].mean() / chance,
    }
    losses = {0: out["init_loss"]}
    entropies = {0: first["entropy_mean"]}
    bounds = {0: bound(w).mean()}
    margin = np.min(first["entropy"] - bound(w))
    evals = rt.evaluation_steps(p["steps"], rt.EVALS_PER_CHECKPOINT)
    checkpoints = set(rt.checkpoint_steps(p["steps"]))
    diverged, escaped = math.inf, math.inf
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, p["steps"] + 1):
        if math.isfinite(diverged) or (p["stop"] == "threshold" and math.isfinite(escaped)):
            if step in evals:  # stopped: frozen weights, the same values
                last = max(losses)
                losses[step], entropies[step], bounds[step] = (
                    losses[last],
                    entropies[last],
                    bounds[last],
                )
            continue
        with np.errstate(all="ignore"):
            g = model(w, batches[step - 1])
            grads = (
                [g["gq"], g["gk"]]
                + ([g["gv"]] if trainable_v else [])
                + ([np.array(g["gg"])] if qk else [])
            )
            for i in range(len(w)):
                if p["optimiser"] == "adam":
                    m[i] = b1 * m[i] + (1 - b1) * grads[i]
                    v[i] = b2 * v[i] + (1 - b2) * grads[i] ** 2
                    w[i] = w[i] - p["lr"] * (m[i] / (1 - b1**step)) / (
                        np.sqrt(v[i] / (1 - b2**step)) + eps
                    )
                elif p["optimiser"] == "randdir":
                    z = directions.standard_normal(np.shape(w[i]))
                    w[i] = w[i] - p["lr"] * z / math.sqrt(np.sum(z * z))
                elif p["optimiser"] == "normgd":
                    big = np.max(np.abs(grads[i]))
                    norm = math.sqrt(np.sum((grads[i] / big) ** 2)) * big if big > 0 else 0.0
                    w[i] = w[i] - (p["lr"] / norm * grads[i] if norm > 0 else 0.0)
                else:
                    w[i] = w[i] - p["lr"] * grads[i]
            bad = not all(np.all(np.isfinite(x)) for x in w)
            if step in evals and not bad:
                ev = model(w, monitor)
                losses[step] = ev["loss"].mean() / chance
                bad = not losses[step] <= 1e6
        if bad:
            diverged = step
            if step in evals:
                losses[step], entropies[step], bounds[step] = math.inf, math.nan, math.nan
            continue
        if step in evals:
            entropies[step] = ev["entropy_mean"]
            stops = losses[step] <= p["threshold"] and not math.isfinite(escaped)
            if stops:
                escaped = step
            # where the kernel takes the bound
            if step in checkpoints or (stops and p["stop"] == "threshold"):
                here = bound(w)
                bounds[step] = here.mean()
                margin = min(margin, np.min(ev["entropy"] - here))
            else:
                bounds[step] = bounds[max(bounds)]
    gone = math.isfinite(diverged)
    for j, step in enumerate(rt.checkpoint_steps(p["steps"])):
        dead = gone and step >= diverged
        out[f"loss_ckpt_{j}"] = math.inf if dead else losses[step]
        out[f"entropy_ckpt_{j}"] = math.nan if dead else entropies[step]
        out[f"zhai_bound_ckpt_{j}"] = math.nan if dead else bounds[step]
    out["zhai_margin_min"] = margin
    hits = [
        step
        for step in sorted(losses)
        if losses[step] <= p["threshold"] and not (gone and step >= diverged)
    ]
    out["steps_to_threshold"] = float(hits[0]) if hits else math.inf
    out["escaped"] = float(bool(hits))
    out["escape_step"] = float(hits[0]) if hits else float(diverged if gone else p["steps"])
    falls = [
        step
        for step in sorted(entropies)
        if entropies[step] < 0.1 and not (gone and step >= diverged)
    ]
    out["collapse_step"] = float(falls[0]) if falls else math.inf
    last = model(w, final)
    out["final_loss"] = math.inf if gone else last["loss"].mean() / chance
    out["final_accuracy"] = 0.0 if gone else last["correct"].mean()
    out["final_entropy"] = math.nan if gone else last["entropy_mean"]
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


# --------------------------------------------------------------------------- contrastive


def _debiased_softmax(s, labels, axis):
    """Softmax of each row (axis 1) or column (axis 0) of s over the positive and the candidates of
    another class than the anchor's, written out one anchor at a time; its log-sum-exp."""
    from scipy.special import logsumexp

    n = len(s)
    p, lse = np.zeros_like(s), np.zeros(n)
    for a in range(n):
        kept = [b for b in range(n) if b == a or labels[b] != labels[a]]
        values = s[a, kept] if axis == 1 else s[kept, a]
        lse[a] = logsumexp(values)
        for b, v in zip(kept, values):
            p[(a, b) if axis == 1 else (b, a)] = math.exp(v - lse[a])
    return p, lse


def _sigmoid_loss(s, tau, bias):
    """SigLIP's loss, literally: (1/n) sum_ab log(1 + exp(-y_ab (s_ab + b))), y = 1 iff a = b; and
    dL/dlogit_ab = -y_ab sigmoid(-y_ab (s_ab + b)) / n."""
    n = len(s)
    loss, dl = 0.0, np.zeros_like(s)
    for a in range(n):
        for b in range(n):
            y = 1.0 if a == b else -1.0
            m = y * (s[a, b] + bias)
            loss += math.log1p(math.exp(-m)) if m > -30 else -m + math.log1p(math.exp(m))
            dl[a, b] = -y / (1.0 + math.exp(m)) / n
    return loss / n, dl


def contrastive_forward_backward(w, x1, x2, tau, labels=None, loss_name="infonce", bias=0.0):
    """Literal symmetric InfoNCE for one batch (n, D) with W (d, D): loss, entropy, alignment, the
    per-pair kernel values for uniformity, the negative-weight shares, dL/dW and dL/dt (t = log
    1/tau). `loss_name` 'debiased' leaves the anchor's same-class candidates out of the loss's
    softmaxes (needs labels); 'siglip' is the sigmoid loss with bias `bias` (also dL/db, `gb`). The
    entropy and shares are always those of the full row softmax of cos / tau."""
    from scipy.special import logsumexp, softmax

    n = x1.shape[0]
    y1, y2 = x1 @ w.T, x2 @ w.T
    r1, r2 = np.linalg.norm(y1, axis=1), np.linalg.norm(y2, axis=1)
    z1, z2 = y1 / r1[:, None], y2 / r2[:, None]
    s = z1 @ z2.T / tau
    if loss_name == "debiased":
        qr, lse_r = _debiased_softmax(s, labels, 1)
        qc, lse_c = _debiased_softmax(s, labels, 0)
        loss = 0.5 * np.mean(lse_r - np.diag(s)) + 0.5 * np.mean(lse_c - np.diag(s))
    elif loss_name == "siglip":
        loss, dl = _sigmoid_loss(s, tau, bias)
    else:
        loss = 0.5 * np.mean(logsumexp(s, axis=1) - np.diag(s)) + 0.5 * np.mean(
            logsumexp(s, axis=0) - np.diag(s)
        )
    pr, pc = softmax(s, axis=1), softmax(s, axis=0)
    entropy = np.mean([-np.sum(row[row > 0] * np.log(row[row > 0])) for row in pr])
    alignment = np.mean(np.sum((z1 - z2) ** 2, axis=1))
    kernel = [
        math.exp(-2 * np.sum((z1[a] - z1[b]) ** 2)) for a in range(n) for b in range(n) if a != b
    ]
    hardest, same, count = [], [], []
    for a in range(n):
        negatives = [pr[a, b] for b in range(n) if b != a]
        hardest.append(max(negatives) / sum(negatives))
        if labels is not None:
            mates = [b for b in range(n) if b != a and labels[b] == labels[a]]
            if mates:
                same.append(sum(pr[a, b] for b in mates) / sum(negatives))
                count.append(len(mates) / (n - 1))
    if loss_name == "debiased":
        pr, pc = qr, qc  # the loss's own softmaxes from here on
    ds = (0.5 / n) * (pr - np.eye(n)) + (0.5 / n) * (pc - np.eye(n))
    if loss_name == "siglip":
        ds = dl
    dz1, dz2 = ds @ z2 / tau, ds.T @ z1 / tau
    dy1 = np.stack([(np.eye(len(z)) - np.outer(z, z)) @ g / r for z, g, r in zip(z1, dz1, r1)])
    dy2 = np.stack([(np.eye(len(z)) - np.outer(z, z)) @ g / r for z, g, r in zip(z2, dz2, r2)])
    return {
        "loss": loss,
        "entropy": entropy,
        "alignment": alignment,
        "kernel": kernel,
        "hardest": np.mean(hardest),
        "same": same,
        "count": count,
        "gw": dy1.T @ x1 + dy2.T @ x2,
        "gt": float(np.sum(ds * s)),  # dS/dt = S
        "gb": float(np.sum(ds)),
    }


def contrastive_views(
    points, labels, noise, view_noise, instance=None, instance_noise=0.0, positives="class"
):
    """Two views (n, D) of one batch: class points (C, D), labels (n,), view noise (2, n, D) and
    instance noise (2, n, D): an instance is point + instance noise; a view adds view noise; with
    instance positives both views take instance row 0, with class positives one row each."""
    D = points.shape[1]
    c, ci = view_noise / math.sqrt(D), instance_noise / math.sqrt(D)
    views = []
    for v in (0, 1):
        x = points[labels] + c * noise[v]
        if instance_noise > 0:
            x = x + ci * instance[0 if positives == "instance" else v]
        views.append(x)
    return views[0], views[1]


def contrastive_evaluations(w, points, probe_noise, probe_instance, view_noise, instance_noise):
    """Nearest class mean, 5-NN and the least-squares linear probe, each literal; probe (2, per C,
    D) class-major."""
    C, D = points.shape
    per = probe_noise.shape[1] // C
    labels = np.repeat(np.arange(C), per)
    x = points[labels] + view_noise / math.sqrt(D) * probe_noise
    if instance_noise > 0:
        x = x + instance_noise / math.sqrt(D) * probe_instance
    z = [(xi @ w.T) / np.linalg.norm(xi @ w.T, axis=1, keepdims=True) for xi in x]
    means = np.stack([z[0][labels == c].mean(axis=0) for c in range(C)])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    ncm = float(np.mean([np.argmax(means @ zi) == c for zi, c in zip(z[1], labels)]))
    zf = [np.where(np.isfinite(zi), zi, 0.0) for zi in z]
    right = 0
    for zi, c in zip(zf[1], labels):
        sims = zf[0] @ zi
        order = sorted(range(len(sims)), key=lambda j: -sims[j])[: ct.KNN]
        votes = {
            k: (
                sum(1 for j in order if labels[j] == k),
                sum(sims[j] for j in order if labels[j] == k),
            )
            for k in range(C)
        }
        right += max(range(C), key=lambda k: votes[k]) == c
    knn = right / len(labels)
    f = [np.hstack([zi, np.ones((len(zi), 1))]) for zi in zf]
    y = np.eye(C)[labels]
    coef = np.linalg.solve(
        f[0].T @ f[0] + ct.RIDGE * len(labels) * np.eye(f[0].shape[1]), f[0].T @ y
    )
    linear = float(np.mean(np.argmax(f[1] @ coef, axis=1) == labels))
    return {"probe_accuracy": ncm, "knn_accuracy": knn, "linear_probe_accuracy": linear}


def contrastive_train(
    params: dict, points, init, monitor, final, probe, batches
) -> dict[str, float]:
    """One run: points (C, D); init (d, D) standard normals; monitor/final = (labels (E, n), noise
    (E, 2, n, D), instance noise (E, 2, n, D) or None); probe = (noise (2, per C, D), instance or
    None); batches[i] = (labels (n,), noise (2, n, D), instance (2, n, D) or None)."""
    from attnsim.theory.entropy import exact_gap

    p = ct.resolved(params)
    vn, inn, pos = p["view_noise"], p["instance_noise"], p["positives"]
    learned, clamp = p["tau_mode"] != "fixed", p["tau_mode"] == "learned_clamped"
    n = p["n"]
    D = init.shape[1]
    w = init / math.sqrt(D)
    t = math.log(1 / p["tau"])
    loss_name = p["loss"]
    bias = float(p["bias_init"])  # used by the sigmoid loss only
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    mt = vt = mb = vb = 0.0

    def tau():
        with np.errstate(over="ignore"):
            return float(np.exp(-t)) if learned else p["tau"]

    def floor(tt):
        return math.log(n) - float(exact_gap(n, tt)) if 0 < tt < math.inf else math.nan

    def evaluate(sets, stats=False):
        labels, noise, inst = sets
        outs = [
            contrastive_forward_backward(
                w,
                *contrastive_views(
                    points, labels[e], noise[e], vn, None if inst is None else inst[e], inn, pos
                ),
                tau(),
                labels[e],
                loss_name,
                bias,
            )
            for e in range(len(labels))
        ]
        res = {
            "loss": np.mean([o["loss"] for o in outs]),
            "entropy": np.mean([o["entropy"] for o in outs]),
        }
        if stats:
            res["alignment"] = np.mean([o["alignment"] for o in outs])
            res["uniformity"] = math.log(np.mean(np.concatenate([o["kernel"] for o in outs])))
            res["hardest"] = np.mean([o["hardest"] for o in outs])
            same = [x for o in outs for x in o["same"]]
            count = [x for o in outs for x in o["count"]]
            res["same"] = np.mean(same) if same else math.nan
            res["count"] = np.mean(count) if count else math.nan
        return res

    first = evaluate(monitor)
    out = {
        "init_loss": first["loss"],
        "init_entropy": first["entropy"],
        "init_probe_accuracy": contrastive_evaluations(w, points, probe[0], probe[1], vn, inn)[
            "probe_accuracy"
        ],
    }
    losses, entropies, taus = {0: first["loss"]}, {0: first["entropy"]}, {0: tau()}
    evals = ct.evaluation_steps(p["steps"])
    diverged, entropy_min, excess_min = math.inf, math.inf, math.inf
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, p["steps"] + 1):
        with np.errstate(all="ignore"):
            labels, noise, inst = batches[step - 1]
            g = contrastive_forward_backward(
                w,
                *contrastive_views(points, labels, noise, vn, inst, inn, pos),
                tau(),
                labels,
                loss_name,
                bias,
            )
            if np.isfinite(g["entropy"]):
                entropy_min = min(entropy_min, g["entropy"])
                excess_min = min(excess_min, g["entropy"] - floor(tau()))
            if p["optimiser"] == "adam":
                m = b1 * m + (1 - b1) * g["gw"]
                v = b2 * v + (1 - b2) * g["gw"] ** 2
                w = w - p["lr"] * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps)
                if learned:
                    mt = b1 * mt + (1 - b1) * g["gt"]
                    vt = b2 * vt + (1 - b2) * g["gt"] ** 2
                    t = t - p["lr"] * (mt / (1 - b1**step)) / (math.sqrt(vt / (1 - b2**step)) + eps)
                if loss_name == "siglip":
                    mb = b1 * mb + (1 - b1) * g["gb"]
                    vb = b2 * vb + (1 - b2) * g["gb"] ** 2
                    bias -= p["lr"] * (mb / (1 - b1**step)) / (math.sqrt(vb / (1 - b2**step)) + eps)
            else:
                w = w - p["lr"] * g["gw"]
                if learned:
                    t = t - p["lr"] * g["gt"]
                if loss_name == "siglip":
                    bias -= p["lr"] * g["gb"]
            if clamp:
                t = min(t, math.log(1 / ct.TAU_CLAMP))
            bad = not (
                np.all(np.isfinite(w))
                and math.isfinite(t)
                and math.isfinite(bias)
                and 0 < tau() < math.inf
            )
            if step in evals:
                res = evaluate(monitor)
                losses[step], entropies[step], taus[step] = res["loss"], res["entropy"], tau()
                bad = bad or not math.isfinite(losses[step])
        if bad:
            diverged = min(diverged, step)
            w, m, v = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
            t = mt = vt = bias = mb = vb = 0.0
        if step in evals and math.isfinite(diverged):
            losses[step], entropies[step], taus[step] = math.inf, math.nan, math.nan
    for j, step in enumerate(ct.checkpoint_steps(p["steps"])):
        out[f"loss_ckpt_{j}"] = losses[step]
        out[f"entropy_ckpt_{j}"] = entropies[step]
        out[f"tau_ckpt_{j}"] = taus[step]
        out[f"entropy_floor_ckpt_{j}"] = floor(taus[step])
    gone = math.isfinite(diverged)
    with np.errstate(all="ignore"):
        last = evaluate(final, stats=True)
        acc = contrastive_evaluations(w, points, probe[0], probe[1], vn, inn)
    out["entropy_min"] = math.nan if gone else entropy_min
    out["entropy_floor_excess_min"] = math.nan if gone else excess_min
    out["final_loss"] = math.inf if gone else last["loss"]
    out["final_entropy"] = math.nan if gone else last["entropy"]
    out["final_entropy_floor"] = floor(tau())
    out["alignment"] = math.nan if gone else last["alignment"]
    out["uniformity"] = math.nan if gone else last["uniformity"]
    out["hardest_negative_share"] = math.nan if gone else last["hardest"]
    out["same_class_negative_share"] = math.nan if gone else last["same"]
    out["same_class_negative_count_share"] = last["count"]
    for name, value in acc.items():
        out[name] = 0.0 if gone else value
    out["tau_final"] = tau()
    out["log_tau_final"] = math.log(tau())
    out["diverged"] = float(gone)
    out["diverged_step"] = diverged
    return out


def contrastive_naive_run(rng: np.random.Generator, params: dict) -> dict[str, float]:
    """One complete run drawing its own data with numpy's float64 samplers (for the benchmark)."""
    p = ct.resolved(params)
    n, C, k, D, d = (p[key] for key in ("n", "classes", "latent_dim", "input_dim", "embed_dim"))
    mu = rng.standard_normal((C, k))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    q, r = np.linalg.qr(rng.standard_normal((D, k)))
    points = mu @ (q * np.sign(np.diag(r))).T
    inst = p["instance_noise"] > 0

    def sets():
        shape = (ct.EVAL_BATCHES, 2, n, D)
        return (
            rng.integers(0, C, (ct.EVAL_BATCHES, n)),
            rng.standard_normal(shape),
            rng.standard_normal(shape) if inst else None,
        )

    monitor, final = sets(), sets()
    shape = (2, ct.probe_per_class(C) * C, D)
    probe = (rng.standard_normal(shape), rng.standard_normal(shape) if inst else None)
    init = rng.standard_normal((d, D))

    class Lazy:
        def __getitem__(self, i):
            return (
                rng.integers(0, C, n),
                rng.standard_normal((2, n, D)),
                rng.standard_normal((2, n, D)) if inst else None,
            )

    return contrastive_train(p, points, init, monitor, final, probe, Lazy())


def contrastive_optimum(n: int, classes: int, dim: int, tau: float, starts: int = 4):
    """The loss-optimal class-collapsed encoder found by direct optimisation: unit class points u_c
    in R^dim, both views of an example at its class's point, the expected InfoNCE loss computed
    exactly by enumerating all classes^n label vectors, minimised by BFGS from `starts` random
    starts. Returns (expected loss, expected batch entropy) of the best optimum found."""
    from itertools import product

    from scipy.optimize import minimize
    from scipy.special import logsumexp

    assignments = np.array(list(product(range(classes), repeat=n)))

    def expected(flat: np.ndarray) -> tuple[float, float]:
        u = flat.reshape(classes, dim)
        u = u / np.linalg.norm(u, axis=1, keepdims=True)
        z = u[assignments]  # (batches, n, dim): both views at the class point
        s = z @ np.swapaxes(z, 1, 2) / tau  # symmetric, so the column terms equal the rows'
        lse = logsumexp(s, axis=2)
        loss = np.mean(lse - np.diagonal(s, axis1=1, axis2=2))
        p = np.exp(s - lse[..., None])
        entropy = np.mean(lse - np.sum(p * s, axis=2))
        return float(loss), float(entropy)

    rng = np.random.default_rng(0)
    best = min(
        (
            minimize(lambda f: expected(f)[0], rng.standard_normal(classes * dim), method="BFGS")
            for _ in range(starts)
        ),
        key=lambda r: r.fun,
    )
    return expected(best.x)
