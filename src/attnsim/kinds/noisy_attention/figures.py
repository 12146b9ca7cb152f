"""Figures for `noisy_attention`: error vs n against the delta method, the collapse plot, and where the delta method falls short."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsim.figures.style import PALETTE, palette, theory_legend_handle
from attnsim.kinds.noisy_attention.claims import THRESHOLDS
from attnsim.theory import delta_next


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


SHORTFALL_FAMILIES = ("gaussian", "uniform", "laplace", "gumbel")


def delta_shortfall(summary: pd.DataFrame):
    """1 - measured/predicted against kappa sum p^2 (log-log), a panel per family, colour = sigma,
    marker = regime (delta / delta_slow), the next-order theory's 1 - next_ratio as dashed lines."""
    data = summary[summary["kappa_finite"] & (summary["kappa"] > 0) & summary["err_ratio"].notna()].copy()
    families = [f for f in SHORTFALL_FAMILIES if f in set(data["noise"])]
    fig, axes = plt.subplots(1, max(1, len(families)), figsize=(3.3 * max(1, len(families)), 3.6), sharey=True, squeeze=False)
    axes = axes[0]
    if data.empty:
        axes[0].text(0.5, 0.5, "no point with 0 < κ < ∞ in this sweep", ha="center", transform=axes[0].transAxes)
        axes[0].set_title("delta-method shortfall")
        axes[0].set_xlabel("κ · Σp²")
        return fig
    regime = [delta_next.regime(f, float(s)) for f, s in zip(data["noise"], data["noise_scale"])]
    data["regime"] = regime
    data["short"] = 1 - data["err_ratio"]
    data["sum_p2"] = data["kappa_sum_p2"] / data["kappa"]
    scales = sorted(data["noise_scale"].unique())
    colours = dict(zip(scales, palette("tab10", len(scales))))  # neighbouring sigmas must stay apart
    markers = {"delta": "o", "delta_slow": "D"}
    x_all = data["kappa_sum_p2"]
    y_floor = 1e-4
    for ax, family in zip(axes, families):
        facet = data[data["noise"] == family]
        for (sigma, regime_name), part in facet.groupby(["noise_scale", "regime"]):
            colour = colours[sigma]
            y = part["short"].abs().clip(lower=y_floor)
            err = 1.96 * part["err_ratio_se"]
            lower = np.minimum(err, y * 0.999)
            negative = part["short"] < 0
            ax.errorbar(part["kappa_sum_p2"], y, yerr=[lower, err], fmt="none", ecolor=colour, elinewidth=0.7, alpha=0.6, zorder=1)
            ax.scatter(
                part["kappa_sum_p2"],
                y,
                marker=markers.get(regime_name, "o"),
                s=26 if regime_name == "delta_slow" else 18,
                facecolor=[(1, 1, 1, 0) if neg else colour for neg in negative],
                edgecolor="black" if regime_name == "delta_slow" else colour,
                linewidth=0.9 if regime_name == "delta_slow" else 0.8,
                zorder=3,
            )
        if "next_ratio" in facet:  # where the series is in its range (the next_order_theory claim's n_eff bound)
            for (sigma, _scale), line in facet.sort_values("kappa_sum_p2").groupby(["noise_scale", "logit_scale"]):
                short = 1 - line["next_ratio"].astype(float)
                keep = (short > 0) & (line["kappa"] / line["kappa_sum_p2"] >= THRESHOLDS.next_min_n_eff)
                if keep.sum() >= 2:
                    ax.plot(line["kappa_sum_p2"][keep], short[keep], "--", color=colours[sigma], lw=1, zorder=2)
        span = np.geomspace(max(x_all.min(), 1e-6), min(x_all.max(), 0.3), 50)
        ax.plot(span, 3 * span, ":", color="0.4", lw=1, zorder=0)  # gaussian's first correction at small sigma, uniform weights
        ax.axhline(THRESHOLDS.ratio_tolerance, color="firebrick", lw=0.8, zorder=0)
        ax.axvline(THRESHOLDS.delta_kappa_p2, color="0.5", lw=0.8, ls="-.", zorder=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(y_floor * 0.8, 2.0)
        ax.set_title(f"noise: {family}")
        ax.set_xlabel("κ · Σp²  (mean over trials)")
    axes[0].set_ylabel("1 − measured / predicted  (|·|, 95% CI)")
    handles = [plt.Line2D([], [], color=colours[s], marker="o", ls="", ms=5, label=f"σ = {s:g}") for s in scales]
    handles += [
        plt.Line2D([], [], color="0.5", marker="D", markeredgecolor="black", ls="", ms=5, label="delta_slow (2 < k* ≤ 4)"),
        plt.Line2D([], [], color="0.5", marker="o", markerfacecolor="white", ls="", ms=5, label="ratio > 1 (|1 − ratio| shown)"),
        theory_legend_handle(f"next-order theory (§2.8), n_eff ≥ {THRESHOLDS.next_min_n_eff:g}"),
        plt.Line2D([], [], color="0.4", ls=":", label="3 κΣp² (light tails)"),
        plt.Line2D([], [], color="firebrick", lw=0.8, label=f"tolerance {THRESHOLDS.ratio_tolerance:g}"),
        plt.Line2D([], [], color="0.5", lw=0.8, ls="-.", label=f"κΣp² = {THRESHOLDS.delta_kappa_p2:g} (claim regime below)"),
    ]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(handles), 6), frameon=False, fontsize=8)
    fig.suptitle("Where the delta method falls short: 1 − measured/predicted error against κΣp²", y=1.02)
    return fig
