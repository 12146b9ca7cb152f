"""The claims engine: kinds declare claims, the engine judges them (docs/science.md §7.4).

A claim is a declaration plus a measure. The declaration (`ClaimSpec`, frozen, written before any
data) says what is claimed, where theory makes the prediction (`Regime`, with its reason), the
rule that decides (`Equivalence`, `OneSided`, `PerPoint`, `Sanity`, `SanityRange`, each with its
reason), the alternative it would detect (`Alternative`: a competing value or named theory, with
its reason; none only for a sanity check) and the budget it was judged at. The measure is a
function from the regime's summary rows to an `Estimate` (value, SE, 95% confidence interval,
what the number is). `judge(spec, rows)` selects the regime, measures, applies the rule and
returns an immutable `ClaimResult`. No kind sets a verdict or writes evidence after the engine:
the evidence sentence is the spec's `describe(estimate)`, from the estimate's facts.
Reading the store and running every kind's claims is `attnsim.report.claims` (`evaluate`),
rendering `attnsim.report.claims_render`.

Roles: `evidence` (the essay's claims, judged by data that could have come out otherwise) and
`sanity` (true by construction: it fails only through a bug). Shown and counted apart. An
evidence claim's outcome is `open` when it declares a plausible alternative (a value or theory
the data could have supported instead); without one it would be `near-certain`, but `ClaimSpec`
refuses an evidence claim without an alternative.

Verdicts (`VERDICTS`):
- `holds`: equivalence (TOST): the 95% interval lies inside [predicted - tol, predicted + tol];
  one-sided: the whole interval is on the claimed side of the bound; sanity: no trial breaks it;
- `fails`: the interval lies entirely outside the band (or on the other side), a bound is broken;
- `inconclusive`: the interval straddles a band edge (or is missing): the data cannot tell;
- `outside regime`: the sweep measured the kind but no point lies in the claim's regime;
- `not measured`: the config has no experiment of the kind, or none of the rows the claim's
  regime declares as measuring it (`Regime.measured`: e.g. no run of its optimiser);
- `not predicted`: the theory has no law for the claim's subject (a property of its record is
  `Unknown`, attnsim.subjects): declared with the rule `NotPredicted`, whatever the data.
`detectable` is the deciding interval's half-width; `power` the probability that the rule gives
`fails` were the alternative's value true (at the estimate's SE); `min_detectable` the deviation
from the band's edge the rule would detect with 80% power.

Invariance: `canonical_rows` makes the rows a claim sees independent of experiment order and
names: one row per point (a point measured by several experiments is taken from the one with
the most trials: streams depend only on the point, so its trials contain the others'; equal
counts are the same trials), sorted by the point's parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from types import MappingProxyType

import numpy as np
import pandas as pd

from attnsim.claims.distance import to_decide
from attnsim.claims.power import Design, VarianceModel, check_alternative, design_from_plan
from attnsim.claims.power import role as power_role
from attnsim.stats import Z80, Z95, mean_ci, t_quantile

VERDICTS = ("holds", "fails", "inconclusive", "outside regime", "not measured", "not predicted")
ROLES = ("evidence", "check", "sanity")  # declared: a test, a check (no power by design), true
# by construction; the result's `test_role` is fixed from the design before the data (claims.power)
SIDES = ("above", "below")
TAILS = ("light", "heavy")  # a statistic's tails: heavy ones have no normal variance model
OUTCOMES = ("open", "near-certain")  # an evidence claim's outcome before the data; "" for sanity
TRIALS_COLUMN = "point_trials"  # a per-point estimate's column of each point's trials
CONDITION_VALUES = 4  # a categorical parameter's values listed in a claim's condition
ENTROPY_ROUNDING = 1e-12  # relative slack on H <= log n for floating-point rounding


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
    "normalisers": "Attention and softmax really are meant for each other: the arguments above "
    "rest on properties of softmax that the normalisers proposed instead (sigmoid, SSMax, "
    "soft-capping, a sink, softpick, sparsemax, entmax, ReLU) keep or lose one by one "
    "(docs/science.md §12).",
}
STATEMENT_TITLES = {
    "robustness": "Robustness to noise on the logits",
    "information": "Entropy of the weights and the gradient at initialisation",
    "temperature": "Temperature bounds the entropy of cosine attention",
    "normalisers": "Which of the arguments are specific to softmax",
}

# What a claim's headline number (`measured`) is; each rendering labels it so.
NUMBER_KINDS = (
    "mean (95% CI)",  # a mean over points or trials with its 95% interval
    "fitted slope (95% CI)",  # a fitted exponent with its 95% interval
    "range over points",  # measured = the point farthest from the prediction; value_min/max
    "extreme over trials",  # the smallest/largest single trial
    "onset",  # a parameter value from which on something holds
    "share of points",  # a fraction of the points in the regime
    "rank correlation (95% CI)",
)
CI_NUMBERS = ("mean (95% CI)", "fitted slope (95% CI)", "rank correlation (95% CI)")


# --- the declaration -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Regime:
    """Where theory makes the prediction: `text` in a reader's words, `reason` ("docs/science.md
    §x.y: why"), `select` rows -> boolean mask. `measured` (rows -> boolean mask, optional): the
    rows that measure what the claim is about at all (e.g. its optimiser's runs); with none of
    them the verdict is `not measured` (the sweep did not measure it), with some but none in
    `select` it is `outside regime`. Without `measured`, any row of the kind measures it."""

    text: str
    reason: str
    select: Callable[[pd.DataFrame], pd.Series]
    measured: Callable[[pd.DataFrame], pd.Series] | None = None


# A deciding interval's replacement (low, high, n) -> (low, high): a sequential design's look
# widens each 95% interval (claims.sequential); None decides on the intervals as measured.
Interval = Callable[[float, float, int], tuple[float, float]]


def _deciding(low: float, high: float, n: int, interval: Interval | None) -> tuple[float, float]:
    return (low, high) if interval is None else interval(low, high, n)


@dataclass(frozen=True)
class Equivalence:
    """Holds when the 95% interval lies inside predicted ± tolerance (TOST)."""

    predicted: float
    tolerance: float
    reason: str

    def verdict(self, low: float, high: float) -> str:
        return equivalence_verdict(low, high, self.predicted, self.tolerance)

    def decide(self, estimate: Estimate, interval: Interval | None = None) -> str:
        return self.verdict(*_deciding(estimate.ci_low, estimate.ci_high, estimate.n, interval))

    def power(self, alternative: float, se: float) -> float:
        """P(the interval lies entirely outside the band) were the truth `alternative`."""
        if not (math.isfinite(se) and se > 0 and math.isfinite(alternative)):
            return math.nan
        upper = self.predicted + self.tolerance
        lower = self.predicted - self.tolerance
        return _phi((alternative - upper) / se - Z95) + _phi((lower - alternative) / se - Z95)

    def threshold(self) -> str:
        return (
            f"95% interval inside {_num(self.predicted)} ± {_num(self.tolerance)} "
            f"(equivalence): {self.reason}"
        )


@dataclass(frozen=True)
class OneSided:
    """Holds when the whole 95% interval is on `side` of `bound`; fails when it is entirely on
    the other side."""

    bound: float
    side: str
    reason: str

    def __post_init__(self):
        _check_side(self.side)

    def verdict(self, low: float, high: float) -> str:
        return one_sided_verdict(low, high, self.bound, self.side)

    def decide(self, estimate: Estimate, interval: Interval | None = None) -> str:
        return self.verdict(*_deciding(estimate.ci_low, estimate.ci_high, estimate.n, interval))

    def power(self, alternative: float, se: float) -> float:
        """P(the interval lies entirely on the wrong side) were the truth `alternative`."""
        if not (math.isfinite(se) and se > 0 and math.isfinite(alternative)):
            return math.nan
        sign = 1.0 if self.side == "above" else -1.0
        return _phi(sign * (self.bound - alternative) / se - Z95)

    def threshold(self) -> str:
        return f"whole 95% interval {self.side} {_num(self.bound)}: {self.reason}"


@dataclass(frozen=True)
class PerPoint:
    """Every point judged by the inner rule: fails if any fails, inconclusive if any is (and none
    fails), holds if all hold. The estimate's `points` frame has value, ci_low, ci_high, se."""

    rule: Equivalence | OneSided

    @property
    def reason(self) -> str:
        return self.rule.reason

    def threshold(self) -> str:
        return "at every point, " + self.rule.threshold()

    def point_verdicts(self, estimate: Estimate, interval: Interval | None = None) -> list[str]:
        """Each point's verdict by the inner rule (its interval through `interval` first, with the
        point's trials as its n)."""
        points = estimate.points
        if points is None or points.empty:
            return []
        lows, highs = points["ci_low"].astype(float), points["ci_high"].astype(float)
        trials = points[TRIALS_COLUMN] if TRIALS_COLUMN in points else [0] * len(points)
        return [
            self.rule.verdict(*_deciding(lo, hi, int(n), interval))
            for lo, hi, n in zip(lows, highs, trials)
        ]

    def decide(self, estimate: Estimate, interval: Interval | None = None) -> str:
        """Fails if any point fails, inconclusive if any is (or there is none), else holds."""
        return combine_verdicts(self.point_verdicts(estimate, interval))


@dataclass(frozen=True)
class Sanity:
    """A bound checked on every trial: holds when the extreme (`value`) is on `side` of `bound` or
    on it; no interval, so never inconclusive."""

    bound: float
    side: str
    reason: str = ""

    def __post_init__(self):
        _check_side(self.side)

    def verdict(self, estimate: Estimate) -> str:
        value = estimate.value
        if math.isnan(value):
            return "inconclusive"
        inside = value <= self.bound if self.side == "below" else value >= self.bound
        return "holds" if inside else "fails"

    def decide(self, estimate: Estimate, interval: Interval | None = None) -> str:
        return self.verdict(estimate)  # a bound on every trial: no interval to widen

    def threshold(self) -> str:
        text = f"no trial {'above' if self.side == 'below' else 'below'} {_num(self.bound)}"
        return text + (f": {self.reason}" if self.reason else "")


@dataclass(frozen=True)
class SanityRange:
    """Two-sided bounds checked on every trial: holds when the estimate's range lies within
    [low, high]."""

    low: float
    high: float
    reason: str = ""

    def verdict(self, estimate: Estimate) -> str:
        lo, hi = estimate.range_min, estimate.range_max
        if math.isnan(lo) or math.isnan(hi):
            return "inconclusive"
        return "holds" if self.low <= lo and hi <= self.high else "fails"

    def decide(self, estimate: Estimate, interval: Interval | None = None) -> str:
        return self.verdict(estimate)

    def threshold(self) -> str:
        text = f"every trial within [{_num(self.low)}, {_num(self.high)}]"
        return text + (f": {self.reason}" if self.reason else "")


@dataclass(frozen=True)
class NotPredicted:
    """No rule: the theory makes no prediction for the claim's subject (`reason`: which property
    is unknown). The claim is listed, so a reader sees what is missing, and judged `not
    predicted` whatever the data."""

    reason: str

    def decide(self, estimate: Estimate, interval: Interval | None = None) -> str:
        return "not predicted"

    def threshold(self) -> str:
        return f"no prediction: {self.reason}"


Rule = Equivalence | OneSided | PerPoint | Sanity | SanityRange | NotPredicted


@dataclass(frozen=True)
class Subject:
    """What a claim is about when it is declared for one value of a grid parameter among several:
    the parameter (`what`: "normaliser", "noise", "format", "optimiser", ...) and the value
    (`name`). The report groups claims by it (the verdict matrix per normaliser)."""

    what: str
    name: str


@dataclass(frozen=True)
class Alternative:
    """What would have made the claim fail: a competing `value` of the statistic (nan when the
    competitor is a named theory without one number) and the `reason` it is plausible."""

    text: str
    value: float
    reason: str


@dataclass(frozen=True)
class Estimate:
    """What a measure returns. `value` is the headline number, `number` what it is (NUMBER_KINDS);
    `ci_low`/`ci_high` a 95% CONFIDENCE interval or nan; `range_min`/`range_max` a range over
    points or trials (not a confidence interval); `n` and `unit` the sample behind `se`; `points`
    for PerPoint rules; `facts` for the evidence sentence."""

    value: float
    number: str
    se: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0
    unit: str = ""
    points: pd.DataFrame | None = field(default=None, compare=False)
    range_min: float = math.nan
    range_max: float = math.nan
    facts: Mapping = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        if self.number not in NUMBER_KINDS:
            raise ValueError(f"estimate: number must be one of {NUMBER_KINDS}, got {self.number!r}")
        object.__setattr__(self, "facts", MappingProxyType(dict(self.facts)))


@dataclass(frozen=True)
class ClaimSpec:
    """A claim declared before the data (see the module docstring)."""

    claim_id: str
    statement: str
    text: str
    role: str
    regime: Regime
    rule: Rule
    measure: Callable[[pd.DataFrame], Estimate]
    alternative: Alternative | None = None
    compared_to: str = ""
    budget: str = ""
    figure: str = ""
    describe: Callable[[Estimate], str] | None = None
    # facts about all of the kind's rows (in the regime or not) for the evidence sentence only,
    # e.g. how the statistic behaves outside the regime; never read by the rule
    context: Callable[[pd.DataFrame], Mapping] | None = None
    subject: Subject | None = None
    family: str = ""  # the claim family (declared alike per subject); "" is the claim's own id
    axis: str = ""  # the parameter the claim is judged along; "" when none (ClaimResult.axis)
    # the per-trial SD of the statistic fixed before the run (theory or an independent pilot):
    # with the planned points and trials it gives the design power (claims.power)
    variance: VarianceModel | None = None
    # between the points' estimates (shared draws), for per-point rules; None: not declared, and
    # the union's design power is its best point's (a bound whatever the dependence)
    correlation: float | None = None
    tails: str = "light"  # "heavy": means carried by rare events; decide refuses them (§7.8)
    redeclared_from: str = ""  # previous verdict, regime and commit of a re-declared claim
    # the thin-evidence rule (e.g. fewer than 4 scales or 32 runs per scale for a fitted law):
    # the estimate -> why it is thin, "" when it is not (ClaimResult.thin)
    thin: Callable[[Estimate], str] | None = None

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"claim {self.claim_id}: role must be one of {ROLES}")
        if self.statement not in STATEMENTS:
            raise ValueError(f"claim {self.claim_id}: unknown statement {self.statement!r}")
        if self.tails not in TAILS:
            raise ValueError(f"claim {self.claim_id}: tails must be one of {TAILS}")
        sanity_rule = isinstance(self.rule, Sanity | SanityRange)
        if sanity_rule and self.role != "sanity":
            raise ValueError(f"claim {self.claim_id}: a Sanity rule is for sanity checks")
        predicted = not isinstance(self.rule, NotPredicted)
        if self.role == "evidence" and self.alternative is None and predicted:
            raise ValueError(f"claim {self.claim_id}: an evidence claim declares its alternative")
        if self.role == "evidence" and predicted:
            value = self.alternative.value if self.alternative is not None else math.nan
            check_alternative(self.claim_id, self.rule, value)

    @property
    def reason(self) -> str:
        return self.regime.reason

    def __call__(self, rows: pd.DataFrame | None) -> ClaimResult:
        """`judge(self, rows)`: a spec is called on the kind's rows like any claim function."""
        return judge(self, rows)


