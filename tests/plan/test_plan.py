"""Planning: finished chunks stay targets, only missing points become new chunks, stores of another
seed are refused, and a config asking fewer trials than stored reads them."""

from __future__ import annotations

import pytest
from helpers.configs import small_config

from attnsim.config.load import load
from attnsim.errors import StoreError
from attnsim.jobs.simulate import run_chunk
from attnsim.plan.sweep import drawn_boundaries, plan_all, plan_experiment
from attnsim.store import parquet as store


def run_plan(settings, root):
    plan = plan_experiment(settings, "robustness", root)
    for chunk in plan.pending:
        run_chunk(plan.spec(chunk), store.chunk_path(root, plan.kind, plan.name, chunk))
    return plan


def test_fresh_store_plans_every_point(tmp_path):
    settings = load(small_config(chunk_size=3))
    plan = plan_all(settings, tmp_path)["robustness"]
    assert plan.grid.size == 16 and plan.done_points == 0
    assert len(plan.pending) == 6 and plan.chunks == sorted(plan.pending)


def test_adding_a_value_plans_only_new_points(tmp_path):
    first = run_plan(load(small_config()), tmp_path)
    config = small_config()
    config["experiments"]["robustness"]["grid"]["n"].append(256)
    plan = plan_experiment(load(config), "robustness", tmp_path)
    assert plan.done_points == 16 and plan.grid.size == 24
    new_points = {p.id for c in plan.pending for p in plan.spec(c).points}
    assert len(new_points) == 8
    for chunk in first.pending:  # finished chunks keep their id and exact spec
        assert plan.spec(chunk) == first.spec(chunk)


def test_removing_a_value_keeps_results_and_drops_targets(tmp_path):
    run_plan(load(small_config(chunk_size=100)), tmp_path)
    config = small_config()
    config["experiments"]["robustness"]["grid"]["n"] = [16]
    plan = plan_experiment(load(config), "robustness", tmp_path)
    assert plan.pending == [] and plan.done_points == 8 and len(plan.chunks) == 1


def test_changed_seed_is_refused_in_words_and_fewer_trials_are_read_not_refused(tmp_path):
    stored = run_plan(load(small_config()), tmp_path)
    with pytest.raises(StoreError) as error:
        plan_experiment(load(small_config(seed=8)), "robustness", tmp_path)
    message = str(error.value)
    assert "stored with 20 trials per point, seed 7" in message and "seed 8" in message
    assert "would mix" in message and "1e-300" not in message and "\n" not in message
    config = small_config()
    config["experiments"]["robustness"]["trials"] = 10  # fewer: each point's first 10 are read
    plan = plan_experiment(load(config), "robustness", tmp_path)
    assert plan.pending == [] and plan.done_points == 16 and plan.chunks == stored.chunks


def test_adaptive_experiment_records_why_each_point_stopped(tmp_path):
    import pyarrow.parquet as pq

    from attnsim.jobs.collect import collect
    from attnsim.plan.sweep import experiment_json

    config = small_config()
    config["experiments"]["robustness"].update(target_se=0.01, max_trials=60)
    settings = load(config)
    plan = run_plan(settings, tmp_path)
    out = store.summary_path(tmp_path, plan.kind, "robustness")
    collect(
        experiment_json(settings, "robustness"),
        store.experiment_chunks(tmp_path, plan.kind, "robustness"),
        out,
    )
    summary = pq.read_table(out).to_pandas()
    assert set(summary["stop_reason"]) == {"target_se", "max_trials"}
    stopped = summary[summary["stop_reason"] == "target_se"]
    assert (stopped["rel_err_se"] <= 0.01).all() and set(summary["n_trials"]) <= {20, 40, 60}
    assert (summary.loc[summary["stop_reason"] == "max_trials", "n_trials"] == 60).all()


