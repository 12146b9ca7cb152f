"""Rounding to low-precision floating-point formats, and the standard model of its error
(docs/science.md §11.1).

A format has `bits` significand bits t (the implicit leading bit included), a smallest normal
exponent `min_exp` and a largest finite value `max`. Its grid spacing at x (the ulp) is
2^(max(floor(log2|x|), min_exp) - t + 1): relative spacing 2^(1 - t) over the normal range, the
constant 2^(min_exp - t + 1) over the subnormal range below 2^min_exp.

`to_format` is the reference rounding: float32 inputs (as hardware keeps the values before the
cast), round-to-nearest-even through ml-dtypes' casts, with saturation: |x| > max becomes +-max
(NVIDIA's `satfinite` conversions; a plain cast gives inf, or NaN in e4m3fn, which has no inf).
NaN stays NaN (also in FP6/FP4, which have no NaN: the emulation keeps float32's).

The standard model: the error fl(x) - x is uniform on +- ulp(x)/2, so Var = ulp(x)^2 / 12. It
fails where the format saturates (error max - |x|) and in the underflow of |x| < ulp/2 (error
exactly -x: the value is flushed to 0); `flushed` and `saturated` count those elements.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np

from attnsim.errors import AttnsimError

F32 = np.float32


@dataclass(frozen=True)
class Format:
    name: str
    dtype: np.dtype
    bits: int  # significand bits t, the implicit leading bit included
    min_exp: int  # exponent of the smallest normal number
    max: float  # largest finite value
    cast_is_fast: bool = False  # ml-dtypes' cast beats the bit arithmetic of `round_to` (bfloat16)
    has_nan: bool = True  # the microscaling elements (FP6, FP4) have neither NaN nor inf

    @property
    def eps(self) -> float:
        """Relative spacing 2^(1 - t) of the normal range (u = eps / 2 is the unit roundoff)."""
        return 2.0 ** (1 - self.bits)

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (self.min_exp - self.bits + 1)


def _format(name: str, dtype, cast_is_fast: bool = False) -> Format:
    import ml_dtypes

    bits, min_exp = SHAPES[name]
    info = ml_dtypes.finfo(dtype)
    assert int(info.nmant) + 1 == bits and float(info.smallest_normal) == 2.0**min_exp, name
    has_nan = bool(np.isnan(np.array(np.nan, dtype=F32).astype(dtype).astype(F32)))
    return Format(name, np.dtype(dtype), bits, min_exp, float(info.max), cast_is_fast, has_nan)


# The OCP microscaling element types (FP6 E2M3/E3M2, FP4 E2M1) follow the four classic formats:
# no inf and no NaN, saturating like e4m3fn (docs/science.md §11.9).
CLASSIC_FORMAT_NAMES = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
MX_ELEMENT_NAMES = ("float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
FORMAT_NAMES = CLASSIC_FORMAT_NAMES + MX_ELEMENT_NAMES
# Each format's significand bits t and smallest normal exponent, as `_formats` checks them against
# ml-dtypes: known without importing it (a claim's tolerance needs t alone, and importing
# ml-dtypes was most of what importing the precision claims cost: ~1.2 CPU-s)
SHAPES: dict[str, tuple[int, int]] = {
    "bfloat16": (8, -126),
    "float16": (11, -14),
    "float8_e4m3fn": (4, -6),
    "float8_e5m2": (3, -14),
    "float6_e2m3fn": (4, 0),
    "float6_e3m2fn": (3, -2),
    "float4_e2m1fn": (2, 0),
}


def significand_bits(name: str) -> int:
    """The format's significand bits t (the implicit leading bit included), without ml-dtypes."""
    return SHAPES[name][0]


