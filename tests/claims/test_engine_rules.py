"""The claim contract's rules on constructed data (issue 38, docs/science.md §7.4): every rule's
verdicts, power against the alternative, the regime selection, open vs near-certain, immutable
results and the canonical rows (experiment order and names never change a number)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from attnsim.claims import engine
from attnsim.claims.engine import (
    Alternative,
    ClaimSpec,
    Equivalence,
    Estimate,
    OneSided,
    PerPoint,
    Regime,
    Sanity,
    SanityRange,
    judge,
)
from attnsim.stats import Z80, Z95

REGIME = Regime("every row", "docs/science.md §7.4: constructed", lambda r: r["x"] > 0)
ALT = Alternative("a competing value", 1.3, "docs/science.md §7.4: constructed")


def mean_of(se: float):
    def measure(rows: pd.DataFrame) -> Estimate:
        value = float(rows["y"].mean())
        return Estimate(
            value, "mean (95% CI)", se, value - Z95 * se, value + Z95 * se, len(rows), "points"
        )

    return measure


def spec(rule, measure, role="evidence", alternative=ALT, **kw) -> ClaimSpec:
    return ClaimSpec(
        "c",
        "robustness",
        "a constructed claim",
        role,
        REGIME,
        rule,
        measure,
        alternative if role == "evidence" else None,
        **kw,
    )


def rows(y, x=None, experiment="e") -> pd.DataFrame:
    y = np.atleast_1d(np.asarray(y, float))
    return pd.DataFrame(
        {"x": np.ones(y.size) if x is None else x, "y": y, "n_trials": 10, "experiment": experiment}
    )


@pytest.mark.parametrize(
    "value, se, verdict",
    [
        (1.0, 0.01, "holds"),  # [0.98, 1.02] inside [0.95, 1.05]
        (1.2, 0.01, "fails"),  # entirely above
        (0.8, 0.01, "fails"),  # entirely below
        (1.04, 0.01, "inconclusive"),  # straddles 1.05
        (1.0, 0.1, "inconclusive"),  # wider than the band: never holds
        (1.0, math.nan, "inconclusive"),  # no interval
    ],
)
def test_equivalence(value, se, verdict):
    result = judge(spec(Equivalence(1.0, 0.05, "r"), mean_of(se)), rows([value]))
    assert result.verdict == verdict
    assert result.predicted == 1.0 and result.tolerance == 0.05
    if math.isfinite(se):
        assert result.detectable == pytest.approx(Z95 * se)
        assert result.min_detectable == pytest.approx((Z95 + Z80) * se)


def test_equivalence_power_against_the_alternative():
    rule = Equivalence(1.0, 0.05, "r")
    # alternative 1.3 at SE 0.01: (1.3 - 1.05)/0.01 - 1.96 = 23 SE: certain to fail
    assert rule.power(1.3, 0.01) == pytest.approx(1.0)
    # alternative right at the band's edge: the interval lies above it with probability ~2.5%
    assert rule.power(1.05, 0.01) == pytest.approx(0.025, abs=1e-3)
    # 80% power exactly (Z95 + Z80) SE beyond the edge
    assert rule.power(1.05 + (Z95 + Z80) * 0.01, 0.01) == pytest.approx(0.80, abs=1e-9)
    assert math.isnan(rule.power(math.nan, 0.01))
    result = judge(spec(rule, mean_of(0.01)), rows([1.0]))
    assert result.power == pytest.approx(1.0) and result.alternative_value == 1.3


@pytest.mark.parametrize(
    "value, side, verdict",
    [
        (1.0, "above", "holds"),
        (1.0, "below", "fails"),
        (-1.0, "below", "holds"),
        (-1.0, "above", "fails"),
        (0.01, "above", "inconclusive"),
    ],
)
def test_one_sided(value, side, verdict):
    rule = OneSided(0.0, side, "r")
    beyond = Alternative("the failing side", -1.3 if side == "above" else 1.3, "constructed")
    result = judge(spec(rule, mean_of(0.1), alternative=beyond), rows([value]))
    assert result.verdict == verdict and result.bound == 0.0 and result.side == side
    assert math.isnan(result.predicted)


def test_one_sided_power_and_sides():
    with pytest.raises(ValueError):
        OneSided(0.0, "left", "r")
    rule = OneSided(0.0, "above", "r")
    # the alternative -0.5 at SE 0.1: the interval is entirely below 0 w.p. Phi(5 - 1.96)
    assert rule.power(-0.5, 0.1) == pytest.approx(0.99882, abs=1e-4)
    assert rule.power(0.5, 0.1) < 1e-6


def points_measure(values, half):
    def measure(r: pd.DataFrame) -> Estimate:
        frame = r.assign(lo=np.asarray(values) - half, hi=np.asarray(values) + half)
        return engine.per_point_estimate(frame, pd.Series(values, index=r.index), "lo", "hi")

    return measure


@pytest.mark.parametrize(
    "values, half, verdict",
    [
        ([1.0, 1.01, 0.99], 0.02, "holds"),
        ([1.0, 1.2, 0.99], 0.02, "fails"),
        ([1.0, 1.04, 0.99], 0.02, "inconclusive"),
        ([1.0, 1.04, 1.3], 0.02, "fails"),  # fails beats inconclusive
    ],
)
def test_per_point(values, half, verdict):
    rule = PerPoint(Equivalence(1.0, 0.05, "r"))
    result = judge(spec(rule, points_measure(values, half)), rows(values))
    assert result.verdict == verdict
    assert result.number == "range over points"
    assert math.isnan(result.ci_low) and math.isnan(result.ci_high)  # a range is no CI
    assert (result.value_min, result.value_max) == (min(values), max(values))
    far = max(values, key=lambda v: abs(v - 1))
    assert result.measured == far
    assert result.detectable == pytest.approx(half)
    assert result.evidence.startswith(f"{sum(abs(v - 1) + half <= 0.05 for v in values)} of 3")


@pytest.mark.parametrize(
    "value, side, verdict",
    [
        (0.5, "below", "holds"),
        (1.0, "below", "holds"),
        (1.5, "below", "fails"),
        (2, "above", "holds"),
    ],
)
def test_sanity(value, side, verdict):
    def measure(r):
        return Estimate(value, "extreme over trials", n=10, unit="trials")

    result = judge(spec(Sanity(1.0, side), measure, role="sanity"), rows([0]))
    assert result.verdict == verdict and result.outcome == "" and result.role == "sanity"


def test_sanity_range():
    def measure(low, high):
        return lambda r: Estimate(high, "extreme over trials", range_min=low, range_max=high)

    rule = SanityRange(0.0, 1.0)
    assert judge(spec(rule, measure(0.0, 1.0), role="sanity"), rows([0])).verdict == "holds"
    assert judge(spec(rule, measure(-1e-9, 1.0), role="sanity"), rows([0])).verdict == "fails"
    assert judge(spec(rule, measure(0.0, 1.01), role="sanity"), rows([0])).verdict == "fails"


def test_regime_selection_not_measured_and_outside_regime():
    s = spec(Equivalence(1.0, 0.05, "r"), mean_of(0.01))
    assert judge(s, None).verdict == "not measured"
    assert judge(s, rows([1.0], x=[-1.0])).verdict == "outside regime"
    result = judge(s, rows([1.0, 1.0], x=[1.0, -1.0]))
    assert result.points == 1 and result.trials == 10 and result.experiments == "e"


def test_open_or_near_certain_is_declared_before_the_data():
    evidence = judge(spec(Equivalence(1.0, 0.05, "r"), mean_of(0.01)), None)
    assert evidence.outcome == "open" and evidence.is_open
    sanity = judge(spec(Sanity(1.0, "below"), mean_of(0.01), role="sanity"), None)
    assert sanity.outcome == ""
    with pytest.raises(ValueError, match="alternative"):
        ClaimSpec("c", "robustness", "t", "evidence", REGIME, Equivalence(1, 0.1, "r"), mean_of(1))
    with pytest.raises(ValueError, match="Sanity"):
        ClaimSpec("c", "robustness", "t", "evidence", REGIME, Sanity(1, "below"), mean_of(1), ALT)


def test_specs_estimates_and_results_are_frozen():
    s = spec(Equivalence(1.0, 0.05, "r"), mean_of(0.01))
    result = judge(s, rows([1.0]))
    for record, name in ((s, "rule"), (result, "verdict"), (s.rule, "tolerance")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, name, None)
    estimate = mean_of(0.01)(rows([1.0]))
    with pytest.raises(TypeError):
        estimate.facts["x"] = 1
    with pytest.raises(ValueError):
        Estimate(1.0, "a guess")


def test_canonical_rows_are_sorted_by_parameters_and_deduplicated_by_trials():
    a = pd.DataFrame({"experiment": "zeta", "scale": [3.0, 1.0], "n_trials": [16, 16], "y": [1, 2]})
    b = pd.DataFrame({"experiment": "alpha", "scale": [1.0], "n_trials": [12], "y": [9]})
    for frames in ([a, b], [b, a]):
        out = engine.canonical_rows(frames, ("scale",))
        assert out["scale"].tolist() == [1.0, 3.0]
        assert out["y"].tolist() == [2, 1]  # scale 1 from the 16-trial experiment
    renamed = engine.canonical_rows(
        [a.assign(experiment="b"), b.assign(experiment="a")], ("scale",)
    )
    assert renamed["y"].tolist() == [2, 1]
    assert engine.canonical_rows([], ("scale",)) is None


def test_per_point_power_is_the_chance_that_some_point_fails():
    rule = PerPoint(Equivalence(1.0, 0.05, "r"))
    alternative = Alternative("a shift", 1.05 + (Z95 + Z80) * 0.01, "constructed")
    values = [1.0, 1.0]
    s = ClaimSpec(
        "c",
        "robustness",
        "t",
        "evidence",
        REGIME,
        rule,
        points_measure(values, Z95 * 0.01),
        alternative,
    )
    result = judge(s, rows(values))
    # each point alone fails with probability 0.8 under the alternative: 1 - 0.2^2 together
    assert result.power == pytest.approx(1 - 0.2**2, abs=1e-9)
    assert result.min_detectable == pytest.approx((Z95 + Z80) * 0.01)
