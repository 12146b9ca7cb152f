"""Figures of `real_noise` (docs/science.md §5.6, §5.9-5.12): a layer x head map of measured /
predicted error, the delta method and the next order across noise scales per layer, the rate
within heads beside the cross-head picture, and single rows against the per-row law."""

from __future__ import annotations

import functools

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from attnsim.figures.common import finite_or, key_handles, legend_below, panel_letter
from attnsim.figures.style import figure_function, palette
from attnsim.kinds.real_noise.claims import LIGHT, THRESHOLDS, by_group, light, within_head_slopes
from attnsim.stats import Z95

LAYER_MAP = "viridis"


def _layer_colours(layers) -> dict:
    return dict(zip(layers, palette(LAYER_MAP, len(layers))))


def _settings(summary: pd.DataFrame) -> list[tuple]:
    keys = (
        summary[["noise", "noise_scale", "noise_draws"]]
        .drop_duplicates()
        .sort_values(["noise", "noise_scale"])
    )
    return [tuple(r) for r in keys.itertuples(index=False)]


def _say(axes, text: str) -> None:
    """Write in each panel why it is empty."""
    for ax in axes:
        ax.text(0.5, 0.5, text, ha="center", transform=ax.transAxes)


def _interval(groups: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`by_group`'s mean and 95% interval as arrays: mean, low, high."""
    mean, low, high = (groups[c].to_numpy(float) for c in ("mean", "ci_low", "ci_high"))
    return mean, low, high


def _head_layer_grid(part: pd.DataFrame, column: str, layers, heads) -> np.ndarray:
    """A column as a layer x head array (the mean over the texts of a window length)."""
    return (
        part.pivot_table(index="layer", columns="head", values=column, aggfunc="mean")
        .reindex(index=layers, columns=heads)
        .to_numpy(float)
    )


@figure_function
def real_noise_map(summary: pd.DataFrame):
    """Per number of keys (rows) and noise setting (columns): a layer x head map of err_ratio =
    measured / predicted sq_err (finite kappa; crossed cells: the 95% interval misses 1 +-
    tolerance; dots: outside the delta method's regime, predicted correction above its bound), or
    of rel_err where kappa = inf (no prediction). Points of several texts per window length are
    averaged."""
    settings, ns = _settings(summary), sorted(summary["n_keys"].unique())
    layers, heads = sorted(summary["layer"].unique()), sorted(summary["head"].unique())
    # a panel as wide as its heads need, and never narrower than its title
    width = max(0.4 * len(heads), 2.6) * len(settings) + 1.5
    height = 0.5 * len(layers) * len(ns) + 1.8
    # no gridspec spacing: the constrained layout spaces the panels (a wspace of 0.55 there is a
    # share of the whole figure, and squeezed the panels to a third)
    fig, axes = plt.subplots(len(ns), len(settings), figsize=(width, height), squeeze=False)
    grid = functools.partial(_head_layer_grid, layers=layers, heads=heads)
    ratio_norm, rel_norm = _map_norms(summary)
    for row, n in enumerate(ns):
        for col, (noise, sigma, k) in enumerate(settings):
            ax = axes[row, col]
            part = summary[
                (summary["n_keys"] == n)
                & (summary["noise"] == noise)
                & (summary["noise_scale"] == sigma)
                & (summary["noise_draws"] == k)
            ]
            if bool(part["kappa_finite"].all()) and bool((part["kappa"] > 0).all()):
                _ratio_map(fig, ax, part, grid, ratio_norm)
                title = f"{noise} σ = {sigma:g}: measured / predicted"
            else:
                _rel_err_map(fig, ax, part, grid, rel_norm)
                title = f"{noise} σ = {sigma:g} (κ = ∞): rel. error"
            ax.set_title(f"{title}\n{n} keys, K = {k}", fontsize=8.5)
            ax.set_xticks(range(len(heads)), heads, fontsize=7)
            ax.set_yticks(range(len(layers)), layers, fontsize=7)
            ax.set_xlabel("head", fontsize=8)
            if col == 0:
                ax.set_ylabel("layer", fontsize=8)
    legend_below(fig, _map_handles(), ncol=3, y=-0.02)
    fig.suptitle(
        "Delta method on the trained heads of all-MiniLM-L6-v2: measured / predicted squared error "
        "per layer and head",
    )
    return fig


def _map_norms(summary: pd.DataFrame) -> tuple:
    """The colour scales of real_noise_map, each shared by all its panels so that they compare:
    measured / predicted diverging around 1 (the theory); the relative error where kappa = inf
    (no prediction) on a log scale over all such points (None where there are none)."""
    ratio_norm = mcolors.TwoSlopeNorm(vcenter=1.0, vmin=0.5, vmax=1.5)
    heavy = summary[~summary["kappa_finite"]]
    if not len(heavy):
        return ratio_norm, None
    low = max(float(heavy["rel_err_mean"].min()), 1e-4)
    return ratio_norm, mcolors.LogNorm(vmin=low, vmax=float(heavy["rel_err_mean"].max()) * 1.01)


def _ratio_map(fig, ax, part: pd.DataFrame, grid, norm) -> None:
    """One setting with a prediction (finite kappa): measured / predicted per head on a diverging
    scale centred on 1 (the theory), a cross where the 95% interval misses 1 ± the tolerance and
    a dot where the head is outside the delta method's regime (so a miss there is expected)."""
    image = ax.imshow(grid(part, "err_ratio"), cmap="RdBu_r", norm=norm, aspect="auto")
    colorbar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    colorbar.set_label("measured / predicted (theory: 1)", fontsize=7.5)
    tol = THRESHOLDS.ratio_tolerance
    miss = (grid(part, "err_ratio_ci_low") > 1 + tol) | (grid(part, "err_ratio_ci_high") < 1 - tol)
    # one line of markers per kind of mark (not one per cell: each artist costs its draws)
    rows, cols = np.nonzero(miss)
    ax.plot(cols, rows, marker="x", color="k", ms=5, mew=1.0, ls="none")
    outside = ~(grid(part, "predicted_correction") <= THRESHOLDS.delta_correction)
    rows, cols = np.nonzero(outside)
    ax.plot(cols, rows, marker=".", color="0.15", ms=3, ls="none")


def _rel_err_map(fig, ax, part: pd.DataFrame, grid, norm) -> None:
    """One setting without a prediction (kappa = inf): the relative error per head."""
    image = ax.imshow(grid(part, "rel_err_mean"), cmap="magma", norm=norm, aspect="auto")
    colorbar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    colorbar.set_label("rel. error (no prediction)", fontsize=7.5)


def _map_handles() -> list[Artist]:
    """What real_noise_map's marks and colours mean."""
    outside = (
        f"predicted correction > {THRESHOLDS.delta_correction}: outside the delta method's regime"
    )
    miss = f"95% CI misses 1 ± {THRESHOLDS.ratio_tolerance}"
    return [
        Line2D([], [], marker="x", color="k", ls="none", label=miss),
        Line2D([], [], marker=".", color="0.15", ls="none", label=outside),
        Patch(color=plt.get_cmap("RdBu_r")(0.5), label="white = 1: the delta method exact"),
    ]


def _band(ax, tol: float) -> None:
    ax.axhspan(1 - tol, 1 + tol, color="0.88", zorder=0)
    ax.axhline(1.0, color="firebrick", lw=1.3)


def _in_delta_regime(rows: pd.DataFrame) -> pd.Series:
    """The heads the delta method's claim judges: predicted correction within its bound."""
    return rows["predicted_correction"] <= THRESHOLDS.delta_correction


def _in_next_regime(rows: pd.DataFrame) -> pd.Series:
    """The heads the next-order claim judges: past the delta method, next truncation small."""
    t = THRESHOLDS
    beyond = rows["predicted_correction"] > t.delta_correction
    return beyond & (rows["next_truncation"] <= t.next_truncation)


# real_noise_sigma's panels (a), (b): (ratio column, y label, the heads its claim judges)
RATIO_PANELS = (
    ("err_ratio", "measured / delta method", _in_delta_regime),
    ("next_err_ratio", "measured / next-order theory", _in_next_regime),
)
SIGMA_TITLES = (
    "delta method per layer",
    "next-order theory (p2) per layer",
    "sink-dominated rows (filled) vs the others (open)",
)


@figure_function
def real_noise_sigma(summary: pd.DataFrame):
    """(a) the delta method's ratio and (b) the next order's, per layer against the noise scale
    (mean over the layer's heads and windows, 95% CI between them; filled markers: in the claim's
    regime); dashed in (a): the next-order theory's own prediction of the delta ratio. (c) the
    delta ratio of sink-dominated rows (filled) and of the other rows (open)."""
    data = summary[light(summary)]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), sharey=False)
    if data.empty:
        _say(axes, "no light-tailed noise in this sweep")
        return fig
    layers = sorted(data["layer"].unique())
    colours = _layer_colours(layers)
    width = np.log(data["noise_scale"].max() / data["noise_scale"].min() + 1) * 0.012
    for ax, (column, label, regime) in zip(axes[:2], RATIO_PANELS):
        _band(ax, THRESHOLDS.ratio_tolerance)
        for k, layer in enumerate(layers):
            part = data[(data["layer"] == layer) & data[column].notna()]
            if not part.empty:
                offset = np.exp((k - (len(layers) - 1) / 2) * width)
                _layer_ratio(ax, part, column, regime, offset, colours[layer])
        ax.set_xscale("log")
        ax.set_xlabel("noise std σ")
        ax.set_ylabel(label)
    _row_type_ratios(axes[2], data, layers, colours, width)
    for ax, letter, title in zip(axes, "abc", SIGMA_TITLES):
        panel_letter(ax, letter)
        ax.set_title(title, fontsize=10)
    for ax in axes:  # the next-order prediction runs off to ~50 at sigma = 1 (small n_eff): clipped
        ax.set_ylim(0, 1.6)
    legend_below(fig, _sigma_handles(layers, colours), ncol=5, y=-0.02)
    fig.suptitle(
        "Trained heads under logit noise of growing σ (gaussian/uniform): where the delta method "
        "and its next order hold",
    )
    return fig


