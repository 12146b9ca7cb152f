"""The kernels' bit-level rounding equals ml-dtypes' saturating cast on every class of float32 bit
patterns (normals of every binade, both formats' subnormals, exact ties and their neighbours, the
largest values and overflow, zeros, infinities, NaN), and the error model's ulp is the format's
grid spacing."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

from attnsim.kernels import rounding
from attnsim.kernels.rounding import F32, FORMATS


def representable(fmt) -> np.ndarray:
    """Every finite value of the format as float32 (all bit patterns of 8-bit formats; all 2^16 of
    16-bit ones)."""
    width = 8 if fmt.dtype.itemsize == 1 else 16
    codes = np.arange(2**width, dtype=np.uint8 if width == 8 else np.uint16)
    values = codes.view(fmt.dtype).astype(F32)
    return np.unique(values[np.isfinite(values)])


def candidates(fmt, rng) -> np.ndarray:
    """Bit patterns that exercise every rounding case of the format."""
    grid = representable(fmt)
    positive = grid[grid > 0]
    # ties (exact in float32: at most 24 bits)
    mids = (positive[:-1].astype(np.float64) + positive[1:]) / 2
    ties = mids.astype(F32)
    assert np.all(ties.astype(np.float64) == mids)
    near = [
        np.nextafter(ties, F32(0)),
        np.nextafter(ties, F32(np.inf)),
        np.nextafter(positive, F32(0)),
        np.nextafter(positive, F32(np.inf)),
    ]
    top = F32(fmt.max)
    with np.errstate(over="ignore"):  # bfloat16's max times 2 is inf: one more overflow case
        beyond = np.array(
            [top * F32(1.03), top * F32(1.0625), top * F32(1.07), top * 2, np.finfo(F32).max], F32
        )
    half_sub = F32(fmt.smallest_subnormal / 2)
    tiny = np.array(
        [
            half_sub,
            np.nextafter(half_sub, F32(1)),
            np.nextafter(half_sub, F32(0)),
            1e-45,
            1e-40,
            np.finfo(F32).tiny,
        ],
        F32,
    )
    special = np.array([0.0, np.inf, np.nan], F32)
    random_bits = rng.integers(0, 2**32, 2_000_000, dtype=np.uint64).astype(np.uint32).view(F32)
    exponents = rng.integers(fmt.min_exp - fmt.bits - 3, 20, 200_000)
    mantissas = rng.integers(0, 2**23, exponents.size, dtype=np.uint32)
    binades = (mantissas | np.uint32(0x3F800000)).view(F32).astype(np.float64) * np.ldexp(
        1.0, exponents
    )
    values = np.concatenate([positive, ties, *near, beyond, tiny, special, binades.astype(F32)])
    return np.concatenate([values, -values, random_bits])


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_bit_rounding_equals_the_saturating_cast(name):
    fmt = FORMATS[name]
    x = candidates(fmt, np.random.default_rng(7))
    cast = rounding.to_format(x, fmt)
    bits = rounding.round_to(x, fmt, bits_only=True)
    nan = np.isnan(cast)
    assert np.array_equal(np.isnan(bits), nan), "NaN in, NaN out"
    assert np.isnan(x[nan]).all(), "saturation: only NaN inputs give NaN"
    # bit for bit: the sign of 0 too
    same = cast[~nan].view(np.uint32) == bits[~nan].view(np.uint32)
    assert same.all(), f"{(~same).sum()} differ, first {x[~nan][~same][:4]}"
    assert np.array_equal(
        rounding.round_to(x, fmt)[~nan].view(np.uint32), cast[~nan].view(np.uint32)
    )


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_saturation_and_underflow(name):
    fmt = FORMATS[name]
    big = np.array([min(fmt.max * 1.5, 3.4e38), -np.inf, np.inf], F32)
    assert np.array_equal(rounding.round_to(big, fmt), np.array([fmt.max, -fmt.max, fmt.max], F32))
    assert (
        rounding.saturated(big, fmt).all()
        and not rounding.saturated(np.array([fmt.max], F32), fmt).any()
    )
    tiny = np.array([fmt.smallest_subnormal * 0.49], F32)
    assert (
        rounding.round_to(tiny, fmt)[0] == 0
        and rounding.flushed(tiny, rounding.round_to(tiny, fmt)).all()
    )


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_ulp_is_the_grid_spacing_and_bounds_the_error(name):
    fmt = FORMATS[name]
    grid = representable(fmt)
    positive = grid[(grid > 0) & (grid < fmt.max)]
    spacing = np.diff(np.append(positive, np.inf))[:-1]
    # the spacing above each value
    assert np.array_equal(rounding.ulp(positive[:-1], fmt), spacing.astype(np.float64))
    x = np.random.default_rng(3).uniform(-1, 1, 100_000).astype(F32) * F32(min(fmt.max, 1e4))
    error = rounding.round_to(x, fmt).astype(np.float64) - x
    assert np.all(np.abs(error) <= rounding.ulp(x, fmt) / 2)
    assert np.array_equal(rounding.error_variance(x, fmt), rounding.ulp(x, fmt) ** 2 / 12)


def test_formats_match_ml_dtypes():
    assert FORMATS["float8_e4m3fn"].max == 448 and FORMATS["float8_e5m2"].max == 57344
    assert FORMATS["bfloat16"].dtype == np.dtype(ml_dtypes.bfloat16)
    for fmt in FORMATS.values():
        assert fmt.smallest_subnormal == float(ml_dtypes.finfo(fmt.dtype).smallest_subnormal)


def test_without_ml_dtypes_only_the_formats_stop_with_one_line(monkeypatch):
    from attnsim.errors import AttnsimError

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` raises ImportError
    rounding._formats.cache_clear()
    try:
        # names (the config schema) need nothing
        assert list(rounding.FORMATS) == list(rounding.FORMAT_NAMES)
        with pytest.raises(AttnsimError, match=r"pip install 'ml-dtypes"):
            rounding.FORMATS["float8_e4m3fn"]
    finally:
        rounding._formats.cache_clear()


def test_the_significand_bits_need_no_ml_dtypes_and_are_the_formats():
    assert set(rounding.SHAPES) == set(rounding.FORMAT_NAMES)
    for name, fmt in FORMATS.items():
        assert rounding.significand_bits(name) == fmt.bits
        assert (fmt.bits, fmt.min_exp) == rounding.SHAPES[name]
