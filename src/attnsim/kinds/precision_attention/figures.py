"""Figures of `precision_attention` (docs/science.md §11): the measured error over both predictions
per format, site and logit scale; the rotation's gain on outlier features; the bias."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.lines import Line2D

from attnsim.figures.common import legend_below
from attnsim.figures.style import figure_function
from attnsim.kinds.low_precision_figures import (
    SHORT,
    atlas,
    errorbar,
    format_colours,
    format_handles,
    ratio_handles,
    summary_errorbar,
)
from attnsim.kinds.precision_attention.claims import THRESHOLDS, in_model_regime


def _empty(text: str):
    fig, ax = plt.subplots(figsize=(5.5, 2.0))
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=10)
    ax.set_axis_off()
    return fig


@figure_function
def precision_error(summary: pd.DataFrame):
    """Columns: rounding site (and input family). Top row: mean over rows of measured / predicted
    error for the rounding model against the logit std, per format (linear, the tolerance band);
    grey-filled = outside the model's regime (kappa_eff > 0.01, or flushed / saturated casts).
    Bottom row: the same for the essay's i.i.d. delta method with pooled kappa (log scale)."""
    data = summary[summary["logit_scale"] > 0].copy()
    if data.empty:
        return _empty("no point with logit std > 0 in this experiment")
    data["inputs"] = _input_family(data)
    panels = [
        (site, inputs)
        for site in ("logits", "qk", "qk_rotated", "probs", "output")
        for inputs in sorted(data["inputs"].unique())
        if ((data["site"] == site) & (data["inputs"] == inputs)).any()
    ]
    colours = format_colours(data["format"])
    cols = len(panels)
    fig, axes = plt.subplots(2, cols, figsize=(3.9 * cols, 6.4), squeeze=False, sharex="col")
    tol = THRESHOLDS.ratio_tolerance
    scales = sorted(data["logit_scale"].unique())
    offsets = dict(zip(colours, np.linspace(-0.05, 0.05, len(colours))))
    for col, (site, inputs) in enumerate(panels):
        part = data[(data["site"] == site) & (data["inputs"] == inputs)]
        regime = in_model_regime(part)
        top, bottom = axes[0, col], axes[1, col]
        for fmt, colour in colours.items():
            line = part[part["format"] == fmt].sort_values("logit_scale")
            if not line.empty:
                x = line["logit_scale"].to_numpy(float) * np.exp(offsets[fmt])
                _format_ratios(top, bottom, line, x, regime[line.index].to_numpy(bool), colour)
        top.axhspan(1 - tol, 1 + tol, color="0.85", alpha=0.6, lw=0)
        _ratio_axes((top, bottom), scales)
        top.set_title(f"site {site}, {inputs}", fontsize=9)
        bottom.set_xlabel("logit std σ")
    axes[0, 0].set_ylabel("measured / rounding model")
    axes[1, 0].set_ylabel("measured / i.i.d. delta (κ pooled)")
    handles: list[Artist] = format_handles(colours)
    handles += ratio_handles(MODEL_KEY, IID_KEY, "outside the model's regime", iid_ls=":")
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.85", label=f"1 ± {tol}"))
    fig.suptitle(
        "Attention with one rounding: measured error over the two predictions (mean per-row "
        "ratio, 95% CI)",
    )
    legend_below(fig, handles, ncol=4, y=0.0)
    return fig


MODEL_KEY = "÷ rounding model Σp²Var(ε|s)‖v−o‖² (top)"
IID_KEY = "÷ i.i.d. delta κ_pooled Σp²‖v−o‖² (bottom)"


def _input_family(data: pd.DataFrame) -> np.ndarray:
    """Each point's inputs in words: isotropic, or its outlier channels and their scale (the
    columns of the figure split by it)."""
    count, scale = data["outlier_channels"].astype(str), data["outlier_scale"].map("{:g}".format)
    outliers = count + " outliers ×" + scale
    return np.where(data["outlier_channels"] > 0, outliers, "isotropic")


