"""Issue 49: a claim's role (open test, check, sanity), design power and design SE come from the
declaration and the plan before any row is read (claims.engine.design_role, power.design_from_plan),
and an evidence claim's alternative is checked when it is declared (ClaimSpec.__post_init__)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from attnsim.claims import power
from attnsim.claims.engine import (
    PLANNED_FEWEST,
    PLANNED_TARGET,
    PLANNED_TRIALS,
    Alternative,
    ClaimSpec,
    Equivalence,
    OneSided,
    PerPoint,
    Regime,
    judge,
    per_point_estimate,
    planned_rows,
    pooled_estimate,
)
from attnsim.claims.power import VarianceModel
from attnsim.report import claims as io
from attnsim.stats import Z95

REGIME = Regime("x > 1", "docs/science.md §7.7: constructed", lambda r: r["x"] > 1)
VARIANCE = VarianceModel(0.5, "theory", "docs/science.md §7.7: constructed")
ROLE_FIELDS = ("design_power", "design_se", "test_role", "role_text")


def per_point_spec(alternative: float = 0.9, variance=VARIANCE, **kw) -> ClaimSpec:
    kw.setdefault("correlation", 0.0)  # independent points unless a test says otherwise

    def measure(rows):
        return per_point_estimate(
            rows, "y_mean", rows["y_mean"] - Z95 * rows["y_se"], rows["y_mean"] + Z95 * rows["y_se"]
        )

    return ClaimSpec(
        "constructed",
        "robustness",
        "a constructed per-point claim",
        "evidence",
        REGIME,
        PerPoint(Equivalence(1.0, 0.05, "constructed")),
        measure,
        Alternative("a shortfall", alternative, "constructed"),
        variance=variance,
        **kw,
    )


def summary(values, se, trials) -> pd.DataFrame:
    x = np.arange(len(values), dtype=float)
    return pd.DataFrame(
        {"experiment": "e", "x": x, "y_mean": values, "y_se": se, "n_trials": trials}
    )


def plan(points: int, trials: int, target: float = math.nan, fewest: int | None = None):
    return pd.DataFrame(
        {
            "x": np.arange(points, dtype=float),
            PLANNED_TRIALS: trials,
            PLANNED_FEWEST: trials if fewest is None else fewest,
            PLANNED_TARGET: target,
        }
    )


def roles(result) -> tuple:
    return tuple(getattr(result, f) for f in ROLE_FIELDS)


def test_an_undeclared_correlation_gives_the_best_points_power():
    """Without a declared correlation the union over points is bounded below by its likeliest
    member, whatever shared draws do: the design power is the best point's, never more."""
    planned = plan(5, 400)
    bound = judge(per_point_spec(correlation=None), None, ("x",), planned=planned)
    independent = judge(per_point_spec(), None, ("x",), planned=planned)
    rule, one = Equivalence(1.0, 0.05, "constructed"), power.Design((0.025,), 399.0)
    single = power.design_power(rule, 0.9, one)
    assert bound.design_power == pytest.approx(single, abs=1e-12)
    assert bound.design_power < independent.design_power
    assert "correlation between points not declared" in bound.role_text


def test_changing_the_measured_rows_never_changes_the_role():
    spec, planned = per_point_spec(), plan(5, 400)
    first = judge(spec, summary([1.0] * 5, [0.01] * 5, [400] * 5), ("x",), planned=planned)
    rng = np.random.default_rng(49)
    for _ in range(5):
        rows = summary(rng.normal(1, 0.3, 5), rng.uniform(1e-3, 1, 5), rng.integers(2, 9999, 5))
        again = judge(spec, rows, ("x",), planned=planned)
        assert roles(again) == roles(first)
    assert judge(spec, None, ("x",), planned=planned).test_role == first.test_role
    # the regime selects 3 of the 5 planned points (x = 2, 3, 4): a union over 3 at SE 0.025
    expected = power.design_power(spec.rule, 0.9, power.Design((0.025,) * 3, 399.0))
    assert first.test_role == "open test"
    assert first.design_power == pytest.approx(expected, abs=1e-9)
    assert first.design_se == pytest.approx(0.5 / math.sqrt(400))


def test_the_plan_not_the_measured_trials_makes_the_role():
    spec, rows = per_point_spec(), summary([1.0] * 5, [0.01] * 5, [4000] * 5)
    few, many = (judge(spec, rows, ("x",), planned=plan(5, t)) for t in (20, 4000))
    assert few.test_role == "check" and few.role_text.startswith("could not have failed")
    assert many.test_role == "open test"


def test_no_variance_model_or_no_planned_point_is_a_check_with_the_reason():
    rows = summary([1.0] * 5, [0.01] * 5, [400] * 5)
    bare = judge(per_point_spec(variance=None), rows, ("x",), planned=plan(5, 400))
    assert (bare.test_role, math.isnan(bare.design_power)) == ("check", True)
    assert "no variance model" in bare.role_text
    outside = judge(per_point_spec(), rows, ("x",), planned=plan(2, 400))  # x = 0, 1: none > 1
    assert outside.test_role == "check" and "no planned point in its regime" in outside.role_text
    unplanned = judge(per_point_spec(), rows, ("x",), planned=None)
    assert unplanned.test_role == "check" and "no planned point" in unplanned.role_text


