"""Figures of `normaliser_attention` (docs/science.md §12): the bias along the clean output per
normaliser beside its prediction, and the error against n per normaliser with its theory line.
Each takes the experiment's summary DataFrame and returns a matplotlib Figure; measurements are
means with their 95% intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from attnsim.claims.engine import declared
from attnsim.figures.common import legend_below, mean_errorbar, yerr
from attnsim.figures.style import figure_function
from attnsim.subjects import normalisers


def _order(summary: pd.DataFrame) -> list[str]:
    present = set(summary["normaliser"])
    return [name for name in normalisers.names() if name in present]


@figure_function
def bias_by_normaliser(summary: pd.DataFrame):
    """Bias along o over E[e^eps] - 1 per normaliser (0: the mean cancels; 1: sigmoid's factor
    kept whole) at the smallest logit scale, one panel per noise scale > 0, a marker per n;
    crosses: the prediction."""
    noisy = summary[summary["noise_scale"] > 0]
    noisy = noisy[noisy["logit_scale"] == noisy["logit_scale"].min()]
    scales = sorted(noisy["noise_scale"].unique())
    names = _order(noisy)
    ns = sorted(noisy["n"].unique())
    fig, axes = plt.subplots(
        1, max(1, len(scales)), figsize=(5.2 * max(1, len(scales)), 4.2), squeeze=False, sharey=True
    )
    for ax, sigma in zip(axes[0], scales):
        at = noisy[noisy["noise_scale"] == sigma]
        for j, n in enumerate(ns):
            rows = at[at["n"] == n].set_index("normaliser").reindex(names).dropna(subset=["n"])
            x = np.array([names.index(k) for k in rows.index]) + (j - (len(ns) - 1) / 2) * 0.15
            unit = rows["mean_exp_minus_1"].to_numpy()
            ax.errorbar(
                x,
                rows["bias_mean"] / unit,
                yerr=yerr(rows, "bias") / unit,
                fmt="o",
                ms=4,
                color=f"C{j}",
                capsize=2,
            )
            ax.plot(x, rows["bias_pred_mean"] / unit, "x", color="k", ms=5)
        ax.axhline(0, color="0.6", lw=0.8)
        ax.axhline(1, color="0.6", lw=0.8, ls=":")
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set_title(f"σ = {sigma:g}")
    axes[0][0].set_ylabel("bias along o / (E[e^ε] − 1)")
    handles = [
        Line2D([], [], color=f"C{j}", marker="o", ls="", label=f"n = {n}") for j, n in enumerate(ns)
    ]
    handles.append(Line2D([], [], color="k", marker="x", ls="", label="theory (§12.2)"))
    legend_below(fig, handles)
    return fig


@figure_function
def error_vs_n_by_normaliser(summary: pd.DataFrame):
    """Mean squared error against n (log-log), a panel per normaliser, a line per noise scale at
    the smallest logit scale; dashed: the prediction of §12.2 on the same trials."""
    noisy = summary[(summary["noise_scale"] > 0)]
    noisy = noisy[noisy["logit_scale"] == noisy["logit_scale"].min()]
    names = _order(noisy)
    cols = min(5, max(1, len(names)))
    rows_ = -(-len(names) // cols)
    fig, axes = plt.subplots(
        max(1, rows_), cols, figsize=(3.2 * cols, 2.9 * max(1, rows_)), squeeze=False, sharex=True
    )
    scales = sorted(noisy["noise_scale"].unique())
    for ax, name in zip(axes.flat, names):
        for j, sigma in enumerate(scales):
            line = noisy[(noisy["normaliser"] == name) & (noisy["noise_scale"] == sigma)]
            line = line.sort_values("n")
            mean_errorbar(
                ax,
                line["n"],
                line,
                "sq_err",
                log=True,
                fmt="o",
                ms=3.5,
                color=f"C{j}",
                capsize=2,
            )
            ax.plot(line["n"], line["sq_err_pred_mean"], "--", color=f"C{j}", lw=1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sorted(noisy["n"].unique()), [str(n) for n in sorted(noisy["n"].unique())])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(name)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    handles = [
        Line2D([], [], color=f"C{j}", marker="o", label=f"σ = {s:g}") for j, s in enumerate(scales)
    ]
    handles.append(Line2D([], [], color="k", ls="--", label="theory (§12.2)"))
    for ax in axes[-1]:
        ax.set_xlabel("n")
    legend_below(fig, handles)
    fig.supylabel("E‖õ − o‖²")
    return fig


VERDICT_COLOURS = {
    "holds": "#4c9a5f",
    "fails": "#c8553d",
    "inconclusive": "#e0b84a",
    "outside regime": "#d9d9d9",
    "not measured": "#f2f2f2",
}
FAMILIES = (
    ("bias", "bias along o"),
    ("error", "error ratio"),
    ("entropy", "entropy at large l"),
    ("gradient", "mean gradient at large l"),
)


@figure_function
def verdict_matrix(summary: pd.DataFrame, claims):
    """Each per-normaliser claim as the engine judged it on the rows of every experiment of the
    kind (`claims`: the kind's judged `ClaimResult`s, from its claims file; this figure judges
    nothing), a cell per (claim, normaliser) coloured by its verdict and labelled with the
    measured number (the point farthest from the prediction)."""
    from attnsim.kinds.normaliser_attention.claims import CANCELLATION, PER_NORMALISER

    judged = {c.claim_id: c for c in claims}

    def result(spec):  # a claim missing from the file (none judged) is shown as not measured
        return judged.get(spec.claim_id) or declared(spec)

    names = list(normalisers.names())
    fig, ax = plt.subplots(figsize=(1.0 * len(names) + 1.5, 0.6 * (len(FAMILIES) + 1) + 1.0))
    for i, (family, _) in enumerate(FAMILIES):
        for j, name in enumerate(names):
            spec = PER_NORMALISER[family](name)
            if spec is not None:  # soft-capping has no gradient law (§12.3): a blank cell
                _cell(ax, j, i, result(spec))
    _cell(ax, (len(names) - 1) / 2, len(FAMILIES), result(CANCELLATION), width=len(names))
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylim(len(FAMILIES) + 0.5, -0.5)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    labels = [label for _, label in FAMILIES] + ["property X separates"]
    ax.set_yticks(range(len(labels)), labels)
    ax.grid(False)
    handles = [
        Line2D([], [], marker="s", ls="", ms=10, color=c, label=v)
        for v, c in VERDICT_COLOURS.items()
    ]
    legend_below(fig, handles)
    return fig


# The claims page of the workspace the figure is drawn in: figures are written to
# <workspace>/figures/<experiment>/<figure>.pdf and the page to <workspace>/claims.html, whose
# rows are anchored `claim-<claim_id>` (attnsim.report.claims_render).
CLAIMS_PAGE = "../../claims.html"


def _cell(ax, x: float, y: float, result, width: float = 1.0) -> None:
    """A cell coloured by the verdict, labelled with the measured number (or the verdict where
    there is none) and linked, in the PDF and SVG, to the claim's row of the claims page: the
    evidence behind the colour is one click away."""
    colour = VERDICT_COLOURS.get(result.verdict, "white")
    link = f"{CLAIMS_PAGE}#claim-{result.claim_id}"
    cell = plt.Rectangle((x - width / 2, y - 0.5), width, 1.0, color=colour, ec="white", lw=2)
    cell.set_url(link)
    ax.add_patch(cell)
    label = f"{result.measured:.2g}" if np.isfinite(result.measured) else result.verdict
    ax.text(x, y, label, ha="center", va="center", fontsize=8, url=link)
