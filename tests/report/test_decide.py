"""`attnsim decide` on a small store (issue 39 item 2): power-limited inconclusive claims turn into
holds or fails within the budget, through Snakemake runs of topped-up configs whose rows are
bit-identical to a fresh run of the last one; a budget that buys one round stops there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.workflow import REPO, point_rows, snakemake, write_config

from attnsim.cli.main import main
from attnsim.config.load import load_file
from attnsim.report.decide import cost_hours, topped_up

pytestmark = pytest.mark.slow

CONFIG = {
    "seed": 3,
    "experiments": {
        "dropout": {
            "kind": "attention_dropout",
            "trials": 160,
            "grid": {
                "n": [64],
                "d": [8],
                "logit_scale": [0.5],
                "value_mean": [0.0],
                "noise_draws": [2],
                "rate": [0.1],
                "form": ["transformers", "logit"],
            },
        }
    },
}
TARGETS = ("dropout_transformers_iid", "dropout_transformers_exact")
SNAKEMAKE = ["--", "-s", str(REPO / "Snakefile"), "--cores", "1"]


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """A workdir whose run left both dropout claims inconclusive (a few hundred trials short)."""
    workdir = tmp_path_factory.mktemp("decide") / "work"
    config = write_config(workdir, CONFIG)
    snakemake(workdir, "--cores", "1", "--configfile", str(config))
    return workdir


def copy_of(judged: Path, tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    shutil.copytree(judged, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    return workdir


def decide(workdir: Path, *args: str) -> int:
    argv = ["decide", *args, "--workdir", str(workdir), "--configfile", "config.yaml"]
    return main([*argv, *SNAKEMAKE])


def test_inconclusive_claims_are_decided_within_the_budget(judged, tmp_path, capsys):
    workdir = copy_of(judged, tmp_path)
    assert decide(workdir, "--budget", "0.05") == 0
    out = capsys.readouterr().out
    assert out.index("plan: ") < out.index("decide: look 2")  # the bill before any spending
    for claim in TARGETS:
        assert f"decide: {claim}: holds" in out or f"decide: {claim}: fails" in out, out
    looks = sorted((workdir / "results" / "decide").glob("look-*.yaml"))
    fresh = tmp_path / "fresh"
    config = write_config(fresh, {})
    shutil.copy(looks[-1], config)  # the last look's config, run from nothing
    snakemake(fresh, "--cores", "1", "--configfile", str(config))
    assert point_rows(fresh) == point_rows(workdir)
    stamped = pq.read_table(workdir / "results" / "claims.parquet", columns=["config_hash"])
    assert set(stamped["config_hash"].to_pylist()) == {load_file(looks[-1]).config_hash}


def test_a_budget_of_one_round_stops_there(judged, tmp_path, capsys):
    workdir = copy_of(judged, tmp_path)
    root = workdir / "results" / "store"
    doubled, _ = cost_hours(topped_up(CONFIG, {"dropout": 320}), root)
    tripled, _ = cost_hours(topped_up(CONFIG, {"dropout": 480}), root)
    budget = (doubled + tripled) / 2
    assert decide(workdir, TARGETS[0], "--budget", repr(budget)) == 1
    out = capsys.readouterr().out
    assert "dropout: 160 -> 320;" in out
    assert f"decide: {TARGETS[0]}: still inconclusive, the budget is spent" in out
    assert len(list((workdir / "results" / "decide").glob("look-*.yaml"))) == 1


def test_too_small_a_budget_is_one_line(judged, tmp_path, capsys):
    workdir = copy_of(judged, tmp_path)
    assert decide(workdir, "--budget", "0") == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsim: error: decide: --budget 0") and err.count("\n") == 1


@pytest.mark.parametrize("budget", ["nan", "inf", "1e999", "-1"])
def test_a_budget_that_is_no_number_of_cpu_hours_is_one_line(tmp_path, capsys, budget):
    """Issue 52: `decide --budget nan` meant no limit (NaN compares false with every cost)."""
    assert decide(tmp_path, "--budget", budget) == 2
    err = capsys.readouterr().err
    assert err == (
        f"attnsim: error: --budget {float(budget):g}: give a finite number of CPU-hours, 0 or "
        "more (e.g. --budget 2)\n"
    )
    assert not (tmp_path / "results").exists()
