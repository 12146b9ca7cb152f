"""Figures of `contrastive_training` (docs/science.md §6.4-§6.6, §10): what InfoNCE training
reaches at each fixed temperature (three evaluations, alignment and uniformity, the batch entropy
against its floor, where the negative weight goes, the loss against its floor); the map of the
best temperature over the task's difficulty, one panel row per kind of positives; the learnt
temperature's trajectory with the batch entropy against the floor along it. Means over runs
with 95% intervals."""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from attnsim.figures.common import (
    STAR,
    NotApplicable,
    fine_grid,
    key_handles,
    legend_below,
    mean_errorbar,
    star_handle,
)
from attnsim.figures.style import PALETTE, figure_function, palette
from attnsim.kernels.training import checkpoint_steps
from attnsim.kinds.contrastive_training import SETTING
from attnsim.kinds.contrastive_training.besttau import CLAIM_METRIC, best_tau, fixed, same_setting
from attnsim.kinds.contrastive_training.kernel import (
    CHECKPOINTS,
    TAU_CLAMP,
    instance_loss_floor,
    loss_floor,
)
from attnsim.theory.entropy import exact_gap

LINE_STYLES = ("-", "--", ":", "-.", (0, (6, 2, 1, 2, 1, 2)), (0, (1, 4)))  # one per initial tau
# per learnt tau mode: marker and face colour (None: the task's colour; "white": open)
MODE_MARKERS = {"learned": ("o", None), "learned_clamped": ("s", "white")}
# the heat map's x and y; the other varying parameters make columns
MAP_AXES = ("view_noise", "instance_noise")


def _label(key) -> str:
    p = dict(zip(SETTING, key))
    text = (
        f"{p['positives']}, n={p['n']}, C={p['classes']}, k={p['latent_dim']}, "
        f"D={p['input_dim']}, d_out={p['embed_dim']}"
    )
    text += f", view noise {p['view_noise']:g}"
    if p["instance_noise"]:
        text += f", instance noise {p['instance_noise']:g}"
    text += f", {p['optimiser']} lr {p['lr']:g}, {p['steps']} steps"
    return text if p.get("loss", "infonce") == "infonce" else f"{text}, {p['loss']}"


def _band(ax, line, metric, colour, marker="o", ls="-", label=None):
    mean_errorbar(
        ax,
        line["tau"],
        line,
        metric,
        fmt=marker + ls,
        color=colour,
        ms=4,
        lw=1.5,
        capsize=2.5,
        label=label,
    )


def _empty(ax, text):
    ax.text(
        0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=10, color="0.4"
    )
    ax.set_axis_off()


@figure_function
def temperature_sweep(summary: pd.DataFrame):
    """(a) nearest-class-mean probe, (b) 5-NN and linear probe, (c) alignment and uniformity, (d)
    batch entropy vs its floor, (e) the hardest negative's and same-class negatives' share of the
    negative weight, (f) loss vs its floor; all against tau, fixed temperatures only."""
    rows = fixed(summary)
    groups = list(rows.sort_values("tau").groupby(SETTING))
    if not groups:
        raise NotApplicable(
            "temperature_sweep", "no fixed temperature (its learnt ones: learned_temperature)"
        )
    colours = dict(zip([k for k, _ in groups], palette(PALETTE, max(len(groups), 2))))
    fig, axes = plt.subplots(3, 2, figsize=(12.5, 13.0))
    (probe_ax, eval_ax), (geo_ax, ent_ax), (neg_ax, loss_ax) = axes
    unif_ax = geo_ax.twinx()
    fine = fine_grid(rows["tau"])
    for key, line in groups:
        c = colours[key]
        p = dict(zip(SETTING, key))
        _accuracies(probe_ax, eval_ax, line, p, c)
        _band(geo_ax, line, "alignment", c)
        _band(unif_ax, line, "uniformity", c, marker="D", ls="--")
        _sweep_entropy(ent_ax, line, p, c, fine)
        _negative_shares(neg_ax, line, p["n"], c)
        _sweep_loss(loss_ax, line, p, c, fine)
    _label_sweep_panels(axes, unif_ax)
    for ax in axes.flat:
        ax.set_xscale("log")
        ax.set_xlabel("temperature τ (logits = cosines / τ)")
        ax.axvline(1.0, color="0.75", lw=0.8, zorder=0)
    legend_below(fig, _sweep_handles(groups, colours), ncol=2, y=0.02)
    fig.suptitle("Contrastive (InfoNCE) training of a linear encoder across temperatures")
    return fig


