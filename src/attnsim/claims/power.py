"""Design power: what a claim's rule could detect, from its declaration and its design alone,
before any row of the run is read (docs/science.md §7.7).

A claim is an open test only if its rule could have said `fails`. That is a property of the
declaration (the rule, the alternative) and of the design (the points the regime selects, the
trials planned at each, a variance model fixed before the run), never of the run's rows: the
run's own SE may be shown beside the design's but never changes a claim's role. This module is
pure numbers in, numbers out; it reads rules by their fields (`predicted`, `tolerance`, `bound`,
`side`, and `rule` for a per-point rule), like `claims.distance`, so that the engine can import
it without a circle.

The rules' `fails` regions (the engine's 95% rules, §7.4), with the estimate at the alternative
θ₁, design SE `σ` and the interval's quantile `q = t_{0.975, df}` (z = 1.96 for a normal
interval):

- Equivalence `θ₀ ± Δ`: fails when the interval lies entirely outside the band. The two sides
  are exclusive, so `power = P(T(δ₊) > q) + P(T(δ₋) > q)` with `δ₊ = (θ₁ − θ₀ − Δ)/σ`,
  `δ₋ = (θ₀ − Δ − θ₁)/σ` and `T(δ)` noncentral t with `df` degrees of freedom (normal: `Φ(δ − q)`).
  Beyond the upper edge this is `≈ Φ((|θ₁ − θ₀| − Δ)/σ − 1.96)`: 80% power needs the alternative
  `(1.96 + 0.84) σ = 2.80 σ` beyond the band's edge.
- OneSided `bound`, side `above` (`below`): fails when the interval lies entirely below (above)
  the bound: `power = P(T(δ) > q)`, `δ = (bound − θ₁)/σ` (`(θ₁ − bound)/σ`).
- PerPoint(rule): fails when any point fails: `power = 1 − P(no point fails)`, the points
  correlated through shared draws (common random numbers, §8.3): trial t of every point shares
  a draw, with an equicorrelation `ρ ≥ 0` or a correlation matrix, so that the points' means
  are correlated and, for t intervals, their variance estimates too. A normal interval with
  equicorrelation is exact by a one-factor integral; a t interval with ρ > 0, or a matrix, by
  a fixed-seed Monte Carlo of the exact joint law (`MATRIX_DRAWS`, SE < 0.003). Checked against
  simulated shared draws in tests/claims/test_power.py.
- Sanity rules have no power (true by construction): `role` gives them none.

Alternatives (`check_alternative`): an evidence claim's alternative must be a finite number
strictly inside the region where the rule says `fails` — beyond a band edge, on the failing side
of a bound, per point for a per-point rule. At the prediction or on an edge the power is the
rule's own error rate (2.5%), so the claim could not have failed; NaN has no power at all.

Roles (`role`): `sanity` when declared true by construction; else `open test` when the design
power is at least OPEN_POWER (0.8), `check` below it ("could not have failed: power 0.03 against
…"). Every role keeps its verdict; a failed check is a finding, never dropped.

How it is wired (the phase after issue 48's ClaimResult lands):

1. `ClaimSpec` gains `variance: VarianceModel | None` (the theory's per-trial SD, or a pilot's
   from an earlier independent run, with its reason) and optionally `correlation` (ρ between its
   points' estimates) and `tails`; its `__post_init__` calls
   `check_alternative(self.claim_id, self.rule, self.alternative.value)` for evidence claims.
   tests/helpers/alternatives.py lists the claims declared today that it would refuse.
2. The engine gets each kind's planned grid (one row per planned point with the point's
   parameters and its planned `n_trials` or `target_se`, from the config before any job runs:
   `plan/sweep.py` has it), selects the claim's regime on it (a regime is a condition on
   parameters, so it applies to planned points as to measured ones), and builds the design with
   `design_from_trials` (or `design_from_target_se` for adaptive experiments; a pooled or
   fitted estimate passes its own SE and df to `Design`).
3. `declared(spec)` (engine.py) writes `role(spec, design)`'s fields into the result
   (`design_power`, `design_se`, the role, its text) before `judge` reads any row; the
   existing `power`/`min_detectable` (at the run's SE) stay beside them for display only.
4. Tallies count open tests apart from checks and sanity; a check or sanity claim that fails or
   is inconclusive is listed as a failed check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from attnsim.stats import t_quantile

OPEN_POWER = 0.8  # design power from which a claim is an open test; below it a check
LEVEL = 0.975  # one side of the engine's 95% interval: the quantile its rules use
ROLES = ("open test", "check", "sanity")
VARIANCE_SOURCES = ("theory", "pilot")
VARIANCE_UNITS = ("trial", "point")  # what a variance model's SD is divided by (√ of its count)
EDGE_RELATIVE = 1e-9  # an alternative this close to an edge (relative to the band) is on it
PHI_SPAN, PHI_STEP = 40.0, 2.5e-4  # the table of Φ interpolated for large arrays
FACTOR_NODES = 241  # grid of the shared factor W ~ N(0, 1) in the union over correlated points
FACTOR_SPAN = 9.0  # the factor's grid spans ±9 sd: the mass outside is < 1e-18
CHI_NODES = 81  # nodes of log chi-square for the variance estimate of a t interval
NORMAL_DF = 1e7  # beyond this many degrees of freedom the t interval is the normal one
MATRIX_DRAWS = 1 << 16  # fixed-seed draws where no quadrature is exact (SE < 0.002)
MATRIX_SEED = 20250049  # fixed: the same declaration gives the same power on every machine
_NORMAL = NormalDist()


# --- the design ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VarianceModel:
    """The per-trial SD of a claim's statistic at each point, fixed before the run: from the
    theory (`source` "theory", `reason` the section that derives it) or from an earlier
    independent run (`source` "pilot", `reason` naming the run, its commit and its seed: the
    judged run must not share its draws). `sd` is one number or one per planned point."""

    sd: float | tuple[float, ...]
    source: str
    reason: str
    # what `sd` is divided by for the design SE: "trial" (√ of each point's planned trials, a t
    # interval with trials − 1 df) or "point" (√ of the regime's planned points, a t interval with
    # points − 1 df: a statistic pooled over points whose spread between points dominates)
    per: str = "trial"
    # whether an adaptive experiment's stopping rule watches this statistic (the kind's main
    # metric): then its target SE counts; else only the trials of the first round do
    watched: bool = False

    def __post_init__(self) -> None:
        if self.source not in VARIANCE_SOURCES:
            raise ValueError(f"variance model: source must be one of {VARIANCE_SOURCES}")
        if self.per not in VARIANCE_UNITS:
            raise ValueError(f"variance model: per must be one of {VARIANCE_UNITS}")
        sd = np.atleast_1d(np.asarray(self.sd, dtype=float))
        if sd.size == 0 or not np.all(np.isfinite(sd) & (sd > 0)):
            raise ValueError(f"variance model: sd must be finite and positive, got {self.sd}")
        if not self.reason:
            raise ValueError("variance model: give the reason (theory section or pilot run)")


@dataclass(frozen=True)
class Design:
    """The design a claim is judged at, as the rule sees it: the design SE of each judged
    estimate (one for a single estimate, one per point for a per-point rule), the degrees of
    freedom of each interval (inf: a normal interval), the correlation between the points'
    estimates (a number ρ in [0, 1), or a matrix) and what it rests on, in words."""

    se: tuple[float, ...]
    df: float = math.inf
    # None: not declared, so the union over points is bounded below by its best point's power,
    # which holds whatever the dependence (shared draws can only make the union rarer than
    # independence does, never rarer than its likeliest member)
    correlation: float | tuple[tuple[float, ...], ...] | None = 0.0
    text: str = ""

    def __post_init__(self) -> None:
        se = np.atleast_1d(np.asarray(self.se, dtype=float))
        object.__setattr__(self, "se", tuple(float(s) for s in se))
        if se.size == 0 or not np.all(np.isfinite(se) & (se > 0)):
            raise ValueError(f"design: every SE must be finite and positive, got {self.se}")
        if not (self.df >= 1):
            raise ValueError(f"design: an interval needs df >= 1, got {self.df}")
        if self.correlation is None:
            pass
        elif isinstance(self.correlation, int | float):
            object.__setattr__(self, "correlation", float(self.correlation))
            if not (0.0 <= self.correlation < 1.0):
                raise ValueError(f"design: ρ must lie in [0, 1), got {self.correlation}")
        else:
            matrix = np.asarray(self.correlation, dtype=float)
            object.__setattr__(
                self, "correlation", tuple(tuple(float(x) for x in row) for row in matrix)
            )
            _check_matrix(matrix, se.size)

    @property
    def points(self) -> int:
        return len(self.se)

    @property
    def quantile(self) -> float:
        """The interval's critical value: t_{0.975, df}, z_{0.975} for a normal interval."""
        return _quantile(self.df)


