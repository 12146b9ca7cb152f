"""Figure of `real_precision` (docs/science.md §11.7): measured over predicted error per layer of
all-MiniLM-L6-v2, heads pooled, per format and site."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from attnsim.figures.common import legend_below
from attnsim.figures.style import figure_function
from attnsim.kinds.low_precision_figures import (
    atlas,
    format_colours,
    format_handles,
    ratio_handles,
)
from attnsim.kinds.real_precision.claims import THRESHOLDS, in_regime, per_layer


@figure_function
def real_precision_layers(summary):
    """One panel per site: per layer, the mean over its heads of measured / predicted error (the
    rounding model filled, the essay's i.i.d. delta method hollow) with the between-head 95%
    interval, colour = format; grey = points outside the model's regime included."""
    sites = [s for s in SITES if s in set(summary["site"])]
    cols = min(3, len(sites))
    rows_ = -(-len(sites) // cols)
    size = (4.8 * cols, 3.6 * rows_)
    fig, axes = plt.subplots(rows_, cols, figsize=size, squeeze=False, sharey=True)
    colours = format_colours(summary["format"])
    offsets = dict(zip(colours, np.linspace(-0.2, 0.2, len(colours))))
    tol = THRESHOLDS.ratio_tolerance
    for ax in list(axes.flat)[len(sites) :]:
        ax.set_visible(False)
    for ax, site in zip(axes.flat, sites):
        part = summary[summary["site"] == site]
        for fmt, colour in colours.items():
            rows = part[part["format"] == fmt]
            if not rows.empty:
                _layer_ratios(ax, rows, colour, offsets[fmt])
        ax.axhline(1.0, color="0.2", lw=0.9)
        ax.axhspan(1 - tol, 1 + tol, color="0.85", alpha=0.6, lw=0)
        ax.set_yscale("log")
        ax.set_xlabel("layer")
        ax.set_title(f"site {site}", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("measured / predicted, mean over heads")
    handles = format_handles(colours)
    outside = "some heads outside the model's regime"
    handles += ratio_handles("÷ rounding model", "÷ i.i.d. delta, κ pooled", outside)
    fig.suptitle(
        "Trained heads of all-MiniLM-L6-v2 with one rounding: measured over predicted error per "
        "layer",
    )
    legend_below(fig, handles, ncol=4, y=0.0)
    return fig


SITES = ("logits", "qk", "qk_rotated", "probs", "output")  # the panels, in this order


def _layer_ratios(ax, rows: pd.DataFrame, colour, offset: float) -> None:
    """One format at one site: per layer, the mean over heads of measured / rounding model
    (filled; grey where some heads are outside its regime, so a miss there is expected) and of
    measured / i.i.d. delta (hollow), each with its between-head 95% interval."""
    inside = bool(in_regime(rows).all())
    for column, marker, face in (
        ("ratio_model_mean", "o", colour if inside else "0.75"),
        ("ratio_iid_mean", "s", "none"),
    ):
        if rows[column].isna().all():
            continue
        layers = per_layer(rows, column)
        x = layers["layer"].to_numpy(float) + offset
        y = layers["value"].to_numpy(float)
        below, above = np.clip(y - layers["low"], 0, None), np.clip(layers["high"] - y, 0, None)
        yerr = np.nan_to_num(np.vstack([below, above]))
        ax.errorbar(x, y, yerr=yerr, fmt=marker, color=colour, mfc=face, ms=5, capsize=2)


@figure_function
def real_precision_atlas(summary):
    """The low-precision atlas of the MiniLM heads (`kinds.low_precision_figures.atlas`): one
    marker per head's point, marker = layer; the block-scaled model's tolerance per format."""
    from attnsim.kernels.blockscale import within_bin_tolerance
    from attnsim.kernels.rounding import significand_bits

    def tolerance(fmt: str) -> float:
        return THRESHOLDS.ratio_tolerance + within_bin_tolerance(significand_bits(fmt))

    return atlas(summary, "layer", "layer", tolerance, THRESHOLDS.kappa_eff_max)