def _accuracies(probe_ax, eval_ax, line: pd.DataFrame, p: dict, colour) -> None:
    """Panels (a) and (b), one setting: the held-out accuracies after training (and, in (a), of
    the random initial encoder) against chance 1/C, so that what training adds shows; a star at
    the best tau by the accuracy the setting's claim judges, in the panel that shows it."""
    _band(probe_ax, line, "probe_accuracy", colour)
    _band(probe_ax, line, "init_probe_accuracy", colour, marker="s", ls=":")
    probe_ax.axhline(1 / p["classes"], color=colour, lw=0.9, ls="-.")
    metric = CLAIM_METRIC[p["positives"]]
    best = line.loc[line[f"{metric}_mean"].idxmax()]
    target = probe_ax if metric == "probe_accuracy" else eval_ax
    target.plot([best["tau"]], [best[f"{metric}_mean"]], ms=14, color=colour, zorder=5, **STAR)
    _band(eval_ax, line, "knn_accuracy", colour, marker="^")
    _band(eval_ax, line, "linear_probe_accuracy", colour, marker="D", ls="--")
    eval_ax.axhline(1 / p["classes"], color=colour, lw=0.9, ls="-.")


def _sweep_entropy(ax, line: pd.DataFrame, p: dict, colour, fine) -> None:
    """Panel (d), one setting: the batch entropy after training and the lowest during it (mean,
    and triangles for the lowest of any run) against the floor log n − g_n(τ) that no encoder can
    go below, and against log n (uniform weights); for class positives also the entropy of the
    encoder that attains the loss floor."""
    n = p["n"]
    _band(ax, line, "final_entropy", colour)
    _band(ax, line, "entropy_min", colour, marker="v", ls="--")
    ax.plot(line["tau"], line["entropy_lowest"], "^", color=colour, mfc="none", ms=6, ls="none")
    ax.plot(fine, np.log(n) - np.asarray(exact_gap(n, fine), dtype=float), color="k", lw=2.2)
    if p["positives"] == "class":  # the ideal encoder of the class task
        ax.plot(line["tau"], line["ideal_entropy"], "x:", color="0.45", ms=6, lw=1.0)
    ax.axhline(np.log(n), color="0.5", lw=0.9, ls=":")


def _negative_shares(ax, line: pd.DataFrame, n: int, colour) -> None:
    """Panel (e), one setting: where the negative weight goes (the hardest negative, the
    same-class negatives), against the same-class share under uniform weights (dotted) and one
    negative's uniform share 1/(n − 1): low tau concentrates the weight."""
    _band(ax, line, "hardest_negative_share", colour)
    _band(ax, line, "same_class_negative_share", colour, marker="s", ls="--")
    ax.plot(line["tau"], line["same_class_negative_count_share_mean"], ":", color=colour, lw=1.0)
    ax.axhline(1 / (n - 1), color=colour, lw=0.9, ls="-.")


def _sweep_loss(ax, line: pd.DataFrame, p: dict, colour, fine) -> None:
    """Panel (f), one setting: the held-out loss against the floor of its positives (C classes,
    or dashed, one class per example for instance positives) and log n, a blind encoder's."""
    n = p["n"]
    _band(ax, line, "final_loss", colour)
    if p["positives"] == "class":
        ax.plot(fine, [loss_floor(n, p["classes"], t) for t in fine], color="k", lw=2.2)
    else:  # instance positives: every example its own class
        ax.plot(fine, [instance_loss_floor(n, t) for t in fine], color="k", lw=1.4, ls="--")
    ax.axhline(np.log(n), color="0.5", lw=0.9, ls=":")