def _layer_ratio(ax, part: pd.DataFrame, column: str, regime, offset: float, colour) -> None:
    """Panels (a), (b), one layer: the ratio over all its heads (open: shown, not judged), over
    the heads in the claim's regime where there are enough of them (filled: what the claim
    judges) and, in (a), dashed, the next-order theory's prediction of the delta ratio."""
    groups = by_group(part, ["noise_scale"], column)
    x = groups["noise_scale"].to_numpy(float) * offset
    y, low, high = _interval(groups)
    low, high = finite_or(low, y), finite_or(high, y)
    ax.errorbar(x, y, yerr=[y - low, high - y], color=colour, lw=0.8, capsize=2, fmt="-")
    ax.scatter(x, y, facecolor="white", edgecolor=colour, s=18, zorder=3)
    inside = part[regime(part)]  # what the claim judges: the heads in its regime
    judged = by_group(inside, ["noise_scale"], column) if len(inside) else inside
    if len(judged):
        judged = judged[judged["heads"] >= THRESHOLDS.min_heads]
        xj = judged["noise_scale"].to_numpy(float) * offset * 1.03
        yj, lj, hj = _interval(judged)
        ax.errorbar(xj, yj, yerr=[yj - lj, hj - yj], fmt="none", ecolor=colour, lw=1.4, capsize=3)
        ax.scatter(xj, yj, color=colour, s=30, zorder=4, edgecolor="k", lw=0.5)
    if column == "err_ratio" and "next_ratio" in part:
        theory = part.groupby("noise_scale")["next_ratio"].mean()
        ax.plot(theory.index * offset, theory.to_numpy(float), "--", color=colour, lw=0.9)


