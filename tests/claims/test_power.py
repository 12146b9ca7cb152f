"""Design power, alternatives and roles before the data (issue 49, docs/science.md §7.7).

Design power against scipy's noncentral t and against simulations of the same design (4,000
replications, fixed seeds, within 3 Monte Carlo SE), for equivalence, one-sided and per-point
rules with shared draws (k in {3, 8, 32}); alternatives at the prediction, on an edge, inside
the band or NaN refused with one line naming the claim; roles fixed by the declaration and the
design alone (a structural test: the rows and the measure are never read)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pandas as pd
import pytest

from attnsim.claims import engine, power
from attnsim.claims.power import Design, VarianceModel, design_from_trials, design_power
from attnsim.stats import t_quantile

stats = pytest.importorskip("scipy.stats")

REPLICATIONS = 4000
BAND = engine.Equivalence(1.0, 0.05, "constructed")
ABOVE = engine.OneSided(0.0, "above", "constructed")
BELOW = engine.OneSided(0.0, "below", "constructed")


# --- the reference distribution ------------------------------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 5, 11, 40, 250, 5000, 1e6])
def test_upper_tail_is_scipys_noncentral_t(df):
    shifts = np.linspace(-4.0, 9.0, 53)
    q = t_quantile(0.975, df)
    expected = stats.nct.sf(q, df, shifts)
    np.testing.assert_allclose(power.upper_tail(shifts, df), expected, atol=1e-8)


def test_a_normal_interval_is_phi_of_the_shift_minus_z():
    shifts = np.linspace(-3, 6, 19)
    np.testing.assert_allclose(
        power.upper_tail(shifts, math.inf), stats.norm.cdf(shifts - 1.959963984540054), atol=1e-8
    )


def test_the_margin_for_80_percent_is_2_8_design_ses_and_more_for_few_trials():
    assert power.margin_for(0.8) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert power.margin_for(0.8, df=9) > power.margin_for(0.8, df=99) > power.margin_for(0.8)
    # the margin makes the single-estimate rule's power 0.8 (noncentral t, df 9)
    assert stats.nct.sf(t_quantile(0.975, 9), 9, power.margin_for(0.8, 9)) == pytest.approx(0.8)


# --- design power against simulation -------------------------------------------------------------


def simulate(rule, alternative, sd, trials, points, rho, seed, correlation=None):
    """The rule's `fails` rate over REPLICATIONS runs of the design: `points` means of `trials`
    normal trials whose trial t shares a draw across points (correlation rho, or a matrix), each
    judged by the engine's own verdict on its 95% t interval; fails when any point fails."""
    rng = np.random.default_rng(seed)
    if correlation is None:
        shared = rng.standard_normal((REPLICATIONS, trials, 1))
        own = rng.standard_normal((REPLICATIONS, trials, points))
        noise = math.sqrt(rho) * shared + math.sqrt(1 - rho) * own
    else:
        root = np.linalg.cholesky(np.asarray(correlation))
        noise = rng.standard_normal((REPLICATIONS, trials, points)) @ root.T
    x = alternative + sd * noise
    mean = x.mean(axis=1)
    half = t_quantile(0.975, trials - 1) * x.std(axis=1, ddof=1) / math.sqrt(trials)
    inner = getattr(rule, "rule", rule)
    verdicts = np.vectorize(inner.verdict)(mean - half, mean + half)
    return float((verdicts == "fails").any(axis=1).mean())


def agree(design_value: float, simulated: float, design_mc_se: float = 0.0) -> None:
    se = math.sqrt(simulated * (1 - simulated) / REPLICATIONS + design_mc_se**2)
    assert abs(design_value - simulated) <= 3 * se, (design_value, simulated, se)


