"""Each kind's claims file (report.judged): reused while its key, the sha256 of what its verdicts
are computed from, is that of the current inputs, judged afresh otherwise; the table assembled
from the files is the table judged from scratch."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from helpers.configs import RECALL

from attnsim.kinds import get_kind
from attnsim.records import state
from attnsim.report import claims as io
from attnsim.report import judged
from attnsim.store import parquet as store
from attnsim.testing import example_config, run_experiment

EXPERIMENTS = {
    "temperature": "temperature_entropy",
    "temperature_b": "temperature_entropy",
    "recall": "recall_training",
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Two experiments of one kind, one of a kind whose claims read every run's trials."""
    root = tmp_path_factory.mktemp("judged") / "store"
    kind = get_kind("temperature_entropy")
    config = example_config(kind, trials=8, seed=4)
    config["experiments"]["temperature_b"] = {
        **config["experiments"][kind.name],
        "grid": {**config["experiments"][kind.name]["grid"], "n": [32]},
    }
    config["experiments"]["temperature"] = config["experiments"].pop(kind.name)
    config["experiments"]["recall"] = {"kind": "recall_training", "trials": 2, "grid": RECALL}
    for name in EXPERIMENTS:
        run_experiment(config, name, root)
    return root.parent


def write_all(workspace):
    for name in sorted(set(EXPERIMENTS.values())):
        kind = get_kind(name)
        judged.judge_to_file(
            kind, EXPERIMENTS, workspace / "store", judged.path(workspace, name), {}
        )


def test_the_assembled_table_is_the_table_judged_from_scratch(workspace):
    write_all(workspace)
    root = workspace / "store"
    fresh = io.table(io.evaluate(io.load_summaries(root, EXPERIMENTS), EXPERIMENTS))
    cached = io.table(judged.evaluate(root, EXPERIMENTS, workspace))
    uncached = io.table(judged.evaluate(root, EXPERIMENTS, workspace, cache=False))
    assert cached.equals(fresh) and uncached.equals(fresh)
    assert cached.to_pylist() == fresh.to_pylist()


def test_a_current_file_is_reused_and_a_stale_one_is_not(workspace, tmp_path):
    write_all(workspace)
    kind = get_kind("temperature_entropy")
    root = workspace / "store"
    inputs = judged.data_inputs(kind, EXPERIMENTS, root)
    target = judged.path(workspace, kind.name)
    found = judged.cached(kind, target, inputs, {})
    assert found is not None and found.claims == judged.judge(kind, EXPERIMENTS, root).claims
    assert set(found.drawn) == {"temperature", "temperature_b"}
    # another name for an experiment, or one experiment fewer: another key
    renamed = {("t2" if k == "temperature_b" else k): v for k, v in EXPERIMENTS.items()}
    assert judged.data_inputs(kind, renamed, root) != inputs
    # a design of one of its claims: stale; of another kind's claim: still current
    claim = found.claims[0].claim_id
    design = state.ClaimDesign(claim_id=claim, method="confidence sequence", level=0.95)
    assert judged.cached(kind, target, inputs, {claim: design}) is None
    other = state.ClaimDesign(claim_id="not_this_kinds", method="single look", level=0.95)
    assert judged.cached(kind, target, inputs, {"not_this_kinds": other}) is not None
    # a summary whose content changed: stale
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    summary = store.summary_path(copy, kind.name, "temperature")
    table = store.read_table(summary)
    meta = store.read_meta(summary)
    meta.pop("content_sha256")
    column = table.column_names.index("n_trials")
    table = table.set_column(column, "n_trials", pa.array(table["n_trials"].to_numpy() + 1))
    store.write_atomic(table, summary, meta)
    assert judged.cached(kind, target, judged.data_inputs(kind, EXPERIMENTS, copy), {}) is None


def test_run_level_kinds_key_on_their_chunks(workspace):
    kind = get_kind("recall_training")
    inputs = judged.data_inputs(kind, EXPERIMENTS, workspace / "store")
    assert kind.schema.run_columns and list(inputs["chunks"]) == ["recall"]
    assert all(inputs["chunks"]["recall"].values())  # each recorded chunk's digest
    other = judged.data_inputs(get_kind("temperature_entropy"), EXPERIMENTS, workspace / "store")
    assert other["chunks"] == {}


def test_a_damaged_or_foreign_file_is_judged_afresh(workspace, tmp_path):
    kind = get_kind("temperature_entropy")
    inputs = judged.data_inputs(kind, EXPERIMENTS, workspace / "store")
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(b"not parquet")
    assert judged.cached(kind, damaged, inputs, {}) is None
    write_all(workspace)
    other = judged.path(workspace, "recall_training")
    assert judged.cached(kind, other, inputs, {}) is None  # another kind's file
    assert judged.cached(kind, tmp_path / "missing.parquet", inputs, {}) is None


def test_the_key_follows_the_claims_code_statically():
    """The sources are the claims module and what it imports, found without importing it."""
    sources = judged.sources(get_kind("recall_training").package)
    for name in (
        "attnsim/kinds/recall_training/claims.py",
        "attnsim/kinds/recall_training/__init__.py",
        "attnsim/kinds/recall_training/plateau.py",
        "attnsim/subjects/normalisers.py",
        "attnsim/claims/engine.py",
        "attnsim/stats.py",
        "attnsim/report/claims.py",
    ):
        assert name in sources, name
    assert "attnsim/kinds/noisy_attention/claims.py" not in sources
    assert all(len(digest) == 64 for digest in sources.values())


def test_relative_imports_are_resolved(tmp_path):
    source = tmp_path / "claims.py"
    source.write_text(
        "from . import helper\nfrom .sub import thing\nfrom ..base import Kind\n"
        "def f():\n    import attnsim.stats\n"
    )
    found = judged._imports(source, "attnsim.kinds.k.claims")
    assert {"attnsim.kinds.k.helper", "attnsim.kinds.k.sub", "attnsim.kinds.base.Kind"} <= set(
        found
    )
    assert "attnsim.stats" in found