def _format_ratios(top, bottom, line: pd.DataFrame, x, inside: np.ndarray, colour) -> None:
    """One format in a column: measured / rounding model on top (grey-filled outside the model's
    regime, where it is not expected to hold) and measured / i.i.d. delta below, where defined."""
    for mask, face in ((inside, colour), (~inside, "0.75")):
        if mask.any():
            sub = line[mask]
            summary_errorbar(
                top, x[mask], sub, "ratio_model", fmt="o", color=colour, mfc=face, ms=5
            )
    if line["ratio_iid_mean"].notna().any():
        summary_errorbar(
            bottom, x, line, "ratio_iid", fmt="s", color=colour, mfc="none", ms=5, ls=":"
        )


def _ratio_axes(axes, scales) -> None:
    """A column's axes: 1 (the prediction exact) as reference, the logit stds run as log ticks,
    and the i.i.d. ratio (bottom), which spans decades, on a log scale."""
    for ax in axes:
        ax.axhline(1.0, color="0.2", lw=0.9)
        ax.set_xscale("log")
        ax.set_xticks(scales, [f"{v:g}" for v in scales])
        ax.minorticks_off()
    axes[1].set_yscale("log")


@figure_function
def precision_rotation(summary: pd.DataFrame):
    """Site qk_rotated: measured gain mean(err unrotated) / mean(err rotated) (95% CI) against the
    gain predicted by the rounding model from the same rows (filled) and by the closed form
    (d + 2) sum lambda^2 / (sum lambda)^2 (hollow), log-log, with y = x and the claim's band."""
    data = summary[(summary["site"] == "qk_rotated") & (summary["logit_scale"] > 0)]
    if data.empty:
        return _empty("no point at site qk_rotated in this experiment")
    fig, ax = plt.subplots(figsize=(6.2, 5.0))
    colours = format_colours(data["format"])
    markers = dict(zip(sorted(data["logit_scale"].unique()), "os^Dv"))
    for (fmt, sigma), part in data.groupby(["format", "logit_scale"]):
        gain, low, high = (part[f"rotation_gain{s}"] for s in ("", "_ci_low", "_ci_high"))
        # filled: the rounding model's gain from the same rows; hollow: the closed form
        faces = {"rotation_gain_model": colours[fmt], "rotation_gain_theory": "none"}
        for column, face in faces.items():
            style = {"color": colours[fmt], "mfc": face, "ms": 6}
            errorbar(ax, part[column], gain, low, high, fmt=markers[sigma], **style)
    _gain_references(ax, data)
    ax.set_xlabel("predicted gain")
    ax.set_ylabel("measured gain: error without / with rotation")
    ax.set_title("Incoherent processing: a random rotation of q and k before the cast")
    handles: list[Artist] = format_handles(colours)
    handles += [
        Line2D([], [], color="0.3", marker=m, ls="none", label=f"σ = {s:g}")
        for s, m in markers.items()
    ]
    theory = "vs (d + 2) Σλ² / (Σλ)²"
    band = f"y = x ± {THRESHOLDS.rotation_tolerance:.0%}"
    handles += [
        Line2D(
            [], [], color="0.3", marker="o", ls="none", label="vs the rounding model, same rows"
        ),
        Line2D([], [], color="0.3", marker="o", mfc="none", ls="none", label=theory),
        plt.Rectangle((0, 0), 1, 1, color="0.85", label=band),
        Line2D([], [], color="0.6", ls="-.", label="FlashAttention-3's 2.6"),
    ]
    legend_below(fig, handles, ncol=3, y=0.0)
    return fig


ROTATION_GAINS = ("rotation_gain", "rotation_gain_model", "rotation_gain_theory")


def _gain_references(ax, data: pd.DataFrame) -> None:
    """y = x (the prediction exact) with the claim's band and FlashAttention-3's reported gain of
    2.6, on log axes spanning every measured and predicted gain."""
    values = np.concatenate([data[c].to_numpy(float) for c in ROTATION_GAINS])
    values = values[np.isfinite(values) & (values > 0)]
    lo, hi = values.min() / 1.3, values.max() * 1.3
    line = np.geomspace(lo, hi, 50)
    tol = THRESHOLDS.rotation_tolerance
    ax.plot(line, line, color="0.2", lw=0.9)
    ax.fill_between(line, line * (1 - tol), line * (1 + tol), color="0.85", alpha=0.6, lw=0)
    ax.axhline(2.6, color="0.6", lw=0.8, ls="-.")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)


