"""The plugin's own tests, run from its repository (`pip install -e .` beside an installed attnsim,
then `pytest`): the kind is registered under its name, its kernel matches a plain per-trial oracle,
its figures and captions are where attnsim looks for them, and a small experiment goes through
attnsim's stages (plan, simulate, collect, figures, claims) without the workflow."""

from __future__ import annotations

import math

import numpy as np
from attnsim_plugin_example import KIND, simulate_block

from attnsim.config.load import load
from attnsim.jobs.collect import collect
from attnsim.jobs.simulate import run_chunk
from attnsim.kinds import get_kind
from attnsim.plan.sweep import experiment_json, plan_experiment
from attnsim.report import claims as claims_io
from attnsim.report.figure_check import check_kind
from attnsim.report.figures import render
from attnsim.store import parquet as store


def test_the_entry_point_registers_the_kind():
    assert get_kind("shifted_logits").package == KIND.package


def test_kernel_matches_a_per_trial_oracle():
    points = [{"n": 8, "shift": 0.0}, {"n": 8, "shift": 300.0}]
    got = simulate_block(np.random.default_rng(3), 20, points)
    logits = np.random.default_rng(3).standard_normal(
        (20, 8)
    )  # the same draws, one trial at a time
    for p, out in zip(points, got):
        for t, row in enumerate(logits):
            entropies = []
            for s in (row, row + p["shift"]):
                w = [math.exp(x - max(s)) for x in s]
                entropies.append(-sum(x / sum(w) * math.log(x / sum(w)) for x in w))
            assert abs(out["shift_deviation"][t] - abs(entropies[1] - entropies[0])) < 1e-12


def test_every_declared_figure_has_its_function_and_caption():
    check_kind(KIND)  # what `attnsim run` checks before any job


def test_a_small_experiment_end_to_end(tmp_path):
    config = {
        "seed": 1,
        "experiments": {
            "shift": {
                "kind": "shifted_logits",
                "trials": 50,
                "grid": {"n": [8, 64], "shift": [0.0, 10.0]},
            }
        },
    }
    settings = load(config)
    root = tmp_path / "store"
    plan = plan_experiment(settings, "shift", root)
    chunks = [
        run_chunk(plan.spec(c), store.chunk_path(root, plan.kind, plan.name, c))
        for c in plan.pending
    ]
    summary = store.summary_path(root, plan.kind, "shift")
    collect(experiment_json(settings, "shift"), chunks, summary)
    frame = store.read_table(summary).to_pandas()
    assert len(frame) == 4 and (frame["shift_deviation_mean"] <= frame["rounding_bound"]).all()
    assert [p.name for p in render(summary, tmp_path / "figures")] == [
        "shift_deviation.png",
        "shift_deviation.pdf",
    ]
    claims = claims_io.evaluate(
        claims_io.load_summaries(root, {"shift": "shifted_logits"}), {"shift": "shifted_logits"}
    )
    assert {c.claim_id: c.verdict for c in claims}["shift_invariance"] == "holds"
