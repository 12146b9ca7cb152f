"""The first-order mean shift of the weights' mean logit when the logits are rounded
(docs/science.md §11.3): the term the rounding model leaves out.

Over i.i.d. logits s ~ N(0, sigma^2) and large n, the first-order change of sum_i p_i s_i under
s -> fl(s) is sum_i p_i (s_i - s_bar) eps_i, eps = fl(s) - s, whose mean is m1 = E_t[(s - sigma^2)
eps(s)] with s ~ N(sigma^2, sigma^2) under E_t (the weights e^s tilt the logits' law). eps is
piecewise linear (slope -1 in each rounding bin, a jump of +gap at each bin boundary), so Stein's
identity gives m1 = sigma^2 (sum_e gap_e f_t(e) - 1): sigma^2 times the error of a Riemann sum of
the tilted density on the format's grid. A format is given by its significand bits t (leading bit
included), smallest normal exponent and largest finite value, as in `attnsim.kernels.rounding`.
"""

from __future__ import annotations

import math

import numpy as np

WIDTH = 12.0  # the tilted law is summed over its mean +- WIDTH standard deviations


def grid(bits: int, min_exp: int, max_value: float, low: float, high: float) -> np.ndarray:
    """Every representable number of the format in [low, high] (clipped to +-max_value), both
    signs, subnormals and 0 included, sorted."""
    top = min(max(abs(low), abs(high)), max_value)
    step = 2.0 ** (min_exp - bits + 1)  # the subnormal spacing
    positive = [np.arange(0, 2.0**min_exp, step)]
    exponent = min_exp
    while 2.0**exponent <= top:
        mantissa = 1 + np.arange(2 ** (bits - 1)) * 2.0 ** (1 - bits)
        positive.append(mantissa * 2.0**exponent)
        exponent += 1
    values = np.concatenate(positive)
    values = values[values <= max_value]
    both = np.unique(np.concatenate([-values, values]))
    return both[(both >= low - 2 * top) & (both <= high + 2 * top)]


def first_order_shift(sigma: float, bits: int, min_exp: int, max_value: float) -> float:
    """m1 = sigma^2 (sum_e gap_e f_t(e) - 1), f_t the N(sigma^2, sigma^2) density, e the
    boundaries between consecutive representable numbers (rounding to nearest)."""
    if sigma <= 0:
        return 0.0
    mean = sigma**2
    low, high = mean - WIDTH * sigma, mean + WIDTH * sigma
    values = grid(bits, min_exp, max_value, low, high)
    edges = (values[1:] + values[:-1]) / 2
    gaps = np.diff(values)
    density = np.exp(-((edges - mean) ** 2) / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi))
    return float(sigma**2 * (np.sum(gaps * density) - 1))