@pytest.mark.parametrize(
    "rule,alternative,sd,trials,seed",
    [
        (BAND, 1.12, 0.1, 12, 1),  # beyond the upper edge, t with 11 df
        (BAND, 0.91, 0.1, 6, 2),  # below the lower edge, t with 5 df
        (BAND, 1.02, 0.4, 4, 3),  # inside the band: both sides, rarely fails
        (ABOVE, -0.5, 1.0, 20, 4),
        (BELOW, 0.3, 1.0, 40, 5),
    ],
)
def test_single_estimate_power_matches_a_simulation(rule, alternative, sd, trials, seed):
    design = design_from_trials(VarianceModel(sd, "theory", "constructed"), trials)
    found = design_power(rule, alternative, design)
    agree(found, simulate(rule, alternative, sd, trials, 1, 0.0, seed))


@pytest.mark.parametrize("points", [3, 8, 32])
@pytest.mark.parametrize(
    "inner,alternative,sd,trials,rho",
    [
        (BAND, 1.075, 0.05, 10, 0.5),
        (ABOVE, -0.45, 1.0, 8, 0.8),
        (BAND, 1.07, 0.05, 10, 0.0),
    ],
)
def test_per_point_power_matches_a_simulation_with_shared_draws(
    points, inner, alternative, sd, trials, rho
):
    """The union over k points whose trials share draws (means and variance estimates
    correlated), against the same design simulated trial by trial."""
    rule = engine.PerPoint(inner)
    design = design_from_trials(VarianceModel(sd, "theory", "c"), trials, points, rho)
    found = design_power(rule, alternative, design)
    seed = 100 * points + int(10 * rho)
    mc = 0.002 if rho > 0 else 0.0  # the design's own fixed-seed Monte Carlo (t and rho > 0)
    agree(found, simulate(rule, alternative, sd, trials, points, rho, seed), mc)


@pytest.mark.parametrize("points", [3, 8])
def test_a_correlation_matrix_matches_a_simulation(points):
    """Two blocks of shared draws (0.7 within, 0.1 across), a t interval of 9 df."""
    block = np.arange(points) < points // 2
    matrix = np.where(block[:, None] == block[None, :], 0.7, 0.1)
    np.fill_diagonal(matrix, 1.0)
    rule = engine.PerPoint(BAND)
    design = Design(tuple([0.05 / math.sqrt(10)] * points), 9.0, tuple(map(tuple, matrix)))
    found = design_power(rule, 1.075, design)
    agree(found, simulate(rule, 1.075, 0.05, 10, points, 0, 7 + points, matrix), 0.003)


def test_equicorrelation_and_its_matrix_agree_and_independence_is_a_product():
    rule = engine.PerPoint(BAND)
    se = tuple([0.01] * 8)
    equi = design_power(rule, 1.07, Design(se, math.inf, 0.4))
    matrix = np.full((8, 8), 0.4)
    np.fill_diagonal(matrix, 1.0)
    assert design_power(rule, 1.07, Design(se, math.inf, tuple(map(tuple, matrix)))) == (
        pytest.approx(equi, abs=0.01)
    )
    one = design_power(BAND, 1.07, Design(0.01, 9))
    assert design_power(rule, 1.07, Design(se, 9, 0.0)) == pytest.approx(1 - (1 - one) ** 8)


def test_shared_draws_lower_the_union_and_more_points_raise_it():
    rule = engine.PerPoint(BAND)
    powers = [design_power(rule, 1.07, Design((0.01,) * 8, math.inf, r)) for r in (0, 0.5, 0.9)]
    assert powers[0] > powers[1] > powers[2]
    by_k = [design_power(rule, 1.07, Design((0.01,) * k, math.inf, 0.5)) for k in (3, 8, 32)]
    assert by_k[0] < by_k[1] < by_k[2]


def test_an_alternative_at_the_edge_has_the_rules_own_error_rate():
    """Power at the band edge is 2.5% (the rule's one side), at the prediction about nothing."""
    design = Design(0.02, math.inf)
    assert design_power(BAND, 1.05, design) == pytest.approx(0.025, abs=1e-6)
    assert design_power(ABOVE, 0.0, design) == pytest.approx(0.025, abs=1e-6)
    at_prediction = 2 * stats.norm.cdf(-0.05 / 0.02 - 1.959963984540054)
    assert design_power(BAND, 1.0, design) == pytest.approx(at_prediction, rel=1e-6)
    assert math.isnan(design_power(BAND, math.nan, design))