# --- the result ----------------------------------------------------------------------------------


def described(default, description: str):
    """A field of the result record that is a column of results/claims.parquet: its default and
    what it holds (the Parquet schema's description, docs/results-schema.md)."""
    return field(default=default, metadata={"description": description})


@dataclass(frozen=True)
class ClaimResult:
    """One judged claim: the row of results/claims.parquet. Each field is a column, in this order,
    typed by its annotation (str, int, float; a missing number is NaN here and null in the file)
    and described by its metadata: the file's schema is derived from this record
    (`report.claims.SCHEMA`), so a new column is one field here."""

    claim_id: str = described("", "short stable id of the claim")
    claim: str = described("", "the claim in one sentence")
    condition: str = described(
        "",
        "the values the claim was judged at: each parameter's range (or values) over the "
        "regime's points, as measured; empty when nothing was judged",
    )
    statement: str = described(
        "", "which of the essay's statements it tests: " + ", ".join(STATEMENTS)
    )
    number: str = described("", "what `measured` is, one of: " + "; ".join(NUMBER_KINDS))
    compared_to: str = described(
        "",
        "what `predicted` is (or what the measurement is compared with), then what `measured` is",
    )
    threshold: str = described("", "the tolerance or threshold that decided the verdict, and why")
    figure: str = described(
        "",
        "the figure that shows it, <experiment>/<figure>: "
        "results/figures/<experiment>/<figure>.png",
    )
    experiments: str = described("", "the experiments it rests on, comma-separated")
    points: int = described(0, "grid points it rests on")
    trials: int = described(0, "trials it rests on")
    predicted: float = described(
        math.nan,
        "the theory's value the verdict is about (the centre of the tolerance band); null when "
        "nothing is predicted",
    )
    measured: float = described(
        math.nan,
        "the headline number, labelled by `number`: a mean, fitted slope or rank correlation, the "
        "point farthest from the prediction (a range), the extreme trial, a share or an onset",
    )
    ci_low: float = described(
        math.nan,
        "lower end of the 95% confidence interval of `measured`; null when none was computed (a "
        "range, an extreme, an onset)",
    )
    ci_high: float = described(math.nan, "upper end of the 95% confidence interval; null when none")
    value_min: float = described(
        math.nan,
        "smallest value of a range over points or trials (not a confidence interval); null when "
        "the number is not a range",
    )
    value_max: float = described(math.nan, "largest value of that range; null when none")
    rel_deviation: float = described(math.nan, "(measured - predicted) / |predicted|")
    verdict: str = described(
        "not measured", "one of: " + ", ".join(VERDICTS) + " (docs/science.md §7.4)"
    )
    evidence: str = described("", "what the numbers are: points, experiments, the worst case")
    role: str = described(
        "evidence",
        "one of: " + ", ".join(ROLES) + " (sanity: true by construction, counted apart)",
    )
    regime: str = described("", "where theory makes the prediction, fixed before the data")
    reason: str = described("", "the docs/science.md section the regime and tolerance come from")
    tolerance: float = described(
        math.nan, "half-width of the band around `predicted` (equivalence claims); null otherwise"
    )
    bound: float = described(
        math.nan, "the bound a one-sided or sanity claim is compared with; null otherwise"
    )
    side: str = described(
        "", "which side of `bound` the claim is on: " + " or ".join(SIDES) + "; empty otherwise"
    )
    detectable: float = described(
        math.nan,
        "half-width of the deciding 95% interval: the smallest deviation the data could have "
        "detected, to read against `tolerance`",
    )
    alternative: str = described(
        "",
        "what would have made the claim fail (a competing value or named theory) and why it is "
        "plausible; empty for sanity checks",
    )
    alternative_value: float = described(
        math.nan, "the alternative's value of the statistic; null if none"
    )
    power: float = described(
        math.nan,
        "probability that the rule gives `fails` were `alternative_value` true, at the "
        "measurement's standard error; null without both",
    )
    min_detectable: float = described(
        math.nan,
        "the deviation beyond the tolerance band (or bound) the rule detects with 80% power: "
        "(z_0.975 + z_0.8) x SE",
    )
    outcome: str = described(
        "",
        "an evidence claim's outcome before the data: "
        + " or ".join(OUTCOMES)
        + " (open: it declares a plausible alternative); empty for sanity checks",
    )
    budget: str = described(
        "",
        "the training budget it was judged at and whether the verdict could flip with it; empty "
        "when no budget matters",
    )
    n: int = described(0, "the sample size behind the standard error (see `unit`)")
    unit: str = described("", "what `n` counts: trials, runs, heads, rows, points")
    needed: int = described(
        0,
        "inconclusive: the sample size (in `needed_unit`) at which the interval would decide at "
        "the current effect and variance; 0 when more data cannot decide it (docs/science.md "
        "§7.6)",
    )
    needed_unit: str = described("", "what `needed` counts: trials per point, heads, points")
    to_decide: str = described("", "inconclusive: what would decide it, and at which points")
    unjudged: int = described(
        0,
        "points of the regime the claim could not judge: a statistic its measure read is NaN "
        "there (a metric the kind declares non-finite, NaN at every trial); the verdict rests on "
        "the other points, the evidence names the columns",
    )
    subject: str = described(
        "",
        "what the claim is about, when it is declared for one value of a parameter among several "
        "(a normaliser, a noise family, a format, an optimiser); empty otherwise",
    )
    subject_type: str = described(
        "", "the parameter `subject` is a value of (normaliser, noise, format, ...); empty if none"
    )
    family: str = described(
        "",
        "the claim family: the claims declared alike for each subject share it (the rows of the "
        "verdict matrix); a claim of its own is its own family",
    )
    axis: str = described(
        "",
        "the parameter along which the claim is judged (a rate in n, an exponent in the logit "
        "scale); empty when it judges each point apart or one pooled number",
    )
    design_power: float = described(
        math.nan,
        "probability that the rule gives `fails` were `alternative_value` true, at the design "
        "(planned points and trials, the declared variance model), computed before any row of "
        "the run is read; what makes it an open test (>= 0.8) or a check; null for sanity",
    )
    design_se: float = described(
        math.nan,
        "the design's standard error of the statistic (the largest over points); null for sanity",
    )
    test_role: str = described(
        "",
        "the role fixed before the data: open test (design power >= 0.8), check (could not have "
        "failed: lower power, or no alternative with a number) or sanity (true by construction)",
    )
    role_text: str = described(
        "", "why the claim has its role, e.g. 'could not have failed: power 0.03 against ...'"
    )
    level: float = described(
        math.nan,
        "the coverage the verdict's interval controls: 0.95 for a single look, the confidence "
        "sequence's level under `attnsim decide`'s sequential design",
    )
    design: str = described(
        "",
        "the design the verdict was judged under: single look, or sequential (decide's design "
        "record: its looks so far and planned)",
    )
    redeclared_from: str = described(
        "",
        "for a claim re-declared from theory this release: its previous verdict, regime and the "
        "commit it was judged at; empty otherwise",
    )
    thin: str = described(
        "",
        "why the evidence is thin by the declared rule (fewer than 4 scales or 32 runs per scale "
        "for a fitted law); empty otherwise",
    )

    @property
    def is_open(self) -> bool:
        return self.outcome == "open"


