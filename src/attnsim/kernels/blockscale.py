"""Block-scaled quantisation as attention kernels practise it (OCP microscaling, NVFP4,
SageAttention, FlashAttention-3), and the block-correlated first-order model of its error
(docs/science.md §11.9).

An array x (T, R, C) is quantised along its reduction axis C (the channels of q and k, the keys
of the logits and of P): the values sharing one scale S are

- `tensor`: all of a trial's R x C values; `row`: one row (a token); `channel`: one column over
  the R rows; `block32` / `block16`: 32 or 16 consecutive values of a row (a last, shorter block
  when C is not a multiple);
- `none`: no scale (S = 1), the plain cast of `kernels.rounding`.

The scale S comes from the group's largest magnitude a and the format's largest value M
(`target`; 2^16 for bfloat16): S = a / M in float32 (`fp32`); a power of two by one of the two
E8M0 rules in use (docs/science.md §11.9): rounded up, 2^ceil(log2(a / M)), which never saturates
(`e8m0_ceil`, NVIDIA's MXFP8 recipe; called `e8m0` before the OCP rule joined it), or OCP MX
v1.0's 2^(floor(log2 a) - emax) with emax the exponent of the element's largest binade
(`e8m0_ocp`), which saturates the group's maximum when its significand exceeds M / 2^emax; or
NVFP4's two levels (`e4m3`): a per-tensor float32 scale G = A / (M 448) (A the trial's largest
magnitude: the trial's array is the tensor) puts the largest group's scale at float8_e4m3fn's
largest value, and each group's S = G fl_e4m3(a / (M G)), rounded to nearest (so its maximum may
saturate, by up to 1/16); NVFP4 proper is this on `block16` groups of float4_e2m1fn. A group of
zeros takes S = 1. The value kept is S * fl(x / S), computed in float32 as a kernel dequantises,
every element cast with saturation (`rounding.round_to`: |x / S| > M becomes +-M).

The model (`error_moments`): given the row, each value's error is uniform on +- S ulp(x/S) / 2
(variance S^2 ulp(x/S)^2 / 12), except where its position is known exactly: a value flushed to
0 (|x/S| at most half the format's smallest subnormal) has the error -x, a saturated one (|x/S|
> M) the error sign(x) M S - x, and the group's maximum a under an fp32 or e4m3 scale lands at
a / S = M a / (M S), fixed by the scale's own rounding (fp32: M up to 2^-24; e4m3: within 1/16
of M), not by where a falls in a bin: its error is known, fl(a/S) S - a. Under e8m0_ceil, a / S
falls anywhere in (M/2, M] with a's significand and is modelled as any other value; under
e8m0_ocp in [2^emax, 2^(emax + 1)): rounded like any other value below M, clipped (a known error)
above it. The variance of the errors is therefore shared by the group through S: all of a
block's errors grow with its maximum.
"""

from __future__ import annotations

import math

import numpy as np

from attnsim.kernels import rounding
from attnsim.kernels.rounding import F32, Format

WITHIN_BIN_FACTOR = 0.4  # derived in docs/science.md §11.9 and tests/theory (issue 49; was 1/4)


def within_bin_tolerance(bits: int) -> float:
    """How far the uniform-within-bin variance may be off for gaussian values (docs/science.md
    §11.9): over a bin of width w the density's curvature changes E e^2 by a relative
    (f''/f) w^2 / 30; weighted by each bin's share of the error (f w^2) with w <= h|x|,
    h = 2^(1 - t), that is at most h^2 E[x^4 (x^2/sigma^2 - 1)] / (30 sigma^2 E[x^2]) = 0.4 h^2:
    10% at FP4 (t = 2), 2.5% at t = 3, 0.6% at t = 4, nothing at fp16. Of the format's
    significand bits t (`rounding.significand_bits`: no ml-dtypes needed)."""
    return WITHIN_BIN_FACTOR * 2.0 ** (2 * (1 - bits))


GRANULARITIES = ("none", "tensor", "row", "channel", "block32", "block16")
SCALE_TYPES = ("fp32", "e8m0_ceil", "e8m0_ocp", "e4m3")
# A value renamed after points were stored under it -> its name now (docs/science.md §11.9): the
# same rule, so the same rows and point ids (`kinds.low_precision.SCALE_TYPE`)
RENAMED_SCALE_TYPES = {"e8m0": "e8m0_ceil"}
ACCUMULATIONS = ("fp32", "fp16")
SMOOTHINGS = ("none", "mean")