@cache
def _formats() -> dict[str, Format]:
    """The formats, built on first use: importing ml-dtypes loads its extension module (0.02 s
    with ml-dtypes 0.6, 1.2 s with 0.7), which every job that imports the kinds (claims,
    figures, Snakemake's planning) would pay."""
    try:
        import ml_dtypes
    except ImportError as missing:  # a core dependency; without it only these kinds stop
        raise AttnsimError(
            "the low-precision formats need ml-dtypes: pip install 'ml-dtypes>=0.5' (a dependency "
            "of attnsim)"
        ) from missing
    table = (
        _format("bfloat16", ml_dtypes.bfloat16, cast_is_fast=True),
        _format("float16", np.float16),
        _format("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
        _format("float8_e5m2", ml_dtypes.float8_e5m2),
        _format("float6_e2m3fn", ml_dtypes.float6_e2m3fn),
        _format("float6_e3m2fn", ml_dtypes.float6_e3m2fn),
        _format("float4_e2m1fn", ml_dtypes.float4_e2m1fn),
    )
    return {f.name: f for f in table}


class _Formats(Mapping):
    """name -> Format, built on first use (so that importing attnsim needs no ml-dtypes)."""

    def __getitem__(self, name: str) -> Format:
        return _formats()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(FORMAT_NAMES)

    def __len__(self) -> int:
        return len(FORMAT_NAMES)


FORMATS: Mapping[str, Format] = _Formats()


def to_format(x, fmt: Format) -> np.ndarray:
    """x rounded to the format through ml-dtypes' cast (saturating, see the module docstring),
    as float32 (every value of these formats is a float32). The input is first made float32.
    The reference rounding; the kernels use `round_to`, proven identical by the tests."""
    x32 = np.asarray(x, dtype=F32)
    clipped = np.clip(x32, F32(-fmt.max), F32(fmt.max))
    with np.errstate(invalid="ignore"):  # NaN stays NaN
        out = clipped.astype(fmt.dtype).astype(F32)
    if not fmt.has_nan:  # the FP6/FP4 elements have no NaN: keep the input's
        out = np.where(np.isnan(x32), x32, out)
    return out


_SIGN, _MAGNITUDE, _INF = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x7F800000)


def round_to(x, fmt: Format, bits_only: bool = False) -> np.ndarray:
    """The same numbers as `to_format` (bit for bit, NaN as NaN), by integer arithmetic on the
    float32 bits, ~3x faster than the float8 casts (bfloat16 uses its cast, which is faster,
    unless `bits_only`):

    - the format's normal range: round to nearest even on the magnitude's bits, dropping the
      24 - t low significand bits (a carry into the exponent is the correct rounding up);
    - below 2^min_exp (the format's subnormals, and float32's): (|x| + M) - M in float32 with
      M = 2^(min_exp - t + 24), whose float32 spacing is the format's subnormal spacing, so
      the addition rounds to nearest even on that grid and the subtraction is exact;
    - then saturation at +-max; the sign is carried over; NaN stays NaN."""
    if fmt.cast_is_fast and not bits_only:
        return to_format(x, fmt)
    x32 = np.ascontiguousarray(x, dtype=F32)
    bits = x32.view(np.uint32)
    magnitude = bits & _MAGNITUDE
    shift = 24 - fmt.bits
    lsb = (magnitude >> np.uint32(shift)) & np.uint32(1)
    rounded = magnitude + np.uint32((1 << (shift - 1)) - 1)
    rounded += lsb
    rounded &= np.uint32(~((1 << shift) - 1) & 0xFFFFFFFF)
    small = magnitude < np.uint32((fmt.min_exp + 127) << 23) if fmt.min_exp > -127 else None
    if small is not None and small.any():
        big = F32(2.0 ** (fmt.min_exp - fmt.bits + 24))
        tiny = magnitude[small].view(F32) + big
        tiny -= big
        rounded[small] = tiny.view(np.uint32)
    np.minimum(rounded, np.asarray(fmt.max, F32).view(np.uint32), out=rounded)
    rounded |= bits & _SIGN
    out = rounded.view(F32)
    nan = magnitude > _INF
    if nan.any():
        out[nan] = np.nan
    return out


def ulp_exponent(x, fmt: Format) -> np.ndarray:
    """E with ulp(x) = 2^E (int32), from the float32 exponent bits (see `ulp`)."""
    x32 = np.ascontiguousarray(x, dtype=F32)
    exponent = ((x32.view(np.uint32) >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int32)
    exponent -= 127
    np.maximum(exponent, fmt.min_exp, out=exponent)
    exponent += 1 - fmt.bits
    return exponent


def ulp(x, fmt: Format) -> np.ndarray:
    """The format's grid spacing at float32(x), float64: 2^(max(floor(log2|x|), min_exp) - t + 1)
    (floor(log2|x|) from the float32 exponent bits; zero and float32 subnormals take the format's
    subnormal spacing). Not capped at `max` (the model does not cover saturation)."""
    return np.ldexp(1.0, ulp_exponent(x, fmt))


def error_variance(x, fmt: Format) -> np.ndarray:
    """Var(fl(x) - x | x) = ulp(x)^2 / 12 of the standard model (float64)."""
    return np.ldexp(1.0 / 12.0, 2 * ulp_exponent(x, fmt))


def flushed(x, rounded) -> np.ndarray:
    """Boolean: a nonzero input rounded to 0 (underflow)."""
    return (np.asarray(rounded) == 0) & (np.asarray(x) != 0)


def saturated(x, fmt: Format) -> np.ndarray:
    """Boolean: |x| beyond the largest finite value (the cast saturated)."""
    x32 = np.ascontiguousarray(x, dtype=F32)
    return (x32.view(np.uint32) & _MAGNITUDE) > np.asarray(fmt.max, F32).view(np.uint32)
