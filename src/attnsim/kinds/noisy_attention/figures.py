"""Figures for `noisy_attention`: error vs n against the delta method, the collapse plot, and where
the delta method falls short."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsim.figures.common import legend_below
from attnsim.figures.style import PALETTE, figure_function, palette, theory_legend_handle
from attnsim.kinds.noisy_attention.claims import (
    THRESHOLDS,
    predicted_correction,
    predicted_truncation,
)
from attnsim.stats import Z95
from attnsim.theory import delta_next


@figure_function
def rel_err_vs_n(summary: pd.DataFrame):
    """rel_err vs n (log-log), a line per noise scale, facets noise family (columns) x logit scale
    (rows)."""
    data = summary[summary["noise_scale"] > 0].copy()
    data["sigma"] = data["noise_scale"].map(lambda s: f"{s:g}")
    scales = sorted(data["noise_scale"].unique())
    colours = dict(zip((f"{s:g}" for s in scales), palette(PALETTE, len(scales))))
    rows = sorted(data["logit_scale"].unique())
    cols = [
        f
        for f in ("gaussian", "uniform", "laplace", "gumbel", "student_t")
        if f in set(data["noise"])
    ]
    fig, axes = plt.subplots(
        len(rows),
        len(cols),
        figsize=(2.86 * len(cols), 2.6 * len(rows)),
        sharex=True,
        squeeze=False,
    )
    for (row, col), ax in np.ndenumerate(axes):
        facet = data[(data["logit_scale"] == rows[row]) & (data["noise"] == cols[col])]
        for sigma, line in facet.sort_values("n").groupby("sigma", sort=False):
            colour = colours[sigma]
            ax.plot(
                line["n"],
                line["rel_err_mean"],
                "o-",
                color=colour,
                ms=3,
                lw=1.2,
                label=f"σ = {sigma}",
            )
            ax.fill_between(
                line["n"],
                line["rel_err_ci_low"].clip(lower=1e-12),
                line["rel_err_ci_high"],
                color=colour,
                alpha=0.25,
                lw=0,
            )
            finite = line[np.isfinite(line["rel_err_pred_mean"])]
            if len(finite):
                ax.plot(finite["n"], finite["rel_err_pred_mean"], "--", color=colour, lw=1)
            heavy = line[
                [
                    delta_next.regime(f, float(x)) == "heavy"
                    for f, x in zip(line["noise"], line["noise_scale"])
                ]
            ]
            if (
                len(heavy) >= 2
                # kappa = inf, mean finite: the stable-law rate n^(1/k* - 1) (§2.7), from the first
                # point
            ):
                k_star = delta_next.moment_order(
                    heavy["noise"].iloc[0], float(heavy["noise_scale"].iloc[0])
                )
                first = heavy.iloc[0]
                ax.plot(
                    heavy["n"],
                    first["rel_err_mean"] * (heavy["n"] / first["n"]) ** (1 / k_star - 1),
                    ":",
                    color=colour,
                    lw=1.2,
                )
        if len(facet) and (~facet["kappa_finite"] & facet["kappa_finite"].any()).any():
            ax.text(
                0.03,
                0.04,
                "κ = ∞ for some σ: dotted = n^(1/k*−1)\nwhere a mean exists",
                transform=ax.transAxes,
                fontsize=7,
                color="firebrick",
            )
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
            ax.annotate(
                f"logit std = {rows[row]}",
                xy=(1.02, 0.5),
                xycoords="axes fraction",
                rotation=270,
                ha="left",
                va="center",
            )
    handles = [
        plt.Line2D([], [], color=colours[s], marker="o", ms=3, label=f"σ = {s}") for s in colours
    ]
    legend_below(
        fig,
        [
            *handles,
            theory_legend_handle("delta method √(κ Σp²‖v−o‖² / Σp‖v−o‖²)"),
            plt.Line2D(
                [],
                [],
                color="0.2",
                ls=":",
                lw=1.2,
                label="κ = ∞ with a mean: slope 1/k* − 1 (§2.7)",
            ),
        ],
        ncol=len(handles) + 1,
    )
    fig.suptitle(
        "Relative error of noisy attention vs n: measured mean with 95% CI (band), delta-method "
        "prediction (dashed)"
    )
    return fig


@figure_function
def collapse(summary: pd.DataFrame):
    """Measured vs predicted sq_err for all finite-kappa points, coloured by kappa * sum p^2."""
    data = summary[summary["kappa_finite"] & (summary["kappa"] > 0)].copy()
    fig, ax = plt.subplots(figsize=(6.2, 5))
    if data.empty:
        ax.text(
            0.5, 0.5, "no point with 0 < κ < ∞ in this sweep", ha="center", transform=ax.transAxes
        )
        return fig
    colour = data["kappa_sum_p2"].clip(lower=1e-6)
    norm = mcolors.LogNorm(vmin=colour.min(), vmax=max(colour.max(), colour.min() * 10))
    markers = dict(zip(sorted(data["noise"].unique()), "osD^v"))
    lower = (data["sq_err_mean"] - data["sq_err_ci_low"]).clip(lower=0)
    lower = np.minimum(lower, data["sq_err_mean"] * 0.999)
    upper = data["sq_err_ci_high"] - data["sq_err_mean"]
    for family, part in data.groupby("noise"):
        idx = part.index
        ax.errorbar(
            part["sq_err_pred_mean"],
            part["sq_err_mean"],
            yerr=[lower[idx], upper[idx]],
            fmt="none",
            ecolor="0.6",
            elinewidth=0.8,
            zorder=1,
        )
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
    span = np.array(
        [
            min(data["sq_err_pred_mean"].min(), data["sq_err_mean"].min()),
            max(data["sq_err_pred_mean"].max(), data["sq_err_mean"].max()),
        ]
    )
    ax.plot(span, span, "k--", lw=1, label="y = x (delta method exact)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted  κ · Σ pᵢ² ‖vᵢ − o‖²  (mean over trials)")
    ax.set_ylabel("measured  ‖õ − o‖²  (mean, 95% CI)")
    ax.set_title(
        "Delta-method collapse: measured vs predicted error\n(points leave y = x where κ·Σp² is "
        "not small)"
    )
    fig.colorbar(points, ax=ax, label="κ · Σ pᵢ²  (breakdown when ≳ 0.1)")
    legend = ax.legend(loc="upper left", fontsize=8)
    for handle in legend.legend_handles[:-1]:
        handle.set_facecolor("0.6")
    return fig


SHORTFALL_FAMILIES = ("gaussian", "uniform", "laplace", "gumbel")


@figure_function
def delta_shortfall(summary: pd.DataFrame):
    """Where the delta method falls short and whether the next order mends it, a column per family:
    top, the delta method's measured shortfall |1 - measured/predicted| against the first correction
    theory predicts at the point (§2.8, the x of the delta_method claims' regime); bottom, the
    next-order theory's |1 - measured/next-order| against the size of the term it leaves out (the x
    of next_order_theory's regime). Colour = noise std sigma; filled = in the claim's regime, hollow
    = outside; the y = x line is the prediction of the shortfall's size."""
    data = summary[
        summary["kappa_finite"] & (summary["kappa"] > 0) & summary["err_ratio"].notna()
    ].copy()
    families = [f for f in SHORTFALL_FAMILIES if f in set(data["noise"])]
    columns = max(1, len(families))
    fig, axes = plt.subplots(
        2, columns, figsize=(3.0 * columns, 5.6), sharex="row", sharey="row", squeeze=False
    )
    if data.empty:
        axes[0, 0].text(
            0.5,
            0.5,
            "no point with 0 < κ < ∞ in this sweep",
            ha="center",
            transform=axes[0, 0].transAxes,
        )
        return fig
    t = THRESHOLDS
    floor = 1e-4
    data["correction"] = predicted_correction(data).clip(lower=floor)
    data["truncation"] = predicted_truncation(data).clip(lower=floor)
    scales = sorted(data["noise_scale"].unique())
    colours = dict(zip(scales, palette("tab10", len(scales))))
    panels = (
        (
            "correction",
            "err_ratio",
            data["err_ratio_se"],
            t.correction_max,
            "predicted first correction (§2.8)",
            "delta method",
        ),
        (
            "truncation",
            "next_err_ratio",
            data["next_err_ratio_se"],
            t.truncation_max,
            "predicted omitted term (§2.8)",
            "next-order theory",
        ),
    )
    for row, (x_name, ratio, se, cut, x_label, name) in enumerate(panels):
        for ax, family in zip(axes[row], families):
            facet = data[(data["noise"] == family) & data[ratio].notna()]
            for sigma, part in facet.groupby("noise_scale"):
                colour = colours[sigma]
                y = (1 - part[ratio].astype(float)).abs().clip(lower=floor)
                err = Z95 * se[part.index].astype(float)
                ax.errorbar(
                    part[x_name],
                    y,
                    yerr=[np.minimum(err, y * 0.999), err],
                    fmt="none",
                    ecolor=colour,
                    elinewidth=0.6,
                    alpha=0.5,
                    zorder=1,
                )
                inside = part[x_name] <= cut
                ax.scatter(
                    part[x_name],
                    y,
                    s=16,
                    facecolor=[colour if i else "white" for i in inside],
                    edgecolor=colour,
                    linewidth=0.9,
                    zorder=3,
                )
            ax.plot([floor, 2.0], [floor, 2.0], ":", color="0.35", lw=1, zorder=0)
            ax.axhline(t.ratio_tolerance, color="firebrick", lw=0.8, zorder=0)
            ax.axvline(cut, color="0.4", lw=0.8, ls="-.", zorder=0)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(floor * 0.8, 2.0)
            ax.set_ylim(floor * 0.8, 2.0)
            if row == 0:
                ax.set_title(f"noise: {family}")
            ax.set_xlabel(x_label)
        axes[row, 0].set_ylabel(f"{name}\n|1 − measured / predicted|")
    handles = [
        plt.Line2D([], [], color=colours[s], marker="o", ls="", ms=5, label=f"σ = {s:g}")
        for s in scales
    ]
    handles += [
        plt.Line2D(
            [],
            [],
            color="0.4",
            marker="o",
            markerfacecolor="white",
            ls="",
            ms=5,
            label="outside the claim's regime",
        ),
        plt.Line2D([], [], color="0.35", ls=":", label="y = x (shortfall as predicted)"),
        plt.Line2D([], [], color="firebrick", lw=0.8, label=f"tolerance {t.ratio_tolerance:g}"),
        plt.Line2D(
            [],
            [],
            color="0.4",
            lw=0.8,
            ls="-.",
            label=f"regime edge {t.correction_max:g} (judged left of it)",
        ),
    ]
    legend_below(fig, handles, ncol=min(len(handles), 6), fontsize=8)
    fig.suptitle(
        "Where the delta method falls short (top) and whether the next order mends it (bottom)"
    )
    return fig
