"""The claims engine: the `Claim` record, the verdict rules, pooling over points, the regime
helper and the run of every kind's claims over the store's summaries (docs/science.md §7.4).

Each kind's claims live in its package (`<kind>/claims.py`: `CLAIMS`, functions of the kind's
summaries, and `THRESHOLDS`, the numbers that turn measurements into verdicts). Every claim
declares, before any data, its `regime` (the parameters where theory makes the prediction), its
`tolerance` and its `reason` (the docs/science.md section the regime and tolerance come from).
Nothing is typed in: a verdict changes only through data. Reading the store and running every
kind's claims is `attnsim.report.claims` (`evaluate`), rendering `attnsim.report.claims_render`.

Roles: `evidence` (the essay's claims, judged by data that could have come out otherwise) and
`sanity` (true by construction, a mathematical bound checked on every trial: it fails only
through a bug). The two are shown and counted apart.

Verdicts (`VERDICTS`):
- `holds`: equivalence (as in TOST): the 95% interval lies inside the tolerance band
  [predicted - tolerance, predicted + tolerance]; one-sided: the whole interval is on the
  claimed side of the bound; a sanity bound: no trial breaks it;
- `fails`: the interval lies entirely outside the band (entirely on the other side of a
  one-sided bound), or a bound is broken;
- `inconclusive`: the interval straddles a band edge (or is missing): the data cannot tell;
- `outside regime`: the sweep measured the kind but no point lies in the claim's regime;
- `not measured`: the config has no experiment of the kind.
Every judged claim records `detectable`, the half-width of its interval: the smallest deviation
from the prediction the data could have detected, to read against `tolerance`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnsim.stats import mean_ci, t_quantile

VERDICTS = ("holds", "fails", "inconclusive", "outside regime", "not measured")
ROLES = ("evidence", "sanity")
SIDES = ("above", "below")
ENTROPY_ROUNDING = 1e-12  # relative slack on H <= log n for floating-point rounding
Z95 = 1.959963984540054  # normal 95% quantile


# The essay's three statements, in the project's words; every claim belongs to one of them (its
# `statement` is a key). The tables group claims under them, in this order, with these titles.
STATEMENTS = {
    "robustness": "Softmax attention barely moves when i.i.d. noise is added to its logits: the "
    "mean squared change of the "
    "output is what the delta method predicts, kappa * sum p^2 ||v - o||^2, so the relative error "
    "shrinks like "
    "1/sqrt(n_eff), as long as the noise has the exponential moments the argument needs; "
    "heavy-tailed noise breaks it.",
    "information": "The entropy of the attention weights lies between 0 (one-hot) and log n "
    "(uniform) and falls as the "
    "logits grow, first as log n - sigma^2/2, then along the random energy model; large logits at "
    "initialisation make "
    "the weights one-hot, and the gradient through the softmax vanishes with the entropy, so "
    "training stalls.",
    "temperature": "With cosine logits at temperature tau = 1 the entropy cannot fall more than "
    "g(1) = 0.4745 nats below "
    "log n, so the weights stay close to uniform and carry little information; a smaller "
    "temperature widens the range, "
    "which is why contrastive learning uses one.",
}
STATEMENT_TITLES = {
    "robustness": "Robustness to noise on the logits",
    "information": "Entropy of the weights and the gradient at initialisation",
    "temperature": "Temperature bounds the entropy of cosine attention",
}

# What a claim's `measured` number is (each rendering labels it so).
NUMBER_KINDS = (
    "mean (95% CI)",  # a mean over points or trials with its 95% interval
    "fitted slope (95% CI)",  # a fitted exponent with its 95% interval
    # measured = the value that decides, interval = smallest to largest over points
    "range over points",
    "extreme over trials",  # the smallest/largest single trial
    "onset",  # a parameter value from which on something holds
    "share of points",  # a fraction of the points in the regime
    "rank correlation (95% CI)",
)


@dataclass
class Claim:
    claim_id: str
    claim: str
    condition: str = (
        ""  # the regime in a reader's words (the tables' "regime"); `regime` when empty
    )
    statement: str = ""  # key of STATEMENTS
    number: str = ""  # what `measured` is: one of NUMBER_KINDS
    compared_to: str = ""  # what `predicted` (or the bound) is, then what the measurement is
    threshold: str = ""  # the rule that decided the verdict, and why (one short sentence)
    figure: str = ""  # the figure that shows it: "<experiment>/<figure>"
    experiments: str = ""  # the experiments it rests on, comma-separated
    points: int = 0  # grid points it rests on
    trials: int = 0  # trials it rests on
    predicted: float = math.nan  # the theory's value the verdict is about (nan: nothing predicted)
    measured: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    rel_deviation: float = math.nan
    verdict: str = "not measured"
    evidence: str = ""
    role: str = (
        "evidence"  # evidence (could have come out otherwise) or sanity (true by construction)
    )
    regime: str = ""  # where theory makes the prediction, fixed before the data
    reason: str = ""  # where the regime and tolerance come from: "docs/science.md §x.y"
    tolerance: float = math.nan  # half-width of the band around `predicted` (equivalence claims)
    bound: float = math.nan  # the bound a one-sided or sanity claim is compared with
    side: str = ""  # which side of `bound` the claim is on: above or below
    detectable: float = (
        math.nan
    )  # half-width of the deciding interval: smallest detectable deviation

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(
                f"claim {self.claim_id}: role must be one of {ROLES}, got {self.role!r}"
            )
        if self.side and self.side not in SIDES:
            raise ValueError(
                f"claim {self.claim_id}: side must be one of {SIDES}, got {self.side!r}"
            )
        self.condition = self.condition or self.regime
        self.regime = self.regime or self.condition

    def based_on(self, rows: pd.DataFrame, figure: str | None = None) -> Claim:
        """Record the summary rows (points) the claim rests on: experiments, points, trials,
        figure."""
        experiments = sorted(rows["experiment"].unique()) if "experiment" in rows else []
        self.experiments = ", ".join(experiments)
        self.points = len(rows)
        self.trials = int(rows["n_trials"].sum()) if "n_trials" in rows else 0
        if figure and experiments:
            self.figure = f"{experiments[0]}/{figure}"
        return self

    def equivalence(
        self, predicted: float, stats: dict, tolerance: float | None, evidence: str
    ) -> Claim:
        """Equivalence (TOST-like): holds when the 95% interval [ci_low, ci_high] lies inside
        [predicted - tolerance, predicted + tolerance], fails when it lies entirely outside,
        inconclusive when it straddles an edge or is missing. `tolerance` None: the claim's own."""
        tolerance = self.tolerance if tolerance is None else float(tolerance)
        self.tolerance = tolerance
        self.predicted, self.measured = float(predicted), float(stats["mean"])
        self.ci_low, self.ci_high = float(stats["ci_low"]), float(stats["ci_high"])
        self.rel_deviation = (self.measured - predicted) / abs(predicted) if predicted else math.nan
        self.detectable = _half_width(self.ci_low, self.ci_high)
        self.verdict = equivalence_verdict(self.ci_low, self.ci_high, predicted, tolerance)
        self.evidence = evidence
        return self

    judge = equivalence  # the name before equivalence tests (same rule)

    def one_sided(self, stats: dict, bound: float, side: str, evidence: str) -> Claim:
        """A one-sided criterion ("above -0.25", "below 1"): holds when the whole 95% interval is
        on `side` of `bound`, fails when it is entirely on the other side, else inconclusive.
        Nothing is `predicted`: the measurement is compared with the bound."""
        if side not in SIDES:
            raise ValueError(f"claim {self.claim_id}: side must be one of {SIDES}, got {side!r}")
        self.bound, self.side = float(bound), side
        self.measured = float(stats["mean"])
        self.ci_low, self.ci_high = float(stats["ci_low"]), float(stats["ci_high"])
        self.predicted = self.rel_deviation = math.nan
        self.detectable = _half_width(self.ci_low, self.ci_high)
        self.verdict = one_sided_verdict(self.ci_low, self.ci_high, bound, side)
        self.evidence = evidence
        return self

    def per_point(
        self,
        rows: pd.DataFrame,
        value,
        low,
        high,
        predicted: float,
        tolerance: float | None = None,
        describe: Callable[[pd.Series], str] | None = None,
    ) -> Claim:
        """Judge every point on its own by equivalence: `value`, `low`, `high` are columns of `rows`
        (names or Series: the point's estimate and 95% interval). holds if every point holds,
        fails if any fails, else inconclusive. Number "range over points": measured = the value
        farthest from `predicted`, interval = smallest to largest value; detectable = the widest
        point's half-width. Evidence: the counts and the worst point (`describe(row)`)."""
        tolerance = self.tolerance if tolerance is None else float(tolerance)
        values, lows, highs = (_column(rows, c) for c in (value, low, high))
        verdicts = pd.Series(
            [equivalence_verdict(lo, hi, predicted, tolerance) for lo, hi in zip(lows, highs)],
            index=rows.index,
            dtype=object,
        )
        worst = (values - predicted).abs().idxmax()
        self.number = "range over points"
        self.tolerance, self.predicted = tolerance, float(predicted)
        self.measured = float(values[worst])
        self.ci_low, self.ci_high = float(values.min()), float(values.max())
        self.rel_deviation = (self.measured - predicted) / abs(predicted) if predicted else math.nan
        halves = [_half_width(lo, hi) for lo, hi in zip(lows, highs)]
        self.detectable = max(halves) if halves else math.nan
        count = verdicts.value_counts()
        self.verdict = combine_verdicts(verdicts)
        where = f" at {describe(rows.loc[worst])}" if describe else ""
        parts = [f"{count.get(v, 0)} {v}" for v in ("fails", "inconclusive") if count.get(v, 0)]
        self.evidence = (
            f"{count.get('holds', 0)} of {len(rows)} points hold"
            + (f" ({', '.join(parts)})" if parts else "")
            + f", worst {self.measured:.3f}{where}"
        )
        self.point_verdicts = verdicts
        return self

    def sanity_bound(
        self, value: float, bound: float, side: str, evidence: str, low: float = math.nan
    ) -> Claim:
        """A bound checked on every trial (`role` sanity): holds when `value` (the most extreme
        trial) is on `side` of `bound` or on it, fails otherwise; no interval, no inconclusive.
        `low`, if given, is the other end of the range shown."""
        if side not in SIDES:
            raise ValueError(f"claim {self.claim_id}: side must be one of {SIDES}, got {side!r}")
        self.bound, self.side, self.measured = float(bound), side, float(value)
        if not math.isnan(low):
            self.ci_low, self.ci_high = min(low, value), max(low, value)
        inside = value <= bound if side == "below" else value >= bound
        self.verdict = "holds" if inside else "fails"
        self.evidence = evidence
        return self

    def sanity_check(self, ok: bool, evidence: str) -> Claim:
        """A check true by construction whose numbers the caller sets: holds if `ok`, else fails."""
        self.verdict = "holds" if ok else "fails"
        self.evidence = evidence
        return self


