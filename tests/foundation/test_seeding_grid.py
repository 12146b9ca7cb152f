"""Stable point ids, independent streams, and chunking that survives re-planning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from helpers.configs import REPO, small_config
from helpers.points import make_point
from oracles.points import chunk, chunk_id, expand, point_id, reference_point

from attnsim.config.load import load
from attnsim.kinds import all_kinds
from attnsim.plan.sweep import MAX_CHUNK_COST_RATIO, plan_experiment
from attnsim.seeding import block_generator, canonical_value

BASE = dict(n=64, d=4, logit_scale=1.0, noise="gaussian", noise_draws=4, noise_scale=0.5)


def test_point_id_canonicalises_floats_and_key_order():
    a = make_point("noisy_attention", BASE)
    b = make_point(
        "noisy_attention",
        {
            **dict(reversed(list(BASE.items()))),
            "logit_scale": 1,
            "noise_scale": 0.5000000000000000001,
        },
    )
    assert a.id == b.id and len(a.id) == 16
    assert canonical_value(-0.0) == 0.0 and str(canonical_value(-0.0)) == "0.0"
    assert canonical_value(0.1 + 0.2) != 0.3  # distinct floats stay distinct


def test_point_id_depends_on_kind_and_every_value():
    ids = {
        make_point("noisy_attention", {**BASE, k: v}).id
        for k, v in [("n", 65), ("d", 5), ("noise", "uniform"), ("noise_scale", 0.25)]
    }
    assert len(ids | {make_point("noisy_attention", BASE).id}) == 5
    assert point_id("a", {"x": 1}) != point_id("b", {"x": 1})


def test_make_point_is_the_reference_point():
    variants = [BASE, {**BASE, "logit_scale": 1, "noise_scale": 2}, {**BASE, "noise": "uniform"}]
    assert [make_point("noisy_attention", v) for v in variants] == [
        reference_point("noisy_attention", v) for v in variants
    ]


def test_stream_shared_only_by_noise_scale_siblings():
    a = make_point("noisy_attention", BASE)
    assert make_point("noisy_attention", {**BASE, "noise_scale": 2.0}).stream == a.stream
    assert make_point("noisy_attention", {**BASE, "noise": "uniform"}).stream != a.stream


def test_block_generators_are_reproducible_and_distinct():
    stream = make_point("noisy_attention", BASE).stream
    x = block_generator(1, stream, 0).standard_normal(8)
    assert np.array_equal(x, block_generator(1, stream, 0).standard_normal(8))
    assert not np.array_equal(x, block_generator(1, stream, 1).standard_normal(8))
    assert not np.array_equal(x, block_generator(2, stream, 0).standard_normal(8))


def test_expand_is_the_cartesian_product_with_siblings_adjacent():
    settings = load(small_config())
    points = expand(settings.experiments["robustness"])
    assert len(points) == 2 * 1 * 2 * 2 * 1 * 2
    assert len({p.id for p in points}) == len(points)
    assert points[0].stream == points[1].stream  # noise_scale varies fastest


@pytest.mark.parametrize(
    "size, budget",
    [
        (1, math.inf),
        (3, math.inf),
        (4, math.inf),
        (7, math.inf),
        (7, 300.0),
        (16, 100.0),
        (16, 250.0),
    ],
)
def test_rechunking_what_is_left_reproduces_the_chunks(size, budget):
    points = expand(load(small_config()).experiments["robustness"])
    costs = {
        p.id: c
        for p, c in zip(
            points, np.random.default_rng(size).choice([16.0, 64.0, 256.0], len(points))
        )
    }
    chunks = chunk(points, size, [costs[p.id] for p in points], budget)
    ids = [chunk_id(c) for c in chunks]
    assert [p for c in chunks for p in c] == points
    assert all(len(c) <= size and sum(costs[p.id] for p in c[:-1]) < budget for c in chunks)
    rng = np.random.default_rng(0)
    for _ in range(200):
        done = set(
            rng.choice(len(chunks), size=rng.integers(0, len(chunks)), replace=False).tolist()
        )
        left = [p for i, c in enumerate(chunks) if i not in done for p in c]
        assert [chunk_id(c) for c in chunk(left, size, [costs[p.id] for p in left], budget)] == [
            ids[i] for i in range(len(chunks)) if i not in done
        ]


@pytest.mark.parametrize("name", ["robustness", "temperature"])
def test_no_chunk_costs_more_than_twice_the_average(tmp_path, name):
    """The default sweep's robustness grid spends most of its cost at the largest n: chunks of
    chunk_size points alone gave one job 80% of it. Grids of uniform cost keep chunk_size chunks.
    (With chunk_size set: without it, jobs are sized by cost alone, test_scale.py.)"""
    config = yaml.safe_load((REPO / "config.yaml").read_text()) | {"chunk_size": 96}
    settings = load(config)
    experiment = settings.experiments[name]
    kind = all_kinds()[experiment.kind]
    by_count = math.ceil(len(expand(experiment)) / settings.chunk_size)
    average = sum(kind.compute.bytes_per_trial(p.params) for p in expand(experiment)) / by_count
    plan = plan_experiment(settings, name, tmp_path)
    costs = [
        sum(kind.compute.bytes_per_trial(p.params) for p in plan.spec(c).points)
        for c in plan.pending
    ]
    largest_point = max(kind.compute.bytes_per_trial(p.params) for p in expand(experiment))
    assert max(costs) < MAX_CHUNK_COST_RATIO * average + largest_point
    assert len(costs) > by_count if name == "robustness" else len(costs) == by_count


@pytest.mark.parametrize("name", sorted(n for n, k in all_kinds().items() if k.example))
def test_arrow_columns_of_the_grid_are_its_python_columns(name):
    """The summary's parameter and id columns, built from each parameter's distinct values taken
    by the index, equal the Arrow arrays of the per-point Python values, for every kind's
    example grid (numbers, strings, booleans); the ids are the reference ids."""
    import pyarrow as pa

    from attnsim.records.grid import grid_columns
    from attnsim.store.parquet import summary_schema

    kind = all_kinds()[name]
    settings = load({"seed": 3, "experiments": {name: {"kind": name, **kind.example}}})
    grid = grid_columns(settings.experiments[name])
    schema = summary_schema(kind)
    for param in kind.param_names:
        expected = pa.array(grid.column(param), type=schema.field(param).type)
        assert grid.arrow_column(param, schema.field(param).type).equals(expected), param
    reference = [point_id(name, dict(zip(kind.param_names, row))) for row in grid.rows()]
    assert grid.id_array().equals(pa.array(reference, pa.string())) and grid.ids() == reference
