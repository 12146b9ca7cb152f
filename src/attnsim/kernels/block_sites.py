"""The attention sites of `kernels.precision` with block-scaled quantisation (`kernels.blockscale`)
and the block-correlated first-order model of their error (docs/science.md §11.9).

Each site returns the columns `precision.Block.metrics` completes. The model is the rounding
model of §11.2 with each value's variance S^2 ulp(x/S)^2 / 12 set by its group's scale, plus the
errors the model knows exactly (values flushed to 0: error -x; saturated: sign(x) M S - x), which
move the output by a known first-order vector b: the prediction is the variance term plus |b|^2.
Under OCP MX's rule the known errors are its clipped block maxima, too large for a first order:
their effect is computed exactly (`Scaling.exact_known`), the random part's first order about the
moved reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels import blockscale, precision, rounding
from attnsim.kernels.precision import (
    Clean,
    after_logits,
    logit_metrics,
    pooled_kappa,
    shift_gradient,
    shift_prediction,
)
from attnsim.kernels.rounding import F32, Format


@dataclass(frozen=True)
class Scaling:
    """How a site's numbers are quantised: the scale groups, the scale's format, the qk product's
    accumulator."""

    granularity: str = "none"
    scale_type: str = "fp32"
    accumulation: str = "fp32"
    # "mean": SageAttention's smoothing, k_i - mean_j k_j before quantising (qk sites): exact, as
    # it moves every logit of a row by q . mean k
    smoothing: str = "none"

    @property
    def exact_known(self) -> bool:
        """The known errors' effect on the output computed exactly, not at first order: under the
        OCP rule they are the saturated block maxima's, up to 12.5% (E4M3) or 25% (E2M1) of the
        largest logit of a block (docs/science.md §11.9). The other rules' known errors (flushes,
        the NVFP4 maximum's <= 1/16) stay at the first order their stored rows were computed
        with."""
        return self.scale_type == "e8m0_ocp" and self.granularity != "none"

    @property
    def is_plain(self) -> bool:
        """Today's one rounding (no scale, fp32 accumulation, no smoothing): `kernels.precision`'s
        own path."""
        return (
            self.granularity == "none" and self.accumulation == "fp32" and self.smoothing == "none"
        )


def _quantised(x: np.ndarray, fmt: Format, scaling: Scaling):
    """(kept values, model variance, known error, flushed share, saturated share) of x (T, R, C)."""
    kept, scale = blockscale.quantise(x, fmt, scaling.granularity, scaling.scale_type)
    variance, known = blockscale.error_moments(
        x, scale, fmt, scaling.granularity, scaling.scale_type
    )
    scaled = np.asarray(x, dtype=F32) / scale
    flushed = rounding.flushed(x, kept).reshape(len(x), -1).sum(axis=-1)
    saturated = rounding.saturated(scaled, fmt).reshape(len(x), -1).sum(axis=-1)
    return kept, variance, known, flushed, saturated


def _known_exactly(out: dict, clean: Clean, moved: Clean) -> None:
    """Add the known errors' exact effect to a logit site's model, whose random part `out` holds
    at the moved reference: |o(s + e) - o(s)|^2 (no cross term: the random errors have mean 0 at
    first order) and the shift sum (p(s + e) - p(s)) s of the mean logit."""
    move = moved.o - clean.o
    out["sq_err_model"] = out["sq_err_model"] + np.einsum("td,td->t", move, move)
    shift = np.sum((moved.p - clean.p) * clean.logits, axis=-1)
    out["logit_shift_model"] = out["logit_shift_model"] + shift


def logits_site(clean: Clean, fmt: Format, scaling: Scaling) -> dict[str, np.ndarray]:
    s32 = clean.logits.astype(F32)[:, None, :]
    kept, var, known, flushed, saturated = _quantised(s32, fmt, scaling)
    var, known = var[:, 0], known[:, 0]
    out = logit_metrics(clean, kept[:, 0].astype(np.float64))
    if scaling.exact_known:  # the reference moved by the known errors, exactly
        moved = precision.clean_rows(clean.logits + known, clean.values)
        out.update(_logit_model(moved, var, np.zeros_like(known)))
        _known_exactly(out, clean, moved)
    else:
        out.update(_logit_model(clean, var, known))
    out["sq_err_next"] = np.full(len(clean.p), np.nan)
    size = s32.shape[-1]
    out["flushed"], out["saturated"] = flushed / size, saturated / size
    return out


def _logit_model(clean: Clean, var: np.ndarray, known: np.ndarray) -> dict[str, np.ndarray]:
    """The first-order model of logit errors with variances `var` and known part `known` (T, n)
    about `clean`."""
    p = clean.p
    b = np.einsum("tn,tnd->td", p * known, clean.dev)  # the known errors' first-order move
    g = shift_gradient(clean)
    return {
        "sq_err_model": np.sum(p * p * var * clean.dist2, axis=-1) + np.sum(b * b, axis=-1),
        "logit_shift_model": shift_prediction(clean, var, p * var) + np.sum(g * known, axis=-1),
        "shift_var_model": np.sum(g * g * var, axis=-1),
    }


def qk_site(
    clean: Clean, q: np.ndarray, k: np.ndarray, fmt: Format, scaling: Scaling
) -> dict[str, np.ndarray]:
    """q (T, d), k (T, n, d) as cast: q's scale groups are those of a one-row tensor."""
    trials, n, d = k.shape
    if scaling.smoothing == "mean":
        k = np.asarray(k, dtype=F32) - np.asarray(k, dtype=F32).mean(axis=1, keepdims=True)
    rq, vq, kq, fq, sq = _quantised(np.asarray(q, dtype=F32)[:, None, :], fmt, scaling)
    rk, vk, kk, fk, sk = _quantised(np.asarray(k, dtype=F32), fmt, scaling)
    product, var_acc = blockscale.accumulate(rq[:, 0], rk, scaling.accumulation)
    product = product.astype(F32) * F32(1.0 / math.sqrt(d))
    out = logit_metrics(clean, product.astype(np.float64))
    q64, k64 = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    vq, kq = vq[:, 0] / d, kq[:, 0]
    if scaling.exact_known:
        # the known errors' logit error (q + dq) . (k_i + dk_i) / sqrt(d) - q . k_i / sqrt(d),
        # bilinear, exactly; the random part at the moved q, k and reference
        q1, k1 = q64 + kq, k64 + kk
        known = np.matmul(k1, q1[:, :, None])[:, :, 0] - np.matmul(k64, q64[:, :, None])[:, :, 0]
        moved = precision.clean_rows(clean.logits + known / math.sqrt(d), clean.values)
        out.update(_qk_model(moved, q1, k1, vq, vk, var_acc, np.zeros((trials, n))))
        _known_exactly(out, clean, moved)
    else:
        known = (np.matmul(k64, kq[:, :, None])[:, :, 0] + np.einsum("tnd,td->tn", kk, q64)) / (
            math.sqrt(d)
        )
        out.update(_qk_model(clean, q64, k64, vq, vk, var_acc, known))
    out["sq_err_next"] = np.full(trials, np.nan)
    size = (n + 1) * d
    out["flushed"], out["saturated"] = (fq + fk) / size, (sq + sk) / size
    return out