def _half_width(low: float, high: float) -> float:
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.inf if not (math.isnan(low) or math.isnan(high)) else math.nan
    return (high - low) / 2


def _column(rows: pd.DataFrame, column) -> pd.Series:
    return (
        rows[column] if isinstance(column, str) else pd.Series(column, index=rows.index)
    ).astype(float)


def equivalence_verdict(low: float, high: float, predicted: float, tolerance: float) -> str:
    """holds: [low, high] inside [predicted - tolerance, predicted + tolerance]; fails: entirely
    outside it; inconclusive: straddling an edge, or no interval (nan ends, no tolerance)."""
    if any(math.isnan(x) for x in (low, high, predicted, tolerance)) or low > high:
        return "inconclusive"
    lo, hi = predicted - tolerance, predicted + tolerance
    if lo <= low and high <= hi:
        return "holds"
    if high < lo or low > hi:
        return "fails"
    return "inconclusive"


def combine_verdicts(verdicts) -> str:
    """The verdict of a claim made of several judged parts (points, series): fails if any part
    fails, inconclusive if any is inconclusive (and none fails), holds if every part holds (and
    there is at least one)."""
    verdicts = list(verdicts)
    if "fails" in verdicts:
        return "fails"
    if "inconclusive" in verdicts or not verdicts:
        return "inconclusive"
    return "holds"


