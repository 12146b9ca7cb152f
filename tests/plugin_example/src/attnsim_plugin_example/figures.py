"""Figure of `shifted_logits`: the deviation |H(s + c) - H(s)| against the shift, beside the
rounding bound."""

from __future__ import annotations

import matplotlib.pyplot as plt

from attnsim.figures.style import figure_function


# attnsim's theme for this call only, a layout that keeps the legend; style=None: yours
@figure_function
def shift_deviation(summary):
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for n, line in summary.sort_values("shift").groupby("n"):
        ax.errorbar(
            line["shift"],
            line["shift_deviation_mean"],
            yerr=1.96 * line["shift_deviation_se"],
            fmt="o-",
            label=f"n = {n}",
        )
        ax.plot(line["shift"], line["rounding_bound"], "--", color="0.3")
    ax.set(
        xlabel="shift c",
        ylabel="|H(s + c) − H(s)| (nats)",
        title="Shift invariance: deviation (95% CI) vs rounding bound (dashed)",
    )
    ax.legend()
    return fig