def _row_type_ratios(ax, data: pd.DataFrame, layers, colours, width: float) -> None:
    """Panel (c): the delta ratio per layer of the rows a sink dominates (filled) and of the
    others (open): whether the sink rows are where the delta method fails."""
    _band(ax, THRESHOLDS.ratio_tolerance)
    for k, layer in enumerate(layers):
        part = data[data["layer"] == layer]
        for column, face in (("err_ratio_sink", None), ("err_ratio_rest", "white")):
            part_c = part[part[column].notna()]
            if part_c.empty:
                continue
            groups = by_group(part_c, ["noise_scale"], column)
            shift = (k - (len(layers) - 1) / 2) * width + (0.02 if face else 0)
            x = groups["noise_scale"].to_numpy(float) * np.exp(shift)
            y, low, high = _interval(groups)
            low, high = finite_or(low, y), finite_or(high, y)
            colour = colours[layer]
            ax.errorbar(x, y, yerr=[y - low, high - y], color=colour, lw=0.8, capsize=2, fmt="none")
            ax.scatter(x, y, facecolor=face or colour, edgecolor=colour, s=20, zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("noise std σ")
    ax.set_ylabel("measured / delta method, by row type")


def _sigma_handles(layers, colours) -> list[Artist]:
    """A colour per layer, then what real_noise_sigma's marks mean."""
    handles: list[Artist] = [
        Line2D([], [], color=colours[layer], marker="o", label=f"layer {layer}") for layer in layers
    ]
    judged = f"the claim's groups: heads in its regime (at least {THRESHOLDS.min_heads})"
    shown = "all heads of the layer (shown, not judged)"
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="none", label=judged),
        Line2D([], [], color="0.3", marker="o", mfc="white", ls="none", label=shown),
        Line2D([], [], color="0.3", ls="--", label="(a) next-order prediction of the ratio"),
        Patch(color="0.88", label=f"1 ± {THRESHOLDS.ratio_tolerance}: the tolerance"),
    ]
    return handles


