"""Block-scaled rounding of Gaussian logits under the two E8M0 rules (docs/science.md §11.9): how
often the OCP rule saturates a block, and the error each rule gives the attention output.

Values x_1..x_k of a scale group are i.i.d. N(0, sigma^2) (synthetic logits);
A = max |x_i| = s_A 2^e with s_A in [1, 2). For an element format of largest value M and
emax = floor(log2 M), m = M / 2^emax (1.75 for E4M3, 1.5 for E2M1):

- OCP MX v1.0 (`e8m0_ocp`): X = 2^(e - emax), so A / X = s_A 2^emax, which exceeds M, and is
  clipped to it, exactly when s_A > m;
- round-up (`e8m0_ceil`): S = 2^ceil(log2(A / M)) = X when s_A <= m, 2 X when s_A > m.

The two rules differ only on the blocks the OCP rule saturates: there round-up doubles the
block's spacing, OCP keeps it and clips every value above m 2^e to M X (the block maximum, and any
other value that close to it). With G(a) = P(|x| <= a) = erf(a / (sigma sqrt 2)):

    P(a block saturates)           = sum_e G(2^(e+1))^k - G(m 2^e)^k
    E[share of its values clipped] = sum_e (G(2^(e+1)) - G(m 2^e)) G(2^(e+1))^(k-1)

(a value in (m 2^e, 2^(e+1)) is clipped iff no value of its block reaches 2^(e+1)).

The output error (site logits): o~ - o = sum_i w~_i (v_i - o), and one key's error eps alone
moves it by p (e^eps - 1)(v - o) / (1 + p (e^eps - 1)) (sum_j p_j (v_j - o) = 0), whose square
has mean p^2 (1 - p)^2 d g over values N(0, I_d) independent of the logits, with g = eps^2 for
a rounded logit (the uniform model's Var = S^2 ulp(x / S)^2 / 12, first order) and, exactly,
g = ((e^eps - 1) / (1 + p (e^eps - 1)))^2 for a logit clipped by c (eps = -c if positive, +c
if negative). The errors of different keys are uncorrelated at this order (zero-mean rounding;
a clip is one key's), so with q(s) = p(s)^2 (1 - p(s))^2 and p(s) = e^s / (e^s + (n - 1)
e^(sigma^2 / 2)) (the other keys' sum at its mean, within a relative sqrt((e^(sigma^2) - 1) / n)):

    kappa = E|o~ - o|^2 / E sum_i p_i^2 |v_i - o|^2 = E[q(s) g(s)] / E[q(s)],  s ~ N(0, sigma^2),

the error of a key averaged with the weight softmax gives it (for small p, q ~ e^(2 s): the key
tilted to N(2 sigma^2, sigma^2)) while its k - 1 block-mates stay N(0, sigma^2). `kappa`
computes it by quadrature over s and the block-mates' maximum (the scale is constant between
breakpoints of the block maximum: powers of two for OCP, M 2^j for round-up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.kernels.blockscale import ocp_emax, ocp_saturation_significand
from attnsim.kernels.rounding import Format

RULES = ("e8m0_ceil", "e8m0_ocp")
# Gauss-Legendre nodes per piece of a key's logit between g's jumps (the binade edges 2^j and
# the clipping edges m 2^j, where the integrand is smooth): checked against 4x in the tests
NODES = 12
SPAN = 9.0  # standard deviations each side of where the weight peaks
DEPTH = 30  # binades below sigma split into pieces (below, g is ~2^-60 of its value at sigma)


def _abs_cdf(a: np.ndarray, sigma: float) -> np.ndarray:
    """G(a) = P(|x| <= a) for x ~ N(0, sigma^2)."""
    scale = sigma * math.sqrt(2.0)
    return np.array([math.erf(v / scale) for v in np.ravel(a)]).reshape(np.shape(a))


def _binades(sigma: float) -> np.ndarray:
    """The exponents e whose binade [2^e, 2^(e+1)) a block maximum of N(0, sigma^2) can reach:
    from 2^-40 sigma (a block of 32 below it has probability < 1e-300) to 64 sigma."""
    low = math.floor(math.log2(sigma)) - 40
    return np.arange(low, math.ceil(math.log2(sigma)) + 7)


def saturation(fmt: Format, sigma: float, k: int) -> tuple[float, float]:
    """(P(a group of k saturates), expected share of its values clipped) under the OCP rule, for
    i.i.d. N(0, sigma^2) values (module docstring)."""
    if sigma <= 0:
        return 0.0, 0.0
    m = ocp_saturation_significand(fmt)
    if m >= 2.0:  # bfloat16: its largest value is far above the scaled binade
        return 0.0, 0.0
    e = _binades(sigma)
    top, edge = _abs_cdf(2.0 ** (e + 1), sigma), _abs_cdf(m * 2.0**e, sigma)
    blocks = float(np.sum(top**k - edge**k))
    values = float(np.sum((top - edge) * top ** (k - 1)))
    return blocks, values


@dataclass(frozen=True)
class Kappa:
    """The effective variance of the logits' errors at the output (module docstring), split into
    the rounded values' part and the clipped values' part (0 under round-up)."""

    rounding: float
    clipping: float

    @property
    def total(self) -> float:
        return self.rounding + self.clipping


def _breakpoints(fmt: Format, rule: str, sigma: float) -> np.ndarray:
    """The block maxima at which the rule's scale changes (powers of two for OCP, M 2^j for
    round-up), covering every maximum N(0, sigma^2) blocks reach."""
    e = _binades(sigma).astype(np.float64)
    e = np.concatenate([e, [e[-1] + 1]])
    if rule == "e8m0_ocp":
        return 2.0**e
    return fmt.max * 2.0 ** (e - ocp_emax(fmt))


def _scale(fmt: Format, rule: str, a: np.ndarray) -> np.ndarray:
    """The rule's scale for block maxima a > 0 (float64: the rules' exponents, exactly)."""
    if rule == "e8m0_ocp":
        return 2.0 ** (np.floor(np.log2(a)) - ocp_emax(fmt))
    return 2.0 ** np.ceil(np.log2(a / fmt.max))


def _g(fmt: Format, x: np.ndarray, scale: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, ...]:
    """(rounding part, clipping part) of g for the logit x of weight p under scale S: the
    uniform model's S^2 ulp(x / S)^2 / 12 where x / S is within the format (first order), and
    for a value clipped by c = |x| - M S exactly ((e^eps - 1) / (1 + p (e^eps - 1)))^2 with
    eps = -+c."""
    y = np.abs(x) / scale
    clipped = y > fmt.max
    with np.errstate(divide="ignore"):
        exponent = np.maximum(np.floor(np.log2(np.maximum(y, 1e-300))), fmt.min_exp)
    ulp = scale * 2.0 ** (exponent - fmt.bits + 1)
    rounding = np.where(clipped, 0.0, ulp * ulp / 12.0)
    c = np.abs(x) - fmt.max * scale
    move = np.expm1(-np.sign(x) * np.maximum(c, 0.0))
    clipping = np.where(clipped, (move / (1.0 + p * move)) ** 2, 0.0)
    return rounding, clipping


def _nodes(fmt: Format, sigma: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes and weights over a key's logit: Gauss-Legendre on each piece between
    the edges +-2^j and +-m 2^j (both rules' scale, ulp and clipping edges) within SPAN
    standard deviations of where q phi peaks."""
    centre = min(2 * sigma**2, math.log(n) + sigma**2 / 2)  # where q phi peaks, about
    low, high = centre - SPAN * sigma, centre + SPAN * sigma
    j = np.arange(math.floor(math.log2(sigma)) - DEPTH, math.ceil(math.log2(max(-low, high))) + 1)
    m = min(ocp_saturation_significand(fmt), 2.0)
    edges = np.concatenate([2.0**j, m * 2.0**j])
    edges = np.unique(np.concatenate([edges, -edges, [low, high, 0.0]]))
    edges = edges[(edges >= low) & (edges <= high)]
    x, w = np.polynomial.legendre.leggauss(NODES)
    half = np.diff(edges)[:, None] / 2
    nodes = (edges[:-1, None] + half * (x[None, :] + 1)).ravel()
    return nodes, (half * w[None, :]).ravel()


