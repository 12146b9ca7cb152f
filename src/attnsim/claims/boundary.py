"""Where a claim stops holding: x*, the value of one grid axis at which the expected per-point
statistic mu(x) of a per-point claim crosses an edge of its band, located from noisy evaluations
(docs/science.md §7.9).

The method (why this one and not probabilistic bisection: §7.9) is a local model fitted to every
point, placed sequentially, with a last stage on fresh trials:

1. **First look**: `Design.scan` evenly spaced points over the range, ends included, each with the
   same trials. A point's side of the edge counts as known when its z = (mean - edge) / se is at
   least `Design.clear` in size. A crossing is bracketed by two neighbouring known points on
   opposite sides (unknown points between them stay inside the bracket); every such bracket is
   a crossing, located on its own ("every crossing"); none, with every point known and on one
   side, is "none in range"; none with unknown points tops those up (`Design.topups`) first.
2. **Placement** (per bracket, in rounds of two points on the same trials as the first look): a
   line fitted (weighted least squares) to the points inside the bracket gives the next points,
   x-hat +- a sixth of the bracket, or x-hat and the bracket's midpoint when the line is far from
   the middle (so a bracket at least halves while the signs are known, like a safeguarded
   regula falsi). Known points shrink the bracket. It stops when a round's points are both
   unknown (the signs no longer tell: the noise floor), after `Design.rounds`, or when its
   budget is spent. A known point on the wrong side of another (a reversal) marks the bracket
   not monotone.
3. **Final stage** (fresh trials): two points x-hat +- h, chosen from the placement alone (x-hat
   and its SE, the local slope, the per-trial spread and a bound M = |mu''| + 2 SE from weighted
   quadratics through the nearest points, the widest window whose curvature agrees with every
   narrower one's: Lepski's rule), evaluated on trial indices [K, K + n) where K is the highest
   trial index any placement used. Every stage-1 number comes from trials below K, so the final
   numbers are independent of every decision that placed them, even where points share their
   draws (common random numbers). The interval is the set of x at which the straight line
   through the two means is within its test bound of the edge, widened by the bias a curvature
   of at most M allows:

       S = {x in [lo, hi] : |L(x) - edge| <= t sd(L(x)) + M |(x - x1)(x - x2)| / 2}

   sd(L(x)) from the paired per-trial values of the two points (their covariance counts: shared
   draws make the two means move together), t the Student quantile at `level`. At x = x* the
   event is the test of mu(x*) = edge, so S covers x* at `level` whatever the design, given
   |mu''| <= M on S (Taylor's bound on linear interpolation). `crossing_set` computes S for any
   sorted points (the fixed-grid comparator of the benchmark uses it on a grid). S is cut to the
   outer bracket of the placement's points known at |z| >= `bracket_z` (x* leaves it only if one
   of them is on the wrong side), and taken at `Design.set_level` so the two keep `level`.

A crossing is "located" when S is one interval strictly inside the range, the final pair steps
in the bracket's direction beyond its own interval, and S is no wider than `target` if one is
given; otherwise the answer is "not located within budget", with S as it is.
With a `target` width, the final stage takes the fewest trials predicted to reach it (the budget
left is not spent): the sequential stopping rule, beside the placement's own.

Everything here is pure: the evaluator and the cost are arguments, and the same evaluations give
the same answer, bit for bit (so a located boundary can be recomputed from the store).

Integration (the interface `attnsim locate` and the workflow build on; docs/science.md §7.9)
------------------------------------------------------------------------------------------------

- **Evaluating a real claim at new x.** The claim's experiment is copied into an experiment marked
  `role: locate` in the same store: the same kind, seed and `trials` (= `quantum`: the trials of
  one round), its grid the `--at` values and the axis values this module asks for (snapped to a
  lattice of `Design.lattice` steps over the range, so that a rerun asks for the same points and
  their ids match). Trials [start, stop) are rounds start/quantum .. stop/quantum - 1 of that
  experiment: a point's streams are nested (round r draws block indices r*blocks + j, whatever
  the rounds after it), so a top-up to `stop` computes only the new rounds and the rows are bit
  identical to a fresh run with `max_trials = stop` (`jobs.simulate.simulate_points` with
  `known`). The final stage's fresh trials are the rounds at and beyond K: never read by the
  placement, at any point (points that share a stream share their draws round by round, so K
  is one index for all). Claims read only their declared experiments at their declared trials:
  located points never move a verdict.
- **The per-point statistic.** The claim's measure on the point's summary row (its `points`
  frame: value, se). For the paired covariance the evaluator returns per-unit pseudo-values,
  paired across points by column: for a mean, the trials themselves; for any other statistic
  (a ratio of means), delete-a-group jackknife pseudo-values over G contiguous groups of the
  trials, g * theta - (g - 1) * theta_without_group, with df = G - 1 (`Evaluation.of_values`).
- **The budget.** `cost(x, start, stop)` is the expected CPU-seconds of computing the rows that
  the store does not hold yet for those points up to `stop` (a new point costs its trials from
  0: the store keeps a point's rows from trial 0), from `records.cost`: `point_costs` of the
  points, `chunk_cost(..., trial_cap)` and `expected_seconds` (the same estimate `attnsim plan`
  bills). A budget of H CPU-hours is `budget = 3600 H` in those units; `plan` gives the bill
  before anything runs. (The jackknife's summaries and the process are not in the estimate:
  `attnsim locate` prints the measured CPU beside it.)
- **The record.** `Located.record()` is what `WorkspaceState.boundaries[name]` holds (with
  the context `report.boundaries.record` adds): the claim, axis, edge and its value, the fixed
  values, the range, the status, each crossing's estimate and interval with its direction,
  monotonicity and final design, every look (stage, x, trial range) so that `verify` can
  recompute it from the store, the budget and the cost, `VERSION`, and a theory prediction
  where one exists (`theory.delta_boundary`): a boundary with a prediction is a declared
  equivalence claim, its tolerance the prediction's (`Prediction.tolerance`: twice the
  next-order error plus two Monte Carlo SEs, with its reason).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from attnsim.stats import t_quantile

VERSION = 1  # of the method: a boundary recorded by another version is recomputed, not compared
LEVEL = 0.95
LOCATED = "located"
NOT_LOCATED = "not located within budget"
NONE_IN_RANGE = "none in range"
STATUSES = (LOCATED, NOT_LOCATED, NONE_IN_RANGE)
STAGES = ("scan", "place", "final")
EDGES = ("upper", "lower", "bound")  # of a claim's band: predicted + tol, predicted - tol, bound
BISECTIONS = 60  # halvings of an end of the confidence set: 2^-60 of the grid's spacing


# --- what the evaluator returns --------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Evaluation:
    """The statistic at m points on one range of trials: `mean` and `se` per point and, when the
    evaluator has them, per-unit `values` (m, k) whose columns are paired across points (the
    same trials, or the same groups of them), which give the covariance of two points' means.
    Without values the points are taken as independent (say so only when they are: points
    that share draws have positively correlated means)."""

    mean: np.ndarray
    se: np.ndarray
    values: np.ndarray | None = None
    df: float = math.inf

    def __post_init__(self) -> None:
        mean = np.atleast_1d(np.asarray(self.mean, dtype=np.float64))
        se = np.atleast_1d(np.asarray(self.se, dtype=np.float64))
        if mean.shape != se.shape or mean.ndim != 1:
            raise ValueError("an evaluation needs one mean and one se per point")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "se", se)
        if self.values is not None:
            values = np.asarray(self.values, dtype=np.float64)
            if values.ndim != 2 or values.shape[0] != mean.size:
                raise ValueError("values must be (points, units)")
            object.__setattr__(self, "values", values)

    @classmethod
    def of_values(cls, values: Any) -> Evaluation:
        """From per-unit values (points, units): each row's mean, its SE, df = units - 1."""
        v = np.atleast_2d(np.asarray(values, dtype=np.float64))
        k = v.shape[1]
        if k < 2:
            raise ValueError("per-unit values need at least two units per point")
        mean = v.mean(axis=1)
        se = v.std(axis=1, ddof=1) / math.sqrt(k)
        return cls(mean, se, v, float(k - 1))

    @classmethod
    def of_means(cls, mean: Any, se: Any, df: float = math.inf) -> Evaluation:
        """From means and SEs of independent points (a known or estimated SE)."""
        return cls(np.asarray(mean, dtype=np.float64), np.asarray(se, dtype=np.float64), None, df)

    def __len__(self) -> int:
        return int(self.mean.size)

    def covariance(self, i: Any, j: Any) -> np.ndarray:
        """Cov(mean_i, mean_j) for indices i, j (0 between points without values)."""
        i, j = np.asarray(i), np.asarray(j)
        if self.values is None:
            return np.where(i == j, self.se[i] ** 2, 0.0)
        v = self.values
        k = v.shape[1]
        centred = v - v.mean(axis=1, keepdims=True)
        return np.asarray((centred[i] * centred[j]).sum(axis=-1) / (k - 1) / k)