def design_from_trials(
    variance: VarianceModel,
    trials: int | Sequence[int],
    points: int = 1,
    correlation: float | Sequence[Sequence[float]] = 0.0,
    t_interval: bool = True,
) -> Design:
    """The design of per-point means of `trials` i.i.d. trials each (one number, or one per
    point): SE = sd / √trials, a t interval with trials − 1 degrees of freedom (the smallest
    count's, if they differ) or a normal one."""
    trials_arr = np.broadcast_to(np.asarray(trials, dtype=float), (points,))
    sd = np.broadcast_to(np.asarray(variance.sd, dtype=float), (points,))
    if np.any(trials_arr < 2):
        raise ValueError(f"design: a point needs >= 2 planned trials, got {trials}")
    df = float(trials_arr.min() - 1) if t_interval else math.inf
    low, high = int(trials_arr.min()), int(trials_arr.max())
    counts = f"{low:,}" if low == high else f"{low:,} to {high:,}"
    plural = "s" if points > 1 else ""
    text = (
        f"{points:,} point{plural} x {counts} trials, per-trial SD from {variance.source} "
        f"({variance.reason})"
    )
    return Design(tuple(sd / np.sqrt(trials_arr)), df, _correlation(correlation), text)


def design_from_target_se(
    target_se: float,
    points: int = 1,
    correlation: float | Sequence[Sequence[float]] = 0.0,
    variance: VarianceModel | None = None,
) -> Design:
    """The design of an adaptive experiment: every point is sampled until its SE reaches
    `target_se` (docs/science.md §7.3), so the design SE is the target. With a variance model
    the interval's df is that of the trials the target needs (sd² / target² − 1); without one,
    a normal interval."""
    df = math.inf
    if variance is not None:
        sd = float(np.max(np.asarray(variance.sd, dtype=float)))
        df = max(1.0, math.ceil((sd / target_se) ** 2) - 1.0)
    text = f"{points:,} point{'s' if points > 1 else ''} at target SE {target_se:g}"
    return Design(tuple([float(target_se)] * points), df, _correlation(correlation), text)