# --- designs -------------------------------------------------------------------------------------


def test_designs_from_trials_and_from_a_target_se():
    variance = VarianceModel(0.5, "pilot", "run 9b9a604 seed 0, experiment precision")
    design = design_from_trials(variance, 2500, points=6, correlation=0.3)
    assert design.se == pytest.approx((0.01,) * 6) and design.df == 2499
    assert "6 points x 2,500 trials" in design.text and "pilot" in design.text
    uneven = design_from_trials(VarianceModel((1.0, 2.0), "theory", "§2.3"), (4, 16), 2)
    assert uneven.se == pytest.approx((0.5, 0.5)) and uneven.df == 3
    adaptive = power.design_from_target_se(
        0.004, points=3, variance=VarianceModel(0.2, "theory", "t")
    )
    assert adaptive.se == (0.004,) * 3 and adaptive.df == 2499
    assert power.design_from_target_se(0.004).df == math.inf


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: Design((0.0,)), "finite and positive"),
        (lambda: Design((0.1,), df=0.5), "df >= 1"),
        (lambda: Design((0.1, 0.1), correlation=1.0), r"\[0, 1\)"),
        (lambda: Design((0.1, 0.1), correlation=((1, 0.5), (0.4, 1))), "symmetric"),
        (lambda: Design((0.1, 0.1), correlation=((1, 2), (2, 1))), "semi-definite"),
        (lambda: VarianceModel(0.1, "guess", "x"), "source"),
        (lambda: VarianceModel(math.nan, "theory", "x"), "sd"),
        (lambda: VarianceModel(0.1, "theory", ""), "reason"),
        (lambda: design_from_trials(VarianceModel(1.0, "theory", "x"), 1), ">= 2"),
    ],
)
def test_bad_designs_are_one_clear_line(make, match):
    with pytest.raises(ValueError, match=match) as error:
        make()
    assert "\n" not in str(error.value)


# --- alternatives --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule,value,why",
    [
        (BAND, 1.0, "the prediction"),
        (BAND, 1.05, "a band edge"),
        (BAND, 0.95, "a band edge"),
        (BAND, 1.0 + 0.05 * (1 + 1e-12), "a band edge"),  # the edge to rounding
        (BAND, 1.03, "inside the band"),
        (BAND, math.nan, "must be a number"),
        (BAND, math.inf, "must be a number"),
        (ABOVE, 0.0, "the bound"),
        (ABOVE, 0.2, "on the claimed side"),
        (BELOW, -0.1, "on the claimed side"),
        (engine.PerPoint(BAND), 1.0, "the prediction"),
        (engine.PerPoint(ABOVE), math.nan, "must be a number"),
    ],
)
def test_alternatives_where_the_rule_cannot_fail_are_refused(rule, value, why):
    with pytest.raises(ValueError, match=why) as error:
        power.check_alternative("some_claim", rule, value)
    message = str(error.value)
    assert message.startswith("claim some_claim:") and "\n" not in message
    assert power.alternative_refusal("some_claim", rule, value) == message


@pytest.mark.parametrize(
    "rule,value",
    [(BAND, 1.06), (BAND, 0.8), (ABOVE, -0.01), (BELOW, 3.0), (engine.PerPoint(BAND), 1.2)],
)
def test_alternatives_beyond_the_edge_are_accepted(rule, value):
    power.check_alternative("c", rule, value)
    assert power.alternative_refusal("c", rule, value) == ""