# --- judging -------------------------------------------------------------------------------------


def judge(
    spec: ClaimSpec,
    rows: pd.DataFrame | None,
    params: tuple[str, ...] = (),
    interval: Interval | None = None,
    planned: pd.DataFrame | None = None,
) -> ClaimResult:
    """Select the regime, measure, apply the rule: the claim's immutable result. `params`, the
    kind's parameters, make its `condition` (their values over the regime's rows); `interval`,
    a sequential design's widening of each deciding interval (`report.designs`), None for a
    single look. `planned` (`planned_rows`: the planned points' parameters and trials, no
    measured column) gives the claim's design and role before any row is read (`design_role`)."""
    base = replace(declared(spec), **design_role(spec, planned, params))
    if isinstance(spec.rule, NotPredicted):
        return replace(base, verdict="not predicted")
    if rows is None or (
        spec.regime.measured is not None
        and not (len(rows) and _mask(spec.regime.measured, rows).any())
    ):
        return base
    selected = rows[_mask(spec.regime.select, rows)] if len(rows) else rows
    if selected.empty:
        return replace(base, verdict="outside regime")
    reading = _Reading(selected)
    reading.columns_read = set()
    estimate = spec.measure(reading)
    unjudged = _unjudged(selected, reading.columns_read)
    if spec.context is not None:
        facts = {**estimate.facts, "context": spec.context(rows)}
        estimate = replace(estimate, facts=facts)
    base = replace(base, **_rests_on(selected, spec.figure), condition=condition(selected, params))
    result = replace(base, **_apply(spec, estimate, interval))
    if spec.thin is not None:
        result = replace(result, thin=spec.thin(estimate))
    if unjudged:
        result = replace(result, unjudged=unjudged[0], evidence=_with_unjudged(result, unjudged))
    return (
        replace(result, **_distance(spec, estimate)) if result.verdict == "inconclusive" else result
    )


