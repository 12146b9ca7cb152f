"""Resource requests and scheduling priorities of chunk jobs, from their specs."""

from __future__ import annotations

from helpers.points import make_point, spec_of_points

from attnsim.kinds import get_kind
from attnsim.records import cost as resources
from attnsim.records.cost import ChunkCost


def spec(n: int, trials: int = 100, scales=(0.1, 0.5)) -> ChunkCost:
    points = [
        make_point(
            "noisy_attention",
            dict(n=n, d=16, logit_scale=1.0, noise="gaussian", noise_draws=8, noise_scale=s),
        )
        for s in scales
    ]
    return spec_of_points("robustness", get_kind("noisy_attention"), 1, trials, points).cost


def test_priority_is_the_critical_path_longest_chunks_first():
    small, large = resources.chunk_priority(spec(64)), resources.chunk_priority(spec(4096))
    assert (
        large
        > small
        > resources.PRIORITY["collect"]
        > resources.PRIORITY["figures"]
        > resources.PRIORITY["claims"]
    )
    assert resources.chunk_priority(spec(64, trials=1000)) > small  # more trials, more work


def test_requests_grow_with_the_work_and_the_threads():
    assert (
        resources.chunk_mem_mb(spec(4096), 4)
        > resources.chunk_mem_mb(spec(4096), 1)
        >= resources.BASE_MB
    )
    assert resources.chunk_runtime_min(spec(64), 1) == 5  # the floor
    assert resources.chunk_runtime_min(spec(16384, trials=10**5), 1) > resources.chunk_runtime_min(
        spec(16384, trials=10**5), 4
    )


def test_a_training_run_costs_in_proportion_to_its_steps():
    """Issue 24 item 1: the training kinds' cost followed only their arrays' size, so a 10^6-point
    sweep made 2 jobs of many hours. Time now follows the steps (each step's work is counted:
    `Compute.counts`); memory and blocks do not."""
    for name in ("recall_training", "contrastive_training"):
        kind = get_kind(name)
        base = {p: values[0] for p, values in kind.example["grid"].items()}
        points = {steps: make_point(kind, base | {"steps": steps}) for steps in (50, 2000)}
        costs = {s: spec_of_points("e", kind, 1, 8, [p]).cost for s, p in points.items()}
        assert kind.block_trials(points[50].params) == kind.block_trials(points[2000].params)
        assert costs[2000].work / costs[50].work > 0.8 * 2000 / 50
        assert costs[2000].block_bytes == costs[50].block_bytes
        assert resources.chunk_mem_mb(costs[2000], 1) == resources.chunk_mem_mb(costs[50], 1)
