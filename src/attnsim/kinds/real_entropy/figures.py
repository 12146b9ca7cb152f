"""Figure of `real_entropy` (docs/science.md §5.7): per layer, the entropy of trained and
re-initialised heads against log n and the small-scale prediction, the weight on [CLS]/[SEP] and
the logit gradient."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import finite_or, key_handles, legend_below, panel_letter
from attnsim.figures.style import figure_function, palette
from attnsim.kinds.real_entropy import SINK_ROW
from attnsim.kinds.real_entropy.claims import THRESHOLDS
from attnsim.stats import mean_ci

# real_entropy_layers' rows: (metric, y label)
LAYER_ROWS = (
    ("entropy_mean", "entropy H (nats)"),
    ("sink_weight_mean", "weight on [CLS] + [SEP]"),
    ("grad_rel_mean", "‖∂o/∂s‖² / value spread"),
)


def _label(std: float) -> str:
    return "trained" if std == 0 else f"init std {std:g}"


def _means_by_layer(samples) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and 95% interval of each layer's sample (`stats.mean_ci`): mean, low, high."""
    stats = [mean_ci(sample) for sample in samples]
    mean = np.array([st["mean"] for st in stats])
    return mean, np.array([st["ci_low"] for st in stats]), np.array([st["ci_high"] for st in stats])


@figure_function
def real_entropy_layers(summary: pd.DataFrame):
    """Columns: n. Rows: mean entropy, weight on [CLS]/[SEP], grad_rel, per layer (mean over heads
    with 95% CI; dots: heads), a colour per weights; theory: log n, the small-scale entropy at
    init, 2/n, 1/n."""
    ns = sorted(summary["n"].unique())
    stds = sorted(summary["init_std"].unique())
    colours = {
        s: ("k" if s == 0 else c)
        for s, c in zip(stds, [None, *palette("viridis", max(1, len(stds) - 1))])
    }
    width = max(7.5, 5.2 * len(ns) + 0.8)
    fig, axes = plt.subplots(
        len(LAYER_ROWS), len(ns), figsize=(width, 8.5), squeeze=False, sharex=True
    )
    rng = np.random.default_rng(0)  # jitter of the head dots only
    for col, n in enumerate(ns):
        data = summary[summary["n"] == n]
        layers = sorted(data["layer"].unique())
        for row, (metric, label) in enumerate(LAYER_ROWS):
            ax = axes[row, col]
            for k, std in enumerate(stds):
                offset = (k - (len(stds) - 1) / 2) * 0.08
                part = data[data["init_std"] == std]
                _heads_and_mean(ax, part, metric, layers, offset, colours[std], rng)
                if metric == "entropy_mean" and std > 0:
                    rem = float(part["entropy_rem"].iloc[0])
                    ax.axhline(rem, color=colours[std], ls=":", lw=1.2)
            _uniform_reference(ax, metric, n)
            if col == 0:
                ax.set_ylabel(label)
            panel_letter(ax, "abcdefghijklmnopqrstuvwxyz"[row * len(ns) + col])
            if row == len(LAYER_ROWS) - 1:
                ax.set_xlabel("layer")
                ax.set_xticks(layers)
    fig.suptitle(
        "Entropy of real attention rows per layer (all-MiniLM-L6-v2):\ntrained vs re-initialised "
        "(mean over heads, 95% CI)",
    )
    # below the axes' area: save() keeps it in the tight box
    legend_below(fig, _layers_handles(stds, colours), ncol=2, y=0.0)
    return fig


def _heads_and_mean(ax, part: pd.DataFrame, metric: str, layers, offset: float, colour, rng):
    """One weights' metric per layer: every head as a faint jittered dot (the spread the mean
    hides) and the mean over heads with its 95% interval, shifted by `offset` so that the
    weights' bars do not hide each other."""
    samples = [part[part["layer"] == layer][metric].to_numpy(float) for layer in layers]
    mean, low, high = _means_by_layer(samples)
    low, high = finite_or(low, mean), finite_or(high, mean)
    jitter = rng.uniform(-0.02, 0.02, len(part))
    ax.scatter(part["layer"] + offset + jitter, part[metric], s=5, color=colour, alpha=0.35, lw=0)
    below = np.maximum(mean - low, 0)
    if metric == "grad_rel_mean":  # log scale: an interval reaching 0 is drawn to just above it
        below = np.minimum(below, 0.999 * mean)
    yerr = [below, np.maximum(high - mean, 0)]
    x = np.array(layers, float) + offset
    ax.errorbar(x, mean, yerr=yerr, fmt="o-", color=colour, ms=4, lw=1.3, capsize=2)


