"""Figures can be redrawn in the reader's own style: importing them changes nothing global, each
figure function draws in attnsim's theme only for its own call (or in the caller's style), and the
figure lays itself out, so a plain `fig.savefig` of a restyled figure keeps its legend and title."""

from __future__ import annotations

import io
import subprocess
import sys

import matplotlib
import matplotlib.pyplot as plt
import pytest
from helpers.configs import small_config

from attnsim.figures import style
from attnsim.kinds import all_kinds, get_kind

matplotlib.use("Agg")

GRID = {"n": [16, 64], "d": [3, 8], "tau": [0.1, 0.3, 1.0, 3.0]}


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    """A real summary of temperature_entropy (simulated and collected as the workflow does)."""
    from attnsim.store import parquet as store
    from attnsim.testing import run_experiment

    root = tmp_path_factory.mktemp("style") / "store"
    config = small_config()
    config["experiments"] = {
        "temperature": {"kind": "temperature_entropy", "trials": 20, "grid": GRID}
    }
    return store.read_table(run_experiment(config, "temperature", root).summary).to_pandas()


def test_importing_every_figures_module_changes_no_rcparam_and_no_backend():
    code = """
import matplotlib
before = {k: dict.__getitem__(matplotlib.rcParams, k) for k in dict.keys(matplotlib.rcParams)}
from attnsim.kinds import all_kinds
for kind in all_kinds().values():
    kind.submodule("figures")
import attnsim.figures.style, attnsim.figures.common, attnsim.report.figures
backend = matplotlib.rcParams._get_backend_or_none()  # before anything reads rcParams["backend"]
after = {k: dict.__getitem__(matplotlib.rcParams, k) for k in dict.keys(matplotlib.rcParams)}
print(sorted(k for k in before if before[k] != after[k]), backend)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[] None", out  # no theme set, no backend chosen


def test_every_figure_function_is_wrapped():
    for kind in all_kinds().values():
        module = kind.submodule("figures")
        for name in kind.presentation.figures:
            assert getattr(getattr(module, name), "figure_function", False), (
                f"{kind.name}.{name} lacks @figure_function"
            )


def inside(fig) -> list[str]:
    """Names of the figure-level artists (legends, title) that reach past the canvas."""
    fig.canvas.draw()
    canvas = fig.bbox
    out = []
    for artist in [*fig.legends, fig._suptitle]:
        if artist is None:
            continue
        box = artist.get_window_extent()
        if (
            box.x0 < canvas.x0 - 1
            or box.x1 > canvas.x1 + 1
            or box.y0 < canvas.y0 - 1
            or box.y1 > canvas.y1 + 1
        ):
            out.append(type(artist).__name__)
    return out


def test_theme_is_applied_for_the_call_only(summary):
    figures = get_kind("temperature_entropy").submodule("figures")
    before = dict(matplotlib.rcParams)
    fig = figures.temperature_gap(summary)
    assert dict(matplotlib.rcParams) == before
    assert fig.axes[0].get_facecolor()[:3] == pytest.approx((1.0, 1.0, 1.0))  # seaborn whitegrid
    assert fig.axes[0].xaxis.label.get_fontsize() == pytest.approx(
        style.theme_rc()["axes.labelsize"]
    )
    assert inside(fig) == []
    plt.close(fig)


@pytest.mark.parametrize(
    "user",
    [
        {"font.size": 16, "legend.fontsize": 15, "axes.labelsize": 16, "figure.titlesize": 22},
        "dark_background",
    ],
)
def test_a_figure_in_the_readers_style_keeps_its_legend(summary, user):
    figures = get_kind("temperature_entropy").submodule("figures")
    with plt.style.context(user):
        fig = figures.temperature_gap(summary, style=None)
        if isinstance(user, dict):
            assert fig.legends[0].get_texts()[0].get_fontsize() == 15
        else:
            assert fig.get_facecolor()[:3] == pytest.approx((0, 0, 0))
    assert inside(fig) == [], "a legend or the title is cut off"
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")  # a plain savefig: no bbox_inches, no attnsim save()
    assert buffer.tell() > 10_000
    # a named matplotlib style works the same without a context of the caller's own
    other = figures.temperature_gap(summary, style="ggplot")
    assert (
        inside(other) == [] and other.axes[0].get_facecolor()[:3] != fig.axes[0].get_facecolor()[:3]
    )
    # and resizing it afterwards keeps the legend in too: the layout runs at draw time
    fig.set_size_inches(fig.get_figwidth(), fig.get_figheight() * 1.3)
    assert inside(fig) == []
    plt.close("all")


def test_save_writes_what_a_plain_savefig_writes(summary, tmp_path):
    figures = get_kind("temperature_entropy").submodule("figures")
    fig = figures.temperature_gap(summary)
    size = fig.get_size_inches() * 150
    written = style.save(fig, tmp_path / "gap.png")
    assert [p.name for p in written] == ["gap.png", "gap.pdf"]
    data = written[0].read_bytes()
    pixels = (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"))
    # the canvas, nothing cropped
    assert all(abs(p - s) <= 1 for p, s in zip(pixels, size)), (pixels, size)


def _cases():
    """Figures on which the two shortcuts of `style.lay_out` apply, or must not."""
    import numpy as np

    def log_decades():  # titled, log y over 30 decades: titles frozen, minor ticks dropped
        fig, ax = plt.subplots()
        ax.semilogy([1, 2, 3], [1e-30, 1e-10, 1.0])
        ax.set_title("thirty decades")
        return fig

    def log_narrow():  # log x over a fraction of a decade: its minor ticks carry labels
        fig, ax = plt.subplots()
        ax.semilogx([2.0, 3.0, 4.0], [1, 2, 3])
        ax.set_title("narrow")
        return fig

    def secondary():  # a secondary x axis on top: the title must rise above it
        fig, ax = plt.subplots()
        ax.semilogx([1e-2, 1e2], [0, 1])
        ax.secondary_xaxis("top", functions=(np.sqrt, np.square)).set_xlabel("top label")
        ax.set_title("over a secondary axis")
        return fig

    def offset():  # a y offset text under a wide title
        fig, axes = plt.subplots(1, 2, sharey=True)
        for ax in axes:
            ax.plot([0, 1], [1e6, 1e6 + 1])
        axes[0].set_title("a title wide enough to reach the offset text at the top left")
        return fig

    def minor_grid():  # minor grid lines drawn: minor ticks kept
        fig, ax = plt.subplots()
        ax.semilogy([1, 2], [0.1, 10.0])
        ax.grid(True, which="minor")
        return fig

    return {f.__name__: f for f in (log_decades, log_narrow, secondary, offset, minor_grid)}


@pytest.mark.parametrize("case", sorted(_cases()))
def test_layout_shortcuts_change_no_pixel(case, tmp_path, monkeypatch):
    """`save` freezes titles nothing can move and drops minor ticks that draw nothing; the PNG is
    pixel for pixel the one drawn without either shortcut."""
    import numpy as np
    from matplotlib.ticker import NullLocator
    from PIL import Image

    build = style.figure_function(lambda _: _cases()[case]())
    fig = build(None)
    style.lay_out(fig)
    ax = fig.axes[0]
    frozen = getattr(ax, "_autotitlepos", None) is False
    dropped = {
        name: isinstance(getattr(ax, f"{name}axis").get_minor_locator(), NullLocator)
        for name in "xy"
    }
    plt.close(fig)
    fast = style.save(build(None), tmp_path / "fast.png")[0]
    monkeypatch.setattr(style, "freeze_titles", lambda fig: None)
    monkeypatch.setattr(style, "drop_hidden_minor_ticks", lambda fig: None)
    plain = style.save(build(None), tmp_path / "plain.png")[0]
    assert np.array_equal(np.asarray(Image.open(fast)), np.asarray(Image.open(plain)))
    engaged = {
        "log_decades": frozen and dropped["y"],
        "log_narrow": frozen and not dropped["x"],  # its minor ticks carry labels
        "secondary": not frozen,
        "offset": not frozen,
        "minor_grid": not dropped["y"],
    }[case]
    assert engaged


def test_the_theme_and_palettes_are_seaborns_value_for_value():
    """The figures draw without seaborn: its theme (whitegrid, paper at 1.1, the deep cycle) and
    palettes are written out in attnsim.figures.style; here they are computed by seaborn itself
    and must be equal, so the figures are the same pixels as when seaborn drew them."""
    sns = pytest.importorskip("seaborn")
    from cycler import cycler

    expected = dict(sns.axes_style("whitegrid"))
    expected.update(sns.plotting_context("paper", font_scale=1.1))
    expected["axes.prop_cycle"] = cycler(color=sns.color_palette("deep"))
    expected["font.family"] = "sans-serif"
    expected["legend.fontsize"] = 8.5
    assert expected.pop("image.cmap") == "rocket"  # seaborn's own colormap: left out (docstring)
    assert style.theme_rc() == expected
    names = ["viridis", "plasma", "magma", "tab10", "tab20", "colorblind", "deep", "muted6"]
    for name in names:
        for count in (1, 2, 3, 7, 11, 25):
            seaborns = [tuple(map(float, c)) for c in sns.color_palette(name, count)]
            assert style.palette(name, count) == seaborns, (name, count)


def test_no_figure_maps_values_with_the_default_colormap():
    """seaborn's theme set image.cmap to its own "rocket"; attnsim's leaves matplotlib's default.
    That draws the same only if no figure maps values through the default: every call that can
    (imshow, pcolormesh, contourf, scatter with numbers) names its colormap."""
    import re

    from attnsim.kinds import all_kinds

    for kind in all_kinds().values():
        source = kind.submodule("figures").__file__
        text = open(source, encoding="utf-8").read()
        for call in re.finditer(r"\.(imshow|pcolormesh|contourf?|hexbin)\(", text):
            window = text[call.start() : call.start() + 400]
            assert "cmap" in window, f"{source}: {call.group(1)} without a cmap"


def test_figures_import_neither_seaborn_nor_scipy():
    code = """
import sys
from attnsim.kinds import all_kinds
for kind in all_kinds().values():
    kind.submodule("figures")
import attnsim.report.figures, attnsim.figures.style
print(sorted(m for m in ("seaborn", "scipy") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