def design_from_plan(
    variance: VarianceModel,
    trials: Sequence[int],
    target_se: Sequence[float],
    per_point: bool,
    correlation: float | None = None,
    fewest: Sequence[int] | None = None,
) -> Design:
    """The design of a claim from its regime's planned points (the engine's `claims.engine.
    planned_design`): per point the most `trials` its experiment plans, the `fewest` it is sure
    to get (the same for a fixed experiment; one round for an adaptive one) and its `target_se`
    (NaN for a fixed experiment; an adaptive one stops once its main metric's SE reaches it).

    Each point's design SE: sd / √trials at a fixed point; at an adaptive point sd / √fewest (the
    first round's trials: an upper bound for any statistic), or, for a statistic the stopping rule
    watches (`VarianceModel.watched`: the kind's main metric), what the rule gives it: the target,
    within [sd / √most, sd / √fewest]. Its t interval has the point's trials (fewest, when
    adaptive) − 1 df. A per-point rule judges each point at its SE (the union over points, with
    the declared correlation). A single estimate has one design SE: the largest point's for `per`
    "trial" (the fewest trials: conservative where the plan differs between points), sd / √points
    for `per` "point" (a t with points − 1 df)."""
    most = np.asarray(trials, dtype=float)
    least = most if fewest is None else np.asarray(fewest, dtype=float)
    targets = np.asarray(target_se, dtype=float)
    points = most.size
    if points == 0:
        raise ValueError("design: no planned point")
    if np.any(least < 2):
        raise ValueError(f"design: a point needs >= 2 planned trials, got {least.min():g}")
    sd = float(np.max(np.asarray(variance.sd, dtype=float)))
    adaptive = np.isfinite(targets)
    first = sd / np.sqrt(least)
    se = np.where(adaptive, first, sd / np.sqrt(most))
    if variance.watched:
        stopped = np.minimum(first, np.maximum(targets, sd / np.sqrt(most)))
        se = np.where(adaptive, stopped, se)
    df = float(np.where(adaptive, least, most).min() - 1)
    source = f"per-trial SD {sd:.3g} from {variance.source} ({variance.reason})"
    plural = "s" if points > 1 else ""
    counts = _counts(most, least, targets)
    if per_point:
        text = f"{points:,} planned point{plural}, {counts}; {source}"
        rho = None if correlation is None else float(correlation)
        if rho is None and points > 1:
            text += "; correlation between points not declared: the best point's power"
        return Design(tuple(float(x) for x in se), df, rho, text)
    if variance.per == "point":
        if points < 2:
            raise ValueError("design: a statistic pooled over points needs >= 2 planned points")
        text = (
            f"pooled over {points:,} planned points; SD between points {sd:.3g} from "
            f"{variance.source} ({variance.reason})"
        )
        return Design((sd / math.sqrt(points),), float(points - 1), 0.0, text)
    text = f"one estimate over {points:,} planned point{plural}, {counts}; {source}"
    return Design((float(se.max()),), df, 0.0, text)


