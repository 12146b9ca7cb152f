"""Kind `normaliser_temperature`: its kernel against a plain per-row computation on the same
cosines, and its claims on constructed summaries (docs/science.md §12.4)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from oracles import normalisers as oracle

from attnsim.kinds.normaliser_temperature import claims, kernel
from attnsim.subjects.normalisers import names


@pytest.mark.parametrize("name", names())
def test_metrics_equal_a_plain_computation_on_the_same_cosines(name):
    cosines = kernel.draw(np.random.default_rng(2), 3, 12, 3)
    tau = 0.7
    got = kernel.simulate(cosines, name, tau)
    for t in range(3):
        p = oracle.weights_row(name, cosines[t].astype(float) / tau)
        mass, entropy = oracle.mass_entropy_row(p)
        assert got["mass"][t] == pytest.approx(mass, rel=1e-9)
        assert got["entropy"][t] == pytest.approx(entropy, rel=1e-8, abs=1e-12)
        assert got["gap"][t] == pytest.approx(math.log(12) - entropy, rel=1e-8, abs=1e-12)


def rows(**columns) -> pd.DataFrame:
    base = dict(
        normaliser="relu",
        n=1024,
        d=3,
        tau=1.0,
        n_trials=200,
        experiment="e",
        bounded_ratio="no",
        gap_mean=0.89,
        gap_se=0.002,
        gap_ci_low=0.886,
        gap_ci_high=0.894,
        gap_max=1.2,
        gap_max_excess=1.2 - math.log(1024),
        support_mean_field=512.0,
        gap_ratio=1.0,
        gap_ratio_ci_low=0.995,
        gap_ratio_ci_high=1.005,
    )
    return pd.DataFrame([{**base, **columns}])


def test_a_bounded_floor_is_a_bound_on_every_trial():
    spec = claims.floor_claim("softmax")
    assert spec.role == "sanity"
    within = rows(normaliser="softmax", bounded_ratio="yes", gap_max=0.2, gap_max_excess=-0.27)
    assert spec(within).verdict == "holds"
    assert spec(within.assign(gap_max_excess=1e-6)).verdict == "fails"


def test_no_floor_holds_above_g1_and_fails_below():
    spec = claims.floor_claim("relu")
    assert spec.role == "sanity"  # implied by the mean field (issue 49); it keeps its verdict
    assert spec(rows()).verdict == "holds"
    like_softmax = rows(gap_mean=0.15, gap_ci_low=0.149, gap_ci_high=0.151)
    assert spec(like_softmax).verdict == "fails"
    assert spec(rows(gap_ci_low=0.4, gap_ci_high=0.5)).verdict == "inconclusive"
    assert spec(rows(tau=0.5)).verdict == "outside regime"
    assert spec(rows(d=512)).verdict == "outside regime"  # d > n / 4


def test_mean_field_gap_claim_bands_by_family():
    relu = claims.gap_claim("relu")
    assert relu(rows()).verdict == "holds"
    assert relu(rows(gap_ratio=0.97, gap_ratio_ci_low=0.965, gap_ratio_ci_high=0.975)).verdict == (
        "fails"
    )
    sparse = claims.gap_claim("sparsemax")
    off = dict(normaliser="sparsemax", gap_ratio=0.97, gap_ratio_ci_low=0.965)
    assert sparse(rows(**off, gap_ratio_ci_high=0.975)).verdict == "holds"
    assert sparse(rows(**off, gap_ratio_ci_high=0.975, support_mean_field=5.0)).verdict == (
        "outside regime"
    )


def test_separation_needs_both_sides():
    bounded = rows(normaliser="softmax", bounded_ratio="yes", gap_max=0.3, gap_mean=0.15)
    both = pd.concat([rows(), bounded], ignore_index=True)
    assert claims.SEPARATION(both).verdict == "holds"
    # a map without the property that kept softmax's floor: the separation fails there
    floored = rows(gap_mean=0.2, gap_ci_low=0.19, gap_ci_high=0.21)
    assert claims.SEPARATION(pd.concat([floored, bounded], ignore_index=True)).verdict == "fails"
    # SSMax is bounded in ratio but beyond g(1) by design: outside the claim
    assert claims.SEPARATION(rows(normaliser="ssmax")).verdict == "outside regime"


def test_the_headline_of_a_lower_bound_is_the_point_nearest_it():
    near = rows(n=256, gap_mean=0.6, gap_ci_low=0.59, gap_ci_high=0.61)
    result = claims.floor_claim("relu")(pd.concat([rows(), near], ignore_index=True))
    assert result.measured == pytest.approx(0.6)
