"""The sequential design of `attnsim decide` (docs/science.md §7.6): its boundaries against
published values and an independent multivariate-normal computation, and the simulation study at
the band edge (benchmarks/peeking.py): decide's false-holds rate stays at or below 5% within its
Monte Carlo interval while naive repeated looks exceed it."""

from __future__ import annotations

import numpy as np
import pytest

from attnsim.claims import sequential
from benchmarks import peeking

mvn = pytest.importorskip("oracles.sequential")


def test_lan_demets_obrien_fleming_matches_published_bounds():
    """Four equally spaced looks, one-sided 0.025: 4.3326, 2.9631, 2.3590, 2.0141 (Jennison &
    Turnbull 2000, table 7.6; R ldbounds)."""
    t = np.array([0.25, 0.5, 0.75, 1.0])
    found = sequential.boundaries(t, sequential.obrien_fleming_spending(t, 0.025))
    np.testing.assert_allclose(found, [4.3326, 2.9631, 2.3590, 2.0141], atol=2e-4)


@pytest.mark.parametrize("first,last", [(10, 160), (20, 1000), (100, 250)])
def test_design_spends_what_it_declares(first, last):
    """The crossing probability by each look, computed independently (Genz), equals the design's
    cumulative spending: 2.5% at look 1, 5% at the last."""
    design = sequential.Design.plan(first, last)
    fractions = np.asarray(design.trials, dtype=float) / last
    declared = sequential.spending(fractions)
    np.testing.assert_allclose(
        mvn.cumulative_crossing(fractions, design.critical), declared, atol=2e-5
    )
    assert declared[0] == pytest.approx(0.025) and declared[-1] == pytest.approx(0.05)


def test_schedule_is_fixed_geometric_and_increasing():
    assert sequential.schedule(10, 160) == [10, 20, 40, 80, 160]
    counts = sequential.schedule(3, 7)
    assert counts[0] == 3 and counts[-1] == 7 and all(np.diff(counts) >= 1)
    with pytest.raises(ValueError):
        sequential.schedule(10, 10)


@pytest.mark.parametrize("scenario", list(peeking.SCENARIOS))
def test_peeking_does_not_cheat_at_the_band_edge(scenario):
    """>= 1,000 simulated decide sequences with the default rounds, truth exactly on the edge:
    decide's false-holds rate is <= 5% within its Monte Carlo interval (Wilson 95%); the naive
    loop that looks at 95% after every top-up is significantly above 5% on the same draws."""
    rule, truth, seed = peeking.SCENARIOS[scenario]
    rates = peeking.false_holds(rule, truth, seed)
    decide = rates["decide (group-sequential)"]
    naive = rates[f"naive, after every {peeking.FIRST} trials"]
    assert decide.sequences >= 1000
    assert decide.interval[0] <= 0.05, f"decide's false holds {decide}"
    assert naive.interval[0] > 0.05, f"naive {naive}"
    assert naive.value > decide.value
