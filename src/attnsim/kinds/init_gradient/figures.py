"""Figure of `init_gradient` (docs/science.md §3.6): ||do/ds||_F^2 and ||J||_F against the entropy
and the weight scale; means with 95% intervals."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import (
    STAR,
    legend_below,
    mean_line,
    n_colours,
    n_handles,
    star_handle,
    yerr,
)
from attnsim.figures.style import figure_function

# gradient_vs_entropy's columns: (metric, its value under uniform weights, y label, the quantity
# in the panel titles against entropy and against scale)
GRADIENT_METRICS = (
    (
        "grad_sq",
        "grad_sq_uniform",
        "‖∂o/∂s‖²_F = Σᵢ pᵢ² ‖vᵢ − o‖²",
        "gradient of the output w.r.t. the logits",
        "gradient",
    ),
    (
        "jacobian_fro",
        "jacobian_fro_uniform",
        "‖J‖_F = ‖diag(p) − p pᵀ‖_F",
        "softmax Jacobian",
        "Jacobian",
    ),
)
MEDIAN_NOTE = (
    "Bottom row: at large scale the mean is set by rare near-ties of the two largest logits and "
    "falls like 1/σ_eff;\nthe typical trial (median, dashed) falls exponentially, out of the "
    "panels (below 1e-300 at the largest scales)."
)
UNIFORM_KEY = "uniform weights (H = log n): (d/n)(1 − 1/n) and √((1 − 1/n)/n)"


@figure_function
def gradient_vs_entropy(summary: pd.DataFrame):
    """grad_sq and jacobian_fro (log y) against entropy (top) and against scale (bottom), a colour
    per n."""
    colours = n_colours(summary["n"])
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.6))
    data = summary.sort_values("scale")
    for col, (metric, uniform, label, quantity, short) in enumerate(GRADIENT_METRICS):
        top, bottom = axes[0, col], axes[1, col]
        for n, line in data.groupby("n"):
            _against_entropy(top, line, metric, uniform, colours[n])
            _against_scale(bottom, line, metric, uniform, colours[n])
        for ax in (top, bottom):
            ax.set_yscale("log")
            ax.set_ylabel(f"{label}\n(mean, 95% CI)")
        _scale_range(bottom, data, metric, uniform)
        top.set_xscale("log")
        top.set_xlabel("entropy of the weights  H  (nats, mean with 95% CI; log scale)")
        top.set_title(f"{quantity} vs entropy")
        _scale_axis(bottom)
        bottom.set_title(f"{short} vs weight scale")
    d = ", ".join(str(v) for v in sorted(summary["d"].unique()))
    handles = n_handles(colours)
    handles += [
        star_handle("0.3", UNIFORM_KEY),
        Line2D([], [], color="0.3", ls=":", label="uniform-weight value (scale → 0)"),
    ]
    if "grad_sq_median" in summary:
        handles.append(Line2D([], [], color="0.3", ls="--", label="median over trials"))
        fig.text(0.5, -0.035, MEDIAN_NOTE, ha="center", va="top", fontsize=8.5, color="0.25")
    legend_below(fig, handles, ncol=min(len(handles), 6), y=0.01)
    fig.suptitle(
        f"Attention at initialisation (dot-product logits, values vᵢ ~ N(0, I_d), d = {d}):\nthe "
        "logit gradient and the softmax Jacobian vanish as the entropy goes to 0",
    )
    return fig


def _against_entropy(ax, line: pd.DataFrame, metric: str, uniform: str, colour) -> None:
    """Top row, one n: the metric against the entropy, both with their 95% intervals, and a star
    at uniform weights (H = log n): the claim is that the gradient vanishes as H goes to 0."""
    bars = {"xerr": yerr(line, "entropy", log=True), "yerr": yerr(line, metric, log=True)}
    marks: dict[str, Any] = {"ms": 3.5, "lw": 1.2, "elinewidth": 0.8, "capsize": 1.5, "zorder": 3}
    ax.errorbar(
        line["entropy_mean"], line[f"{metric}_mean"], fmt="o-", color=colour, **bars, **marks
    )
    ax.plot([line["log_n"].iloc[0]], [line[uniform].iloc[0]], color=colour, ms=12, zorder=4, **STAR)


def _against_scale(ax, line: pd.DataFrame, metric: str, uniform: str, colour) -> None:
    """Bottom row, one n: the mean against the weight scale, the median dashed (the typical trial,
    which near-ties do not carry) and the uniform-weight value the small scales approach."""
    positive = line[line["scale"] > 0]
    mean_line(ax, positive["scale"], positive, metric, colour, lw=1.2)
    if f"{metric}_median" in positive:  # a median that underflowed to exactly 0 is not drawn
        median = positive[f"{metric}_median"].where(positive[f"{metric}_median"] > 0)
        ax.plot(positive["scale"], median, "--", color=colour, lw=1.0, zorder=2)
    ax.axhline(line[uniform].iloc[0], color=colour, ls=":", lw=1.0, zorder=1)


def _scale_range(ax, data: pd.DataFrame, metric: str, uniform: str) -> None:
    """The means set a bottom panel's range; medians far below leave it (the figure's note says
    so)."""
    means = data[f"{metric}_mean"][data[f"{metric}_mean"] > 0]
    if len(means):
        top = max(data[f"{metric}_ci_high"].max(), data[uniform].max()) * 3
        ax.set_ylim(means.min() / 30, top)


def _scale_axis(ax) -> None:
    """The weight scale on a log axis, with the logit std it gives (scale²) along the top."""
    ax.set_xscale("log")
    ax.set_xlabel("std of the entries of q and kᵢ  (scale)")
    sec = ax.secondary_xaxis(
        "top", functions=(lambda s: np.square(s), lambda s: np.sqrt(np.clip(s, 0, None)))
    )
    sec.set_xlabel("effective logit std σ_eff = scale²", fontsize=8.5)
    sec.tick_params(labelsize=7.5)