def one_sided_verdict(low: float, high: float, bound: float, side: str) -> str:
    """holds: [low, high] entirely on `side` of `bound`; fails: entirely on the other side;
    inconclusive: it contains the bound, or no interval."""
    if any(math.isnan(x) for x in (low, high, bound)) or low > high:
        return "inconclusive"
    above, below = low > bound, high < bound
    if above or below:
        return "holds" if (above if side == "above" else below) else "fails"
    return "inconclusive"


def select_regime(
    claim: Claim, rows: pd.DataFrame | None, mask, figure: str | None = None
) -> pd.DataFrame | None:
    """The rows of the claim's regime, or None after setting the verdict: `not measured` when
    `rows` is None (no experiment of the kind), `outside regime` when no row is in the regime.
    `mask` is a boolean Series over `rows` or a function rows -> mask (evaluated only when there
    are rows). With `figure`, the claim is `based_on` the selected rows and that figure."""
    if rows is None:
        claim.verdict = "not measured"
        return None
    selected = rows[mask(rows) if callable(mask) else mask] if len(rows) else rows
    if selected.empty:
        claim.verdict = "outside regime"
        return None
    if figure is not None:
        claim.based_on(selected, figure)
    return selected


def pooled(values, se=None) -> dict:
    """Mean over points with a between-point standard error and t interval (points differ for
    real, not only by noise). With `se`, each value's own standard error, the mean's SE is at least
    sqrt(sum se^2) / k, what the values' own noise alone gives: identical but noisy values (a
    sweep of few trials) must not look certain. One point without `se` has no interval (nan), so
    a claim resting on it is inconclusive."""
    values = np.asarray(values, dtype=float)
    own = (
        None
        if se is None
        else float(np.sqrt(np.sum(np.asarray(se, dtype=float) ** 2)) / max(values.size, 1))
    )
    if values.size == 1:
        if own is None or not math.isfinite(own):
            return {
                "mean": float(values[0]),
                "se": math.nan,
                "ci_low": math.nan,
                "ci_high": math.nan,
            }
        half = Z95 * own
        return {
            "mean": float(values[0]),
            "se": own,
            "ci_low": float(values[0]) - half,
            "ci_high": float(values[0]) + half,
        }
    stats = mean_ci(values)
    if own is not None and (own > stats["se"] or not math.isfinite(own)):
        half = t_quantile(0.975, values.size - 1) * own
        stats = {
            "mean": stats["mean"],
            "se": own,
            "ci_low": stats["mean"] - half,
            "ci_high": stats["mean"] + half,
        }
    return stats