# the summary's statistics of a metric: a NaN there is a point the measure could not judge (a
# kind's declared non-finite metric, NaN at every trial of the point)
STATISTICS = ("_mean", "_se", "_ci_low", "_ci_high", "_min", "_max")


class _Reading(pd.DataFrame):
    """The regime's rows, noting each column a measure reads by name (`rows["x"]`, `rows.x`,
    `rows[["x", "y"]]`, on the rows or any selection of them): the engine then counts the points
    whose statistics it read are NaN, which pandas' reductions skip without a word."""

    _metadata = ["columns_read"]
    columns_read: set[str]

    @property
    def _constructor(self):
        return _Reading

    def __getitem__(self, key):
        read = self.__dict__.get("columns_read")
        if read is not None:
            if isinstance(key, str):
                read.add(key)
            elif isinstance(key, list):
                read.update(k for k in key if isinstance(k, str))
        return super().__getitem__(key)


def _unjudged(rows: pd.DataFrame, read: set[str]) -> tuple[int, list[str]] | None:
    """(points, columns): how many of `rows` hold NaN in a statistic column the measure read,
    and which columns; None when none."""
    columns = sorted(
        c
        for c in read
        if c in rows.columns and c.endswith(STATISTICS) and pd.api.types.is_float_dtype(rows[c])
    )
    if not columns:
        return None
    missing = rows[columns].isna()
    points = int(missing.any(axis=1).sum())
    return (points, [c for c in columns if missing[c].any()]) if points else None


