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

seaborn is imported once per figure job (~0.55 CPU-s measured on this project's machines): the
price of its theme and palettes instead of a copy of them here.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

# no side effect on import (seaborn >= 0.8 sets no theme); render_all forks after it
import seaborn as sns

from attnsim import files
from attnsim.errors import AttnsimError

PALETTE = "viridis"
# seaborn.set_theme's arguments: what `theme()` applies, within its context only
THEME = {
    "context": "paper",
    "style": "whitegrid",
    "font_scale": 1.1,
    "palette": "deep",
    "font": "sans-serif",
}
# every figure lays itself out at draw time (figure legends placed "outside ..." get their room)
LAYOUT: dict[str, Any] = {"figure.constrained_layout.use": True}


def palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours of a named palette (seaborn.color_palette): a qualitative map's first
    colours, else colours spread over the map with its ends excluded."""
    return [(float(r), float(g), float(b)) for r, g, b in sns.color_palette(name, count)]


def theme_rc(**overrides) -> dict:
    """attnsim's theme as rcParams (seaborn.set_theme's, without setting them): for `rc_context`."""
    from cycler import cycler

    settings = THEME | overrides
    rc = dict(sns.axes_style(settings["style"]))
    rc.update(sns.plotting_context(settings["context"], font_scale=settings["font_scale"]))
    rc["axes.prop_cycle"] = cycler(color=sns.color_palette(settings["palette"]))
    rc["font.family"] = settings["font"]
    rc["legend.fontsize"] = 8.5  # the figure legends under the panels (figures.common.legend_below)
    return rc


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
                fig.savefig(tmp, dpi=DPI, format=path.suffix[1:])
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
