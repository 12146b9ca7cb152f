"""The verdict rules of the claims engine (docs/science.md §7.4) on constructed summaries:
equivalence and one-sided criteria give holds, fails and inconclusive; per-point judgement; the
regime helper; a pooled estimate over one point has no interval."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnsim.claims import engine
from attnsim.claims.engine import Claim, pooled, select_regime


def stats(mean, half):
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half}


def claim(**fields) -> Claim:
    return Claim("c", "a claim", regime="somewhere", reason="docs/science.md §7.4", **fields)


@pytest.mark.parametrize(
    ("mean", "half", "verdict"),
    [
        (1.00, 0.01, "holds"),  # inside the band 1 ± 0.05
        (1.04, 0.01, "holds"),  # touches nothing outside: [1.03, 1.05]
        (1.05, 0.01, "inconclusive"),  # straddles the upper edge
        (0.96, 0.02, "inconclusive"),  # straddles the lower edge
        (1.00, 0.10, "inconclusive"),  # wider than the band: low power, never holds
        (1.10, 0.01, "fails"),  # entirely above the band
        (0.80, 0.10, "fails"),  # entirely below, wide as it is
    ],
)
def test_equivalence(mean, half, verdict):
    c = claim().equivalence(1.0, stats(mean, half), 0.05, "e")
    assert c.verdict == verdict and c.tolerance == 0.05 and c.predicted == 1.0
    assert c.detectable == pytest.approx(half) and c.evidence == "e"
    assert c.rel_deviation == pytest.approx(mean - 1.0)


def test_equivalence_uses_the_declared_tolerance_and_needs_an_interval():
    c = claim(tolerance=0.01)
    assert (
        c.equivalence(0.0, stats(0.0, 0.005), None, "").verdict == "holds" and c.tolerance == 0.01
    )
    assert c.equivalence(0.0, stats(0.0, 0.02), None, "").verdict == "inconclusive"
    nan = {"mean": 0.0, "ci_low": math.nan, "ci_high": math.nan}
    assert claim().equivalence(0.0, nan, 0.01, "").verdict == "inconclusive"
    assert (
        claim().judge(0.0, stats(0.0, 0.001), 0.01, "").verdict == "holds"
    )  # the older name, same rule


def test_the_null_is_not_accepted_because_the_interval_meets_the_band():
    """-0.0126 [-0.0229, -0.0023] against 0 ± 0.01 met the band under the old rule; it straddles
    the edge, so it is inconclusive, not holds."""
    c = claim().equivalence(0.0, {"mean": -0.0126, "ci_low": -0.0229, "ci_high": -0.0023}, 0.01, "")
    assert c.verdict == "inconclusive"


@pytest.mark.parametrize(
    ("mean", "half", "side", "verdict"),
    [
        (-0.10, 0.05, "above", "holds"),
        (-0.22, 0.05, "above", "inconclusive"),
        (-0.40, 0.05, "above", "fails"),
        (0.50, 0.10, "below", "holds"),
        (0.95, 0.10, "below", "inconclusive"),
        (1.30, 0.10, "below", "fails"),
    ],
)
def test_one_sided(mean, half, side, verdict):
    bound = -0.25 if side == "above" else 1.0
    c = claim()
    c.predicted = 0.83  # a theory value the verdict is not about: one_sided clears it
    c.one_sided(stats(mean, half), bound, side, "")
    assert c.verdict == verdict and c.bound == bound and c.side == side
    assert math.isnan(c.predicted) and c.detectable == pytest.approx(half)


def test_one_sided_and_sides_are_checked():
    with pytest.raises(ValueError, match="side"):
        claim().one_sided(stats(0, 1), 0, "left", "")
    with pytest.raises(ValueError, match="role"):
        Claim("c", "", role="proof")


def rows(values, half):
    return pd.DataFrame(
        {
            "x": values,
            "lo": [v - half for v in values],
            "hi": [v + half for v in values],
            "n": range(len(values)),
        }
    )


@pytest.mark.parametrize(
    ("values", "half", "verdict"),
    [
        ([1.0, 0.99, 1.02], 0.01, "holds"),
        ([1.0, 0.99, 0.80], 0.01, "fails"),  # one point outside fails the claim
        ([1.0, 0.99, 0.95], 0.01, "inconclusive"),  # one point straddles, none outside
        ([1.0, 0.95, 0.80], 0.01, "fails"),  # a failure beats an inconclusive point
    ],
)
def test_per_point(values, half, verdict):
    r = rows(values, half)
    c = claim().per_point(r, "x", "lo", "hi", 1.0, 0.05, describe=lambda row: f"n={row['n']}")
    assert c.verdict == verdict and c.number == "range over points"
    worst = max(values, key=lambda v: abs(v - 1))
    assert c.measured == worst and c.ci_low == min(values) and c.ci_high == max(values)
    assert c.detectable == pytest.approx(half)
    assert c.evidence.startswith(
        f"{sum(abs(v - 1) + half <= 0.05 for v in values)} of 3 points hold"
    )
    assert f"at n={values.index(worst)}" in c.evidence


def test_select_regime():
    s = pd.DataFrame({"experiment": ["e", "e", "e"], "n": [1, 2, 3], "n_trials": [10, 10, 10]})
    c = claim()
    assert select_regime(c, None, lambda r: r["n"] > 1) is None and c.verdict == "not measured"
    assert select_regime(c, s, lambda r: r["n"] > 5) is None and c.verdict == "outside regime"
    chosen = select_regime(c, s, s["n"] >= 2, figure="fig")
    assert list(chosen["n"]) == [2, 3] and c.points == 2 and c.trials == 20 and c.figure == "e/fig"


def test_pooled_over_one_point_has_no_interval():
    one = pooled([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])
    assert claim().equivalence(0.5, one, 0.1, "").verdict == "inconclusive"
    two = pooled([0.5, 0.6])
    assert two["ci_low"] < 0.5 < 0.6 < two["ci_high"]


def test_sanity_bound():
    c = Claim("b", "", role="sanity", regime="every trial", reason="docs/science.md §3.1")
    assert c.sanity_bound(0.3, 0.4745, "below", "", low=0.01).verdict == "holds"
    assert (c.ci_low, c.ci_high, c.bound, c.side) == (0.01, 0.3, 0.4745, "below")
    assert c.sanity_bound(0.5, 0.4745, "below", "").verdict == "fails"
    assert c.sanity_bound(0.5, 0.4745, "above", "").verdict == "holds"


def test_verdicts_and_roles_are_the_documented_ones():
    assert engine.VERDICTS == ("holds", "fails", "inconclusive", "outside regime", "not measured")
    assert engine.ROLES == ("evidence", "sanity")
    c = Claim("x", "y", "the regime in words")
    assert c.regime == c.condition == "the regime in words" and c.role == "evidence"