def _qk_model(clean: Clean, q64, k64, vq, vk, var_acc, known) -> dict[str, np.ndarray]:
    """The first-order model of the logit errors (dq . k_i + q . dk_i + acc_i) / sqrt(d) about
    `clean`, q64 (T, d) and k64 (T, n, d): Cov = K diag(vq) K^T + diag(own), plus the known
    errors' first-order move."""
    d = q64.shape[-1]
    own = (np.matmul(vk, (q64 * q64)[:, :, None])[:, :, 0] + var_acc) / d
    p = clean.p
    pk = np.ascontiguousarray((p[:, :, None] * k64).transpose(0, 2, 1))  # (T, d, n)
    a = np.matmul(pk, clean.dev)  # (T, d, dv): sum_i p_i k_im (v_i - o)
    b = np.einsum("tn,tnd->td", p * known, clean.dev)
    out = {
        "sq_err_model": (
            np.einsum("tm,tmv,tmv->t", vq, a, a)
            + np.sum(p * p * own * clean.dist2, axis=-1)
            + np.sum(b * b, axis=-1)
        )
    }
    diag = np.matmul(k64 * k64, vq[:, :, None])[:, :, 0] + own
    kbar = pk.sum(axis=-1)  # sum_j p_j k_j
    cov_p = np.matmul(k64, (vq * kbar)[:, :, None])[:, :, 0] + p * own
    g = shift_gradient(clean)
    out["logit_shift_model"] = shift_prediction(clean, diag, cov_p) + np.sum(g * known, axis=-1)
    gk = np.matmul(g[:, None, :], k64)[:, 0, :]  # sum_i g_i k_im
    out["shift_var_model"] = np.sum(vq * gk * gk, axis=-1) + np.sum(g * g * own, axis=-1)
    return out


