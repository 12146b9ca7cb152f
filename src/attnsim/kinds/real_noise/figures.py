"""Figures of `real_noise` (docs/science.md §5.6): a layer x head map of measured / predicted error,
and the error against n_eff on trained heads beside sqrt(kappa / n_eff)."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from attnsim.figures.common import legend_below
from attnsim.figures.style import PALETTE, figure_function, palette
from attnsim.kinds.real_noise.claims import THRESHOLDS, n_eff_of


def _settings(summary: pd.DataFrame) -> list[tuple]:
    keys = summary[["noise", "noise_scale", "noise_draws"]].drop_duplicates().sort_values(["noise", "noise_scale"])
    return [tuple(r) for r in keys.itertuples(index=False)]


@figure_function
def real_noise_map(summary: pd.DataFrame):
    """Per n (rows) and noise setting (columns): a layer x head map of err_ratio = measured / predicted
    sq_err (finite kappa; crossed cells: the 95% interval misses 1 ± tolerance; dots: kappa Σp² >= 0.01),
    or of rel_err where kappa = inf (no prediction)."""
    settings, ns = _settings(summary), sorted(summary["n"].unique())
    layers, heads = sorted(summary["layer"].unique()), sorted(summary["head"].unique())
    fig, axes = plt.subplots(
        len(ns),
        len(settings),
        figsize=(0.4 * len(heads) * len(settings) + 1.5, 0.42 * len(layers) * len(ns) + 1.8),
        squeeze=False,
        gridspec_kw={"wspace": 0.55},
    )
    tol = THRESHOLDS.ratio_tolerance
    ratio_norm = mcolors.TwoSlopeNorm(vcenter=1.0, vmin=0.8, vmax=1.2)
    heavy = summary[~summary["kappa_finite"]]
    rel_norm = mcolors.LogNorm(vmin=max(float(heavy["rel_err_mean"].min()), 1e-4), vmax=float(heavy["rel_err_mean"].max()) * 1.01) if len(heavy) else None
    for row, n in enumerate(ns):
        for col, (noise, sigma, k) in enumerate(settings):
            ax = axes[row, col]
            part = summary[(summary["n"] == n) & (summary["noise"] == noise) & (summary["noise_scale"] == sigma) & (summary["noise_draws"] == k)]
            finite = bool(part["kappa_finite"].all()) and bool((part["kappa"] > 0).all())
            value = "err_ratio" if finite else "rel_err_mean"
            grid = part.pivot_table(index="layer", columns="head", values=value, aggfunc="first").reindex(index=layers, columns=heads)
            if finite:
                image = ax.imshow(grid.to_numpy(float), cmap="RdBu_r", norm=ratio_norm, aspect="auto")
                fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02).set_label("measured / predicted (theory: 1)", fontsize=7.5)
                low = part.pivot_table(index="layer", columns="head", values="err_ratio_ci_low", aggfunc="first").reindex(index=layers, columns=heads)
                high = part.pivot_table(index="layer", columns="head", values="err_ratio_ci_high", aggfunc="first").reindex(index=layers, columns=heads)
                kp2 = part.pivot_table(index="layer", columns="head", values="kappa_sum_p2", aggfunc="first").reindex(index=layers, columns=heads)
                miss = (low.to_numpy(float) > 1 + tol) | (high.to_numpy(float) < 1 - tol)
                for i, j in zip(*np.nonzero(miss)):
                    ax.plot(j, i, marker="x", color="k", ms=5, mew=1.0)
                for i, j in zip(*np.nonzero(kp2.to_numpy(float) >= THRESHOLDS.delta_kappa_p2)):
                    ax.plot(j, i, marker=".", color="0.15", ms=3)
                title = f"{noise} σ = {sigma:g}: measured / predicted"
            else:
                image = ax.imshow(grid.to_numpy(float), cmap="magma", norm=rel_norm, aspect="auto")
                fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02).set_label("rel. error (no prediction)", fontsize=7.5)
                title = f"{noise} σ = {sigma:g} (κ = ∞): rel. error"
            ax.set_title(f"{title}\nn = {n}, K = {k}", fontsize=8.5)
            ax.set_xticks(range(len(heads)), heads, fontsize=7)
            ax.set_yticks(range(len(layers)), layers, fontsize=7)
            ax.set_xlabel("head", fontsize=8)
            if col == 0:
                ax.set_ylabel("layer", fontsize=8)
    handles = [
        Line2D([], [], marker="x", color="k", ls="none", label=f"95% CI misses 1 ± {tol}"),
        Line2D([], [], marker=".", color="0.15", ls="none", label=f"κΣp² ≥ {THRESHOLDS.delta_kappa_p2}: outside the delta method's regime"),
        Patch(color=plt.get_cmap("RdBu_r")(0.5), label="white = 1: the delta method exact"),
    ]
    legend_below(fig, handles, ncol=3, y=-0.02)
    fig.suptitle("Delta method on the trained heads of all-MiniLM-L6-v2: measured / predicted squared error per layer and head")
    return fig


@figure_function
def real_noise_rate(summary: pd.DataFrame):
    """rel_err (mean, 95% CI) against n_eff = 1 / mean Σp² per point (one point per layer, head and n),
    a colour per noise setting, beside sqrt(κ / n_eff) (finite κ)."""
    data = summary[summary["noise_scale"] > 0].copy()
    data["n_eff_h"] = n_eff_of(data)
    settings = _settings(data)
    colours = dict(zip(settings, palette(PALETTE, len(settings))))
    markers = dict(zip(sorted(data["n"].unique()), "os^Dv"))
    fig, ax = plt.subplots(figsize=(7.2, 5.2))
    handles = []
    for key in settings:
        noise, sigma, k = key
        part = data[(data["noise"] == noise) & (data["noise_scale"] == sigma) & (data["noise_draws"] == k)]
        colour = colours[key]
        for n, sub in part.groupby("n"):
            low = np.maximum(sub["rel_err_mean"] - sub["rel_err_ci_low"], 0).clip(upper=sub["rel_err_mean"] * 0.999)
            ax.errorbar(
                sub["n_eff_h"],
                sub["rel_err_mean"],
                yerr=[low, sub["rel_err_ci_high"] - sub["rel_err_mean"]],
                fmt=markers[n],
                color=colour,
                ms=3.5,
                elinewidth=0.6,
                alpha=0.85,
            )
        kappa = float(part["kappa"].iloc[0])
        label = f"{noise} σ = {sigma:g}"
        if np.isfinite(kappa):
            x = np.geomspace(max(0.8, part["n_eff_h"].min()), part["n_eff_h"].max() * 1.2, 50)
            ax.plot(x, np.sqrt(kappa / x), "--", color=colour, lw=1.2)
        else:
            label += " (κ = ∞)"
        handles.append(Line2D([], [], color=colour, marker="o", ms=4, label=label))
    handles += [Line2D([], [], color="0.3", marker=m, ls="none", ms=4, label=f"n = {n}") for n, m in markers.items()]
    handles.append(Line2D([], [], color="0.3", ls="--", label="√(κ / n_eff): slope −1/2"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n_eff = 1 / mean Σpᵢ²  of the head's rows")
    ax.set_ylabel("rel. error √(‖õ−o‖² / Σp‖v−o‖²)  (mean, 95% CI)")
    ax.set_title("Error of noisy attention on trained heads vs the effective number of keys\n(one point per layer, head and n)")
    legend_below(fig, handles, ncol=3, y=-0.02)
    return fig
