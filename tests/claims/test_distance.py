"""How far an inconclusive verdict is from a decision (docs/science.md §7.6): on constructed data
with a given mean and standard deviation, the predicted count decides and 5% fewer does not
(issue 39 item 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnsim.claims.engine import (
    Alternative,
    ClaimSpec,
    Equivalence,
    Estimate,
    OneSided,
    PerPoint,
    Regime,
    judge,
    per_point_estimate,
)
from attnsim.stats import mean_ci

EVERYWHERE = Regime("everywhere", "docs/science.md §7.6: a test", lambda rows: rows["x"].notna())


def trials(mean: float, sd: float, count: int) -> pd.DataFrame:
    """`count` values with exactly this sample mean and standard deviation."""
    z = np.random.default_rng(count).standard_normal(count)
    z = (z - z.mean()) / z.std(ddof=1)
    return pd.DataFrame({"x": mean + sd * z})


def mean_of_trials(rows: pd.DataFrame) -> Estimate:
    stats = mean_ci(rows["x"].to_numpy())
    return Estimate(
        stats["mean"],
        "mean (95% CI)",
        stats["se"],
        stats["ci_low"],
        stats["ci_high"],
        n=len(rows),
        unit="trials",
    )


def spec(rule) -> ClaimSpec:
    # where the rule fails (issue 49): beyond the band, or on the failing side of the bound
    failing = -0.2 if getattr(rule, "side", "") == "above" else 0.2
    alternative = Alternative("a shifted mean", failing, "a test")
    return ClaimSpec(
        "c", "robustness", "a claim", "evidence", EVERYWHERE, rule, mean_of_trials, alternative
    )


@pytest.mark.parametrize(
    "rule,mean,verdict",
    [
        (Equivalence(0.0, 0.05, "a test"), 0.03, "holds"),
        (Equivalence(0.0, 0.05, "a test"), 0.08, "fails"),
        (OneSided(0.0, "above", "a test"), 0.02, "holds"),
        (OneSided(0.0, "above", "a test"), -0.02, "fails"),
    ],
)
def test_the_predicted_count_decides_and_fewer_does_not(rule, mean, verdict):
    claim = spec(rule)
    now = judge(claim, trials(mean, 1.0, 200))
    assert now.verdict == "inconclusive" and now.needed > 200, now
    assert now.needed_unit == "trials" and f"({verdict})" in now.to_decide
    assert judge(claim, trials(mean, 1.0, now.needed)).verdict == verdict
    assert judge(claim, trials(mean, 1.0, int(0.95 * now.needed))).verdict == "inconclusive"


def test_a_value_on_the_band_edge_cannot_be_decided():
    now = judge(spec(Equivalence(0.0, 0.05, "a test")), trials(0.05, 1.0, 200))
    assert now.verdict == "inconclusive" and now.needed == 0
    assert "cannot decide" in now.to_decide


def per_point(rows: pd.DataFrame) -> Estimate:
    return per_point_estimate(rows, "value", "ci_low", "ci_high", "se", 1.0, params=("sigma",))


def test_per_point_names_the_points_that_need_more():
    """Point sigma=0.1 already holds; sigma=0.5 (mean 1.02, SE 0.03, 100 trials) needs
    100 (1.96 x 0.03 / 0.03)^2 = 385 trials."""
    rows = pd.DataFrame(
        {"sigma": [0.1, 0.5], "value": [1.0, 1.02], "se": [0.01, 0.03], "n_trials": [100, 100]}
    )
    rows["ci_low"], rows["ci_high"] = rows.value - 1.96 * rows.se, rows.value + 1.96 * rows.se
    rows["x"] = 0.0
    claim = ClaimSpec(
        "p",
        "robustness",
        "per point",
        "evidence",
        EVERYWHERE,
        PerPoint(Equivalence(1.0, 0.05, "a test")),
        per_point,
        Alternative("a shifted ratio", 1.2, "a test"),
    )
    result = judge(claim, rows)
    assert result.verdict == "inconclusive"
    assert result.needed == 385 and result.needed_unit == "trials per point"
    assert "sigma=0.5" in result.to_decide and "sigma=0.1" not in result.to_decide
