"""The group-sequential design `attnsim decide` judges with (docs/science.md §7.6).

Looking at an equivalence test after every top-up and stopping at the first `holds` makes a false
`holds` far likelier than the 2.5% per side a single 95% interval allows. `decide` therefore
fixes its looks before the first top-up: look 1 is the run already judged (its 95% interval, so
2.5% per side is spent there), then `ROUNDS` top-ups whose trial counts grow geometrically to the
most the budget buys. From look 2 on, the interval is widened to a repeated confidence interval
(Jennison & Turnbull 1989): its critical value comes from a Lan-DeMets O'Brien-Fleming-type
spending function that spends a further 2.5% per side over the remaining looks, so the whole
sequence keeps each one-sided test at 5%, the level of the textbook TOST (90% interval). The
intervals cover the truth at every look at once with that probability, so any rule that stops on
them (holds, fails or the budget) keeps the error.

Boundaries are found on the score scale S_k = Z_k sqrt(t_k) (Brownian motion under the null at the
band edge, independent increments), by numerical integration of the density of the paths that
have not crossed yet (Armitage, McPherson & Rowe 1969), the grid of Jennison & Turnbull ch. 19.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from attnsim.claims.engine import decide_with
from attnsim.stats import t_quantile

ROUNDS = 4  # top-up rounds after the run already judged: 5 looks in all
FIRST_ALPHA = 0.025  # one side's error at look 1: the run's own 95% interval
TOTAL_ALPHA = 0.05  # one side's error over the whole sequence: TOST at 5%, a 90% interval
GRID = 1201  # points of the integration grid on the continuation region (odd: Simpson)
LOWEST = -10.0  # the grid's lower end in standard deviations of S_k: mass below is < 1e-23
_NORMAL = NormalDist()


def obrien_fleming_spending(fraction: np.ndarray | float, alpha: float) -> np.ndarray:
    """Lan-DeMets O'Brien-Fleming-type cumulative one-sided error spent by information fraction
    t: 2 (1 - Phi(z_{1-alpha/2} / sqrt(t))). Almost nothing early, `alpha` at t = 1: the last look
    is nearly as powerful as a fixed-sample test."""
    t = np.clip(np.asarray(fraction, dtype=float), 1e-12, 1.0)
    z = _NORMAL.inv_cdf(1 - alpha / 2)
    tail = np.vectorize(lambda x: 1 - _NORMAL.cdf(x))(z / np.sqrt(t))
    return 2 * tail


def _simpson_weights(count: int, step: float) -> np.ndarray:
    weights = np.ones(count)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return weights * step / 3


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    from math import erf

    return 0.5 * (1 + np.vectorize(erf)(np.asarray(x) / math.sqrt(2)))


def boundaries(fractions, cumulative_alpha) -> np.ndarray:
    """Upper critical values z_k of Z_k = S_k / sqrt(t_k) such that the probability of first
    crossing by look k is `cumulative_alpha[k]`, for information fractions `fractions`
    (increasing, last 1). A look that spends nothing gets +inf."""
    fractions = np.asarray(fractions, dtype=float)
    spent = np.asarray(cumulative_alpha, dtype=float)
    if fractions.ndim != 1 or np.any(np.diff(fractions) <= 0) or fractions[0] <= 0:
        raise ValueError(f"information fractions must increase from > 0, got {fractions}")
    critical = np.empty(fractions.size)
    critical[0] = _NORMAL.inv_cdf(1 - spent[0]) if spent[0] > 0 else math.inf
    bound = critical[0] * math.sqrt(fractions[0])
    grid, density = _first_density(fractions[0], bound)
    for k in range(1, fractions.size):
        increment = fractions[k] - fractions[k - 1]
        weights = density * _simpson_weights(grid.size, grid[1] - grid[0])
        target = spent[k] - spent[k - 1]
        bound = _solve_bound(grid, weights, increment, target, fractions[k])
        critical[k] = bound / math.sqrt(fractions[k])
        grid, density = _propagate(grid, weights, increment, bound, fractions[k])
    return critical


def _first_density(fraction: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    sd = math.sqrt(fraction)
    top = min(bound, -LOWEST * sd)
    grid = np.linspace(LOWEST * sd, top, GRID)
    density = np.exp(-0.5 * (grid / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
    return grid, density


def _solve_bound(grid, weights, increment, target, fraction) -> float:
    """The b with P(uncrossed so far, S_k >= b) = target, by bisection (monotone in b)."""
    if target <= 0:
        return math.inf
    sd = math.sqrt(increment)
    lo, hi = grid[0], -LOWEST * math.sqrt(fraction)
    for _ in range(100):
        mid = (lo + hi) / 2
        tail = 1 - _normal_cdf((mid - grid) / sd)
        if float(np.dot(weights, tail)) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _propagate(grid, weights, increment, bound, fraction) -> tuple[np.ndarray, np.ndarray]:
    """The density of the paths still uncrossed at this look, on a new grid below `bound`."""
    sd = math.sqrt(fraction)
    top = min(bound, -LOWEST * sd)
    new = np.linspace(LOWEST * sd, top, GRID)
    kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :]) ** 2) / increment)
    density = kernel @ weights / math.sqrt(2 * math.pi * increment)
    return new, density


def schedule(first: int, last: int, rounds: int = ROUNDS) -> list[int]:
    """Trials per point at each look: `first` (the run judged), then `rounds` top-ups growing
    geometrically to `last`, each at least one trial more than the one before."""
    if last <= first:
        raise ValueError(f"the last look needs more trials than the first ({last} <= {first})")
    ratio = (last / first) ** (1 / rounds)
    counts = [first]
    for k in range(1, rounds + 1):
        counts.append(max(counts[-1] + 1, round(first * ratio**k)))
    counts[-1] = last
    return counts


@dataclass(frozen=True)
class Design:
    """A sequence of looks fixed before the first top-up: the trials at each look and the
    critical value (normal scale) of each look's interval."""

    trials: tuple[int, ...]
    critical: tuple[float, ...]

    @classmethod
    def plan(cls, first: int, last: int, rounds: int = ROUNDS) -> Design:
        return cls.for_counts(schedule(first, last, rounds))

    @classmethod
    def for_counts(cls, counts) -> Design:
        """The design for looks at these trials per point (the first is the run judged)."""
        counts = [int(c) for c in counts]
        fractions = np.asarray(counts, dtype=float) / counts[-1]
        critical = boundaries(fractions, spending(fractions))
        return cls(tuple(counts), tuple(float(c) for c in critical))

    def t_critical(self, look: int, df: float) -> float:
        """The critical value for a t interval with `df` degrees of freedom at `look` (0-based):
        the t quantile of the same one-sided level as the normal boundary."""
        level = _NORMAL.cdf(self.critical[look])
        if df < 1 or level >= 1:  # no second trial, or a look that spends nothing
            return math.inf
        return t_quantile(level, df)


