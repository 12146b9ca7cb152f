"""Figures for `noisy_attention`: error vs n against the delta method, and the collapse plot."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsim.figures.style import PALETTE, palette, theory_legend_handle


def rel_err_vs_n(summary: pd.DataFrame):
    """rel_err vs n (log-log), a line per noise scale, facets noise family (columns) x logit scale (rows)."""
    data = summary[summary["noise_scale"] > 0].copy()
    data["sigma"] = data["noise_scale"].map(lambda s: f"{s:g}")
    scales = sorted(data["noise_scale"].unique())
    colours = dict(zip((f"{s:g}" for s in scales), palette(PALETTE, len(scales))))
    rows = sorted(data["logit_scale"].unique())
    cols = [f for f in ("gaussian", "uniform", "laplace", "gumbel", "student_t") if f in set(data["noise"])]
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(2.86 * len(cols), 2.6 * len(rows)), sharex=True, squeeze=False)
    for (row, col), ax in np.ndenumerate(axes):
        facet = data[(data["logit_scale"] == rows[row]) & (data["noise"] == cols[col])]
        for sigma, line in facet.sort_values("n").groupby("sigma", sort=False):
            colour = colours[sigma]
            ax.plot(line["n"], line["rel_err_mean"], "o-", color=colour, ms=3, lw=1.2, label=f"σ = {sigma}")
            ax.fill_between(line["n"], line["rel_err_ci_low"].clip(lower=1e-12), line["rel_err_ci_high"], color=colour, alpha=0.25, lw=0)
            finite = line[np.isfinite(line["rel_err_pred_mean"])]
            if len(finite):
                ax.plot(finite["n"], finite["rel_err_pred_mean"], "--", color=colour, lw=1)
        if len(facet) and not facet["kappa_finite"].all():
            ax.text(0.03, 0.04, "κ = ∞ for some σ:\nno prediction", transform=ax.transAxes, fontsize=7, color="firebrick")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(labelbottom=True)  # every row keeps its n labels
        if row == 0:
            ax.set_title(f"noise: {cols[col]}")
        if row == len(rows) - 1:
            ax.set_xlabel("number of keys n")
        if col == 0:
            ax.set_ylabel("rel. error √(‖õ−o‖² / Σp‖v−o‖²)")
        if col == len(cols) - 1:  # the row's title in the right margin
            ax.annotate(f"logit std = {rows[row]}", xy=(1.02, 0.5), xycoords="axes fraction", rotation=270, ha="left", va="center")
    fig.tight_layout()
    handles = [plt.Line2D([], [], color=colours[s], marker="o", ms=3, label=f"σ = {s}") for s in colours]
    fig.legend(
        handles=[*handles, theory_legend_handle("delta method √(κ Σp²‖v−o‖² / Σp‖v−o‖²)")],
        loc="upper center",
        ncol=len(handles) + 1,
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
    )
    fig.suptitle("Relative error of noisy attention vs n: measured mean with 95% CI (band), delta-method prediction (dashed)", y=1.02)
    return fig


def collapse(summary: pd.DataFrame):
    """Measured vs predicted sq_err for all finite-kappa points, coloured by kappa * sum p^2."""
    data = summary[summary["kappa_finite"] & (summary["kappa"] > 0)].copy()
    fig, ax = plt.subplots(figsize=(6.2, 5))
    if data.empty:
        ax.text(0.5, 0.5, "no point with 0 < κ < ∞ in this sweep", ha="center", transform=ax.transAxes)
        return fig
    colour = data["kappa_sum_p2"].clip(lower=1e-6)
    norm = mcolors.LogNorm(vmin=colour.min(), vmax=max(colour.max(), colour.min() * 10))
    markers = dict(zip(sorted(data["noise"].unique()), "osD^v"))
    lower = (data["sq_err_mean"] - data["sq_err_ci_low"]).clip(lower=0)
    lower = np.minimum(lower, data["sq_err_mean"] * 0.999)
    upper = data["sq_err_ci_high"] - data["sq_err_mean"]
    for family, part in data.groupby("noise"):
        idx = part.index
        ax.errorbar(part["sq_err_pred_mean"], part["sq_err_mean"], yerr=[lower[idx], upper[idx]], fmt="none", ecolor="0.6", elinewidth=0.8, zorder=1)
        points = ax.scatter(
            part["sq_err_pred_mean"],
            part["sq_err_mean"],
            c=colour[idx],
            cmap="magma_r",
            norm=norm,
            marker=markers[family],
            s=22,
            edgecolor="0.2",
            linewidth=0.3,
            label=family,
            zorder=2,
        )
    span = np.array([min(data["sq_err_pred_mean"].min(), data["sq_err_mean"].min()), max(data["sq_err_pred_mean"].max(), data["sq_err_mean"].max())])
    ax.plot(span, span, "k--", lw=1, label="y = x (delta method exact)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted  κ · Σ pᵢ² ‖vᵢ − o‖²  (mean over trials)")
    ax.set_ylabel("measured  ‖õ − o‖²  (mean, 95% CI)")
    ax.set_title("Delta-method collapse: measured vs predicted error\n(points leave y = x where κ·Σp² is not small)")
    fig.colorbar(points, ax=ax, label="κ · Σ pᵢ²  (breakdown when ≳ 0.1)")
    legend = ax.legend(loc="upper left", fontsize=8)
    for handle in legend.legend_handles[:-1]:
        handle.set_facecolor("0.6")
    return fig