_UNIFORMITY_LABEL = "uniformity log E exp(−2‖z_a − z_b‖²)\n(diamonds; lower = more uniform)"
_NEGATIVES_TITLE = "(e) on its hardest negative (circles) and on same-class negatives (squares)"


def _label_sweep_panels(axes, unif_ax) -> None:
    """temperature_sweep's axis labels and panel titles."""
    (probe_ax, eval_ax), (geo_ax, ent_ax), (neg_ax, loss_ax) = axes
    probe_ax.set_ylabel("held-out accuracy: nearest class mean")
    probe_ax.set_title("(a) representation quality: nearest-class-mean probe")
    eval_ax.set_ylabel("held-out accuracy: 5-NN (triangles), linear probe (diamonds)")
    eval_ax.set_title("(b) the same encoders read by 5-NN and a linear probe")
    for ax in (probe_ax, eval_ax):
        ax.set_ylim(0, 1.02)
    geo_ax.set_ylabel("alignment E‖z − z′‖² (circles; lower = better)")
    unif_ax.set_ylabel(_UNIFORMITY_LABEL)
    geo_ax.set_title("(c) alignment and uniformity (Wang & Isola)")
    ent_ax.set_ylabel("batch softmax entropy (nats, mean over anchors)")
    ent_ax.set_title("(d) entropy during and after training vs its floor log n − g_n(τ)")
    neg_ax.set_ylabel("share of an anchor's negative weight")
    neg_ax.set_yscale("log")
    neg_ax.set_title(_NEGATIVES_TITLE)
    loss_ax.set_ylabel("held-out InfoNCE loss (nats)")
    loss_ax.set_title("(f) loss vs its floor (class positives: C classes; instance: dashed)")


# temperature_sweep's legend entries for what each panel's marks mean, before and after the best
# tau's star, as `key_handles` rows
_LOWEST_KEY = "(d) lowest training-batch entropy of a run (mean); triangles: lowest of any run"
_FLOOR_KEY = "(d) entropy floor log n − g_n(τ) (exact); (f) loss floor (C classes)"
_INSTANCE_KEY = "(f) instance positives: log(1 + (n − 1) e^(−n/((n − 1)τ))), one class each"
_IDEAL_KEY = "(d) entropy of the encoder attaining the loss floor (class positives)"
_UNIFORM_SHARE_KEY = "(e) dotted: same-class share under uniform weights; dash-dot: 1/(n − 1)"
_BLIND_KEY = "log n (uniform weights; the loss of a blind encoder)"
_BEST_TAU_KEY = "best τ by the claim's accuracy (class: (a), instance: 5-NN in (b))"
_SWEEP_KEYS_BEFORE_STAR = (
    ("0.3", "o", None, None, "mean over runs ± 95% CI, after training"),
    ("0.3", "s", ":", None, "(a) probe on the random initial encoder; dash-dot: chance 1/C"),
)
_SWEEP_KEYS_AFTER_STAR = (
    ("0.3", "v", "--", None, _LOWEST_KEY),
    ("k", None, None, 2.2, _FLOOR_KEY),
    ("k", None, "--", 1.4, _INSTANCE_KEY),
    ("0.45", "x", ":", None, _IDEAL_KEY),
    ("0.3", None, ":", None, _UNIFORM_SHARE_KEY),
    ("0.5", None, ":", None, _BLIND_KEY),
)


