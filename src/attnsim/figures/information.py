"""Figures for the information-content kinds (SCIENCE.md section 2).

- `entropy_vs_scale`, `entropy_collapse` (logit_entropy): entropy against the logit scale,
  beside the small-scale prediction log n - sigma^2/2 and the random-energy-model asymptote;
- `temperature_gap` (temperature_entropy): the gap log n - H against tau, beside the exact
  finite-n worst case, g(tau) and the random-direction approximation;
- `gradient_vs_entropy` (init_gradient): ||do/ds||_F^2 and ||J||_F against entropy and scale.

Each takes the experiment's summary DataFrame and returns a matplotlib Figure. Theory
curves are drawn on a fine grid from `attnsim.theory.entropy`; measurements are means
with their 95% intervals.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from attnsim.figures.style import PALETTE
from attnsim.theory.entropy import asymptotic_gap, exact_gap, random_direction_gap, rem_entropy, rem_x, small_scale_entropy

G1 = float(asymptotic_gap(1.0))  # 0.4745...
COLLAPSE_X_MAX = 2.2


def _n_colours(values) -> dict:
    ns = sorted(set(int(v) for v in values))
    return dict(zip(ns, sns.color_palette(PALETTE, len(ns))))


def _fine(values, points: int = 240) -> np.ndarray:
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(lo, hi, points) if hi > lo else np.array([lo])


def _positive_band(ax, x, mean, low, high, colour, floor_fraction=1e-3):
    """CI band on a log axis: a lower end <= 0 is drawn at a small fraction of the mean."""
    low = np.maximum(np.asarray(low, dtype=float), np.asarray(mean, dtype=float) * floor_fraction)
    ax.fill_between(x, low, high, color=colour, alpha=0.25, lw=0)


def _yerr(frame: pd.DataFrame, metric: str, log: bool = False) -> np.ndarray:
    mean = frame[f"{metric}_mean"].to_numpy()
    lower = np.clip(mean - frame[f"{metric}_ci_low"].to_numpy(), 0, None)
    if log:
        lower = np.minimum(lower, mean * 0.999)
    upper = np.clip(frame[f"{metric}_ci_high"].to_numpy() - mean, 0, None)
    return np.vstack([lower, upper])


def _legend_below(fig, handles, ncol=None, y=0.0):
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, y), ncol=ncol or min(len(handles), 5), frameon=False, fontsize=8.5)


# --------------------------------------------------------------------------- logit_entropy


def _entropy_panels(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One panel for gaussian logits (d plays no role: the smallest d) and one per d for dot products."""
    panels = []
    gaussian = summary[summary["logits"] == "gaussian"]
    if len(gaussian):
        d0 = gaussian["d"].min()
        panels.append(("gaussian", gaussian[gaussian["d"] == d0]))
    dot = summary[summary["logits"] == "dot_product"]
    for d, part in dot.groupby("d"):
        panels.append((f"dot_product, d = {d}", part))
    return panels


def _sigma_of_scale(logits: str, scale: np.ndarray) -> np.ndarray:
    return scale if logits == "gaussian" else scale**2