def test_new_algorithm_version_does_not_mix_with_old_rows(tmp_path, monkeypatch):
    import dataclasses

    from attnsim import kinds

    run_plan(load(small_config()), tmp_path)
    registered = kinds.all_kinds()
    newer = dataclasses.replace(
        registered["noisy_attention"],
        algorithm_version=registered["noisy_attention"].algorithm_version + 1,
    )
    monkeypatch.setitem(registered, "noisy_attention", newer)
    with pytest.raises(
        StoreError,
        match=r"algorithm version \d+; the config asks for .* algorithm version \d+: the rows "
        r"would mix",
    ):
        plan_experiment(load(small_config()), "robustness", tmp_path)


def test_a_chunk_is_one_record_from_plan_to_job(tmp_path):
    """The planner's columnar cost and id of every chunk are its spec's, and the spec file a job
    reads is `ChunkSpec.to_json` (the only serialiser) of that spec, read back equal."""
    import yaml
    from helpers.configs import REPO

    from attnsim.plan.sweep import spec_path, write_specs
    from attnsim.records.chunk import read_spec_file

    settings = load(yaml.safe_load((REPO / "config.yaml").read_text()))
    plans = plan_all(settings, tmp_path / "store")
    assert write_specs(plans, tmp_path, threads=2) == sum(len(p.pending) for p in plans.values())
    for plan in plans.values():
        for chunk in plan.pending:
            spec = plan.spec(chunk)
            assert spec.id == chunk and spec.cost == plan.cost(chunk)
            read = read_spec_file(spec_path(tmp_path, plan.name, chunk))
            assert read.spec == spec and read.threads == 2
            assert read.spec.results_key == settings.experiments[plan.name].results_key


def test_only_the_experiment_whose_figure_shows_a_located_claim_waits_for_it():
    """`drawn_boundaries`: the figures job that draws a boundary beside its claim takes its
    located file (the claim's kind names the figure, the boundary's experiment draws it); a
    boundary of a claim no figure draws, or of another experiment, keeps no figures job waiting."""
    config = small_config()
    config["experiments"]["entropy"] = {
        "kind": "logit_entropy",
        "trials": 5,
        "grid": {"n": [16], "d": [4], "logits": ["gaussian"], "scale": [0.1, 1.0]},
    }
    delta = {"claim": "delta_method_gaussian", "axis": "noise_scale", "edge": "lower"}
    config["boundaries"] = {
        "b_delta": delta | {"at": {"n": 16, "logit_scale": 0.0}, "budget": 0.001},
        "a_delta": delta | {"at": {"n": 64, "logit_scale": 1.0}, "budget": 0.001},
        "next": delta | {"claim": "next_order_theory", "budget": 0.001},  # no figure draws it
    }
    assert drawn_boundaries(load(config)) == {"robustness": ["a_delta", "b_delta"]}
    config["experiments"]["robustness"]["role"] = "locate"  # not a declared grid: none to draw in
    assert drawn_boundaries(load(config)) == {}


def test_the_bill_names_the_boundaries_and_their_budgets(tmp_path):
    """`attnsim plan` bills a config's boundaries at the sum of their budgets (what their rounds
    may cost at most, by the cost model that prices the sweep); a config without any, no line."""
    from attnsim.plan.bill import bill, render

    config = small_config()
    delta = {"claim": "delta_method_gaussian", "axis": "noise_scale", "edge": "lower"}
    config["boundaries"] = {
        "one": delta | {"at": {"n": 16, "logit_scale": 0.0}, "budget": 0.25},
        "two": delta | {"at": {"n": 64, "logit_scale": 1.0}, "budget": 0.5},
    }
    settings = load(config)
    text = render(bill(settings, plan_all(settings, tmp_path), tmp_path), settings)
    assert "boundaries: 2 located in rounds, at most 0.75 CPU-hours by their budgets" in text
    plain = load(small_config())
    assert "boundaries" not in render(bill(plain, plan_all(plain, tmp_path), tmp_path), plain)
