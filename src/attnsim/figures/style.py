"""The look of every figure, kept to the figures that ask for it, and an atomic save to PNG and PDF.

Importing this module (or a kind's figures module) changes nothing global: no backend is chosen
(the figures job picks Agg in `render`), no theme is set. Every figure function of every kind is
wrapped by `figure_function`, which draws it inside `theme()` (seaborn's paper theme as an rc
context, restored afterwards) and with matplotlib's constrained layout, so the figure holds its own
layout: legends and titles stay inside its canvas whatever the fonts, and `fig.savefig(...)`,
`plt.show()` or a notebook keep them. To draw a figure in your own style:

    figures = attnsim.kinds.get_kind(kind).submodule("figures")
    fig = figures.<figure>(summary, style=None)          # your current rcParams
    fig = figures.<figure>(summary, style="ggplot")      # any matplotlib style (name, file, dict)
    with plt.style.context("dark_background"):
        fig = figures.<figure>(summary, style=None)
    fig.savefig("mine.pdf")                              # the legend is kept

The theme is seaborn's "paper" context and "whitegrid" style (font scale 1.1, the "deep" colour
cycle) written out as matplotlib rcParams, and the palettes are seaborn's, computed the same way
from matplotlib's colormaps: a figures job draws without importing seaborn (and the pandas it
imports), the same pixels (tests/figures/test_figure_style.py checks both against seaborn).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

from attnsim import files
from attnsim.errors import AttnsimError

PALETTE = "viridis"
# What `theme()` applies, as seaborn 0.13's set_theme would: context "paper" at font scale 1.1,
# style "whitegrid", palette "deep", font "sans-serif" (`THEME_RC` are their rcParams).
THEME: dict[str, Any] = {
    "context": "paper",
    "style": "whitegrid",
    "font_scale": 1.1,
    "palette": "deep",
    "font": "sans-serif",
}
# seaborn's named colour cycles (seaborn.palettes.SEABORN_PALETTES)
SEABORN_PALETTES = {
    "deep": ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3",
             "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"),
    "deep6": ("#4C72B0", "#55A868", "#C44E52", "#8172B3", "#CCB974", "#64B5CD"),
    "muted": ("#4878D0", "#EE854A", "#6ACC64", "#D65F5F", "#956CB4",
              "#8C613C", "#DC7EC0", "#797979", "#D5BB67", "#82C6E2"),
    "muted6": ("#4878D0", "#6ACC64", "#D65F5F", "#956CB4", "#D5BB67", "#82C6E2"),
    "pastel": ("#A1C9F4", "#FFB482", "#8DE5A1", "#FF9F9B", "#D0BBFF",
               "#DEBB9B", "#FAB0E4", "#CFCFCF", "#FFFEA3", "#B9F2F0"),
    "pastel6": ("#A1C9F4", "#8DE5A1", "#FF9F9B", "#D0BBFF", "#FFFEA3", "#B9F2F0"),
    "bright": ("#023EFF", "#FF7C00", "#1AC938", "#E8000B", "#8B2BE2",
               "#9F4800", "#F14CC1", "#A3A3A3", "#FFC400", "#00D7FF"),
    "bright6": ("#023EFF", "#1AC938", "#E8000B", "#8B2BE2", "#FFC400", "#00D7FF"),
    "dark": ("#001C7F", "#B1400D", "#12711C", "#8C0800", "#591E71",
             "#592F0D", "#A23582", "#3C3C3C", "#B8850A", "#006374"),
    "dark6": ("#001C7F", "#12711C", "#8C0800", "#591E71", "#B8850A", "#006374"),
    "colorblind": ("#0173B2", "#DE8F05", "#029E73", "#D55E00", "#CC78BC",
                   "#CA9161", "#FBAFE4", "#949494", "#ECE133", "#56B4E9"),
    "colorblind6": ("#0173B2", "#029E73", "#D55E00", "#CC78BC", "#ECE133", "#56B4E9"),
}  # fmt: skip
# matplotlib's qualitative colormaps and their colours (seaborn.palettes.MPL_QUAL_PALS): indexed,
# not interpolated
QUALITATIVE = {
    "tab10": 10, "tab20": 20, "tab20b": 20, "tab20c": 20, "Set1": 9, "Set2": 8, "Set3": 12,
    "Accent": 8, "Paired": 12, "Pastel1": 9, "Pastel2": 8, "Dark2": 8,
}  # fmt: skip
# seaborn.axes_style("whitegrid") and seaborn.plotting_context("paper", font_scale=1.1), value for
# value (the floats are seaborn's products, e.g. 1.5 x 0.8 x 1.1 = 1.2000000000000002). seaborn's
# "image.cmap" ("rocket", a colormap only seaborn registers) is left out: every attnsim figure
# names the colormap it maps values with.
THEME_RC: dict[str, Any] = {
    "figure.facecolor": "white",
    "axes.labelcolor": ".15",
    "xtick.direction": "out",
    "ytick.direction": "out",
    "xtick.color": ".15",
    "ytick.color": ".15",
    "axes.axisbelow": True,
    "grid.linestyle": "-",
    "text.color": ".15",
    "font.family": ["sans-serif"],
    "font.sans-serif": [
        "Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"
    ],
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "xtick.top": False,
    "ytick.right": False,
    "axes.grid": True,
    "axes.facecolor": "white",
    "axes.edgecolor": ".8",
    "grid.color": ".8",
    "axes.spines.left": True,
    "axes.spines.bottom": True,
    "axes.spines.right": True,
    "axes.spines.top": True,
    "xtick.bottom": False,
    "ytick.left": False,
    "axes.linewidth": 1.0,
    "grid.linewidth": 0.8,
    "lines.linewidth": 1.2000000000000002,
    "lines.markersize": 4.800000000000001,
    "patch.linewidth": 0.8,
    "xtick.major.width": 1.0,
    "ytick.major.width": 1.0,
    "xtick.minor.width": 0.8,
    "ytick.minor.width": 0.8,
    "xtick.major.size": 4.800000000000001,
    "ytick.major.size": 4.800000000000001,
    "xtick.minor.size": 3.2,
    "ytick.minor.size": 3.2,
    "font.size": 10.560000000000002,
    "axes.labelsize": 10.560000000000002,
    "axes.titlesize": 10.560000000000002,
    "xtick.labelsize": 9.680000000000001,
    "ytick.labelsize": 9.680000000000001,
    "legend.fontsize": 9.680000000000001,
    "legend.title_fontsize": 10.560000000000002,
}  # fmt: skip
# every figure lays itself out at draw time (figure legends placed "outside ..." get their room)
LAYOUT: dict[str, Any] = {"figure.constrained_layout.use": True}


def palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours of a named palette, as seaborn.color_palette(name, count) gives them: a
    seaborn colour cycle or a qualitative colormap's first colours (repeated past its end), else
    colours spread over the colormap with its ends excluded."""
    from matplotlib.colors import to_rgb

    if name in SEABORN_PALETTES:
        colours = [to_rgb(c) for c in SEABORN_PALETTES[name]]
    else:
        import numpy as np

        try:
            cmap = matplotlib.colormaps[name]
        except KeyError:
            raise AttnsimError(f"{name!r} is not a palette attnsim knows") from None
        if name in QUALITATIVE:
            bins = np.linspace(0, 1, QUALITATIVE[name])[:count]
        else:
            bins = np.linspace(0, 1, int(count) + 2)[1:-1]
        colours = [to_rgb(tuple(c)) for c in cmap(bins)[:, :3]]
    repeated = [colours[i % len(colours)] for i in range(count)] if colours else []
    return [(float(r), float(g), float(b)) for r, g, b in repeated]


