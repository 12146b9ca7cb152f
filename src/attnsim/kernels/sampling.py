"""Fast float32 random variates built from the raw 64-bit output of a numpy Generator.

numpy's own samplers run at ~100 M normals/s (ziggurat, float32 or float64); these
transform raw words with vectorised ufuncs instead and reach ~3x that. Each 64-bit word
gives two 32-bit words, read in the machine's byte order on little-endian machines and
by shifts elsewhere, so the variates are the same everywhere. Laws and their limits:

- `open_uniform`: (k | 1) 2^-32 for a 32-bit word k: uniform on the odd multiples of
  2^-32 in (0, 1), rounded to float32 (so 1.0 is possible, 0 is not).
- `standard_normal`: Box-Muller, z = sqrt(-2 log u) cos(2 pi v) and sqrt(-2 log u) sin(2 pi v),
  one word each for u and v, in pieces of at most PIECE pairs. Exact in law up to the resolution of
  u: |z| <= 6.66 (P(|z| > 6.66) = 2.7e-11 for a true normal) and a discrete radius beyond ~6 sigma
  (probability ~2e-9).
- `exponential`: -log1p(-u) (through SIMD log, within ~5 float32 ulps), resolving small values
  to 2^-32; capped at 16.6 (u <= 1 - 2^-24),
  a cut at probability 6e-8 in the upper tail.

Every function draws a fixed number of words for a given size, so a block's numbers depend
only on its generator and the sizes asked for.
"""

from __future__ import annotations

import math
import sys

import numpy as np

F32 = np.float32
_INV_2_32 = F32(2.0**-32)
_ANGLE = F32(2 * math.pi * 2.0**-32)
_BELOW_ONE = F32(1 - 2.0**-24)
# Box-Muller pairs per piece (part of the algorithm: it fixes which word feeds which normal)
PIECE = 1 << 16


