"""Figure of `temperature_entropy` (docs/science.md §4): the gap log n - H against tau beside the
exact finite-n worst case, g(tau) and the random-direction approximation; means with 95%
intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import (
    STAR,
    fine_grid,
    key_handles,
    legend_below,
    mean_handle,
    mean_line,
    n_colours,
    n_handles,
    star_handle,
)
from attnsim.figures.style import figure_function
from attnsim.theory.entropy import G1, asymptotic_gap, exact_gap, random_direction_gap


@figure_function
def temperature_gap(summary: pd.DataFrame):
    """Gap log n - H vs tau (log-log), a colour per n, a panel per d, against the worst-case
    bounds."""
    ds = sorted(summary["d"].unique())
    colours = n_colours(summary["n"])
    fig, axes = plt.subplots(1, len(ds), figsize=(5.8 * len(ds), 4.8), squeeze=False, sharey=True)
    fine = fine_grid(summary["tau"])
    g = np.asarray(asymptotic_gap(fine), dtype=float)
    positive = summary["gap_mean"][summary["gap_mean"] > 0]
    y_low = 0.5 * float(positive.min()) if len(positive) else 1e-4
    y_high = 2.0 * float(summary["log_n"].max())
    for ax, d in zip(axes[0], ds):
        data = summary[summary["d"] == d]
        for n, line in data.sort_values("tau").groupby("n"):
            _gap_line(ax, line, n, colours[n], fine)
        _worst_cases(ax, fine, g, d)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(y_low, y_high)
        ax.set_xlabel("temperature τ   (logits sᵢ = cos θᵢ / τ)")
        ax.set_title(
            f"query and keys uniform on the unit sphere of $\\mathbb{{R}}^{{{d}}}$  (d = {d})"
        )
    axes[0, 0].set_ylabel("entropy gap  log n − H  (nats)")
    handles = n_handles(colours)
    handles.append(mean_handle("random directions: mean (band: 95% CI)"))
    largest = "largest gap over all trials"
    handles.append(Line2D([], [], color="0.3", marker="^", mfc="none", ls="none", label=largest))
    handles += key_handles(GAP_KEYS)
    handles.append(star_handle("firebrick", f"g(1) = {G1:.4f}: at τ = 1 H ≥ log n − 0.4745"))
    legend_below(fig, handles, ncol=3, y=0.02)
    fig.suptitle(
        "How far temperature τ lets attention entropy fall below log n: random directions vs the "
        "worst case over all configurations"
    )
    return fig


# temperature_gap's theory lines, as `key_handles` rows
_EXACT_KEY = "exact worst case at this n (any cosines; joins g(τ) below log n)"
GAP_KEYS = (
    ("0.3", None, "--", None, _EXACT_KEY),
    ("k", None, None, 2.2, "worst case as n → ∞:  g(τ)"),
    ("0.45", None, "-.", None, "random-direction approx. 1/(2dτ²) (valid while small)"),
)


def _gap_line(ax, line: pd.DataFrame, n: int, colour, fine: np.ndarray) -> None:
    """One n: the mean gap over random directions with its band, the largest gap of any trial
    (triangles) and, dashed, the exact worst case at this n, which no trial can pass."""
    mean_line(ax, line["tau"], line, "gap", colour)
    ax.plot(line["tau"], line["gap_max"], "^", color=colour, mfc="none", ms=5, mew=1.0, zorder=3)
    # on top of g(tau): they coincide below log n
    ax.plot(fine, exact_gap(n, fine), "--", color=colour, lw=1.2, zorder=2.5)


def _worst_cases(ax, fine: np.ndarray, g: np.ndarray, d: int) -> None:
    """A panel's n-free references: the worst case as n → ∞, g(τ) (black), the random-direction
    approximation for this d, and the star at g(1), the essay's bound at τ = 1."""
    ax.plot(fine, g, color="k", lw=2.2, zorder=2)
    ax.plot(fine, random_direction_gap(d, fine), color="0.45", ls="-.", lw=1.2, zorder=2)
    ax.plot([1.0], [G1], color="firebrick", ms=13, zorder=5, **STAR)
    ax.annotate(
        f"g(1) = {G1:.4f}",
        xy=(1.0, G1),
        xytext=(1.6, G1 * 2.6),
        fontsize=8.5,
        color="firebrick",
        arrowprops=dict(arrowstyle="->", color="firebrick", lw=0.8),
    )