def _sweep_handles(groups, colours) -> list:
    """A colour per setting, then what each panel's marks mean."""

    handles = [Line2D([], [], color=colours[k], marker="o", label=_label(k)) for k, _ in groups]
    handles += key_handles(_SWEEP_KEYS_BEFORE_STAR)
    handles.append(star_handle("0.3", _BEST_TAU_KEY, 11))
    return handles + key_handles(_SWEEP_KEYS_AFTER_STAR)


def _columns(table: pd.DataFrame) -> list[str]:
    """Setting parameters besides the map's axes and the positives that vary: one panel column per
    combination."""
    return [k for k in SETTING if k not in (*MAP_AXES, "positives") and table[k].nunique() > 1]


TAU_RANGE = (-2.0, math.log10(2.0))  # log10 of the preset's range of tau, 0.01 .. 2
MAP_TITLE = (
    "Best fixed temperature over the task's difficulty (text: τ* [range tied with it], and τ = "
    "1 against the best τ < 1)"
)


@figure_function
def temperature_map(summary: pd.DataFrame):
    """Best fixed tau (colour, log scale; text: tau* and the range tied with it) over view noise
    (x) and instance noise (y); one panel row per kind of positives, one column per combination of
    the other varying parameters."""
    tables = {
        pos: best_tau(fixed(summary)[fixed(summary)["positives"] == pos], metric)
        for pos, metric in CLAIM_METRIC.items()
    }
    tables = {pos: t for pos, t in tables.items() if len(t)}
    if not tables:
        raise NotApplicable("temperature_map", "no task with two or more fixed temperatures")
    layout = {pos: _combinations(table) for pos, table in tables.items()}
    width = max(len(combos) for _, combos in layout.values())
    size = (4.2 * width + 1.5, 3.8 * len(tables) + 0.6)
    fig, axes = plt.subplots(len(tables), width, figsize=size, squeeze=False, layout="constrained")
    image = None
    for r, (pos, table) in enumerate(tables.items()):
        cols, combos = layout[pos]
        for ax in axes[r, len(combos) :]:
            ax.set_axis_off()
        for c, combo in enumerate(combos):
            ax = axes[r, c]
            ax.grid(False)
            part = table
            for k, v in zip(cols, combo):
                part = part[part[k] == v]
            if part.empty:
                _empty(ax, "not run")
                continue
            image = _best_tau_map(ax, part)
            if c == 0:
                ax.set_ylabel("instance noise")
            ax.set_title(_map_panel_title(pos, cols, combo), fontsize=9)
    if image is not None:
        bar = fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8)
        bar.set_label("log10 best fixed τ")
    fig.suptitle(MAP_TITLE)
    return fig


def _combinations(table: pd.DataFrame) -> tuple[list[str], list[tuple]]:
    """A panel row's own columns: the parameters that vary among its settings and the
    combinations of them its settings ran (one empty combination where none varies)."""
    cols = _columns(table)
    if not cols:
        return cols, [()]
    return cols, sorted(table[cols].drop_duplicates().itertuples(index=False, name=None))


def _best_tau_map(ax, part: pd.DataFrame):
    """One panel: log10 of the best fixed tau per (view noise, instance noise) cell, with tau*,
    the range tied with it and how tau = 1 compares written in the cell, so that the map can be
    read without the colour bar. Returns the image, for the colour bar."""
    lo, hi = TAU_RANGE
    xs, ys = sorted(part[MAP_AXES[0]].unique()), sorted(part[MAP_AXES[1]].unique())
    grid = np.full((len(ys), len(xs)), np.nan)
    for _, row in part.iterrows():
        i, j = ys.index(row[MAP_AXES[1]]), xs.index(row[MAP_AXES[0]])
        grid[i, j] = math.log10(row["best_tau"])
        colour = "white" if grid[i, j] < (lo + hi) / 2 else "black"
        text = f"{row['best_tau']:g}\n[{row['tau_low']:g}–{row['tau_high']:g}]{_tau_one(row)}"
        ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color=colour)
    image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=lo, vmax=hi, aspect="auto")
    ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs])
    ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys])
    ax.set_xlabel("view noise")
    return image


