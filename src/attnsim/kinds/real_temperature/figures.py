"""Figure of `real_temperature` (docs/science.md §5.8): the gap of real embeddings against tau
beside the random-direction curve, the worst-case bounds and the per-query variance prediction."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import (
    STAR,
    fine_grid,
    key_handles,
    legend_below,
    mean_handle,
    mean_line,
    n_colours,
    n_handles,
    star_handle,
)
from attnsim.figures.style import figure_function
from attnsim.theory.entropy import G1, asymptotic_gap, exact_gap, random_direction_gap

NAMES = {"minilm": "MiniLM sentence embeddings", "glove": "GloVe word vectors"}


@figure_function
def real_temperature_gap(summary: pd.DataFrame):
    """Gap log n - H vs tau (log-log), a panel per embeddings, a colour per n."""
    kinds = sorted(summary["embeddings"].unique())
    colours = n_colours(summary["n"])
    size = (6.0 * len(kinds), 5.0)
    fig, axes = plt.subplots(1, len(kinds), figsize=size, squeeze=False, sharey=True)
    fine = fine_grid(summary["tau"])
    positive = summary["gap_mean"][summary["gap_mean"] > 0]
    y_low = 0.3 * float(positive.min()) if len(positive) else 1e-5
    for ax, emb in zip(axes[0], kinds):
        data = summary[summary["embeddings"] == emb]
        d, d_eff = int(data["dim"].iloc[0]), float(data["d_eff"].iloc[0])
        for n, line in data.sort_values("tau").groupby("n"):
            _real_gap_line(ax, line, n, colours[n], fine)
        _gap_references(ax, fine, d, d_eff)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(y_low, 2.0 * float(summary["log_n"].max()))
        ax.set_xlabel("temperature τ   (logits cos θᵢ / τ)")
        ax.set_title(f"{NAMES.get(emb, emb)} (d = {d}, d_eff = {d_eff:.1f})")
    axes[0, 0].set_ylabel("entropy gap  log n − H  (nats)")
    handles = n_handles(colours)
    handles.append(mean_handle("real queries: mean gap (band: 95% CI)"))
    largest = "largest gap over all trials"
    handles.append(Line2D([], [], color="0.3", marker="^", mfc="none", ls="none", label=largest))
    handles += key_handles(REAL_GAP_KEYS)
    handles.append(star_handle("firebrick", f"g(1) = {G1:.4f}"))
    legend_below(fig, handles, ncol=3, y=0.02)
    fig.suptitle("Temperature and the entropy of cosine attention over real embeddings")
    return fig


D_EFF_STYLE = (0, (5, 2, 1, 2))  # the participation-ratio curve's dash pattern
# real_temperature_gap's theory lines, as `key_handles` rows
REAL_GAP_KEYS = (
    ("0.3", None, ":", 1.6, "Var(cos θ)/(2τ²), the spread measured per query"),
    ("0.3", None, "--", None, "exact worst case at this n"),
    ("k", None, None, 2.2, "worst case as n → ∞: g(τ)"),
    ("0.45", None, "-.", None, "synthetic random directions: 1/(2dτ²)"),
    ("tab:orange", None, D_EFF_STYLE, None, "1/(2 d_eff τ²), participation ratio"),
)


def _real_gap_line(ax, line: pd.DataFrame, n: int, colour, fine) -> None:
    """One n: the mean gap over real queries with its band, the largest gap of any trial, the
    prediction from each query's measured cosine spread (dotted) and the exact worst case at
    this n (dashed), which no trial can pass."""
    mean_line(ax, line["tau"], line, "gap", colour)
    ax.plot(line["tau"], line["gap_max"], "^", color=colour, mfc="none", ms=5, zorder=3)
    ax.plot(line["tau"], line["gap_var_pred_mean"], ":", color=colour, lw=1.6, zorder=2.8)
    ax.plot(fine, exact_gap(n, fine), "--", color=colour, lw=1.0, zorder=2.5)


def _gap_references(ax, fine, d: int, d_eff: float) -> None:
    """A panel's n-free references: g(τ) (the worst case as n → ∞), random directions in the
    embeddings' d and in their participation ratio d_eff (real embeddings are not isotropic, so
    d_eff is the fairer comparison), and the star at g(1)."""
    ax.plot(fine, asymptotic_gap(fine), color="k", lw=2.2, zorder=2)
    ax.plot(fine, random_direction_gap(d, fine), color="0.45", ls="-.", lw=1.3, zorder=2)
    d_eff_gap = 1 / (2 * d_eff * fine**2)
    ax.plot(fine, d_eff_gap, color="tab:orange", ls=D_EFF_STYLE, lw=1.1, zorder=2)
    ax.plot([1.0], [G1], color="firebrick", ms=13, zorder=5, **STAR)