def _with_unjudged(result: ClaimResult, unjudged: tuple[int, list[str]]) -> str:
    points, columns = unjudged
    note = (
        f"{points:,} of the regime's {result.points:,} points not judged: "
        f"{', '.join(columns)} NaN there"
    )
    return f"{result.evidence}; {note}" if result.evidence else note


def _distance(spec: ClaimSpec, estimate: Estimate) -> dict:
    """What would decide an inconclusive claim at its current effect and variance."""
    found = to_decide(spec.rule, estimate)
    if found is None:
        return {}
    return {"needed": found.count, "needed_unit": found.unit, "to_decide": found.text()}


# the planned rows' columns besides the parameters: each point's planned trials (the most its
# experiment gives it) and target SE (NaN for a fixed experiment), from the experiment's
# TrialSettings, never from the rows measured
PLANNED_TRIALS, PLANNED_TARGET = "planned_trials", "planned_target_se"
PLANNED_FEWEST = "planned_fewest"  # the trials a point is sure to get (one round, if adaptive)
PLANNED = (PLANNED_TRIALS, PLANNED_FEWEST, PLANNED_TARGET)


def planned_rows(plans: list[pd.DataFrame], params: tuple[str, ...]) -> pd.DataFrame | None:
    """One row per planned point from each experiment's plan (its points' parameters and the
    theory's columns, functions of them, with the PLANNED columns): a point planned
    by several experiments keeps the plan with the most trials (as `canonical_rows` keeps the
    measurement with the most), sorted by the point's parameters. None without a plan."""
    if not plans:
        return None
    rows = pd.concat(plans, ignore_index=True)
    keys = [p for p in params if p in rows]
    if keys:
        order = keys + [PLANNED_TRIALS]
        rows = rows.sort_values(order, ascending=[True] * len(keys) + [False], kind="stable")
        rows = rows.drop_duplicates(keys, keep="first", ignore_index=True)
    return rows.reset_index(drop=True)


