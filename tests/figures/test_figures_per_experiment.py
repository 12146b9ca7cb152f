"""Figures per experiment: one figures job per experiment, so a changed experiment redraws only its
own figures; a figure with nothing to show in an experiment's grid is neither drawn nor listed."""

from __future__ import annotations

import pytest
from helpers.configs import RECALL, REPO, small_config
from helpers.workflow import planned_jobs, snakemake, write_config
from PIL import Image

from attnsim.config.load import load_file
from attnsim.figures.common import NotApplicable
from attnsim.kinds import get_kind
from attnsim.records.grid import grid_columns


def test_the_default_sweep_lists_only_figures_with_something_to_show():
    """config.yaml's training experiments each run part of their kind's settings: the figures of
    the others (escape laws of a fixed-budget sweep, the learnt temperature of fixed ones) are not
    listed, the rest are."""
    settings = load_file(REPO / "config.yaml")
    listed = {
        name: get_kind(e.kind).figures_for(grid_columns(e).values)
        for name, e in settings.experiments.items()
    }
    assert listed["trainability"] == ("trainability", "learning_curves")
    assert listed["plateau"] == ("escape_survival", "escape_law")
    assert listed["collapse"] == ("training_entropy",)
    assert listed["plateau_sgd"] == ("escape_survival", "escape_law")  # one batch, one lr: no map
    assert listed["normaliser_escape"] == ("escape_by_normaliser",)  # not §9's per-setting ones
    assert listed["contrastive_learned_class"] == ("learned_temperature",)
    # no test of the grid: all of them
    assert listed["robustness"] == get_kind("noisy_attention").presentation.figures


def test_a_figure_asked_for_where_it_does_not_apply_is_one_error_not_a_placeholder():
    import pandas as pd

    figures = get_kind("recall_training").submodule("figures")
    summary = pd.DataFrame({"scale": [1.0], "stop": ["never"], "lr": [0.1]})
    with pytest.raises(NotApplicable, match="figure trainability: nothing to draw"):
        figures.trainability(summary)


@pytest.mark.slow
def test_a_changed_experiment_redraws_only_its_own_figures(tmp_path):
    config = small_config(chunk_size=8)
    config["experiments"]["training"] = {"kind": "recall_training", "trials": 2, "grid": RECALL}
    write_config(tmp_path, config)
    snakemake(tmp_path, "--cores", "2")
    figures = tmp_path / "results/figures"
    drawn = {p.relative_to(figures).as_posix() for p in figures.rglob("*.png")}
    # RECALL runs no escape (stop: threshold) and no normgd
    assert {f for f in drawn if f.startswith("training/")} == {
        "training/trainability.png",
        "training/learning_curves.png",
        "training/training_entropy.png",
    }
    for path in figures.rglob("*.png"):
        assert min(Image.open(path).size) > 300, path  # drawn, not a one-line stand-in
    training = {p: p.stat().st_mtime_ns for p in (figures / "training").iterdir()}
    robustness = {p: p.stat().st_mtime_ns for p in (figures / "robustness").iterdir()}

    config["experiments"]["robustness"]["grid"]["n"].append(128)
    write_config(tmp_path, config)
    # the run's own table of the jobs it runs (Snakemake's log, printed in full)
    ran = planned_jobs(snakemake(tmp_path, "--cores", "2", "--logger-attnsim-full").stderr)
    assert "figures_robustness" in ran and "figures_training" not in ran, ran
    assert {p: p.stat().st_mtime_ns for p in (figures / "training").iterdir()} == training
    assert all(p.stat().st_mtime_ns > t for p, t in robustness.items())