def _uniform_reference(ax, metric: str, n: int) -> None:
    """What uniform weights give, the reference each row is read against: log n (the entropy's
    upper bound), 2/n on [CLS] + [SEP], 1/n for the gradient."""
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


_INIT_THEORY_KEY = "theory at init: log n − σ_s²/2, 0 once frozen (σ_s = init_std²·384, §3.4, §5.3)"
# real_entropy_layers' legend entries after the head dot, as `key_handles` rows
_LAYERS_KEYS = (
    ("firebrick", None, None, 1.6, "log n: the upper bound (uniform weights)"),
    ("0.3", None, ":", None, _INIT_THEORY_KEY),
    ("firebrick", None, "--", None, "uniform weights: 2/n on [CLS]+[SEP], 1/n gradient"),
)


def _layers_handles(stds, colours) -> list[Line2D]:
    """A colour per weights (trained, each re-initialisation), then what the marks mean."""
    handles = [Line2D([], [], color=colours[s], marker="o", label=_label(s)) for s in stds]
    head = "one head (mean over its rows)"
    handles.append(Line2D([], [], color="0.4", marker="o", ms=3, ls="none", alpha=0.5, label=head))
    return handles + key_handles(_LAYERS_KEYS)


@figure_function
def real_entropy_sinks(summary: pd.DataFrame):
    """Attention sinks of the trained model as the literature measures them: (a), (b) per layer
    and head the mean attention [CLS] and [SEP] receive (crosses: a sink at epsilon = 0.3, Gu et
    al. 2024); (c) per layer the mean over heads of the attention received by [CLS], [SEP], "."
    and "," and all other tokens together, beside Clark et al. 2019's BERT ([SEP] above 1/2 at the
    relative depth of BERT's layers 6-10, shaded); (d) mean entropy of sink-dominated rows and of
    the others per layer, beside log n."""
    trained = summary[summary["init_std"] == 0]
    fig, axes = plt.subplots(2, 2, figsize=(12.5, 9.0))
    (ax_a, ax_b), (ax_c, ax_d) = axes
    if trained.empty or "cls_weight_mean" not in trained:
        for ax in axes.flat:
            text = "no trained rows with sink weights"
            ax.text(0.5, 0.5, text, ha="center", transform=ax.transAxes)
        return fig
    per_head = trained.groupby(["layer", "head"])[["cls_weight_mean", "sep_weight_mean"]].mean()
    layers = sorted(trained["layer"].unique())
    _sink_map(fig, ax_a, per_head["cls_weight_mean"], layers, "[CLS]")
    _sink_map(fig, ax_b, per_head["sep_weight_mean"], layers, "[SEP]")
    parts = _received_parts(trained)
    colours = palette("viridis", len(parts))
    _attention_received(ax_c, trained, parts, layers, colours)
    _sink_row_entropy(ax_d, trained, layers, colours)
    for ax, letter in zip((ax_a, ax_b, ax_c, ax_d), "abcd"):
        panel_letter(ax, letter)
    fig.suptitle("Attention sinks in the trained all-MiniLM-L6-v2")
    return fig


def _sink_map(fig, ax, per_head: pd.Series, layers, token: str) -> None:
    """Panels (a), (b): the mean attention a token receives, per layer and head, with a cross on
    each head that is a sink by Gu et al. 2024's criterion (above epsilon) and their share in the
    title: a map shows which heads, not just how many."""
    eps = THRESHOLDS.sink_epsilon
    heads = sorted(per_head.index.get_level_values("head").unique())
    grid = per_head.unstack("head").reindex(index=layers, columns=heads).to_numpy(float)
    image = ax.imshow(grid, cmap="magma", vmin=0, vmax=1, aspect="auto")
    for i, j in zip(*np.nonzero(grid > eps)):
        ax.plot(j, i, marker="x", color="deepskyblue", ms=6, mew=1.4)
    colorbar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    colorbar.set_label(f"mean attention {token} receives")
    ax.set_xticks(range(len(heads)), heads, fontsize=7)
    ax.set_yticks(range(len(layers)), layers, fontsize=7)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    share = float((grid > eps).mean())
    ax.set_title(f"{token}: heads with a sink (> {eps}): {share:.0%}", fontsize=10)