@figure_function
def precision_bias(summary: pd.DataFrame):
    """Site logits, one panel per format (own scale): the mean shift of the weights' mean logit
    sum (w~ - p) s with its 95% interval against the logit std, beside the rounding model's
    second-order prediction from E[e^eps_i] (hollow diamonds)."""
    data = summary[(summary["site"] == "logits") & (summary["logit_scale"] > 0)]
    if data.empty:
        return _empty("no point at site logits in this experiment")
    colours = format_colours(data["format"])
    fig, axes = plt.subplots(1, len(colours), figsize=(3.3 * len(colours), 3.4), squeeze=False)
    scales = sorted(data["logit_scale"].unique())
    for ax, (fmt, colour) in zip(axes[0], colours.items()):
        line = data[data["format"] == fmt].sort_values("logit_scale")
        x = line["logit_scale"].to_numpy(float)
        summary_errorbar(ax, x, line, "logit_shift", fmt="o", color=colour, ms=5)
        ax.plot(x * 1.04, line["logit_shift_model_mean"], "D", color=colour, mfc="none", ms=6)
        ax.axhline(0.0, color="0.5", lw=0.8)
        ax.set_xscale("log")
        ax.set_xticks(scales, [f"{v:g}" for v in scales])
        ax.minorticks_off()
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
        ax.set_title(SHORT.get(fmt, fmt), fontsize=9)
        ax.set_xlabel("logit std σ")
    axes[0, 0].set_ylabel("mean Σ(w̃ − p)s")
    handles = [
        Line2D([], [], color="0.3", marker="o", ls="none", label="measured (95% CI)"),
        Line2D(
            [],
            [],
            color="0.3",
            marker="D",
            mfc="none",
            ls="none",
            label="model: Σ p(s − s̄)(1/2 − p) Var(ε|s)",
        ),
    ]
    fig.suptitle("Bias of rounded logits: the shift of the weights' mean logit")
    legend_below(fig, handles, ncol=2, y=0.0)
    return fig


@figure_function
def precision_atlas(summary: pd.DataFrame):
    """The low-precision atlas of the synthetic rows (`kinds.low_precision_figures.atlas`):
    marker = logit std."""
    from attnsim.kinds.precision_attention.claims import block_tolerance

    data = summary[summary["logit_scale"] > 0]
    if data.empty:
        return _empty("no point with logit std > 0 in this experiment")
    return atlas(data, "logit_scale", "σ", block_tolerance, THRESHOLDS.kappa_eff_max)


