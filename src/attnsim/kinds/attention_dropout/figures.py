"""Figure of `attention_dropout` (docs/science.md §11.6): measured over predicted error against
the rate."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from attnsim.figures.common import legend_below
from attnsim.figures.style import figure_function, palette
from attnsim.kinds.attention_dropout.claims import THRESHOLDS

LINE_STYLES = ("-", "--", ":", "-.") * 4  # one per logit std, in order
# what a panel's form does to the weights, after its name in the title
FORM_NOTES = {
    "transformers": " (masked after softmax, ×1/(1−p))",
    "logit": " (ε = −∞, renormalised)",
}
# dropout_error's legend entries for the two predictions
MAIN_KEY = "÷ exact p/(1−p)Σw²‖v‖² (transformers) or next order (logit)"
DELTA_KEY = "÷ essay's delta κΣw²‖v−o‖², κ = p/(1−p)"


@figure_function
def dropout_error(summary):
    """Per form (panel): mean over rows of sq_err / prediction against the rate, colour = the
    values' common mean; circles: the exact law (transformers) or the next order (logit form);
    squares: the essay's delta method with kappa = p/(1 - p)."""
    data = summary[summary["rate"] > 0]
    forms = [f for f in FORM_NOTES if f in set(data["form"])]
    panels = max(1, len(forms))
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.0), squeeze=False, sharey=True)
    means = sorted(data["value_mean"].unique())
    colours = dict(zip(means, palette("viridis", max(2, len(means)))))
    for ax, form in zip(axes[0], forms):
        _form_ratios(ax, data[data["form"] == form], form, colours)
    axes[0, 0].set_ylabel("measured / predicted ‖õ − o‖² (mean over rows)")
    handles = [
        Line2D([], [], color=c, marker="o", ls="none", label=f"‖value mean‖ = {m:g}")
        for m, c in colours.items()
        if m in means
    ]
    all_scales = sorted(data["logit_scale"].unique())
    handles += [
        Line2D([], [], color="0.3", ls=st, label=f"logit std σ = {v:g}")
        for v, st in zip(all_scales, LINE_STYLES)
    ]
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="none", label=MAIN_KEY),
        Line2D([], [], color="0.3", marker="s", mfc="none", label=DELTA_KEY),
    ]
    fig.suptitle("Attention dropout: measured error over its predictions (95% CI)")
    legend_below(fig, handles, ncol=2, y=0.0)
    return fig


def _form_ratios(ax, part, form: str, colours) -> None:
    """One form's panel: per value mean (colour) and logit std (line style, the stds side by side
    in x), measured / predicted against the rate for the form's own law (circles: the exact law or
    the next order) and for the essay's delta method (squares), against 1 ± the tolerance."""
    main = "exact" if form == "transformers" else "next"
    scales = sorted(part["logit_scale"].unique())
    shift = dict(zip(scales, np.exp(np.linspace(-0.04, 0.04, len(scales)))))
    styles = dict(zip(scales, LINE_STYLES))
    for (mean, sigma), line in part.groupby(["value_mean", "logit_scale"]):
        line = line.sort_values("rate")
        x = line["rate"].to_numpy(float) * shift[sigma]  # the logit stds side by side
        for name, marker, face in ((main, "o", colours[mean]), ("iid", "s", "none")):
            y = line[f"ratio_{name}_mean"].to_numpy(float)
            err = np.vstack([y - line[f"ratio_{name}_ci_low"], line[f"ratio_{name}_ci_high"] - y])
            ls = styles[sigma] if name == "iid" else "none"
            marks = {"color": colours[mean], "mfc": face, "ms": 5, "capsize": 2, "ls": ls}
            ax.errorbar(x, y, yerr=err, fmt=marker, lw=0.8, **marks)
    tol = THRESHOLDS.ratio_tolerance
    ax.axhline(1.0, color="0.2", lw=0.9)
    ax.axhspan(1 - tol, 1 + tol, color="0.85", alpha=0.6, lw=0)
    ax.set_xscale("log")
    ax.set_xlabel("dropout rate p")
    ax.set_title(f"form {form}{FORM_NOTES[form]}", fontsize=9)
