"""What the claims engine keeps beside its declarative rules (those are
tests/claims/test_engine_rules.py): the verdict functions on a boundary case, a pooled estimate over
one point has no interval, and the documented verdicts and roles."""

from __future__ import annotations

import math

import pandas as pd

from attnsim.claims import engine
from attnsim.claims.engine import (
    ClaimSpec,
    Estimate,
    Regime,
    Sanity,
    equivalence_verdict,
    judge,
    pooled,
)


def test_the_null_is_not_accepted_because_the_interval_meets_the_band():
    """-0.0126 [-0.0229, -0.0023] against 0 ± 0.01 met the band under the old rule; it straddles
    the edge, so it is inconclusive, not holds."""
    assert equivalence_verdict(-0.0229, -0.0023, 0.0, 0.01) == "inconclusive"


def test_pooled_over_one_point_has_no_interval():
    one = pooled([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])
    assert equivalence_verdict(one["ci_low"], one["ci_high"], 0.5, 0.1) == "inconclusive"
    two = pooled([0.5, 0.6])
    assert two["ci_low"] < 0.5 < 0.6 < two["ci_high"]


def test_pooled_with_own_errors_is_never_more_certain_than_its_points():
    """Identical but noisy values: the mean's SE is at least sqrt(sum se^2) / k."""
    stats = pooled([1.0, 1.0, 1.0], se=[0.3, 0.4, 0.0])
    assert stats["se"] == 0.5 / 3 and stats["ci_low"] < 1.0 < stats["ci_high"]
    one = pooled([2.0], se=[0.1])
    assert one["se"] == 0.1 and math.isclose(one["ci_high"] - 2.0, engine.Z95 * 0.1)


def test_verdicts_and_roles_are_the_documented_ones():
    assert engine.VERDICTS == (
        "holds",
        "fails",
        "inconclusive",
        "outside regime",
        "not measured",
        "not predicted",
    )
    assert engine.ROLES == ("evidence", "check", "sanity")


def _half_nan_entropy() -> dict:
    """The issue's case: a kind that declares its entropy non-finite and returns NaN at half its
    points (every trial there), so those points' summary statistics are NaN."""
    import numpy as np
    import pandas as pd

    n = np.array([8, 8, 16, 16])
    frame = pd.DataFrame(
        {
            "experiment": "e",
            "n": n,
            "n_trials": 10,
            "entropy_min": [0.5, np.nan, 0.7, np.nan],
            "entropy_max": [1.5, np.nan, 2.0, np.nan],
        }
    )
    return {"e": frame}


def test_a_claim_says_how_many_points_it_could_not_judge():
    """entropy_in_bounds "held" over the finite points without a word about the others (pandas'
    max skips NaN): the claim now counts them and names the columns."""
    result = engine.entropy_bounds(_half_nan_entropy())
    assert result.verdict == "holds" and result.points == 4 and result.unjudged == 2
    assert result.evidence.endswith(
        "; 2 of the regime's 4 points not judged: entropy_max, entropy_min NaN there"
    ), result.evidence


def test_points_are_counted_only_over_the_columns_the_measure_read():
    import numpy as np

    rows = _half_nan_entropy()["e"].assign(other_mean=np.nan)  # NaN everywhere, never read
    spec = engine.ENTROPY_BOUNDS
    assert engine.judge(spec, rows).unjudged == 2
    finite = rows.assign(entropy_min=0.5, entropy_max=1.5)
    judged = engine.judge(spec, finite)
    assert judged.unjudged == 0 and "not judged" not in judged.evidence


def test_condition_states_the_values_judged_apart_from_the_declared_regime():
    """`regime` is the declaration; `condition` the parameters' values over the regime's rows as
    judged (a range per number, the values of a string), so the two never hold the same text."""
    rows = pd.DataFrame(
        {
            "experiment": "e",
            "n": [16, 64, 256],
            "noise": ["gaussian", "laplace", "gaussian"],
            "noise_scale": [0.1, 0.1, 0.1],
            "value_mean": [1.0, 1.0, 1.0],
            "n_trials": 10,
        }
    )
    spec = ClaimSpec(
        claim_id="x",
        statement="robustness",
        text="x",
        role="sanity",
        regime=Regime("n >= 64, every family", "docs/science.md §1", lambda r: r["n"] >= 64),
        rule=Sanity(2.0, "below"),
        measure=lambda r: Estimate(float(r["value_mean"].max()), "extreme over trials"),
    )
    result = judge(spec, rows, ("n", "noise", "noise_scale"))
    assert result.regime == "n >= 64, every family"
    assert result.condition == "n 64–256; noise gaussian, laplace; noise_scale 0.1"
    assert judge(spec, rows).condition == ""  # no parameters named: nothing to state


def test_a_claim_without_a_prediction_is_listed_not_predicted_whatever_the_rows():
    from attnsim.claims.engine import NotPredicted, not_predicted

    spec = not_predicted("fam", "normaliser", "cube", "normalisers", "no law for cube")
    assert isinstance(spec.rule, NotPredicted) and spec.claim_id == "fam_cube"
    for rows in (None, pd.DataFrame({"n": [1, 2]})):
        result = judge(spec, rows)
        assert result.verdict == "not predicted"
        assert (result.subject, result.subject_type, result.family) == ("cube", "normaliser", "fam")
    assert "no law for cube" in judge(spec, None).threshold
