"""The rounding model's missing first-order term (attnsim.theory.rounding_bias, docs/science.md
§11.3) against brute force: the format's grid against every code of the fp8 formats, and Stein's
identity against direct quadrature of E_t[(s - sigma^2)(fl(s) - s)] with the project's reference
rounding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsim.kernels.rounding import FORMATS, to_format
from attnsim.theory.rounding_bias import first_order_shift, grid

ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_grid_is_every_finite_code(name):
    fmt = FORMATS[name]
    codes = np.arange(256, dtype=np.uint8).view(fmt.dtype).astype(np.float64)
    finite = np.unique(codes[np.isfinite(codes)])
    assert np.array_equal(grid(fmt.bits, fmt.min_exp, fmt.max, -fmt.max, fmt.max), finite)


def brute_shift(sigma: float, name: str, points: int = 4_000_001) -> float:
    """E_t[(s - sigma^2)(fl(s) - s)], s ~ N(sigma^2, sigma^2), by the trapezoid rule on a grid
    fine enough to resolve every rounding bin (fl: the reference cast, float32 inputs)."""
    s = np.linspace(sigma**2 - 10 * sigma, sigma**2 + 10 * sigma, points)
    density = np.exp(-((s - sigma**2) ** 2) / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi))
    s32 = s.astype(np.float32)
    eps = to_format(s32, FORMATS[name]).astype(np.float64) - s32.astype(np.float64)
    return float(np.trapezoid((s32 - sigma**2) * eps * density, s32))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "bfloat16"])
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_stein_identity_against_quadrature(name, sigma):
    fmt = FORMATS[name]
    stein = first_order_shift(sigma, fmt.bits, fmt.min_exp, fmt.max)
    brute = brute_shift(sigma, name)
    # the trapezoid rule on a sawtooth: error ~ step * gap, far below the term's size
    assert stein == pytest.approx(brute, rel=2e-3, abs=1e-9)


def test_the_term_has_the_order_of_the_model_and_vanishes_with_sigma():
    fmt = FORMATS["float8_e5m2"]
    m1 = first_order_shift(1.0, fmt.bits, fmt.min_exp, fmt.max)
    assert -5e-3 < m1 < -1e-3  # ulp^2/12 ~ 1e-2 near s = 1: the same order, not smaller
    assert first_order_shift(0.0, fmt.bits, fmt.min_exp, fmt.max) == 0.0
