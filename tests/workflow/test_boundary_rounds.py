"""A config's boundary located by the workflow (issue 53.4): rounds of checkpoint jobs, each
computing one request into the store's `locate_<name>` experiment; the boundary recorded in
state.yaml and boundaries.json, shown in claims.md beside its claim and drawn in its figure, and
a rerun with nothing to do."""

from __future__ import annotations

import copy
import json

import pytest
from helpers.configs import NOISY_GRID, small_config
from helpers.workflow import snakemake, write_config

from attnsim.records import state
from attnsim.report import boundaries
from attnsim.store import parquet


@pytest.mark.slow
def test_the_workflow_locates_records_and_shows_a_boundary(tmp_path):
    config = small_config()
    grid = copy.deepcopy(NOISY_GRID) | {"noise_scale": [0.2, 1.0], "d": [16]}
    config["experiments"]["robustness"] |= {"trials": 200, "grid": grid}
    config["boundaries"] = {
        "demo": {
            "claim": "delta_method_gaussian",
            "axis": "noise_scale",
            "edge": "lower",
            "at": {"n": 16, "logit_scale": 0.0, "noise": "gaussian"},
            "budget": 0.00015,
        }
    }
    write_config(tmp_path, config)
    snakemake(tmp_path, "--cores", "2", timeout=900)
    results = tmp_path / "results"
    rounds = sorted((results / "locate" / "demo").glob("round-*.json"))
    last = json.loads(rounds[-1].read_text())
    assert len(rounds) >= 2 and last["status"] == "done"
    record = state.read(results).boundaries["demo"]
    assert record == last["record"] == json.loads((results / "boundaries.json").read_text())["demo"]
    assert parquet.experiment_chunks(results / "store", "noisy_attention", "locate_demo")
    assert "boundary noise_scale*" in (results / "claims.md").read_text()
    # drawn once, in its claim's figure (after its rounds), not in a figure of its own
    drawn = results / "figures" / "robustness" / "delta_shortfall.png"
    located = results / "locate" / "demo" / "located.json"
    assert drawn.stat().st_mtime >= located.stat().st_mtime
    assert not (results / "boundaries").exists()
    assert boundaries.verify_lines(results / "store") == []
    again = snakemake(tmp_path, "--cores", "2", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