def test_one_alternative_per_point_is_checked_at_every_point():
    rule = engine.PerPoint(BAND)
    power.check_alternative("c", rule, [1.1, 0.9, 1.3])
    with pytest.raises(ValueError, match="at point 2 of 3 is inside the band") as error:
        power.check_alternative("c", rule, [1.1, 1.01, 1.3])
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="at point 1 of 2 must be a number"):
        power.check_alternative("c", rule, [math.nan, 1.3])
    with pytest.raises(ValueError, match="needs a per-point rule"):
        power.check_alternative("c", BAND, [1.1, 1.2])
    design = Design((0.01, 0.02, 0.01), math.inf, 0.0)
    values = [1.07, 0.91, 1.075]
    each = [design_power(BAND, v, Design(se)) for v, se in zip(values, design.se)]
    expected = 1 - np.prod([1 - p for p in each])
    assert design_power(rule, values, design) == pytest.approx(expected, rel=1e-9)


def test_the_failing_region_is_named_with_numbers():
    assert power.failing_region(BAND) == "below 0.95 or above 1.05"
    assert power.failing_region(engine.PerPoint(ABOVE)) == "below 0"
    assert power.failing_region(BELOW) == "above 0"


# --- roles ---------------------------------------------------------------------------------------


def _never(*_):
    raise AssertionError("the role read the data")


REGIME = engine.Regime("every row", "docs/science.md §7.7: constructed", _never, _never)


def _spec(rule, value=1.2, role="evidence") -> engine.ClaimSpec:
    alternative = (
        engine.Alternative("a competing law", value, "constructed") if role == "evidence" else None
    )
    return engine.ClaimSpec("c", "robustness", "a claim", role, REGIME, rule, _never, alternative)


def test_roles_open_test_check_and_sanity():
    design = Design(0.01, 99)
    opened = power.role(_spec(BAND, 1.2), design)
    assert opened.role == "open test" and opened.design_power > 0.99
    assert opened.design_se == 0.01 and opened.text.startswith("open test: power 1.00")
    check = power.role(_spec(BAND, 1.051), design)
    assert check.role == "check" and check.design_power < power.OPEN_POWER
    assert check.text.startswith("could not have failed: power 0.03 against 1.051")
    sanity = power.role(_spec(engine.Sanity(1.0, "below"), role="sanity"), design)
    assert sanity.role == "sanity" and math.isnan(sanity.design_power)
    assert power.role(_spec(BAND), None).role == "check"


def test_the_role_is_a_function_of_the_declaration_and_the_design_only():
    """Structural: `role` takes a spec and a design, nothing that holds rows; it never calls the
    spec's measure or regime (they raise here), so no run's rows can change a claim's role. And
    the same declaration at the same design has the same role whatever the run measured."""
    assert list(inspect.signature(power.role).parameters) == ["spec", "design", "missing"]
    assert list(inspect.signature(power.design_power).parameters) == [
        "rule",
        "alternative",
        "design",
    ]
    spec = _spec(engine.PerPoint(BAND), 1.08)
    design = design_from_trials(VarianceModel(0.05, "theory", "c"), 10, 8, 0.5)
    first = power.role(spec, design)
    # judge the same spec on two different sets of rows (a measure that reads them), the role
    # computed before and after is the same object
    measured = engine.ClaimSpec(
        "c",
        "robustness",
        "a claim",
        "evidence",
        engine.Regime("all", "c", lambda r: r["x"] > 0),
        engine.PerPoint(BAND),
        lambda r: engine.Estimate(float(r["y"].mean()), "mean (95% CI)"),
        spec.alternative,
    )
    for y in ([1.0, 1.01], [5.0, 9.0]):
        measured(pd.DataFrame({"x": [1, 1], "y": y, "n_trials": 10, "experiment": "e"}))
        assert power.role(measured, design) == first


def test_the_inventory_of_todays_declarations_names_each_refusal_in_one_line():
    """tests/helpers/alternatives.py: every declared evidence claim once; each refusal is
    `check_alternative`'s one line naming its claim (the list the wiring phase re-declares)."""
    from helpers import alternatives

    found = alternatives.entries()
    ids = [e.claim_id for e in found]
    assert len(ids) == len(set(ids)) and len(ids) > 40  # fewer as roles are re-declared
    for entry in alternatives.refusals():
        assert entry.refusal.startswith(f"claim {entry.claim_id}: ") and "\n" not in entry.refusal