@functools.cache
def _theme_rc() -> dict:
    from cycler import cycler
    from matplotlib.colors import to_rgb

    rc = dict(THEME_RC)
    deep = SEABORN_PALETTES[str(THEME["palette"])]
    rc["axes.prop_cycle"] = cycler(color=[to_rgb(c) for c in deep])
    rc["font.family"] = THEME["font"]
    rc["legend.fontsize"] = 8.5  # the figure legends under the panels (figures.common.legend_below)
    return rc


def theme_rc() -> dict:
    """attnsim's theme as rcParams (what seaborn.set_theme(**THEME) sets, without setting them):
    for `rc_context`."""
    return dict(_theme_rc())


@contextmanager
def theme(rc: dict | None = None):
    """Draw in attnsim's look inside the block; every rcParam is restored when it ends."""
    with matplotlib.rc_context(theme_rc() | LAYOUT | (rc or {})):
        yield


def _context(style):
    if isinstance(style, str) and style == "attnsim":
        return theme()
    if style is None:
        return matplotlib.rc_context(LAYOUT)

    @contextmanager
    def styled():
        with plt.style.context(style), matplotlib.rc_context(LAYOUT):
            yield

    return styled()


def figure_function(draw):
    """Decorator of each kind's figure functions: `draw(summary)` runs in attnsim's theme (or, with
    `style=None`, in the caller's current style; or in a matplotlib style given by name, file or
    dict), with constrained layout, and returns the figure. Nothing outside the call changes."""

    @functools.wraps(draw)
    def wrapper(summary, *args, style="attnsim", **kwargs):
        with _context(style):
            fig = draw(summary, *args, **kwargs)
            fit_canvas(fig)
        return fig

    wrapper.figure_function = True
    return wrapper


