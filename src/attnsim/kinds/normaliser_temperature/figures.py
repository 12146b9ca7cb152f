"""Figure of `normaliser_temperature` (docs/science.md §12.4): the entropy gap log n - H of cosine
attention against tau, a panel per normaliser, beside that normaliser's floor (the largest gap any
cosines can give) and its mean-field gap for random directions; means with 95% intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from attnsim.figures.common import fine_grid, legend_below, mean_errorbar
from attnsim.figures.style import figure_function
from attnsim.subjects import normalisers
from attnsim.theory import normalisers as th
from attnsim.theory.entropy import G1


@figure_function
def floor_vs_tau_by_normaliser(summary: pd.DataFrame):
    """Gap vs tau (log-log) at the sweep's largest n, a panel per normaliser, a colour per d:
    measured means with 95% intervals and the mean-field line (dashed); triangles the largest
    gap of any trial; black the normaliser's floor, grey dotted softmax's (the essay's)."""
    n = int(summary["n"].max())
    data = summary[summary["n"] == n]
    names = [name for name in normalisers.names() if name in set(data["normaliser"])]
    ds = sorted(data["d"].unique())
    cols = min(5, max(1, len(names)))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(
        max(1, rows), cols, figsize=(3.2 * cols, 3.0 * max(1, rows)), squeeze=False, sharey=True
    )
    fine = fine_grid(data["tau"], points=60)
    taus = sorted(data["tau"].unique())
    softmax_floor = [th.cosine_floor(normalisers.SOFTMAX.name, n, float(t)) for t in fine]
    for ax, name in zip(axes.flat, names):
        at = data[data["normaliser"] == name]
        for j, d in enumerate(ds):
            line = at[at["d"] == d].sort_values("tau")
            colour = f"C{j}"
            mean_errorbar(
                ax,
                line["tau"],
                line,
                "gap",
                log=True,
                fmt="o",
                ms=3.5,
                color=colour,
                capsize=2,
            )
            ax.plot(line["tau"], line["gap_max"], "^", color=colour, mfc="none", ms=5)
            mean_field = [th.cosine_gap_mean_field(name, n, int(d), float(t))[0] for t in fine]
            ax.plot(fine, mean_field, "--", color=colour, lw=1.1)
        ax.plot(fine, [th.cosine_floor(name, n, float(t)) for t in fine], color="k", lw=1.8)
        ax.plot(fine, softmax_floor, ":", color="0.5", lw=1.2)
        ax.plot([1.0], [G1], "*", color="firebrick", ms=9, mec="k", mew=0.4)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(taus, [f"{t:g}" for t in taus])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(name)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("τ   (logits cos θᵢ / τ)")
    fig.supylabel(f"entropy gap  log n − H  (nats, n = {n})")
    handles = [
        Line2D([], [], color=f"C{j}", marker="o", label=f"d = {d}") for j, d in enumerate(ds)
    ]
    handles += [
        Line2D([], [], color="0.3", ls="--", label="mean field, random directions (§12.4)"),
        Line2D([], [], color="0.3", marker="^", mfc="none", ls="", label="largest gap of a trial"),
        Line2D([], [], color="k", lw=1.8, label="the normaliser's floor (log n: none)"),
        Line2D([], [], color="0.5", ls=":", label="softmax's floor"),
        Line2D([], [], color="firebrick", marker="*", ls="", label=f"g(1) = {G1:.4f}"),
    ]
    legend_below(fig, handles)
    return fig
