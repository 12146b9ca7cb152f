"""The low-precision atlas shared by the precision kinds (docs/science.md §11.9): per site, the
measured error and its ratio to the block-correlated model over element format x scaling scheme,
synthetic rows and MiniLM heads drawn alike."""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.lines import Line2D

from attnsim.figures.common import legend_below
from attnsim.figures.style import palette
from attnsim.kernels.rounding import FORMAT_NAMES

SITES = ("logits", "qk", "qk_rotated", "probs", "output")
SHORT = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "float8_e4m3fn": "e4m3",
    "float8_e5m2": "e5m2",
    "float6_e2m3fn": "e2m3",
    "float6_e3m2fn": "e3m2",
    "float4_e2m1fn": "e2m1",
}


def scheme(row) -> str:
    """A point's scaling scheme in a few characters: plain, or groups + scale (+ acc16, + smooth,
    + the keys' shared mean)."""
    if row["granularity"] == "none":
        name = "plain"
    else:
        name = f"{row['granularity']} {row['scale_type']}"
    name += " acc16" if row["accumulation"] == "fp16" else ""
    name += " smooth" if row.get("smoothing", "none") == "mean" else ""
    key_mean = row.get("key_mean", 0.0)
    return name + (f" k̄={key_mean:g}" if key_mean else "")


def format_colours(formats) -> dict:
    """A colour per element format present, in FORMAT_NAMES' order, so every precision figure
    gives a format the same colour."""
    present = [f for f in FORMAT_NAMES if f in set(formats)]
    return dict(zip(present, palette("colorblind", len(present))))


def format_handles(colours: dict) -> list[Artist]:
    """The legend entries of `format_colours`, a format by its short name."""
    return [
        Line2D([], [], color=c, marker="o", ls="none", label=SHORT.get(f, f))
        for f, c in colours.items()
    ]


def errorbar(ax, x, y, low, high, **kwargs):
    """A mean with its 95% interval given by its ends (clipped at the mean: a ratio's interval
    from the delta method may not contain a rounded mean)."""
    y, low, high = (np.asarray(a, dtype=float) for a in (y, low, high))
    err = np.vstack([np.clip(y - low, 0, None), np.clip(high - y, 0, None)])
    ax.errorbar(x, y, yerr=err, capsize=2, elinewidth=0.8, **kwargs)


def ratio_handles(model: str, iid: str, outside: str, iid_ls: str = "none") -> list[Line2D]:
    """The legend of the two predictions' ratios: both precision kinds mark them alike (filled
    circle: the rounding model, open square: the i.i.d. delta method, grey: outside the model's
    regime), so a reader of one kind's figure can read the other's."""
    return [
        Line2D([], [], color="0.3", marker="o", ls="none", label=model),
        Line2D([], [], color="0.3", marker="s", mfc="none", ls=iid_ls, label=iid),
        Line2D([], [], color="0.3", marker="o", mfc="0.75", ls="none", label=outside),
    ]


def summary_errorbar(ax, x, frame: pd.DataFrame, metric: str, **kwargs):
    """`errorbar` of a summary metric, read from its `_mean`, `_ci_low` and `_ci_high` columns:
    the precision figures draw most metrics so, and one place names the columns."""
    low, high = frame[f"{metric}_ci_low"], frame[f"{metric}_ci_high"]
    errorbar(ax, x, frame[f"{metric}_mean"], low, high, **kwargs)