@figure_function
def real_noise_within_heads(summary: pd.DataFrame):
    """(a) per head, rel_err against the number of keys over nested windows (the same texts and
    queries), beside n^-1/2; (b) per layer the within-head slope (mean over heads, 95% CI),
    measured and as the delta method per row predicts, beside -1/2; (c) n_eff against the number
    of keys per head, beside n_eff = n; (d) the cross-head picture at one window length: rel_err
    against n_eff across heads, beside sqrt(kappa / n_eff) -- a cross-section, not a rate."""
    fig, axes = plt.subplots(2, 2, figsize=(12.5, 9.5))
    (ax_a, ax_b), (ax_c, ax_d) = axes
    slopes = within_head_slopes(summary) if "keys" in summary else pd.DataFrame()
    light_rows = summary[light(summary)]
    if light_rows.empty:  # heavy tails only: their error (no theory line where kappa = inf)
        light_rows = summary[summary["noise_scale"] > 0]
    sigma = float(light_rows["noise_scale"].min()) if len(light_rows) else np.nan
    nested = light_rows[(light_rows["keys"] > 0) & (light_rows["noise_scale"] == sigma)]
    layers = sorted(summary["layer"].unique())
    colours = _layer_colours(layers)
    _nested_windows(ax_a, ax_c, nested, colours, sigma)
    chosen = slopes[slopes["noise_scale"] == sigma] if len(slopes) else slopes
    if len(chosen):
        predicted = within_head_slopes(summary, "rel_err_pred_mean", "rel_err_pred_se")
        _layer_slopes(ax_b, chosen, predicted[predicted["noise_scale"] == sigma], colours)
        _head_slopes(ax_b, chosen)
    _slope_reference(ax_b, layers)
    _across_heads(ax_d, light_rows[light_rows["noise_scale"] == sigma], colours)
    for ax, letter in zip((ax_a, ax_b, ax_c, ax_d), "abcd"):
        panel_letter(ax, letter)
    legend_below(fig, _within_handles(layers, colours), ncol=5, y=-0.01)
    fig.suptitle(
        "The rate within heads: nested windows over the same texts and queries (trained "
        "all-MiniLM-L6-v2)",
    )
    return fig