def words(rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` independent uniform 32-bit words (uint32), from ceil(count / 2) raw 64-bit
    outputs."""
    raw = rng.bit_generator.random_raw((count + 1) // 2)
    if sys.byteorder == "little":
        return raw.view(np.uint32)[:count]
    out = np.empty(2 * raw.size, np.uint32)  # the same words as the little-endian view
    out[0::2] = raw & 0xFFFFFFFF
    out[1::2] = raw >> 32
    return out[:count]


def open_uniform(bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(k | 1) 2^-32 as float32, in (0, 1]; modifies `bits`."""
    np.bitwise_or(bits, 1, out=bits)
    out = np.empty(bits.shape, F32) if out is None else out
    out[...] = bits
    out *= _INV_2_32
    return out


def _size(shape) -> tuple[tuple[int, ...], int]:
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    return shape, math.prod(shape)


def _polar(rng: np.random.Generator, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Box-Muller's radius sqrt(-2 log u1) and angle 2 pi u2, (pairs,) float32 each, from 2 x pairs
    words."""
    bits = words(rng, 2 * pairs)
    radius = open_uniform(bits[:pairs])
    np.log(radius, out=radius)
    radius *= F32(-2)
    np.sqrt(radius, out=radius)
    angle = np.empty(pairs, F32)
    angle[...] = bits[pairs:]
    del bits
    angle *= _ANGLE
    return radius, angle


def box_muller(rng: np.random.Generator, pairs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Radius r = sqrt(-2 log u) and the angle's cosine and sine, each (pairs,) float32.

    z1 = r cos, z2 = r sin are independent standard normals; so are z1 and r^2 sin^2 (chi-square, 1
    dof).
    """
    radius, angle = _polar(rng, pairs)
    cosine = np.cos(angle)
    np.sin(angle, out=angle)
    return radius, cosine, angle


def standard_normal(rng: np.random.Generator, shape, out: np.ndarray | None = None) -> np.ndarray:
    """i.i.d. N(0, 1) as float32 of `shape`, by Box-Muller in pieces of PIECE pairs (temporaries
    stay in the L2 cache): in each piece of the flat array, the first half holds the cosine
    halves of the pairs, the second half the sine halves."""
    shape, size = _size(shape)
    if out is None:
        out = np.empty(shape, F32)
    elif out.dtype != F32 or out.shape != shape or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous float32 array of the requested shape")
    flat = out.reshape(-1)
    for start in range(0, size, 2 * PIECE):
        _box_muller_into(rng, flat[start : start + 2 * PIECE])
    return out


def _box_muller_into(rng: np.random.Generator, flat: np.ndarray) -> None:
    size = flat.size
    pairs = (size + 1) // 2
    radius, angle = _polar(rng, pairs)
    np.cos(angle, out=flat[:pairs])
    flat[:pairs] *= radius
    np.sin(angle, out=angle)
    rest = size - pairs  # pairs, or pairs - 1 for an odd size: the last sine is not used
    np.multiply(angle[:rest], radius[:rest], out=flat[pairs:])


def exponential(rng: np.random.Generator, shape) -> np.ndarray:
    """i.i.d. Exp(1) as float32: -log1p(-u), small values resolved to 2^-32, capped at 16.6."""
    shape, size = _size(shape)
    u = open_uniform(words(rng, size))
    np.minimum(u, _BELOW_ONE, out=u)
    y, d = np.empty(min(size, 2 * PIECE), F32), np.empty(min(size, 2 * PIECE), F32)
    for start in range(0, size, 2 * PIECE):  # pieces that stay in the L2 cache
        _neg_log1p_neg(u[start : start + 2 * PIECE], y, d)
    return u.reshape(shape)


def _neg_log1p_neg(u: np.ndarray, y: np.ndarray, d: np.ndarray) -> None:
    """u <- -log1p(-u) for float32 u in (0, 1 - 2^-24], within ~5 float32 ulps (measured 4.4;
    numpy's log1p: 1.7), from SIMD log: -log(y) + (u - (1 - y)) / y with y = fl(1 - u), where
    1 - y and u - (1 - y) are exact (Sterbenz) and the second term is the rounding of y to first
    order (its square, < 2^-48, is dropped). numpy's float32 log1p has no SIMD loop on AVX2-only
    CPUs (~13 ns per number there against ~4.5 ns for this; ~3 ns either way on AVX-512)."""
    y, d = y[: u.size], d[: u.size]
    np.subtract(F32(1), u, out=y)
    np.subtract(F32(1), y, out=d)
    np.subtract(u, d, out=d)
    d /= y
    np.log(y, out=u)
    np.subtract(d, u, out=u)


def uniform(rng: np.random.Generator, shape, low: float, high: float) -> np.ndarray:
    """i.i.d. uniform on [low, high] as float32 (32-bit resolution before rounding)."""
    shape, size = _size(shape)
    out = np.empty(size, F32)
    out[...] = words(rng, size)
    out *= F32((high - low) * 2.0**-32)
    out += F32(low)
    return out.reshape(shape)


def query_factor(rng: np.random.Generator, trials: int, d: int) -> np.ndarray:
    """Dot-product logits' query factor r = sqrt(chi2_d / d), shape (T,): the query's norm in units
    of scale * sqrt(d)."""
    return np.sqrt(rng.chisquare(d, trials) / d)


def sphere_cosines(rng: np.random.Generator, trials: int, n: int, d: int) -> np.ndarray:
    """cos(theta_i) between a uniform query and n uniform keys on the sphere of R^d, float32
    (T, n), by Ulrich's symmetric-beta generator (docs/science.md §4.1).

    Words: n for the angles V, then (d > 2) n for the radii U.
    """
    if d < 2:
        raise ValueError(f"d must be >= 2 for directions on a sphere, got {d}")
    size = trials * n
    cosines = np.empty(size, F32)
    cosines[...] = words(rng, size)
    cosines *= _ANGLE
    np.cos(cosines, out=cosines)
    if d > 2:
        radius2 = open_uniform(words(rng, size))  # U in (0, 1]
        np.log(radius2, out=radius2)
        radius2 *= F32(2.0 / (d - 2))
        np.expm1(radius2, out=radius2)
        np.negative(radius2, out=radius2)  # 1 - U^{2/(d-2)}, accurate when it is small (large d)
        np.sqrt(radius2, out=radius2)
        cosines *= radius2
    return cosines.reshape(trials, n)
