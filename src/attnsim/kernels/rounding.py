"""Rounding to low-precision floating-point formats, and the standard model of its error
(docs/science.md §11.1).

A format has `bits` significand bits t (the implicit leading bit included), a smallest normal
exponent `min_exp` and a largest finite value `max`. Its grid spacing at x (the ulp) is
2^(max(floor(log2|x|), min_exp) - t + 1): relative spacing 2^(1 - t) over the normal range, the
constant 2^(min_exp - t + 1) over the subnormal range below 2^min_exp.

`to_format` is the reference rounding: float32 inputs (as hardware keeps the values before the
cast), round-to-nearest-even through ml-dtypes' casts, with saturation: |x| > max becomes +-max
(NVIDIA's `satfinite` conversions; a plain cast gives inf, or NaN in e4m3fn, which has no inf).
NaN stays NaN.

The standard model: the error fl(x) - x is uniform on +- ulp(x)/2, so Var = ulp(x)^2 / 12. It
fails where the format saturates (error max - |x|) and in the underflow of |x| < ulp/2 (error
exactly -x: the value is flushed to 0); `flushed` and `saturated` count those elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

F32 = np.float32


@dataclass(frozen=True)
class Format:
    name: str
    dtype: np.dtype
    bits: int  # significand bits t, the implicit leading bit included
    min_exp: int  # exponent of the smallest normal number
    max: float  # largest finite value

    @property
    def eps(self) -> float:
        """Relative spacing 2^(1 - t) of the normal range (u = eps / 2 is the unit roundoff)."""
        return 2.0 ** (1 - self.bits)

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (self.min_exp - self.bits + 1)


def _format(name: str, dtype, bits: int, min_exp: int) -> Format:
    info = ml_dtypes.finfo(dtype)
    assert int(info.nmant) + 1 == bits and float(info.smallest_normal) == 2.0**min_exp, name
    return Format(name, np.dtype(dtype), bits, min_exp, float(info.max))


FORMATS = {
    f.name: f
    for f in (
        _format("bfloat16", ml_dtypes.bfloat16, 8, -126),
        _format("float16", np.float16, 11, -14),
        _format("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 4, -6),
        _format("float8_e5m2", ml_dtypes.float8_e5m2, 3, -14),
    )
}
FORMAT_NAMES = tuple(FORMATS)


def to_format(x, fmt: Format) -> np.ndarray:
    """x rounded to the format (saturating, see the module docstring), returned as float32
    (every value of these formats is a float32). The input is first made float32."""
    x32 = np.asarray(x, dtype=F32)
    clipped = np.clip(x32, F32(-fmt.max), F32(fmt.max))
    return clipped.astype(fmt.dtype).astype(F32)


def ulp(x, fmt: Format) -> np.ndarray:
    """The format's grid spacing at |x| (float64): 2^(max(floor(log2|x|), min_exp) - t + 1);
    the subnormal spacing at x = 0. Not capped at `max` (the model does not cover saturation)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    _, e = np.frexp(a)  # a = m 2^e, m in [0.5, 1): floor(log2 a) = e - 1
    e = np.where(a > 0, e - 1, fmt.min_exp)
    return np.ldexp(1.0, np.maximum(e, fmt.min_exp) - fmt.bits + 1)


def error_variance(x, fmt: Format) -> np.ndarray:
    """Var(fl(x) - x | x) = ulp(x)^2 / 12 of the standard model (float64)."""
    u = ulp(x, fmt)
    return u * u / 12.0


def flushed(x, rounded) -> np.ndarray:
    """Boolean: a nonzero input rounded to 0 (underflow)."""
    return (np.asarray(rounded) == 0) & (np.asarray(x) != 0)


def saturated(x, fmt: Format) -> np.ndarray:
    """Boolean: |x| beyond the largest finite value (the cast saturated)."""
    return np.abs(np.asarray(x, dtype=F32)) > F32(fmt.max)
