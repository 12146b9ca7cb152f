"""Figures of `recall_training` (docs/science.md §6.1-§6.3): trainability against the initial scale,
beside the initial entropy and the initial logit gradient; learning curves per scale."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from attnsim.figures.common import legend_below, yerr
from attnsim.figures.style import PALETTE, figure_function, palette
from attnsim.kernels.training import CHECKPOINTS, checkpoint_steps

RUN = ["optimiser", "lr", "n", "d", "batch", "steps"]  # one curve per run setting; scale on the x-axis


def _label(key) -> str:
    optimiser, lr, n, d, batch, steps = key
    return f"{optimiser} lr {lr:g} (n={n}, d={d}, {steps} steps)"


def _colours(keys) -> dict:
    return dict(zip(keys, palette(PALETTE, max(len(keys), 2))))


@figure_function
def trainability(summary: pd.DataFrame):
    """(a) final loss / chance vs scale (median, quartiles, mean over finite runs) with the initial entropy
    on a second axis; (b) share of runs reaching the threshold (Wilson 95%) and divergence rate;
    (c) the initial logit gradient vs scale (this kind's init_gradient relation)."""
    data = summary.sort_values("scale")
    groups = list(data.groupby(RUN))
    colours = _colours([k for k, _ in groups])
    fig, axes = plt.subplots(1, 3, figsize=(16.5, 5.0))
    loss_ax, share_ax, grad_ax = axes
    entropy_ax = loss_ax.twinx()
    for key, line in groups:
        c = colours[key]
        x = line["scale"]
        loss_ax.plot(x, line["final_loss_median"], "o-", color=c, ms=4, lw=1.6, zorder=3)
        loss_ax.fill_between(x, line["final_loss_q25"], np.minimum(line["final_loss_q75"], 1e3), color=c, alpha=0.22, lw=0)
        loss_ax.errorbar(x, line["final_loss_mean"], yerr=yerr(line, "final_loss", log=True), fmt="_", color=c, ms=9, elinewidth=0.9, capsize=2, zorder=4)
        share_ax.errorbar(
            x,
            line["reached_share"],
            yerr=np.clip(np.vstack([line["reached_share"] - line["reached_ci_low"], line["reached_ci_high"] - line["reached_share"]]), 0, None),
            fmt="o-",
            color=c,
            ms=4,
            lw=1.6,
            capsize=2,
        )
        if line["diverged_mean"].max() > 0:
            share_ax.plot(x, line["diverged_mean"], "x:", color=c, ms=6, lw=1.0)
        grad_ax.errorbar(x, line["init_grad_logits_mean"], yerr=yerr(line, "init_grad_logits", log=True), fmt="o-", color=c, ms=4, lw=1.4, capsize=2)
        grad_ax.plot(x, line["init_grad_logits_median"].where(line["init_grad_logits_median"] > 0), "--", color=c, lw=1.2)
    first = data.drop_duplicates("scale")
    entropy_ax.errorbar(
        first["scale"], first["init_entropy_mean"], yerr=yerr(first, "init_entropy"), fmt="s--", color="0.35", ms=3.5, lw=1.1, capsize=2, zorder=2
    )
    entropy_ax.axhline(first["log_n"].iloc[0], color="0.35", ls=":", lw=0.9)
    entropy_ax.set_ylim(0, first["log_n"].max() * 1.05)
    entropy_ax.set_ylabel("initial entropy H₀ (nats; grey squares)", color="0.3")
    loss_ax.axhline(1.0, color="k", lw=0.9, ls="-", alpha=0.6)
    loss_ax.axhline(first["threshold"].iloc[0], color="firebrick", lw=0.9, ls="--")
    loss_ax.text(data["scale"].min(), 1.0, " chance", va="top", fontsize=8)
    loss_ax.text(data["scale"].min(), first["threshold"].iloc[0], " threshold", va="bottom", fontsize=8, color="firebrick")
    loss_ax.set_yscale("log")
    loss_ax.set_ylabel("final held-out loss / chance loss (1 − 1/n)")
    loss_ax.set_title("(a) loss after training vs initial scale")
    share_ax.set_ylim(-0.03, 1.03)
    share_ax.set_ylabel("share of runs reaching loss/chance ≤ threshold\n(95% Wilson interval)")
    share_ax.set_title("(b) how often training succeeds")
    grad_ax.set_yscale("log")
    grad_ax.set_ylabel("initial ‖∂ℓ/∂s‖ per example (RMS over the monitor set)")
    grad_ax.set_title("(c) the initial logit gradient (init_gradient relation)")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("initial std of W_q, W_k entries (scale)")
        sec = ax.secondary_xaxis("top", functions=(np.square, lambda s: np.sqrt(np.clip(s, 0, None))))
        sec.tick_params(labelsize=7.5)
        sec.set_xlabel("initial logit std ≈ scale²", fontsize=8)
    handles = [Line2D([], [], color=colours[k], marker="o", ms=4, label=_label(k)) for k, _ in groups]
    handles += [
        Line2D([], [], color="0.3", marker="o", label="(a) median over runs; band: quartiles; bars: mean ± 95% CI over non-diverged runs"),
        Line2D([], [], color="0.35", marker="s", ls="--", label="(a) initial entropy H₀ (right axis); dotted: log n"),
        Line2D([], [], color="0.3", marker="x", ls=":", label="(b) share of runs that diverged (if any)"),
        Line2D([], [], color="0.3", marker="o", label="(c) mean ± 95% CI; dashed: median (the typical run)"),
    ]
    legend_below(fig, handles, ncol=2, y=0.02)
    fig.suptitle(
        "Training one attention head on associative recall from a given initial scale (top axis: logit std ≈ scale²):\n"
        "a start with one-hot weights (H₀ → 0, vanishing logit gradient) does not learn",
    )
    return fig


@figure_function
def learning_curves(summary: pd.DataFrame):
    """Monitor loss / chance at the log-spaced checkpoints: median and quartile band per scale, a panel per run setting."""
    groups = list(summary.groupby(RUN))
    scales = sorted(summary["scale"].unique())
    colours = dict(zip(scales, palette("viridis", len(scales))))
    fig, axes = plt.subplots(1, len(groups), figsize=(6.2 * len(groups), 4.8), squeeze=False, sharey=True)
    for ax, (key, rows) in zip(axes[0], groups):
        steps = checkpoint_steps(int(key[-1]))
        for _, row in rows.sort_values("scale").iterrows():
            c = colours[row["scale"]]
            med = np.array([row[f"loss_ckpt_{j}_median"] for j in range(CHECKPOINTS)])
            lo = np.array([row[f"loss_ckpt_{j}_q25"] for j in range(CHECKPOINTS)])
            hi = np.array([row[f"loss_ckpt_{j}_q75"] for j in range(CHECKPOINTS)])
            ax.plot(steps, med, "o-", color=c, ms=3.5, lw=1.6, label=f"scale {row['scale']:g} (H₀ = {row['init_entropy_mean']:.2g})")
            ax.fill_between(steps, lo, np.minimum(hi, 1e3), color=c, alpha=0.2, lw=0)
        ax.axhline(1.0, color="k", lw=0.9, alpha=0.6)
        ax.axhline(rows["threshold"].iloc[0], color="firebrick", lw=0.9, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_title(_label(key), fontsize=10)
        ax.legend(fontsize=8, frameon=False, loc="lower left")
    axes[0, 0].set_ylabel("monitor loss / chance (median; band: quartiles)")
    handles = [Line2D([], [], color="k", alpha=0.6, label="chance (predict the mean value)"), Line2D([], [], color="firebrick", ls="--", label="threshold")]
    handles += [Patch(color="0.6", alpha=0.4, label="quartiles over runs (diverged runs count as +∞)")]
    legend_below(fig, handles, ncol=3, y=0.0)
    fig.suptitle("Learning curves of associative recall from each initial scale")
    return fig