def _nested_windows(ax_a, ax_c, nested: pd.DataFrame, colours, sigma: float) -> None:
    """Panels (a) and (c): each head's relative error and n_eff over nested windows of the same
    texts and queries, so that only the number of keys changes; beside √(κ/n) (slope −1/2) and
    n_eff = n (uniform weights)."""
    for (layer, _), part in nested.groupby(["layer", "head"]):
        part = part.groupby("n_keys")[["rel_err_mean", "sum_p2_mean"]].mean()
        ax_a.plot(part.index, part["rel_err_mean"], color=colours[layer], lw=0.7, alpha=0.6)
        ax_c.plot(part.index, 1 / part["sum_p2_mean"], color=colours[layer], lw=0.7, alpha=0.6)
    if len(nested):
        x = np.array(sorted(nested["n_keys"].unique()), float)
        kappa = float(nested["kappa"].iloc[0])
        if np.isfinite(kappa):
            ax_a.plot(x, np.sqrt(kappa / x), "--", color="firebrick", lw=1.6)
        ax_c.plot(x, x, "--", color="firebrick", lw=1.6)
    for ax in (ax_a, ax_c):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("keys per row (nested windows)")
    ax_a.set_ylabel(f"rel. error √(‖õ−o‖²/Σp‖v−o‖²), σ = {sigma:g}")
    ax_c.set_ylabel("n_eff = 1 / mean Σp² of the head's rows")
    ax_a.set_title("each line a head (colour: layer); dashed √(κ/n): slope −1/2", fontsize=9.5)
    ax_c.set_title("dashed: n_eff = n (uniform weights)", fontsize=9.5)


def _layer_slopes(ax, measured: pd.DataFrame, predicted: pd.DataFrame, colours) -> None:
    """Panel (b): per layer, the mean within-head slope over its heads with its 95% interval,
    measured (circles) and as the delta method per row predicts (squares), side by side."""
    for offset, frame, marker in ((-0.12, measured, "o"), (0.12, predicted, "s")):
        groups = by_group(frame, ["layer"], "slope")
        x = groups["layer"] + offset
        y, low, high = _interval(groups)
        ax.errorbar(x, y, yerr=[y - low, high - y], fmt="none", ecolor="0.3", capsize=3)
        face = [colours[layer] for layer in groups["layer"]]
        ax.scatter(x, y, c=face, edgecolor="0.2", s=40, zorder=3, marker=marker)


def _head_slopes(ax, measured: pd.DataFrame) -> None:
    """Panel (b): every head's measured slope as a faint dot beside its layer's mean, and a red
    ring on the heads the rate claim judges (in the delta regime with enough n_eff)."""
    rng = np.random.default_rng(0)  # jitter of the head dots only
    x = measured["layer"] - 0.12 + rng.uniform(-0.05, 0.05, len(measured))
    ax.scatter(x, measured["slope"], s=6, color="0.5", alpha=0.5, lw=0)
    enough = measured["n_eff_share"] >= THRESHOLDS.rate_n_eff_share
    judged = measured[measured["in_delta"] & enough]
    ring = {"facecolor": "none", "edgecolor": "firebrick", "lw": 1.0}
    ax.scatter(judged["layer"] - 0.12, judged["slope"], s=30, **ring)


def _slope_reference(ax, layers) -> None:
    """Panel (b)'s theory: slope −1/2 with the claim's tolerance band, and 0 (no decay)."""
    tol = THRESHOLDS.slope_tolerance
    ax.axhspan(-0.5 - tol, -0.5 + tol, color="0.88", zorder=0)
    ax.axhline(-0.5, color="firebrick", lw=1.4)
    ax.axhline(0.0, color="0.5", lw=0.8, ls=":")
    ax.set_xlabel("layer")
    ax.set_xticks(layers)
    ax.set_ylabel("within-head slope of log rel. error in log n")
    ax.set_title("per layer, mean over heads (95% CI): measured ○, delta method □", fontsize=9.5)


