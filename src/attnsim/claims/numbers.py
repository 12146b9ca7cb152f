"""Numbers as the claims table prints them: no more digits than their uncertainty supports.

The rule (pure functions, unit-tested against hand-computed cases in
tests/claims/test_claim_numbers.py):

1. A value with a 95% interval [low, high] (`interval`): the interval's half-width
   h = (high - low) / 2 keeps two significant digits, and the value and both ends are rounded to
   that same decimal place q = 10^(floor(log10 h) - 1), half to even on the decimal digits as
   printed (`repr`). Example: 0.99120 [0.98590, 0.99650] has h = 0.0053, q = 1e-4: "0.9912
   [0.9859, 0.9965]"; -0.49118 [-0.50213, -0.48024] has h = 0.011, q = 1e-3: "-0.491 [-0.502,
   -0.480]" (trailing zeros kept: they are digits the interval supports).
2. A value without an interval, or with a degenerate one (h = 0, or an end missing or infinite)
   (`value`): 4 significant digits, trailing zeros dropped ("50", "0.321", "35.31"): such numbers
   are extremes, ranges or grid values, exact reductions of the data rather than estimates.
   The ends of a range that is not a confidence interval (a range over points, the smallest and
   largest trial) are values of this kind too.
3. Notation: plain when the largest magnitude of the group (the value and its interval) lies in
   [1e-3, 1e5), or is 0; otherwise scientific, with the exponent of the largest magnitude shared by
   the whole group, so that a value and its interval read alike: "2.2e-5 [-0.9e-5, 5.3e-5]".
   Exponents are written without "+" or leading zeros. A negative zero prints as "0".
4. A missing value (None, NaN) prints as an en dash; infinities as "inf" and "-inf".
5. A relative deviation prints in percent (`percent`), rounded like rule 1 with the relative
   half-width h / |predicted| when the measurement has an interval, else like rule 2, with a sign.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal

MISSING = "–"
PLAIN_MIN, PLAIN_MAX = 1e-3, 1e5
SIGNIFICANT = 4  # digits of a value without an interval
INTERVAL_DIGITS = 2  # significant digits kept of an interval's half-width


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _plain(magnitude: float) -> bool:
    return magnitude == 0 or PLAIN_MIN <= magnitude < PLAIN_MAX


def _decimal(x: float) -> Decimal:
    return Decimal(repr(float(x)))


def _fixed(x: Decimal, places: int) -> str:
    """x rounded to `places` decimal places (negative: to tens, hundreds, ...), in plain
    notation."""
    rounded = x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    text = f"{rounded:f}"
    return text[1:] if text.startswith("-") and not rounded else text  # no "-0.00"


def _special(x) -> str | None:
    if _missing(x):
        return MISSING
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return None


def _strip(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def value(x) -> str:
    """A number without an interval: 4 significant digits, plain in [1e-3, 1e5), else scientific."""
    special = _special(x)
    if special:
        return special
    if x == 0:
        return "0"
    d = _decimal(x)
    exponent = d.adjusted()  # floor(log10 |x|)
    if _plain(abs(x)):
        return _strip(_fixed(d, SIGNIFICANT - 1 - exponent))
    rounded = d.scaleb(-exponent).quantize(
        Decimal(1).scaleb(1 - SIGNIFICANT), rounding=ROUND_HALF_EVEN
    )
    if abs(rounded) >= 10:  # 9.9995e-5 -> 1.000e-4
        rounded, exponent = (
            (rounded / 10).quantize(Decimal(1).scaleb(1 - SIGNIFICANT)),
            exponent + 1,
        )
    return f"{_strip(f'{rounded:f}')}e{exponent}"


def interval(x, low, high) -> tuple[str, str, str]:
    """A value and its 95% interval, all rounded to two significant digits of the half-width (rule
    1),
    or each by `value` when the interval is degenerate."""
    if any(_missing(v) or math.isinf(v) for v in (x, low, high)) or high <= low:
        return value(x), value(low), value(high)
    half = (high - low) / 2
    place = _decimal(half).adjusted() - (INTERVAL_DIGITS - 1)  # q = 10^place
    magnitude = max(abs(x), abs(low), abs(high))
    if _plain(magnitude):
        shown = [_fixed(_decimal(v), -place) for v in (x, low, high)]
        return shown[0], shown[1], shown[2]
    exponent = _decimal(magnitude).adjusted()
    shown = [
        f"{_fixed(_decimal(v).scaleb(-exponent), exponent - place)}e{exponent}"
        for v in (x, low, high)
    ]
    return shown[0], shown[1], shown[2]


def interval_text(x, low, high) -> str:
    """ "value [low, high]" by rule 1."""
    v, lo, hi = interval(x, low, high)
    return f"{v} [{lo}, {hi}]"


def percent(rel, half_width=None) -> str:
    """A relative deviation in percent with its sign; `half_width` is the relative half-width of the
    measurement's 95% interval (h / |predicted|), which sets the precision (rule 5)."""
    special = _special(rel)
    if special:
        return special
    if (
        half_width is None
        or _missing(half_width)
        or not math.isfinite(half_width)
        or half_width <= 0
    ):
        text = value(100 * rel)
    else:
        text = interval(100 * rel, 100 * (rel - half_width), 100 * (rel + half_width))[0]
    return ("+" if rel > 0 and not text.startswith("-") else "") + text + "%"