def entropy_vs_scale(summary: pd.DataFrame):
    """Mean entropy vs scale (log x), a line per n, a panel per logit model, with theory curves."""
    panels = _entropy_panels(summary)
    colours = _n_colours(summary["n"])
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.4), squeeze=False, sharey=True)
    for ax, (title, data) in zip(axes[0], panels):
        logits = data["logits"].iloc[0]
        fine = _fine(data["scale"][data["scale"] > 0])
        sigma = _sigma_of_scale(logits, fine)
        for n, line in data[data["scale"] > 0].sort_values("scale").groupby("n"):
            colour = colours[n]
            ax.plot(line["scale"], line["entropy_mean"], "o-", color=colour, ms=3.5, lw=1.4, zorder=3)
            ax.fill_between(line["scale"], line["entropy_ci_low"], line["entropy_ci_high"], color=colour, alpha=0.3, lw=0, zorder=2)
            # log n - sigma^2/2 (small scale) and log n (1 - x^2) (REM, x < 1) are the same curve;
            # it reaches 0 at x = 1, where the REM's frozen phase (H = O(1), drawn at 0) takes over.
            liquid = np.asarray(rem_x(n, sigma)) < 1
            small = np.asarray(small_scale_entropy(n, sigma), dtype=float)
            ax.plot(fine, np.where(liquid, small, np.nan), "--", color=colour, lw=1.1, zorder=1)
            frozen = np.where(liquid, np.nan, rem_entropy(n, sigma))
            ax.plot(fine, frozen, "-.", color=colour, lw=1.0, alpha=0.8, zorder=1)
            ax.axhline(np.log(n), color=colour, ls=":", lw=1.0, zorder=0)
        ax.set_xscale("log")
        ax.set_ylim(bottom=-0.2)
        if logits == "gaussian":
            ax.set_title("gaussian logits  sᵢ ~ N(0, σ²),  σ = scale")
            ax.set_xlabel("logit std σ = scale")
        else:
            d = int(data["d"].iloc[0])
            ax.set_title(f"dot-product logits  sᵢ = q·kᵢ/√d,  d = {d}")
            ax.set_xlabel("std of the entries of q and kᵢ  (scale)")
            top = ax.secondary_xaxis("top", functions=(lambda s: np.square(s), lambda s: np.sqrt(np.clip(s, 0, None))))
            top.set_xlabel("effective logit std  σ_eff = scale²", fontsize=8.5)
            top.tick_params(labelsize=7.5)
    axes[0, 0].set_ylabel("entropy of the weights  H  (nats)")
    handles = [Line2D([], [], color=c, marker="o", ms=3.5, label=f"n = {n}") for n, c in colours.items()]
    handles += [
        Line2D([], [], color="0.3", marker="o", ms=3.5, label="measured mean (band: 95% CI)"),
        Line2D([], [], color="0.3", ls=":", label="upper bound log n"),
        Line2D([], [], color="0.3", ls="--", label="theory for x < 1: small-scale log n − σ²/2 = REM log n·(1 − x²)"),
        Line2D([], [], color="0.3", ls="-.", label="REM frozen phase x = σ/√(2 log n) ≥ 1: H = O(1), drawn at 0"),
    ]
    _legend_below(fig, handles, ncol=min(len(handles), 5), y=0.02)
    fig.suptitle("Entropy of softmax attention vs logit scale: measured (mean, 95% CI) against small-scale and random-energy-model theory", y=1.02)
    fig.tight_layout()
    return fig


def entropy_collapse(summary: pd.DataFrame):
    """H / log n vs x = sigma_eff / sqrt(2 log n) for every n and logit model, against 1 - x^2."""
    data = summary[np.isfinite(summary["rem_x"])].copy()
    shown = data[data["rem_x"] <= COLLAPSE_X_MAX]
    hidden = data[data["rem_x"] > COLLAPSE_X_MAX]
    colours = _n_colours(data["n"])
    markers = {"gaussian": "o", "dot_product": "s"}
    fig, ax = plt.subplots(figsize=(7.2, 5.0))
    x = np.linspace(0, COLLAPSE_X_MAX, 400)
    ax.plot(x, np.where(x < 1, 1 - x**2, 0.0), color="k", lw=1.6, label="REM limit (n → ∞):  1 − x² for x < 1, 0 beyond", zorder=1)
    ax.axvline(1.0, color="0.5", ls=":", lw=1)
    ax.text(1.02, 0.95, "freezing point x = 1", color="0.35", fontsize=8, va="top")
    for (logits, n), part in shown.sort_values("rem_x").groupby(["logits", "n"]):
        ax.errorbar(
            part["rem_x"], part["entropy_norm_mean"], yerr=_yerr(part, "entropy_norm"), fmt=markers.get(logits, "^"), color=colours[n], ms=4.5,
            mfc=colours[n] if logits == "gaussian" else "none", elinewidth=0.9, capsize=1.5, lw=0, zorder=3,
        )
    ax.set_xlim(-0.03, COLLAPSE_X_MAX)
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel("x = σ_eff / √(2 log n)   (σ_eff = scale for gaussian, scale² for dot-product logits)")
    ax.set_ylabel("normalised entropy  H / log n   (mean, 95% CI)")
    ax.set_title("Entropy collapse across n: measured H / log n vs the random-energy-model limit")
    handles = [Line2D([], [], color=c, marker="o", ls="none", label=f"n = {n}") for n, c in colours.items()]
    for logits in shown["logits"].unique():
        handles.append(Line2D([], [], color="0.3", marker=markers.get(logits, "^"), mfc="0.3" if logits == "gaussian" else "none", ls="none", label=f"{logits.replace('_', '-')} logits"))
    handles.append(Line2D([], [], color="k", lw=1.6, label="REM limit 1 − x² (0 for x ≥ 1)"))
    ax.legend(handles=handles, loc="upper right", fontsize=8, framealpha=0.9)
    notes = ["finite n approaches the limit slowly:", "measured points stay above it near x = 1", "and H / log n = O(1/log n) beyond."]
    if len(hidden):
        notes += ["", f"{len(hidden)} points with x > {COLLAPSE_X_MAX} not shown", f"(all with H / log n ≤ {hidden['entropy_norm_mean'].max():.2f})"]
    ax.text(0.015, 0.03, "\n".join(notes), transform=ax.transAxes, fontsize=7.5, color="0.3", va="bottom")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- temperature_entropy


