"""A point's numbers do not depend on its chunk, its siblings, the thread count or the run."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from helpers.configs import small_config
from helpers.points import make_point, spec_of_points
from oracles.points import expand

from attnsim.config.load import load
from attnsim.errors import ConfigError
from attnsim.jobs.simulate import simulate_points, trials_table
from attnsim.kinds import get_kind
from attnsim.kinds.noisy_attention import KIND
from attnsim.records.chunk import ChunkSpec
from attnsim.records.experiment import TrialSettings


def points():
    return expand(load(small_config()).experiments["robustness"])


def test_point_alone_equals_point_with_siblings_and_threads():
    pts = points()
    together = simulate_points(get_kind("noisy_attention"), TrialSettings(7, 37), pts, threads=1)
    threaded = simulate_points(get_kind("noisy_attention"), TrialSettings(7, 37), pts, threads=2)
    for p in pts:
        alone = simulate_points(get_kind("noisy_attention"), TrialSettings(7, 37), [p])[p.id]
        for name in alone:
            assert np.array_equal(alone[name], together[p.id][name]), name
            assert np.array_equal(alone[name], threaded[p.id][name]), name


def test_block_size_spans_several_blocks_for_large_points():
    big = make_point(
        "noisy_attention",
        dict(n=65536, d=32, logit_scale=1.0, noise="gaussian", noise_draws=4, noise_scale=0.5),
    )
    assert KIND.block_trials(big.params) == 1
    small = points()[0]
    assert 1 < KIND.block_trials(small.params) <= 1024


def test_trials_table_schema_and_rows():
    pts = points()[:3]
    table = trials_table(
        KIND,
        pts,
        simulate_points(get_kind("noisy_attention"), TrialSettings(7, 5), pts),
    )
    assert table.num_rows == 15
    assert (
        table.schema.field("n").type == pa.int64()
        and table.schema.field("noise").type == pa.string()
    )
    assert table.schema.field("sq_err").metadata[b"description"]
    assert table["trial"].to_pylist() == [0, 1, 2, 3, 4] * 3


def test_spec_round_trip_and_bad_specs():
    pts = points()[:4]
    spec = spec_of_points("robustness", get_kind("noisy_attention"), 7, 20, pts).to_json()
    parsed = ChunkSpec.from_json(spec)
    assert (
        [p.id for p in parsed.points] == [p.id for p in pts]
        and parsed.trial_settings.trials == 20
        and parsed.to_json() == spec
    )
    for bad in ("not json", '{"kind": "nope"}', spec.replace('"noise_scale"', '"noise_level"')):
        with pytest.raises(ConfigError, match="chunk spec"):
            ChunkSpec.from_json(bad)


def test_adaptive_precision_adds_rounds_until_the_target_and_keeps_earlier_rounds():
    pts = [
        make_point(
            "noisy_attention",
            dict(n=16, d=4, logit_scale=1.0, noise="gaussian", noise_draws=2, noise_scale=s),
        )
        for s in (0.05, 1.0)
    ]
    fixed = simulate_points(get_kind("noisy_attention"), TrialSettings(7, 20), pts)
    adaptive = simulate_points(get_kind("noisy_attention"), TrialSettings(7, 20, 0.004, 200), pts)
    calm, wild = (adaptive[p.id]["rel_err"] for p in pts)
    assert calm.size == 20 and calm.std(ddof=1) / 20**0.5 <= 0.004  # already precise: one round
    # never precise enough: stopped by max_trials (a multiple of the round size)
    assert wild.size == 200
    # the first round is the fixed-trials run
    assert np.array_equal(wild[:20], fixed[pts[1].id]["rel_err"])
    alone = simulate_points(get_kind("noisy_attention"), TrialSettings(7, 20, 0.004, 200), pts[1:])
    assert np.array_equal(alone[pts[1].id]["rel_err"], wild)


def test_round_blocks_split_evenly():
    from attnsim.jobs.simulate import round_blocks

    big = make_point(
        "noisy_attention",
        dict(n=4096, d=64, logit_scale=1.0, noise="gaussian", noise_draws=8, noise_scale=0.5),
    )
    sizes = round_blocks(KIND, big.params, 201)
    assert (
        sum(sizes) == 201
        and max(sizes) <= KIND.block_trials(big.params)
        and max(sizes) - min(sizes) <= len(sizes)
    )


def many_points(kind: str) -> list:
    """Points of one kind spanning the kernels' paths: several streams, more scales than one group
    holds, every noisy-attention form (expm1, exp, shifted exp), heavy tails and one-hot weights."""
    if kind == "noisy_attention":
        grid = [
            dict(n=300, d=5, logit_scale=ls, noise=f, noise_draws=3, noise_scale=s)
            for ls in (1.0, 30.0)
            for f in ("gaussian", "student_t")
            for s in (0.0, 0.01, 0.3, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 20.0)
        ]
    elif kind == "logit_entropy":
        grid = [
            dict(n=300, d=5, logits=lg, scale=s)
            for lg in ("gaussian", "dot_product")
            for s in (0.0, 0.1, 1.0, 3.0, 100.0)
        ]
    elif kind == "temperature_entropy":
        grid = [dict(n=300, d=d, tau=t) for d in (2, 7) for t in (0.01, 0.1, 1.0, 10.0)]
    else:
        grid = [dict(n=300, d=5, scale=s) for s in (0.0, 0.3, 1.0, 3.0, 30.0)]
    return [make_point(kind, params) for params in grid]


@pytest.mark.parametrize(
    "kind", ["noisy_attention", "logit_entropy", "temperature_entropy", "init_gradient"]
)
def test_numbers_do_not_depend_on_threads_siblings_or_order(kind, monkeypatch):
    """Bit for bit: 1, 2 or 3 threads; the points alone, reversed or together; with small blocks
    (many per point) and keys streamed in small chunks, so every path of the driver and kernels
    runs."""
    from attnsim.kinds import base
    from attnsim.kinds.init_gradient import kernel as init_gradient
    from attnsim.kinds.noisy_attention import kernel as noisy_attention

    monkeypatch.setattr(base, "TARGET_BLOCK_BYTES", 200_000)
    monkeypatch.setattr(noisy_attention, "CHUNK_BYTES", 20_000)
    monkeypatch.setattr(init_gradient, "CHUNK_BYTES", 20_000)
    pts = many_points(kind)
    reference = simulate_points(get_kind(kind), TrialSettings(11, 23), pts, threads=1)
    assert all(np.isfinite(reference[p.id]["entropy"]).all() for p in pts)
    runs = [
        simulate_points(get_kind(kind), TrialSettings(11, 23), pts, threads=2),
        simulate_points(get_kind(kind), TrialSettings(11, 23), pts[::-1], threads=3),
    ]
    runs += [simulate_points(get_kind(kind), TrialSettings(11, 23), [p]) for p in pts[::4]]
    for run in runs:
        for pid, metrics in run.items():
            for name, values in metrics.items():
                assert np.array_equal(values, reference[pid][name], equal_nan=True), (pid, name)


def test_blas_is_pinned_to_one_thread_for_every_thread_count():
    """Matrix products are computed the same way whatever the thread count: BLAS runs on one
    thread."""
    import dataclasses

    from threadpoolctl import threadpool_info

    seen = []

    def spy(rng, trials, members):
        seen.extend(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
        return [{c.name: np.zeros(trials) for c in KIND.schema.metrics} for _ in members]

    spying = dataclasses.replace(
        KIND, compute=dataclasses.replace(KIND.compute, simulate_block=spy)
    )
    for threads in (1, 2):
        simulate_points(spying, TrialSettings(1, 5), points()[:2], threads=threads)
    assert seen and set(seen) == {1}
