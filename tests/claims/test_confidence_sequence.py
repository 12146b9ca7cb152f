"""The confidence sequence `decide` is to judge with (issue 49, docs/science.md §7.8): its
boundary against the mixture martingale it comes from, its time-uniform coverage simulated with
estimated variances at a claim's design, and the false-holds rate of two and three `decide`
calls that continue one recorded sequence (at most the recorded level) against calls that plan
afresh (above it). Fixed seeds; tolerances from the Monte Carlo SE."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsim.claims import confidence_sequence as cs
from attnsim.claims.confidence_sequence import ConfidenceSequence
from attnsim.stats import t_quantile

stats = pytest.importorskip("scipy.stats")

SEQUENCES = 20000  # sufficient statistics make a sequence cheap at any trial count


# --- the boundary --------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", [0.05, 0.5, 1.0, 8.0, 100.0, 1e4])
@pytest.mark.parametrize("alpha", [0.025, 0.05])
def test_the_boundary_is_where_the_mixture_martingale_reaches_one_over_alpha(ratio, alpha):
    """M(S, V) = 2 √(ρ/(V+ρ)) exp(S²/(2(V+ρ))) Φ(S/√(V+ρ)) = 1/α at S = c √V (take ρ = 1,
    V = r): scipy's Φ, in logs."""
    rho, v = 1.0, ratio
    s = cs.critical(ratio, alpha) * math.sqrt(v)
    log_m = (
        math.log(2)
        + 0.5 * math.log(rho / (v + rho))
        + s * s / (2 * (v + rho))
        + stats.norm.logcdf(s / math.sqrt(v + rho))
    )
    assert log_m == pytest.approx(math.log(1 / alpha), abs=1e-9)


def test_rho_is_tuned_to_the_planned_trials():
    best = cs.best_ratio()
    widths = [cs.critical(best * f) for f in (0.8, 1.0, 1.25)]
    assert widths[1] < widths[0] and widths[1] < widths[2]
    design = ConfidenceSequence.plan(2500, 160000)
    assert design.rho == pytest.approx(160000 / best)
    # narrowest at the planned trials: about 1.55x the fixed-sample 95% interval there
    assert design.critical(160000) == pytest.approx(cs.critical(best))
    assert 1.4 < design.critical(160000) / 1.959964 < 1.7
    assert design.critical(2500) == pytest.approx(1.959964, abs=1e-6)  # look 1: the 95% interval


def test_an_idealised_walk_crosses_the_boundary_at_most_alpha_of_the_time():
    """Ville's inequality at every one of 2,048 looks: Gaussian steps of known variance (the
    sequence is valid from the first trial, not only at decide's looks)."""
    rng = np.random.default_rng(49)
    steps = 2048
    walks = np.cumsum(rng.standard_normal((4000, steps)), axis=1)
    n = np.arange(1, steps + 1)
    rho = 512 / cs.best_ratio()
    bound = np.array([cs.critical(k / rho) for k in n]) * np.sqrt(n)
    rate = float((walks >= bound).any(axis=1).mean())
    assert rate <= cs.ALPHA + 3 * math.sqrt(cs.ALPHA * (1 - cs.ALPHA) / 4000), rate


# --- simulation at a claim's design --------------------------------------------------------------


