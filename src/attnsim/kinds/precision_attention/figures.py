"""Figures of `precision_attention` (docs/science.md §11): the measured error over both predictions
per format, site and logit scale; the rotation's gain on outlier features; the bias."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import legend_below
from attnsim.figures.style import figure_function, palette
from attnsim.kernels.rounding import FORMAT_NAMES
from attnsim.kinds.precision_attention.claims import THRESHOLDS, in_model_regime

SHORT = {"bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def _colours(formats) -> dict:
    present = [f for f in FORMAT_NAMES if f in set(formats)]
    return dict(zip(present, palette("colorblind", len(present))))


def _empty(text: str):
    fig, ax = plt.subplots(figsize=(5.5, 2.0))
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=10)
    ax.set_axis_off()
    return fig


def _errorbar(ax, x, y, low, high, **kwargs):
    y, low, high = (np.asarray(a, dtype=float) for a in (y, low, high))
    err = np.vstack([np.clip(y - low, 0, None), np.clip(high - y, 0, None)])
    ax.errorbar(x, y, yerr=err, capsize=2, elinewidth=0.8, **kwargs)


@figure_function
def precision_error(summary: pd.DataFrame):
    """One panel per site (and outlier setting): mean over rows of measured / predicted error against
    the logit std, per format; filled = the rounding model, hollow = the essay's i.i.d. delta method;
    grey marks = outside the model's regime (kappa_eff > 0.01, or flushed / saturated casts)."""
    data = summary[summary["logit_scale"] > 0].copy()
    if data.empty:
        return _empty("no point with logit std > 0 in this experiment")
    data["inputs"] = np.where(
        data["outlier_channels"] > 0, data["outlier_channels"].astype(str) + " outliers ×" + data["outlier_scale"].map("{:g}".format), "isotropic"
    )
    panels = [
        (site, inputs)
        for site in ("logits", "qk", "qk_rotated", "probs", "output")
        for inputs in sorted(data["inputs"].unique())
        if ((data["site"] == site) & (data["inputs"] == inputs)).any()
    ]
    colours = _colours(data["format"])
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.4 * rows), squeeze=False, sharey=True)
    tol = THRESHOLDS.ratio_tolerance
    for ax, (site, inputs) in zip(axes.flat, panels):
        part = data[(data["site"] == site) & (data["inputs"] == inputs)]
        regime = in_model_regime(part)
        offsets = dict(zip(colours, np.linspace(-0.06, 0.06, len(colours))))
        for fmt, colour in colours.items():
            line = part[part["format"] == fmt].sort_values("logit_scale")
            if line.empty:
                continue
            x = line["logit_scale"].to_numpy(float) * np.exp(offsets[fmt])
            inside = regime[line.index].to_numpy(bool)
            for mask, face in ((inside, colour), (~inside, "0.75")):
                if mask.any():
                    sub = line[mask]
                    _errorbar(
                        ax, x[mask], sub["ratio_model_mean"], sub["ratio_model_ci_low"], sub["ratio_model_ci_high"], fmt="o", color=colour, mfc=face, ms=5
                    )
            if line["ratio_iid_mean"].notna().any():
                _errorbar(ax, x, line["ratio_iid_mean"], line["ratio_iid_ci_low"], line["ratio_iid_ci_high"], fmt="s", color=colour, mfc="none", ms=5, ls=":")
        ax.axhline(1.0, color="0.2", lw=0.9)
        ax.axhspan(1 - tol, 1 + tol, color="0.85", alpha=0.6, lw=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"site {site}, {inputs}", fontsize=9)
        ax.set_xlabel("logit std σ")
    for ax in axes[:, 0]:
        ax.set_ylabel("measured / predicted ‖õ − o‖² (mean over rows)")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=c, marker="o", ls="none", label=SHORT.get(f, f)) for f, c in colours.items()]
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="none", label="÷ rounding model Σp²Var(ε|s)‖v−o‖²"),
        Line2D([], [], color="0.3", marker="s", mfc="none", ls=":", label="÷ i.i.d. delta κ_pooled Σp²‖v−o‖²"),
        Line2D([], [], color="0.3", marker="o", mfc="0.75", ls="none", label="outside the model's regime"),
        plt.Rectangle((0, 0), 1, 1, color="0.85", label=f"1 ± {tol}"),
    ]
    fig.suptitle("Attention with one rounding: measured error over the two predictions (95% CI)")
    legend_below(fig, handles, ncol=4, y=0.0)
    return fig