def _received_parts(trained: pd.DataFrame) -> dict[str, pd.Series]:
    """Where each row's attention goes: [CLS], [SEP], the punctuation and the rest (the four sum
    to one, so the rest is what the others leave)."""
    cls, sep = trained["cls_weight_mean"], trained["sep_weight_mean"]
    punct = trained["punct_weight_mean"]
    return {
        "[CLS]": cls,
        "[SEP]": sep,
        '"." and ","': punct,
        "all other tokens": 1 - cls - sep - punct,
    }


def _attention_received(ax, trained: pd.DataFrame, parts: dict, layers, colours) -> None:
    """Panel (c): per layer, the mean over heads of the attention each part receives, beside
    Clark et al. 2019's BERT finding ([SEP] above 1/2 in its layers 6-10, at the same relative
    depth) and 2/n, what [CLS] + [SEP] get under uniform weights."""
    for k, (label, values) in enumerate(parts.items()):
        frame = trained.assign(value=values)
        samples = [
            frame[frame["layer"] == layer].groupby("head")["value"].mean().to_numpy(float)
            for layer in layers
        ]
        mean, low, high = _means_by_layer(samples)
        x = np.array(layers, float) + (k - 1.5) * 0.06
        yerr = [mean - low, high - mean]
        ax.errorbar(x, mean, yerr=yerr, fmt="o-", color=colours[k], capsize=2, label=label)
    first, last = THRESHOLDS.clark_depth
    count = len(layers)
    bert = "BERT's layers 6–10 at the same relative depth"
    ax.axvspan(first * count - 0.5, last * count - 0.5, color="0.9", zorder=0, label=bert)
    clark = "Clark et al. 2019: [SEP] > 1/2 there in BERT"
    ax.axhline(THRESHOLDS.sep_share, color="firebrick", ls="--", lw=1.2, label=clark)
    uniform = "2/n: [CLS]+[SEP] under uniform weights"
    ax.axhline(2 / float(trained["n"].min()), color="0.4", ls=":", lw=1.0, label=uniform)
    ax.set_ylim(0, 1)
    ax.set_xticks(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("mean attention received (mean over heads, 95% CI)")
    ax.legend(fontsize=7.5, loc="upper right")
    ax.set_title("where the attention goes, per layer", fontsize=10)


def _sink_row_entropy(ax, trained: pd.DataFrame, layers, colours) -> None:
    """Panel (d): per layer, the mean entropy of the rows a sink dominates and of the others,
    beside log n: a sink row is one that has collapsed onto [CLS] + [SEP]."""
    rows = (
        ("entropy_sink_rows", f"sink-dominated rows ([CLS]+[SEP] > {SINK_ROW:g})"),
        ("entropy_other_rows", "other rows"),
    )
    for k, (column, label) in enumerate(rows):
        if column not in trained:
            continue
        known = trained[trained[column].notna()]
        samples = [known[known["layer"] == layer][column].to_numpy(float) for layer in layers]
        mean, low, high = _means_by_layer(samples)
        low, high = finite_or(low, mean), finite_or(high, mean)
        x = np.array(layers, float) + (k - 0.5) * 0.08
        yerr = [mean - low, high - mean]
        ax.errorbar(x, mean, yerr=yerr, fmt="o-", color=colours[2 * k], capsize=2, label=label)
    log_n = np.log(float(trained["n"].min()))
    ax.axhline(log_n, color="firebrick", lw=1.4, label="log n: uniform weights")
    ax.set_xticks(layers)
    ax.set_xlabel("layer")
    ax.set_ylabel("mean entropy H (nats; mean over heads, 95% CI)")
    ax.legend(fontsize=7.5)
    ax.set_title("entropy of sink-dominated rows and of the others", fontsize=10)