@figure_function
def precision_mx_rules(summary: pd.DataFrame):
    """The two E8M0 rules side by side at the logits (docs/science.md §11.9). Left: the measured
    effective error variance κ under round-up (open) and OCP MX (filled) against the saturation
    theory's κ (log-log, the diagonal). Middle: the measured error ratio OCP / round-up on the
    same rows against the theory's, with the ±10% band of `mx_rule_ratio` (grey-filled: outside
    its regime). Right: the share of logits OCP clips against the theory's. Colour = element
    format, marker = group (block32, block16, row)."""
    from attnsim.kinds.precision_attention.claims import RULE_RATIO, rule_pairs

    rules = ("e8m0_ceil", "e8m0_ocp")
    data = summary[
        (summary["site"] == "logits")
        & (summary["granularity"] != "none")
        & summary["scale_type"].isin(rules)
        & (summary["logit_scale"] > 0)
    ]
    if data.empty or "kappa_theory" not in data:
        return _empty("no logits point with E8M0 scale groups in this experiment")
    colours = format_colours(data["format"])
    groups = sorted(data["granularity"].unique())
    markers = dict(zip(groups, "os^Dv"))
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(12.6, 4.4))
    for (fmt, group, rule), line in data.groupby(["format", "granularity", "scale_type"]):
        face = colours[fmt] if rule == "e8m0_ocp" else "none"
        style = dict(fmt=markers[group], color=colours[fmt], mfc=face, ms=5, ls="none")
        x = line["kappa_theory"]
        errorbar(left, x, line["kappa_measured"], *_ci(line, "kappa_measured"), **style)
    _diagonal(left, data["kappa_theory"], data["kappa_measured"])
    left.set(xscale="log", yscale="log", xlabel="theory κ", ylabel="measured κ")
    left.set_title("κ per rule (open: round-up, filled: OCP)", fontsize=9)
    pairs = rule_pairs(data.assign(judged=RULE_RATIO.regime.select(data)))
    for (fmt, group, judged), line in pairs.groupby(["format", "granularity", "judged_ocp"]):
        measured = line["sq_err_mean_ocp"] / line["sq_err_mean_ceil"]
        rel = np.hypot(
            line["sq_err_se_ocp"] / line["sq_err_mean_ocp"],
            line["sq_err_se_ceil"] / line["sq_err_mean_ceil"],
        )
        face = colours[fmt] if judged else "0.75"
        style = dict(fmt=markers[group], color=colours[fmt], mfc=face, ms=5, ls="none")
        low, high = measured * np.exp(-1.96 * rel), measured * np.exp(1.96 * rel)
        errorbar(middle, line["rule_ratio_theory_ocp"], measured, low, high, **style)
    if not pairs.empty:
        theory = pairs["rule_ratio_theory_ocp"].to_numpy(float)
        grid = np.linspace(min(theory.min(), 1.0) * 0.95, theory.max() * 1.05, 50)
        tol = THRESHOLDS.rotation_tolerance
        middle.fill_between(grid, grid * (1 - tol), grid * (1 + tol), color="0.85", lw=0)
        middle.plot(grid, grid, color="0.3", lw=0.8)
    middle.axhline(1.0, color="0.5", ls=":", lw=0.8)
    middle.set(xlabel="theory ratio", ylabel="measured ratio OCP / round-up")
    middle.set_title("error ratio on the same rows (95% CI)", fontsize=9)
    ocp = data[data["scale_type"] == "e8m0_ocp"]
    for (fmt, group), line in ocp.groupby(["format", "granularity"]):
        style = dict(fmt=markers[group], color=colours[fmt], ms=5, ls="none")
        x, y = line["saturated_theory"], line["saturated_mean"]
        errorbar(right, x, y, *_ci(line, "saturated"), **style)
    if not ocp.empty:
        _diagonal(right, ocp["saturated_theory"], ocp["saturated_mean"], log=False)
    right.set(xlabel="theory share clipped", ylabel="measured share clipped (OCP)")
    right.set_title("logits clipped by OCP's rule", fontsize=9)
    handles: list[Artist] = format_handles(colours)
    handles += [Line2D([], [], color="0.3", marker=markers[g], ls="none", label=g) for g in groups]
    legend_below(fig, handles, ncol=min(len(handles), 7))
    fig.suptitle(
        "E8M0 scales rounded up (never saturating) against OCP MX v1.0's rule (clipping the "
        "largest logits of a group), with the saturation theory of §11.9",
        fontsize=9,
    )
    return fig


def _ci(line: pd.DataFrame, metric: str) -> tuple[pd.Series, pd.Series]:
    """A summary column's 95% interval ends (`kappa_measured` keeps its mean unsuffixed)."""
    return line[f"{metric}_ci_low"], line[f"{metric}_ci_high"]


def _diagonal(ax, x: pd.Series, y: pd.Series, log: bool = True) -> None:
    """y = x across the points' range: where measured equals theory."""
    values = pd.concat([x, y]).to_numpy(float)
    values = values[np.isfinite(values) & ((values > 0) if log else True)]
    if values.size:
        low, high = values.min(), values.max()
        ax.plot([low, high], [low, high], color="0.3", lw=0.8)
