"""A config asking fewer trials than the store holds reads each point's first ones, never a
refusal and never a deletion (issue 51 item 2, issue 52 item 2): decide's top-ups are rounds of
the config's `trials` (`max_trials` without `target_se`), so after a rollback to an earlier look
the summary is bit-identical to a fresh run at that look, and an interrupted top-up's finished
chunks wait on disk for the run that asks for their trials again."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pyarrow.parquet as pq

from attnsim.config.load import load
from attnsim.jobs.collect import collect
from attnsim.jobs.simulate import run_chunk
from attnsim.plan.sweep import experiment_json, plan_all, remove_replaced
from attnsim.records.experiment import COVERS, SAME, TOPUP, TrialSettings
from attnsim.store import parquet as store

NOISY = {
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
}
ENTROPY = {
    "kind": "logit_entropy",
    "trials": 40,
    "target_se": 0.002,
    "max_trials": 400,
    "grid": {"n": [16, 256], "d": [8], "logits": ["gaussian"], "scale": [0.3, 3.0]},
}


def config(experiment: dict, **changes) -> dict:
    spec = copy.deepcopy(experiment) | changes
    spec = {k: v for k, v in spec.items() if v is not None}
    return {"seed": 11, "chunk_size": 2, "experiments": {"e": spec}}


def simulate(settings, root: Path, only: int | None = None) -> list[str]:
    """Plan and compute the pending chunks (the first `only` of them); their ids."""
    plan = plan_all(settings, root)["e"]
    done = plan.pending[:only] if only is not None else plan.pending
    for chunk in done:
        run_chunk(plan.spec(chunk), store.chunk_path(root, plan.kind, "e", chunk))
    return done


def summarise(settings, root: Path) -> str:
    """Collect the plan's chunks into the summary; sha256 of the summary's values."""
    plan = plan_all(settings, root)["e"]
    assert plan.pending == []
    paths = [store.chunk_path(root, plan.kind, "e", c) for c in plan.chunks]
    out = store.summary_path(root, plan.kind, "e")
    collect(experiment_json(settings, "e"), paths, out)
    table = pq.read_table(out)
    h = hashlib.sha256()
    for name in table.column_names:
        h.update(name.encode() + repr(table.column(name).to_pylist()).encode())
    return h.hexdigest()


def run(settings, root: Path) -> str:
    simulate(settings, root)
    remove_replaced(plan_all(settings, root), root)
    return summarise(settings, root)


def relation(stored: tuple, asked: tuple) -> str | None:
    """`TrialSettings.relation` of (trials, target_se, max_trials) stored and asked, one seed."""
    return TrialSettings(1, *asked).relation(TrialSettings(1, *stored))


def test_relations_in_words():
    assert relation((30, None, None), (30, None, None)) == SAME
    assert relation((30, None, 90), (30, None, None)) == COVERS
    assert relation((30, None, None), (30, None, 90)) == TOPUP
    assert relation((30, None, 90), (30, None, 60)) == COVERS
    assert relation((40, 0.01, 400), (40, 0.05, 400)) == COVERS  # a looser target
    assert relation((40, 0.05, 400), (40, 0.01, 400)) == TOPUP
    assert relation((40, 0.01, 400), (80, None, None)) is None  # would mix
    assert TrialSettings(2, 30).relation(TrialSettings(1, 30)) is None  # another seed: would mix


def test_rounds_recorded_by_decide_equal_a_fresh_run_and_fewer_read_the_first(tmp_path):
    one, three = load(config(NOISY)), load(config(NOISY, max_trials=90))
    fresh_one, fresh_three = run(one, tmp_path / "a"), run(three, tmp_path / "b")
    root = tmp_path / "study"
    assert run(one, root) == fresh_one
    assert run(three, root) == fresh_three  # the top-up: rounds 2 and 3 computed, round 1 read
    metas = [store.read_meta(p) for p in store.experiment_chunks(root, "noisy_attention", "e")]
    assert all(m["topped_up"]["reused_trials"] > 0 for m in metas)
    stored = sorted(p.name for p in store.experiment_chunks(root, "noisy_attention", "e"))
    # the rollback: the first round of each point, bit-identical, nothing recomputed or deleted
    assert simulate(one, root) == []
    assert summarise(one, root) == fresh_one
    assert sorted(p.name for p in store.experiment_chunks(root, "noisy_attention", "e")) == stored


def test_a_looser_target_replays_the_stopping_rule_over_the_stored_rounds(tmp_path):
    tight, loose = load(config(ENTROPY)), load(config(ENTROPY, target_se=0.01))
    fresh = run(loose, tmp_path / "fresh")
    root = tmp_path / "study"
    run(tight, root)
    assert simulate(loose, root) == []
    assert summarise(loose, root) == fresh
    n_trials = pq.read_table(store.summary_path(root, "logit_entropy", "e"))["n_trials"]
    assert min(n_trials.to_pylist()) < 400  # some points stop early under the looser target


def test_an_interrupted_top_up_is_read_by_a_rollback_and_resumed_not_recomputed(tmp_path):
    one, three = load(config(NOISY)), load(config(NOISY, max_trials=90))
    fresh_one = run(one, tmp_path / "fresh")
    root = tmp_path / "study"
    run(one, root)
    old = {p.stem.removeprefix("chunk-") for p in store.experiment_chunks(root, NOISY["kind"], "e")}
    assert len(old) == 2
    finished = simulate(three, root, only=1)  # killed after the top-up of one stored chunk
    plan = plan_all(one, root)["e"]  # rolled back to look 1
    assert plan.pending == [] and finished[0] in plan.chunks and len(plan.chunks) == 2
    assert len(plan.replaced) == 1  # the chunk the finished top-up extends: its points are there
    removed = remove_replaced({"e": plan}, root)
    assert [p.stem.removeprefix("chunk-") for p in removed] == [
        c for c in old if c not in plan.chunks
    ]
    assert summarise(one, root) == fresh_one  # its first rounds: the rows of look 1
    resumed = plan_all(three, root)["e"]  # the next look: the finished top-up is not redone
    assert finished[0] in resumed.chunks and finished[0] not in resumed.pending
    assert len(resumed.pending) == 1


def test_a_finished_top_up_serves_a_rollback_and_its_old_chunks_go(tmp_path):
    one, three = load(config(NOISY)), load(config(NOISY, max_trials=90))
    fresh_one = run(one, tmp_path / "fresh")
    root = tmp_path / "study"
    run(one, root)
    tops = set(simulate(three, root))  # finished, its run killed before removing what it replaced
    plan = plan_all(one, root)["e"]
    assert plan.pending == [] and set(plan.chunks) == tops and len(plan.replaced) == len(tops)
    remove_replaced({"e": plan}, root)
    names = {
        p.stem.removeprefix("chunk-") for p in store.experiment_chunks(root, "noisy_attention", "e")
    }
    assert names == tops  # the 90 trials per point kept, the 30-trial copies gone
    assert summarise(one, root) == fresh_one
