"""Figure of `contrastive_training` (docs/science.md §6.4-§6.6): what InfoNCE training reaches at each
temperature: probe accuracy, alignment and uniformity, the batch entropy against its floor
log n - g_n(tau), and the loss against its floor; means with 95% intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import fine_grid, legend_below, yerr
from attnsim.figures.style import PALETTE, figure_function, palette
from attnsim.kinds.contrastive_training import SETTING
from attnsim.kinds.contrastive_training.kernel import loss_floor
from attnsim.theory.entropy import exact_gap


def _label(key) -> str:
    n, classes, k, D, d, noise, optimiser, lr, steps = key
    return f"n={n}, C={classes}, k={k}, D={D}, d_out={d}, view noise {noise:g}, {optimiser} lr {lr:g}, {steps} steps"


def _band(ax, line, metric, colour, marker="o", ls="-", label=None):
    ax.errorbar(line["tau"], line[f"{metric}_mean"], yerr=yerr(line, metric), fmt=marker + ls, color=colour, ms=4, lw=1.5, capsize=2.5, label=label)


@figure_function
def temperature_sweep(summary: pd.DataFrame):
    """(a) probe accuracy, (b) alignment and uniformity, (c) batch entropy vs its floor, (d) loss vs its floor; all against tau."""
    groups = list(summary.sort_values("tau").groupby(SETTING))
    colours = dict(zip([k for k, _ in groups], palette(PALETTE, max(len(groups), 2))))
    fig, axes = plt.subplots(2, 2, figsize=(12.5, 9.0))
    (probe_ax, geo_ax), (ent_ax, loss_ax) = axes
    unif_ax = geo_ax.twinx()
    fine = fine_grid(summary["tau"])
    for key, line in groups:
        c = colours[key]
        n, classes = key[0], key[1]
        _band(probe_ax, line, "probe_accuracy", c)
        _band(probe_ax, line, "init_probe_accuracy", c, marker="s", ls=":")
        probe_ax.axhline(1 / classes, color=c, lw=0.9, ls="-.")
        best = line.loc[line["probe_accuracy_mean"].idxmax()]
        probe_ax.plot([best["tau"]], [best["probe_accuracy_mean"]], marker="*", ms=14, color=c, mec="k", mew=0.5, ls="none", zorder=5)
        _band(geo_ax, line, "alignment", c)
        _band(unif_ax, line, "uniformity", c, marker="D", ls="--")
        _band(ent_ax, line, "final_entropy", c)
        _band(ent_ax, line, "entropy_min", c, marker="v", ls="--")
        ent_ax.plot(line["tau"], line["entropy_lowest"], "^", color=c, mfc="none", ms=6, ls="none")
        ent_ax.plot(fine, np.log(n) - np.asarray(exact_gap(n, fine), dtype=float), color="k", lw=2.2)
        ent_ax.plot(line["tau"], line["ideal_entropy"], "x:", color="0.45", ms=6, lw=1.0)
        ent_ax.axhline(np.log(n), color="0.5", lw=0.9, ls=":")
        _band(loss_ax, line, "final_loss", c)
        loss_ax.plot(fine, [loss_floor(n, classes, t) for t in fine], color="k", lw=2.2)
        loss_ax.axhline(np.log(n), color="0.5", lw=0.9, ls=":")
    probe_ax.set_ylabel("held-out probe accuracy (nearest class mean)")
    probe_ax.set_title("(a) representation quality")
    probe_ax.set_ylim(0, 1.02)
    geo_ax.set_ylabel("alignment E‖z − z′‖² (circles; lower = better)")
    unif_ax.set_ylabel("uniformity log E exp(−2‖z_a − z_b‖²)\n(diamonds; lower = more uniform)")
    geo_ax.set_title("(b) alignment and uniformity (Wang & Isola)")
    ent_ax.set_ylabel("batch softmax entropy (nats, mean over anchors)")
    ent_ax.set_title("(c) entropy during and after training vs its floor log n − g_n(τ)")
    loss_ax.set_ylabel("held-out InfoNCE loss (nats)")
    loss_ax.set_title("(d) loss vs its floor with C classes")
    for ax in axes.flat:
        ax.set_xscale("log")
        ax.set_xlabel("temperature τ (logits = cosines / τ)")
        ax.axvline(1.0, color="0.75", lw=0.8, zorder=0)
    handles = [Line2D([], [], color=colours[k], marker="o", label=_label(k)) for k, _ in groups]
    handles += [
        Line2D([], [], color="0.3", marker="o", label="mean over runs ± 95% CI, after training"),
        Line2D([], [], color="0.3", marker="s", ls=":", label="(a) probe on the random initial encoder; dash-dot: chance 1/C"),
        Line2D([], [], color="0.3", marker="*", ms=11, mec="k", mew=0.5, ls="none", label="(a) best τ of the sweep"),
        Line2D([], [], color="0.3", marker="v", ls="--", label="(c) lowest training-batch entropy of a run (mean); triangles: lowest of any run"),
        Line2D([], [], color="k", lw=2.2, label="(c) entropy floor log n − g_n(τ) (exact, any encoder); (d) loss floor"),
        Line2D([], [], color="0.45", marker="x", ls=":", label="(c) entropy of the encoder attaining the loss floor"),
        Line2D([], [], color="0.5", ls=":", label="log n (uniform weights; the loss of a blind encoder)"),
    ]
    legend_below(fig, handles, ncol=2, y=0.02)
    fig.suptitle("Contrastive (InfoNCE) training of a linear encoder across temperatures")
    return fig
