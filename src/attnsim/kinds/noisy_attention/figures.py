"""Figures for `noisy_attention`: error vs n against the delta method, the collapse plot, and where
the delta method falls short."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import Collection

from attnsim.figures import boundaries as boundary_marks
from attnsim.figures.common import key_handles, legend_below
from attnsim.figures.style import PALETTE, figure_function, palette, theory_legend_handle
from attnsim.kinds.noisy_attention.claims import (
    THRESHOLDS,
    predicted_correction,
    predicted_truncation,
)
from attnsim.stats import Z95
from attnsim.subjects import noise_families
from attnsim.theory import delta_next

# rel_err_vs_n's columns, in this order where the sweep has them
REL_ERR_FAMILIES = noise_families.names()
NO_FINITE_KAPPA = "no point with 0 < κ < ∞ in this sweep"
HEAVY_NOTE = "κ = ∞ for some σ: dotted = n^(1/k*−1)\nwhere a mean exists"


@figure_function
def rel_err_vs_n(summary: pd.DataFrame):
    """rel_err vs n (log-log), a line per noise scale, facets noise family (columns) x logit scale
    (rows)."""
    data = summary[summary["noise_scale"] > 0].copy()
    data["sigma"] = data["noise_scale"].map(lambda s: f"{s:g}")
    scales = sorted(data["noise_scale"].unique())
    colours = dict(zip((f"{s:g}" for s in scales), palette(PALETTE, len(scales))))
    rows = sorted(data["logit_scale"].unique())
    cols = [f for f in REL_ERR_FAMILIES if f in set(data["noise"])]
    size = (2.86 * len(cols), 2.6 * len(rows))
    fig, axes = plt.subplots(len(rows), len(cols), figsize=size, sharex=True, squeeze=False)
    for (row, col), ax in np.ndenumerate(axes):
        facet = data[(data["logit_scale"] == rows[row]) & (data["noise"] == cols[col])]
        for sigma, line in facet.sort_values("n").groupby("sigma", sort=False):
            _error_and_prediction(ax, line, colours[sigma], sigma)
            _stable_law_rate(ax, line, colours[sigma])
        if len(facet) and (~facet["kappa_finite"] & facet["kappa_finite"].any()).any():
            ax.text(0.03, 0.04, HEAVY_NOTE, transform=ax.transAxes, fontsize=7, color="firebrick")
        _label_facet(ax, row, col, rows, cols)
    handles = [
        plt.Line2D([], [], color=colours[s], marker="o", ms=3, label=f"σ = {s}") for s in colours
    ]
    delta = theory_legend_handle("delta method √(κ Σp²‖v−o‖² / Σp‖v−o‖²)")
    rate = "κ = ∞ with a mean: slope 1/k* − 1 (§2.7)"
    keys = [delta, plt.Line2D([], [], color="0.2", ls=":", lw=1.2, label=rate)]
    legend_below(fig, [*handles, *keys], ncol=len(handles) + 1)
    fig.suptitle(
        "Relative error of noisy attention vs n: measured mean with 95% CI (band), delta-method "
        "prediction (dashed)"
    )
    return fig


def _error_and_prediction(ax, line: pd.DataFrame, colour, sigma: str) -> None:
    """One noise scale in a facet: the measured mean relative error with its 95% band (the lower
    end kept above 0 on the log axis) and, dashed, the delta method's prediction where kappa is
    finite: the claim is that the two agree."""
    n = line["n"]
    ax.plot(n, line["rel_err_mean"], "o-", color=colour, ms=3, lw=1.2, label=f"σ = {sigma}")
    low = line["rel_err_ci_low"].clip(lower=1e-12)
    ax.fill_between(n, low, line["rel_err_ci_high"], color=colour, alpha=0.25, lw=0)
    finite = line[np.isfinite(line["rel_err_pred_mean"])]
    if len(finite):
        ax.plot(finite["n"], finite["rel_err_pred_mean"], "--", color=colour, lw=1)


def _stable_law_rate(ax, line: pd.DataFrame, colour) -> None:
    """Where kappa = inf but the mean is finite, the delta method has no prediction: the
    stable-law rate n^(1/k* − 1) (§2.7), dotted from the first heavy point, is the slope to
    compare with."""
    regimes = [delta_next.regime(f, float(x)) for f, x in zip(line["noise"], line["noise_scale"])]
    heavy = line[[regime == "heavy" for regime in regimes]]
    if len(heavy) < 2:
        return
    k_star = delta_next.moment_order(heavy["noise"].iloc[0], float(heavy["noise_scale"].iloc[0]))
    first = heavy.iloc[0]
    rate = first["rel_err_mean"] * (heavy["n"] / first["n"]) ** (1 / k_star - 1)
    ax.plot(heavy["n"], rate, ":", color=colour, lw=1.2)


def _label_facet(ax, row: int, col: int, rows, cols) -> None:
    """Log axes for a facet; the family over the top row, the logit scale in the right margin, the
    axis names on the outer panels."""
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
        where = {"xycoords": "axes fraction", "rotation": 270, "ha": "left", "va": "center"}
        ax.annotate(f"logit std = {rows[row]}", xy=(1.02, 0.5), **where)


@figure_function
def collapse(summary: pd.DataFrame):
    """Measured vs predicted sq_err for all finite-kappa points, coloured by kappa * sum p^2."""
    data = summary[summary["kappa_finite"] & (summary["kappa"] > 0)].copy()
    fig, ax = plt.subplots(figsize=(6.2, 5))
    if data.empty:
        ax.text(0.5, 0.5, NO_FINITE_KAPPA, ha="center", transform=ax.transAxes)
        return fig
    colour = data["kappa_sum_p2"].clip(lower=1e-6)
    norm = mcolors.LogNorm(vmin=colour.min(), vmax=max(colour.max(), colour.min() * 10))
    markers = dict(zip(sorted(data["noise"].unique()), "osD^v"))
    lower = (data["sq_err_mean"] - data["sq_err_ci_low"]).clip(lower=0)
    lower = np.minimum(lower, data["sq_err_mean"] * 0.999)
    upper = data["sq_err_ci_high"] - data["sq_err_mean"]
    for family, part in data.groupby("noise"):
        idx = part.index
        x, y = part["sq_err_pred_mean"], part["sq_err_mean"]
        yerr = [lower[idx], upper[idx]]
        ax.errorbar(x, y, yerr=yerr, fmt="none", ecolor="0.6", elinewidth=0.8, zorder=1)
        points = ax.scatter(
            x,
            y,
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
    _exact_line(ax, data)
    fig.colorbar(points, ax=ax, label="κ · Σ pᵢ²  (breakdown when ≳ 0.1)")
    legend = ax.legend(loc="upper left", fontsize=8)
    for handle in legend.legend_handles[:-1]:
        if isinstance(handle, Collection):  # the scatter's markers
            handle.set_facecolor("0.6")
    return fig


def _exact_line(ax, data: pd.DataFrame) -> None:
    """y = x over the points' range, where they lie while the delta method holds, and the log axes
    and labels of the collapse plot."""
    low = min(data["sq_err_pred_mean"].min(), data["sq_err_mean"].min())
    high = max(data["sq_err_pred_mean"].max(), data["sq_err_mean"].max())
    span = np.array([low, high])
    ax.plot(span, span, "k--", lw=1, label="y = x (delta method exact)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted  κ · Σ pᵢ² ‖vᵢ − o‖²  (mean over trials)")
    ax.set_ylabel("measured  ‖õ − o‖²  (mean, 95% CI)")
    ax.set_title(
        "Delta-method collapse: measured vs predicted error\n(points leave y = x where κ·Σp² is "
        "not small)"
    )


SHORTFALL_FAMILIES = noise_families.names(lambda f: f.kappa_can_be_finite)
SHORTFALL_FLOOR = 1e-4  # the smallest shortfall and x drawn (log axes)


@figure_function
def delta_shortfall(summary: pd.DataFrame, boundaries: Sequence[Mapping[str, Any]] = ()):
    """Where the delta method falls short and whether the next order mends it, a column per
    family: top, the delta method's measured shortfall |1 - measured/predicted| against the first
    correction theory predicts at the point (§2.8, the x of the delta_method claims' regime);
    bottom, the next-order theory's |1 - measured/next-order| against the size of the term it
    leaves out (the x of next_order_theory's regime). Colour = noise std sigma; filled = in the
    claim's regime, hollow = outside; the y = x line is the prediction of the shortfall's size.
    The delta_method claims' located `boundaries` along the noise scale are drawn in their
    family's top panel (`_shortfall_boundaries`)."""
    finite = summary["kappa_finite"] & (summary["kappa"] > 0) & summary["err_ratio"].notna()
    data = summary[finite].copy()
    families = [f for f in SHORTFALL_FAMILIES if f in set(data["noise"])]
    columns = max(1, len(families))
    size = (3.0 * columns, 5.6)
    fig, axes = plt.subplots(2, columns, figsize=size, sharex="row", sharey="row", squeeze=False)
    if data.empty:
        axes[0, 0].text(0.5, 0.5, NO_FINITE_KAPPA, ha="center", transform=axes[0, 0].transAxes)
        return fig
    t = THRESHOLDS
    data["correction"] = predicted_correction(data).clip(lower=SHORTFALL_FLOOR)
    data["truncation"] = predicted_truncation(data).clip(lower=SHORTFALL_FLOOR)
    scales = sorted(data["noise_scale"].unique())
    colours = dict(zip(scales, palette("tab10", len(scales))))
    panels = (
        ("correction", "err_ratio", t.correction_max, "predicted first correction (§2.8)"),
        ("truncation", "next_err_ratio", t.truncation_max, "predicted omitted term (§2.8)"),
    )
    for row, (x_name, ratio, cut, x_label) in enumerate(panels):
        for ax, family in zip(axes[row], families):
            facet = data[(data["noise"] == family) & data[ratio].notna()]
            for sigma, part in facet.groupby("noise_scale"):
                _shortfall_points(ax, part, x_name, ratio, cut, colours[sigma])
            _shortfall_references(ax, cut)
            if row == 0:
                ax.set_title(f"noise: {family}")
            ax.set_xlabel(x_label)
    axes[0, 0].set_ylabel("delta method\n|1 − measured / predicted|")
    axes[1, 0].set_ylabel("next-order theory\n|1 − measured / predicted|")
    handles = _shortfall_handles(scales, colours)
    if boundaries:
        handles += _shortfall_boundaries(axes[0], families, data, boundaries)
    legend_below(fig, handles, ncol=min(len(scales) + 4, 6), fontsize=8)
    fig.suptitle(
        "Where the delta method falls short (top) and whether the next order mends it (bottom)"
    )
    return fig


def _shortfall_boundaries(axes, families, data: pd.DataFrame, boundaries) -> list:
    """Each located boundary of a delta_method claim in its family's top panel, at the first
    correction theory predicts at the noise scale sigma* (the panel's x: `_correction_at`), its
    interval and the theory's prediction mapped the same way; their legend entries (one along
    another axis, or of a family not drawn, only named there)."""
    by_panel: dict[int, list] = {}
    for record in boundaries:
        family = (record.get("at") or {}).get("noise")
        column = families.index(family) if family in families else 0
        by_panel.setdefault(column, []).append(record)
    handles = []
    for column, records in sorted(by_panel.items()):
        handles += boundary_marks.draw(
            axes[column], records, _correction_at(data), ("n", "logit_scale"), "σ"
        )
    return handles


def _correction_at(data: pd.DataFrame):
    """The panel's x at a boundary's noise scale: the predicted first correction (§2.8,
    `delta_next.delta_correction`) at the boundary's noise family, logit scale and mean sum p^2,
    the last read off the sweep's points at the boundary's fixed values (it does not depend on
    the noise scale); NaN where the sweep has no such point or the boundary is along another
    axis (so it is named, not drawn)."""

    def correction(record: Mapping[str, Any], sigma: float) -> float:
        at, axis = dict(record.get("at") or {}), record.get("axis")
        if axis != "noise_scale" or at.get("noise") not in SHORTFALL_FAMILIES or not sigma > 0:
            return math.nan
        rows = data
        for key, value in at.items():
            if key != axis and key in rows:
                rows = rows[rows[key] == value]
        if rows.empty:
            return math.nan
        p2 = float((rows["kappa_sum_p2"] / rows["kappa"]).mean())
        scale = float(at.get("logit_scale", 0.0))
        sizes: Any = delta_next.correction_sizes(at["noise"], float(sigma), p2, scale)
        return max(delta_next.delta_correction(sizes), SHORTFALL_FLOOR)

    return correction


def _shortfall_points(ax, part: pd.DataFrame, x_name: str, ratio: str, cut: float, colour):
    """One noise scale in a panel: each point's shortfall |1 − measured / predicted| with its 95%
    interval against the size theory predicts for it; filled where the claim judges it (x up to
    the regime's edge), hollow outside."""
    y = (1 - part[ratio].astype(float)).abs().clip(lower=SHORTFALL_FLOOR)
    err = Z95 * part[f"{ratio}_se"].astype(float)
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
    faces = [colour if i else "white" for i in part[x_name] <= cut]
    ring = {"edgecolor": colour, "linewidth": 0.9, "zorder": 3}
    ax.scatter(part[x_name], y, s=16, facecolor=faces, **ring)


def _shortfall_references(ax, cut: float) -> None:
    """A panel's references: y = x (the shortfall as large as predicted), the claim's tolerance
    and the edge of its regime, on log axes from the floor to 2."""
    floor = SHORTFALL_FLOOR
    ax.plot([floor, 2.0], [floor, 2.0], ":", color="0.35", lw=1, zorder=0)
    ax.axhline(THRESHOLDS.ratio_tolerance, color="firebrick", lw=0.8, zorder=0)
    ax.axvline(cut, color="0.4", lw=0.8, ls="-.", zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(floor * 0.8, 2.0)
    ax.set_ylim(floor * 0.8, 2.0)


def _shortfall_handles(scales, colours) -> list:
    """A colour per noise scale, then what delta_shortfall's marks and lines mean."""
    t = THRESHOLDS
    handles = [
        plt.Line2D([], [], color=colours[s], marker="o", ls="", ms=5, label=f"σ = {s:g}")
        for s in scales
    ]
    outside: dict[str, Any] = {"marker": "o", "markerfacecolor": "white", "ls": "", "ms": 5}
    handles.append(plt.Line2D([], [], color="0.4", label="outside the claim's regime", **outside))
    return handles + key_handles(
        (
            ("0.35", None, ":", None, "y = x (shortfall as predicted)"),
            ("firebrick", None, None, 0.8, f"tolerance {t.ratio_tolerance:g}"),
            ("0.4", None, "-.", 0.8, f"regime edge {t.correction_max:g} (judged left of it)"),
        )
    )
