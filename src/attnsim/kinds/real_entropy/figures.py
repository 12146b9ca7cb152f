"""Figure of `real_entropy` (docs/science.md §5.7): per layer, the entropy of trained and
re-initialised
heads against log n and the small-scale prediction, the weight on [CLS]/[SEP] and the logit
gradient."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import legend_below, panel_letter
from attnsim.figures.style import figure_function, palette
from attnsim.stats import mean_ci


def _label(std: float) -> str:
    return "trained" if std == 0 else f"init std {std:g}"


@figure_function
def real_entropy_layers(summary: pd.DataFrame):
    """Columns: n. Rows: mean entropy, weight on [CLS]/[SEP], grad_rel, per layer (mean over heads
    with
    95% CI; dots: heads), a colour per weights; theory: log n, the small-scale entropy at init,
    2/n, 1/n."""
    ns = sorted(summary["n"].unique())
    stds = sorted(summary["init_std"].unique())
    colours = {
        s: ("k" if s == 0 else c)
        for s, c in zip(stds, [None, *palette("viridis", max(1, len(stds) - 1))])
    }
    rows = (
        ("entropy_mean", "entropy H (nats)"),
        ("sink_weight_mean", "weight on [CLS] + [SEP]"),
        ("grad_rel_mean", "‖∂o/∂s‖² / value spread"),
    )
    fig, axes = plt.subplots(
        len(rows), len(ns), figsize=(max(7.5, 5.2 * len(ns) + 0.8), 8.5), squeeze=False, sharex=True
    )
    rng = np.random.default_rng(0)  # jitter of the head dots only
    for col, n in enumerate(ns):
        data = summary[summary["n"] == n]
        layers = sorted(data["layer"].unique())
        for row, (metric, label) in enumerate(rows):
            ax = axes[row, col]
            for k, std in enumerate(stds):
                part = data[data["init_std"] == std]
                offset = (k - (len(stds) - 1) / 2) * 0.08
                stats = [
                    mean_ci(part[part["layer"] == layer][metric].to_numpy(float))
                    for layer in layers
                ]
                mean = np.array([st["mean"] for st in stats])
                low = np.array(
                    [st["ci_low"] if np.isfinite(st["ci_low"]) else st["mean"] for st in stats]
                )
                high = np.array(
                    [st["ci_high"] if np.isfinite(st["ci_high"]) else st["mean"] for st in stats]
                )
                x = np.array(layers, float) + offset
                ax.scatter(
                    part["layer"] + offset + rng.uniform(-0.02, 0.02, len(part)),
                    part[metric],
                    s=5,
                    color=colours[std],
                    alpha=0.35,
                    lw=0,
                )
                below = np.maximum(mean - low, 0)
                if metric == "grad_rel_mean":
                    below = np.minimum(
                        below, 0.999 * mean
                    )  # log scale: an interval reaching 0 is drawn to just above it
                ax.errorbar(
                    x,
                    mean,
                    yerr=[below, np.maximum(high - mean, 0)],
                    fmt="o-",
                    color=colours[std],
                    ms=4,
                    lw=1.3,
                    capsize=2,
                )
                if metric == "entropy_mean" and std > 0:
                    ax.axhline(
                        float(part["entropy_rem"].iloc[0]), color=colours[std], ls=":", lw=1.2
                    )
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
            panel_letter(ax, "abcdefghijklmnopqrstuvwxyz"[row * len(ns) + col])
            if row == len(rows) - 1:
                ax.set_xlabel("layer")
                ax.set_xticks(layers)
    handles = [Line2D([], [], color=colours[s], marker="o", label=_label(s)) for s in stds]
    handles += [
        Line2D(
            [],
            [],
            color="0.4",
            marker="o",
            ms=3,
            ls="none",
            alpha=0.5,
            label="one head (mean over its rows)",
        ),
        Line2D([], [], color="firebrick", lw=1.6, label="log n: the upper bound (uniform weights)"),
        Line2D(
            [],
            [],
            color="0.3",
            ls=":",
            label="theory at init: log n − σ_s²/2, 0 once frozen (σ_s = init_std²·384, §3.4, §5.3)",
        ),
        Line2D(
            [],
            [],
            color="firebrick",
            ls="--",
            label="uniform weights: 2/n on [CLS]+[SEP], 1/n gradient",
        ),
    ]
    fig.suptitle(
        "Entropy of real attention rows per layer (all-MiniLM-L6-v2):\ntrained vs re-initialised "
        "(mean over heads, 95% CI)",
    )
    legend_below(
        fig, handles, ncol=2, y=0.0
    )  # below the axes' area: save() keeps it in the tight box
    return fig


@figure_function
def real_entropy_sinks(summary: pd.DataFrame):
    """Attention sinks of the trained model as the literature measures them: (a), (b) per layer and
    head the mean attention [CLS] and [SEP] receive (crosses: a sink at epsilon = 0.3, Gu et al.
    2024);
    (c) per layer the mean over heads of the attention received by [CLS], [SEP], "." and "," and all
    other tokens together, beside Clark et al. 2019's BERT ([SEP] above 1/2 at the relative depth of
    BERT's layers 6-10, shaded); (d) mean entropy of sink-dominated rows and of the others per
    layer,
    beside log n."""
    from attnsim.kinds.real_entropy import SINK_ROW
    from attnsim.kinds.real_entropy.claims import THRESHOLDS

    trained = summary[summary["init_std"] == 0]
    fig, axes = plt.subplots(2, 2, figsize=(12.5, 9.0))
    (ax_a, ax_b), (ax_c, ax_d) = axes
    if trained.empty or "cls_weight_mean" not in trained:
        for ax in axes.flat:
            ax.text(
                0.5, 0.5, "no trained rows with sink weights", ha="center", transform=ax.transAxes
            )
        return fig
    eps = THRESHOLDS.sink_epsilon
    per_head = trained.groupby(["layer", "head"])[["cls_weight_mean", "sep_weight_mean"]].mean()
    layers = sorted(trained["layer"].unique())
    heads = sorted(trained["head"].unique())
    for ax, column, title in (
        (ax_a, "cls_weight_mean", "[CLS]"),
        (ax_b, "sep_weight_mean", "[SEP]"),
    ):
        grid = per_head[column].unstack("head").reindex(index=layers, columns=heads).to_numpy(float)
        image = ax.imshow(grid, cmap="magma", vmin=0, vmax=1, aspect="auto")
        for i, j in zip(*np.nonzero(grid > eps)):
            ax.plot(j, i, marker="x", color="deepskyblue", ms=6, mew=1.4)
        fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02).set_label(
            f"mean attention {title} receives"
        )
        ax.set_xticks(range(len(heads)), heads, fontsize=7)
        ax.set_yticks(range(len(layers)), layers, fontsize=7)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        share = float((grid > eps).mean())
        ax.set_title(f"{title}: heads with a sink (> {eps}): {share:.0%}", fontsize=10)
    parts = {
        "[CLS]": trained["cls_weight_mean"],
        "[SEP]": trained["sep_weight_mean"],
        '"." and ","': trained["punct_weight_mean"],
        "all other tokens": 1
        - trained["cls_weight_mean"]
        - trained["sep_weight_mean"]
        - trained["punct_weight_mean"],
    }
    colours = palette("viridis", len(parts))
    for k, (label, values) in enumerate(parts.items()):
        frame = trained.assign(value=values)
        stats = [
            mean_ci(frame[frame["layer"] == layer].groupby("head")["value"].mean().to_numpy(float))
            for layer in layers
        ]
        mean = np.array([st["mean"] for st in stats])
        low = np.array([st["ci_low"] for st in stats])
        high = np.array([st["ci_high"] for st in stats])
        x = np.array(layers, float) + (k - 1.5) * 0.06
        ax_c.errorbar(
            x,
            mean,
            yerr=[mean - low, high - mean],
            fmt="o-",
            color=colours[k],
            capsize=2,
            label=label,
        )
    first, last = THRESHOLDS.clark_depth
    count = len(layers)
    ax_c.axvspan(
        first * count - 0.5,
        last * count - 0.5,
        color="0.9",
        zorder=0,
        label="BERT's layers 6–10 at the same relative depth",
    )
    ax_c.axhline(
        THRESHOLDS.sep_share,
        color="firebrick",
        ls="--",
        lw=1.2,
        label="Clark et al. 2019: [SEP] > 1/2 there in BERT",
    )
    ax_c.axhline(
        2 / float(trained["n"].min()),
        color="0.4",
        ls=":",
        lw=1.0,
        label="2/n: [CLS]+[SEP] under uniform weights",
    )
    ax_c.set_ylim(0, 1)
    ax_c.set_xticks(layers)
    ax_c.set_xlabel("layer")
    ax_c.set_ylabel("mean attention received (mean over heads, 95% CI)")
    ax_c.legend(fontsize=7.5, loc="upper right")
    ax_c.set_title("where the attention goes, per layer", fontsize=10)
    for k, (column, label) in enumerate(
        (
            ("entropy_sink_rows", f"sink-dominated rows ([CLS]+[SEP] > {SINK_ROW:g})"),
            ("entropy_other_rows", "other rows"),
        )
    ):
        if column not in trained:
            continue
        stats = [
            mean_ci(
                trained[(trained["layer"] == layer) & trained[column].notna()][column].to_numpy(
                    float
                )
            )
            for layer in layers
        ]
        mean = np.array([st["mean"] for st in stats])
        low = np.array([st["ci_low"] if np.isfinite(st["ci_low"]) else st["mean"] for st in stats])
        high = np.array(
            [st["ci_high"] if np.isfinite(st["ci_high"]) else st["mean"] for st in stats]
        )
        ax_d.errorbar(
            np.array(layers, float) + (k - 0.5) * 0.08,
            mean,
            yerr=[mean - low, high - mean],
            fmt="o-",
            color=colours[2 * k],
            capsize=2,
            label=label,
        )
    ax_d.axhline(
        np.log(float(trained["n"].min())), color="firebrick", lw=1.4, label="log n: uniform weights"
    )
    ax_d.set_xticks(layers)
    ax_d.set_xlabel("layer")
    ax_d.set_ylabel("mean entropy H (nats; mean over heads, 95% CI)")
    ax_d.legend(fontsize=7.5)
    ax_d.set_title("entropy of sink-dominated rows and of the others", fontsize=10)
    for ax, letter in zip((ax_a, ax_b, ax_c, ax_d), "abcd"):
        panel_letter(ax, letter)
    fig.suptitle("Attention sinks in the trained all-MiniLM-L6-v2")
    return fig