Evaluate = Callable[[np.ndarray, int, int], Evaluation]
Cost = Callable[[np.ndarray, int, int], float]


def trials_cost(x: np.ndarray, start: int, stop: int) -> float:
    """The default cost: point-trials."""
    return float(len(x) * (stop - start))


@dataclass(frozen=True)
class Design:
    """The method's constants, fixed before any data (docs/science.md §7.9 gives the reasons)."""

    scan: int = 7  # points of the first look, ends included
    scan_share: float = 0.4  # of the placement's budget, for the first look
    final_share: float = 0.5  # of the budget, kept for the final stage (more if placement stops)
    rounds: int = 6  # placement rounds at most, two points each
    clear: float = 2.0  # |z| from which a point's side of the edge counts as known
    topups: int = 2  # of the first look's unknown points when it finds no bracket (x2 each)
    nearest: int = 5  # points of the narrowest local quadratic that bounds the curvature
    lepski_z: float = 2.0  # a wider quadratic's curvature must agree within this many SEs
    curvature_z: float = 2.0  # M = |mu''| estimate + this many of its SEs
    bracket_z: float = 3.0  # the outer bracket: stage-1 points known at this |z|
    reversal_z: float = 3.0  # a step against the direction this many SEs large: not monotone
    target_margin: float = 0.75  # with a target, the final stage aims at this share of it
    lattice: int = 2**14  # points are snapped to (hi - lo) / lattice steps
    level: float = LEVEL

    @property
    def set_level(self) -> float:
        """The level of the final set S: `level` plus what the outer bracket may miss."""
        return self.level + 2 * (1 - NormalDist().cdf(self.bracket_z))

    def __post_init__(self) -> None:
        if self.scan < 3:
            raise ValueError("the first look needs at least 3 points")
        if not (0 < self.final_share < 1 and 0 < self.scan_share < 1):
            raise ValueError("the shares must lie in (0, 1)")
        if not (0 < self.level < 1):
            raise ValueError("the level must lie in (0, 1)")