def planned_design(
    spec: ClaimSpec, planned: pd.DataFrame | None, params: tuple[str, ...]
) -> tuple[Design | None, str]:
    """The claim's design from the plan alone: its regime applied to the planned points (their
    parameters and the theory's columns: a regime is a condition on them), each point's planned
    trials or target SE and the declared variance model and correlation
    (`power.design_from_plan`); (None, why) when there is none. A regime that reads a column
    beyond them (a clean input such as the weights' sum p^2, or a measured one) cannot select
    planned points: a per-point rule is then designed at the single planned point with the
    fewest trials (its union's power is at least that point's), a single estimate at the fewest
    trials of all planned points; neither reads a measured number."""
    if spec.variance is None:
        return None, "no variance model declared"
    if planned is None or planned.empty:
        return None, "no planned point"
    per_point = isinstance(spec.rule, PerPoint)
    try:
        mask = _mask(spec.regime.select, planned.drop(columns=[*PLANNED]))
        chosen, note = planned[mask.to_numpy()], ""
    except (KeyError, AttributeError):
        if spec.variance.per == "point" and not per_point:
            return None, "its regime reads more than the parameters"
        fewest = planned.sort_values(PLANNED_TRIALS, kind="stable")
        chosen = fewest.iloc[:1] if per_point else planned
        note = "; regime reads more than the parameters: " + (
            "designed at the planned point with the fewest trials"
            if per_point
            else "designed at the fewest planned trials"
        )
    if chosen.empty:
        return None, "no planned point in its regime"
    try:
        design = design_from_plan(
            spec.variance,
            chosen[PLANNED_TRIALS].to_numpy(float),
            chosen[PLANNED_TARGET].to_numpy(float),
            per_point,
            spec.correlation,
            chosen[PLANNED_FEWEST].to_numpy(float),
        )
    except ValueError as error:
        return None, str(error)
    return replace(design, text=design.text + note), ""


def design_role(spec: ClaimSpec, planned: pd.DataFrame | None, params: tuple[str, ...]) -> dict:
    """The result's role fields (`design_power`, `design_se`, `test_role`, `role_text`) from the
    declaration and the plan (`planned_design`, `power.role`): fixed before the data."""
    design, missing = (None, "") if spec.role == "sanity" else planned_design(spec, planned, params)
    found = power_role(spec, design, missing)
    text = found.text + (f" [{design.text}]" if design is not None and design.text else "")
    return {
        "design_power": found.design_power,
        "design_se": found.design_se,
        "test_role": found.role,
        "role_text": text,
    }


def declared(spec: ClaimSpec) -> ClaimResult:
    """The claim before any data (verdict `not measured`): every declared field."""
    rule = spec.rule.rule if isinstance(spec.rule, PerPoint) else spec.rule
    alternative = spec.alternative
    return ClaimResult(
        claim_id=spec.claim_id,
        claim=spec.text,
        statement=spec.statement,
        compared_to=spec.compared_to,
        threshold=spec.rule.threshold(),
        role=spec.role,
        regime=spec.regime.text,
        reason=spec.regime.reason,
        predicted=getattr(rule, "predicted", math.nan),
        tolerance=getattr(rule, "tolerance", math.nan),
        bound=getattr(rule, "bound", getattr(rule, "high", math.nan)),
        side=getattr(rule, "side", "below" if isinstance(rule, SanityRange) else ""),
        alternative=(f"{alternative.text} ({alternative.reason})" if alternative else ""),
        alternative_value=alternative.value if alternative else math.nan,
        outcome=("open" if alternative else "near-certain") if spec.role == "evidence" else "",
        budget=spec.budget,
        subject=spec.subject.name if spec.subject else "",
        subject_type=spec.subject.what if spec.subject else "",
        family=spec.family or spec.claim_id,
        axis=spec.axis,
        redeclared_from=spec.redeclared_from,
    )


def condition(rows: pd.DataFrame, params: tuple[str, ...]) -> str:
    """The values a claim was judged at: per parameter of `params` in `rows`, its range
    ("n 64–4096") or its values ("normaliser sigmoid"), a few listed and the rest counted."""
    parts = []
    for name in params:
        if name not in rows:
            continue
        values = rows[name].dropna()
        if values.empty:
            continue
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            low, high = values.min(), values.max()
            parts.append(f"{name} {low:g}" if low == high else f"{name} {low:g}–{high:g}")
            continue
        distinct = sorted(str(v) for v in values.unique())
        shown = ", ".join(distinct[:CONDITION_VALUES])
        more = len(distinct) - CONDITION_VALUES
        parts.append(f"{name} {shown}" + (f" (+{more} more)" if more > 0 else ""))
    return "; ".join(parts)


def per_subject(family: str, what: str, name: str) -> dict:
    """The id, subject and family of the claim `family` declares for the value `name` of the
    parameter `what` (`<family>_<name>`): the fields every per-subject claim shares."""
    return {"claim_id": f"{family}_{name}", "subject": Subject(what, name), "family": family}


def not_predicted(
    family: str, what: str, name: str, statement: str, reason: str, **fields
) -> ClaimSpec:
    """The claim `family` declares for a subject whose law is missing (`NotPredicted`): listed
    with the reason, judged `not predicted` whatever the data."""
    return ClaimSpec(
        **per_subject(family, what, name),
        statement=statement,
        text=f"No prediction for {name}: {reason}.",
        role="evidence",
        regime=Regime("none: nothing is predicted", reason, lambda rows: rows.index < 0),
        rule=NotPredicted(reason),
        measure=lambda rows: Estimate(math.nan, "mean (95% CI)"),
        **fields,
    )


def _apply(spec: ClaimSpec, e: Estimate, interval: Interval | None = None) -> dict:
    rule = spec.rule
    out = {
        "number": e.number,
        "measured": float(e.value),
        "ci_low": float(e.ci_low),
        "ci_high": float(e.ci_high),
        "value_min": float(e.range_min),
        "value_max": float(e.range_max),
        "n": int(e.n),
        "unit": e.unit,
        "evidence": _evidence(spec, e),
    }
    out["verdict"] = rule.decide(e, interval)
    if isinstance(rule, Sanity | SanityRange):
        return out
    alternative = spec.alternative.value if spec.alternative else math.nan
    if isinstance(rule, PerPoint):
        out |= _per_point(rule.rule, e, alternative)
    elif isinstance(rule, Equivalence | OneSided):
        out["detectable"] = half_width(e.ci_low, e.ci_high)
        out["power"] = rule.power(alternative, e.se)
        out["min_detectable"] = (Z95 + Z80) * e.se if math.isfinite(e.se) else math.nan
    predicted = getattr(rule.rule if isinstance(rule, PerPoint) else rule, "predicted", math.nan)
    if math.isfinite(predicted) and predicted:
        out["rel_deviation"] = (float(e.value) - predicted) / abs(predicted)
    return out


