"""The training kinds as kinds: determinism through the driver, summaries of diverged runs, bad
grids refused in one line, and one end-to-end run. (The kernels' numerics:
test_recall_training.py, test_contrastive_training.py; recall_training's claims on synthetic rows:
test_recall_claims.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.configs import CONTRASTIVE, RECALL
from helpers.points import make_point
from helpers.workflow import point_rows, snakemake, tree, write_config
from oracles.summaries import summarise_points

from attnsim.cli.main import main
from attnsim.config.load import load_file
from attnsim.jobs.simulate import simulate_points
from attnsim.kernels.training import quantiles
from attnsim.kinds import get_kind
from attnsim.kinds.recall_training import wilson
from attnsim.records.experiment import TrialSettings
from attnsim.records.grid import grid_columns
from attnsim.store import parquet as store


def grid_points(kind: str, grid: dict, **change) -> list:
    import itertools

    grid = grid | change
    params = get_kind(kind).schema.params
    # a parameter left out takes its default
    lists = [grid[p.name] if p.name in grid else [p.default] for p in params]
    return [
        make_point(kind, dict(zip([p.name for p in params], values)))
        for values in itertools.product(*lists)
    ]


CONTRASTIVE_INSTANCE_LEARNED = CONTRASTIVE | {
    "positives": ["instance"],
    "instance_noise": [0.5],
    "tau_mode": ["fixed", "learned"],
}


@pytest.mark.parametrize(
    "kind, grid",
    [
        ("recall_training", RECALL),
        ("contrastive_training", CONTRASTIVE),
        ("contrastive_training", CONTRASTIVE_INSTANCE_LEARNED),
    ],
)
def test_numbers_do_not_depend_on_threads_siblings_or_order(kind, grid, monkeypatch):
    """Bit for bit: 1, 2 or 3 threads; the points alone, reversed or together; small blocks (many
    per point); with diverging runs among them (SGD at a huge step) so the +inf/NaN paths run
    too."""
    from attnsim.kinds import base

    monkeypatch.setattr(base, "TARGET_BLOCK_BYTES", 60_000)
    pts = grid_points(kind, grid)
    other = grid_points(
        kind,
        grid,
        n=[grid["n"][0] + 1],
        **({"scale": [1.0]} if kind == "recall_training" else {"tau": [0.5]}),
    )[:2]
    pts += other  # a second stream
    reference = simulate_points(get_kind(kind), TrialSettings(11, 13), pts, threads=1)
    assert get_kind(kind).block_trials(pts[0].params) < 13  # several blocks per point
    # (a normalised encoder does not diverge: its gradient shrinks as W grows)
    if kind == "recall_training":
        assert any(reference[p.id]["diverged"].any() for p in pts) and any(
            not reference[p.id]["diverged"].any() for p in pts
        )
    runs = [
        simulate_points(get_kind(kind), TrialSettings(11, 13), pts, threads=2),
        simulate_points(get_kind(kind), TrialSettings(11, 13), pts[::-1], threads=3),
    ]
    runs += [simulate_points(get_kind(kind), TrialSettings(11, 13), [p]) for p in pts[::5]]
    for run in runs:
        for pid, metrics in run.items():
            for name, values in metrics.items():
                assert np.array_equal(values, reference[pid][name], equal_nan=True), (pid, name)


# --------------------------------------------------------------------------- summaries of diverged
# runs


def test_quantiles_rank_inf_last_and_never_nan():
    assert quantiles(np.array([3.0, 1.0, 2.0, 4.0])) == [1.75, 2.5, 3.25]
    assert quantiles(np.array([1.0, np.inf, 2.0, np.inf])) == [1.75, np.inf, np.inf]
    assert quantiles(np.array([np.inf, np.inf])) == [np.inf, np.inf, np.inf]
    assert quantiles(np.array([5.0]), (0.5,)) == [5.0]


def test_wilson_interval():
    low, high = wilson(0, 48)
    assert low == 0 and 0.07 < high < 0.08
    low, high = wilson(48, 48)
    assert 0.92 < low < 0.93 and high == 1
    assert wilson(0, 0)[0] != wilson(0, 0)[0]  # NaN


def diverge(kind, metrics: dict, trials) -> None:
    """Mark `trials` of one point's results as diverged, by the kernels' conventions."""
    for name in get_kind(kind).summary.finite_metrics:
        metrics[name][trials] = (
            5.0
            if name == "diverged_step"
            else (
                np.inf
                if "loss" in name or name in ("steps_to_threshold", "collapse_step")
                else np.nan
            )
        )
    metrics["diverged"][trials] = 1.0
    metrics["probe_accuracy" if "probe_accuracy" in metrics else "final_accuracy"][trials] = 0.0


@pytest.mark.parametrize(
    "kind, grid", [("recall_training", RECALL), ("contrastive_training", CONTRASTIVE)]
)
def test_summary_of_diverged_runs_has_no_nan_means(kind, grid):
    """Diverged runs (+inf losses, NaN entropies) stay out of every mean, are counted, and rank last
    in the medians; the divergence rate is the mean of `diverged`; a point whose runs all diverged
    has no mean (NaN, count 0)."""
    k = get_kind(kind)
    # the small step: no run diverges by itself
    pts = grid_points(kind, grid, lr=[grid["lr"][0]])[:3]
    trials = simulate_points(get_kind(kind), TrialSettings(3, 16), pts)
    assert not any(trials[p.id]["diverged"].any() for p in pts)
    diverge(kind, trials[pts[0].id], slice(0, 3))
    diverge(kind, trials[pts[1].id], slice(0, 12))
    diverge(kind, trials[pts[2].id], slice(None))
    table = summarise_points(kind, "x", trials, pts).to_pandas()
    assert table["diverged_mean"].tolist() == [3 / 16, 12 / 16, 1.0]
    assert (
        table["final_loss_median"] == [np.median(trials[pts[0].id]["final_loss"]), np.inf, np.inf]
    ).all()
    for name in k.summary.finite_metrics:
        assert table[f"{name}_finite"].tolist() == [
            int(np.isfinite(trials[p.id][name]).sum()) for p in pts
        ], name
        # +inf = never: finite only where it happened
        if name in ("diverged_step", "steps_to_threshold", "collapse_step"):
            continue
        assert table[f"{name}_finite"].tolist() == [13, 4, 0], name
        stats = table[
            [f"{name}_mean", f"{name}_se", f"{name}_ci_low", f"{name}_ci_high"]
        ].to_numpy()
        assert np.isfinite(stats[:2]).all() and np.isnan(stats[2]).all(), name
        assert table[f"{name}_mean"].iloc[0] == pytest.approx(np.mean(trials[pts[0].id][name][3:]))
    assert (table["diverged_step_mean"] == 5.0).all() and table[
        "diverged_step_finite"
    ].tolist() == [3, 12, 16]
    other = [
        c
        for c in table.columns
        if c.endswith("_mean") and c.removesuffix("_mean") not in k.summary.finite_metrics
    ]
    assert np.isfinite(table[other].to_numpy()).all()


# --------------------------------------------------------------------------- bad grids: one line
# naming the key


def tiny_config(**grids) -> dict:
    return {
        "seed": 5,
        "chunk_size": 2,
        "experiments": {
            "recall": {
                "kind": "recall_training",
                "trials": 6,
                "grid": RECALL
                | {"scale": [0.3, 30.0], "optimiser": ["sgd"], "lr": [2.0]}
                | grids.get("recall", {}),
            },
            "contrastive": {
                "kind": "contrastive_training",
                "trials": 6,
                "grid": CONTRASTIVE
                | {"optimiser": ["adam"], "lr": [0.05]}
                | grids.get("contrastive", {}),
            },
        },
    }


BAD = {
    "lr zero": ({"recall": {"lr": [0.0]}}, "experiments.recall.grid.lr[0]"),
    "lr negative": ({"contrastive": {"lr": [-1.0]}}, "experiments.contrastive.grid.lr[0]"),
    "steps zero": ({"recall": {"steps": [0]}}, "experiments.recall.grid.steps[0]"),
    "tau zero": ({"contrastive": {"tau": [1.0, 0.0]}}, "experiments.contrastive.grid.tau[1]"),
    "unknown optimiser": (
        {"recall": {"optimiser": ["sgd", "rmsprop"]}},
        "experiments.recall.grid.optimiser[1]",
    ),
    "classes over n": (
        {"contrastive": {"classes": [3, 9]}},
        "experiments.contrastive.grid.classes: 9 classes but batches of n = 8",
    ),
    "input below latent": (
        {"contrastive": {"latent_dim": [4], "input_dim": [6, 3]}},
        "experiments.contrastive.grid.input_dim: 3 is below latent_dim = 4",
    ),
    "scale zero": ({"recall": {"scale": [0.0]}}, "experiments.recall.grid.scale[0]"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_grid_is_one_line_naming_the_key(case, tmp_path, capsys):
    grids, key = BAD[case]
    path = write_config(tmp_path, tiny_config(**grids))
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnsim: error: {key}") and err.count("\n") == 1, err


@pytest.mark.slow
def test_bad_grid_stops_snakemake_before_anything_is_written(tmp_path):
    write_config(tmp_path, tiny_config(contrastive={"classes": [9]}))
    result = snakemake(tmp_path, "-n", "--cores", "1", check=False)
    lines = result.stderr.strip().splitlines()
    assert (
        result.returncode != 0
        and len(lines) == 1
        and "experiments.contrastive.grid.classes" in lines[0]
    ), result.stderr
    assert tree(tmp_path) == {}


# --------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_workflow_runs_both_training_kinds_and_rows_do_not_depend_on_cores_or_chunks(tmp_path):
    """A run on 2 cores in chunks of one point, with its figures and claims; a run on 1 core in
    one chunk per experiment, of the summaries only (its rows are what is compared)."""
    first, second = tmp_path / "a", tmp_path / "b"
    config = tiny_config()
    config["chunk_size"] = 1
    write_config(first, config)
    snakemake(first, "--cores", "2")
    trials = first / "results/store/trials"
    assert [len(list(e.glob("chunk-*.parquet"))) for e in sorted(trials.glob("*/*"))] == [2, 2]
    for figure in (
        "recall/trainability.png",
        "recall/learning_curves.png",
        "contrastive/temperature_sweep.png",
    ):
        assert (first / "results/figures" / figure).stat().st_size > 10_000
    # a figure with nothing to show in its experiment's grid (`Presentation.figure_applies`: this
    # fixed-budget sweep at one learning rate has no escape runs) is neither drawn nor listed
    settings = load_file(first / "config.yaml")
    recall = settings.experiments["recall"]
    drawn = get_kind("recall_training").figures_for(grid_columns(recall).values)
    assert drawn == ("trainability", "learning_curves")
    assert sorted(p.stem for p in (first / "results/figures/recall").glob("*.png")) == sorted(drawn)
    claims = (first / "results/claims.md").read_text()
    for claim in (
        "one_hot_start_impossible",
        "plateau_law_sgd",
        "entropy_predicts_final_loss",
        "tau_one_training_entropy_floor",
        "tau_one_worse_probe",
    ):
        assert claim in claims
    # no QK-norm run in this grid: not measured (Regime.measured), so claims.md does not list it
    assert "qk_norm_prevents_early_collapse" not in claims
    config = tiny_config()
    config["chunk_size"] = 64
    (second).mkdir()
    (second / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    summaries = [
        str(store.summary_path(Path("results/store"), kind, name))
        for name, kind in (("recall", "recall_training"), ("contrastive", "contrastive_training"))
    ]
    snakemake(second, *summaries, "--cores", "1")
    rows = point_rows(first)
    assert rows == point_rows(second) and len(rows) == 4
