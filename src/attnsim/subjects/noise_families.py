"""The logit-noise families, one frozen record each (docs/science.md §2.3, §2.6-§2.8): how eps is
drawn, its tail, and the exponential moments the delta method and its next order need. Every
family is standardised so that `sigma` is the standard deviation of eps; location shifts cancel
in w = e^eps / E[e^eps] and in the softmax, so only the law of w matters. `NOISE_FAMILIES` is the
one registry (its order keys the random streams of a kind that draws per family: append, never
reorder); `get(name)` finds a record and refuses an unknown name.

- gaussian N(0, s^2);
- uniform U(-sqrt3 s, sqrt3 s);
- laplace b log(U1/U2), b = s/sqrt2 (a difference of two exponentials);
- gumbel -beta log E, E ~ Exp(1), beta = s sqrt6/pi: the max-Gumbel law with location 0, long
  upper tail;
- student_t with 3 degrees of freedom scaled to std s: no exponential moment at all.

A record's functions take sigma > 0 (and an order k > 0): sigma = 0 and k = 0 are the theory's
(`theory.noise`, `theory.delta_next`), the same for every family. `tail` is what the claims ask:
"bounded" and "gaussian" tails have every exponential moment (k* = inf), "exponential" tails
E[e^{k eps}] < inf only for k < k* = c / sigma, "polynomial" tails none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

SQRT2 = math.sqrt(2.0)
SQRT3 = math.sqrt(3.0)
GUMBEL_BETA = math.sqrt(6.0) / math.pi  # gumbel scale per unit standard deviation
LAPLACE_B = 1.0 / SQRT2  # laplace scale per unit standard deviation
STUDENT_T_DOF = 3
# k b or k beta this close to 1 counts as the divergence (rounding of k* = 1/b, 1/beta)
POLE_TOL = 1e-12
TAILS = ("bounded", "gaussian", "exponential", "polynomial")


@dataclass(frozen=True)
class NoiseFamily:
    """One law of the logit noise (see the module docstring)."""

    name: str
    law: str  # how eps is drawn, at standard deviation s
    tail: str
    kappa: Callable[[float], float]  # Var(e^eps) / E[e^eps]^2 in closed form (+inf: diverges)
    mean_exp_finite: Callable[[float], bool]  # E[e^eps] < inf
    log_exp_moment: Callable[[float, float], float]  # (sigma, k) -> log E[e^{k eps}] (+inf)
    moment_order: Callable[[float], float]  # k* = sup{k : E[e^{k eps}] < inf}
    # (sigma, k) -> E[e^{k eps}] continued analytically past k* (exponential tails; nan at a pole)
    exp_moment_continued: Callable[[float, float], float] | None = None
    # C / E[e^eps]^{-k*} of the Pareto tail P(w > t) ~ C t^{-k*} of w (exponential tails)
    tail_factor: float | None = None
    # polynomial tails: P(|eps| > x) ~ x^{-index} (student_t: its degrees of freedom), so the
    # largest of n draws grows like n^{1/index}
    tail_index: float | None = None

    def __post_init__(self) -> None:
        if self.tail not in TAILS:
            raise ValueError(f"noise family {self.name}: tail {self.tail!r} not one of {TAILS}")

    @property
    def every_moment(self) -> bool:
        """Every exponential moment finite (k* = inf at every sigma): the delta regime always."""
        return self.tail in ("bounded", "gaussian")

    @property
    def kappa_can_be_finite(self) -> bool:
        """kappa < inf at small enough sigma (not a polynomial tail)."""
        return self.tail != "polynomial"

    def __str__(self) -> str:
        return self.name


def log_sinhc(x: float) -> float:
    """log(sinh(x)/x), stable for tiny and large x."""
    if x < 1e-3:
        x2 = x * x
        return x2 / 6 - x2 * x2 / 180 + 2 * x2**3 / 2835
    return x + math.log1p(-math.exp(-2 * x)) - math.log(2 * x)


def _gaussian_kappa(sigma: float) -> float:
    return math.expm1(sigma**2) if sigma**2 < 709 else math.inf


def _uniform_kappa(sigma: float) -> float:
    a = math.sqrt(3) * sigma
    exponent = log_sinhc(2 * a) - 2 * log_sinhc(a)
    return math.expm1(exponent) if exponent < 709 else math.inf


def _laplace_kappa(sigma: float) -> float:
    b = sigma / math.sqrt(2)
    if b >= 0.5:
        return math.inf
    return (2 * b**2 + b**4) / (1 - 4 * b**2)


def _gumbel_kappa(sigma: float) -> float:
    beta = sigma * math.sqrt(6) / math.pi
    if beta >= 0.5:
        return math.inf
    return math.expm1(math.lgamma(1 - 2 * beta) - 2 * math.lgamma(1 - beta))


def _laplace_log_moment(sigma: float, k: float) -> float:
    kb = k * sigma * LAPLACE_B
    return -math.log1p(-kb * kb) if kb < 1 - POLE_TOL else math.inf


def _gumbel_log_moment(sigma: float, k: float) -> float:
    kb = k * sigma * GUMBEL_BETA
    return math.lgamma(1 - kb) if kb < 1 - POLE_TOL else math.inf


def _laplace_continued(sigma: float, k: float) -> float:
    """1/(1 - k^2 b^2): the finite part of the divergent integral past k* = 1/b."""
    kb = k * sigma * LAPLACE_B
    return 1.0 / (1.0 - kb * kb) if abs(kb - 1) > POLE_TOL else math.nan


def _gumbel_continued(sigma: float, k: float) -> float:
    """Gamma(1 - k beta), negative between the first and second pole; poles at 0, -1, -2, ..."""
    x = 1 - k * sigma * GUMBEL_BETA
    return math.gamma(x) if abs(x - round(x)) > POLE_TOL else math.nan


def _every_moment(name: str, law: str, tail: str, kappa, log_exp_moment) -> NoiseFamily:
    """A law with every exponential moment (k* = inf): the mean always finite."""
    return NoiseFamily(
        name=name,
        law=law,
        tail=tail,
        kappa=kappa,
        mean_exp_finite=lambda sigma: True,
        log_exp_moment=log_exp_moment,
        moment_order=lambda sigma: math.inf,
    )


GAUSSIAN = _every_moment(
    "gaussian",
    "N(0, s^2), drawn by Box-Muller (|z| <= 6.66)",
    "gaussian",
    _gaussian_kappa,
    lambda sigma, k: 0.5 * (k * sigma) ** 2,
)
UNIFORM = _every_moment(
    "uniform",
    "U(-sqrt3 s, sqrt3 s)",
    "bounded",
    _uniform_kappa,
    lambda sigma, k: log_sinhc(k * SQRT3 * sigma),
)
# exponential tails: E[e^{k eps}] finite for k < k* = c / sigma, continued past it analytically
LAPLACE = NoiseFamily(
    "laplace",
    "b log(U1/U2), b = s/sqrt2 (|eps| <= 15.7 s)",
    "exponential",
    _laplace_kappa,
    lambda sigma: sigma / math.sqrt(2) < 1,
    _laplace_log_moment,
    lambda sigma: SQRT2 / sigma,
    _laplace_continued,
    tail_factor=0.5,
)
GUMBEL = NoiseFamily(
    "gumbel",
    "-beta log E, E ~ Exp(1), beta = s sqrt6/pi (upper tail to 17.3 s)",
    "exponential",
    _gumbel_kappa,
    lambda sigma: sigma * math.sqrt(6) / math.pi < 1,
    _gumbel_log_moment,
    lambda sigma: 1.0 / (GUMBEL_BETA * sigma),
    _gumbel_continued,
    tail_factor=1.0,
)
STUDENT_T = NoiseFamily(
    name="student_t",
    law=f"t with {STUDENT_T_DOF} degrees of freedom scaled to std s: Z / sqrt(chi2_3 / 3)",
    tail="polynomial",
    kappa=lambda sigma: math.inf,  # E[e^eps] itself diverges for every sigma > 0
    mean_exp_finite=lambda sigma: False,
    log_exp_moment=lambda sigma, k: math.inf,
    moment_order=lambda sigma: 0.0,
    tail_index=float(STUDENT_T_DOF),
)

# The registry, in the order a kind's streams may be keyed by (append new families at the end).
NOISE_FAMILIES = (GAUSSIAN, UNIFORM, LAPLACE, GUMBEL, STUDENT_T)


def names(where: Callable[[NoiseFamily], bool] | None = None) -> tuple[str, ...]:
    """The registered names, in the registry's order (a parameter's choices); with `where`, those
    of the families it holds for (e.g. `lambda f: f.kappa_can_be_finite`)."""
    return tuple(f.name for f in NOISE_FAMILIES if where is None or where(f))


def get(name: str) -> NoiseFamily:
    """The record of `name`; an unknown name is a ValueError naming the choices."""
    for family in NOISE_FAMILIES:
        if family.name == name:
            return family
    raise ValueError(f"unknown noise family {name!r}; expected one of {', '.join(names())}")