def atlas(
    summary: pd.DataFrame,
    group: str,
    group_label: str,
    tolerance: Callable[[str], float],
    kappa_limit: float,
):
    """Columns: site. Top row: the measured effective error variance mean ||o~ - o||^2 / mean
    sum p^2 ||v - o||^2 (log scale, 95% interval) per scaling scheme and element format, with the
    first-order limit `kappa_limit`. Bottom row: measured over the model's prediction (95%
    interval) with the format's `tolerance` (ticks). Marker = the point's `group` value."""
    data = summary[summary["site"].isin(SITES)].copy()
    data["scheme"] = data.apply(scheme, axis=1)
    schemes = sorted(data["scheme"].unique(), key=lambda s: (not s.startswith("plain"), s))
    sites = [s for s in SITES if (data["site"] == s).any()]
    colours = format_colours(data["format"])
    present = list(colours)
    offsets = dict(zip(present, np.linspace(-0.25, 0.25, len(present))))
    groups = sorted(data[group].unique())
    markers = dict(zip(groups, "os^Dv<>ph*"))
    width = max(4.8, 0.6 * len(schemes) + 1.6)
    fig, axes = plt.subplots(
        2, len(sites), figsize=(width * len(sites), 6.8), squeeze=False, sharex="col"
    )
    for col, site in enumerate(sites):
        top, bottom = axes[0, col], axes[1, col]
        for (fmt, value), line in data[data["site"] == site].groupby(["format", group]):
            x = np.array([schemes.index(s) for s in line["scheme"]]) + offsets[fmt]
            style = dict(fmt=markers.get(value, "o"), color=colours[fmt], ms=4, ls="none")
            for ax, column in ((top, "kappa_measured"), (bottom, "ratio_model")):
                mean = column if column == "kappa_measured" else f"{column}_mean"
                errorbar(
                    ax, x, line[mean], line[f"{column}_ci_low"], line[f"{column}_ci_high"], **style
                )
            for y in (1 - tolerance(fmt), 1 + tolerance(fmt)):
                bottom.hlines(np.full(len(x), y), x - 0.1, x + 0.1, color=colours[fmt], lw=0.6)
        top.axhline(kappa_limit, color="0.3", ls="--", lw=0.8)
        top.set_yscale("log")
        bottom.axhline(1.0, color="0.2", lw=0.9)
        top.tick_params(axis="x", labelbottom=False)  # the same schemes as the panel below
        # each label ends at its scheme's tick (rotated about that end, not about its centre)
        bottom.set_xticks(range(len(schemes)), schemes, rotation=30, ha="right", fontsize=7)
        for label in bottom.get_xticklabels():
            label.set_rotation_mode("anchor")
        bottom.set_xlim(-0.5, len(schemes) - 0.5)
        for ax in (top, bottom):  # lines between the schemes, none through a scheme's points
            ax.grid(False, axis="x")
            for edge in np.arange(0.5, len(schemes) - 0.5):
                ax.axvline(edge, color="0.85", lw=0.8, zorder=0)
        top.set_title(f"site {site}", fontsize=9)
    axes[0, 0].set_ylabel("measured κ (log)")
    axes[1, 0].set_ylabel("measured / model")
    handles: list[Artist] = format_handles(colours)
    if len(groups) > 1:  # one value: named in the title, no marker to tell apart
        handles += [
            Line2D(
                [], [], color="0.3", marker=markers[g], ls="none", label=f"{group_label} = {g:g}"
            )
            for g in groups
            if g in markers
        ]
    handles.append(
        Line2D([], [], color="0.3", ls="--", label=f"first-order limit κ = {kappa_limit:g}")
    )
    handles.append(Line2D([], [], color="0.3", lw=0.6, label="the format's tolerance (bottom)"))
    legend_below(fig, handles, ncol=min(len(handles), 4))
    only = f"; all at {group_label} = {groups[0]:g}" if len(groups) == 1 else ""
    title = (
        "Block-scaled rounding per site and scaling scheme: the measured κ = mean ‖õ−o‖² / mean "
        "Σp²‖v−o‖² (top; dashed: where the first order ends) and its ratio to the "
        f"block-correlated model (bottom; ticks: the tolerance, §11.9){only}"
    )
    fig.suptitle(fill(title, fig), fontsize=9)
    return fig


def fill(text: str, fig, fontsize: float = 9) -> str:
    """`text` wrapped to the figure's width at `fontsize` (about 0.55 em a character), so a long
    title is never cut at the canvas's edges (constrained layout does not wrap)."""
    import textwrap

    chars = int(fig.get_figwidth() * 72 / (0.55 * fontsize))
    return "\n".join(textwrap.wrap(text, max(40, chars)))
