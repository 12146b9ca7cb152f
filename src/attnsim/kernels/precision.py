"""Attention rows computed with one rounding to a low-precision format, against the float64
reference, and the rounding model's predictions (docs/science.md §11). Shared by the synthetic
and the trained-model kinds.

Every array is batched over rows (trials) on the first axis: logits s (T, n) float64, values
(T, n, dv), queries q (T, d) and keys k (T, n, d) for the sites that round them. Everything but
the one rounding is float64 (the matrix product of the rounded q and k: float32, as hardware
accumulates), so the measured error is that site's alone. Sites (`SITES`):

- `logits`: s~ = fl(s) (s cast from float32); softmax and P V in float64.
- `qk`: s~ = fl(q) . fl(k) / sqrt(d), the product accumulated in float32.
- `qk_rotated`: the same after one random orthogonal R per row: q' = R q, k' = R k (q'.k' = q.k),
  rounded in the rotated basis (incoherent processing, FlashAttention-3).
- `probs`: P = exp(s - max s) (FlashAttention's unnormalised weights, the top key exactly 1) cast
  to the format before P V; the row sum l from the unrounded P, so o~ = fl(P) V / l (not
  renormalised).
- `output`: o~ = fl(o).

Per row (`site_metrics`): the measured sq_err = |o~ - o|^2; sq_err_iid, the essay's delta method
kappa_pooled * sum p^2 |v - o|^2 with kappa of the row's own pooled errors (logit sites: e^eps,
eps = s~ - s; probs: fl(P)/P); sq_err_model, the rounding model's first-order prediction
(uniform errors of variance ulp^2/12 at the rounded numbers, §11.2); sq_err_next, its next order
with the bias (logits site, §11.3); logit_shift = sum (w~ - p) s, the measured shift of the mean
logit under the weights, and logit_shift_model, the model's second-order prediction of its mean
(§11.3); the shares of the cast numbers that were flushed to 0 or saturated.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels import rounding
from attnsim.kernels.rounding import F32, Format
from attnsim.kernels.softmax import from_top

SITES = ("logits", "qk", "qk_rotated", "probs", "output")
METRIC_NAMES = (
    "sq_err",
    "sq_err_iid",
    "sq_err_model",
    "sq_err_next",
    "ratio_iid",
    "ratio_model",
    "kappa_pooled",
    "kappa_model",
    "grad_sq",
    "spread",
    "entropy",
    "n_eff",
    "logit_shift",
    "logit_shift_model",
    "shift_var_model",
    "flushed",
    "saturated",
    "sq_err_unrotated",
    "sq_err_model_unrotated",
    "saturated_unrotated",
)


@dataclass
class Clean:
    """The float64 reference of a block of rows and the sums the predictions need."""

    logits: np.ndarray  # (T, n)
    values: np.ndarray  # (T, n, dv) float64
    p: np.ndarray  # (T, n) softmax weights
    o: np.ndarray  # (T, dv)
    dev: np.ndarray  # (T, n, dv) v - o, measured from the top key's value (no cancellation)
    dist2: np.ndarray  # (T, n) |v_i - o|^2
    entropy: np.ndarray
    n_eff: np.ndarray
    grad_sq: np.ndarray  # sum p^2 |v - o|^2
    spread: np.ndarray  # sum p |v - o|^2


def clean_rows(logits: np.ndarray, values: np.ndarray) -> Clean:
    """Softmax statistics in float64 (docs/science.md §1.5): v - o formed as (v - v_top) - (o -
    v_top)."""
    logits = np.asarray(logits, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    top, _, _, p, entropy = from_top(logits)
    v_top = np.take_along_axis(v, top[:, None, None], axis=1)
    w = v - v_top
    u = np.einsum("tn,tnd->td", p, w)
    dev = w - u[:, None, :]
    dist2 = np.einsum("tnd,tnd->tn", dev, dev)
    o = v_top[:, 0, :] + u
    return Clean(
        logits=logits,
        values=v,
        p=p,
        o=o,
        dev=dev,
        dist2=dist2,
        entropy=entropy,
        n_eff=1.0 / np.sum(p * p, axis=-1),
        grad_sq=np.sum(p * p * dist2, axis=-1),
        spread=np.sum(p * dist2, axis=-1),
    )


def softmax(logits: np.ndarray) -> np.ndarray:
    x = logits - np.max(logits, axis=-1, keepdims=True)
    e = np.exp(np.maximum(x, -700.0))
    return e / e.sum(axis=-1, keepdims=True)


def pooled_kappa(a: np.ndarray) -> np.ndarray:
    """Var(1 + a) / E[1 + a]^2 over a row's keys (population moments): kappa of the pooled law of
    e^eps = 1 + a (a = expm1(eps), or the relative error of P)."""
    mean = a.mean(axis=-1)
    var = np.mean((a - mean[:, None]) ** 2, axis=-1)
    return var / (1.0 + mean) ** 2


def uniform_moments(h) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For eps ~ U(-h, h): (m, kappa, mu3) = (E e^eps, E u^2, E u^3) of u = e^eps / m - 1,
    from E e^{k eps} = sinh(k h) / (k h); series below h = 1e-2, where the differences would
    cancel."""
    h = np.asarray(h, dtype=np.float64)
    safe = np.maximum(h, 1e-300)

    def sinhc(x):
        return np.where(x < 1e-4, 1.0 + x * x / 6.0, np.sinh(x) / np.where(x < 1e-4, 1.0, x))

    m1, m2, m3 = sinhc(safe), sinhc(2 * safe), sinhc(3 * safe)
    small = h < 1e-2  # kappa = h^2/3 - h^4/45 + ..., mu3 = 2 h^4 / 15 + ...
    h2 = h * h
    kappa = np.where(small, h2 / 3.0 - h2 * h2 / 45.0, m2 / (m1 * m1) - 1.0)
    mu3 = np.where(small, 2.0 * h2 * h2 / 15.0, m3 / m1**3 - 3.0 * m2 / (m1 * m1) + 2.0)
    return m1, kappa, mu3


