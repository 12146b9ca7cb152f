"""How the claims table rounds its numbers (attnsim.claims.numbers), against cases worked out by
hand."""

from __future__ import annotations

import math

import pytest

from attnsim.claims import numbers


@pytest.mark.parametrize(
    "x, low, high, expected",
    [
        # h = 0.0053 -> two significant digits end at 1e-4
        (0.99120, 0.98590, 0.99650, "0.9912 [0.9859, 0.9965]"),
        # h = 0.0018 -> 1e-4; 0.99903 -> 0.9990, trailing zero kept
        (0.99903, 0.99723, 1.00083, "0.9990 [0.9972, 1.0008]"),
        # h = 0.01095 -> 1e-3
        (-0.49118, -0.50213, -0.48024, "-0.491 [-0.502, -0.480]"),
        # h = 0.0235 -> 1e-3
        (0.96196, 0.93858, 0.98540, "0.962 [0.939, 0.985]"),
        # largest magnitude 5.32e-5 < 1e-3: scientific, shared exponent -5; h = 3.1e-5 -> 1e-6 =
        # 0.1e-5
        (2.188e-05, -9.447e-06, 5.32e-05, "2.2e-5 [-0.9e-5, 5.3e-5]"),
        # largest magnitude 0.0096 >= 1e-3: plain; h = 0.0061 -> 1e-4
        (0.003477, -0.00267, 0.009623, "0.0035 [-0.0027, 0.0096]"),
        # h = 1.5 -> 0.1
        (35.31, 33.9, 36.9, "35.3 [33.9, 36.9]"),
        # h = 250 -> 10: rounded to tens, no decimals
        (12345.0, 12100.0, 12600.0, "12340 [12100, 12600]"),
        # largest magnitude 1.2e5: scientific, exponent 5; h = 2000 -> 100 = 0.001e5
        (123456.0, 121000.0, 125000.0, "1.235e5 [1.210e5, 1.250e5]"),
        # half to even on the printed digits: 0.125 -> 0.12 at 1e-2 (h = 0.1 -> 1e-2)
        (0.125, 0.025, 0.225, "0.12 [0.02, 0.22]"),
        # a value rounding to zero loses its sign
        (-0.0004, -0.05, 0.05, "0.000 [-0.050, 0.050]"),
    ],
)
def test_interval_keeps_two_significant_digits_of_the_half_width(x, low, high, expected):
    assert numbers.interval_text(x, low, high) == expected


@pytest.mark.parametrize(
    "x, low, high, expected",
    [
        (50.0, 50.0, 50.0, "50 [50, 50]"),  # degenerate: each value on its own
        (1.0, math.nan, math.nan, "1 [–, –]"),
        (0.5, 0.1, math.inf, "0.5 [0.1, inf]"),
    ],
)
def test_degenerate_interval_falls_back_to_values(x, low, high, expected):
    assert numbers.interval_text(x, low, high) == expected


@pytest.mark.parametrize(
    "x, expected",
    [
        (1.0, "1"),
        (0.99999999, "1"),
        (0.4745, "0.4745"),
        (0.32104, "0.321"),
        (35.3125, "35.31"),
        (7.8333, "7.833"),
        (-7.4441, "-7.444"),
        (50.0, "50"),
        (12345.6, "12350"),
        (0.001, "0.001"),
        (0.0009741, "9.741e-4"),
        (-7.863e-08, "-7.863e-8"),
        (1.326e-300, "1.326e-300"),
        (123456.0, "1.235e5"),
        (9.99951e-05, "1e-4"),
        (0.0, "0"),
        (-0.0, "0"),
        (math.nan, "–"),
        (None, "–"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
    ],
)
def test_value_without_interval_has_four_significant_digits(x, expected):
    assert numbers.value(x) == expected


@pytest.mark.parametrize(
    "rel, half, expected",
    [
        (-0.0088, 0.0053, "-0.88%"),  # h = 0.53% -> 0.01%
        (-0.0009741, 0.0018, "-0.10%"),  # h = 0.18% -> 0.01%
        (0.01767, 0.0219, "+1.8%"),  # h = 2.2% -> 0.1%
        (-0.3234, None, "-32.34%"),  # no interval: 4 significant digits
        (0.0, 0.01, "0.0%"),
        (math.nan, None, "–"),
    ],
)
def test_percent(rel, half, expected):
    assert numbers.percent(rel, half) == expected