def temperature_gap(summary: pd.DataFrame):
    """Gap log n - H vs tau (log-log), a colour per n, a panel per d, against the worst-case bounds."""
    ds = sorted(summary["d"].unique())
    colours = _n_colours(summary["n"])
    fig, axes = plt.subplots(1, len(ds), figsize=(5.8 * len(ds), 4.8), squeeze=False, sharey=True)
    fine = _fine(summary["tau"])
    g = np.asarray(asymptotic_gap(fine), dtype=float)
    positive = summary["gap_mean"][summary["gap_mean"] > 0]
    y_low = 0.5 * float(positive.min()) if len(positive) else 1e-4
    y_high = 2.0 * float(summary["log_n"].max())
    for ax, d in zip(axes[0], ds):
        data = summary[summary["d"] == d]
        for n, line in data.sort_values("tau").groupby("n"):
            colour = colours[n]
            ax.plot(line["tau"], line["gap_mean"], "o-", color=colour, ms=3.5, lw=1.4, zorder=3)
            _positive_band(ax, line["tau"], line["gap_mean"], line["gap_ci_low"], line["gap_ci_high"], colour)
            ax.plot(line["tau"], line["gap_max"], "^", color=colour, mfc="none", ms=5, mew=1.0, zorder=3)
            ax.plot(fine, exact_gap(n, fine), "--", color=colour, lw=1.2, zorder=2.5)  # on top of g(tau): they coincide below log n
        ax.plot(fine, g, color="k", lw=2.2, zorder=2)
        ax.plot(fine, random_direction_gap(d, fine), color="0.45", ls="-.", lw=1.2, zorder=2)
        ax.plot([1.0], [G1], marker="*", color="firebrick", ms=13, mec="k", mew=0.5, zorder=5, ls="none")
        ax.annotate(f"g(1) = {G1:.4f}", xy=(1.0, G1), xytext=(1.6, G1 * 2.6), fontsize=8.5, color="firebrick", arrowprops=dict(arrowstyle="->", color="firebrick", lw=0.8))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(y_low, y_high)
        ax.set_xlabel("temperature τ   (logits sᵢ = cos θᵢ / τ)")
        ax.set_title(f"query and keys uniform on the unit sphere of $\\mathbb{{R}}^{{{d}}}$  (d = {d})")
    axes[0, 0].set_ylabel("entropy gap  log n − H  (nats)")
    handles = [Line2D([], [], color=c, marker="o", ms=3.5, label=f"n = {n}") for n, c in colours.items()]
    handles += [
        Line2D([], [], color="0.3", marker="o", ms=3.5, label="random directions: mean (band: 95% CI)"),
        Line2D([], [], color="0.3", marker="^", mfc="none", ls="none", label="largest gap over all trials"),
        Line2D([], [], color="0.3", ls="--", label="exact worst case at this n (any cosines; joins g(τ) below log n)"),
        Line2D([], [], color="k", lw=2.2, label="worst case as n → ∞:  g(τ)"),
        Line2D([], [], color="0.45", ls="-.", label="random-direction approx. 1/(2dτ²) (valid while small)"),
        Line2D([], [], color="firebrick", marker="*", ms=10, mec="k", mew=0.5, ls="none", label=f"g(1) = {G1:.4f}: at τ = 1 H ≥ log n − 0.4745"),
    ]
    _legend_below(fig, handles, ncol=3, y=0.02)
    fig.suptitle("How far temperature τ lets attention entropy fall below log n: random directions vs the worst case over all configurations", y=1.02)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- init_gradient