def _counts(most: np.ndarray, least: np.ndarray, targets: np.ndarray) -> str:
    adaptive = np.isfinite(targets)
    parts = []
    if (~adaptive).any():
        low, high = int(most[~adaptive].min()), int(most[~adaptive].max())
        parts.append(f"{low:,} trials" if low == high else f"{low:,} to {high:,} trials")
    if adaptive.any():
        low, high = int(least[adaptive].min()), int(most[adaptive].max())
        target = float(targets[adaptive].max())
        parts.append(f"{low:,} to {high:,} trials to target SE {target:g}")
    return " and ".join(parts)


def _correlation(value) -> float | tuple[tuple[float, ...], ...]:
    if isinstance(value, int | float):
        return float(value)
    return tuple(tuple(float(x) for x in row) for row in value)


def _check_matrix(matrix: np.ndarray, points: int) -> None:
    if matrix.shape != (points, points):
        raise ValueError(f"design: correlation matrix must be {points}x{points}")
    if not (np.allclose(matrix, matrix.T) and np.allclose(np.diag(matrix), 1.0)):
        raise ValueError("design: a correlation matrix is symmetric with a unit diagonal")
    if np.linalg.eigvalsh(matrix).min() < -1e-10:
        raise ValueError("design: the correlation matrix is not positive semi-definite")


# --- the rules' failing regions ------------------------------------------------------------------


def _inner(rule):
    return getattr(rule, "rule", None) or rule


def _is_band(rule) -> bool:
    return hasattr(rule, "tolerance") and hasattr(rule, "predicted")


