"""More trials without recomputing: raising `max_trials`, lowering `target_se` or making a fixed
experiment adaptive (rounds of `trials`) computes only the rounds the store lacks; raising a fixed
`trials` reuses the blocks whose layout agrees. Either way the rows and summaries are bit-identical
to a fresh run at the larger count, at 1 and 2 threads, and each point lives in one file. Fewer
trials read each point's first ones (test_fewer_trials.py)."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from attnsim.config.load import load
from attnsim.jobs.collect import collect
from attnsim.jobs.simulate import run_chunk
from attnsim.kinds import get_kind
from attnsim.plan.sweep import experiment_json, plan_all, remove_replaced
from attnsim.store import parquet as store

SWEEPS = {  # name: (experiment before, changes after)
    "noisy_more_trials": (
        {
            "kind": "noisy_attention",
            "trials": 30,
            "grid": {
                "n": [16, 64],
                "d": [4],
                "logit_scale": [1.0],
                "noise": ["gaussian"],
                "noise_draws": [4],
                "noise_scale": [0.1, 0.5],
            },
        },
        {"trials": 70},
    ),
    "entropy_higher_max_trials": (
        {
            "kind": "logit_entropy",
            "trials": 40,
            "target_se": 1e-4,
            "max_trials": 80,
            "grid": {"n": [16, 256], "d": [8], "logits": ["gaussian"], "scale": [0.3, 3.0]},
        },
        {"max_trials": 200},
    ),
    "entropy_lower_target_se": (
        {
            "kind": "logit_entropy",
            "trials": 40,
            "target_se": 0.05,
            "max_trials": 400,
            "grid": {"n": [16, 256], "d": [8], "logits": ["gaussian"], "scale": [0.3, 3.0]},
        },
        {"target_se": 0.01},
    ),
    "temperature_fixed_to_adaptive": (
        {
            "kind": "temperature_entropy",
            "trials": 50,
            "grid": {"n": [16, 64], "d": [3], "tau": [0.1, 1.0]},
        },
        {"target_se": 1e-4, "max_trials": 150},
    ),
}


def config(experiment: dict, **changes) -> dict:
    return {"seed": 11, "chunk_size": 2, "experiments": {"e": copy.deepcopy(experiment) | changes}}


def run(config: dict, root: Path, threads: int) -> None:
    """The workflow's steps in process: plan, simulate every pending chunk, remove what top-ups
    replaced, collect."""
    settings = load(config)
    plans = plan_all(settings, root)
    for plan in plans.values():
        for chunk in plan.pending:
            run_chunk(
                plan.spec(chunk),
                store.chunk_path(root, plan.kind, plan.name, chunk),
                threads=threads,
            )
    remove_replaced(plans, root)
    for name, plan in plan_all(settings, root).items():
        assert not plan.pending
        paths = [store.chunk_path(root, plan.kind, name, c) for c in plan.chunks]
        collect(experiment_json(settings, name), paths, store.summary_path(root, plan.kind, name))


def digests(root: Path, kind: str) -> tuple[dict[str, str], str]:
    """point id -> sha256 of its rows (every metric, in trial order); sha256 of the summary."""
    metrics = [m.name for m in get_kind(kind).schema.metrics]
    rows: dict[str, hashlib._Hash] = {}
    files = store.experiment_chunks(root, kind, "e")
    assert len({p.name for p in files}) == len(files)
    for path in files:
        frame = pq.read_table(path).to_pandas()
        for pid, part in frame.groupby("point_id", sort=True):
            assert pid not in rows, "a point in two chunk files"
            part = part.sort_values("trial")
            assert part["trial"].tolist() == list(range(len(part)))
            h = hashlib.sha256()
            for m in metrics:
                h.update(m.encode() + np.ascontiguousarray(part[m].to_numpy(np.float64)).tobytes())
            rows[pid] = h.hexdigest()
    summary = pq.read_table(store.summary_path(root, kind, "e"))
    h = hashlib.sha256()
    for name in summary.column_names:
        h.update(name.encode() + repr(summary.column(name).to_pylist()).encode())
    return rows, h.hexdigest()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_a_top_up_equals_a_fresh_run_at_the_larger_count(name, threads, tmp_path):
    before, changes = SWEEPS[name]
    kind = before["kind"]
    fresh, topped = tmp_path / "fresh", tmp_path / "topped"
    run(config(before, **changes), fresh, threads)
    run(config(before), topped, threads)
    small = digests(topped, kind)
    run(config(before, **changes), topped, threads)
    assert digests(topped, kind) == digests(fresh, kind) != small
    metas = [store.read_meta(p) for p in store.experiment_chunks(topped, kind, "e")]
    reused = sum(m["topped_up"]["reused_trials"] for m in metas if "topped_up" in m)
    assert all("topped_up" in m for m in metas)  # every chunk replaced a stored one
    # more rounds of the same size reuse every stored round; a new round size (fixed trials 30 ->
    # 70) draws its blocks anew: a block's numbers depend on its size (round_blocks' even split)
    assert reused > 0 if name != "noisy_more_trials" else reused == 0
    assert len(store.experiment_chunks(topped, kind, "e")) == len(
        store.experiment_chunks(fresh, kind, "e")
    )


def test_a_replaced_chunk_is_removed_only_once_its_top_ups_are_proved_whole(tmp_path):
    """Issue 52: a rerun deleted the stored chunks at its start because their top-ups existed,
    then Snakemake's --rerun-incomplete deleted the top-ups: every trial was gone. A replaced
    chunk now stays while a top-up of it is missing, damaged, or about to be computed again."""
    before, changes = SWEEPS["noisy_more_trials"]
    run(config(before) | {"chunk_size": 4}, tmp_path, 1)  # one chunk of 4 points
    plans = plan_all(load(config(before, **changes)), tmp_path)  # topped up 2 points at a time
    plan = plans["e"]
    old = list(plan.replaced)
    tops = [store.chunk_path(tmp_path, plan.kind, "e", c) for c in plan.pending]
    assert len(old) == 1 and len(tops) == 2
    assert remove_replaced(plans, tmp_path) == []  # no top-up written yet
    run_chunk(plan.spec(plan.pending[0]), tops[0])
    assert remove_replaced(plans, tmp_path) == []  # two points live only in the old chunk
    run_chunk(plan.spec(plan.pending[1]), tops[1])
    assert remove_replaced(plans, tmp_path, rerun=tops[:1]) == []  # Snakemake will redo one
    original = tops[0].read_bytes()
    data = bytearray(original)
    data[len(data) // 3] ^= 0x10  # a flipped bit inside a top-up
    tops[0].write_bytes(bytes(data))
    assert remove_replaced(plans, tmp_path) == [] and old[0].exists()
    tops[0].write_bytes(original)
    assert remove_replaced(plans, tmp_path) == old and not old[0].exists()