def _tau_one(row: pd.Series) -> str:
    """A cell's verdict on tau = 1 against the best tau < 1 (by the 95% interval of their
    difference), where the table has one."""
    if "diff" not in row or not np.isfinite(row.get("diff", np.nan)):
        return ""
    if row["diff_high"] < 0:
        return "\nτ=1 worse"
    return "\nτ=1 better" if row["diff_low"] > 0 else "\nτ=1 tied"


def _map_panel_title(pos: str, cols: list[str], combo: tuple) -> str:
    """The positives and the accuracy the claim judges them by, then the panel's combination."""
    title = f"{pos} positives ({CLAIM_METRIC[pos].replace('_accuracy', '')})"
    if combo:
        title += "\n" + ", ".join(
            f"{k} {v:g}" if not isinstance(v, str) else f"{k} {v}" for k, v in zip(cols, combo)
        )
    return title


@figure_function
def learned_temperature(summary: pd.DataFrame):
    """(a) the learnt tau at the checkpoints (mean over runs, 95% CI) with the best fixed tau of
    the same setting; (b) the monitor batch entropy along the way against the floor
    log n - g_n(tau_t) and log n."""
    learned = summary[summary["tau_mode"] != "fixed"]
    if learned.empty:
        raise NotApplicable(
            "learned_temperature", "no learnt temperature (its fixed ones: temperature_sweep)"
        )
    fig, (tau_ax, ent_ax) = plt.subplots(1, 2, figsize=(12.5, 5.0))
    keys = list(learned.groupby(SETTING).groups)
    colours = dict(zip(keys, palette(PALETTE, max(len(keys), 2))))
    styles: dict[float, Any] = {}  # per initial tau a line style: a name or a dash pattern
    for _, row in learned.sort_values("tau").iterrows():
        colour = colours[tuple(row[k] for k in SETTING)]
        ls = styles.setdefault(row["tau"], LINE_STYLES[len(styles) % len(LINE_STYLES)])
        marker, face = MODE_MARKERS[row["tau_mode"]]
        style = {"ls": ls, "marker": marker, "ms": 4, "color": colour, "mfc": face or colour}
        steps = np.array(checkpoint_steps(int(row["steps"])), dtype=float)
        _learnt_tau(tau_ax, row, steps, style)
        _entropy_along(ent_ax, row, steps, style)
    _best_fixed_taus(tau_ax, summary, keys, colours)
    clamped = (learned["tau_mode"] == "learned_clamped").any()
    if clamped:
        tau_ax.axhline(TAU_CLAMP, color="tab:red", ls=":", lw=1.5)
    tau_ax.set_xscale("log")
    tau_ax.set_yscale("log")
    tau_ax.set_xlabel("training step")
    tau_ax.set_ylabel("learnt temperature τ_t (mean over runs, 95% CI)")
    tau_ax.set_title(
        "(a) the learnt τ; thick line: best fixed τ of the same task (band: tied with it)"
    )
    ent_ax.set_xscale("log")
    ent_ax.set_xlabel("training step")
    ent_ax.set_ylabel("monitor batch entropy (nats, mean over anchors)")
    ent_ax.set_title("(b) entropy along the way vs its floor log n − g_n(τ_t) (black)")
    handles = _learned_handles(keys, colours, styles, set(learned["tau_mode"]), clamped)
    legend_below(fig, handles, ncol=2, y=0.02)
    fig.suptitle("Learnt temperature (t = log 1/τ trained with the encoder, as in CLIP)")
    return fig


def _along(row: pd.Series, metric: str, stat: str) -> np.ndarray:
    """A metric's `stat` (mean, ci_low, ci_high) at each checkpoint of one setting's training."""
    return np.array([row[f"{metric}_ckpt_{j}_{stat}"] for j in range(CHECKPOINTS)])