def _evidence(spec: ClaimSpec, e: Estimate) -> str:
    """The evidence sentence: for a PerPoint rule the engine's tally of the points and the worst
    one, then the spec's `describe` (facts, no verdict words)."""
    described = spec.describe(e) if spec.describe else ""
    if not isinstance(spec.rule, PerPoint):
        return described
    head = f"{point_counts(spec.rule, e)}, worst {e.value:.4g}"
    return head + (
        f" {described}" if described.startswith("at ") else f"; {described}" if described else ""
    )


def _per_point(rule: Equivalence | OneSided, e: Estimate, alternative: float) -> dict:
    points = e.points
    if points is None or points.empty:
        return {}
    lows, highs = points["ci_low"].astype(float), points["ci_high"].astype(float)
    halves = [half_width(lo, hi) for lo, hi in zip(lows, highs)]
    se = points["se"].astype(float) if "se" in points else pd.Series(np.nan, index=points.index)
    misses = [1 - rule.power(alternative, s) for s in se]
    power = 1 - float(np.prod(misses)) if not any(math.isnan(m) for m in misses) else math.nan
    widest = float(se.max()) if se.notna().any() else math.nan
    return {
        "detectable": max(halves) if halves else math.nan,
        "power": power,
        "min_detectable": (Z95 + Z80) * widest,
    }