def probs_site(clean: Clean, fmt: Format, scaling: Scaling) -> dict[str, np.ndarray]:
    s = clean.logits
    weights = np.exp(np.maximum(s - np.max(s, axis=-1, keepdims=True), -700.0))  # top key 1
    total = weights.sum(axis=-1)
    p32 = weights.astype(F32)[:, None, :]
    kept, var, known, flushed, saturated = _quantised(p32, fmt, scaling)
    rounded, var, known = kept[:, 0].astype(np.float64), var[:, 0], known[:, 0]
    var[weights == 1.0] = 0.0  # the top key's P = 1 is its groups' maximum, a power of two
    diff = np.einsum("tn,tnd->td", (rounded - weights) / total[:, None], clean.values)
    relative = rounded / weights - 1.0
    kappa = pooled_kappa(relative)
    v2 = np.einsum("tnd,tnd->tn", clean.values, clean.values)
    b = np.einsum("tn,tnd->td", known, clean.values) / total[:, None]
    size = s.shape[-1]
    return after_logits(
        np.einsum("td,td->t", diff, diff),
        np.sum(var * v2, axis=-1) / (total * total) + np.sum(b * b, axis=-1),
        flushed / size,
        saturated / size,
        kappa,
        kappa * clean.grad_sq,
    )


def output_site(clean: Clean, fmt: Format, scaling: Scaling) -> dict[str, np.ndarray]:
    o32 = clean.o.astype(F32)[:, None, :]
    kept, var, known, flushed, saturated = _quantised(o32, fmt, scaling)
    diff = kept[:, 0].astype(np.float64) - clean.o
    size = o32.shape[-1]
    return after_logits(
        np.einsum("td,td->t", diff, diff),
        np.sum(var[:, 0], axis=-1) + np.sum(known[:, 0] ** 2, axis=-1),
        flushed / size,
        saturated / size,
    )


class Block(precision.Block):
    """`precision.Block` with the block-scaled sites: a point's `Scaling` picks today's one
    rounding (plain) or this module's quantisation, on the same rows and cache."""

    def _scaled(self, site: str, fmt: Format, scaling) -> dict[str, np.ndarray]:
        if site == "logits":
            return logits_site(self.clean, fmt, scaling)
        if site == "qk":
            return qk_site(self.clean, self.q, self.k, fmt, scaling)
        if site == "qk_rotated":
            return qk_site(self.clean, *self.rotated(), fmt, scaling)
        if site == "probs":
            return probs_site(self.clean, fmt, scaling)
        if site == "output":
            return output_site(self.clean, fmt, scaling)
        raise ValueError(f"unknown site {site!r}")