def _learnt_tau(ax, row: pd.Series, steps: np.ndarray, style: dict) -> None:
    """Panel (a), one setting: the learnt tau at the checkpoints, mean over runs with its 95%
    band (where training takes tau, to compare with the best fixed one)."""
    ax.plot(steps, _along(row, "tau", "mean"), **style)
    low, high = _along(row, "tau", "ci_low"), _along(row, "tau", "ci_high")
    ax.fill_between(steps, low, high, color=style["color"], alpha=0.25, lw=0)


def _entropy_along(ax, row: pd.Series, steps: np.ndarray, style: dict) -> None:
    """Panel (b), one setting: the monitor batch entropy at the checkpoints with its 95% interval
    against the floor log n − g_n(τ_t) at the tau reached (black) and log n: whether a learnt
    tau drives the entropy onto its floor."""
    ent = _along(row, "entropy", "mean")
    low, high = _along(row, "entropy", "ci_low"), _along(row, "entropy", "ci_high")
    marks = {k: style[k] for k in ("ls", "ms", "color", "mfc")}
    yerr = np.vstack([ent - low, high - ent])
    ax.errorbar(steps, ent, yerr=yerr, fmt=style["marker"], capsize=2, **marks)
    ax.plot(steps, _along(row, "entropy_floor", "mean"), ls=style["ls"], color="k", lw=1.6)
    ax.axhline(row["log_n"], color="0.5", lw=0.9, ls=":")


def _best_fixed_taus(ax, summary: pd.DataFrame, keys, colours) -> None:
    """Panel (a): per setting, the best fixed tau of the same task (thick) and the range tied with
    it (band), the target a learnt tau is judged against."""
    for key in keys:
        p = dict(zip(SETTING, key))
        table = best_tau(same_setting(fixed(summary), p), CLAIM_METRIC[p["positives"]])
        if len(table):
            b = table.iloc[0]
            ax.axhline(b["best_tau"], color=colours[key], lw=2.5, alpha=0.6)
            ax.axhspan(b["tau_low"], b["tau_high"], color=colours[key], alpha=0.08)


def _learned_handles(keys, colours, styles: dict, modes: set, clamped: bool) -> list[Line2D]:
    """A colour per setting, a line style per initial tau, a marker per learnt-tau mode run, and
    CLIP's clamp where a run used it."""
    handles = [Line2D([], [], color=colours[k], marker="o", label=_label(k)) for k in keys]
    handles += [Line2D([], [], color="0.3", ls=ls, label=f"τ₀ = {t:g}") for t, ls in styles.items()]
    handles += [
        Line2D([], [], color="0.3", ls="", marker=m, mfc=face or "0.3", label=mode)
        for mode, (m, face) in MODE_MARKERS.items()
        if mode in modes
    ]
    if clamped:
        handles.append(Line2D([], [], color="tab:red", ls=":", label="CLIP's clamp τ = 0.01"))
    return handles