# No time stamp in a file (the PDF's CreationDate, by default the time of drawing): the same data
# draws the same bytes, in any run and whatever order the experiments are drawn in.
METADATA: dict[str, dict[str, Any]] = {".png": {}, ".pdf": {"CreationDate": None}}
# zlib's level for the PNG: 1-3 are its fast strategy, ~40% less CPU than Pillow's default 6 for
# ~6% more bytes (measured on the default sweep's 47 figures); the pixels are the same (lossless)
PNG_COMPRESSION = 3
WRITER: dict[str, dict[str, Any]] = {".png": {"pil_kwargs": {"compress_level": PNG_COMPRESSION}}}
PAD_INCHES = 0.1  # margin kept around the drawn content
DPI = 150  # of the PNG (the PDF is vector; its images, if any, at this resolution)


def fit_canvas(fig, pad: float = PAD_INCHES) -> None:
    """Grow the figure so that its panels keep the size they were drawn for and everything else
    fits around them: constrained layout makes room for figure legends ("outside" placements)
    and the title by shrinking the panels; this adds that room to the canvas instead, and widens
    it for a legend or title wider than the canvas and for a panel title wider than its column.
    Text measures itself without a layout, so this draws nothing: the next draw (a savefig, a
    notebook's display) lays the figure out, once."""
    if not fig.get_constrained_layout():
        return
    width, height = fig.get_size_inches()
    renderer = fig.canvas.get_renderer()
    extra_height, needed = 0.0, width
    for artist in [*fig.legends, fig._suptitle, fig._supxlabel]:
        if artist is None or not artist.get_visible() or not artist.get_in_layout():
            continue
        if artist in fig.legends and getattr(artist, "_outside_loc", None) is None:
            continue  # a legend inside the panels takes no room of its own
        box = artist.get_window_extent(renderer)
        extra_height += box.height / fig.dpi + pad
        needed = max(needed, box.width / fig.dpi + 2 * pad)
    for ax in fig.axes:  # a panel's title within its share of the width
        spec = ax.get_subplotspec()
        if spec is None or not ax.get_title():
            continue
        share = len(spec.colspan) / spec.get_gridspec().ncols
        title = ax.title.get_window_extent(renderer).width / fig.dpi
        needed = max(needed, (title + 2 * pad) / share)
    fig.set_size_inches(needed, height + extra_height, forward=False)


def _ticks_on_top(axis) -> bool:
    """Whether the x axis draws tick marks or labels at the top (judged as matplotlib does, on
    its first major and minor ticks): ticks hidden on both sides (seaborn's whitegrid) are not."""
    ticks = [axis.majorTicks[0], axis.minorTicks[0]]
    return any(tick.tick2line.get_visible() or tick.label2.get_visible() for tick in ticks)


def _y_offset_text(axis) -> str:
    """The y axis's offset text (e.g. "1e6", drawn above the panel's top left) if it shows one. A
    formatter that keeps matplotlib's `Formatter.get_offset` (log, fixed, function formatters)
    never shows one: only the others (`ScalarFormatter`'s "1e6") need the ticks placed first,
    which creates and formats every tick of the axis (~5% of the figures job, profiled)."""
    from matplotlib.ticker import Formatter

    formatter = axis.get_major_formatter()
    if not axis.offsetText.get_visible() or type(formatter).get_offset is Formatter.get_offset:
        return ""
    axis._update_ticks()  # sets the formatter's offset from the ticks' values
    return formatter.get_offset()


def freeze_titles(fig) -> None:
    """Keep each panel's titles where the layout just placed them when nothing can move them: at
    the panel's top (y = 1), with no x ticks or x label on top, no twin, child or secondary axes,
    no title alignment group and no y offset text. Matplotlib otherwise re-measures the panel's
    whole y axis before every draw and layout pass to place the titles (~10% of the figures job's
    time, profiled), and finds the same place. A frozen title stays put in a later draw, as one
    given `set_title(..., y=1)` does; the others keep matplotlib's automatic placement."""
    for ax in fig.axes:
        titles = (ax.title, ax._left_title, ax._right_title)
        movable = (
            ax.child_axes
            or len(ax._twinned_axes.get_siblings(ax)) > 1
            or len(fig._align_label_groups["title"].get_siblings(ax)) > 1
            or _ticks_on_top(ax.xaxis)
            or ax.xaxis.get_label_position() == "top"
            or _y_offset_text(ax.yaxis)
            or any(title.get_position()[1] != 1.0 for title in titles)
        )
        if not movable:
            ax._autotitlepos = False  # what set_title(y=...) sets


