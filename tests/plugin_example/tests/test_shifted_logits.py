"""The plugin's own tests, run from its repository (`pip install -e .` beside an installed attnsim,
then `pytest`): the kind is registered under its name, its kernel matches a plain per-trial oracle,
and it passes attnsim's conformance suite (`attnsim.testing.check_kind`: plan, simulate, collect,
figures and claims on its example, without the workflow)."""

from __future__ import annotations

import math

import numpy as np
from attnsim_plugin_example import KIND, simulate_block

from attnsim.kinds import get_kind
from attnsim.report import claims as claims_io
from attnsim.store import parquet as store
from attnsim.testing import check_kind, run_experiment


def test_the_entry_point_registers_the_kind():
    assert get_kind("shifted_logits").package == KIND.package


def test_kernel_matches_a_per_trial_oracle():
    points = [{"n": 8, "shift": 0.0}, {"n": 8, "shift": 300.0}]
    got = simulate_block(np.random.default_rng(3), 20, points)
    # the same draws, one trial at a time
    logits = np.random.default_rng(3).standard_normal((20, 8))
    for p, out in zip(points, got):
        for t, row in enumerate(logits):
            entropies = []
            for s in (row, row + p["shift"]):
                w = [math.exp(x - max(s)) for x in s]
                entropies.append(-sum(x / sum(w) * math.log(x / sum(w)) for x in w))
            assert abs(out["shift_deviation"][t] - abs(entropies[1] - entropies[0])) < 1e-12


def test_the_kind_keeps_attnsim_s_contract(tmp_path):
    """attnsim's conformance suite on the kind's example: declarations, plan, simulate, collect,
    figures and claims, the same rows on 1 or 2 threads and in 1 or 2 chunks."""
    check_kind(KIND, tmp_path)


def test_a_small_experiment_holds_its_claim(tmp_path):
    root = tmp_path / "store"
    config = {"seed": 1, "experiments": {"shift": {"kind": "shifted_logits", **KIND.example}}}
    stored = run_experiment(config, "shift", root)
    frame = store.read_table(stored.summary).to_pandas()
    assert len(frame) == 4 and (frame["shift_deviation_mean"] <= frame["rounding_bound"]).all()
    experiments = {"shift": "shifted_logits"}
    claims = claims_io.evaluate(claims_io.load_summaries(root, experiments), experiments)
    assert {c.claim_id: c.verdict for c in claims}["shift_invariance"] == "holds"