@figure_function
def flip_map(summary: pd.DataFrame):
    """Instance positives along the difficulty r = view noise / instance noise (x) and the fixed
    tau (y), coloured by mean 5-NN accuracy (text: mean and the 95% half-width); per column the
    best tau (star); shaded: the flip's interval (`besttau.flip_interval`), dashed: its
    interpolated zero. One panel row per loss, one column per number of classes and other
    varying parameters."""
    rows = fixed(summary)
    rows = rows[(rows["positives"] == "instance") & (rows["instance_noise"] > 0)]
    if rows.empty or rows["view_noise"].nunique() < 3:
        raise NotApplicable("flip_map", "no instance task with three or more view noises")
    metric = CLAIM_METRIC["instance"]
    rows = rows.assign(ratio=rows["view_noise"] / rows["instance_noise"])
    fam = [k for k in SETTING if k not in ("view_noise", "loss") and rows[k].nunique() > 1]
    losses = sorted(rows["loss"].unique())
    combos = sorted(rows[fam].drop_duplicates().itertuples(index=False, name=None)) if fam else [()]
    fig, axes = plt.subplots(
        len(losses),
        len(combos),
        figsize=(4.6 * len(combos) + 1.5, 3.8 * len(losses) + 0.8),
        squeeze=False,
        layout="constrained",
    )
    image = None
    scale = (float(rows[f"{metric}_mean"].min()), float(rows[f"{metric}_mean"].max()))
    for r, loss in enumerate(losses):
        for c, combo in enumerate(combos):
            part = rows[rows["loss"] == loss]
            for k, v in zip(fam, combo):
                part = part[part[k] == v]
            drawn, flip = _flip_panel(axes[r, c], part, metric, scale)
            image = drawn or image
            title = f"{loss}" + (
                "\n" + ", ".join(f"{k} {v}" for k, v in zip(fam, combo)) if combo else ""
            )
            axes[r, c].set_title(f"{title}\nflip: {flip}", fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8).set_label(
            f"mean {metric.replace('_', ' ')}"
        )
    fig.suptitle(
        "Where τ = 1 stops winning (instance positives): accuracy over difficulty × τ; star: best "
        "τ; shaded: the flip's interval (τ = 1 better at 95% left of it, worse right of it)"
    )
    return fig


def _flip_panel(ax, part: pd.DataFrame, metric: str, scale: tuple[float, float]):
    """One loss and task family: the accuracy grid (colours on the common `scale`), the best tau
    per ratio and the flip; returns the image and the flip's interval as text."""
    from attnsim.kinds.contrastive_training.besttau import flip_interval

    if part.empty:
        _empty(ax, "not run")
        return None, "not run"
    ax.grid(False)
    xs, ys = sorted(part["ratio"].unique()), sorted(part["tau"].unique())
    grid = np.full((len(ys), len(xs)), np.nan)
    for _, row in part.iterrows():
        i, j = ys.index(row["tau"]), xs.index(row["ratio"])
        grid[i, j] = row[f"{metric}_mean"]
        half = (row[f"{metric}_ci_high"] - row[f"{metric}_ci_low"]) / 2
        ink = "white" if grid[i, j] < sum(scale) / 2 else "black"
        ax.text(
            j,
            i,
            f"{grid[i, j]:.2f}\n±{half:.2f}",
            ha="center",
            va="center",
            fontsize=6.5,
            color=ink,
        )
    image = ax.imshow(
        grid, origin="lower", cmap="viridis", aspect="auto", vmin=scale[0], vmax=scale[1]
    )
    best = np.nanargmax(np.where(np.isnan(grid), -np.inf, grid), axis=0)
    ax.plot(range(len(xs)), best, "*", color="white", mec="black", ms=11, label="best τ")
    flip = flip_interval(best_tau(part.drop(columns="ratio"), metric))

    def position(ratio: float) -> float:  # x of a ratio on the categorical axis
        return float(np.interp(ratio, xs, range(len(xs))))

    bracketed = np.isfinite(flip["low"]) or np.isfinite(flip["high"])
    if bracketed:  # an open side reaches the axis' end
        low = position(flip["low"]) if np.isfinite(flip["low"]) else -0.5
        high = position(flip["high"]) if np.isfinite(flip["high"]) else len(xs) - 0.5
        ax.axvspan(low, high, color="tab:red", alpha=0.25, lw=0)
    if np.isfinite(flip["zero"]):
        ax.axvline(position(flip["zero"]), color="tab:red", ls="--", lw=1.5)
    ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs])
    ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys])
    ax.set_xlabel("view noise / instance noise")
    ax.set_ylabel("fixed τ")
    text = "not bracketed at 95%"
    if bracketed:
        ends = [f"{flip[k]:g}" if np.isfinite(flip[k]) else "edge" for k in ("low", "high")]
        text = f"[{ends[0]}, {ends[1]}]"
    if np.isfinite(flip["zero"]):
        text += f", zero at {flip['zero']:.2f}"
    return image, text