def _across_heads(ax, single: pd.DataFrame, colours) -> None:
    """Panel (d): the cross-head picture at the most common window length, each head's relative
    error against its n_eff beside √(κ/n_eff): heads differ in more than n_eff, so this is a
    cross-section, not the rate within a head."""
    if len(single):
        n_show = int(single["n_keys"].value_counts().idxmax())
        part = (
            single[single["n_keys"] == n_show]
            .groupby(["layer", "head"])[["rel_err_mean", "sum_p2_mean", "kappa"]]
            .mean()
            .reset_index()
        )
        n_eff = 1 / part["sum_p2_mean"]
        face = [colours[layer] for layer in part["layer"]]
        ax.scatter(n_eff, part["rel_err_mean"], c=face, s=18)
        x = np.geomspace(max(0.8, n_eff.min()), n_eff.max() * 1.2, 50)
        kappa = float(part["kappa"].iloc[0])
        if np.isfinite(kappa):
            ax.plot(x, np.sqrt(kappa / x), "--", color="firebrick", lw=1.4)
        ax.set_title(f"across heads at {n_show} keys: a cross-section, not a rate", fontsize=9.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n_eff of the head (harmonic mean over its rows)")
    ax.set_ylabel("rel. error of the head")


def _within_handles(layers, colours) -> list[Artist]:
    """A colour per layer, then what real_noise_within_heads' marks mean."""
    handles: list[Artist] = [
        Line2D([], [], color=colours[layer], marker="o", label=f"layer {layer}") for layer in layers
    ]
    theory = "theory: −1/2 rate / n_eff = n / √(κ/n_eff)"
    share = THRESHOLDS.rate_n_eff_share
    judged = f"(b) heads in the rate claim's regime (n_eff ≥ {share:g} n)"
    handles += [
        Line2D([], [], color="firebrick", ls="--", label=theory),
        Line2D([], [], color="firebrick", marker="o", mfc="none", ls="none", label=judged),
        Patch(color="0.88", label=f"−1/2 ± {THRESHOLDS.slope_tolerance}"),
    ]
    return handles


ROW_COLUMNS = (
    "layer",
    "noise",
    "noise_scale",
    "sq_err",
    "sq_err_pred",
    "grad_sq",
    "spread",
    "n_eff",
)
# rows drawn per panel (an even subsample: the figure shows single rows, not a summary)
MAX_ROWS = 6000
# real_noise_rows' theory lines, as `key_handles` rows
ROW_KEYS = (
    ("k", None, None, 1.2, "theory: y = x"),
    ("0.2", None, ":", 1.4, "two keys (p, 1 − p): 2p(1 − p)"),
)


@figure_function
def real_noise_rows(summary: pd.DataFrame, trials: pd.DataFrame | None):
    """Single attention rows (a trial each), coloured by their n_eff: (a) measured sq_err against
    the delta method's kappa sum p^2 ||v - o||^2 at the smallest light-noise sigma (theory: the
    diagonal; each row's sq_err averages only K noise draws, hence the scatter), and the mean ratio
    per n_eff bin with its 95% CI; (b) the concentration grad_sq / spread against sum p^2: the
    shorthand rel_err^2 = kappa / n_eff needs the diagonal, two keys give 2p(1 - p)."""
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(12.5, 5.4))
    if trials is None or trials.empty:
        _say((ax_a, ax_b), "no trials")
        return fig
    rows = trials[trials["noise"].isin(LIGHT) & (trials["noise_scale"] > 0)]
    if rows.empty:
        _say((ax_a, ax_b), "no light-tailed noise (finite κ) in this experiment")
        return fig
    sigma = float(rows["noise_scale"].min())
    rows = rows[(rows["noise_scale"] == sigma) & (rows["sq_err_pred"] > 0) & (rows["spread"] > 0)]
    if len(rows) > MAX_ROWS:
        rows = rows.iloc[np.linspace(0, len(rows) - 1, MAX_ROWS).astype(int)]
    norm = mcolors.LogNorm(vmin=1, vmax=max(2.0, float(rows["n_eff"].max())))
    image = _per_row_law(ax_a, rows, norm, sigma)
    _concentration(ax_b, rows, norm)
    fig.colorbar(image, ax=[ax_a, ax_b], fraction=0.03, pad=0.02).set_label("n_eff of the row")
    for ax, letter in zip((ax_a, ax_b), "ab"):
        panel_letter(ax, letter)
    legend_below(fig, key_handles(ROW_KEYS), ncol=2, y=-0.02)
    fig.suptitle(f"Single attention rows of trained heads ({len(rows):,} rows, coloured by n_eff)")
    return fig


