"""The information-content figures draw from small simulated summaries, with labelled axes, legends
and titles."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from oracles.points import expand  # noqa: E402
from oracles.summaries import summarise_points  # noqa: E402

from attnsim.errors import AttnsimError  # noqa: E402
from attnsim.jobs.simulate import simulate_points  # noqa: E402
from attnsim.kinds import get_kind  # noqa: E402
from attnsim.records.experiment import TrialSettings
from attnsim.report.figures import render  # noqa: E402
from attnsim.store import parquet as store  # noqa: E402

GRIDS = {
    "logit_entropy": {
        "n": [16, 256],
        "d": [8],
        "logits": ["gaussian", "dot_product"],
        "scale": [0.0, 0.1, 1.0, 3.0, 30.0],
    },
    "temperature_entropy": {"n": [16, 256], "d": [3, 16], "tau": [0.05, 0.3, 1.0, 5.0]},
    "init_gradient": {"n": [16, 256], "d": [4], "scale": [0.0, 0.5, 1.5, 5.0, 100.0]},
}


def summary_table(kind: str, grid: dict, trials: int = 12):
    points = expand(SimpleNamespace(kind=kind, grid=grid))
    results = simulate_points(get_kind(kind), TrialSettings(5, trials), points)
    return summarise_points(kind, "demo", results, points)


@pytest.fixture(scope="module")
def summaries():
    return {kind: summary_table(kind, grid).to_pandas() for kind, grid in GRIDS.items()}


def check_readable(fig: Figure) -> None:
    assert isinstance(fig, Figure)
    axes = [ax for ax in fig.axes if ax.lines or ax.collections]  # data panels (not colour bars)
    assert axes
    for ax in axes:
        assert ax.get_xlabel().strip(), "x axis without label"
        assert ax.get_title().strip(), "panel without title"
    assert any(ax.get_ylabel().strip() for ax in axes)
    assert fig.legends or any(ax.get_legend() for ax in fig.axes)
    assert fig.get_suptitle() or all(ax.get_title() for ax in axes)
    fig.canvas.draw()  # layout and text rendering work


def figures_module(kind: str):
    return get_kind(kind).submodule("figures")


@pytest.mark.parametrize(
    ("kind", "name"), [(k, n) for k in GRIDS for n in get_kind(k).presentation.figures]
)
def test_every_registered_figure_draws_a_labelled_figure(summaries, kind, name):
    fig = getattr(figures_module(kind), name)(summaries[kind])
    try:
        check_readable(fig)
    finally:
        plt.close(fig)


def test_figures_cope_with_a_single_panel_and_zero_medians(summaries):
    only_gaussian = summaries["logit_entropy"][summaries["logit_entropy"]["logits"] == "gaussian"]
    one_d = summaries["temperature_entropy"][summaries["temperature_entropy"]["d"] == 3]
    no_median = summaries["init_gradient"].copy()
    no_median.loc[no_median["scale"] == 100.0, ["grad_sq_median", "jacobian_fro_median"]] = 0.0
    entropy, temperature, gradient = (
        figures_module(k) for k in ("logit_entropy", "temperature_entropy", "init_gradient")
    )
    for fig in (
        entropy.entropy_vs_scale(only_gaussian),
        entropy.entropy_collapse(only_gaussian),
        temperature.temperature_gap(one_d),
        gradient.gradient_vs_entropy(no_median),
    ):
        check_readable(fig)
        plt.close(fig)


def test_temperature_figure_marks_g_of_one_and_draws_a_bound_per_n(summaries):
    fig = figures_module("temperature_entropy").temperature_gap(summaries["temperature_entropy"])
    try:
        for ax in fig.axes:
            assert any("0.4745" in t.get_text() for t in ax.texts)
            dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
            assert len(dashed) == summaries["temperature_entropy"]["n"].nunique()
    finally:
        plt.close(fig)


def test_render_writes_png_and_pdf_from_a_stored_summary(tmp_path):
    table = summary_table("temperature_entropy", {"n": [16], "d": [3], "tau": [0.5, 1.0]}, trials=5)
    path = store.summary_path(tmp_path, "temperature_entropy", "demo")
    store.write_atomic(
        table,
        path,
        store.provenance(table="summary", experiment="demo", kind="temperature_entropy"),
    )
    written = render(path, tmp_path / "fig")
    assert [p.name for p in written] == ["temperature_gap.png", "temperature_gap.pdf"] and all(
        p.stat().st_size > 1000 for p in written
    )
    with pytest.raises(AttnsimError, match="no figure 'collapse' for kind temperature_entropy"):
        render(path, tmp_path / "fig", ["collapse"])