def test_declared_checks_and_sanity_claims_keep_their_roles():
    rows = summary([1.0] * 5, [0.01] * 5, [400] * 5)
    check = replace(per_point_spec(), role="check", alternative=None)
    found = judge(check, rows, ("x",), planned=plan(5, 400))
    assert found.test_role == "check" and found.role_text.startswith("check: declared a check")
    sanity = replace(per_point_spec(), role="sanity", alternative=None, variance=None)
    assert judge(sanity, rows, ("x",), planned=plan(5, 400)).test_role == "sanity"


def test_a_regime_reading_beyond_the_parameters_is_designed_at_one_point():
    reading = Regime("y measured", "constructed", lambda r: r["y_mean"] > 0)
    spec = replace(per_point_spec(), regime=reading)
    planned = pd.concat([plan(4, 400), plan(1, 100).assign(x=9.0)], ignore_index=True)
    result = judge(spec, summary([1.0] * 5, [0.01] * 5, [400] * 5), ("x",), planned=planned)
    assert result.design_se == pytest.approx(0.5 / math.sqrt(100))
    assert "designed at the planned point with the fewest trials" in result.role_text


def test_adaptive_points_count_the_target_only_for_the_watched_statistic():
    most, fewest, target = [4000], [500], [0.015]
    watched = replace(VARIANCE, sd=0.6, watched=True)
    seen = power.design_from_plan(watched, most, target, True, fewest=fewest)
    assert seen.se == (0.015,) and seen.df == 499
    other = power.design_from_plan(replace(watched, watched=False), most, target, True, 0, fewest)
    assert other.se == pytest.approx((0.6 / math.sqrt(500),))
    capped = power.design_from_plan(replace(watched, sd=2.0), most, target, True, fewest=fewest)
    assert capped.se == pytest.approx((2.0 / math.sqrt(4000),))  # the cap binds before the target
    fixed = power.design_from_plan(VARIANCE, [100, 400], [math.nan, math.nan], False)
    assert fixed.se == pytest.approx((0.05,)) and fixed.df == 99  # the fewest trials' SE


def test_a_pooled_statistic_is_designed_over_its_points():
    pooled = VarianceModel(0.2, "pilot", "constructed: run, commit, seed 2", per="point")
    spec = ClaimSpec(
        "pooled",
        "robustness",
        "a pooled claim",
        "evidence",
        REGIME,
        OneSided(0.0, "above", "constructed"),
        lambda rows: pooled_estimate(rows["y_mean"]),
        Alternative("no effect", -0.1, "constructed"),
        variance=pooled,
    )
    result = judge(spec, summary([1.0] * 6, [0.01] * 6, [400] * 6), ("x",), planned=plan(6, 400))
    assert result.design_se == pytest.approx(0.2 / 2)  # 4 points in the regime
    expected = power.design_power(spec.rule, -0.1, power.Design((0.1,), 3.0))
    assert result.design_power == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "said"), [(math.nan, "got nan"), (1.0, "the prediction"), (0.95, "a band edge")]
)
def test_an_invalid_alternative_is_refused_when_declared(value, said):
    with pytest.raises(ValueError, match=f"claim constructed: .*{said}"):
        per_point_spec(alternative=value)


def test_every_declared_evidence_claim_has_a_valid_alternative():
    """Every kind is re-declared from theory: `check_alternative` refuses no evidence claim (a
    kind declaring one could not even be imported)."""
    from tests.helpers import alternatives

    assert alternatives.entries() and alternatives.refusals() == []


def test_the_plan_comes_from_the_summary_provenance_not_its_rows():
    settings = {"seed": 1, "trials": 500, "target_se": 0.015, "max_trials": 4000}
    meta = {
        "experiment_config": '{"experiment": "e", "kind": "k", "grid": {}, '
        + ('"seed": 1, "trials": 500, "target_se": 0.015, "max_trials": 4000}')
    }
    assert io.planned_settings(meta) == settings
    frame = summary([1.0, 2.0], [0.1, 0.1], [123, 4567])
    frame.attrs[io.PLAN] = settings
    found = io.plan_of(frame, ("x",))
    assert found is not None
    assert found[PLANNED_FEWEST].tolist() == [500, 500]
    assert found[PLANNED_TRIALS].tolist() == [4000, 4000]
    assert found[PLANNED_TARGET].tolist() == [0.015, 0.015]
    assert "n_trials" not in found and "y_mean" not in found
    merged = planned_rows([found, found.assign(**{PLANNED_TRIALS: 8000})], ("x",))
    assert merged is not None and merged[PLANNED_TRIALS].tolist() == [8000, 8000]