real_noise_rows.trial_columns = ROW_COLUMNS


def _row_dots(rows: pd.DataFrame, norm) -> dict:
    """How real_noise_rows draws a row: a small faint dot coloured by its n_eff. Thousands of
    them are one image at the PNG's resolution in the PDF (rasterized; the axes, lines and text
    stay vector): as vector marks each dot cost the PDF writer ~0.15 ms, 1.8 CPU-s a figure."""
    return {
        "c": rows["n_eff"],
        "cmap": "plasma",
        "norm": norm,
        "s": 3,
        "alpha": 0.5,
        "lw": 0,
        "rasterized": True,
    }


def _per_row_law(ax, rows: pd.DataFrame, norm, sigma: float):
    """Panel (a): each row's measured squared error against the delta method's prediction (the
    diagonal is the theory), with an inset of the mean ratio per n_eff bin, since a row's K
    draws alone scatter widely. Returns the scatter, for the colour bar."""
    image = ax.scatter(rows["sq_err_pred"], rows["sq_err"], **_row_dots(rows, norm))
    lo, hi = float(rows["sq_err_pred"].min()), float(rows["sq_err_pred"].max())
    ax.plot([lo, hi], [lo, hi], color="k", lw=1.2)
    _ratio_by_n_eff(ax.inset_axes([0.6, 0.08, 0.37, 0.3]), rows, norm)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("κ Σp²‖v−o‖² of the row (delta method)")
    ax.set_ylabel(f"measured ‖õ−o‖² of the row (mean of K draws), σ = {sigma:g}")
    ax.set_title("the per-row law: diagonal = theory", fontsize=10)
    return image


def _ratio_by_n_eff(inset, rows: pd.DataFrame, norm) -> None:
    """Panel (a)'s inset: the mean measured / predicted ratio per n_eff bin (of 10 rows or more)
    with its 95% interval, against 1."""
    edges = np.geomspace(1, max(2.0, float(rows["n_eff"].max())) * 1.0001, 9)
    which = np.digitize(rows["n_eff"], edges) - 1
    for b in range(len(edges) - 1):
        part = rows[which == b]
        if len(part) < 10:
            continue
        ratio = part["sq_err"] / part["sq_err_pred"]
        half = Z95 * ratio.std(ddof=1) / np.sqrt(len(part))
        centre = np.sqrt(edges[b] * edges[b + 1])
        colour = plt.get_cmap("plasma")(norm(centre))
        inset.errorbar(centre, ratio.mean(), yerr=half, fmt="o", ms=3, color=colour)
    inset.axhline(1, color="k", lw=0.8)
    inset.set_xscale("log")
    inset.set_xlabel("n_eff bin", fontsize=7)
    inset.set_ylabel("mean ratio", fontsize=7)
    inset.tick_params(labelsize=6)


def _concentration(ax, rows: pd.DataFrame, norm) -> None:
    """Panel (b): each row's grad_sq / spread against Σp²: the shorthand rel_err² = κ/n_eff holds
    on the diagonal; two keys with weights p, 1 − p give 2p(1 − p) (dotted)."""
    sum_p2 = 1 / rows["n_eff"]
    concentration = rows["grad_sq"] / rows["spread"]
    ax.scatter(sum_p2, concentration, **_row_dots(rows, norm))
    x = np.linspace(0.5, 1, 100)
    p = (1 + np.sqrt(2 * x - 1)) / 2  # two keys with weights p, 1 - p: sum p^2 = x
    ax.plot(x, 2 * p * (1 - p), color="0.2", ls=":", lw=1.4)
    grid = np.geomspace(float(sum_p2.min()), 1, 50)
    ax.plot(grid, grid, color="k", lw=1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Σp² = 1/n_eff of the row")
    ax.set_ylabel("grad_sq / spread = Σp²‖v−o‖² / Σp‖v−o‖²")
    ax.set_title("concentration: rel_err² = κ/n_eff needs the diagonal", fontsize=10)