DESIGN = Design()


# --- the record of a located boundary ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Look:
    """One call of the evaluator: its stage, points, trial range, what it returned and cost."""

    stage: str
    x: np.ndarray
    start: int
    stop: int
    evaluation: Evaluation
    cost: float


@dataclass(frozen=True)
class Crossing:
    """One crossing: the estimate (the line's root), the `level` confidence set's hull
    [low, high] and its number of pieces (1: an interval), the direction (+1: mu rises through
    the edge as x grows), the status, whether the bracket looked monotone, the bracket the
    first look found, the final stage's two points and trial range, and the curvature bound M
    the interval allows for."""

    estimate: float
    low: float
    high: float
    direction: int
    status: str
    monotone: bool
    bracket: tuple[float, float]
    pieces: int
    final_x: tuple[float, float]
    final_trials: tuple[int, int]
    curvature: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def covers(self, x: float) -> bool:
        return self.low <= x <= self.high


@dataclass(frozen=True, eq=False)
class Located:
    """The answer: `status` (STATUSES), every crossing found (two or more: each located on its
    own), the edge, the range, the budget and what was spent, every look, a note."""

    status: str
    crossings: tuple[Crossing, ...]
    edge: float
    lo: float
    hi: float
    budget: float
    cost: float
    looks: tuple[Look, ...] = ()
    note: str = ""

    @property
    def crossing(self) -> Crossing | None:
        """The crossing, when there is exactly one."""
        return self.crossings[0] if len(self.crossings) == 1 else None

    def record(self, **context: Any) -> dict[str, Any]:
        """The YAML-safe record (`WorkspaceState.boundaries`): `context` (claim, axis, edge, at,
        theory) first, then the answer and every look (stage, x, trials) it rests on."""
        return {
            **context,
            "version": VERSION,
            "status": self.status,
            "edge_value": self.edge,
            "range": [self.lo, self.hi],
            "level": LEVEL,
            "budget": self.budget,
            "cost": self.cost,
            "note": self.note,
            "crossings": [
                {
                    "estimate": c.estimate,
                    "low": c.low,
                    "high": c.high,
                    "direction": c.direction,
                    "status": c.status,
                    "monotone": c.monotone,
                    "pieces": c.pieces,
                    "bracket": list(c.bracket),
                    "final_x": list(c.final_x),
                    "final_trials": list(c.final_trials),
                    "curvature": c.curvature,
                }
                for c in self.crossings
            ],
            "looks": [
                {"stage": k.stage, "x": [float(v) for v in k.x], "trials": [k.start, k.stop]}
                for k in self.looks
            ],
        }


def boundary_key(claim: str, axis: str, edge: str, at: Mapping[str, Any]) -> str:
    """The key of a boundary in the workspace's record: claim, axis, edge and the fixed values."""
    fixed = ",".join(f"{k}={at[k]}" for k in sorted(at))
    return f"{claim}|{axis}|{edge}|{fixed}"


# --- the confidence set of a crossing ----------------------------------------------------------


@dataclass(frozen=True)
class CrossingSet:
    """S as intervals (`lows`, `highs`, sorted), the roots of the interpolant in range, and
    whether S reaches each end of the range."""

    lows: np.ndarray
    highs: np.ndarray
    roots: np.ndarray
    at_lo: bool
    at_hi: bool

    @property
    def empty(self) -> bool:
        return self.lows.size == 0

    @property
    def hull(self) -> tuple[float, float]:
        if self.empty:
            return math.nan, math.nan
        return float(self.lows[0]), float(self.highs[-1])

    def covers(self, x: float) -> bool:
        return bool(np.any((self.lows <= x) & (x <= self.highs)))

    def clip(self, low: float, high: float) -> CrossingSet:
        """S within [low, high] (an outer bracket): it reaches an end of the range only where
        the bracket does not cut it."""
        lows, highs = np.maximum(self.lows, low), np.minimum(self.highs, high)
        keep = lows <= highs
        at_lo = self.at_lo and not math.isfinite(low)
        at_hi = self.at_hi and not math.isfinite(high)
        return CrossingSet(lows[keep], highs[keep], self.roots, at_lo, at_hi)


def critical(level: float, df: float) -> float:
    """The two-sided critical value at `level`: Student's t with `df`, normal for df = inf."""
    if math.isinf(df):
        return NormalDist().inv_cdf(0.5 + level / 2)
    return t_quantile(0.5 + level / 2, df)


