"""An anytime-valid confidence sequence for `attnsim decide`, so that the table keeps decide's
guarantee across reruns and repeated calls (docs/science.md §7.8).

The boundary is the one-sided normal mixture of Howard, Ramdas, McAuliffe & Sekhon (2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", §3.2): for a sum S with
intrinsic time (information) V and Gaussian increments, mixing the martingales
exp(λS − λ²V/2) over λ ≥ 0 with a half-normal of precision ρ gives

    M(S, V) = 2 √(ρ / (V + ρ)) · exp(S² / (2(V + ρ))) · Φ(S / √(V + ρ)),

a nonnegative martingale with M = 1 at the start, so by Ville's inequality
P(∃ V: M ≥ 1/α) ≤ α: the upper boundary, for every look at once, is the S with M(S, V) = 1/α.
For a claim's estimate θ̂ with standard error SE at information I = 1/SE², S = (θ̂ − θ)·I and
V = I, so the interval is θ̂ ± c·SE with c = y·√(1 + 1/r), r = I/ρ and y the root of

    log 2 − ½ log(1 + r) + y²/2 + log Φ(y) = log(1/α)      (`critical`).

c depends only on r: information is measured in trials per point (I ∝ n), so ρ is recorded in
trials per point and the same design serves every claim of the experiments it tops up. ρ is
chosen before the first top-up from the planned information (the most trials per point the
budget buys, `planned_trials`), as the ρ minimising c there (`best_ratio`: r* ≈ 10 at α =
0.025), and recorded; a later look continues the same boundary with the same ρ.

Error accounting (per side, so per one-sided test of TOST): look 1 is the run's own 95%
interval (FIRST_ALPHA = 2.5% spent); every later look, across any number of `decide` calls and
reruns, uses the sequence, which spends ALPHA = 2.5% over all of them at once (it is valid at
every n from the first trial, so it covers looks 2, 3, … jointly). By the union bound each side
errs with probability at most 5% over all looks: the level recorded is 0.90 two-sided, "5% per
side over all looks". A second `decide` that planned afresh would spend another 2.5% + 2.5%;
that is what `continue_design` prevents. The estimated SE enters as in a t interval: the normal
critical value c becomes the t quantile of the same one-sided level with n − 1 degrees of
freedom (as `claims.sequential` does for its boundaries); coverage is checked by simulation
with estimated variances (tests/claims/test_confidence_sequence.py).

Heavy-tailed estimators (near-tie means, docs/science.md §9.3) are refused (`refusal`): a
normal boundary under-covers there and no bootstrap is used. For observations with an a-priori
bound per trial, `bernstein_bounds` is the predictable plug-in empirical-Bernstein sequence of
Waudby-Smith & Ramdas (2024, "Estimating means of bounded random variables by betting", §3.2),
valid at every trial count with no normal approximation; a kind can use it only where its
kernel bounds the per-trial statistic before the data (e.g. bounded values).

How it is wired (the phase after issue 48): `report/decide.py` replaces `sequential.Design` by
`continue_design(recorded, first_trials, planned_trials)`, with `recorded` the parameters of the
claim's `records.state.ClaimDesign` if the workspace's state record has one; it judges each
look with `ConfidenceSequence.widened` and writes `record(design, looks, experiments)` into the
state record through `ClaimDesign.from_fields` (records/state.py); the claims run reads the
recorded design of every claim whose rows a top-up changed (targeted or not) and judges it
with the same widened intervals, writing `level` and `design` into its row; `verify` and
`cite` read the same record. `refusal(claim_id, tails)` is checked before any top-up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from attnsim.claims.engine import TAILS
from attnsim.stats import t_quantile

METHOD = "confidence sequence"
BERNSTEIN_CAP = 0.5  # the largest bet λ_t (Waudby-Smith & Ramdas use 1/2 or 3/4)
BOUNDARY = "one-sided normal mixture (Howard, Ramdas, McAuliffe & Sekhon 2021)"
ALPHA = 0.025  # one side's error over all looks after the first
FIRST_ALPHA = 0.025  # one side's error at look 1: the run's own 95% interval
RHO_UNIT = "trials per point"
_NORMAL = NormalDist()


def _log_mixture_excess(y: float, ratio: float, alpha: float) -> float:
    """log M − log(1/α) at the standardised sum y = S/√(V + ρ) and r = V/ρ."""
    return (
        math.log(2.0)
        - 0.5 * math.log1p(ratio)
        + 0.5 * y * y
        + math.log(_NORMAL.cdf(y))
        + math.log(alpha)
    )


def critical(ratio: float, alpha: float = ALPHA) -> float:
    """c(r; α): the half-width of the sequence in standard errors at information ratio
    r = I/ρ (= trials / ρ). The root y is positive (at y = 0 the mixture is below 1), and the
    left side increases in y (y + φ/Φ > 0), so bisection finds it."""
    if not (ratio > 0 and 0 < alpha < 0.5):
        raise ValueError(f"critical: need r > 0 and 0 < α < 0.5, got r={ratio}, α={alpha}")
    lo, hi = 0.0, 1.0
    while _log_mixture_excess(hi, ratio, alpha) < 0:
        hi *= 2
    for _ in range(80):  # [0, hi] halved 80 times: below double precision
        mid = (lo + hi) / 2
        if _log_mixture_excess(mid, ratio, alpha) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2 * math.sqrt(1.0 + 1.0 / ratio)


def best_ratio(alpha: float = ALPHA) -> float:
    """r* = argmin_r c(r; α): the information ratio where the sequence is narrowest (golden
    section on log r over [1e-2, 1e4]; c is unimodal there)."""
    lo, hi = math.log(1e-2), math.log(1e4)
    golden = (math.sqrt(5) - 1) / 2
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fa, fb = critical(math.exp(a), alpha), critical(math.exp(b), alpha)
    for _ in range(120):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - golden * (hi - lo)
            fa = critical(math.exp(a), alpha)
        else:
            lo, a, fa = a, b, fb
            b = lo + golden * (hi - lo)
            fb = critical(math.exp(b), alpha)
    return math.exp((lo + hi) / 2)


@dataclass(frozen=True)
class ConfidenceSequence:
    """A claim's sequential design: the mixture width `rho` (trials per point), the error per
    side the sequence spends over looks 2, 3, … (`alpha`) and the first look's (`first_alpha`),
    the trials per point at look 1 and the planned information ρ was tuned for."""

    rho: float
    first_trials: int
    planned_trials: int
    alpha: float = ALPHA
    first_alpha: float = FIRST_ALPHA

    def __post_init__(self) -> None:
        if not (self.rho > 0 and math.isfinite(self.rho)):
            raise ValueError(f"confidence sequence: ρ must be finite and positive, got {self.rho}")
        if not (0 < self.alpha < 0.5 and 0 < self.first_alpha < 0.5):
            raise ValueError("confidence sequence: each side's error lies in (0, 0.5)")
        if not (1 <= self.first_trials < self.planned_trials):
            raise ValueError(
                f"confidence sequence: the planned trials ({self.planned_trials}) must exceed "
                f"look 1's ({self.first_trials})"
            )

    @classmethod
    def plan(
        cls,
        first_trials: int,
        planned_trials: int,
        alpha: float = ALPHA,
        first_alpha: float = FIRST_ALPHA,
    ) -> ConfidenceSequence:
        """The design fixed before the first top-up: ρ = planned_trials / r*(α), the sequence
        narrowest at the most trials per point the budget buys."""
        rho = planned_trials / best_ratio(alpha)
        return cls(rho, int(first_trials), int(planned_trials), alpha, first_alpha)

    @property
    def level(self) -> float:
        """Two-sided coverage over every look at once (union bound): 0.90 by default."""
        return 1.0 - 2.0 * (self.alpha + self.first_alpha)

    @property
    def level_text(self) -> str:
        per_side = self.alpha + self.first_alpha
        return (
            f"{self.level:.2f} two-sided: {100 * per_side:g}% per side over all looks "
            f"({100 * self.first_alpha:g}% at look 1, {100 * self.alpha:g}% over every later look)"
        )

    def critical(self, trials: int) -> float:
        """c at `trials` per point on the normal scale; at look 1 the 95% interval's z."""
        if trials <= self.first_trials:
            return _NORMAL.inv_cdf(1.0 - self.first_alpha)
        return critical(trials / self.rho, self.alpha)

    def t_critical(self, trials: int, df: float) -> float:
        """The critical value for a t interval with `df` degrees of freedom: the t quantile of
        the normal boundary's one-sided level (inf without a second trial)."""
        if df < 1:
            return math.inf
        return t_quantile(_NORMAL.cdf(self.critical(trials)), df)

    def widened(self, low: float, high: float, trials: int) -> tuple[float, float]:
        """A 95% t interval from `trials` trials (df = trials − 1) widened to the sequence's at
        that many trials: the same centre, the half-width × c_t / t_0.975. At look 1 (trials ≤
        first_trials) it is the 95% interval itself."""
        return self.widen(low, high, trials, trials)

    def widen(self, low: float, high: float, trials: int, n: int) -> tuple[float, float]:
        """A 95% t interval from a sample of `n` (df = n − 1) widened to the sequence's at
        `trials` per point (the design's information): what a claim's estimate gets at a look,
        whether its n is a point's trials or, for a statistic pooled over points, its points."""
        if not (math.isfinite(low) and math.isfinite(high)) or n < 2:
            return math.nan, math.nan
        factor = self.t_critical(trials, n - 1) / t_quantile(0.975, n - 1)
        centre, half = (low + high) / 2, (high - low) / 2
        return centre - factor * half, centre + factor * half

    def parameters(self) -> dict[str, Any]:
        """The parameters a `records.state.ClaimDesign` keeps (plain, YAML-safe)."""
        return {
            "boundary": BOUNDARY,
            "rho": float(self.rho),
            "rho_unit": RHO_UNIT,
            "alpha": float(self.alpha),
            "first_alpha": float(self.first_alpha),
            "first_trials": int(self.first_trials),
            "planned_trials": int(self.planned_trials),
        }

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any]) -> ConfidenceSequence:
        """The design back from a record's parameters (a ValueError naming what is missing)."""
        missing = [k for k in ("rho", "first_trials", "planned_trials") if k not in parameters]
        if missing:
            raise ValueError(f"confidence sequence: the record lacks {', '.join(missing)}")
        if parameters.get("rho_unit", RHO_UNIT) != RHO_UNIT:
            raise ValueError(f"confidence sequence: ρ must be in {RHO_UNIT}")
        return cls(
            rho=float(parameters["rho"]),
            first_trials=int(parameters["first_trials"]),
            planned_trials=int(parameters["planned_trials"]),
            alpha=float(parameters.get("alpha", ALPHA)),
            first_alpha=float(parameters.get("first_alpha", FIRST_ALPHA)),
        )


