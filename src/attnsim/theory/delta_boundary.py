"""Where the delta method leaves its band: the noise scale sigma* at which the next-order theory
(docs/science.md §2.8) puts the ratio E||o~ - o||^2 / E[kappa G] at an edge of 1 +- 0.05, and how
far the theory itself may be off there (docs/science.md §7.9).

The noisy-attention kind's per-point statistic `err_ratio` is mean(sq_err) / mean(sq_err_pred): a
ratio of expectations over the clean logits s_i ~ N(0, l^2), the values v_i ~ N(0, I_d) and the
noise. The expansion p1, p2 of §2.8 is linear in per-trial sums of the clean weights p and the
values; given p, the expectation over the values is closed:

    E|x_i|^2 = d (1 - 2 p_i + P2),  x_i = v_i - o,  so  E G = d (P2 - 2 P3 + P2^2),
    E c_r = d (P_r - 2 P_{r+1} + P_r P2),  E m2 = d (P4 - 2 P2 P3 + P2^3),

with P_r = sum p^r (G P2, G P3, c3 P2, G P2^2 likewise: the P's depend on the logits alone). The
expectation over the logits of these polynomials in P2..P5 is exact at l = 0 (p_i = 1/n) and a
Monte Carlo average with a fixed stream otherwise (`weight_sums`: its SE is carried into the
prediction's error). Then, with the noise's moments (kappa, mu3, mu4) (`delta_next.u_moments`),

    R1(sigma) = E p1 / (kappa E G),   R2(sigma) = E p2 / (kappa E G)

and sigma* solves R2(sigma*) = edge. What the prediction leaves out is estimated as §2.8 does
for the stored prediction (`delta_next.next_order_truncation`): the next term is about the last
kept one times the ratio of the last two, (R2 - R1)^2 / max(|R1 - 1|, |R2 - R1|). In sigma that
is the omitted term over the slope |R2'(sigma*)| (`Prediction.error`). Against the exact ratio at
uniform weights (a one-dimensional quadrature, tests/theory/test_delta_boundary.py) the true
error of sigma* is 1.2 times that estimate at n = 16 and 64: an asymptotic series' next term is a
size, not a bound. The tolerance of the declared equivalence claim a located boundary is judged
by is therefore twice it (as §2.8's regimes allow a predicted term half their tolerance), plus
two Monte Carlo SEs of the average over the logits (`Prediction.tolerance`, with its reason).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnsim.theory.delta_next import moment_order, u_moments

SEED = 20270131  # the stream of clean logits the Monte Carlo average reads (l > 0)
DRAWS = 2**17  # sets of n clean logits averaged over (l > 0)
CHUNK_VALUES = 2**21  # logits per chunk of the average: bounded memory
FAMILIES = ("gaussian", "uniform")  # every exponential moment finite: p2 with no tail term
SEARCH = np.geomspace(1e-3, 4.0, 801)  # the sigmas scanned for the first crossing
# the sums of `weight_sums`, per unit of the value dimension d (it cancels in the ratio)
SUMS = ("g", "c3", "c4", "g_p2", "g_p3", "c3_p2", "g_p2sq", "m2")


@dataclass(frozen=True)
class WeightSums:
    """E over the clean logits of the polynomials in the weights' power sums the expansion
    needs, per unit of d, and their Monte Carlo SEs (0 at l = 0: exact)."""

    n: int
    logit_scale: float
    mean: dict[str, float]
    se: dict[str, float]
    covariance: np.ndarray  # of the means, in SUMS order (for the ratio's SE)


def _polynomials(p: np.ndarray) -> dict[str, np.ndarray]:
    """The SUMS per set of weights (rows of p)."""
    powers = {r: np.sum(p**r, axis=-1) for r in (2, 3, 4, 5)}
    p2, p3, p4, p5 = powers[2], powers[3], powers[4], powers[5]
    g = p2 - 2 * p3 + p2 * p2
    c3 = p3 - 2 * p4 + p3 * p2
    c4 = p4 - 2 * p5 + p4 * p2
    return {
        "g": g,
        "c3": c3,
        "c4": c4,
        "g_p2": g * p2,
        "g_p3": g * p3,
        "c3_p2": c3 * p2,
        "g_p2sq": g * p2 * p2,
        "m2": p4 - 2 * p2 * p3 + p2**3,
    }


def weight_sums(n: int, logit_scale: float, draws: int = DRAWS, seed: int = SEED) -> WeightSums:
    """`WeightSums` at n keys and clean logits N(0, logit_scale^2): exact at logit_scale 0, a
    Monte Carlo average over `draws` sets of logits otherwise (fixed stream: the same numbers on
    every call)."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    if not logit_scale >= 0:
        raise ValueError(f"the logit scale must be >= 0, got {logit_scale}")
    if logit_scale == 0:
        values = _polynomials(np.full((1, n), 1.0 / n))
        mean = {k: float(v[0]) for k, v in values.items()}
        zero = {k: 0.0 for k in SUMS}
        return WeightSums(n, 0.0, mean, zero, np.zeros((len(SUMS), len(SUMS))))
    rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence([seed, n])))
    per_chunk = max(1, CHUNK_VALUES // n)
    rows = []
    done = 0
    while done < draws:
        count = min(per_chunk, draws - done)
        s = logit_scale * rng.standard_normal((count, n))
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        values = _polynomials(p)
        rows.append(np.stack([values[k] for k in SUMS], axis=1))
        done += count
    table = np.concatenate(rows)
    mean = table.mean(axis=0)
    covariance = np.cov(table, rowvar=False) / draws
    return WeightSums(
        n,
        float(logit_scale),
        dict(zip(SUMS, (float(v) for v in mean))),
        dict(zip(SUMS, (float(v) for v in np.sqrt(np.diag(covariance))))),
        covariance,
    )


def _check(noise: str) -> None:
    if noise not in FAMILIES:
        raise ValueError(
            f"the crossing is predicted for noise with every exponential moment "
            f"({', '.join(FAMILIES)}), not {noise!r}"
        )


def _coefficients(noise: str, sigma: float) -> tuple[float, np.ndarray, np.ndarray]:
    """kappa, and the coefficients of p1 and p2 on SUMS (so E p = coefficients . sums)."""
    kappa, mu3, mu4 = u_moments(noise, sigma)
    p1 = np.array([kappa, -2 * mu3, 0.0, 3 * kappa**2, 0.0, 0.0, 0.0, 0.0])
    p2 = p1 + np.array(
        [
            0.0,
            0.0,
            3 * (mu4 - 3 * kappa**2),
            0.0,
            -4 * kappa * mu3,
            -12 * kappa * mu3,
            15 * kappa**3,
            6 * kappa**2,
        ]
    )
    return kappa, p1, p2


def ratios(noise: str, sigma: float, sums: WeightSums) -> tuple[float, float]:
    """(R1, R2): the first- and second-order predictions of E||o~ - o||^2 / (kappa E G)."""
    _check(noise)
    kappa, p1, p2 = _coefficients(noise, sigma)
    if not kappa > 0:
        return 1.0, 1.0
    s = np.array([sums.mean[k] for k in SUMS])
    denominator = kappa * s[0]
    return float(p1 @ s / denominator), float(p2 @ s / denominator)


def omitted(r1: float, r2: float) -> float:
    """What R2 leaves out, estimated from its last two terms (§2.8)."""
    first, second = abs(r1 - 1), abs(r2 - r1)
    largest = max(first, second)
    return second * second / largest if largest > 0 else 0.0


def ratio_se(noise: str, sigma: float, sums: WeightSums) -> float:
    """The Monte Carlo SE of R2 from the average over the logits (delta method on the ratio)."""
    kappa, _p1, p2 = _coefficients(noise, sigma)
    if not kappa > 0 or not np.any(sums.covariance):
        return 0.0
    s = np.array([sums.mean[k] for k in SUMS])
    r2 = float(p2 @ s / (kappa * s[0]))
    gradient = p2 / (kappa * s[0])
    gradient[0] -= r2 / s[0]
    return float(math.sqrt(max(gradient @ sums.covariance @ gradient, 0.0)))


TOLERANCE_FACTOR = 2.0  # the tolerance is this many times the estimated next-order error


@dataclass(frozen=True)
class Prediction:
    """sigma* (`x`) where R2 crosses `edge`; its next-order `error` in sigma: the omitted term at
    sigma* (`ratio_error`, in the ratio) over the slope |R2'| (`slope`); the Monte Carlo SE of
    the average over the logits (`monte_carlo`, in sigma); and the `tolerance` of the declared
    equivalence claim, TOLERANCE_FACTOR errors plus two Monte Carlo SEs (`reason` says why)."""

    noise: str
    n: int
    logit_scale: float
    edge: float
    x: float
    error: float
    ratio_error: float
    slope: float
    monte_carlo: float
    first_order: float  # R1 at sigma*: how far the plain first correction would put it

    @property
    def tolerance(self) -> float:
        return TOLERANCE_FACTOR * self.error + 2 * self.monte_carlo

    def record(self) -> dict[str, float | int | str]:
        """The declared equivalence claim a located boundary is judged by, as the workspace's
        record keeps it beside the boundary (`claims.boundary.Located.record(theory=...)`)."""
        return {
            "noise": self.noise,
            "n": self.n,
            "logit_scale": self.logit_scale,
            "edge": self.edge,
            "predicted": self.x,
            "tolerance": self.tolerance,
            "error": self.error,
            "monte_carlo": self.monte_carlo,
            "reason": self.reason,
        }

    @property
    def reason(self) -> str:
        return (
            f"docs/science.md §2.8, §7.9: the next-order theory (p2) puts mu(sigma) = "
            f"{self.edge:g} at sigma* = {self.x:.4g}; its omitted term there, (R2 - R1)^2 / "
            f"max(|R1 - 1|, |R2 - R1|) = {self.ratio_error:.2g}, over the slope |dR2/dsigma| = "
            f"{abs(self.slope):.3g}, is {self.error:.2g} in sigma (the true error is 1.2x that "
            f"at uniform weights, by quadrature); taken twice, plus 2 Monte Carlo SEs of the "
            f"average over the logits ({self.monte_carlo:.2g}): +-{self.tolerance:.2g}"
        )


def predicted_crossing(
    noise: str,
    n: int,
    logit_scale: float,
    edge: float = 0.95,
    sums: WeightSums | None = None,
) -> Prediction | None:
    """The smallest sigma at which R2 crosses `edge`, with its next-order error (`Prediction`);
    None if it does not cross on `SEARCH`, or where its omitted term is as large as the edge's
    distance from 1 (the asymptotic series no longer places the edge: large sigma)."""
    _check(noise)
    if moment_order(noise, 1.0) != math.inf:
        raise ValueError(f"{noise}: the prediction needs every exponential moment")
    sums = weight_sums(n, logit_scale) if sums is None else sums

    def r2(sigma: float) -> float:
        return ratios(noise, sigma, sums)[1]

    offset = np.array([r2(float(s)) - edge for s in SEARCH])
    change = np.flatnonzero(np.sign(offset[1:]) != np.sign(offset[:-1]))
    if change.size == 0:
        return None
    low, high = float(SEARCH[change[0]]), float(SEARCH[change[0] + 1])
    below = offset[change[0]] < 0
    for _ in range(100):
        middle = (low + high) / 2
        if (r2(middle) - edge < 0) == below:
            low = middle
        else:
            high = middle
    x = (low + high) / 2
    step = 1e-4 * x
    slope = (r2(x + step) - r2(x - step)) / (2 * step)
    r1, r2_at = ratios(noise, x, sums)
    gap = omitted(r1, r2_at)
    monte_carlo = ratio_se(noise, x, sums) / abs(slope)
    if gap >= abs(1 - edge):
        return None
    error = gap / abs(slope)
    return Prediction(noise, n, float(logit_scale), edge, x, error, gap, slope, monte_carlo, r1)