def gradient_vs_entropy(summary: pd.DataFrame):
    """grad_sq and jacobian_fro (log y) against entropy (top) and against scale (bottom), a colour per n."""
    colours = _n_colours(summary["n"])
    metrics = (
        ("grad_sq", "grad_sq_uniform", "‖∂o/∂s‖²_F = Σᵢ pᵢ² ‖vᵢ − o‖²"),
        ("jacobian_fro", "jacobian_fro_uniform", "‖J‖_F = ‖diag(p) − p pᵀ‖_F"),
    )
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.6))
    data = summary.sort_values("scale")
    for col, (metric, uniform, label) in enumerate(metrics):
        top, bottom = axes[0, col], axes[1, col]
        for n, line in data.groupby("n"):
            colour = colours[n]
            top.errorbar(
                line["entropy_mean"], line[f"{metric}_mean"], xerr=_yerr(line, "entropy", log=True), yerr=_yerr(line, metric, log=True),
                fmt="o-", color=colour, ms=3.5, lw=1.2, elinewidth=0.8, capsize=1.5, zorder=3,
            )
            top.plot([line["log_n"].iloc[0]], [line[uniform].iloc[0]], marker="*", color=colour, ms=12, mec="k", mew=0.5, ls="none", zorder=4)
            positive = line[line["scale"] > 0]
            bottom.plot(positive["scale"], positive[f"{metric}_mean"], "o-", color=colour, ms=3.5, lw=1.2, zorder=3)
            _positive_band(bottom, positive["scale"], positive[f"{metric}_mean"], positive[f"{metric}_ci_low"], positive[f"{metric}_ci_high"], colour)
            if f"{metric}_median" in positive:  # a median that underflowed to exactly 0 is not drawn
                median = positive[f"{metric}_median"].where(positive[f"{metric}_median"] > 0)
                bottom.plot(positive["scale"], median, "--", color=colour, lw=1.0, zorder=2)
            bottom.axhline(line[uniform].iloc[0], color=colour, ls=":", lw=1.0, zorder=1)
        for ax in (top, bottom):
            ax.set_yscale("log")
            ax.set_ylabel(f"{label}\n(mean, 95% CI)")
        means = data[f"{metric}_mean"][data[f"{metric}_mean"] > 0]
        if len(means):  # the means set the range; medians far below leave the panel (see the note)
            bottom.set_ylim(means.min() / 30, max(data[f"{metric}_ci_high"].max(), data[uniform].max()) * 3)
        top.set_xscale("log")
        top.set_xlabel("entropy of the weights  H  (nats, mean with 95% CI; log scale)")
        top.set_title(f"{'gradient of the output w.r.t. the logits' if metric == 'grad_sq' else 'softmax Jacobian'} vs entropy")
        bottom.set_xscale("log")
        bottom.set_xlabel("std of the entries of q and kᵢ  (scale)")
        bottom.set_title(f"{'gradient' if metric == 'grad_sq' else 'Jacobian'} vs weight scale")
        sec = bottom.secondary_xaxis("top", functions=(lambda s: np.square(s), lambda s: np.sqrt(np.clip(s, 0, None))))
        sec.set_xlabel("effective logit std σ_eff = scale²", fontsize=8.5)
        sec.tick_params(labelsize=7.5)
    d = ", ".join(str(v) for v in sorted(summary["d"].unique()))
    handles = [Line2D([], [], color=c, marker="o", ms=3.5, label=f"n = {n}") for n, c in colours.items()]
    handles += [
        Line2D([], [], color="0.3", marker="*", ms=10, mec="k", mew=0.5, ls="none", label="uniform weights (H = log n): (d/n)(1 − 1/n) and √((1 − 1/n)/n)"),
        Line2D([], [], color="0.3", ls=":", label="uniform-weight value (scale → 0)"),
    ]
    if "grad_sq_median" in summary:
        handles.append(Line2D([], [], color="0.3", ls="--", label="median over trials"))
        fig.text(
            0.5, -0.035, "Bottom row: at large scale the mean is set by rare near-ties of the two largest logits and falls like 1/σ_eff;\n"
            "the typical trial (median, dashed) falls exponentially, out of the panels (below 1e-300 at the largest scales).",
            ha="center", va="top", fontsize=8.5, color="0.25",
        )
    _legend_below(fig, handles, ncol=min(len(handles), 6), y=0.01)
    fig.suptitle(f"Attention at initialisation (dot-product logits, values vᵢ ~ N(0, I_d), d = {d}):\nthe logit gradient and the softmax Jacobian vanish as the entropy goes to 0", y=1.01)
    fig.tight_layout()
    return fig