def continue_design(
    recorded: Mapping[str, Any] | None, first_trials: int, planned_trials: int
) -> ConfidenceSequence:
    """The design a `decide` call judges with: the recorded one if the claim has one (a rerun or
    a second call continues the same boundary, no new error budget; its planned trials are not
    re-tuned to this call's budget), else a new plan."""
    if recorded is not None:
        return ConfidenceSequence.from_parameters(recorded)
    return ConfidenceSequence.plan(first_trials, planned_trials)


def record(
    design: ConfidenceSequence, looks: list[int] | tuple[int, ...], experiments=()
) -> dict[str, Any]:
    """The keyword fields of a `records.state.ClaimDesign` for this design: `looks` are the
    trials per point at each look so far (look 1 the run judged), in order."""
    counts = [int(n) for n in looks]
    if not counts or counts[0] != design.first_trials or sorted(set(counts)) != counts:
        raise ValueError(
            f"confidence sequence: looks must start at {design.first_trials} trials and grow, "
            f"got {counts}"
        )
    return {
        "method": METHOD,
        "level": design.level,
        "parameters": design.parameters(),
        "looks": tuple((k + 1, n) for k, n in enumerate(counts)),
        "planned_looks": 0,
        "experiments": tuple(sorted(experiments)),
    }


def refusal(claim_id: str, tails: str) -> str:
    """Why `decide` refuses a claim ("" when it may top it up): an estimator declared
    heavy-tailed (near-tie means) is not decided by a normal boundary, and none other is
    declared for it."""
    if tails not in TAILS:
        raise ValueError(f"claim {claim_id}: tails must be one of {TAILS}, got {tails!r}")
    if tails != "heavy":
        return ""
    return (
        f"{claim_id}: its estimator is heavy-tailed (a mean carried by rare near-ties, "
        "docs/science.md §9.3): a normal confidence sequence would under-cover and decide uses "
        "no bootstrap; it needs a method for bounded observations (a betting or "
        "empirical-Bernstein sequence with the kernel's a-priori bound) or more points"
    )


