"""Figure of `init_gradient` (docs/science.md §3.6): ||do/ds||_F^2 and ||J||_F against the entropy
and the weight scale; means with 95% intervals."""

from __future__ import annotations

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


@figure_function
def gradient_vs_entropy(summary: pd.DataFrame):
    """grad_sq and jacobian_fro (log y) against entropy (top) and against scale (bottom), a colour
    per n."""
    colours = n_colours(summary["n"])
    metrics = (
        ("grad_sq", "grad_sq_uniform", "‖∂o/∂s‖²_F = Σᵢ pᵢ² ‖vᵢ − o‖²"),
        ("jacobian_fro", "jacobian_fro_uniform", "‖J‖_F = ‖diag(p) − p pᵀ‖_F"),
    )
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.6))
    data = summary.sort_values("scale")
    for col, (metric, uniform, label) in enumerate(metrics):
        top, bottom = axes[0, col], axes[1, col]
        for n, line in data.groupby("n"):
            colour = colours[n]
            top.errorbar(
                line["entropy_mean"],
                line[f"{metric}_mean"],
                xerr=yerr(line, "entropy", log=True),
                yerr=yerr(line, metric, log=True),
                fmt="o-",
                color=colour,
                ms=3.5,
                lw=1.2,
                elinewidth=0.8,
                capsize=1.5,
                zorder=3,
            )
            top.plot(
                [line["log_n"].iloc[0]],
                [line[uniform].iloc[0]],
                color=colour,
                ms=12,
                zorder=4,
                **STAR,
            )
            positive = line[line["scale"] > 0]
            mean_line(bottom, positive["scale"], positive, metric, colour, lw=1.2)
            if (
                f"{metric}_median" in positive
            ):  # a median that underflowed to exactly 0 is not drawn
                median = positive[f"{metric}_median"].where(positive[f"{metric}_median"] > 0)
                bottom.plot(positive["scale"], median, "--", color=colour, lw=1.0, zorder=2)
            bottom.axhline(line[uniform].iloc[0], color=colour, ls=":", lw=1.0, zorder=1)
        for ax in (top, bottom):
            ax.set_yscale("log")
            ax.set_ylabel(f"{label}\n(mean, 95% CI)")
        means = data[f"{metric}_mean"][data[f"{metric}_mean"] > 0]
        if len(means):  # the means set the range; medians far below leave the panel (see the note)
            bottom.set_ylim(
                means.min() / 30, max(data[f"{metric}_ci_high"].max(), data[uniform].max()) * 3
            )
        top.set_xscale("log")
        top.set_xlabel("entropy of the weights  H  (nats, mean with 95% CI; log scale)")
        top.set_title(
            f"{'gradient of the output w.r.t. the logits' if metric == 'grad_sq' else 'softmax Jacobian'} "  # noqa: E501
            "vs entropy"
        )
        bottom.set_xscale("log")
        bottom.set_xlabel("std of the entries of q and kᵢ  (scale)")
        bottom.set_title(f"{'gradient' if metric == 'grad_sq' else 'Jacobian'} vs weight scale")
        sec = bottom.secondary_xaxis(
            "top", functions=(lambda s: np.square(s), lambda s: np.sqrt(np.clip(s, 0, None)))
        )
        sec.set_xlabel("effective logit std σ_eff = scale²", fontsize=8.5)
        sec.tick_params(labelsize=7.5)
    d = ", ".join(str(v) for v in sorted(summary["d"].unique()))
    handles = n_handles(colours)
    handles += [
        star_handle("0.3", "uniform weights (H = log n): (d/n)(1 − 1/n) and √((1 − 1/n)/n)"),
        Line2D([], [], color="0.3", ls=":", label="uniform-weight value (scale → 0)"),
    ]
    if "grad_sq_median" in summary:
        handles.append(Line2D([], [], color="0.3", ls="--", label="median over trials"))
        fig.text(
            0.5,
            -0.035,
            "Bottom row: at large scale the mean is set by rare near-ties of the two largest "
            "logits and falls like 1/σ_eff;\n"
            "the typical trial (median, dashed) falls exponentially, out of the panels (below "
            "1e-300 at the largest scales).",
            ha="center",
            va="top",
            fontsize=8.5,
            color="0.25",
        )
    legend_below(fig, handles, ncol=min(len(handles), 6), y=0.01)
    fig.suptitle(
        f"Attention at initialisation (dot-product logits, values vᵢ ~ N(0, I_d), d = {d}):\nthe "
        "logit gradient and the softmax Jacobian vanish as the entropy goes to 0",
    )
    return fig
