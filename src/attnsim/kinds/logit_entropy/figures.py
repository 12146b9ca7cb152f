"""Figures of `logit_entropy` (docs/science.md §3): the entropy against the logit scale beside the
small-scale prediction log n - sigma^2/2 and the random-energy-model asymptote, and the collapse
onto 1 - x^2. Each takes the experiment's summary DataFrame and returns a matplotlib Figure;
measurements are means with their 95% intervals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures import boundaries as boundary_marks
from attnsim.figures.common import (
    MAX_LINES,
    MAX_PANELS,
    MAX_POINTS,
    binned,
    fine_grid,
    key_handles,
    legend_below,
    mean_errorbar,
    n_colours,
    n_handles,
    shown_note,
    spread,
)
from attnsim.figures.style import figure_function
from attnsim.theory.entropy import (
    frozen_entropy,
    gaussian_max_level,
    rem_entropy,
    rem_x,
    small_scale_entropy,
)

COLLAPSE_X_MAX = 2.2


def _entropy_panels(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One panel for gaussian logits (d plays no role: the smallest d) and one per d for dot
    products (at most MAX_PANELS in all)."""
    panels = []
    gaussian = summary[summary["logits"] == "gaussian"]
    if len(gaussian):
        d0 = gaussian["d"].min()
        panels.append(("gaussian", gaussian[gaussian["d"] == d0]))
    dot = summary[summary["logits"] == "dot_product"]
    for d in spread(dot["d"], MAX_PANELS - len(panels)):  # a large sweep: d spread over its range
        panels.append((f"dot_product, d = {d}", dot[dot["d"] == d]))
    return panels


def _sigma_of_scale(logits: str, scale: np.ndarray) -> np.ndarray:
    return scale if logits == "gaussian" else scale**2


BINNED_NOTE = f"lines of more than {MAX_POINTS} scales: binned (mean; band: CIs' range)"
# entropy_vs_scale's legend entries after the colours, as `key_handles` rows
_SMALL_SCALE_KEY = "theory for x < 1: small-scale log n − σ²/2 = REM log n·(1 − x²)"
_FROZEN_KEY = "REM frozen phase x = σ/√(2 log n) ≥ 1: H = O(1), drawn at 0"
SCALE_KEYS = (
    ("0.3", None, ":", None, "upper bound log n"),
    ("0.3", None, "--", None, _SMALL_SCALE_KEY),
    ("0.3", None, "-.", None, _FROZEN_KEY),
)


@figure_function
def entropy_vs_scale(summary: pd.DataFrame, boundaries: Sequence[Mapping[str, Any]] = ()):
    """Mean entropy vs scale (log x), a line per n, a panel per logit model, with theory curves;
    the small-scale law's located `boundaries` along the scale in their logit model's panel."""
    panels = _entropy_panels(summary)
    ns = spread(summary["n"], MAX_LINES)  # a large sweep: n spread over its range, said below
    colours = n_colours(ns)
    dot_ds = set(summary.loc[summary["logits"] == "dot_product", "d"])
    notes = [
        shown_note("n", ns, summary["n"]),
        shown_note("d", [t for t, _ in panels if t.startswith("dot")], dot_ds),
    ]
    size = (5.6 * len(panels), 4.4)
    fig, axes = plt.subplots(1, len(panels), figsize=size, squeeze=False, sharey=True)
    for ax, (_title, data) in zip(axes[0], panels):
        if _entropy_lines(ax, data, ns, colours):
            notes.append(BINNED_NOTE)
        _label_scale_panel(ax, data)
    axes[0, 0].set_ylabel("entropy of the weights  H  (nats)")
    handles = n_handles(colours)
    measured = "measured mean (band: 95% CI)"
    handles.append(Line2D([], [], color="0.3", marker="o", ms=3.5, label=measured))
    handles += key_handles(SCALE_KEYS)
    if boundaries:
        handles += _scale_boundaries(axes[0], panels, boundaries)
    legend_below(fig, handles, ncol=min(len(handles), 5), y=0.02)
    shown = "; ".join(dict.fromkeys(note for note in notes if note))
    fig.suptitle(
        "Entropy of softmax attention vs logit scale: measured (mean, 95% CI) against small-scale "
        "and random-energy-model theory" + (f"\n(shown: {shown})" if shown else "")
    )
    return fig