def entropy_bounds(
    summaries: dict[str, pd.DataFrame], figures: dict[str, str] | None = None
) -> Claim:
    """0 <= H <= log n on every trial of every experiment whose summary keeps the entropy's
    extremes;
    `figures` (experiment -> its kind's figure of H between 0 and log n) picks the figure shown, the
    first by experiment name. A sanity check: Gibbs' inequality makes it true by construction."""
    claim = Claim(
        "entropy_in_bounds",
        "The entropy of the attention weights lies in [0, log n] for every trial.",
        statement="information",
        number="extreme over trials",
        role="sanity",
        regime="every trial of every kind, all parameters",
        reason="docs/science.md §3.1 (Gibbs' inequality: true for any weights)",
        compared_to="the bound H / log n <= 1, with H >= 0; measured: the largest H / log n of any "
        "trial, smallest = the smallest H (nats) of any trial",
        threshold=f"holds if no trial has H < 0 or H / log n > 1 + {ENTROPY_ROUNDING:g} (slack for "
        "float64 rounding): a bound, so no statistical tolerance",
    )
    frames = [
        s for s in summaries.values() if {"entropy_min", "entropy_max", "n"} <= set(s.columns)
    ]
    if not frames:
        return claim
    columns = ["experiment", "entropy_min", "entropy_max", "n", "n_trials"]
    rows = pd.concat([s[[c for c in columns if c in s]] for s in frames], ignore_index=True)
    claim.based_on(rows)
    shown = sorted(
        (name, figure) for name, figure in (figures or {}).items() if figure and name in summaries
    )
    claim.figure = f"{shown[0][0]}/{shown[0][1]}" if shown else ""
    low = float(rows["entropy_min"].min())
    high = float((rows["entropy_max"] / np.log(rows["n"].to_numpy(float))).max())
    count = int(rows["n_trials"].sum())
    claim.sanity_bound(
        high,
        1 + ENTROPY_ROUNDING,
        "below",
        f"{count:,} trials; smallest H = {low:.3g} nats, largest H / log n = {high:.15g}",
    )
    claim.bound = 1.0
    claim.ci_low, claim.ci_high = low, high
    if low < 0:
        claim.verdict = "fails"
    return claim