def crossing_set(
    x: Any,
    evaluation: Evaluation,
    edge: float,
    curvature: Any,
    lo: float,
    hi: float,
    level: float = LEVEL,
    resolution: int = 4097,
) -> CrossingSet:
    """S = {u in [lo, hi] : |L(u) - edge| <= t sd(L(u)) + curvature |(u - x_j)(u - x_j+1)| / 2}
    for the piecewise-linear interpolant L of the points' means (x sorted, increasing; outside
    [x_1, x_m] the end segments extended), sd from the evaluation's covariances: the `level`
    confidence set of x* given |mu''| <= curvature (module docstring, step 3; one bound, or one per
    segment: m - 1 values, the end segments' also for their extensions). Found on a grid of
    `resolution` points over the range and as many over the points' span (and every root), each
    end refined by bisection."""
    xs = np.asarray(x, dtype=np.float64)
    m = xs.size
    if m < 2 or np.any(np.diff(xs) <= 0):
        raise ValueError("crossing_set needs at least two points in increasing order")
    y = evaluation.mean
    j = np.arange(m - 1)
    var = evaluation.se**2
    cov = evaluation.covariance(j, j + 1)
    t = critical(level, evaluation.df)
    bound = np.broadcast_to(np.asarray(curvature, dtype=np.float64), (m - 1,))

    def margin(u: np.ndarray) -> np.ndarray:
        seg = np.clip(np.searchsorted(xs, u, side="right") - 1, 0, m - 2)
        x0, x1 = xs[seg], xs[seg + 1]
        lam = (u - x0) / (x1 - x0)
        line = (1 - lam) * y[seg] + lam * y[seg + 1]
        v = (1 - lam) ** 2 * var[seg] + lam**2 * var[seg + 1] + 2 * lam * (1 - lam) * cov[seg]
        bias = bound[seg] * np.abs((u - x0) * (u - x1)) / 2
        return np.asarray(t * np.sqrt(np.maximum(v, 0.0)) + bias - np.abs(line - edge))

    dy = np.diff(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = xs[:-1] + (edge - y[:-1]) / dy * np.diff(xs)
    between = np.isfinite(roots) & (roots >= xs[:-1]) & (roots <= xs[1:])
    # the ends' extensions may cross outside the span too
    ends = np.isfinite(roots) & (((j == 0) & (roots < xs[0])) | ((j == m - 2) & (roots > xs[-1])))
    roots = roots[(between | ends) & (roots >= lo) & (roots <= hi)]
    span = xs[-1] - xs[0]
    near = np.linspace(max(lo, xs[0] - 2 * span), min(hi, xs[-1] + 2 * span), resolution)
    u = np.unique(np.concatenate([np.linspace(lo, hi, resolution), near, roots, xs]))
    u = u[(u >= lo) & (u <= hi)]
    ok = margin(u) >= 0
    if not ok.any():
        none = np.empty(0)
        return CrossingSet(none, none, roots, False, False)
    change = np.diff(ok.astype(np.int8))
    starts = np.flatnonzero(change == 1) + 1
    stops = np.flatnonzero(change == -1)
    if ok[0]:
        starts = np.r_[0, starts]
    if ok[-1]:
        stops = np.r_[stops, u.size - 1]
    lows, highs = u[starts].copy(), u[stops].copy()
    # refine the ends that lie between two grid points: bisection, all ends at once
    inner_lo = starts > 0
    inner_hi = stops < u.size - 1
    lows[inner_lo] = _bisect(margin, u[starts[inner_lo] - 1], u[starts[inner_lo]])
    highs[inner_hi] = _bisect(margin, u[stops[inner_hi] + 1], u[stops[inner_hi]])
    return CrossingSet(lows, highs, np.sort(roots), bool(ok[0]), bool(ok[-1]))


def _bisect(
    margin: Callable[[np.ndarray], np.ndarray], bad: np.ndarray, good: np.ndarray
) -> np.ndarray:
    """The boundary between `bad` (margin < 0) and `good` (>= 0), pairwise, by bisection."""
    bad, good = bad.astype(np.float64), good.astype(np.float64)
    for _ in range(BISECTIONS):
        mid = (bad + good) / 2
        inside = margin(mid) >= 0
        good = np.where(inside, mid, good)
        bad = np.where(inside, bad, mid)
    return good


# --- local fits ---------------------------------------------------------------------------------


def _fit(x: np.ndarray, y: np.ndarray, se: np.ndarray, centre: float, degree: int):
    """Weighted least squares of y on powers of (x - centre): coefficients and covariance, or
    None when the points cannot determine them."""
    if x.size <= degree or np.unique(x).size <= degree:
        return None
    w = 1.0 / np.maximum(se, 1e-300) ** 2
    basis = np.vander(x - centre, degree + 1, increasing=True)
    gram = basis.T @ (basis * w[:, None])
    if not np.all(np.isfinite(gram)) or np.linalg.cond(gram) > 1e14:
        return None
    covariance = np.linalg.inv(gram)
    coef = covariance @ (basis.T @ (w * y))
    return coef, covariance


def _root(x: np.ndarray, y: np.ndarray, se: np.ndarray, edge: float, direction: int):
    """The root of the weighted line through the points and its SE (delta method), or None
    when the line does not rise in `direction` (its slope has the other sign or is zero)."""
    centre = float(np.average(x, weights=1 / np.maximum(se, 1e-300) ** 2))
    fit = _fit(x, y, se, centre, 1)
    if fit is None:
        return None
    (a, b), cov = fit
    if not (b * direction > 0):
        return None
    root = centre + (edge - a) / b
    d = root - centre
    var = (cov[0, 0] + d * d * cov[1, 1] + 2 * d * cov[0, 1]) / (b * b)
    return float(root), float(math.sqrt(max(var, 0.0)))


# --- the method ----------------------------------------------------------------------------------


class _Run:
    """The evaluations made so far, their cost and the budget."""

    def __init__(
        self, evaluate: Evaluate, cost: Cost, budget: float, quantum: int, lo: float, hi: float
    ):
        self.evaluate, self.cost, self.budget, self.quantum = evaluate, cost, budget, quantum
        self.lo, self.hi = lo, hi
        self.spent = 0.0
        self.looks: list[Look] = []

    def price(self, x: np.ndarray, start: int, stop: int) -> float:
        return float(self.cost(x, start, stop))

    def affordable(self, x: np.ndarray, start: int, allowance: float) -> int:
        """The most trials per point, a multiple of the quantum, that `x` can get from `start`
        within `allowance` (0: not even one quantum)."""
        q = self.quantum
        if self.price(x, start, start + q) > allowance:
            return 0
        high = 1
        while self.price(x, start, start + 2 * high * q) <= allowance and high < 2**40:
            high *= 2
        low, high = high, 2 * high  # low affordable, high not
        while high - low > 1:
            mid = (low + high) // 2
            if self.price(x, start, start + mid * q) <= allowance:
                low = mid
            else:
                high = mid
        return low * q

    def look(self, stage: str, x: np.ndarray, start: int, stop: int) -> Evaluation:
        price = self.price(x, start, stop)
        evaluation = self.evaluate(x, start, stop)
        if len(evaluation) != x.size:
            raise ValueError(f"the evaluator returned {len(evaluation)} points for {x.size}")
        self.spent += price
        self.looks.append(Look(stage, x.copy(), start, stop, evaluation, price))
        return evaluation

    def points(self, stages: tuple[str, ...] = ("scan", "place")):
        """Every point of these stages, sorted by x: x, mean, se, trials. A point looked at more
        than once (a top-up of the first look on later trials) is pooled: its per-unit values
        joined, or its means weighted by their inverse variances."""
        chosen = [k for k in self.looks if k.stage in stages]
        if not chosen:
            empty = np.empty(0)
            return empty, empty, empty, empty
        x = np.concatenate([k.x for k in chosen])
        mean = np.concatenate([k.evaluation.mean for k in chosen])
        se = np.concatenate([k.evaluation.se for k in chosen])
        trials = np.concatenate([np.full(k.x.size, k.stop - k.start) for k in chosen])
        unique, first, counts = np.unique(x, return_index=True, return_counts=True)
        if np.all(counts == 1):
            order = np.argsort(x, kind="stable")
            return x[order], mean[order], se[order], trials[order]
        out_mean, out_se = mean[first].copy(), se[first].copy()
        out_trials = np.zeros(unique.size, dtype=np.int64)
        np.add.at(out_trials, np.searchsorted(unique, x), trials)
        for i in np.flatnonzero(counts > 1):
            rows = [
                k.evaluation.values[j] if k.evaluation.values is not None else None
                for k in chosen
                for j in np.flatnonzero(k.x == unique[i])
            ]
            present = [r for r in rows if r is not None]
            if len(present) == len(rows):
                pooled = Evaluation.of_values(np.concatenate(present)[None, :])
                out_mean[i], out_se[i] = pooled.mean[0], pooled.se[0]
            else:
                where = x == unique[i]
                weight = 1 / se[where] ** 2
                out_mean[i] = float(np.sum(weight * mean[where]) / np.sum(weight))
                out_se[i] = float(1 / math.sqrt(np.sum(weight)))
        return unique, out_mean, out_se, out_trials

    def snap(self, x: np.ndarray, lattice: int) -> np.ndarray:
        step = (self.hi - self.lo) / lattice
        snapped = self.lo + np.round((np.asarray(x) - self.lo) / step) * step
        return np.clip(snapped, self.lo, self.hi)


def sides(mean: np.ndarray, se: np.ndarray, edge: float, clear: float) -> np.ndarray:
    """Per point: +1 above the edge, -1 below, 0 not known (|z| < clear)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (mean - edge) / se
    return np.where(z >= clear, 1, np.where(z <= -clear, -1, 0)).astype(np.int8)


def brackets(x: np.ndarray, side: np.ndarray) -> list[tuple[float, float, int]]:
    """Neighbouring known points on opposite sides (unknown points between them allowed):
    (left x, right x, direction)."""
    known = np.flatnonzero(side != 0)
    out = []
    for a, b in zip(known[:-1], known[1:]):
        if side[a] != side[b]:
            out.append((float(x[a]), float(x[b]), int(side[b])))
    return out


def locate(
    evaluate: Evaluate,
    edge: float,
    lo: float,
    hi: float,
    budget: float,
    *,
    quantum: int = 1,
    cost: Cost = trials_cost,
    target: float | None = None,
    design: Design = DESIGN,
) -> Located:
    """Locate where mu(x) crosses `edge` on [lo, hi] (module docstring): `evaluate(x, start,
    stop)` gives the statistic at the points `x` on trials [start, stop) (multiples of
    `quantum`), `cost(x, start, stop)` what that costs, `budget` the most all of it may cost,
    `target` the widest interval that counts as located (None: any bounded one)."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"the range must be finite with lo < hi, got [{lo}, {hi}]")
    if not (budget > 0 and math.isfinite(budget)):
        raise ValueError(f"the budget must be positive, got {budget}")
    if quantum < 1:
        raise ValueError(f"the quantum must be at least one trial, got {quantum}")
    if target is not None and not target > 0:
        raise ValueError(f"the target width must be positive, got {target}")
    run = _Run(evaluate, cost, budget, int(quantum), float(lo), float(hi))
    placing = budget * (1 - design.final_share)
    scan_x = run.snap(np.linspace(lo, hi, design.scan), design.lattice)
    trials = run.affordable(scan_x, 0, placing * design.scan_share)
    if trials == 0:
        raise ValueError(
            f"a budget of {budget:g} buys less than the first look ({design.scan} points x "
            f"{quantum} trials cost {run.price(scan_x, 0, quantum):g})"
        )
    run.look("scan", scan_x, 0, trials)
    found, side = _first_look(run, scan_x, edge, trials, placing, design)
    if not found:
        return _nothing(run, edge, side)
    placed = []
    for i, (a, b, direction) in enumerate(found):
        allowance = (placing - run.spent) / (len(found) - i)
        placed.append(_place(run, a, b, direction, edge, trials, allowance, design))
    fresh = max(k.stop for k in run.looks)
    crossings = []
    for i, state in enumerate(placed):
        allowance = (budget - run.spent) / (len(placed) - i)
        crossings.append(_final(run, state, edge, fresh, allowance, target, design))
    status = LOCATED if all(c.status == LOCATED for c in crossings) else NOT_LOCATED
    note = f"{len(crossings)} crossings" if len(crossings) > 1 else ""
    return Located(
        status, tuple(crossings), edge, lo, hi, budget, run.spent, tuple(run.looks), note
    )


def _first_look(
    run: _Run, scan_x: np.ndarray, edge: float, trials: int, placing: float, design: Design
) -> tuple[list[tuple[float, float, int]], np.ndarray]:
    """The first look's brackets. Without one, while some points are too close to the edge to
    tell and the placement budget allows, those points get as many trials again (on the next
    trials: a top-up), up to `Design.topups` times."""
    start = trials
    for _ in range(design.topups + 1):
        x, mean, se, _n = run.points(("scan",))
        side = sides(mean, se, edge, design.clear)
        found = brackets(x, side)
        unknown = x[side == 0]
        if found or unknown.size == 0:
            break
        more = start  # double every unknown point's trials
        if run.spent + run.price(unknown, start, start + more) > placing:
            break
        run.look("scan", unknown, start, start + more)
        start += more
    return found, side


def _nothing(run: _Run, edge: float, side: np.ndarray) -> Located:
    """No bracket: "none in range" when every point is known and on one side, else not located
    (some point is too close to the edge to tell)."""
    if np.all(side != 0):
        where = "above" if side[0] > 0 else "below"
        note = f"every point of the first look lies {where} the edge"
        status = NONE_IN_RANGE
    else:
        note = f"{int(np.sum(side == 0))} points of the first look too close to the edge to tell"
        status = NOT_LOCATED
    return Located(status, (), edge, run.lo, run.hi, run.budget, run.spent, tuple(run.looks), note)


@dataclass
class _Placed:
    bracket: tuple[float, float]  # the first look's
    a: float
    b: float
    direction: int
    monotone: bool


def _place(
    run: _Run,
    a: float,
    b: float,
    direction: int,
    edge: float,
    trials: int,
    allowance: float,
    design: Design,
) -> _Placed:
    """Placement rounds inside the bracket [a, b] (module docstring, step 2)."""
    state = _Placed((a, b), a, b, direction, True)
    spent = 0.0
    for _ in range(design.rounds):
        x, mean, se, _n = run.points()
        inside = (x >= state.a) & (x <= state.b)
        width = state.b - state.a
        fitted = _root(x[inside], mean[inside], se[inside], edge, direction)
        middle = (state.a + state.b) / 2
        guess = middle if fitted is None else fitted[0]
        guess = float(np.clip(guess, state.a + width / 8, state.b - width / 8))
        third = width / 6
        new = [guess - third, guess + third] if abs(guess - middle) < third else [guess, middle]
        new_x = np.unique(run.snap(np.asarray(new), design.lattice))
        new_x = new_x[~np.isin(new_x, x) & (new_x > state.a) & (new_x < state.b)]
        if new_x.size == 0:
            break  # the bracket is down to the lattice
        price = run.price(new_x, 0, trials)
        if spent + price > allowance:
            break
        spent += price
        got = run.look("place", new_x, 0, trials)
        known = sides(got.mean, got.se, edge, design.clear)
        _shrink(run, state, edge, design)
        if np.all(known == 0):
            break  # the noise floor: the signs no longer tell
    return state


def _shrink(run: _Run, state: _Placed, edge: float, design: Design) -> None:
    """The bracket from the known points inside it; a known point beyond another of the other
    side (a reversal) marks it not monotone and leaves it as it was."""
    x, mean, se, _n = run.points()
    inside = (x >= state.a) & (x <= state.b)
    x, side = x[inside], sides(mean[inside], se[inside], edge, design.clear)
    left = x[side == -state.direction]
    right = x[side == state.direction]
    a = float(left.max()) if left.size else state.a
    b = float(right.min()) if right.size else state.b
    if a >= b or (left.size and right.size and left.max() > right.min()):
        state.monotone = False
        return
    state.a, state.b = a, b


def _final(
    run: _Run,
    state: _Placed,
    edge: float,
    fresh: int,
    allowance: float,
    target: float | None,
    design: Design,
) -> Crossing:
    """The final stage of one crossing on fresh trials (module docstring, step 3)."""
    x, mean, se, n = run.points()
    inside = (x >= state.a) & (x <= state.b)
    fitted = _root(x[inside], mean[inside], se[inside], edge, state.direction)
    if fitted is None:
        centre, spread = (state.a + state.b) / 2, (state.b - state.a) / 4
    else:
        centre = float(np.clip(fitted[0], state.a, state.b))
        spread = fitted[1]
    slope, bound = _local_shape(x, mean, se, centre, state.direction, design)
    nearest = np.argsort(np.abs(x - centre), kind="stable")[: design.nearest]
    per_trial = float(np.median(se[nearest] * np.sqrt(n[nearest])))
    monotone = state.monotone and _monotone(x[inside], mean[inside], se[inside], state, design)
    t = critical(design.level, math.inf)
    probe = run.snap(np.asarray([centre - spread, centre + spread]), design.lattice)
    most = run.affordable(probe, fresh, allowance)
    aim = None if target is None else target * design.target_margin
    final_trials, half = _final_design(
        most, run.quantum, per_trial, slope, bound, spread, t, aim, run.hi - run.lo
    )
    pair = _pair(run, centre, half, design.lattice)
    if final_trials == 0:
        return _unlocated(state, centre, monotone, bound)
    outer = _outer(x, mean, se, centre, edge, state.direction, design)
    got = run.look("final", pair, fresh, fresh + final_trials)
    found = crossing_set(pair, got, edge, bound, run.lo, run.hi, design.set_level).clip(*outer)
    steps = float(got.mean[1] - got.mean[0])
    diff_var = float(got.se[0] ** 2 + got.se[1] ** 2 - 2 * got.covariance([0], [1])[0])
    t_final = critical(design.level, got.df)
    if steps * state.direction < -t_final * math.sqrt(max(diff_var, 0.0)):
        monotone = False  # the final points step against the bracket's direction
    rising = steps * state.direction > t_final * math.sqrt(max(diff_var, 0.0))
    if found.empty:
        return _unlocated(state, centre, monotone, bound, pair, (fresh, fresh + final_trials))
    low, high = found.hull
    root = float(pair[0] + (edge - got.mean[0]) / steps * (pair[1] - pair[0])) if steps else centre
    estimate = root if found.covers(root) else (low + high) / 2
    located = (
        rising
        and found.lows.size == 1
        and not found.at_lo
        and not found.at_hi
        and (target is None or high - low <= target)
    )
    return Crossing(
        estimate,
        low,
        high,
        state.direction,
        LOCATED if located else NOT_LOCATED,
        monotone,
        state.bracket,
        int(found.lows.size),
        (float(pair[0]), float(pair[1])),
        (fresh, fresh + final_trials),
        bound,
    )


def _outer(
    x: np.ndarray,
    mean: np.ndarray,
    se: np.ndarray,
    centre: float,
    edge: float,
    direction: int,
    design: Design,
) -> tuple[float, float]:
    """The bracket of the stage-1 points known at |z| >= bracket_z nearest `centre` on each side
    (the range's end where there is none). If mu is monotone there, x* lies outside it only if
    such a point is on the wrong side: probability at most 1 - Phi(bracket_z) per end for the
    one point that matters, which `Design.set_level` adds to the set's level."""
    side = sides(mean, se, edge, design.bracket_z)
    left = x[(side == -direction) & (x <= centre)]
    right = x[(side == direction) & (x >= centre)]
    low = float(left.max()) if left.size else -math.inf
    high = float(right.min()) if right.size else math.inf
    return low, high


def _pair(run: _Run, centre: float, half: float, lattice: int) -> np.ndarray:
    """The final pair centre +- half on the lattice, inside the range, at least a step apart."""
    step = (run.hi - run.lo) / lattice
    half = max(half, step)
    low = min(max(centre - half, run.lo), run.hi - 2 * half)
    pair = run.snap(np.asarray([low, low + 2 * half]), lattice)
    if pair[1] <= pair[0]:
        pair = np.asarray([pair[0], min(run.hi, pair[0] + step)])
        if pair[1] <= pair[0]:
            pair = np.asarray([run.hi - step, run.hi])
    return pair


def _unlocated(
    state: _Placed,
    centre: float,
    monotone: bool,
    bound: float,
    pair: Any = (math.nan, math.nan),
    trials: tuple[int, int] = (0, 0),
) -> Crossing:
    """A crossing bracketed but not located: its interval is the bracket."""
    return Crossing(
        centre,
        state.a,
        state.b,
        state.direction,
        NOT_LOCATED,
        monotone,
        state.bracket,
        1,
        (float(pair[0]), float(pair[1])),
        trials,
        bound,
    )


def _local_shape(
    x: np.ndarray, y: np.ndarray, se: np.ndarray, centre: float, direction: int, design: Design
) -> tuple[float, float]:
    """The slope at `centre` and the curvature bound M = |mu''| + curvature_z SEs, from weighted
    quadratics through the nearest k points, k = `nearest`, `nearest` + 1, ... all of them: the
    widest whose curvature agrees (within `lepski_z` SEs of the difference) with every narrower
    one's (Lepski's rule: wide windows average the noise away, but not a curvature that
    changes; a steep sigmoid's bend shows as a disagreement and keeps the window narrow)."""
    order = np.argsort(np.abs(x - centre), kind="stable")
    fits = []
    for k in range(min(design.nearest, x.size), x.size + 1):
        chosen = order[:k]
        fit = _fit(x[chosen], y[chosen], se[chosen], centre, 2)
        if fit is not None:
            fits.append((float(fit[0][1]), 2 * float(fit[0][2]), 2 * math.sqrt(fit[1][2, 2])))
    if not fits:
        line = _fit(x, y, se, centre, 1)
        slope = float(line[0][1]) if line is not None else math.nan
        return (slope if slope * direction > 0 else direction * 1e-12), 0.0
    pick = 0
    for k in range(1, len(fits)):
        agree = all(
            abs(fits[k][1] - fits[j][1]) <= design.lepski_z * math.hypot(fits[k][2], fits[j][2])
            for j in range(k)
        )
        if not agree:
            break
        pick = k
    slope, curvature, curvature_se = fits[pick]
    if not (slope * direction > 0):
        slope = direction * 1e-12
    return slope, abs(curvature) + design.curvature_z * curvature_se


def _monotone(x: np.ndarray, y: np.ndarray, se: np.ndarray, state: _Placed, design: Design) -> bool:
    """No step between neighbouring points of the bracket goes against its direction by more
    than `reversal_z` SEs of the difference."""
    if x.size < 2:
        return True
    step = np.diff(y) * state.direction
    scale = np.sqrt(se[:-1] ** 2 + se[1:] ** 2)
    return bool(np.all(step > -design.reversal_z * scale))


CANDIDATES = 256  # half-widths h tried by the final design


def _final_design(
    most: int,
    quantum: int,
    per_trial: float,
    slope: float,
    bound: float,
    spread: float,
    t: float,
    target: float | None,
    span: float,
) -> tuple[int, float]:
    """Trials per point and half-spacing h of the final pair: h minimises the predicted width
    (the line's sd at the root, offset by the placement's SE, plus the curvature's bias, over
    the slope, inflated as Fieller's interval is by the slope's own uncertainty); the trials are
    all that is affordable, or with a `target` the fewest predicted to reach it (the caller
    aims below its own target: the realised width scatters around the prediction)."""
    if most == 0:
        return 0, 0.0
    counts = np.unique(
        np.maximum(quantum, (np.geomspace(quantum, most, 64) // quantum) * quantum).astype(int)
    )
    h = np.geomspace(span * 1e-6, span / 2, CANDIDATES)
    width = _predicted_width(counts[:, None], h[None, :], per_trial, slope, bound, spread, t)
    best = np.argmin(width, axis=1)
    best_width = width[np.arange(counts.size), best]
    pick = counts.size - 1
    if target is not None:
        enough = np.flatnonzero(best_width <= target)
        if enough.size:
            pick = int(enough[0])
    return int(counts[pick]), float(h[best[pick]])


def _predicted_width(
    trials: np.ndarray,
    h: np.ndarray,
    per_trial: float,
    slope: float,
    bound: float,
    spread: float,
    t: float,
) -> np.ndarray:
    """The final interval's expected width for a pair x-hat +- h with `trials` each (points
    taken as independent: shared draws only narrow it)."""
    v = per_trial**2 / trials
    d = min(spread, 0.999 * float(np.max(h)))
    lam = (d + h) / (2 * h)
    sd = np.sqrt(v * ((1 - lam) ** 2 + lam**2))
    bias = bound * np.abs(h * h - d * d) / 2
    slope_se = np.sqrt(2 * v) / (2 * h)
    g = np.minimum((t * slope_se / abs(slope)) ** 2, 0.95)
    return np.asarray(2 * (t * sd + bias) / abs(slope) / (1 - g))


# --- the bill ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What a budget buys before anything runs: the first look's points and trials, the most
    placement rounds (two points each, same trials), and the final pair's trials per point if
    one crossing is found and placement spends all it may (the least the final stage gets)."""

    scan_points: int
    scan_trials: int
    rounds: int
    final_trials: int
    budget: float


def plan(
    lo: float,
    hi: float,
    budget: float,
    *,
    quantum: int = 1,
    cost: Cost = trials_cost,
    design: Design = DESIGN,
) -> Plan:
    """The bill of `locate` with these arguments (its first look is fixed; the rest is at most)."""

    def nothing(x: np.ndarray, start: int, stop: int) -> Evaluation:  # never called
        raise AssertionError

    run = _Run(nothing, cost, budget, quantum, lo, hi)
    scan_x = run.snap(np.linspace(lo, hi, design.scan), design.lattice)
    placing = budget * (1 - design.final_share)
    trials = run.affordable(scan_x, 0, placing * design.scan_share)
    if trials == 0:
        return Plan(design.scan, 0, 0, 0, budget)
    pair = scan_x[:2]
    round_cost = run.price(pair, 0, trials)
    left = placing - run.price(scan_x, 0, trials)
    rounds = int(min(design.rounds, left // round_cost)) if round_cost > 0 else design.rounds
    final_budget = budget - run.price(scan_x, 0, trials) - rounds * round_cost
    final = run.affordable(pair, trials, final_budget)
    return Plan(design.scan, trials, rounds, final, budget)


def summary(located: Located, unit: str = "") -> str:
    """One line per crossing, for a terminal."""
    if not located.crossings:
        return f"{located.status}: {located.note}"
    lines = []
    for c in located.crossings:
        way = "rises" if c.direction > 0 else "falls"
        mono = "" if c.monotone else "; not monotone on its bracket"
        lines.append(
            f"{c.status}: x* = {c.estimate:.6g}, 95% interval [{c.low:.6g}, {c.high:.6g}] "
            f"({way} through {located.edge:g}{mono})"
        )
    cost = f"; cost {located.cost:.4g}{unit} of {located.budget:.4g}{unit}"
    return "\n".join(lines) + cost