def paths(counts, sequences: int, seed: int, truth: float = 0.0):
    """Mean and SE after each count of i.i.d. N(truth, 1) trials, from each block's exact
    sufficient statistics (its sum, normal; its sum of squares about its mean, chi-square)."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(counts)
    blocks = np.diff(np.concatenate([[0], counts]))
    sums = rng.standard_normal((sequences, blocks.size)) * np.sqrt(blocks) + truth * blocks
    within = rng.chisquare(np.maximum(blocks - 1, 1), (sequences, blocks.size)) * (blocks > 1)
    mean = np.cumsum(sums, axis=1) / counts
    squares = np.cumsum(within + sums**2 / blocks, axis=1) - counts * mean**2
    return mean, np.sqrt(squares / (counts - 1) / counts)


FIRST = 2500  # the precision experiment's trials per point (rotation_gain_fp8)
CALLS = ((3, 8, 23, 64), (128, 256, 512), (1024, 2048, 4096))  # each call's looks, x FIRST


def test_coverage_at_a_claims_design_with_estimated_variances():
    """Look 1 at 95% and every later look of three decide calls on one recorded sequence: each
    side misses the truth at some look at most 2.5% + 2.5% of the time, and at some look after
    the first at most 2.5%."""
    counts = [FIRST] + [FIRST * f for call in CALLS for f in call]
    mean, se = paths(counts, SEQUENCES, seed=7)
    design = ConfidenceSequence.plan(FIRST, FIRST * CALLS[0][-1])
    crit = np.array([design.t_critical(n, n - 1) for n in counts])
    assert crit[0] == pytest.approx(t_quantile(0.975, FIRST - 1))
    below = mean - crit * se > 0  # the truth below the interval at a look
    above = mean + crit * se < 0
    slack = 3 * math.sqrt(0.05 * 0.95 / SEQUENCES)
    for side in (below, above):
        assert side.any(axis=1).mean() <= 0.05 + slack
        assert side[:, 1:].any(axis=1).mean() <= cs.ALPHA + slack


def false_holds(calls, continuing: bool, seed: int, tolerance: float = 1.0, first: int = 100):
    """The share of sequences that ever `holds` with the truth on the band's upper edge (every
    holds false), for `decide` calls with these looks (multiples of `first`), each stopping a
    sequence at its first holds or fails. Continuing: every call judges with the recorded
    sequence (through its record and back). Afresh: every call after the first re-judges its
    current data at 95% as its look 1 and plans a new sequence (the old design's behaviour)."""
    counts = [first] + [first * f for call in calls for f in call]
    mean, se = paths(counts, SEQUENCES, seed, truth=tolerance)
    alive = np.ones(SEQUENCES, bool)
    held = np.zeros(SEQUENCES, bool)

    def look(column: int, critical: float) -> None:
        low = mean[:, column] - critical * se[:, column]
        high = mean[:, column] + critical * se[:, column]
        holds = (low >= -tolerance) & (high <= tolerance)
        fails = (high < -tolerance) | (low > tolerance)
        held[:] |= holds & alive
        alive[:] &= ~(holds | fails)

    look(0, t_quantile(0.975, first - 1))
    recorded = None
    column = 1
    for number, call in enumerate(calls):
        planned = first * call[-1]
        if continuing:
            design = cs.continue_design(recorded, first, planned)
        else:
            if number:
                look(column - 1, t_quantile(0.975, counts[column - 1] - 1))
            design = ConfidenceSequence.plan(counts[column - 1], planned)
        for factor in call:
            n = first * factor
            look(column, design.t_critical(n, n - 1))
            column += 1
        if continuing:  # the state record keeps it; the next call reads it back
            recorded = cs.record(design, counts[:column], ("precision",))["parameters"]
    return float(held.mean())


def test_a_second_and_third_decide_continue_the_recorded_budget():
    """Continuing one recorded sequence keeps false holds at most 5% per side (the recorded
    level, 0.90 two-sided) after two and three calls; planning afresh at each call spends a
    new budget each time and exceeds it after three (issue 49 measured 7.2% after two and 9.4%
    after three restarts of the old group-sequential design)."""
    se = math.sqrt(0.05 * 0.95 / SEQUENCES)
    for calls in (CALLS[:1], CALLS[:2], CALLS):
        kept = false_holds(calls, continuing=True, seed=11)
        assert kept <= 0.05 + 3 * se, (len(calls), kept)
    afresh = false_holds(CALLS, continuing=False, seed=11)
    assert afresh - 3 * se > 0.05, afresh
    assert afresh > false_holds(CALLS, continuing=True, seed=11)


# --- the record ----------------------------------------------------------------------------------


def test_the_record_carries_everything_to_recompute_the_intervals():
    design = ConfidenceSequence.plan(2500, 160000)
    fields = cs.record(design, [2500, 7500, 20000], ["precision"])
    assert fields["method"] == "confidence sequence" and fields["level"] == pytest.approx(0.90)
    assert fields["looks"] == ((1, 2500), (2, 7500), (3, 20000))
    assert fields["planned_looks"] == 0  # open-ended: never "spent"
    again = ConfidenceSequence.from_parameters(fields["parameters"])
    assert again == design
    assert cs.continue_design(fields["parameters"], 99, 10**9) == design  # not re-tuned
    assert cs.continue_design(None, 2500, 160000) == design
    assert "5% per side over all looks" in design.level_text
    with pytest.raises(ValueError, match="grow"):
        cs.record(design, [2500, 2000])
    with pytest.raises(ValueError, match="lacks rho"):
        ConfidenceSequence.from_parameters({"first_trials": 1, "planned_trials": 2})


def test_widened_intervals_keep_the_centre_and_grow_after_look_one():
    design = ConfidenceSequence.plan(100, 6400)
    assert design.widened(0.9, 1.1, 100) == pytest.approx((0.9, 1.1))
    low, high = design.widened(0.9, 1.1, 800)
    assert (low + high) / 2 == pytest.approx(1.0) and high - low > 0.2 * 1.5
    assert all(math.isnan(x) for x in design.widened(math.nan, 1.0, 800))


def test_heavy_tailed_estimators_are_refused_with_the_reason():
    assert cs.refusal("rotation_gain_fp8", "light") == ""  # the engine's ClaimSpec.tails
    why = cs.refusal("normaliser_gradient_softmax", "heavy")
    assert why.startswith("normaliser_gradient_softmax: ") and "no bootstrap" in why
    assert "\n" not in why
    with pytest.raises(ValueError, match="tails"):
        cs.refusal("c", "normal")


# --- bounded observations (empirical Bernstein) --------------------------------------------------


def naive_bernstein(x, alpha):
    """Waudby-Smith & Ramdas (2024), Theorem 2 (one side at level alpha), observation by
    observation on [0, 1]: the oracle of the vectorised sequence."""
    lower, upper = [], []
    total = squares = bets = weighted = penalty = 0.0
    mean_before, variance_before = 0.5, 0.25
    log_alpha = math.log(1 / alpha)
    for t, y in enumerate(x, start=1):
        bet = min(math.sqrt(2 * log_alpha / (variance_before * t * math.log(t + 1))), 0.5)
        penalty += 4 * (y - mean_before) ** 2 * (-math.log(1 - bet) - bet) / 4
        bets += bet
        weighted += bet * y
        total += y
        mean = (0.5 + total) / (t + 1)
        squares += (y - mean) ** 2
        variance_before, mean_before = (0.25 + squares) / (t + 1), mean
        half = (log_alpha + penalty) / bets
        lower.append(max(weighted / bets - half, 0.0))
        upper.append(min(weighted / bets + half, 1.0))
    return np.array(lower), np.array(upper)


def test_the_bernstein_sequence_is_the_papers_formula():
    x = np.random.default_rng(5).beta(0.3, 2.0, 300)
    low, high = cs.bernstein_bounds(2 + 3 * x, 2.0, 5.0)
    naive_low, naive_high = naive_bernstein(x, cs.ALPHA)
    np.testing.assert_allclose(low, 2 + 3 * naive_low, rtol=1e-12)
    np.testing.assert_allclose(high, 2 + 3 * naive_high, rtol=1e-12)


def test_the_bernstein_sequence_covers_a_near_tie_like_law_where_t_intervals_do_not():
    """Beta(0.05, 2): mostly near 0, rarely large, like a mean carried by near-ties. Over 1,000
    observations checked after each one, each side of the sequence misses the mean at most 2.5%
    of the time (1,000 sequences); the 95% t interval of 50 observations misses it from above
    in far more than 2.5% (the skew: most samples hold no large value)."""
    rng = np.random.default_rng(8)
    a, b = 0.05, 2.0
    mean = a / (a + b)
    low, high = cs.bernstein_bounds(rng.beta(a, b, (1000, 1000)), 0.0, 1.0)
    slack = 3 * math.sqrt(cs.ALPHA * (1 - cs.ALPHA) / 1000)
    assert (low > mean).any(axis=1).mean() <= cs.ALPHA + slack
    assert (high < mean).any(axis=1).mean() <= cs.ALPHA + slack
    small = rng.beta(a, b, (4000, 50))
    half = t_quantile(0.975, 49) * small.std(axis=1, ddof=1) / math.sqrt(50)
    assert (small.mean(axis=1) + half < mean).mean() > 0.10


@pytest.mark.parametrize(
    "x,low,high", [([0.5, 1.5], 0.0, 1.0), ([math.nan], 0.0, 1.0), ([0.5], 1.0, 1.0), ([], 0, 1)]
)
def test_bernstein_refuses_observations_outside_their_declared_bound(x, low, high):
    with pytest.raises(ValueError, match="bernstein_bounds"):
        cs.bernstein_bounds(np.asarray(x, dtype=float), low, high)
