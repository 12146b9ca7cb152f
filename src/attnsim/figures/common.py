"""Drawing helpers that several kinds' figures share: colours per n, fine theory grids, CI bands,
error bars and the legend under the panels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnsim.figures.style import PALETTE, palette


def n_colours(values) -> dict:
    ns = sorted(set(int(v) for v in values))
    return dict(zip(ns, palette(PALETTE, len(ns))))


def fine_grid(values, points: int = 240) -> np.ndarray:
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(lo, hi, points) if hi > lo else np.array([lo])


def positive_band(ax, x, mean, low, high, colour, floor_fraction=1e-3):
    """CI band on a log axis: a lower end <= 0 is drawn at a small fraction of the mean."""
    low = np.maximum(np.asarray(low, dtype=float), np.asarray(mean, dtype=float) * floor_fraction)
    ax.fill_between(x, low, high, color=colour, alpha=0.25, lw=0)


def yerr(frame: pd.DataFrame, metric: str, log: bool = False) -> np.ndarray:
    mean = frame[f"{metric}_mean"].to_numpy()
    lower = np.clip(mean - frame[f"{metric}_ci_low"].to_numpy(), 0, None)
    if log:
        lower = np.minimum(lower, mean * 0.999)
    upper = np.clip(frame[f"{metric}_ci_high"].to_numpy() - mean, 0, None)
    return np.vstack([lower, upper])


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
