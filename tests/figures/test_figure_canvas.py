"""Every figure of every built-in kind keeps its legends and titles inside its canvas, as saved:
each kind's example sweep (`Kind.example`, a few trials) is simulated, collected and drawn through
the figures job's own path (`render`, `style.save`); after each save the legends' and titles'
window extents are compared with the canvas here, and the PNG is the canvas, nothing cropped.
A legend anchored under the figure (the delta_shortfall bug: `fig.legend(loc="upper center",
bbox_to_anchor=(0.5, 0))`, drawn past the canvas and missing from the PNG) is refused in one
line."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from attnsim.errors import AttnsimError  # noqa: E402
from attnsim.figures import style  # noqa: E402
from attnsim.kinds import all_kinds, get_kind  # noqa: E402
from attnsim.report import figures as render_module  # noqa: E402
from attnsim.report.judged import for_summary  # noqa: E402
from attnsim.testing import (  # noqa: E402
    example_config,
    example_grid,  # noqa: E402
    run_experiment,
)

BUILT_IN = sorted(k for k, kind in all_kinds().items() if kind.package.startswith("attnsim.kinds."))
TRIALS = 4


def cut_off(fig) -> list[str]:
    """The legends and titles of a saved figure whose extents leave its canvas (by > 1 pixel)."""
    canvas = fig.bbox
    artists = [("figure legend", legend) for legend in fig.legends]
    artists += [("title", fig._suptitle)] if fig._suptitle is not None else []
    for ax in fig.axes:
        if ax.get_legend() is not None:
            artists.append(("panel legend", ax.get_legend()))
        if ax.get_title():
            artists.append(("panel title", ax.title))
    out = []
    for name, artist in artists:
        box = artist.get_window_extent()
        if (
            box.x0 < canvas.x0 - 1
            or box.y0 < canvas.y0 - 1
            or box.x1 > canvas.x1 + 1
            or box.y1 > canvas.y1 + 1
        ):
            out.append(f"{name} {box.bounds} outside {canvas.bounds}")
    return out


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.parametrize("kind", BUILT_IN)
def test_every_figure_keeps_its_legends_inside_the_saved_canvas(
    kind, kind_assets, tmp_path, monkeypatch
):
    config = example_config(get_kind(kind), trials=TRIALS, seed=3)
    summary = run_experiment(config, kind, tmp_path / "store").summary
    saved = []
    original = style.save

    def save(fig, png):
        written = original(fig, png)
        saved.append((fig, png, cut_off(fig), fig.get_size_inches() * style.DPI))
        return written

    monkeypatch.setattr(style, "save", save)
    claims = None
    if get_kind(kind).presentation.claims_figures:  # drawn from the kind's judged claims
        claims = for_summary(summary, tmp_path / "claims.parquet")
    written = render_module.render(summary, tmp_path / "figures", claims=claims)
    drawn = get_kind(kind).figures_for(example_grid(get_kind(kind)))
    assert sorted(p.name for p in written) == sorted(
        f"{f}.{suffix}" for f in drawn for suffix in ("png", "pdf")
    )
    assert len(saved) == len(drawn)
    for _fig, png, cut, size in saved:
        assert cut == [], f"{kind}/{png.stem}: {cut}"
        pixels = png_size(png)
        assert all(abs(p - s) <= 1 for p, s in zip(pixels, size)), (png.stem, pixels, size)
    plt.close("all")


def test_a_legend_anchored_under_the_figure_is_refused(tmp_path):
    """What delta_shortfall did: the saved PNG had no legend; now saving it fails, naming it."""

    @style.figure_function
    def anchored(summary):
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([1, 2], [1, 2], label="data")
        ax.set_title("a panel")
        fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False)
        return fig

    fig = anchored(None)
    with pytest.raises(AttnsimError) as refused:
        style.save(fig, tmp_path / "anchored.png")
    assert "figure legend 1 reach(es) past the canvas" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert cut_off(fig), "the test's own check sees the legend outside too"
    assert not list(tmp_path.iterdir()), "nothing written, no temp file left"

    @style.figure_function
    def below(summary):
        from attnsim.figures.common import legend_below

        fig, ax = plt.subplots(figsize=(4, 3))
        (line,) = ax.plot([1, 2], [1, 2], label="data")
        legend_below(fig, [line])
        return fig

    fig = below(None)
    style.save(fig, tmp_path / "below.png")
    assert cut_off(fig) == []
    plt.close("all")