def failing_region(rule) -> str:
    """Where the alternative must lie for `rule` (an Equivalence, OneSided or PerPoint of them),
    in words with numbers: "below 0.95 or above 1.05"."""
    inner = _inner(rule)
    if _is_band(inner):
        low, high = inner.predicted - inner.tolerance, inner.predicted + inner.tolerance
        return f"below {low:g} or above {high:g}"
    return f"{'below' if inner.side == 'above' else 'above'} {inner.bound:g}"


def check_alternative(claim_id: str, rule, value: float | Sequence[float]) -> None:
    """Refuse (ValueError, one line naming the claim) an alternative that is not a finite number
    strictly inside the region where `rule` says `fails`: NaN or infinite, the prediction, a value
    inside the band or on its edge, the bound or a value on the claimed side of it. For a
    per-point rule the inner rule's region applies at every point: one value for all points, or
    one per planned point (a theory's value that differs per point), each checked."""
    inner = _inner(rule)
    where = failing_region(rule)
    if isinstance(value, int | float) or value is None:
        _check_one(claim_id, inner, where, value, "")
        return
    if getattr(rule, "rule", None) is None:
        raise ValueError(f"claim {claim_id}: one alternative per point needs a per-point rule")
    values = list(value)
    if not values:
        raise ValueError(f"claim {claim_id}: the alternative has no point")
    for index, one in enumerate(values):
        _check_one(claim_id, inner, where, one, f" at point {index + 1} of {len(values)}")


def _check_one(claim_id: str, inner, where: str, value, at_point: str) -> None:
    if value is None or not math.isfinite(value):
        raise ValueError(
            f"claim {claim_id}: the alternative{at_point} must be a number where the rule says "
            f"fails ({where}), got {value}"
        )
    if _is_band(inner):
        tolerance = float(inner.tolerance)
        scale = max(tolerance, abs(inner.predicted))
        beyond = abs(value - inner.predicted) - tolerance
        if beyond <= EDGE_RELATIVE * scale:
            at = (
                "the prediction"
                if value == inner.predicted
                else "a band edge"
                if abs(beyond) <= EDGE_RELATIVE * scale
                else "inside the band"
            )
            raise ValueError(
                f"claim {claim_id}: alternative {value:g}{at_point} is {at} of "
                f"{inner.predicted:g} ± {tolerance:g}, where the rule cannot fail: declare one "
                f"{where}"
            )
        return
    sign = 1.0 if inner.side == "below" else -1.0  # fails when the estimate is beyond, this way
    beyond = sign * (value - inner.bound)
    if beyond <= EDGE_RELATIVE * abs(inner.bound):
        at = "the bound" if value == inner.bound else f"on the claimed side ({inner.side})"
        raise ValueError(
            f"claim {claim_id}: alternative {value:g}{at_point} is {at} of {inner.bound:g}, "
            f"where the rule cannot fail: declare one {where}"
        )


def alternative_refusal(claim_id: str, rule, value: float | Sequence[float]) -> str:
    """`check_alternative`'s message, or "" when the alternative is valid (for inventories)."""
    try:
        check_alternative(claim_id, rule, value)
    except ValueError as error:
        return str(error)
    return ""


# --- power ---------------------------------------------------------------------------------------


def _quantile(df: float) -> float:
    if df >= NORMAL_DF:
        return _NORMAL.inv_cdf(LEVEL)
    return t_quantile(LEVEL, df)