def kappa(fmt: Format, rule: str, sigma: float, k: int, n: int) -> Kappa:
    """kappa = E[q(s) g(s)] / E[q(s)] over a key's logit s ~ N(0, sigma^2) and its k - 1
    block-mates under `rule`, q = p^2 (1 - p)^2 (module docstring): for each node s, the block
    maximum is |s| with probability H(|s|) (H = G^(k-1), the block-mates' maximum below it),
    else the block-mates' maximum, whose scale is constant between the rule's breakpoints."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}: one of {RULES}")
    if sigma <= 0:
        return Kappa(0.0, 0.0)
    s, gauss = _nodes(fmt, sigma, n)
    p = 1.0 / (1.0 + (n - 1) * np.exp(sigma**2 / 2 - s))  # e^s / (e^s + the others' sum)
    log_w = -0.5 * (s / sigma) ** 2 + 2 * np.log(p) + 2 * np.log1p(-p)
    weight = gauss * np.exp(log_w - log_w.max())
    weight /= weight.sum()
    own = np.abs(s)
    b = _breakpoints(fmt, rule, sigma)
    h_b = _abs_cdf(b, sigma) ** (k - 1)
    # only the intervals the block-mates' maximum reaches (and one each side)
    live = np.flatnonzero((h_b > 1e-300) & (h_b < 1.0))
    if live.size:
        keep = slice(max(live[0] - 1, 0), min(live[-1] + 2, len(b)))
        b, h_b = b[keep], h_b[keep]
    h_own = _abs_cdf(own, sigma) ** (k - 1)
    # the block-mates' maximum in (b_j, b_j+1] above |s|: probability and scale (mid-interval)
    low = np.maximum(b[None, :-1], own[:, None])
    h_low = np.where(b[None, :-1] >= own[:, None], h_b[None, :-1], h_own[:, None])
    above = np.clip(h_b[None, 1:] - h_low, 0.0, None) * (b[None, 1:] > own[:, None])
    mid = 0.5 * (low + b[None, 1:])
    r_up, c_up = _g(fmt, s[:, None], _scale(fmt, rule, mid), p[:, None])
    r_own, c_own = _g(fmt, s, _scale(fmt, rule, own), p)
    rounding = h_own * r_own + np.sum(above * r_up, axis=1)
    clipping = h_own * c_own + np.sum(above * c_up, axis=1)
    return Kappa(float(weight @ rounding), float(weight @ clipping))


def rule_ratio(fmt: Format, sigma: float, k: int, n: int) -> float:
    """kappa under OCP MX over kappa under round-up: the error ratio of the two rules at the
    logits."""
    ceil = kappa(fmt, "e8m0_ceil", sigma, k, n).total
    return kappa(fmt, "e8m0_ocp", sigma, k, n).total / ceil if ceil > 0 else math.nan
