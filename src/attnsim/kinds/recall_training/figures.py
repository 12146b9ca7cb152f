"""Figures of `recall_training` (docs/science.md §6.1-§6.3, §9): trainability against the initial
scale, beside the initial entropy and the initial logit gradient; learning curves per scale;
survival curves of the escape time per scale; the escape time against its predictors with the
fitted law; the separating experiment (normalised steps); entropy trajectories per learning rate;
the plateau law's exponent over batch x learning rate; divergence with and without the remedies of
entropy collapse on the same seeds."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

from attnsim.figures.common import NotApplicable, key_handles, legend_below, mean_errorbar
from attnsim.figures.style import PALETTE, figure_function, palette
from attnsim.kernels.training import CHECKPOINTS, checkpoint_steps
from attnsim.kinds.recall_training.kernel import SOFTMAX
from attnsim.kinds.recall_training.plateau import (
    LAW_LOGIT_STD,
    PREDICTORS,
    fit_setting,
    out_of_sample,
    refined_exponent,
)
from attnsim.stats import NotIdentified, fit_aft, kaplan_meier, wilson
from attnsim.subjects import normalisers

# one curve per run setting
RUN = ["optimiser", "lr", "values", "logits", "stop", "n", "d", "batch", "steps"]


def _label(key) -> str:
    optimiser, lr, values, qk, stop, n, d, batch, steps = key
    extra = (", W_v = I" if values == "identity" else "") + (", QK-norm" if qk == "qk_norm" else "")
    stopping = ", stop at threshold" if stop == "threshold" else ""
    return f"{optimiser} lr {lr:g}{extra} (n={n}, d={d}, {steps} steps{stopping})"


def _scale_sweep(summary: pd.DataFrame) -> bool:
    """A fixed-budget sweep over initial scales (what trainability and learning_curves show)."""
    return summary["scale"].nunique() >= 2 and (summary["stop"] == "never").any()


def _colours(keys) -> dict:
    return dict(zip(keys, palette(PALETTE, max(len(keys), 2))))


@figure_function
def trainability(summary: pd.DataFrame):
    """(a) final loss / chance vs scale (median, quartiles, mean over finite runs) with the initial
    entropy on a second axis; (b) share of runs reaching the threshold (Wilson 95%) and divergence
    rate; (c) the initial logit gradient vs scale (this kind's init_gradient relation)."""
    if not _scale_sweep(summary):
        raise NotApplicable("trainability", "no fixed-budget sweep over initial scales")
    data = summary[summary["stop"] == "never"].sort_values("scale")
    groups = list(data.groupby(RUN))
    colours = _colours([k for k, _ in groups])
    fig, axes = plt.subplots(1, 3, figsize=(16.5, 5.0))
    loss_ax, share_ax, grad_ax = axes
    entropy_ax = loss_ax.twinx()
    for key, line in groups:
        _final_loss(loss_ax, line, colours[key])
        _success_share(share_ax, line, colours[key])
        _initial_gradient(grad_ax, line, colours[key])
    first = data.drop_duplicates("scale")
    _initial_entropy(entropy_ax, first)
    _loss_references(loss_ax, data["scale"].min(), first["threshold"].iloc[0])
    share_ax.set_ylim(-0.03, 1.03)
    share_ax.set_ylabel("share of runs reaching loss/chance ≤ threshold\n(95% Wilson interval)")
    share_ax.set_title("(b) how often training succeeds")
    _gradient_axis(grad_ax, data, groups, colours)
    for ax in axes:
        _scale_axes(ax)
    legend_below(fig, _trainability_handles(groups, colours), ncol=2, y=0.02)
    fig.suptitle(
        "Training one attention head on associative recall from a given initial scale (top axis: "
        "logit std ≈ scale²):\n"
        "a start with one-hot weights (H₀ → 0, vanishing logit gradient) is slow to learn within "
        "this budget",
    )
    return fig


def _final_loss(ax, line: pd.DataFrame, colour) -> None:
    """Panel (a), one run setting: the median final loss, its quartile band (the upper quartile
    capped at 10³ so a diverged run's +inf does not fill the panel) and the mean over finite runs
    with its 95% interval."""
    x = line["scale"]
    ax.plot(x, line["final_loss_median"], "o-", color=colour, ms=4, lw=1.6, zorder=3)
    upper = np.minimum(line["final_loss_q75"], 1e3)
    ax.fill_between(x, line["final_loss_q25"], upper, color=colour, alpha=0.22, lw=0)
    mean_errorbar(
        ax,
        x,
        line,
        "final_loss",
        log=True,
        fmt="_",
        color=colour,
        ms=9,
        elinewidth=0.9,
        capsize=2,
        zorder=4,
    )


def _success_share(ax, line: pd.DataFrame, colour) -> None:
    """Panel (b), one run setting: the share reaching the threshold with its Wilson interval, and
    the share that diverged where any did."""
    x = line["scale"]
    share = line["reached_share"]
    below = share - line["reached_ci_low"]
    above = line["reached_ci_high"] - share
    yerr = np.clip(np.vstack([below, above]), 0, None)
    ax.errorbar(x, share, yerr=yerr, fmt="o-", color=colour, ms=4, lw=1.6, capsize=2)
    if line["diverged_mean"].max() > 0:
        ax.plot(x, line["diverged_mean"], "x:", color=colour, ms=6, lw=1.0)


def _initial_gradient(ax, line: pd.DataFrame, colour) -> None:
    """Panel (c), one run setting: the mean initial logit gradient with its 95% interval (what
    training sees) and, dashed, the median (the typical run)."""
    x = line["scale"]
    mean_errorbar(
        ax, x, line, "init_grad_logits", log=True, fmt="o-", color=colour, ms=4, lw=1.4, capsize=2
    )
    ax.plot(x, line["init_grad_logits_median"], "--", color=colour, lw=1.2)


def _initial_entropy(ax, first: pd.DataFrame) -> None:
    """Panel (a)'s right axis: the initial entropy per scale (the same draws for every setting)
    against its ceiling log n."""
    mean_errorbar(
        ax,
        first["scale"],
        first,
        "init_entropy",
        fmt="s--",
        color="0.35",
        ms=3.5,
        lw=1.1,
        capsize=2,
        zorder=2,
    )
    ax.axhline(first["log_n"].iloc[0], color="0.35", ls=":", lw=0.9)
    ax.set_ylim(0, first["log_n"].max() * 1.05)
    ax.set_ylabel("initial entropy H₀ (nats; grey squares)", color="0.3")


def _loss_references(ax, left: float, threshold: float) -> None:
    """Panel (a)'s reference lines: chance (1) and the success threshold, labelled at the left."""
    ax.axhline(1.0, color="k", lw=0.9, ls="-", alpha=0.6)
    ax.axhline(threshold, color="firebrick", lw=0.9, ls="--")
    ax.text(left, 1.0, " chance", va="top", fontsize=8)
    ax.text(left, threshold, " threshold", va="bottom", fontsize=8, color="firebrick")
    ax.set_yscale("log")
    ax.set_ylabel("final held-out loss / chance loss (1 − 1/n)")
    ax.set_title("(a) loss after training vs initial scale")


def _gradient_axis(ax, data: pd.DataFrame, groups, colours) -> None:
    """Panel (c)'s log axis: it shows the means (what training sees) down to 1e-4 of their
    largest value; medians below that (the typical one-hot row: e^-gap, down to 0) are marked at
    the bottom edge."""
    ax.set_yscale("log")
    means = data["init_grad_logits_mean"].to_numpy()
    floor = (
        max(np.nanmin(means[means > 0]) / 3, np.nanmax(means) * 1e-4) if np.any(means > 0) else 1e-6
    )
    ax.set_ylim(floor, np.nanmax(data["init_grad_logits_ci_high"]) * 2)
    for key, line in groups:
        below = line[~(line["init_grad_logits_median"] >= floor)]
        if below.empty:  # an empty unclipped line would stretch the panel's layout box to (0, 0)
            continue
        marks = np.full(len(below), floor * 1.15)
        ax.plot(below["scale"], marks, "v", color=colours[key], ms=6, clip_on=False)
    ax.set_ylabel("initial ‖∂ℓ/∂s‖ per example (RMS over the monitor set)")
    ax.set_title("(c) the initial logit gradient (init_gradient relation)")


def _scale_axes(ax) -> None:
    """The initial scale on a log axis, with the logit std it gives (≈ scale²) along the top."""
    ax.set_xscale("log")
    ax.set_xlabel("initial std of W_q, W_k entries (scale)")
    sec = ax.secondary_xaxis("top", functions=(np.square, lambda s: np.sqrt(np.clip(s, 0, None))))
    sec.tick_params(labelsize=7.5)
    sec.set_xlabel("initial logit std ≈ scale²", fontsize=8)


# trainability's legend entries for what each panel's marks mean: (marker, line style, grey, text)
_MEDIAN_KEY = "(a) median over runs; band: quartiles; bars: mean ± 95% CI over non-diverged runs"
_GRADIENT_KEY = "(c) mean ± 95% CI; dashed: median (the typical run); ▼ median below the axis"
_PANEL_KEYS = (
    ("o", "-", "0.3", _MEDIAN_KEY),
    ("s", "--", "0.35", "(a) initial entropy H₀ (right axis); dotted: log n"),
    ("x", ":", "0.3", "(b) share of runs that diverged (if any)"),
    ("o", "-", "0.3", _GRADIENT_KEY),
)


def _trainability_handles(groups, colours) -> list[Line2D]:
    """A colour per run setting, then what each panel's marks mean."""
    handles = [
        Line2D([], [], color=colours[k], marker="o", ms=4, label=_label(k)) for k, _ in groups
    ]
    handles += [
        Line2D([], [], color=grey, marker=marker, ls=ls, label=label)
        for marker, ls, grey, label in _PANEL_KEYS
    ]
    return handles


@figure_function
def learning_curves(summary: pd.DataFrame):
    """Monitor loss / chance at the log-spaced checkpoints: median and quartile band per scale, a
    panel per run setting."""
    if not _scale_sweep(summary):
        raise NotApplicable("learning_curves", "no fixed-budget sweep over initial scales")
    summary = summary[summary["stop"] == "never"]
    groups = list(summary.groupby(RUN))
    scales = sorted(summary["scale"].unique())
    colours = dict(zip(scales, palette("viridis", len(scales))))
    fig, axes = plt.subplots(
        1, len(groups), figsize=(6.2 * len(groups), 4.8), squeeze=False, sharey=True
    )
    for ax, (key, rows) in zip(axes[0], groups):
        steps = checkpoint_steps(int(key[-1]))  # the run's budget
        for _, row in rows.sort_values("scale").iterrows():
            c = colours[row["scale"]]
            med, lo, hi = (_per_checkpoint(row, "loss", q) for q in ("median", "q25", "q75"))
            ax.plot(
                steps,
                med,
                "o-",
                color=c,
                ms=3.5,
                lw=1.6,
                label=f"scale {row['scale']:g} (H₀ = {row['init_entropy_mean']:.2g})",
            )
            ax.fill_between(steps, lo, np.minimum(hi, 1e3), color=c, alpha=0.2, lw=0)
        ax.axhline(1.0, color="k", lw=0.9, alpha=0.6)
        ax.axhline(rows["threshold"].iloc[0], color="firebrick", lw=0.9, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_title(_label(key), fontsize=10)
        ax.legend(fontsize=8, frameon=False, loc="lower left")
    axes[0, 0].set_ylabel("monitor loss / chance (median; band: quartiles)")
    handles: list[Artist] = [
        Line2D([], [], color="k", alpha=0.6, label="chance (predict the mean value)"),
        Line2D([], [], color="firebrick", ls="--", label="threshold"),
    ]
    handles += [
        Patch(color="0.6", alpha=0.4, label="quartiles over runs (diverged runs count as +∞)")
    ]
    legend_below(fig, handles, ncol=3, y=0.0)
    fig.suptitle("Learning curves of associative recall from each initial scale")
    return fig


# --------------------------------------------------------------------------- escape times (§9)


def _settings(summary: pd.DataFrame):
    return list(summary.groupby(RUN))


def _step_curve(km, budget: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Kaplan-Meier estimate as the step function of its event times, from step 1 (S = 1)
    to the budget: x, S and the 95% log-log band, for `where="post"` steps."""
    x = np.concatenate([[1.0], km.times, [max(budget, km.times[-1] if km.times.size else 1.0)]])
    surv = np.concatenate([[1.0], km.survival, [km.survival[-1] if km.times.size else 1.0]])
    low = np.concatenate([[1.0], km.low, [km.low[-1] if km.times.size else 1.0]])
    high = np.concatenate([[1.0], km.high, [km.high[-1] if km.times.size else 1.0]])
    return x, surv, low, high


def _survival_curve(ax, runs, budget: float, colour, band: float = 0.15, **style) -> None:
    """One point's Kaplan-Meier step curve with its 95% log-log band shaded (`band`: its alpha)."""
    x, surv, low, high = _step_curve(kaplan_meier(*runs), budget)
    ax.fill_between(x, low, high, step="post", color=colour, alpha=band, lw=0)
    ax.step(x, surv, where="post", color=colour, **style)


def _survival_axes(ax, budget: float) -> None:
    """A survival panel's frame: log steps to past the budget (dotted), S in [0, 1], 1/2 marked."""
    ax.axvline(budget, color="0.4", ls=":", lw=1.0)
    ax.axhline(0.5, color="0.6", lw=0.7)
    ax.set_xscale("log")
    ax.set_xlim(0.8, budget * 1.3)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("training step")


def _fitted_survival(ax, rows, runs, colours, budget):
    """The Weibull AFT fitted on every run of the law's regime (docs/science.md §9.9): its
    survival curve S(t) = exp(-exp((log t - a - b log sigma0) / s)) per scale, dashed."""
    regime = rows[rows["logit_std"] >= LAW_LOGIT_STD]
    if regime["scale"].nunique() < 2:
        return
    parts = [(math.log(r["logit_std"]), runs[r["point_id"]]) for _, r in regime.iterrows()]
    x = np.concatenate([np.full(len(t), lx) for lx, (t, _) in parts])
    time = np.maximum(np.concatenate([t for _, (t, _) in parts]), 1.0)
    event = np.concatenate([e for _, (_, e) in parts])
    try:
        fit = fit_aft(x, time, event, "weibull")
    except NotIdentified:
        return
    grid = np.geomspace(1.0, budget, 200)
    for _, r in regime.iterrows():
        centre = fit.intercept + fit.slope * math.log(r["logit_std"])
        w = (np.log(grid) - centre) / fit.sigma
        ax.plot(grid, np.exp(-np.exp(w)), "--", color=colours[r["scale"]], lw=1.0, alpha=0.9)


def _point_runs(trials: pd.DataFrame) -> dict:
    """point id -> (escape times, escaped flags) of its runs, in trial order."""
    out = {}
    for point, group in trials.groupby("point_id", sort=True):
        group = group.sort_values("trial") if "trial" in group else group
        out[point] = (group["escape_step"].to_numpy(float), group["escaped"].to_numpy(float))
    return out


@figure_function
def escape_survival(summary: pd.DataFrame, trials: pd.DataFrame | None = None):
    """Survival curves of the escape time per initial scale, a panel per run setting: the share of
    runs not yet escaped, Kaplan-Meier, drawn as the step function of the runs' event times with
    its 95% log-log band; the median with its 95% interval as a horizontal bar at 1/2; dashed, the
    Weibull AFT law fitted on every run of the law's regime (docs/science.md §9.9)."""
    if not (summary["stop"] == "threshold").any():
        raise NotApplicable(
            "escape_survival", "no runs that stop at the threshold: see trainability"
        )
    if trials is None or trials.empty:
        raise NotApplicable("escape_survival", "the runs' escape times were not given")
    summary = summary[summary["stop"] == "threshold"]
    runs = _point_runs(trials)
    groups = _settings(summary)
    scales = sorted(summary["scale"].unique())
    colours = dict(zip(scales, palette("viridis", max(len(scales), 2))))
    cols = min(len(groups), 3)
    rows_n = int(np.ceil(len(groups) / cols))
    fig, axes = plt.subplots(
        rows_n, cols, figsize=(5.6 * cols, 4.3 * rows_n), squeeze=False, sharey=True
    )
    for ax, (key, rows) in zip(axes.flat, groups):
        budget = int(key[-1])
        for _, row in rows.sort_values("scale").iterrows():
            c = colours[row["scale"]]
            _survival_curve(
                ax,
                runs[row["point_id"]],
                budget,
                c,
                lw=1.6,
                gid="kaplan-meier",
                label=f"scale {row['scale']:g} (H₀ = {row['init_entropy_mean']:.2g})",
            )
            if np.isfinite(row["escape_median"]):
                right = (
                    row["escape_median_ci_high"]
                    if np.isfinite(row["escape_median_ci_high"])
                    else budget
                )
                ax.errorbar(
                    row["escape_median"],
                    0.5,
                    xerr=[
                        [row["escape_median"] - row["escape_median_ci_low"]],
                        [right - row["escape_median"]],
                    ],
                    fmt="o",
                    color=c,
                    ms=4,
                    capsize=3,
                    lw=1.1,
                )
        _fitted_survival(ax, rows, runs, colours, budget)
        _survival_axes(ax, budget)
        ax.set_title(_label(key), fontsize=9.5)
        ax.legend(fontsize=7.5, frameon=False, loc="lower left")
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("share of runs not yet escaped (Kaplan–Meier)")
    handles = [
        Line2D([], [], color="0.3", lw=1.6, label="Kaplan–Meier: a step at each escape time"),
        Patch(color="0.3", alpha=0.15, label="95% log-log band"),
        Line2D(
            [], [], color="0.3", marker="o", ls="", label="median escape time with its 95% interval"
        ),
        Line2D(
            [],
            [],
            color="0.3",
            ls="--",
            lw=1.0,
            label="Weibull law fitted on the panel's runs at logit std ≥ 4 (§9.9)",
        ),
        Line2D([], [], color="0.4", ls=":", label="budget: runs still above it are censored there"),
    ]
    legend_below(fig, handles, ncol=2, y=0.0)
    fig.suptitle(
        "Escape from the plateau: time to reach loss / chance ≤ threshold, per initial scale "
        "(right-censored at the budget)",
    )
    return fig


RUN_COLUMNS = ("trial", "escape_step", "escaped")
escape_survival.trial_columns = RUN_COLUMNS


# a fit to the medians is drawn from this many points: with 3 (1 degree of freedom) its slope's
# t interval is ~13 standard errors wide (1.44 [-118, 121] on the default sweep), nothing to read;
# the same count the out-of-sample comparison needs (`plateau.out_of_sample`)
FIT_POINTS = 4


def _law_line(regime: pd.DataFrame, predictor: str, runs: dict | None):
    """The fitted law over the regime's points: for the initial logit std with the runs given,
    the Weibull AFT on every run (docs/science.md §9.9; its median line exp(a + b log sigma0 +
    s log log 2)); otherwise the weighted fit to the medians (§9.4). (grid, line, label) or None."""
    if predictor == "logit_std" and runs is not None and regime["scale"].nunique() >= 2:
        sigma = regime["logit_std"].to_numpy(float)
        times = [runs[p] for p in regime["point_id"]]
        x = np.concatenate([np.full(len(t), math.log(v)) for v, (t, _) in zip(sigma, times)])
        time = np.maximum(np.concatenate([t for t, _ in times]), 1.0)
        event = np.concatenate([e for _, e in times])
        try:
            fit = fit_aft(x, time, event, "weibull")
        except NotIdentified:
            return None
        grid = np.geomspace(sigma.min(), sigma.max(), 50)
        centre = fit.intercept + fit.sigma * math.log(math.log(2))
        text = f"every run (Weibull): b {fit.slope:.2f} [{fit.slope_low:.2f}, {fit.slope_high:.2f}]"
        return grid, np.exp(centre + fit.slope * np.log(grid)), text
    law = fit_setting(regime, predictor)
    if law is None or law["points"] < FIT_POINTS:  # 3 points: 1 dof, an interval of nothing
        return None
    grid = np.geomspace(law["x"].min(), law["x"].max(), 50)
    text = f"fit to medians: slope {law['slope']:.2f} [{law['ci_low']:.2f}, {law['ci_high']:.2f}]"
    return grid, 10 ** (law["intercept"] + law["slope"] * np.log10(grid)), text


def _law_panel(ax, summary, predictor, colours, show_theory, runs=None):
    column, label = PREDICTORS[predictor]
    for key, rows in _settings(summary):
        c = colours[key]
        rows = rows.sort_values(column)
        x = rows[column].astype(float)
        med = rows["escape_median"].astype(float)
        ok = np.isfinite(med)
        low = rows["escape_median_ci_low"].astype(float)
        high = (
            rows["escape_median_ci_high"]
            .astype(float)
            .where(lambda h: np.isfinite(h), rows["steps"].astype(float))
        )
        ax.errorbar(
            x[ok],
            med[ok],
            yerr=[med[ok] - low[ok], high[ok] - med[ok]],
            fmt="o",
            color=c,
            ms=4.5,
            capsize=2,
            lw=1.0,
        )
        censored = ~ok
        # median beyond the budget
        ax.plot(x[censored], rows["steps"][censored].astype(float), "^", color=c, ms=7, mfc="none")
        regime = rows[rows["logit_std"] >= LAW_LOGIT_STD]
        line = _law_line(regime, predictor, runs)
        if line is None:
            finite = int(np.isfinite(regime["escape_median"].astype(float)).sum())
            ax.plot([], [], " ", label=f"{finite} escape points: too few for a fit ({FIT_POINTS})")
            continue
        grid, fitted, text = line
        ax.plot(grid, fitted, "-", color=c, lw=1.5, label=text)
        if show_theory:
            b = float(rows["escape_exponent"].iloc[0])
            mid = len(grid) // 2
            ax.plot(
                grid,
                fitted[mid] * (grid / grid[mid]) ** b,
                "--",
                color=c,
                lw=1.1,
                alpha=0.8,
                label=f"predicted slope {b:g} (§9.4)",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(label + (" (linear)" if predictor == "entropy" else ""))
    if predictor == "entropy":
        ax.set_xscale("linear")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, frameon=False, loc="best")


@figure_function
def escape_law(summary: pd.DataFrame, trials: pd.DataFrame | None = None):
    """Median escape time (Kaplan-Meier, 95% interval; ^ where more than half were censored at the
    budget) against the three predictors measured at initialisation, with the law fitted over the
    regime (logit std >= 4): against the logit std the Weibull AFT on every run (§9.9, what the
    claims judge; its median line), against the others the weighted fit to the medians, and the
    predicted exponent (§9.4); the titles give each predictor's out-of-sample error (leave one
    scale out)."""
    summary = summary[summary["stop"] == "threshold"]
    runs = _point_runs(trials) if trials is not None and not trials.empty else None
    if summary[summary["logit_std"] >= LAW_LOGIT_STD]["scale"].nunique() < 3:
        raise NotApplicable("escape_law", "fewer than 3 escape points with initial logit std >= 4")
    groups = _settings(summary)
    colours = _colours([k for k, _ in groups])
    cv = out_of_sample(summary[summary["logit_std"] >= LAW_LOGIT_STD])
    finite = {k: cv[k] for k in PREDICTORS if np.isfinite(cv[k])}
    best = min(finite, key=lambda k: finite[k]) if finite else None
    fig, axes = plt.subplots(1, 3, figsize=(16.5, 5.0))
    for letter, ax, predictor in zip("abc", axes, PREDICTORS):
        _law_panel(ax, summary, predictor, colours, predictor == "logit_std", runs)
        title = LAW_TITLES[predictor]
        if np.isfinite(cv[predictor]):  # the comparison, where the data can make it
            title += f"; out-of-sample RMSE of log₁₀ median {cv[predictor]:.3f}"
            title += " (best)" if predictor == best else ""
        ax.set_title(f"({letter}) {title}", fontsize=9)
    axes[0].set_ylabel("median escape time (steps; 95% interval)")
    handles = [Line2D([], [], color=colours[k], marker="o", label=_label(k)) for k, _ in groups]
    handles += [
        Line2D(
            [],
            [],
            color="0.3",
            marker="^",
            ls="",
            mfc="none",
            label="median beyond the budget (drawn at the budget)",
        ),
        Line2D(
            [],
            [],
            color="0.3",
            ls="--",
            label="predicted exponent through the fit's centre (left panel)",
        ),
    ]
    legend_below(fig, handles, ncol=2, y=0.02)
    title = (
        "The plateau law: escape time against the initial logit std, the initial entropy and the "
        "initial gradient norm"
    )
    if not finite:  # said once, not in every panel
        title += (
            f"\n(which predictor explains it best needs {FIT_POINTS} escape points per setting "
            f"with logit std ≥ {LAW_LOGIT_STD:g} to compare out of sample)"
        )
    fig.suptitle(title)
    return fig


LAW_TITLES = {
    "logit_std": "every run, right-censored (what the claims judge)",
    "entropy": "against the initial entropy",
    "gradient": "against the initial gradient norm",
}
escape_law.trial_columns = RUN_COLUMNS


@figure_function
def separating(summary: pd.DataFrame):
    """(a) Share escaped within the budget against the initial logit std (95% interval) for every
    setting, beside what each explanation predicts from one-hot starts: the information story
    (no direction to follow: normalised steps stall, share ~0) and the vanishing-gradient story
    (full-size steps escape in a time growing like logit_std^(1/2)); (b) the median escape time."""
    if not ((summary["optimiser"] == "normgd") & (summary["stop"] == "threshold")).any():
        raise NotApplicable("separating", "no normalised-gradient (normgd) escape runs")
    summary = summary[summary["stop"] == "threshold"]
    groups = _settings(summary)
    colours = _colours([k for k, _ in groups])
    fig, (share_ax, time_ax) = plt.subplots(1, 2, figsize=(13.0, 5.0))
    for key, rows in groups:
        c = colours[key]
        rows = rows.sort_values("logit_std")
        x = rows["logit_std"]
        share = rows["escaped_ckpt_7"]
        share_ax.errorbar(
            x,
            share,
            yerr=np.clip(
                [share - rows["escaped_ckpt_7_ci_low"], rows["escaped_ckpt_7_ci_high"] - share],
                0,
                None,
            ),
            fmt="o-",
            color=c,
            ms=4,
            capsize=2,
            lw=1.4,
        )
        one_hot = rows[rows["init_entropy_mean"] < 0.1]
        share_ax.plot(
            one_hot["logit_std"], one_hot["escaped_ckpt_7"], "s", color=c, ms=8, mfc="none"
        )
        med = rows["escape_median"].astype(float)
        ok = np.isfinite(med)
        high = (
            rows["escape_median_ci_high"]
            .astype(float)
            .where(lambda h: np.isfinite(h), rows["steps"].astype(float))
        )
        time_ax.errorbar(
            x[ok],
            med[ok],
            yerr=[med[ok] - rows["escape_median_ci_low"][ok], high[ok] - med[ok]],
            fmt="o-",
            color=c,
            ms=4,
            capsize=2,
        )
        time_ax.plot(x[~ok], rows["steps"][~ok], "^", color=c, ms=7, mfc="none")
        if ok.sum() >= 2:
            anchor_x, anchor_y = float(x[ok].iloc[0]), float(med[ok].iloc[0])
            grid = np.geomspace(anchor_x, float(x.max()), 40)
            b = float(rows["escape_exponent"].iloc[0])
            time_ax.plot(grid, anchor_y * (grid / anchor_x) ** b, "--", color=c, lw=1.0, alpha=0.8)
    share_ax.axhspan(0, 0.05, color="firebrick", alpha=0.12, lw=0)
    share_ax.text(
        summary["logit_std"].min(),
        0.06,
        " information story: one-hot starts stall (≤ 5%)",
        fontsize=8,
        color="firebrick",
    )
    for ax in (share_ax, time_ax):
        ax.set_xscale("log")
        ax.set_xlabel("initial logit std (≈ scale²)")
    share_ax.set_ylim(-0.03, 1.03)
    share_ax.set_ylabel("share escaped within the budget (Kaplan–Meier, 95%)")
    share_ax.set_title("(a) does a one-hot start (□: H₀ < 0.1 nats) escape?", fontsize=10)
    time_ax.set_yscale("log")
    time_ax.set_ylabel("median escape time (steps; 95% interval)")
    time_ax.set_title("(b) how long it takes; dashed: logit_std^b, b predicted (§9.4)", fontsize=10)
    handles: list[Artist] = [
        Line2D([], [], color=colours[k], marker="o", label=_label(k)) for k, _ in groups
    ]
    handles += [
        Patch(
            color="firebrick", alpha=0.25, label="information story's prediction for one-hot starts"
        ),
        Line2D(
            [], [], color="0.3", marker="^", ls="", mfc="none", label="median beyond the budget"
        ),
    ]
    legend_below(fig, handles, ncol=2, y=0.02)
    control = (summary["optimiser"] == "randdir").any()
    fig.suptitle(
        "Separating the explanations: steps of fixed size in the gradient's direction (normgd) "
        "from one-hot starts" + (", and in random directions (randdir)" if control else ""),
    )
    return fig


def _with_runs(summary: pd.DataFrame, trials: pd.DataFrame | None) -> pd.DataFrame:
    """The summary with the claims' column `runs` (escape times and flags per point), so that the
    figure fits exactly what the claims judge (claims.law_fits)."""
    runs = _point_runs(trials) if trials is not None and not trials.empty else {}
    empty = (np.zeros(0), np.zeros(0))
    out = summary.copy()
    out["runs"] = [
        dict(zip(("escape_step", "escaped"), runs.get(p, empty))) for p in summary["point_id"]
    ]
    return out


@figure_function
def plateau_map(summary: pd.DataFrame, trials: pd.DataFrame | None = None):
    """The plateau law's exponent b per cell of batch x learning rate (the censored fit of §9.9 on
    every run at logit std >= 4, 95% interval covering the Weibull and log-normal fits: the
    claims' numbers), a panel per optimiser, one line per learning rate; beside the two laws of
    §9.4 (b = 1/2, b = 1) and what §9.8's refinement predicts for a size-free step at each batch
    over the scales swept (docs/science.md §9.10)."""
    from attnsim.kinds.recall_training.claims import law_fits  # pandas-heavy: only when drawn

    summary = summary[(summary["stop"] == "threshold") & (summary["logits"] == "dot")]
    regime = summary[(summary["logit_std"] >= LAW_LOGIT_STD) & (summary["optimiser"] != "randdir")]
    if regime.empty or regime["batch"].nunique() * regime["lr"].nunique() < 2:
        raise NotApplicable("plateau_map", "escape runs at one batch and one learning rate only")
    cells, unidentified = law_fits(_with_runs(regime, trials))
    if cells.empty:
        raise NotApplicable("plateau_map", "no cell whose exponent is identified")
    optimisers = sorted(cells["optimiser"].unique())
    fig, axes = plt.subplots(
        1, len(optimisers), figsize=(6.2 * len(optimisers), 5.0), squeeze=False
    )
    batches = np.array(sorted(regime["batch"].unique()), dtype=float)
    handles: list[Artist] = []
    for ax, optimiser in zip(axes[0], optimisers):
        mine = cells[cells["optimiser"] == optimiser]
        rates = sorted(mine["lr"].unique())
        colours = _colours(rates)
        for j, (lr, rows) in enumerate(mine.groupby("lr", sort=True)):
            for values, line in rows.groupby("values", sort=True):
                line = line.sort_values("batch")
                x = line["batch"].to_numpy(float) * 2 ** (0.06 * (j - (len(rates) - 1) / 2))
                ax.errorbar(
                    x,
                    line["value"],
                    yerr=np.clip(
                        [line["value"] - line["ci_low"], line["ci_high"] - line["value"]], 0, 5
                    ),
                    fmt="o-" if values == "identity" else "s--",
                    color=colours[lr],
                    ms=5,
                    capsize=3,
                    lw=1.4,
                    label=f"lr {lr:g}" + (", W_v = I" if values == "identity" else ""),
                )
        ax.axhline(1.0, color="0.35", ls=":", lw=1.0)
        ax.axhline(0.5, color="0.35", ls="-.", lw=1.0)
        sigmas = regime.loc[regime["optimiser"] == optimiser, "logit_std"].unique()
        n = int(regime["n"].iloc[0])
        if optimiser == "sgd":
            predicted = np.ones_like(batches)
        else:
            predicted = np.array([refined_exponent(sigmas, int(b), n) for b in batches])
        ax.plot(batches, predicted, color="black", lw=2.0, alpha=0.35, zorder=0)
        ax.set_xscale("log", base=2)
        ax.set_xticks(batches, [f"{b:g}" for b in batches])
        ax.set_xlabel("batch size (examples per step)")
        ax.set_ylabel("exponent b of escape time ~ logit_std^b (95% interval)")
        ax.set_title(f"{optimiser}: logit std {min(sigmas):.2g} to {max(sigmas):.3g}", fontsize=10)
        ax.legend(fontsize=8, frameon=False, loc="best")
    handles += [
        Line2D(
            [], [], color="black", lw=2.0, alpha=0.35, label="predicted (§9.8 refinement; SGD: 1)"
        ),
        Line2D([], [], color="0.35", ls=":", label="b = 1 (SGD's law, §9.4)"),
        Line2D([], [], color="0.35", ls="-.", label="b = 1/2 (size-free steps, §9.4)"),
    ]
    legend_below(fig, handles, ncol=3, y=0.02)
    title = "The plateau law's exponent over batch × learning rate"
    if unidentified:
        title += f" ({len(unidentified)} cell(s) not identified)"
    fig.suptitle(title)
    return fig


plateau_map.trial_columns = ("trial", "escape_step", "escaped")


@figure_function
def training_entropy(summary: pd.DataFrame):
    """Top: mean monitor entropy at the checkpoints (95% interval over non-diverged runs) per
    learning rate, a panel per optimiser and QK-norm setting, with Zhai et al.'s lower bound from
    the logits' norm (dashed) and log n; bottom: the share of runs whose entropy collapsed (< 0.1
    nats) and the share that diverged, against the learning rate (Wilson 95%)."""
    if summary["lr"].nunique() < 2:
        raise NotApplicable("training_entropy", "not a sweep over learning rates")
    keys = ["optimiser", "logits", "values", "scale", "steps"]
    panels = [(k, r) for k, r in summary.groupby(keys) if r["lr"].nunique() >= 2]
    fig, axes = plt.subplots(2, len(panels), figsize=(5.8 * len(panels), 8.6), squeeze=False)
    for col, (key, rows) in enumerate(panels):
        _entropy_per_lr(axes[0, col], rows, key, col)
        _collapse_shares(axes[1, col], rows.sort_values("lr"))
    legend_below(fig, key_handles(_ENTROPY_KEYS), ncol=2, y=0.01)
    fig.suptitle(
        "Entropy collapse during training: entropy trajectories per learning rate, with and "
        "without QK-norm",
    )
    return fig


# training_entropy's legend for its marks: (colour, marker, line style, line width, text)
_ENTROPY_KEYS = (
    ("0.3", "o", None, None, "mean entropy over non-diverged runs (band: 95% interval)"),
    ("0.3", None, "--", None, "lower bound from the logits' norm (Zhai et al. 2023; §9.6)"),
    ("0.4", None, ":", None, "log n (uniform)"),
    ("firebrick", None, "-.", None, "collapse level, 0.1 nats"),
)


def _entropy_per_lr(ax, rows: pd.DataFrame, key, col: int) -> None:
    """training_entropy's top panel for one setting: per learning rate the mean entropy from
    initialisation through the checkpoints with its band and Zhai et al.'s bound, labelled with
    how many runs collapsed (early) and diverged; log n and the collapse level for reference."""
    optimiser, qk, values, scale, budget = key
    lrs = sorted(rows["lr"].unique())
    colours = dict(zip(lrs, palette("plasma", max(len(lrs) + 1, 2))))
    steps = np.array(checkpoint_steps(int(budget)), dtype=float)
    x = np.concatenate([[0.7], steps])
    for _, row in rows.sort_values("lr").iterrows():
        c = colours[row["lr"]]
        mean, lo, hi = (_per_checkpoint(row, "entropy", q) for q in ("mean", "ci_low", "ci_high"))
        bound = _per_checkpoint(row, "zhai_bound", "mean")
        label = (
            f"lr {row['lr']:g}: {row['collapsed_share']:.0%} collapse "
            f"({row['collapsed_early_share']:.0%} before learning), "
            f"{row['diverged_mean']:.0%} diverge"
        )
        y = np.concatenate([[row["init_entropy_mean"]], mean])
        ax.plot(x, y, "o-", color=c, ms=3.5, lw=1.5, label=label)
        ax.fill_between(steps, lo, hi, color=c, alpha=0.18, lw=0)
        ax.plot(steps, bound, "--", color=c, lw=1.0)
    ax.axhline(rows["log_n"].iloc[0], color="0.4", ls=":", lw=0.9)
    ax.axhline(0.1, color="firebrick", ls="-.", lw=0.9)
    ax.set_xscale("log")
    ax.set_ylim(-0.05, rows["log_n"].iloc[0] * 1.06)
    ax.set_xlabel("training step (first point: initialisation)")
    ax.set_ylabel("monitor mean attention entropy (nats)")
    logit = "QK-norm" if qk == "qk_norm" else "no QK-norm"
    fixed = ", W_v = I" if values == "identity" else ""
    ax.set_title(f"({chr(97 + col)}) {optimiser}, {logit}{fixed}, scale {scale:g}", fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="best")


def _per_checkpoint(row: pd.Series, metric: str, statistic: str) -> np.ndarray:
    """A summary statistic of a monitor metric at the checkpoints, in checkpoint order."""
    return np.array([row[f"{metric}_ckpt_{j}_{statistic}"] for j in range(CHECKPOINTS)])


_SHARES = (
    ("collapsed", "o-", "entropy collapsed (< 0.1 nats)"),
    ("collapsed_early", "s-", "collapsed before the loss reached the threshold"),
    ("diverged", "x--", "diverged"),
)


def _collapse_shares(ax, rows: pd.DataFrame) -> None:
    """training_entropy's bottom panel for one setting: against the learning rate, the shares of
    runs that collapsed, collapsed before learning and diverged, each with its Wilson interval."""
    for name, marker, label in _SHARES:
        mean, lo, hi = _share_with_interval(rows, name)
        yerr = np.clip([mean - lo, hi - mean], 0, None)
        ax.errorbar(rows["lr"], mean, yerr=yerr, fmt=marker, ms=5, capsize=2, label=label)
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("learning rate")
    ax.set_ylabel("share of runs (95% Wilson interval)")
    ax.legend(fontsize=8, frameon=False)


def _share_with_interval(rows: pd.DataFrame, name: str):
    """A share and its Wilson 95% interval per point: stored for the collapse shares; for the
    divergence share (stored as a mean of 0/1) computed here from the count it implies."""
    if name != "diverged":
        return rows[f"{name}_share"], rows[f"{name}_ci_low"], rows[f"{name}_ci_high"]
    mean = rows["diverged_mean"]
    bounds = [wilson(int(round(m * t)), int(t)) for m, t in zip(mean, rows["n_trials"])]
    lo = pd.Series([b[0] for b in bounds], index=rows.index)
    hi = pd.Series([b[1] for b in bounds], index=rows.index)
    return mean, lo, hi


# --------------------------------------------------------------- the normaliser comparison (§12.7)


def _normaliser_style(name: str) -> str:
    """Solid: a near-tie map (its gradient vanishes off rare near-ties); dashed: ReLU and
    sigmoid, predicted to follow the travel law b = 1/2 (docs/science.md §12.7)."""
    from attnsim.kinds.recall_training.claims import TRAVEL_LAW

    return "--" if name in TRAVEL_LAW else "-"


def _median_panel(ax, rows: pd.DataFrame, colours: dict, budget: float) -> None:
    """Kaplan-Meier median escape time against the initial logit std per normaliser (95%
    intervals; a median censored at the budget drawn as a triangle there), with the laws
    sigma^(1/2) and sigma drawn through softmax's median at the smallest logit std."""
    from attnsim.kinds.recall_training.claims import TRAVEL_EXPONENT

    for name, group in rows.groupby("normaliser", sort=False):
        group = group.sort_values("logit_std")
        x = group["logit_std"].to_numpy(float)
        med = group["escape_median"].to_numpy(float)
        low = group["escape_median_ci_low"].to_numpy(float)
        high = np.minimum(group["escape_median_ci_high"].to_numpy(float), budget)
        seen = np.isfinite(med)
        ax.errorbar(
            x[seen],
            med[seen],
            yerr=[med[seen] - low[seen], np.maximum(high[seen] - med[seen], 0.0)],
            color=colours[name],
            ls=_normaliser_style(name),
            marker="o",
            ms=4,
            capsize=2.5,
            lw=1.2,
        )
        ax.plot(x[~seen], np.full((~seen).sum(), budget), "^", color=colours[name], ms=6)
    anchor = rows[(rows["normaliser"] == SOFTMAX) & np.isfinite(rows["escape_median"])]
    if not anchor.empty:
        first = anchor.loc[anchor["logit_std"].idxmin()]
        grid = np.geomspace(rows["logit_std"].min(), rows["logit_std"].max(), 50)
        for b, style in ((TRAVEL_EXPONENT, ":"), (1.0, "-.")):
            line = first["escape_median"] * (grid / first["logit_std"]) ** b
            label = "σ^(1/2)" if b == TRAVEL_EXPONENT else "σ^1"
            ax.plot(grid, line, style, color="0.25", lw=1.1, label=f"{label} through softmax")
    ax.axhline(budget, color="0.4", ls=":", lw=1.0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("initial logit std σ")
    ax.set_ylabel("median escape time (steps, Kaplan–Meier, 95% CI)")
    ax.set_title("median against σ; theory: b = 1/2 (travel), up to 1 (near-ties)", fontsize=9)
    ax.legend(fontsize=7.5, frameon=False, loc="lower right")


@figure_function
def escape_by_normaliser(summary: pd.DataFrame, trials: pd.DataFrame | None = None):
    """Escape from large initial scales per normaliser (docs/science.md §12.7): a panel per
    initial scale in the law's regime (logit std >= 4), one Kaplan-Meier curve per normaliser with
    its 95% log-log band (solid: near-tie maps, whose gradient vanishes off rare near-ties; dashed:
    ReLU and sigmoid, predicted to follow b = 1/2), and a last panel with the median escape time
    against the logit std and the two laws."""
    if trials is None or trials.empty:
        raise NotApplicable("escape_by_normaliser", "the runs' escape times were not given")
    rows = summary[(summary["stop"] == "threshold") & (summary["logits"] == "dot")]
    if rows["normaliser"].nunique() < 2:
        raise NotApplicable("escape_by_normaliser", "escape runs of fewer than two normalisers")
    setting = rows.groupby([c for c in RUN if c != "steps"], sort=True).ngroup()
    rows = rows[setting == setting.min()]  # one run setting (the first): the comparison's
    budget = float(rows["steps"].max())
    runs = _point_runs(trials)
    names = [n for n in normalisers.names() if n in set(rows["normaliser"])]
    colours = dict(zip(names, palette("tab10", max(len(names), 2))))
    regime = rows[rows["logit_std"] >= LAW_LOGIT_STD]
    scales = sorted(regime["scale"].unique())[-3:] or sorted(rows["scale"].unique())[-1:]
    fig, axes = plt.subplots(
        1, len(scales) + 1, figsize=(5.0 * (len(scales) + 1), 4.8), squeeze=False
    )
    for ax, scale in zip(axes[0], scales):
        here = rows[rows["scale"] == scale]
        for name in names:
            for _, row in here[here["normaliser"] == name].iterrows():
                _survival_curve(
                    ax,
                    runs[row["point_id"]],
                    budget,
                    colours[name],
                    band=0.08,
                    lw=1.5,
                    ls=_normaliser_style(name),
                    gid=f"kaplan-meier {name}",
                )
        sigma = here["logit_std"].iloc[0]
        _survival_axes(ax, budget)
        ax.set_title(f"scale {scale:g}: initial logit std σ = {sigma:.3g}", fontsize=9.5)
    axes[0, 0].set_ylabel("share of runs not yet escaped (Kaplan–Meier)")
    _median_panel(axes[0, -1], rows, colours, budget)
    first = rows.iloc[0]
    handles = [
        Line2D([], [], color=colours[n], ls=_normaliser_style(n), lw=1.6, label=n) for n in names
    ] + [
        Patch(color="0.3", alpha=0.15, label="95% log-log band"),
        Line2D([], [], color="0.3", marker="^", ls="", label="median censored at the budget"),
        Line2D([], [], color="0.4", ls=":", label="budget (runs still above it are censored)"),
    ]
    legend_below(fig, handles, ncol=5, y=0.0)
    fig.suptitle(
        f"Escape per normaliser: time to loss / chance ≤ {first['threshold']:g} "
        f"({first['optimiser']} lr {first['lr']:g}, n={first['n']}, d={first['d']}); "
        "solid: near-tie maps, dashed: ReLU, sigmoid (predicted b = 1/2)",
    )
    return fig


escape_by_normaliser.trial_columns = RUN_COLUMNS


# the trial columns of `divergence`: each run's trajectory at the checkpoints and its event steps
DIVERGENCE_COLUMNS = (
    "trial",
    "init_entropy",
    "init_loss",
    *(f"{m}_ckpt_{j}" for m in ("entropy", "loss") for j in range(CHECKPOINTS)),
    "collapse_step",
    "diverged_step",
)
VARIANT = ["logits", "normaliser"]  # what tells plain softmax from a remedy


def _variant_label(key) -> str:
    logits, normaliser = key
    if logits == "dot":
        return "plain softmax" if normaliser == SOFTMAX else normaliser
    return "QK-norm" + ("" if normaliser == SOFTMAX else f" + {normaliser}")


def _run_lines(ax, runs: pd.DataFrame, metric: str, steps: np.ndarray, colour) -> None:
    """One faint line per run (step 0 at x = 0.7), ending where it diverged, and the median over
    the runs not yet diverged where at least half of them are."""
    x = np.concatenate([[0.7], steps])
    start = "init_entropy" if metric == "entropy" else "init_loss"
    values = np.column_stack(
        [runs[start].to_numpy(float)]
        + [runs[f"{metric}_ckpt_{j}"].to_numpy(float) for j in range(CHECKPOINTS)]
    )
    values[~np.isfinite(values)] = np.nan
    for row in values:
        ax.plot(x, row, "-", color=colour, lw=0.7, alpha=0.3)
    shown = np.isfinite(values).sum(axis=0) >= values.shape[0] / 2
    median = np.full(values.shape[1], np.nan)
    median[shown] = np.nanmedian(values[:, shown], axis=0)
    ax.plot(x, median, "o-", color=colour, lw=2.0, ms=3.5)


def _event_scatter(ax, runs: pd.DataFrame, colour, shift: float, budget: float) -> None:
    """Per diverged run: the step its entropy collapsed (x; 'never' beyond the budget) against the
    step it diverged (y). Runs above the diagonal collapsed first."""
    gone = runs[np.isfinite(runs["diverged_step"].to_numpy(float))]
    never = 2.0 * budget
    x = np.where(np.isfinite(gone["collapse_step"]), gone["collapse_step"], never)
    pairs, counts = np.unique(
        np.column_stack([x, gone["diverged_step"]]), axis=0, return_counts=True
    )
    for (cx, cy), count in zip(pairs * shift, counts):
        ax.plot(cx, cy, "o", color=colour, ms=4 + 2.5 * math.sqrt(count), alpha=0.7, mew=0)
        if count > 1:
            ax.annotate(
                f"{count}",
                (cx, cy),
                xytext=(6, -3),
                textcoords="offset points",
                fontsize=7,
                color=colour,
            )


@figure_function
def divergence(summary: pd.DataFrame, trials: pd.DataFrame | None = None):
    """SGD with a trained W_v at learning rates above the value path's threshold (docs/science.md
    §9.6), plain softmax and each remedy on the same seeds, a column per learning rate (its
    longest budget: a shorter one's runs are their beginnings). Top: each run's monitor entropy
    at the checkpoints (faint; it ends where the run diverged), the median over the runs still
    training (bold), the collapse level 0.1 nats; middle: the monitor loss / chance likewise,
    with the divergence level 10^6; bottom: per diverged run the step its entropy collapsed
    against the step it diverged (above the diagonal: collapse first)."""
    healthy = summary[(summary["stop"] == "never") & (summary["optimiser"] == "sgd")]
    healthy = healthy[(healthy["values"] == "trainable") & (healthy["scale"] <= 1.0)]
    if "normaliser" not in healthy:
        healthy = healthy.assign(normaliser=SOFTMAX)
    if trials is None or trials.empty or healthy.empty or healthy.groupby(VARIANT).ngroups < 2:
        raise NotApplicable("divergence", "no SGD sweep with and without a remedy")
    colours = _variant_colours(healthy)
    rates = sorted(healthy["lr"].unique())
    fig, axes = plt.subplots(3, len(rates), figsize=(4.6 * len(rates), 11.0), squeeze=False)
    for col, lr in enumerate(rates):
        rows = healthy[healthy["lr"] == lr]
        budget = float(rows["steps"].max())
        rows = rows[rows["steps"] == budget]  # a shorter budget's runs are these runs' beginnings
        top, middle, bottom = axes[:, col]
        for j, (key, colour) in enumerate(colours.items()):
            point = rows[(rows["logits"] == key[0]) & (rows["normaliser"] == key[1])]
            if not point.empty:
                runs = trials[trials["point_id"].isin(point["point_id"])]
                _variant_runs(axes[:, col], runs, colour, 1.0 + 0.04 * j, budget)
                top.plot([], [], color=colour, lw=2.0, label=_divergence_label(key, runs))
        title = f"({chr(97 + col)}) sgd lr {lr:g}, W_v trained, scale {rows['scale'].iloc[0]:g}"
        top.set_title(title, fontsize=10)
        _trajectory_axes(top, middle, rows["log_n"].iloc[0], budget)
        _event_axes(bottom, budget)
    legend_below(fig, _divergence_handles(), ncol=3, y=0.01)
    fig.suptitle(
        "Divergence at large learning rates, plain softmax and its remedies on the same seeds"
    )
    return fig


def _variant_colours(healthy: pd.DataFrame) -> dict:
    """The variants to draw, plain softmax first (black), then each remedy alone in its colour:
    crossed remedies (QK-norm with another normaliser) are computed, not judged or drawn."""
    keys = sorted(k if isinstance(k, tuple) else (k,) for k in healthy.groupby(VARIANT).groups)
    plain = ("dot", SOFTMAX)
    alone = [k for k in keys if k != plain and (k[0] == "dot" or k[1] == SOFTMAX)]
    first = {plain: "black"} if plain in keys else {}
    return first | dict(zip(alone, palette(PALETTE, max(len(alone), 2))))


def _variant_runs(column, runs: pd.DataFrame, colour, shift: float, budget: float) -> None:
    """One variant's runs in one learning rate's column: entropy and loss trajectories, and the
    collapse and divergence steps (shifted a little per variant so coincident points show)."""
    top, middle, bottom = column
    steps = np.array(checkpoint_steps(int(budget)), dtype=float)
    _run_lines(top, runs, "entropy", steps, colour)
    _run_lines(middle, runs, "loss", steps, colour)
    _event_scatter(bottom, runs, colour, shift, budget)


def _divergence_label(key, runs: pd.DataFrame) -> str:
    """A variant's legend entry with its counts: the runs that diverged, those collapsed first."""
    gone = int(np.isfinite(runs["diverged_step"]).sum())
    first = int(np.sum(runs["collapse_step"] < runs["diverged_step"]))
    return f"{_variant_label(key)}: {gone} of {len(runs)} diverge, {first} collapsed first"


def _trajectory_axes(top, middle, log_n: float, budget: float) -> None:
    """The entropy and loss panels' reference levels, step axis and labels; the variants' legend
    goes in the loss panel's middle band, empty at every lr (runs sit near chance or blow past
    it), where the entropy panel's top is full at the small lr's."""
    steps = np.array(checkpoint_steps(int(budget)), dtype=float)
    top.axhline(0.1, color="firebrick", ls="-.", lw=0.9)
    top.axhline(log_n, color="0.4", ls=":", lw=0.9)
    middle.axhline(1e6, color="black", ls="--", lw=0.9)
    for ax in (top, middle):
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([0.7, *steps[1:]], ["init", *(f"{t:g}" for t in steps[1:])])
        ax.set_xlabel("training step (first point: initialisation)")
    top.set_ylim(-0.05, log_n * 1.06)
    top.set_ylabel("monitor mean attention entropy (nats)")
    handles, labels = top.get_legend_handles_labels()
    middle.legend(handles, labels, fontsize=7, loc="center right", framealpha=0.85)
    middle.set_yscale("log")
    middle.set_ylabel("monitor loss / chance")


def _event_axes(ax, budget: float) -> None:
    """The bottom panel's diagonal (collapse and divergence at one step) and the grey line beyond
    which a run never collapsed."""
    edge = np.array([0.7, 2.0 * budget * 1.1])
    ax.plot(edge, edge, color="0.4", lw=0.9)
    ax.axvline(budget * 1.4, color="0.7", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.7, 2.0 * budget * 1.2)
    ax.set_xlabel("step the entropy collapsed (beyond grey: never)")
    ax.set_ylabel("step the run diverged")


_MEDIAN_RUNS = "median over the runs still training (while at least half are)"
_DIAGONAL = "collapse step = divergence step (bottom; a number: runs at one spot)"


def _divergence_handles() -> list[Line2D]:
    """What divergence's marks mean (the variants' colours are in each column's legend)."""
    return [
        Line2D([], [], color="0.3", lw=0.7, alpha=0.5, label="one run (ends where it diverged)"),
        Line2D([], [], color="0.3", lw=2.0, marker="o", ms=3.5, label=_MEDIAN_RUNS),
        *key_handles(
            (
                ("firebrick", None, "-.", None, "collapse level, 0.1 nats"),
                ("0.4", None, ":", None, "log n (uniform)"),
                ("black", None, "--", None, "divergence level, 10^6 x chance"),
                ("0.4", None, None, 0.9, _DIAGONAL),
            )
        ),
    ]


divergence.trial_columns = DIVERGENCE_COLUMNS
