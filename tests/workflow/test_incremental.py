"""A run after a change does only what the change needs, and writes what a run from scratch
writes: after randomised one-experiment edits, each incremental run re-judges only the edited
experiment's kind, its claims table is byte for byte the one `attnsim claims --no-cache` judges
afresh from the store, and its figures and claims files are byte for byte those of a full run of
the final config in an empty folder."""

from __future__ import annotations

import copy
import random
import subprocess
import sys

import pytest
from helpers.configs import RECALL, small_config
from helpers.workflow import planned_jobs, python_first_on_path, snakemake, write_config

from attnsim.kinds import get_kind

pytestmark = pytest.mark.slow

SEED = 20261207  # which edits, in which order: fixed, so a failure reproduces


def base_config() -> dict:
    """Four experiments of three kinds: two of one kind (its claims see both), one whose claims
    read every run's trials (recall_training), one with a figure of verdicts."""
    config = small_config(chunk_size=8)
    second = copy.deepcopy(config["experiments"]["robustness"])
    second["grid"].update(n=[32], noise=["laplace"], noise_scale=[0.2])
    config["experiments"]["robustness_laplace"] = second
    config["experiments"]["recall"] = {"kind": "recall_training", "trials": 2, "grid": RECALL}
    example = copy.deepcopy(dict(get_kind("normaliser_attention").example))
    example["trials"] = 20
    config["experiments"]["normalisers"] = {"kind": "normaliser_attention", **example}
    return config


# (experiment, grid key, a value added to it)
EDITS = [
    ("robustness", "noise_scale", 0.3),
    ("robustness_laplace", "n", 48),
    ("recall", "scale", 1.0),
    ("normalisers", "logit_scale", 2.0),
]


def edited(config: dict, edit) -> dict:
    name, key, value = edit
    config = copy.deepcopy(config)
    grid = config["experiments"][name]["grid"]
    grid[key] = sorted({*grid[key], value})
    return config


def outputs(workdir) -> dict[str, bytes]:
    """The figures, the kinds' claims files and the claims table, by path."""
    results = workdir / "results"
    paths = [*results.glob("figures/*/*.*"), *results.glob("claims.*")]
    return {str(p.relative_to(results)): p.read_bytes() for p in sorted(paths)}


def rejudged(workdir, workflow_kind) -> None:
    """`attnsim claims --no-cache` judges every kind afresh from the store: the same bytes."""
    fresh = workdir / "fresh"
    results = workdir / "results"
    done = subprocess.run(
        [sys.executable, "-m", "attnsim.cli.main", "claims", "--store", str(results / "store"),
         "--experiments-file", str(results / "plan/experiments.json"), "--run-file",
         str(results / "plan/provenance.json"), "--no-cache", "--write", str(fresh)],
        capture_output=True, text=True, env=python_first_on_path(), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("claims.parquet", "claims.md"):
        assert (fresh / name).read_bytes() == (results / name).read_bytes(), (workflow_kind, name)


def test_incremental_runs_equal_a_full_run_and_a_fresh_judgement(tmp_path):
    rng = random.Random(SEED)
    edits = rng.sample(EDITS, 2)
    workdir = tmp_path / "incremental"
    config = base_config()
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2", timeout=1800)
    rejudged(workdir, "full run")
    for edit in edits:
        config = edited(config, edit)
        write_config(workdir, config)
        # the run's own table of the jobs it runs (Snakemake's log, printed in full)
        run = snakemake(workdir, "--cores", "2", "--logger-attnsim-full", timeout=1800)
        ran = planned_jobs(run.stderr)
        kind = config["experiments"][edit[0]]["kind"]
        assert ran.get("judge") == 1, (edit, ran)  # the edited experiment's kind only
        figures = {rule for rule in ran if rule.startswith("figures_")}
        assert figures == {f"figures_{edit[0]}"}, (edit, ran)
        rejudged(workdir, kind)
    scratch = tmp_path / "scratch"
    write_config(scratch, config)
    snakemake(scratch, "--cores", "2", timeout=1800)
    mine, theirs = outputs(workdir), outputs(scratch)
    assert sorted(mine) == sorted(theirs)
    assert [p for p in mine if mine[p] != theirs[p]] == []
    assert len([p for p in mine if p.startswith("figures/")]) > 10