def group_maxima(x: np.ndarray, granularity: str) -> np.ndarray:
    """The largest |x| of each value's scale group, broadcast to x's shape (T, R, C)."""
    a = np.abs(np.asarray(x, dtype=F32))
    trials, rows, cols = a.shape
    if granularity == "tensor":
        return np.broadcast_to(a.max(axis=(1, 2), keepdims=True), a.shape)
    if granularity == "row":
        return np.broadcast_to(a.max(axis=2, keepdims=True), a.shape)
    if granularity == "channel":
        return np.broadcast_to(a.max(axis=1, keepdims=True), a.shape)
    if granularity.startswith("block"):
        size = int(granularity.removeprefix("block"))
        blocks = -(-cols // size)
        padded = np.zeros((trials, rows, blocks * size), dtype=F32)
        padded[:, :, :cols] = a
        top = padded.reshape(trials, rows, blocks, size).max(axis=3)
        return np.repeat(top, size, axis=2)[:, :, :cols]
    raise ValueError(f"unknown granularity {granularity!r}")


def target(fmt: Format) -> float:
    """Where a scale puts its group's maximum: the format's largest value M, or 2^16 for bfloat16
    (whose M is at float32's own edge, where x / S would overflow; its relative spacing is the
    same in every binade, so the choice changes nothing but the overflow)."""
    return min(fmt.max, 2.0**16)


# E8M0 holds the powers of two 2^-127 ... 2^127 (0xFF is NaN)
E8M0_EXPONENT = 127


def ocp_emax(fmt: Format) -> int:
    """emax_elem of OCP MX v1.0: the exponent of the element format's largest binade (E4M3 8,
    E5M2 15, E2M3 2, E3M2 4, E2M1 2; 16 for bfloat16 and 15 for float16, from `target`)."""
    return math.floor(math.log2(target(fmt)))


def ocp_saturation_significand(fmt: Format) -> float:
    """The significand of a block maximum above which the OCP rule saturates it: max / 2^emax
    (1.75 for E4M3, E5M2 and E3M2, 1.875 for E2M3, 1.5 for E2M1, 1.999 for float16; bfloat16's
    largest value is far above 2^17, so never)."""
    return fmt.max / 2.0 ** ocp_emax(fmt)


def scales(maxima: np.ndarray, fmt: Format, scale_type: str) -> np.ndarray:
    """The shared scale S of each group from its largest magnitude (float32, see the module)."""
    raw = np.asarray(maxima, dtype=F32) / F32(target(fmt))
    raw = np.where(raw > 0, raw, F32(1.0)).astype(F32)
    if scale_type == "fp32":
        return raw
    if scale_type == "e8m0_ceil":
        mantissa, exponent = np.frexp(raw)  # raw = mantissa 2^exponent, mantissa in [1/2, 1)
        return np.ldexp(F32(1.0), exponent - (mantissa == 0.5)).astype(F32)
    if scale_type == "e8m0_ocp":
        a = np.asarray(maxima, dtype=F32)
        exponent = np.frexp(a)[1] - 1  # floor(log2 a): a = m 2^(e + 1), m in [1/2, 1)
        shared = np.clip(exponent - ocp_emax(fmt), -E8M0_EXPONENT, E8M0_EXPONENT)
        return np.where(a > 0, np.ldexp(F32(1.0), shared), F32(1.0)).astype(F32)
    if scale_type == "e4m3":
        e4m3 = rounding.FORMATS["float8_e4m3fn"]
        top = raw.reshape(len(raw), -1).max(axis=1).reshape((-1,) + (1,) * (raw.ndim - 1))
        tensor = (top / F32(e4m3.max)).astype(F32)  # the trial's float32 scale G
        scale = rounding.round_to(raw / tensor, e4m3) * tensor
        return np.where(scale > 0, scale, F32(1.0)).astype(F32)  # a flushed scale: no scaling
    raise ValueError(f"unknown scale type {scale_type!r}")


def quantise(x, fmt: Format, granularity: str, scale_type: str) -> tuple[np.ndarray, np.ndarray]:
    """(S * fl(x / S), S) for x (T, R, C), both float32 of x's shape."""
    x32 = np.asarray(x, dtype=F32)
    if granularity == "none":
        return rounding.round_to(x32, fmt), np.ones_like(x32)
    scale = scales(group_maxima(x32, granularity), fmt, scale_type)
    kept = rounding.round_to(x32 / scale, fmt) * scale
    return kept.astype(F32), scale


def error_moments(
    x, scale: np.ndarray, fmt: Format, granularity: str, scale_type: str
) -> tuple[np.ndarray, np.ndarray]:
    """The model's (variance, known error) of each value's quantisation error, float64 (T, R, C):
    uniform on +- S ulp(x/S)/2 where the value is rounded; the error -x and no variance where it
    is flushed to 0; none at a group's maximum under an fp32 scale (module docstring)."""
    x32 = np.asarray(x, dtype=F32)
    scaled = x32 / scale
    s64 = scale.astype(np.float64)
    variance = rounding.error_variance(scaled, fmt) * s64 * s64
    x64 = x32.astype(np.float64)
    flush = np.abs(scaled) <= F32(fmt.smallest_subnormal / 2)
    over = np.abs(scaled) > F32(fmt.max)
    known = np.where(flush, -x64, 0.0)
    known[over] = (np.sign(x64) * fmt.max * s64 - x64)[over]
    variance[flush | over] = 0.0
    if granularity != "none" and scale_type in ("fp32", "e4m3"):
        top = (np.abs(x32) == group_maxima(x32, granularity)) & ~flush
        kept = (rounding.round_to(scaled, fmt) * scale).astype(np.float64)
        known[top] = (kept - x64)[top]
        variance[top] = 0.0
    return variance, known


def accumulate(a: np.ndarray, b: np.ndarray, accumulation: str) -> tuple[np.ndarray, np.ndarray]:
    """(sum_m a_tm b_tim, the model's variance of its accumulation error) for a (T, d), b (T, n, d):
    fp32 as a matmul (no modelled error); fp16 channel by channel, each partial sum rounded to
    float16 (a tensor core's fp16 accumulator), the error of each step uniform on +- ulp/2."""
    if accumulation == "fp32":
        product = np.matmul(b, a[:, :, None])[:, :, 0]
        return product, np.zeros(product.shape)
    if accumulation != "fp16":
        raise ValueError(f"unknown accumulation {accumulation!r}")
    half = rounding.FORMATS["float16"]
    total = np.zeros(b.shape[:2], dtype=F32)
    variance = np.zeros(b.shape[:2])
    for m in range(b.shape[2]):
        exact = total + b[:, :, m] * a[:, None, m]
        total = rounding.round_to(exact, half)
        variance += rounding.error_variance(exact, half)
    return total, variance