def scaled_chi(df: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes u and weights of the distribution of u = √(χ²_df / df), the ratio of an estimated
    to the true SE. In x = log χ² the density exp(df·x/2 − eˣ/2) is smooth and unimodal (mode
    log df, width w = √(2/df) near it, a long left tail exp(df·x/2) for small df): the nodes are
    x = log df + w·sinh(t) on an even grid of t, which packs them near the mode and reaches the
    tails in a few steps (trapezoid error ~1e-10 against scipy's noncentral t for df from 1 to
    10⁶ with CHI_NODES = 81). Normal intervals (df ≥ NORMAL_DF): u = 1."""
    if df >= NORMAL_DF:
        return np.ones(1), np.ones(1)
    mode, width = math.log(df), math.sqrt(2.0 / df)
    left = math.asinh((12 * width + 80 / df) / width)  # the left tail to exp(-40) of its mode
    t = np.linspace(-left, math.asinh(12.0), CHI_NODES)
    x = mode + width * np.sinh(t)
    log_density = 0.5 * df * x - 0.5 * np.exp(x) + np.log(np.cosh(t))
    weights = np.exp(log_density - log_density.max())
    weights /= weights.sum()
    return np.sqrt(np.exp(x) / df), weights


def upper_tail(shift, df: float, quantile: float | None = None) -> np.ndarray:
    """P(T > q) for T noncentral t with `df` degrees of freedom and noncentrality `shift`
    (elementwise): P(N(shift, 1) > q·u) averaged over u = √(χ²_df/df). With df ≥ NORMAL_DF the
    normal Φ(shift − q). `q` defaults to t_{0.975, df}."""
    q = _quantile(df) if quantile is None else quantile
    u, w = scaled_chi(df)
    shift = np.asarray(shift, dtype=float)
    return (_phi_array(shift[..., None] - q * u) * w).sum(axis=-1)


def fail_shifts(rule, alternative: float, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The noncentralities (δ₊, δ₋) of the two ways `rule` can say fails at each SE (δ₋ = -inf
    for a one-sided rule, which fails one way): fails on a side when its T(δ) exceeds q."""
    inner = _inner(rule)
    se = np.asarray(se, dtype=float)
    if _is_band(inner):
        upper = (alternative - inner.predicted - inner.tolerance) / se
        lower = (inner.predicted - inner.tolerance - alternative) / se
        return upper, lower
    sign = 1.0 if inner.side == "below" else -1.0
    return sign * (alternative - inner.bound) / se, np.full(se.shape, -np.inf)


def design_power(rule, alternative: float | Sequence[float], design: Design) -> float:
    """P(the rule says fails) were the alternative true at the design: the single estimate's for
    an Equivalence or OneSided rule (its design SE must be one number), the union over points for
    a PerPoint rule. `alternative` is one value (at every point) or one per point. NaN when the
    alternative is not a number (a refused declaration)."""
    values = np.broadcast_to(np.asarray(alternative, dtype=float), (design.points,))
    if not np.all(np.isfinite(values)):
        return math.nan
    se = np.asarray(design.se, dtype=float)
    per_point = getattr(rule, "rule", None) is not None
    if not per_point and design.points != 1:
        raise ValueError("design_power: a single-estimate rule has one design SE")
    upper, lower = (np.empty(design.points), np.empty(design.points))
    for j in range(design.points):
        upper[j], lower[j] = (float(x) for x in fail_shifts(rule, float(values[j]), se[j]))
    if design.points == 1:
        return float(upper_tail(upper, design.df).sum() + upper_tail(lower, design.df).sum())
    if design.correlation is None:  # undeclared dependence: the best point's power bounds it
        return float(np.max(upper_tail(upper, design.df) + upper_tail(lower, design.df)))
    if isinstance(design.correlation, float):
        return _union_equicorrelated(upper, lower, design.df, design.correlation)
    return _union_matrix(upper, lower, design.df, np.asarray(design.correlation))


def _union_equicorrelated(upper, lower, df: float, rho: float) -> float:
    """1 − P(no point fails) for points whose trials share draws with correlation ρ.

    Normal intervals, or ρ = 0: the estimates are Z_j = √ρ W + √(1 − ρ) E_j, and given the
    shared factor W the points are independent, so P(none) = E_W Π_j (1 − p_j(W)), by a
    trapezoid over W (exact to ~1e-9; with ρ = 0, a product)."""
    if df < NORMAL_DF and rho > 0:
        return _union_shared_trials(upper, lower, df, rho)
    q = _quantile(df)
    u, wu = scaled_chi(df)
    factor = np.linspace(-FACTOR_SPAN, FACTOR_SPAN, FACTOR_NODES)
    weight = np.exp(-0.5 * factor**2)
    weight /= weight.sum()
    scale = math.sqrt(1.0 - rho)
    shared = math.sqrt(rho) * factor[:, None, None]  # (factor, point, u)

    def tail(shift: np.ndarray, direction: float) -> np.ndarray:
        if np.all(np.isneginf(shift)):
            return np.zeros((factor.size, shift.size))
        argument = (shift[None, :, None] + direction * shared - q * u[None, None, :]) / scale
        return (_phi_array(argument) * wu).sum(axis=-1)

    fails = np.clip(tail(upper, 1.0) + tail(lower, -1.0), 0.0, 1.0)  # a point's sides exclude
    return float(1.0 - (weight * np.prod(1.0 - fails, axis=1)).sum())


def _union_shared_trials(upper, lower, df: float, rho: float) -> float:
    """The union for t intervals of means of n = df + 1 trials whose trial t shares a draw C_t
    across points (X_tj = √ρ C_t + √(1 − ρ) E_tj, standardised): the means are correlated and so
    are the variance estimates. With A = ‖c‖² ~ χ²_{n−1} (c the shared trials centred) and, per
    point, Z_j ~ N(0, 1) the projection of its own centred trials on c and R_j ~ χ²_{n−2} the
    rest, (n − 1) S_j² = (√(ρA) + √(1 − ρ) Z_j)² + (1 − ρ) R_j, all independent of the means
    (normal data). Given (W, A, Z, R) the points fail independently, each with a Φ of its own
    mean term, so P(none) is the average of Π_j (1 − p_j) over MATRIX_DRAWS fixed-seed draws of
    (W, A, Z_j, R_j): exact in distribution, Monte Carlo SE < 0.002, the mean terms integrated
    exactly."""
    rng = np.random.default_rng(MATRIX_SEED)
    points = upper.size
    w = rng.standard_normal((MATRIX_DRAWS, 1))
    a = rng.chisquare(df, (MATRIX_DRAWS, 1))
    z = rng.standard_normal((MATRIX_DRAWS, points))
    r = rng.chisquare(df - 1, (MATRIX_DRAWS, points)) if df > 1 else np.zeros(z.shape)
    u = np.sqrt(((math.sqrt(rho) * np.sqrt(a) + math.sqrt(1 - rho) * z) ** 2 + (1 - rho) * r) / df)
    q, scale, shared = _quantile(df), math.sqrt(1.0 - rho), math.sqrt(rho) * w
    fails = _phi_array((upper + shared - q * u) / scale)
    if not np.all(np.isneginf(lower)):
        fails += _phi_array((lower - shared - q * u) / scale)
    return float(1.0 - np.prod(1.0 - np.clip(fails, 0.0, 1.0), axis=1).mean())


def _union_matrix(upper, lower, df: float, matrix: np.ndarray) -> float:
    """The union over points for a general correlation matrix R, by a Monte Carlo of fixed seed
    (MATRIX_DRAWS // 2 draws): the means N(0, R) and, for a t interval, the variance estimates
    as the diagonal of a Wishart(R, df) / df matrix (trials sharing draws with correlation R,
    by Bartlett's decomposition: L B with B lower triangular, χ² on its diagonal)."""
    draws, points = MATRIX_DRAWS // 2, matrix.shape[0]
    values, vectors = np.linalg.eigh(matrix)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    rng = np.random.default_rng(MATRIX_SEED)
    z = rng.standard_normal((draws, points)) @ root.T
    u = np.ones_like(z)
    if points <= df < NORMAL_DF:
        bartlett = np.tril(rng.standard_normal((draws, points, points)), -1)
        index = np.arange(points)
        bartlett[:, index, index] = np.sqrt(rng.chisquare(df - index, (draws, points)))
        u = np.sqrt((np.einsum("jk,dkl->djl", root, bartlett) ** 2).sum(axis=2) / df)
    elif df < points:  # fewer trials than points: the centred trials themselves
        centred = rng.standard_normal((draws, points, round(df)))
        u = np.sqrt((np.einsum("jk,dkl->djl", root, centred) ** 2).sum(axis=2) / round(df))
    q = _quantile(df)
    fails = (z + upper > q * u) | (-z + lower > q * u)
    return float(fails.any(axis=1).mean())


def _phi_array(x) -> np.ndarray:
    """Φ elementwise: numpy has no erf, so math.erfc on an even grid of step PHI_STEP once, then
    linear interpolation by direct indexing (error < PHI_STEP² / 8 · max|φ'| = 2e-9); 0 and 1
    beyond ±PHI_SPAN."""
    global _PHI_TABLE
    if _PHI_TABLE is None:
        grid = np.arange(-PHI_SPAN, PHI_SPAN + PHI_STEP / 2, PHI_STEP)
        _PHI_TABLE = np.asarray([0.5 * math.erfc(-g / math.sqrt(2.0)) for g in grid])
    table = _PHI_TABLE
    position = (np.clip(np.asarray(x, dtype=float), -PHI_SPAN, PHI_SPAN) + PHI_SPAN) / PHI_STEP
    index = np.minimum(position.astype(np.intp), table.size - 2)
    fraction = position - index
    return table[index] * (1.0 - fraction) + table[index + 1] * fraction


_PHI_TABLE: np.ndarray | None = None


def margin_for(power: float = OPEN_POWER, df: float = math.inf) -> float:
    """How far beyond the band's edge (or the bound), in design SEs, an alternative must lie for
    a single-estimate rule to reach `power`: q + z_power for a normal interval (2.80 for 0.8),
    found by bisection on the noncentral t for a t interval."""
    lo, hi = 0.0, 60.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if float(upper_tail(np.array([mid]), df)[0]) < power:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# --- roles ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Role:
    """A claim's role before the data: `open test`, `check` or `sanity`; its design power and
    design SE (the largest, for a per-point design) and the sentence the table shows."""

    role: str
    design_power: float
    design_se: float
    text: str


def role(spec, design: Design | None, missing: str = "") -> Role:
    """The role of a declared claim (`engine.ClaimSpec`, read by its fields: `role`, `rule`,
    `alternative`, `claim_id`) at its design. Neither the run's rows nor the spec's measure are
    read: the role is fixed before the data. A sanity claim is `sanity` (true by construction,
    no power); a declared check is a `check` (its alternative's reason says why; its power shown
    when it has a design and a number); an evidence claim without a design (no variance model,
    or no planned point: `missing` says which) is a `check` with NaN power (nothing shows it
    could have failed)."""
    if spec.role == "sanity":
        return Role("sanity", math.nan, math.nan, "sanity: true by construction")
    value = spec.alternative.value if spec.alternative is not None else math.nan
    what = spec.alternative.text if spec.alternative is not None else "no alternative"
    if spec.role == "check":
        why = spec.alternative.reason if spec.alternative is not None else "declared a check"
        if design is None or not math.isfinite(value):
            return Role("check", math.nan, math.nan, f"check: {why}")
        power = design_power(spec.rule, value, design)
        se = max(design.se)
        return Role("check", power, se, f"check: {why}; power {power:.2f} against {value:g}")
    if design is None:
        why = missing or "no design"
        return Role(
            "check", math.nan, math.nan, f"no design ({why}): nothing shows it could have failed"
        )
    power = design_power(spec.rule, value, design)
    se = max(design.se)
    against = f"against {value:g} ({what}) at design SE {se:.3g}"
    if math.isfinite(power) and power >= OPEN_POWER:
        return Role("open test", power, se, f"open test: power {power:.2f} {against}")
    shown = "NaN" if math.isnan(power) else f"{power:.2f}"
    return Role("check", power, se, f"could not have failed: power {shown} {against}")