def _scale_boundaries(axes, panels, boundaries) -> list:
    """Each located boundary along the scale in the panel of its logit model (for dot products,
    of its d), where the line of its n is; their legend entries (`figures.boundaries.draw`: one
    along another axis, or whose panel is not drawn, only named there)."""
    by_panel: dict[int, list] = {}
    for record in boundaries:
        at = record.get("at") or {}
        found = [
            i
            for i, (_title, data) in enumerate(panels)
            if at.get("logits") == data["logits"].iloc[0]
            and (at.get("logits") == "gaussian" or at.get("d") == data["d"].iloc[0])
        ]
        by_panel.setdefault(found[0] if found else 0, []).append(record)

    def x_of(record: Mapping[str, Any], scale: float) -> float:
        return float(scale) if record.get("axis") == "scale" and scale > 0 else math.nan

    handles = []
    for i, records in sorted(by_panel.items()):
        keys = ("n",) if panels[i][0] == "gaussian" else ("n", "d")
        handles += boundary_marks.draw(axes[i], records, x_of, keys)
    return handles


def _entropy_lines(ax, data: pd.DataFrame, ns, colours) -> bool:
    """One panel: per n shown, the measured mean entropy with its 95% band against the theory
    (the small-scale curve up to the freezing point, the REM's frozen phase beyond, log n above);
    a line of more than MAX_POINTS scales is binned. Returns whether any was."""
    logits = data["logits"].iloc[0]
    fine = fine_grid(data["scale"][data["scale"] > 0])
    sigma = _sigma_of_scale(logits, fine)
    drawn = data[(data["scale"] > 0) & data["n"].isin(ns)].sort_values("scale")
    thinned = False
    for n, line in drawn.groupby("n"):
        colour = colours[n]
        if len(line) > MAX_POINTS:
            thinned = True
            line = binned(line, "scale", "entropy", log=True)
        x = line["scale"]
        ax.plot(x, line["entropy_mean"], "o-", color=colour, ms=3.5, lw=1.4, zorder=3)
        band = {"color": colour, "alpha": 0.3, "lw": 0, "zorder": 2}
        ax.fill_between(x, line["entropy_ci_low"], line["entropy_ci_high"], **band)
        # log n - sigma^2/2 (small scale) and log n (1 - x^2) (REM, x < 1) are the same curve;
        # it reaches 0 at x = 1, where the REM's frozen phase (H = O(1), drawn at 0) takes over.
        liquid = np.asarray(rem_x(n, sigma)) < 1
        small = np.asarray(small_scale_entropy(n, sigma), dtype=float)
        ax.plot(fine, np.where(liquid, small, np.nan), "--", color=colour, lw=1.1, zorder=1)
        frozen = np.where(liquid, np.nan, rem_entropy(n, sigma))
        ax.plot(fine, frozen, "-.", color=colour, lw=1.0, alpha=0.8, zorder=1)
        ax.axhline(np.log(n), color=colour, ls=":", lw=1.0, zorder=0)
    return thinned


def _label_scale_panel(ax, data: pd.DataFrame) -> None:
    """A panel's logit model in its title and x axis; for dot products the effective logit std
    (scale²) along the top, the sigma the theory is written in."""
    ax.set_xscale("log")
    ax.set_ylim(bottom=-0.2)
    if data["logits"].iloc[0] == "gaussian":
        ax.set_title("gaussian logits  sᵢ ~ N(0, σ²),  σ = scale")
        ax.set_xlabel("logit std σ = scale")
        return
    d = int(data["d"].iloc[0])
    ax.set_title(f"dot-product logits  sᵢ = q·kᵢ/√d,  d = {d}")
    ax.set_xlabel("std of the entries of q and kᵢ  (scale)")
    top = ax.secondary_xaxis(
        "top", functions=(lambda s: np.square(s), lambda s: np.sqrt(np.clip(s, 0, None)))
    )
    top.set_xlabel("effective logit std  σ_eff = scale²", fontsize=8.5)
    top.tick_params(labelsize=7.5)


def _frozen_lines(ax, ns, colours) -> None:
    """The frozen phase's Poisson-Dirichlet prediction at each n shown (docs/science.md §3.4), as
    H / log n against x, from sigma = 1.25 b_n (m = 0.8: nearer the freezing point it is off by
    O(1) at these n)."""
    for n in ns:
        if n < 2:
            continue
        level, log_n = gaussian_max_level(n), np.log(n)
        sigma = np.linspace(1.25 * level, COLLAPSE_X_MAX * np.sqrt(2 * log_n), 200)
        ax.plot(
            sigma / np.sqrt(2 * log_n),
            frozen_entropy(n, sigma) / log_n,
            color=colours[n],
            ls="--",
            lw=1,
            zorder=2,
        )


