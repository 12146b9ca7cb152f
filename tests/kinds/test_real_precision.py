"""`real_precision`: the trained heads' q, k, v as `heads.rows` has them, the kernel against the
naive
per-row oracle of the low-precision kinds, and rows independent of threads, siblings and blocks."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.points import make_point
from oracles import precision_attention as oracle

from attnsim.jobs.simulate import simulate_points
from attnsim.kinds import get_kind
from attnsim.models import assets, heads
from attnsim.records.experiment import TrialSettings


@pytest.fixture
def resources(minilm_dir):
    assets.set_resources(minilm_dir.parent)
    yield minilm_dir.parent
    assets.set_resources(None)


def test_query_key_rows_agree_with_rows(resources):
    ids, positions = heads.draw_trials(np.random.default_rng(3), 10, 4)
    bert = heads.trained()
    plain = list(heads.rows(bert, ids, positions, [1, 4]))
    full = list(heads.query_key_rows(bert, ids, positions, [1, 4]))
    assert len(plain) == len(full)
    for (part, layers), (part2, layers2) in zip(plain, full):
        assert part == part2
        for layer, (logits, values) in layers.items():
            got = layers2[layer]
            assert np.array_equal(got[0], logits) and np.array_equal(got[3], values)
            assert np.allclose(
                (got[1].astype(np.float64)[:, :, None, :] * got[2]).sum(-1)
                / np.sqrt(heads.HEAD_SIZE),
                logits,
            )


def test_kernel_matches_the_naive_oracle(resources):
    from attnsim.kinds.real_precision import kernel

    points = [
        dict(layer=layer, head=head, format=f, site=s)
        for layer, head in ((0, 3), (5, 11))
        for f in ("bfloat16", "float8_e5m2")
        for s in ("logits", "qk_rotated", "probs")
    ]
    out, (ids, positions, rotations) = kernel.simulate(
        np.random.default_rng(4), 4, 12, points, record=True
    )
    ((_, layers),) = list(heads.query_key_rows(heads.trained(), ids, positions, [0, 5]))
    for p, metrics in zip(points, out):
        logits, q, k, v = layers[p["layer"]]
        h = p["head"]
        for t in range(4):
            ref = oracle.row(
                logits[t, h], v[t, h], q[t, h], k[t, h], rotations[t], p["format"], p["site"]
            )
            # the float32 products' order (see test_precision_attention)
            rel = 5e-3 if p["site"].startswith("qk") else 2e-6
            for name, value in ref.items():
                tolerance = rel if name in ("sq_err", "sq_err_iid", "logit_shift") else 2e-5
                assert metrics[name][t] == pytest.approx(value, rel=tolerance, abs=1e-13), (
                    t,
                    p,
                    name,
                )


def test_numbers_do_not_depend_on_threads_siblings_order_or_blocks(resources, monkeypatch):
    from attnsim.kinds import base

    monkeypatch.setattr(base, "TARGET_BLOCK_BYTES", 60_000)
    monkeypatch.setattr(heads, "SUB_TOKENS", 30)
    grid = [
        dict(n=9, layer=layer, head=h, format=f, site=s)
        for layer, h in ((0, 0), (3, 5))
        for f in ("bfloat16", "float8_e4m3fn")
        for s in ("logits", "qk_rotated")
    ]
    pts = [make_point("real_precision", params) for params in grid]
    assert get_kind("real_precision").block_trials(pts[0].params) < 11
    reference = simulate_points(get_kind("real_precision"), TrialSettings(5, 11), pts, threads=1)
    runs = [
        simulate_points(get_kind("real_precision"), TrialSettings(5, 11), pts, threads=2),
        simulate_points(get_kind("real_precision"), TrialSettings(5, 11), pts[::-1], threads=3),
    ]
    runs += [
        simulate_points(get_kind("real_precision"), TrialSettings(5, 11), [p]) for p in pts[::3]
    ]
    for run in runs:
        for pid, metrics in run.items():
            for name, values in metrics.items():
                assert np.array_equal(values, reference[pid][name], equal_nan=True), (pid, name)
