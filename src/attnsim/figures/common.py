"""Drawing helpers that several kinds' figures share: colours per n, fine theory grids, CI bands,
error bars and the legend under the panels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.errors import AttnsimError
from attnsim.figures.style import PALETTE, palette


class NotApplicable(AttnsimError):
    """A figure asked of a summary it has nothing to show in (the workflow asks only for the
    figures `Kind.figure_applies` lets through: this is for a direct call)."""

    def __init__(self, figure: str, why: str):
        super().__init__(f"figure {figure}: nothing to draw for this experiment ({why})")


def n_colours(values) -> dict:
    ns = sorted(set(int(v) for v in values))
    return dict(zip(ns, palette(PALETTE, len(ns))))


def mean_line(ax, x, frame: pd.DataFrame, metric: str, colour, lw: float = 1.4) -> None:
    """A metric's mean (`metric`_mean of `frame`) against x as dots and line over its 95% band
    (`positive_band`: the axes may be logarithmic)."""
    mean = frame[f"{metric}_mean"]
    ax.plot(x, mean, "o-", color=colour, ms=3.5, lw=lw, zorder=3)
    low, high = frame[f"{metric}_ci_low"], frame[f"{metric}_ci_high"]
    positive_band(ax, x, mean, low, high, colour)


def mean_handle(label: str, colour="0.3") -> Line2D:
    """The legend entry of a `mean_line`."""
    return Line2D([], [], color=colour, marker="o", ms=3.5, label=label)


def n_handles(colours: dict) -> list:
    """The legend entries of `n_colours`: a mean line per n."""
    return [mean_handle(f"n = {n}", c) for n, c in colours.items()]


def key_handles(keys) -> list[Line2D]:
    """Legend entries that say what a figure's marks mean, one per (colour, marker, line style,
    line width, text) row of `keys`; None keeps matplotlib's default (no marker, a solid line of
    the theme's width), so each row names only what its mark draws differently."""
    return [
        Line2D([], [], color=colour, marker=marker, linestyle=ls, linewidth=lw, label=label)
        for colour, marker, ls, lw, label in keys
    ]


def fine_grid(values, points: int = 240) -> np.ndarray:
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(lo, hi, points) if hi > lo else np.array([lo])


def positive_band(ax, x, mean, low, high, colour, floor_fraction=1e-3):
    """CI band on a log axis: a lower end <= 0 is drawn at a small fraction of the mean."""
    low = np.maximum(np.asarray(low, dtype=float), np.asarray(mean, dtype=float) * floor_fraction)
    ax.fill_between(x, low, high, color=colour, alpha=0.25, lw=0)


def finite_or(ends: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """An interval's ends where finite, else the mean (a sample of one has no interval): its bar
    is then drawn with no length instead of not at all."""
    return np.where(np.isfinite(ends), ends, mean)


def yerr(frame: pd.DataFrame, metric: str, log: bool = False) -> np.ndarray:
    mean = frame[f"{metric}_mean"].to_numpy()
    lower = np.clip(mean - frame[f"{metric}_ci_low"].to_numpy(), 0, None)
    if log:
        lower = np.minimum(lower, mean * 0.999)
    upper = np.clip(frame[f"{metric}_ci_high"].to_numpy() - mean, 0, None)
    return np.vstack([lower, upper])


# A landmark (g(1), the best tau, the uniform-weight value) is one black-edged star in every kind's
# figures, in its panel and in its legend alike, so a reader learns the mark once.
STAR: dict[str, Any] = {"marker": "*", "mec": "k", "mew": 0.5, "ls": "none"}


def star_handle(colour, label: str, size: float = 10) -> Line2D:
    """The legend entry of a landmark drawn with STAR (a smaller star than the panel's)."""
    return Line2D([], [], color=colour, ms=size, label=label, **STAR)


def mean_errorbar(ax, x, frame: pd.DataFrame, metric: str, log: bool = False, **style):
    """A metric's mean (`metric`_mean of `frame`) against x with its 95% interval as error bars
    (`yerr`; `log` for a logarithmic axis)."""
    return ax.errorbar(x, frame[f"{metric}_mean"], yerr=yerr(frame, metric, log=log), **style)


def legend_below(fig, handles, ncol=None, y=None, fontsize=None):
    """The figure's legend under its panels, inside the canvas: constrained layout (every figure
    function has it, `attnsim.figures.style.figure_function`) makes room for it at draw time, so a
    restyled or resized figure keeps it. `y` is ignored (the layout places it); the font size is
    the style's legend.fontsize unless given."""
    return fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=ncol or min(len(handles), 5),
        frameon=False,
        fontsize=fontsize,
    )


def panel_letter(ax, letter: str) -> None:
    """The panel's letter, "(a)", in bold above its top left corner: captions and claims name panels
    by it."""
    ax.text(
        -0.08,
        1.02,
        f"({letter})",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=10,
        fontweight="bold",
    )


# What a reader tells apart in one figure: a sweep larger than this is drawn in part (values
# spread over its range, the figure says which) or binned (points along x), never point by point.
MAX_LINES = 8  # lines (values of one parameter) in one panel
MAX_PANELS = 4  # panels of one parameter's values
MAX_POINTS = 120  # points along one line


def spread(values, count: int) -> list:
    """At most `count` of the distinct `values`, evenly spread over their sorted order (the
    smallest and largest always among them): all of them when there are no more."""
    distinct = sorted(set(values))
    if len(distinct) <= count:
        return distinct
    picks = np.unique(np.round(np.linspace(0, len(distinct) - 1, count)).astype(int))
    return [distinct[i] for i in picks]


def shown_note(name: str, shown, values) -> str:
    """ "n: 8 of 40 values" when a figure draws part of a parameter's values, else ""."""
    total = len(set(values))
    return f"{name}: {len(shown)} of {total} values" if len(shown) < total else ""


def binned(
    frame: pd.DataFrame, x: str, metric: str, bins: int = MAX_POINTS, log: bool = False
) -> pd.DataFrame:
    """`frame` (one line's points) with at most `bins` rows: beyond that, the points in each of
    `bins` equal bins of x (of log x) become one row: x and `metric`_mean the means of its points,
    `metric`_ci_low / _ci_high the lowest and highest of their 95% intervals (the band covers
    every point's interval). A line of no more points is returned as it is."""
    if len(frame) <= bins:
        return frame
    values = frame[x].to_numpy(dtype=float)
    scaled = np.log(values) if log else values
    edges = np.linspace(scaled.min(), scaled.max(), bins + 1)
    which = np.clip(np.searchsorted(edges, scaled, side="right") - 1, 0, bins - 1)
    groups = frame.assign(_bin=which).groupby("_bin", sort=True)
    out = pd.DataFrame(
        {
            x: groups[x].mean(),
            f"{metric}_mean": groups[f"{metric}_mean"].mean(),
            f"{metric}_ci_low": groups[f"{metric}_ci_low"].min(),
            f"{metric}_ci_high": groups[f"{metric}_ci_high"].max(),
        }
    )
    return out.reset_index(drop=True)