@figure_function
def entropy_collapse(summary: pd.DataFrame):
    """H / log n vs x = sigma_eff / sqrt(2 log n) for every n and logit model, against 1 - x^2."""
    columns = [
        "logits",
        "n",
        "rem_x",
        *(f"entropy_norm_{s}" for s in ("mean", "ci_low", "ci_high")),
    ]
    data = summary.loc[np.isfinite(summary["rem_x"]), columns]
    ns = spread(data["n"], MAX_LINES)  # a large sweep: n spread over its range, said below
    shown = data[(data["rem_x"] <= COLLAPSE_X_MAX) & data["n"].isin(ns)]
    colours = n_colours(ns)
    fig, ax = plt.subplots(figsize=(7.2, 5.0))
    _rem_limit(ax)
    _frozen_lines(ax, ns, colours)
    thinned = _collapse_points(ax, shown, colours)
    ax.set_xlim(-0.03, COLLAPSE_X_MAX)
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel(
        "x = σ_eff / √(2 log n)   (σ_eff = scale for gaussian, scale² for dot-product logits)"
    )
    ax.set_ylabel("normalised entropy  H / log n   (mean, 95% CI)")
    ax.set_title("Entropy collapse across n: measured H / log n vs the random-energy-model limit")
    handles = _collapse_handles(colours, shown["logits"].unique())
    ax.legend(handles=handles, loc="upper right", fontsize=8, framealpha=0.9)
    notes = "\n".join(_collapse_notes(data, ns, thinned))
    ax.text(0.015, 0.03, notes, transform=ax.transAxes, fontsize=7.5, color="0.3", va="bottom")
    return fig


# entropy_collapse's marker per logit model (another model: triangles); gaussian filled
COLLAPSE_MARKERS = {"gaussian": "o", "dot_product": "s"}


def _rem_limit(ax) -> None:
    """The random-energy-model limit every n tends to, 1 − x² up to the freezing point x = 1 and
    0 beyond: what the measured points collapse onto."""
    x = np.linspace(0, COLLAPSE_X_MAX, 400)
    label = "REM limit (n → ∞):  1 − x² for x < 1, 0 beyond"
    ax.plot(x, np.where(x < 1, 1 - x**2, 0.0), color="k", lw=1.6, label=label, zorder=1)
    ax.axvline(1.0, color="0.5", ls=":", lw=1)
    ax.text(1.02, 0.95, "freezing point x = 1", color="0.35", fontsize=8, va="top")


def _collapse_points(ax, shown: pd.DataFrame, colours) -> bool:
    """The measured H / log n with its 95% interval, a colour per n and a marker per logit model
    (open for dot products), binned in x where a line has more than MAX_POINTS points; returns
    whether any was binned (the note says so)."""
    thinned = False
    for (logits, n), part in shown.sort_values("rem_x").groupby(["logits", "n"]):
        if len(part) > MAX_POINTS:
            thinned = True
            part = binned(part, "rem_x", "entropy_norm")
        mean_errorbar(
            ax,
            part["rem_x"],
            part,
            "entropy_norm",
            fmt=COLLAPSE_MARKERS.get(logits, "^"),
            color=colours[n],
            ms=4.5,
            mfc=colours[n] if logits == "gaussian" else "none",
            elinewidth=0.9,
            capsize=1.5,
            lw=0,
            zorder=3,
        )
    return thinned


def _collapse_handles(colours, models) -> list[Line2D]:
    """A colour per n, a marker per logit model, then the limit and the frozen-phase lines."""
    handles = [
        Line2D([], [], color=c, marker="o", ls="none", label=f"n = {n}") for n, c in colours.items()
    ]
    for logits in models:
        marker = COLLAPSE_MARKERS.get(logits, "^")
        face = "0.3" if logits == "gaussian" else "none"
        label = f"{logits.replace('_', '-')} logits"
        handles.append(Line2D([], [], color="0.3", marker=marker, mfc=face, ls="none", label=label))
    handles.append(Line2D([], [], color="k", lw=1.6, label="REM limit 1 − x² (0 for x ≥ 1)"))
    frozen = "frozen phase at this n: ψ(1) − ψ(1 − b_n/σ)"
    handles.append(Line2D([], [], color="0.3", ls="--", lw=1, label=frozen))
    return handles


def _collapse_notes(data: pd.DataFrame, ns, thinned: bool) -> list[str]:
    """What the reader needs to read the collapse right: why finite n stays above the limit, and
    what is not drawn (n left out, points binned, points beyond the x range)."""
    notes = [
        "finite n approaches the limit slowly:",
        "measured points stay above it near x = 1",
        "and H / log n = O(1/log n) beyond.",
    ]
    if len(ns) < data["n"].nunique():
        notes += ["", shown_note("n", ns, data["n"]) + " shown"]
    if thinned:
        notes += [f"more than {MAX_POINTS} points per n: binned in x", "(mean; bars: CIs' range)"]
    hidden = data[data["rem_x"] > COLLAPSE_X_MAX]
    if len(hidden):
        notes += [
            "",
            f"{len(hidden)} points with x > {COLLAPSE_X_MAX} not shown",
            f"(all with H / log n ≤ {hidden['entropy_norm_mean'].max():.2f})",
        ]
    return notes