@figure_function
def precision_rotation(summary: pd.DataFrame):
    """Rotation's gain mean(err unrotated) / mean(err rotated) at site qk_rotated against the outlier
    scale: measured (95% CI), the rounding model's from the same rows, and the closed form."""
    data = summary[(summary["site"] == "qk_rotated") & (summary["logit_scale"] > 0)]
    if data.empty:
        return _empty("no point at site qk_rotated in this experiment")
    fig, ax = plt.subplots(figsize=(6.2, 4.4))
    colours = _colours(data["format"])
    markers = dict(zip(sorted(data["logit_scale"].unique()), "os^Dv"))
    for (fmt, sigma), line in data.groupby(["format", "logit_scale"]):
        line = line.assign(x=np.where(line["outlier_channels"] > 0, line["outlier_scale"], 1.0)).sort_values("x")
        _errorbar(
            ax, line["x"], line["rotation_gain"], line["rotation_gain_ci_low"], line["rotation_gain_ci_high"], fmt=markers[sigma], color=colours[fmt], ms=5
        )
        ax.plot(line["x"], line["rotation_gain_model"], "--", color=colours[fmt], lw=1)
    theory = data.assign(x=np.where(data["outlier_channels"] > 0, data["outlier_scale"], 1.0)).groupby("x")["rotation_gain_theory"].first().sort_index()
    ax.plot(theory.index, theory.to_numpy(), ":", color="0.2", lw=1.4)
    ax.axhline(2.6, color="0.6", lw=0.8, ls="-.")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("outlier scale (std of the outlier channels / the others)")
    ax.set_ylabel("error without / with rotation")
    ax.set_title("Incoherent processing: a random rotation of q and k before the cast")
    handles = [Line2D([], [], color=c, marker="o", ls="none", label=SHORT.get(f, f)) for f, c in colours.items()]
    handles += [Line2D([], [], color="0.3", marker=m, ls="none", label=f"σ = {s:g}") for s, m in markers.items()]
    handles += [
        Line2D([], [], color="0.3", ls="--", label="rounding model, same rows"),
        Line2D([], [], color="0.2", ls=":", label="(d + 2) Σλ² / (Σλ)²"),
        Line2D([], [], color="0.6", ls="-.", label="FlashAttention-3's 2.6"),
    ]
    legend_below(fig, handles, ncol=4, y=0.0)
    return fig


@figure_function
def precision_bias(summary: pd.DataFrame):
    """Mean shift of the weights' mean logit, sum (w~ - p) s, measured (95% CI) against the logit std,
    beside the rounding model's second-order prediction from E[e^eps_i] (site logits)."""
    data = summary[(summary["site"] == "logits") & (summary["logit_scale"] > 0)]
    if data.empty:
        return _empty("no point at site logits in this experiment")
    fig, ax = plt.subplots(figsize=(6.2, 4.4))
    colours = _colours(data["format"])
    for fmt, line in data.groupby("format"):
        line = line.sort_values("logit_scale")
        scale = np.abs(line["logit_shift_model_mean"]).to_numpy(float)
        scale = np.where(scale > 0, scale, np.nan)
        _errorbar(
            ax,
            line["logit_scale"],
            line["logit_shift_mean"] / scale,
            line["logit_shift_ci_low"] / scale,
            line["logit_shift_ci_high"] / scale,
            fmt="o",
            color=colours[fmt],
            ms=5,
            label=SHORT.get(fmt, fmt),
        )
        ax.plot(line["logit_scale"], line["logit_shift_model_mean"] / scale, "--", color=colours[fmt], lw=1)
    ax.axhline(0.0, color="0.5", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("logit std σ")
    ax.set_ylabel("mean Σ(w̃ − p)s / |predicted|")
    ax.set_title("Bias of rounded logits: measured (dots, 95% CI) vs E[e^ε] model (dashed)")
    handles = [Line2D([], [], color=c, marker="o", ls="none", label=SHORT.get(f, f)) for f, c in colours.items()]
    handles.append(Line2D([], [], color="0.3", ls="--", label="model: Σ p(s − s̄)(1/2 − p) Var(ε|s)"))
    legend_below(fig, handles, ncol=3, y=0.0)
    return fig