def spending(fractions) -> np.ndarray:
    """Cumulative one-sided error at each look: FIRST_ALPHA at look 1 (the run's own 95%
    interval), then the rest up to TOTAL_ALPHA spent O'Brien-Fleming-like over the information
    that the top-ups add."""
    fractions = np.asarray(fractions, dtype=float)
    extra = (fractions[1:] - fractions[0]) / (1 - fractions[0])
    later = FIRST_ALPHA + obrien_fleming_spending(extra, TOTAL_ALPHA - FIRST_ALPHA)
    return np.concatenate([[FIRST_ALPHA], later])


# --- judging a claim at a look of the design -----------------------------------------------------


def widened(low: float, high: float, n: int, design: Design, look: int) -> tuple[float, float]:
    """A 95% t interval from `n` trials widened to the design's interval at `look`: the same
    centre, the half-width times c_k^t / t_0.975 (both with n - 1 degrees of freedom)."""
    if not (math.isfinite(low) and math.isfinite(high)) or n < 2:
        return math.nan, math.nan
    factor = design.t_critical(look, n - 1) / t_quantile(0.975, n - 1)
    centre, half = (low + high) / 2, (high - low) / 2
    if not math.isfinite(factor):
        return -math.inf, math.inf
    return centre - factor * half, centre + factor * half


def judge_at(spec, rows, design: Design, look: int) -> str:
    """The verdict of a declared claim (`engine.ClaimSpec` with an equivalence or one-sided rule,
    per point or not) on `rows` at `look`: the engine's rule on the design's widened intervals
    (`engine.decide_with`), what `attnsim decide` stops on. Its n is each point's trials (per
    point) or the estimate's n."""
    return decide_with(spec, rows, lambda low, high, n: widened(low, high, n, design, look))