@functools.cache
def _moment_table(fmt: Format) -> tuple[int, np.ndarray]:
    """(E0, table (3, count)): `uniform_moments` at h = 2^(E - 1) for every ulp exponent E >= E0
    a float32 can have in the format; rows m, kappa, mu3."""
    first = fmt.min_exp - fmt.bits + 1
    exponents = np.arange(first, 128 - fmt.bits + 2)
    # ulps beyond ~2^10 (logits > 2^13): nonsense, never met
    with np.errstate(over="ignore", invalid="ignore"):
        return first, np.stack(uniform_moments(np.ldexp(0.5, exponents)))


def moments_at(exponent: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`uniform_moments` of the errors with ulp 2^exponent, by table look-up (ulps are powers of
    2)."""
    first, table = _moment_table(fmt)
    m = table[:, exponent - first]
    return m[0], m[1], m[2]


def next_order_logits(clean: Clean, exponent: np.ndarray, fmt: Format) -> np.ndarray:
    """Second-order prediction of E|o~ - o|^2 for independent uniform logit errors on +- ulp/2,
    ulp = 2^exponent (T, n) (docs/science.md §11.3): the essay's cancellation fails, the clean
    weights become
    q_i = p_i m_i / sum p_j m_j (m_i = E e^{eps_i}), the output moves by the bias b = sum q_i (v_i -
    o),
    and around it p1 of §2.8 with per-key moments:

        sum q^2 kappa |x'|^2 - 2 sum q^3 mu3 |x'|^2 + 3 (sum q^2 kappa |x'|^2)(sum q^2 kappa)
        + |b|^2 - 2 b . sum q^2 kappa x',     x'_i = v_i - o - b."""
    m, kappa, mu3 = moments_at(exponent, fmt)
    q = clean.p * m
    q /= q.sum(axis=-1, keepdims=True)
    qk = q * q * kappa
    # (T, 2, dv): b = sum q x, sum q^2 kappa x
    both = np.matmul(np.stack([q, qk], axis=1), clean.dev)
    b, qkx = both[:, 0], both[:, 1]
    bb = np.einsum("td,td->t", b, b)
    xb = np.matmul(clean.dev, b[:, :, None])[:, :, 0]  # x_i . b
    xx = clean.dist2 - 2 * xb + bb[:, None]  # |x_i - b|^2
    g = np.sum(qk * xx, axis=-1)
    first = g - 2 * np.sum(q**3 * mu3 * xx, axis=-1) + 3 * g * qk.sum(axis=-1)
    # b . sum q^2 kappa (x - b) = b . sum q^2 kappa x - |b|^2 sum q^2 kappa
    return first + bb - 2 * (np.einsum("td,td->t", b, qkx) - bb * qk.sum(axis=-1))


def shift_prediction(clean: Clean, diag: np.ndarray, cov_p: np.ndarray) -> np.ndarray:
    """Second-order mean of sum (w~ - p) s under zero-mean logit errors of covariance C:
    sum p_i (s_i - s_bar) (C_ii / 2 - (C p)_i), from diag = C_ii and cov_p = C p (docs/science.md
    §11.3)."""
    p, s = clean.p, clean.logits
    centred = s - np.sum(p * s, axis=-1, keepdims=True)
    return np.sum(p * centred * (0.5 * diag - cov_p), axis=-1)


def shift_gradient(clean: Clean) -> np.ndarray:
    """d logit_shift / d eps_i at eps = 0: p_i (s_i - s_bar) (T, n); its first-order variance is g^T
    C g."""
    p, s = clean.p, clean.logits
    return p * (s - np.sum(p * s, axis=-1, keepdims=True))


def rotations(gaussian: np.ndarray) -> np.ndarray:
    """Haar-random orthogonal matrices (T, d, d) from standard normals of that shape: Q of the QR
    factorisation with the signs of R's diagonal moved into Q (Mezzadri 2007)."""
    q, r = np.linalg.qr(np.asarray(gaussian, dtype=np.float64))
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    signs[signs == 0] = 1.0
    return q * signs[:, None, :]


def logit_metrics(clean: Clean, noisy: np.ndarray) -> dict[str, np.ndarray]:
    """The measured error and the essay's prediction from the rounded logits."""
    w = softmax(noisy)
    diff = np.einsum("tn,tnd->td", w, clean.dev)  # sum w~ (v - o) = o~ - o
    kappa = pooled_kappa(np.expm1(noisy - clean.logits))
    return {
        "sq_err": np.einsum("td,td->t", diff, diff),
        "kappa_pooled": kappa,
        "sq_err_iid": kappa * clean.grad_sq,
        "logit_shift": np.sum((w - clean.p) * clean.logits, axis=-1),
    }


def _ratio(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """measured / predicted per row, 0 where both are 0 (an exact rounding), nan where the
    prediction is."""
    out = measured / np.where(predicted > 0, predicted, 1.0)
    out[(predicted <= 0) & (measured > 0)] = np.inf
    out[np.isnan(predicted)] = np.nan
    return out


def _share(mask: np.ndarray) -> np.ndarray:
    return mask.reshape(mask.shape[0], -1).mean(axis=-1)


def logits_site(clean: Clean, fmt: Format) -> dict[str, np.ndarray]:
    s32 = clean.logits.astype(F32)
    rounded = rounding.round_to(s32, fmt)
    out = logit_metrics(clean, rounded.astype(np.float64))
    exponent = rounding.ulp_exponent(s32, fmt)
    var = np.ldexp(1.0 / 12.0, 2 * exponent)
    p2 = clean.p * clean.p
    out["sq_err_model"] = np.sum(p2 * var * clean.dist2, axis=-1)
    out["sq_err_next"] = next_order_logits(clean, exponent, fmt)
    out["logit_shift_model"] = shift_prediction(clean, var, clean.p * var)
    g = shift_gradient(clean)
    out["shift_var_model"] = np.sum(g * g * var, axis=-1)
    out["flushed"] = _share(rounding.flushed(s32, rounded))
    out["saturated"] = _share(rounding.saturated(s32, fmt))
    return out


def _count(mask: np.ndarray) -> np.ndarray:
    return mask.reshape(mask.shape[0], -1).sum(axis=-1)


def qk_site(clean: Clean, q: np.ndarray, k: np.ndarray, fmt: Format) -> dict[str, np.ndarray]:
    """q (T, d), k (T, n, d) as they are cast (already rotated for `qk_rotated`). The model's sums
    are float32 (predictions need no more), the measured error float64."""
    trials, n, d = k.shape
    q32, k32 = np.asarray(q, dtype=F32), np.ascontiguousarray(k, dtype=F32)
    rq, rk = rounding.round_to(q32, fmt), rounding.round_to(k32, fmt)
    product = np.matmul(rk, rq[:, :, None])[:, :, 0]  # (T, n) float32 accumulation
    product *= F32(1.0 / math.sqrt(d))
    out = logit_metrics(clean, product.astype(np.float64))
    # eps_i ~ (dq . k_i + q . dk_i) / sqrt(d): Cov = K diag(Vq) K^T / d + diag(D),
    # D_i = sum_m q_m^2 Vk_im / d
    vq = rounding.error_variance(q32, fmt).astype(F32) / F32(d)  # (T, d), with the 1/d
    vk = rounding.error_variance(k32, fmt).astype(F32)  # (T, n, d)
    own = np.matmul(vk, (q32 * q32)[:, :, None])[:, :, 0] / F32(d)  # D (T, n)
    p32 = clean.p.astype(F32)
    pk = np.ascontiguousarray((p32[:, :, None] * k32).transpose(0, 2, 1))  # (T, d, n): p_i k_im
    a = np.matmul(pk, clean.dev.astype(F32))  # (T, d, dv): sum_i p_i k_im (v_i - o)
    p2 = clean.p * clean.p
    out["sq_err_model"] = np.einsum("tm,tmv,tmv->t", vq, a, a).astype(np.float64) + np.sum(
        p2 * own * clean.dist2, axis=-1
    )
    square = k32 * k32
    diag = np.matmul(square, vq[:, :, None])[:, :, 0] + own  # C_ii
    kbar = pk.sum(axis=-1)  # (T, d): sum_j p_j k_j
    cov_p = np.matmul(k32, (vq * kbar)[:, :, None])[:, :, 0] + p32 * own  # (C p)_i
    out["logit_shift_model"] = shift_prediction(
        clean, diag.astype(np.float64), cov_p.astype(np.float64)
    )
    g = shift_gradient(clean)
    gk = np.matmul(g.astype(F32)[:, None, :], k32)[:, 0, :]  # (T, d): sum_i g_i k_im
    out["shift_var_model"] = np.sum(vq * gk * gk, axis=-1).astype(np.float64) + np.sum(
        g * g * own, axis=-1
    )
    out["sq_err_next"] = np.full(trials, np.nan)
    size = (n + 1) * d
    out["flushed"] = (_count(rounding.flushed(q32, rq)) + _count(rounding.flushed(k32, rk))) / size
    out["saturated"] = (
        _count(rounding.saturated(q32, fmt)) + _count(rounding.saturated(k32, fmt))
    ) / size
    return out


def after_logits(sq_err, sq_err_model, flushed, saturated, kappa=None, sq_err_iid=None) -> dict:
    """The metrics of a site after the logits (the weights, the output): the next order and the
    logit shift are the logits' own (nan here), and the output has no pooled kappa either."""
    nan = np.full(len(sq_err), np.nan)
    return {
        "sq_err": sq_err,
        "kappa_pooled": nan if kappa is None else kappa,
        "sq_err_iid": nan if sq_err_iid is None else sq_err_iid,
        "sq_err_model": sq_err_model,
        "sq_err_next": nan,
        "logit_shift": nan,
        "logit_shift_model": nan,
        "shift_var_model": nan,
        "flushed": flushed,
        "saturated": saturated,
    }


def probs_site(clean: Clean, fmt: Format) -> dict[str, np.ndarray]:
    s = clean.logits
    weights = np.exp(np.maximum(s - np.max(s, axis=-1, keepdims=True), -700.0))  # P, top key 1
    total = weights.sum(axis=-1)
    p32 = weights.astype(F32)
    rounded = rounding.round_to(p32, fmt).astype(np.float64)
    diff = np.einsum("tn,tnd->td", (rounded - weights) / total[:, None], clean.values)
    relative = rounded / weights - 1.0  # fl(P) / P - 1, -1 where flushed
    kappa = pooled_kappa(relative)
    v2 = np.einsum("tnd,tnd->tn", clean.values, clean.values)
    var = rounding.error_variance(p32, fmt)
    var[weights == 1.0] = 0.0  # the top key's P = 1 is exact in every format
    return after_logits(
        np.einsum("td,td->t", diff, diff),
        np.sum(var * v2, axis=-1) / (total * total),  # sum p^2 (Var P / P^2) |v|^2
        _share(rounding.flushed(p32, rounded)),
        _share(rounding.saturated(p32, fmt)),
        kappa,
        kappa * clean.grad_sq,
    )


def output_site(clean: Clean, fmt: Format) -> dict[str, np.ndarray]:
    o32 = clean.o.astype(F32)
    rounded = rounding.round_to(o32, fmt).astype(np.float64)
    diff = rounded - clean.o
    return after_logits(
        np.einsum("td,td->t", diff, diff),
        np.sum(rounding.error_variance(o32, fmt), axis=-1),
        _share(rounding.flushed(o32, rounded)),
        _share(rounding.saturated(o32, fmt)),
    )


class Block:
    """One block of rows and the sites computed on it, each (site, format, scaling) once (a cache:
    the rotated site's unrotated comparison reuses the `qk` site's numbers when the block has it).
    Without a scaling (or a plain one) a site is today's one rounding; the block-scaled
    quantisation is `kernels.block_sites.Block`'s."""

    def __init__(self, logits, values, q=None, k=None, rotation=None):
        self.clean = clean_rows(logits, values)
        self.q, self.k, self.rotation = q, k, rotation
        self._rotated = None
        self._done: dict[tuple[str, str, object], dict[str, np.ndarray]] = {}

    def rotated(self) -> tuple[np.ndarray, np.ndarray]:
        """R q (T, d) and R k_i (T, n, d), computed once per block in float64, kept as float32 (the
        numbers a kernel would cast; their float32 rounding, ~1e-7 relative, joins the site's
        error)."""
        if self._rotated is None:
            r = self.rotation
            q = np.matmul(r, self.q.astype(np.float64)[:, :, None])[:, :, 0]
            k = np.matmul(self.k.astype(np.float64), np.ascontiguousarray(r.transpose(0, 2, 1)))
            self._rotated = (q.astype(F32), k.astype(F32))
        return self._rotated

    def site(self, site: str, fmt_name: str, scaling=None) -> dict[str, np.ndarray]:
        plain = scaling is None or scaling.is_plain
        key = (site, fmt_name, None if plain else scaling)
        if key not in self._done:
            fmt = rounding.FORMATS[fmt_name]
            self._done[key] = (
                self._compute(site, fmt) if plain else self._scaled(site, fmt, scaling)
            )
        return self._done[key]

    def _scaled(self, site: str, fmt: Format, scaling) -> dict[str, np.ndarray]:
        """A block-scaled site: `kernels.block_sites.Block` computes them (this module stays
        below that one)."""
        raise NotImplementedError("block-scaled sites: use kernels.block_sites.Block")

    def _compute(self, site: str, fmt: Format) -> dict[str, np.ndarray]:
        if site == "logits":
            return logits_site(self.clean, fmt)
        if site == "qk":
            return qk_site(self.clean, self.q, self.k, fmt)
        if site == "qk_rotated":
            return qk_site(self.clean, *self.rotated(), fmt)
        if site == "probs":
            return probs_site(self.clean, fmt)
        if site == "output":
            return output_site(self.clean, fmt)
        raise ValueError(f"unknown site {site!r}")

    def metrics(self, site: str, fmt_name: str, scaling=None) -> dict[str, np.ndarray]:
        """Every column of METRIC_NAMES for one (site, format, scaling), (T,) float64 each."""
        c = self.clean
        out = dict(self.site(site, fmt_name, scaling))
        out.update(grad_sq=c.grad_sq, spread=c.spread, entropy=c.entropy, n_eff=c.n_eff)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["kappa_model"] = (
                out["sq_err_model"] / c.grad_sq
                if site != "output"
                else np.full(len(c.grad_sq), np.nan)
            )
            out["ratio_iid"] = _ratio(out["sq_err"], out["sq_err_iid"])
            out["ratio_model"] = _ratio(out["sq_err"], out["sq_err_model"])
        if site == "qk_rotated":
            plain = self.site("qk", fmt_name, scaling)
            out["sq_err_unrotated"], out["sq_err_model_unrotated"] = (
                plain["sq_err"],
                plain["sq_err_model"],
            )
            out["saturated_unrotated"] = plain["saturated"]
        else:
            nan = np.full(len(c.grad_sq), np.nan)
            out["sq_err_unrotated"], out["sq_err_model_unrotated"], out["saturated_unrotated"] = (
                nan,
                nan,
                nan,
            )
        return {name: np.asarray(out[name], dtype=np.float64) for name in METRIC_NAMES}
