"""Figure of `real_entropy` (docs/science.md §5.7): per layer, the entropy of trained and re-initialised
heads against log n and the small-scale prediction, the weight on [CLS]/[SEP] and the logit gradient."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import legend_below
from attnsim.figures.style import figure_function, palette
from attnsim.stats import mean_ci


def _label(std: float) -> str:
    return "trained" if std == 0 else f"init std {std:g}"


@figure_function
def real_entropy_layers(summary: pd.DataFrame):
    """Columns: n. Rows: mean entropy, weight on [CLS]/[SEP], grad_rel, per layer (mean over heads with
    95% CI; dots: heads), a colour per weights; theory: log n, the small-scale entropy at init, 2/n, 1/n."""
    ns = sorted(summary["n"].unique())
    stds = sorted(summary["init_std"].unique())
    colours = {s: ("k" if s == 0 else c) for s, c in zip(stds, [None] + palette("viridis", max(1, len(stds) - 1)))}
    rows = (("entropy_mean", "entropy H (nats)"), ("sink_weight_mean", "weight on [CLS] + [SEP]"), ("grad_rel_mean", "‖∂o/∂s‖² / value spread"))
    fig, axes = plt.subplots(len(rows), len(ns), figsize=(max(7.5, 5.2 * len(ns) + 0.8), 9.5), squeeze=False, sharex=True)
    rng = np.random.default_rng(0)  # jitter of the head dots only
    for col, n in enumerate(ns):
        data = summary[summary["n"] == n]
        layers = sorted(data["layer"].unique())
        for row, (metric, label) in enumerate(rows):
            ax = axes[row, col]
            for k, std in enumerate(stds):
                part = data[data["init_std"] == std]
                offset = (k - (len(stds) - 1) / 2) * 0.08
                stats = [mean_ci(part[part["layer"] == layer][metric].to_numpy(float)) for layer in layers]
                mean = np.array([st["mean"] for st in stats])
                low = np.array([st["ci_low"] if np.isfinite(st["ci_low"]) else st["mean"] for st in stats])
                high = np.array([st["ci_high"] if np.isfinite(st["ci_high"]) else st["mean"] for st in stats])
                x = np.array(layers, float) + offset
                ax.scatter(part["layer"] + offset + rng.uniform(-0.02, 0.02, len(part)), part[metric], s=5, color=colours[std], alpha=0.35, lw=0)
                below = np.maximum(mean - low, 0)
                if metric == "grad_rel_mean":
                    below = np.minimum(below, 0.999 * mean)  # log scale: an interval reaching 0 is drawn to just above it
                ax.errorbar(x, mean, yerr=[below, np.maximum(high - mean, 0)], fmt="o-", color=colours[std], ms=4, lw=1.3, capsize=2)
                if metric == "entropy_mean" and std > 0:
                    ax.axhline(float(part["entropy_rem"].iloc[0]), color=colours[std], ls=":", lw=1.2)
            if metric == "entropy_mean":
                ax.axhline(np.log(n), color="firebrick", lw=1.6)
                ax.set_ylim(-0.1, np.log(n) * 1.08)
                ax.set_title(f"n = {n} keys per row")
            elif metric == "sink_weight_mean":
                ax.axhline(2 / n, color="firebrick", ls="--", lw=1.2)
                ax.set_ylim(0, 1)
            else:
                ax.axhline(1 / n, color="firebrick", ls="--", lw=1.2)
                ax.set_yscale("log")
            if col == 0:
                ax.set_ylabel(label)
            if row == len(rows) - 1:
                ax.set_xlabel("layer")
                ax.set_xticks(layers)
    handles = [Line2D([], [], color=colours[s], marker="o", label=_label(s)) for s in stds]
    handles += [
        Line2D([], [], color="0.4", marker="o", ms=3, ls="none", alpha=0.5, label="one head (mean over its rows)"),
        Line2D([], [], color="firebrick", lw=1.6, label="log n: the upper bound (uniform weights)"),
        Line2D([], [], color="0.3", ls=":", label="theory at init: log n − σ_s²/2, 0 once frozen (σ_s = init_std²·384, §3.4, §5.3)"),
        Line2D([], [], color="firebrick", ls="--", label="uniform weights: 2/n on [CLS]+[SEP], 1/n gradient"),
    ]
    legend_below(fig, handles, ncol=3, y=0.0)
    fig.suptitle("Entropy of real attention rows per layer (all-MiniLM-L6-v2): trained vs re-initialised (mean over heads, 95% CI)")
    return fig