def regime_rows(spec: ClaimSpec, rows: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of `spec`'s regime; None when there are none (or no rows at all)."""
    if rows is None or not len(rows):
        return None
    selected = rows[_mask(spec.regime.select, rows)]
    return None if selected.empty else selected


def decide_with(spec: ClaimSpec, rows: pd.DataFrame | None, interval: Interval) -> str:
    """The verdict of `spec`'s rule on its regime's rows with every deciding interval replaced by
    `interval(low, high, n)` (n: the point's trials, or the estimate's n): a sequential design's
    look (`claims.sequential.judge_at`). Inconclusive without rows in the regime."""
    selected = regime_rows(spec, rows)
    if selected is None:
        return "inconclusive"
    return spec.rule.decide(spec.measure(selected), interval)


def _rests_on(rows: pd.DataFrame, figure: str) -> dict:
    experiments = sorted(rows["experiment"].unique()) if "experiment" in rows else []
    return {
        "experiments": ", ".join(experiments),
        "points": len(rows),
        "trials": int(rows["n_trials"].sum()) if "n_trials" in rows else 0,
        "figure": f"{experiments[0]}/{figure}" if figure and experiments else "",
    }


def _mask(select, rows: pd.DataFrame) -> pd.Series:
    mask = select(rows)
    return pd.Series(mask, index=rows.index).astype(bool)


# --- the rules as functions ----------------------------------------------------------------------


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


def one_sided_verdict(low: float, high: float, bound: float, side: str) -> str:
    """holds: [low, high] entirely on `side` of `bound`; fails: entirely on the other side;
    inconclusive: it contains the bound, or no interval."""
    if any(math.isnan(x) for x in (low, high, bound)) or low > high:
        return "inconclusive"
    above, below = low > bound, high < bound
    if above or below:
        return "holds" if (above if side == "above" else below) else "fails"
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


def half_width(low: float, high: float) -> float:
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.inf if not (math.isnan(low) or math.isnan(high)) else math.nan
    return (high - low) / 2


def _phi(x: float) -> float:
    return NormalDist().cdf(x)


def _check_side(side: str) -> None:
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")


def _num(x: float) -> str:
    return f"{x:g}"


# --- estimates the measures share ----------------------------------------------------------------


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
            nan = math.nan
            return {"mean": float(values[0]), "se": nan, "ci_low": nan, "ci_high": nan}
        half = Z95 * own
        mean = float(values[0])
        return {"mean": mean, "se": own, "ci_low": mean - half, "ci_high": mean + half}
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


def pooled_estimate(values, se=None, unit: str = "points", **facts) -> Estimate:
    """`pooled` as a "mean (95% CI)" Estimate over the given points."""
    stats = pooled(values, se)
    return Estimate(
        value=stats["mean"],
        number="mean (95% CI)",
        se=stats["se"],
        ci_low=stats["ci_low"],
        ci_high=stats["ci_high"],
        n=int(np.size(values)),
        unit=unit,
        facts=facts,
    )


def row_estimate(
    row: pd.Series, number: str, n: int, unit: str, points: pd.DataFrame, **facts
) -> Estimate:
    """The Estimate of the row of a points table (its `value`, `se`, `ci_low`, `ci_high`) that a
    claim's headline is about; the table goes along for PerPoint rules and the evidence."""
    return Estimate(
        value=float(row["value"]),
        number=number,
        se=float(row["se"]),
        ci_low=float(row["ci_low"]),
        ci_high=float(row["ci_high"]),
        n=n,
        unit=unit,
        points=points,
        facts=facts,
    )


def per_point_estimate(
    rows: pd.DataFrame,
    value,
    low,
    high,
    se=None,
    predicted: float = 1.0,
    params: tuple[str, ...] = (),
    unit: str = "points",
    **facts,
) -> Estimate:
    """The points of a PerPoint rule: each point's estimate, 95% interval and SE (column names of
    `rows` or Series over them; without an SE, the interval's half-width / z_0.975). The headline
    is the point farthest from `predicted`, the range their extremes."""
    value, low, high = (_column(rows, c) for c in (value, low, high))
    se = (high - low) / (2 * Z95) if se is None else _column(rows, se)
    points = pd.DataFrame(
        {
            "value": value.to_numpy(),
            "ci_low": low.to_numpy(),
            "ci_high": high.to_numpy(),
            "se": se.to_numpy(),
            "n": rows["n_trials"].to_numpy() if "n_trials" in rows else 0,
        }
    )
    for name in params:
        points[name] = rows[name].to_numpy()
    # the trials behind each point's SE, under a name no parameter has (a kind's `n` is a size)
    points[TRIALS_COLUMN] = rows["n_trials"].to_numpy() if "n_trials" in rows else 0
    worst = int((points["value"] - predicted).abs().to_numpy().argmax())
    return range_estimate(points, worst, unit, {"worst": points.iloc[worst].to_dict(), **facts})


def range_estimate(points: pd.DataFrame, at: int, unit: str, facts: dict) -> Estimate:
    """The Estimate of a points table (one `value` a point) whose headline is the point at
    position `at`, the one the verdict turns on; its range is the extremes over all the points,
    so the evidence shows how far the others spread."""
    return Estimate(
        value=float(points["value"].iloc[at]),
        number="range over points",
        n=len(points),
        unit=unit,
        points=points,
        range_min=float(points["value"].min()),
        range_max=float(points["value"].max()),
        facts=facts,
    )


def _column(rows: pd.DataFrame, column) -> pd.Series:
    return (
        rows[column] if isinstance(column, str) else pd.Series(column, index=rows.index)
    ).astype(float)


def point_counts(rule: PerPoint, estimate: Estimate) -> str:
    """'5 of 6 points hold (1 inconclusive)': the per-point tally for an evidence sentence (the
    estimate's fact `point_noun` names what a point is, e.g. groups of heads)."""
    points = estimate.points
    if points is None or points.empty:
        return "no point"
    count = pd.Series(rule.point_verdicts(estimate)).value_counts()
    parts = [f"{count.get(v, 0)} {v}" for v in ("fails", "inconclusive") if count.get(v, 0)]
    noun = estimate.facts.get("point_noun", "points")
    return f"{count.get('holds', 0)} of {len(points)} {noun} hold" + (
        f" ({', '.join(parts)})" if parts else ""
    )


# --- the rows a claim sees -----------------------------------------------------------------------


def canonical_rows(frames: list[pd.DataFrame], params: tuple[str, ...]) -> pd.DataFrame | None:
    """One row per point, sorted by the point's parameters: the rows every claim of a kind sees.

    A point measured by several experiments (same parameters) is taken from the one with the
    most trials: a point's random streams depend only on its parameters and the config's seed,
    so its first k trials are the same in every experiment, and the larger measurement contains
    the smaller. Equal counts are the same trials; the tie is broken by the experiment's name
    only to make the `experiment` column (the figure shown) deterministic. Experiment order and
    names never change a number."""
    if not frames:
        return None
    rows = pd.concat(frames, ignore_index=True)
    keys = [p for p in params if p in rows]
    if not keys:
        return rows.sort_values("experiment", kind="stable", ignore_index=True)
    trials = "n_trials" if "n_trials" in rows else None
    order = keys + ([trials] if trials else []) + ["experiment"]
    ascending = [True] * len(keys) + ([False] if trials else []) + [True]
    rows = rows.sort_values(order, ascending=ascending, kind="stable", ignore_index=True)
    return rows.drop_duplicates(keys, keep="first", ignore_index=True)


# --- the claim every kind shares -----------------------------------------------------------------


def _entropy_range(rows: pd.DataFrame) -> Estimate:
    ratio = rows["entropy_max"] / np.log(rows["n"].to_numpy(float))
    low = rows["entropy_min"] / np.log(rows["n"].to_numpy(float))
    return Estimate(
        value=float(ratio.max()),
        number="extreme over trials",
        range_min=float(low.min()),
        range_max=float(ratio.max()),
        n=int(rows["n_trials"].sum()),
        unit="trials",
        facts={"smallest_entropy": float(rows["entropy_min"].min())},
    )


ENTROPY_BOUNDS = ClaimSpec(
    claim_id="entropy_in_bounds",
    statement="information",
    text="The entropy of the attention weights lies in [0, log n] for every trial.",
    role="sanity",
    regime=Regime(
        "every trial of every kind, all parameters",
        "docs/science.md §3.1 (Gibbs' inequality: true for any weights)",
        lambda rows: rows["n"] > 1,
    ),
    rule=SanityRange(
        0.0,
        1 + ENTROPY_ROUNDING,
        f"a bound, so no statistical tolerance; slack {ENTROPY_ROUNDING:g} for float64 rounding",
    ),
    measure=_entropy_range,
    compared_to="the bounds 0 <= H / log n <= 1; measured: the largest H / log n of any trial, "
    "the range from the smallest to the largest",
    describe=lambda e: (
        f"{e.n:,} trials; smallest H = {e.facts['smallest_entropy']:.3g} nats, largest H / log n "
        f"= {e.value:.15g}"
    ),
)


def entropy_bounds(
    summaries: dict[str, pd.DataFrame], figures: dict[str, str] | None = None
) -> ClaimResult:
    """0 <= H <= log n on every trial of every experiment whose summary keeps the entropy's
    extremes; `figures` (experiment -> its kind's figure of H between 0 and log n) picks the
    figure shown, the first by experiment name. A sanity check: Gibbs' inequality makes it true
    by construction."""
    columns = ["experiment", "entropy_min", "entropy_max", "n", "n_trials"]
    frames = [
        s[[c for c in columns if c in s]]
        for _, s in sorted(summaries.items())
        if {"entropy_min", "entropy_max", "n"} <= set(s.columns)
    ]
    rows = pd.concat(frames, ignore_index=True) if frames else None
    result = judge(ENTROPY_BOUNDS, rows, ("n",))
    shown = sorted(
        (name, figure) for name, figure in (figures or {}).items() if figure and name in summaries
    )
    figure = f"{shown[0][0]}/{shown[0][1]}" if shown and rows is not None else ""
    return replace(result, figure=figure)
