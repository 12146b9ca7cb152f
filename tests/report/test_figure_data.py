"""What a figures job draws from (issue 52 item 4): a large experiment's figures draw a sub-grid,
read a batch at a time with every column still checked, and the bill prices the figures and the
claims by the same sub-grid."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.configs import small_config

from attnsim.config.load import load
from attnsim.errors import StoreError
from attnsim.kinds import get_kind
from attnsim.plan import bill
from attnsim.plan.sweep import plan_all
from attnsim.records.grid import spread, sub_grid
from attnsim.report import figure_data
from attnsim.store import parquet as store
from attnsim.testing import run_experiment


def test_a_sub_grid_thins_the_longest_numeric_axes_first_and_keeps_their_ends():
    grid = {
        "n": list(range(16, 56)),
        "noise": ["a", "b", "c"],
        "scale": [0.1 * i for i in range(1, 501)],
    }
    kept = sub_grid(grid, 2_000)
    assert math.prod(len(v) for v in kept.values()) <= 2_000
    assert kept["noise"] == ["a", "b", "c"]  # names are kept while numbers can be thinned
    for name in ("n", "scale"):
        assert kept[name][0] == min(grid[name]) and kept[name][-1] == max(grid[name])
        assert set(kept[name]) <= set(grid[name])
    assert sub_grid(grid, 10**6) == {k: sorted(v) for k, v in grid.items()}  # small: all of it
    assert spread([3, 1, 2, 2], 5) == [1, 2, 3]
    tiny = sub_grid({"x": [1, 2, 3], "y": ["p", "q", "r", "s"]}, 3)
    assert tiny == {"x": [1, 3], "y": ["p"]}  # names go only once numbers are at their ends


@pytest.fixture(scope="module")
def summary(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("figure-data")
    settings = load(small_config())
    run_experiment(settings, "robustness", root)
    return store.summary_path(root, "noisy_attention", "robustness")


def test_a_large_experiment_is_drawn_from_its_sub_grid(summary, monkeypatch):
    kind = get_kind("noisy_attention")
    whole = figure_data.read(summary, kind)
    assert len(whole) == 16 and "point_id" not in whole
    small = dataclasses.replace(
        kind, presentation=dataclasses.replace(kind.presentation, figure_points=8)
    )
    monkeypatch.setattr(figure_data, "BATCH_ROWS", 3)  # several batches
    drawn = figure_data.read(summary, small, ids=True)
    # every numeric axis is at its two ends already: one of the two noise families goes
    assert len(drawn) == 8 and list(drawn["noise"].unique()) == ["gaussian"]
    # its rows are the summary's own rows of the kept values, each as stored
    kept = sub_grid({p: sorted(whole[p].unique()) for p in kind.param_names}, 8)
    inside = whole
    for name, values in kept.items():
        inside = inside[inside[name].isin(values)]
    ordered = ["n", "logit_scale", "noise", "noise_scale"]
    assert (
        drawn.drop(columns="point_id").sort_values(ordered).reset_index(drop=True)
        .equals(inside.sort_values(ordered).reset_index(drop=True))
    )  # fmt: skip


def test_a_damaged_summary_is_refused_when_read_in_part(summary, tmp_path):
    kind = get_kind("noisy_attention")
    small = dataclasses.replace(
        kind, presentation=dataclasses.replace(kind.presentation, figure_points=4)
    )
    copy = tmp_path / summary.relative_to(summary.parents[3])
    copy.parent.mkdir(parents=True)
    table = pq.read_table(summary)
    values = table["sq_err_mean"].to_pylist()
    values[-1] += 1.0
    table = table.set_column(table.column_names.index("sq_err_mean"), "sq_err_mean", [values])
    pq.write_table(table, copy)  # the old provenance, its checksums included
    with pytest.raises(StoreError, match="column sq_err_mean does not match its checksum"):
        figure_data.read(copy, small)


def test_the_bill_prices_figures_and_claims_and_names_a_sub_grid(tmp_path):
    config = small_config()
    # 8,000 points: within the kind's 10,000
    config["experiments"]["robustness"]["grid"]["noise_scale"] = {"logspace": [0.001, 10, 1000]}
    settings = load(config)
    plans = plan_all(settings, tmp_path)
    drawn = bill.bill(settings, plans, tmp_path)
    assert drawn.figures_hours > 0 and drawn.claims_hours > 0 and not drawn.sub_grids
    config["experiments"]["robustness"]["grid"]["noise_scale"]["logspace"][2] = 5000
    config.pop("chunk_size")
    settings = load(config)
    large = bill.bill(settings, plan_all(settings, tmp_path), tmp_path)
    assert large.sub_grids == {"robustness": (40_000, 10_000)}
    assert large.figures_hours > drawn.figures_hours
    text = bill.render(large, settings)
    assert "  figures: about " in text and "; claims: about " in text
    assert "  robustness: 40,000 points; its figures draw a sub-grid of 10,000 of them" in text
