"""Locating a boundary (claims/boundary.py, docs/science.md §7.9) on constructed claims with known
crossings: monotone up and down, a flat region, a crossing outside the range, two crossings; the
final stage's trials fresh; the confidence set against its closed form; the budget, the target
and the record; and the coverage study's summary on fewer runs (benchmarks/locate_coverage.py),
with a tolerance from its Monte Carlo SE."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from attnsim.claims import boundary as b
from attnsim.records import state
from benchmarks import locate_coverage as study


def evaluator(mu, sd=0.3, seed=0, shared=False, ranges=None):
    """Per-trial values mu(x) + sd N(0, 1): one stream per (point, range), or per range for
    shared draws; `ranges` collects every (x, start, stop) read."""

    def evaluate(x, start, stop):
        rows = []
        for point in x:
            key = 0 if shared else int(round(point * 2**30))
            rng = np.random.default_rng([seed, key, start, stop])
            rows.append(mu(point) + sd * rng.standard_normal(stop - start))
            if ranges is not None:
                ranges.append((float(point), start, stop))
        return b.Evaluation.of_values(np.asarray(rows))

    return evaluate


def near(crossing, truth):
    """x* within the interval widened by its own width on each side: a miss of the 95% interval
    happens in 1 run of 20 (the coverage is the study's to test), a miss of this in < 1 in 10^4
    (about 6 standard errors)."""
    return crossing.low - crossing.width <= truth <= crossing.high + crossing.width


def run(mu, edge, seed=0, budget=20_000, **kwargs):
    shared = kwargs.pop("shared", False)
    ranges = kwargs.pop("ranges", None)
    evaluate = evaluator(mu, seed=seed, shared=shared, ranges=ranges)
    return b.locate(evaluate, edge, 0.0, 1.0, budget, quantum=50, **kwargs)


@pytest.mark.parametrize("seed", range(3))
def test_monotone_up(seed):
    got = run(lambda x: 0.9 + 0.2 * x, 1.0, seed)
    assert got.status == b.LOCATED
    (c,) = got.crossings
    assert c.direction == 1 and c.monotone and c.pieces == 1
    assert near(c, 0.5) and c.width < 0.1
    assert c.low <= c.estimate <= c.high
    assert got.cost <= got.budget


@pytest.mark.parametrize("seed", range(3))
def test_monotone_down_with_shared_draws(seed):
    truth = math.sqrt(0.05 / 0.3)
    got = run(lambda x: 1 - 0.3 * x * x, 0.95, seed, shared=True)
    assert got.status == b.LOCATED
    (c,) = got.crossings
    assert c.direction == -1 and near(c, truth)


@pytest.mark.parametrize("seed", range(3))
def test_a_flat_region_before_the_crossing(seed):
    """mu is flat at 0.8 up to 0.5 and rises after: the plateau below the edge is not a
    crossing, the rise through 0.9 at 0.625 is, located narrowly."""
    got = run(lambda x: 0.8 + 0.8 * max(0.0, x - 0.5), 0.9, seed)
    assert got.status == b.LOCATED
    (c,) = got.crossings
    assert near(c, 0.625) and c.width < 0.05 and c.low > 0.5


@pytest.mark.parametrize("seed", range(3))
def test_a_flat_region_at_the_edge_is_not_a_point(seed):
    """mu equals the edge on [0.4, 0.6]: no single x* exists. The answer is not located, its
    interval meets the plateau and is no narrower than a third of it."""
    got = run(lambda x: 0.9 + 0.5 * min(0.0, x - 0.4) + 0.5 * max(0.0, x - 0.6), 0.9, seed)
    assert got.status == b.NOT_LOCATED
    assert got.crossings
    for c in got.crossings:
        assert c.status == b.NOT_LOCATED
        assert c.low <= 0.6 and c.high >= 0.4 and c.width >= 0.2 / 3


@pytest.mark.parametrize("seed", range(3))
def test_a_crossing_outside_the_range(seed):
    got = run(lambda x: x + 0.5, 2.0, seed)
    assert got.status == b.NONE_IN_RANGE and not got.crossings
    assert "below the edge" in got.note
    assert got.cost < got.budget / 2  # it stops after the first look


@pytest.mark.parametrize("seed", range(3))
def test_two_crossings_are_both_reported(seed):
    """A hump through 0.5 at 0.5 -+ sqrt(1/8): two crossings, each located on its own."""
    got = run(lambda x: 1 - 4 * (x - 0.5) ** 2, 0.5, seed)
    assert got.status == b.LOCATED and len(got.crossings) == 2
    up, down = got.crossings
    assert (up.direction, down.direction) == (1, -1)
    assert near(up, 0.5 - math.sqrt(1 / 8)) and near(down, 0.5 + math.sqrt(1 / 8))
    assert "2 crossings" in got.note


def test_a_reversal_inside_a_bracket_is_flagged():
    """The first look brackets [1/3, 1/2] (mu rising through 0.5 at its middle); the first
    placement round's points, 5/12 -+ 1/36, land on a bump above the edge on the left and a dip
    below it on the right: a known point on each side in the wrong order."""

    def mu(x):
        if 0.38 <= x <= 0.40:
            return 0.8
        if 0.43 <= x <= 0.46:
            return 0.2
        return 0.3 + (x - 1 / 3) * 2.4

    got = b.locate(evaluator(mu, sd=0.05), 0.5, 0.0, 1.0, 20_000, quantum=50)
    placed = [k for k in got.looks if k.stage == "place"]
    assert placed[0].x == pytest.approx([5 / 12 - 1 / 36, 5 / 12 + 1 / 36], abs=1e-3)
    assert got.crossings and not all(c.monotone for c in got.crossings)
    assert "not monotone" in b.summary(got)


def test_the_final_stage_reads_only_fresh_trials():
    """Every trial index the final stage reads lies beyond every index the placement read, at
    every point: with shared draws nothing the placement saw enters the interval."""
    ranges: list = []
    got = run(lambda x: 1 - 0.3 * x * x, 0.95, 1, shared=True, ranges=ranges)
    final = [k for k in got.looks if k.stage == "final"]
    placed = [k for k in got.looks if k.stage != "final"]
    assert final and placed
    assert min(k.start for k in final) >= max(k.stop for k in placed)
    assert {(k.start, k.stop) for k in final} == {got.crossings[0].final_trials}
    assert len(ranges) == sum(k.x.size for k in got.looks)


def test_the_answer_is_a_function_of_the_evaluations():
    first = run(lambda x: 0.9 + 0.2 * x, 1.0, 5)
    second = run(lambda x: 0.9 + 0.2 * x, 1.0, 5)
    assert first.record() == second.record()


def test_the_confidence_set_is_the_closed_form_without_curvature():
    """Two independent points, no curvature: S = {x : (L(x) - c)^2 <= z^2 var L(x)}, a
    quadratic inequality (Fieller) solved in closed form."""
    x = np.array([0.2, 0.6])
    ev = b.Evaluation.of_means([0.9, 1.1], [0.01, 0.02])
    edge, z = 1.0, b.critical(0.95, math.inf)
    got = b.crossing_set(x, ev, edge, 0.0, 0.0, 1.0)
    # L = 0.9 + 0.5 (u - 0.2); lam = (u - 0.2) / 0.4; var = (1-lam)^2 1e-4 + lam^2 4e-4
    lam = np.roots(
        [0.2**2 - z * z * (1e-4 + 4e-4), -0.2 * 0.1 * 2 + z * z * 2e-4, 0.1**2 - z * z * 1e-4]
    )
    ends = np.sort(0.2 + 0.4 * lam)
    assert got.lows.size == 1
    assert got.hull == pytest.approx(tuple(ends), abs=1e-9)
    assert got.covers(0.4) and not got.covers(0.6)


def test_shared_draws_widen_the_set_by_their_covariance():
    """Perfectly correlated points: the line's level moves as one; ignoring the covariance (the
    means alone) would make the set too narrow between the points."""
    rng = np.random.default_rng(3)
    common = rng.standard_normal(400)
    values = np.stack([0.9 + 0.1 * common, 1.1 + 0.1 * common])
    paired = b.Evaluation.of_values(values)
    alone = b.Evaluation.of_means(paired.mean, paired.se, paired.df)
    x = np.array([0.0, 1.0])
    wide = b.crossing_set(x, paired, 1.0, 0.0, 0.0, 1.0)
    narrow = b.crossing_set(x, alone, 1.0, 0.0, 0.0, 1.0)
    assert wide.hull[1] - wide.hull[0] > 1.2 * (narrow.hull[1] - narrow.hull[0])


def test_curvature_widens_the_set():
    x = np.array([0.4, 0.6])
    ev = b.Evaluation.of_means([0.9, 1.1], [0.01, 0.01])
    flat = b.crossing_set(x, ev, 1.0, 0.0, 0.0, 1.0)
    bent = b.crossing_set(x, ev, 1.0, 5.0, 0.0, 1.0)
    assert bent.hull[0] < flat.hull[0] and bent.hull[1] > flat.hull[1]
    per_segment = b.crossing_set(x, ev, 1.0, np.array([5.0]), 0.0, 1.0)
    assert per_segment.hull == bent.hull


def test_a_target_stops_early_and_a_small_budget_is_one_line():
    wide = run(lambda x: 0.9 + 0.2 * x, 1.0, 2)
    target = 2 * wide.crossings[0].width
    cheap = run(lambda x: 0.9 + 0.2 * x, 1.0, 2, target=target)
    assert cheap.cost < wide.cost
    assert cheap.crossings[0].status == b.LOCATED
    assert cheap.crossings[0].width <= target
    with pytest.raises(ValueError, match="buys less than the first look") as error:
        run(lambda x: x, 0.5, budget=100)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="lo < hi"):
        b.locate(evaluator(lambda x: x), 0.5, 1.0, 0.0, 1000)


def test_the_plan_bills_at_most_the_budget():
    plan = b.plan(0.0, 1.0, 20_000, quantum=50)
    assert (plan.scan_points, plan.scan_trials) == (7, 550)
    first_look = plan.scan_points * plan.scan_trials
    placement = plan.rounds * 2 * plan.scan_trials
    assert first_look + placement + 2 * plan.final_trials <= 20_000
    assert plan.final_trials >= 20_000 / 2 / 2 - 50


def test_the_record_fits_the_workspace_state():
    got = run(lambda x: 1 - 4 * (x - 0.5) ** 2, 0.5, 0)
    key = b.boundary_key("delta_method_gaussian", "noise_scale", "lower", {"n": 16, "d": 16})
    record = got.record(claim="delta_method_gaussian", axis="noise_scale", edge="lower")
    assert key == "delta_method_gaussian|noise_scale|lower|d=16,n=16"
    text = yaml.safe_dump(state.to_data(state.WorkspaceState(boundaries={key: record})))
    again = state.from_data(yaml.safe_load(text))
    assert again.boundaries[key] == record
    assert record["looks"][-1]["stage"] == "final" and len(record["crossings"]) == 2


def test_evaluations_check_their_shapes():
    with pytest.raises(ValueError, match="two units"):
        b.Evaluation.of_values([[1.0]])
    with pytest.raises(ValueError, match="one mean and one se"):
        b.Evaluation.of_means([1.0, 2.0], [0.1])


# --- the coverage study, smaller (benchmarks/locate_coverage.py holds the full one) ---------------

CI_RUNS = 80


@pytest.mark.parametrize("name", list(study.PROBLEMS))
def test_coverage_summary(name):
    """On CI_RUNS runs of each named problem: coverage at least 0.95 - 3 Monte Carlo SEs, and the
    median width no wider than the narrowest fixed grid of the same cost (oracle curvature)."""
    problem = study.PROBLEMS[name]
    runs = range(study.CI_FIRST, study.CI_FIRST + CI_RUNS)
    outcomes = [study.run_locate(problem, r)[0] for r in runs]
    mine = study.summarise("locate", outcomes)
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / CI_RUNS)
    assert mine.coverage >= floor, mine.text
    grids = [
        study.summarise(f"grid {g}", [study.run_grid(problem, r, g) for r in runs])
        for g in study.GRIDS
    ]
    assert mine.median_width <= min(s.median_width for s in grids), mine.text
