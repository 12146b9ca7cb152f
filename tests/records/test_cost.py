"""The cost model (issue 50 item 5): every kind counts its work, the calibration table covers every
kind and unit, and a chunk's cost is its points' own work plus each stream's draws once."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
from helpers.points import make_point, spec_of_points

from attnsim.kinds import all_kinds, get_kind
from attnsim.kinds.base import Counts, Work
from attnsim.records import cost
from attnsim.records.grid import points_from_rows

BUILT_IN = sorted(k for k, kind in all_kinds().items() if kind.package.startswith("attnsim.kinds."))


def example_points(kind):
    grid = kind.example["grid"]
    values = [grid.get(p.name, [p.default]) for p in kind.schema.params]
    rows = [tuple(v[i % len(v)] for v in values) for i in range(4)]
    return points_from_rows(kind, rows)


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_kind_counts_its_work(name):
    """Counts are declared (not the bytes fallback), finite and non-negative, and some of the
    unavoidable units (the machine bound's) are non-zero at its example's points."""
    kind = get_kind(name)
    assert kind.compute.counts is not None
    for point in example_points(kind):
        work = kind.compute.work(point.params)
        assert isinstance(work, Work)
        for counts in (work.own, work.shared, work.own_block, work.shared_block, work.setup):
            assert all(math.isfinite(v) and v >= 0 for v in counts.values())
        total = work.own + work.shared
        assert total.normals + total.normals64 + total.words + total.exps + total.exps32 > 0


def test_the_table_covers_every_kind_and_unit():
    table = cost.calibration()
    assert table["fallback"] in table["classes"]
    units = {f.name for f in fields(Counts)}
    for klass, entry in table["classes"].items():
        assert set(entry["seconds"]) == units, klass
        assert all(0 < s < 1e-3 for s in entry["seconds"].values()), klass
        assert set(BUILT_IN) <= set(entry["factors"]), klass
        assert all(0.05 < f < 20 for f in entry["factors"].values()), klass


def test_an_unknown_class_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(cost.CLASS_VARIABLE, "Z80")
    cost.cost_class.cache_clear()
    try:
        with pytest.raises(ValueError, match="ATTNSIM_COST_CLASS='Z80': not a class of"):
            cost.cost_class()
    finally:
        monkeypatch.delenv(cost.CLASS_VARIABLE)
        cost.cost_class.cache_clear()


def test_a_chunk_costs_its_points_own_work_and_each_streams_draws_once():
    """The planner's columnar cost (`point_costs`, `chunk_cost`) against a plain sum: for chunks cut
    anywhere across two streams, own work per point, draws and setup once per stream."""
    kind = get_kind("noisy_attention")
    base = dict(n=256, d=16, logit_scale=1.0, noise="gaussian", noise_draws=8)
    points = [
        make_point(kind, base | {"logit_scale": ls, "noise_scale": s})
        for ls in (0.0, 1.0)
        for s in (0.1, 0.3, 0.5)
    ]
    trials, cap = 100, 100
    seconds = [cost.point_seconds(kind, p.params, trials, cap) for p in points]
    streams = [0, 0, 0, 1, 1, 1]
    costs = cost.point_costs(
        [kind.compute.bytes_per_trial(p.params) for p in points],
        streams,
        [own for own, _ in seconds],
        [shared for _, shared in seconds],
        cap,
    )
    for start, end in ((0, 6), (1, 4), (2, 3), (4, 6)):
        rows = np.arange(start, end)
        fixed = cost.POINT_SECONDS + cost.ROW_SECONDS * cap
        expected = sum(seconds[i][0] + fixed for i in rows)
        last = {streams[i]: i for i in rows}  # each stream's draws at its last point in the chunk
        expected += sum(seconds[i][1] for i in last.values())
        got = cost.chunk_cost(kind, costs, rows, cap).work
        assert got == pytest.approx(expected, rel=1e-6)
    # a spec computes the same cost as the planner's columns
    spec = spec_of_points("e", kind, 1, trials, points)
    whole = cost.chunk_cost(kind, costs, slice(None), cap).work
    assert spec.cost.work == pytest.approx(whole, rel=1e-6)


def test_blocks_and_setup_are_charged_per_block_and_once():
    """A kind's per-block work is shared by a block's trials: twice the trials per round, half the
    per-trial share; setup (a model read once per job) does not grow with the trials."""
    kind = get_kind("real_entropy")
    params = make_point(kind, {"n": 32, "init_std": 0.0, "layer": 0, "head": 0}).params
    work = kind.compute.work(params)
    assert cost.counted_seconds(work.setup, cost.unit_seconds()) > 0
    one = cost.point_seconds(kind, params, 1, 1)
    many = cost.point_seconds(kind, params, 1000, 1000)
    setup = cost.factor(kind) * cost.counted_seconds(work.setup, cost.unit_seconds())
    assert many[1] - setup < 1000 * (one[1] - setup)  # blocks amortised over their trials
    assert many[1] > setup and one[1] > setup