def _minor_ticks_hidden(axis) -> bool:
    """Whether the axis's minor ticks draw nothing: no tick marks, no grid lines, no labels (a log
    axis spanning more than a decade labels none; seaborn's whitegrid hides the marks)."""
    from matplotlib.ticker import NullLocator

    if isinstance(axis.get_minor_locator(), NullLocator):
        return True
    tick = axis.minorTicks[0]
    if any(a.get_visible() for a in (tick.tick1line, tick.tick2line, tick.gridline)):
        return False
    if not (tick.label1.get_visible() or tick.label2.get_visible()):
        return True
    labels = axis.get_minor_formatter().format_ticks(axis.get_minorticklocs())
    return not any(labels)


def drop_hidden_minor_ticks(fig) -> None:
    """Give a NullLocator to the minor ticks of every axis (and the axes sharing it) on which they
    draw nothing: each layout pass and draw would otherwise make, place and measure their tick
    objects (a log axis over 30 decades has ~250), which costs the figures job ~10% of its time
    (profiled) for the same picture."""
    from matplotlib.ticker import NullLocator

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            shared = axis._get_shared_axis()
            if all(_minor_ticks_hidden(other) for other in shared):
                axis.set_minor_locator(NullLocator())


WIDEN_ROUNDS = 4  # a canvas widened this often and still too narrow is refused by `save`


def lay_out(fig, pad: float = PAD_INCHES) -> None:
    """Run the figure's layout once, at the PNG's resolution. A panel title or legend that the
    layout could not fit into the width (it is centred over its panel: `fit_canvas` cannot know
    the panel's place before the layout) gets the width it lacks, and the layout runs again."""
    from attnsim.figures.canvas import reaching_out

    dpi = fig.get_dpi()
    fig.set_dpi(DPI)
    try:
        try:  # both only skip work that draws nothing; they read matplotlib's private state
            freeze_titles(fig)
            drop_hidden_minor_ticks(fig)
        except AttributeError:  # a matplotlib that renamed it: draw as without them
            pass
        fig.get_layout_engine().execute(fig)
        for _ in range(WIDEN_ROUNDS):
            sides = [max(r[0], r[2]) for r in reaching_out(fig).values()]
            if not sides or max(sides) <= 0:
                break
            width, height = fig.get_size_inches()
            # the panels widen with the canvas and keep their titles centred: twice the overshoot
            # (less where colour bars and gaps take their share of the width: hence the rounds)
            fig.set_size_inches(width + 2 * (max(sides) / DPI + pad), height, forward=False)
            fig.get_layout_engine().execute(fig)
    finally:
        fig.set_dpi(dpi)


def save(fig, png: Path) -> list[Path]:
    """Write `fig` as PNG and PDF next to each other, each via a hidden temp file. The figure is
    laid out once (its constrained layout, at the PNG's resolution) and both files are drawn from
    that layout, each in one pass: a savefig of a laid-out figure would lay it out again and draw
    it twice (once to lay it out, once to write). Both show the same figure, the one any other
    savefig gives. A figure whose legend or title reaches past its canvas (and so would be cut
    off) is refused, naming them (`attnsim.figures.canvas.outside_canvas`)."""
    from attnsim.figures.canvas import outside_canvas

    png = Path(png)
    engine = fig.get_layout_engine()
    if engine is not None:
        lay_out(fig)
        off = {"figure.autolayout": False, **dict.fromkeys(LAYOUT, False)}
        # matplotlib types rc keys as literals; these are LAYOUT's own, checked by its tests
        with matplotlib.rc_context(off):  # type: ignore[arg-type]
            fig.set_layout_engine(None)  # keeps the layout just computed
    written = []
    try:
        for path in (png, png.with_suffix(".pdf")):
            with files.atomic_path(path, fsync=False) as tmp:
                fig.savefig(
                    tmp,
                    dpi=DPI,
                    format=path.suffix[1:],
                    metadata=METADATA[path.suffix],
                    **WRITER.get(path.suffix, {}),
                )
                cut = outside_canvas(fig) if path == png else []
                if cut:
                    raise AttnsimError(
                        f"figure {png}: {', '.join(cut)} reach(es) past the canvas and would be"
                        " cut off (place figure legends with attnsim.figures.common.legend_below)"
                    )
            written.append(path)
    finally:
        if engine is not None:
            fig.set_layout_engine(engine)
        plt.close(fig)
    return written


def theory_legend_handle(label: str = "theory (dashed)"):
    return matplotlib.lines.Line2D([], [], color="0.2", linestyle="--", label=label)