def bernstein_bounds(
    x, low: float, high: float, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """The predictable plug-in empirical-Bernstein confidence sequence for the mean of i.i.d.
    observations known before the data to lie in [low, high] (Waudby-Smith & Ramdas 2024,
    Theorem 2, one side at a time): after t observations, each side misses the mean at some t
    with probability at most `alpha`. On y = (x − low)/(high − low) ∈ [0, 1]:

        μ̂_t = (1/2 + Σ_{i≤t} y_i)/(t + 1),   σ̂²_t = (1/4 + Σ_{i≤t} (y_i − μ̂_i)²)/(t + 1),
        λ_t = min(√(2 log(1/α) / (σ̂²_{t−1} t log(t + 1))), BERNSTEIN_CAP),
        v_t = 4 (y_t − μ̂_{t−1})²,   ψ(λ) = (−log(1 − λ) − λ)/4,
        bounds_t = Σ λ_i y_i / Σ λ_i ∓ (log(1/α) + Σ v_i ψ(λ_i)) / Σ λ_i,

    clipped to [0, 1] and mapped back. `x` holds the observations in order along its last axis
    (one sequence, or many side by side); returns the lower and upper bound after each
    observation, of x's shape. An observation outside [low, high] is a ValueError."""
    values = np.asarray(x, dtype=float)
    if not (high > low) or values.ndim == 0 or values.shape[-1] == 0:
        raise ValueError("bernstein_bounds: need high > low and at least one observation")
    if not np.all(np.isfinite(values)) or np.any((values < low) | (values > high)):
        raise ValueError(f"bernstein_bounds: an observation lies outside [{low:g}, {high:g}]")
    y = (values - low) / (high - low)
    t = np.arange(1, y.shape[-1] + 1, dtype=float)
    mean = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)  # μ̂_t
    variance = (0.25 + np.cumsum((y - mean) ** 2, axis=-1)) / (t + 1)  # σ̂²_t
    previous_mean = _shifted(mean, 0.5)  # μ̂_{t−1}, μ̂_0 = 1/2
    previous_variance = _shifted(variance, 0.25)
    log_alpha = math.log(1.0 / alpha)
    bet = np.minimum(
        np.sqrt(2 * log_alpha / (previous_variance * t * np.log(t + 1))), BERNSTEIN_CAP
    )
    penalty = (y - previous_mean) ** 2 * (-np.log1p(-bet) - bet)  # v_t ψ(λ_t)
    weight = np.cumsum(bet, axis=-1)
    centre = np.cumsum(bet * y, axis=-1) / weight
    half = (log_alpha + np.cumsum(penalty, axis=-1)) / weight
    lower = np.clip(centre - half, 0.0, 1.0) * (high - low) + low
    upper = np.clip(centre + half, 0.0, 1.0) * (high - low) + low
    return lower, upper


def _shifted(values: np.ndarray, first: float) -> np.ndarray:
    """values[..., t − 1] at position t, `first` at position 0 (the predictable estimate)."""
    out = np.empty_like(values)
    out[..., 0] = first
    out[..., 1:] = values[..., :-1]
    return out
