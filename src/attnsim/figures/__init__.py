"""Figures per experiment kind, by name; a figure is a function of the summary DataFrame.

Only names live here (the workflow lists targets without importing seaborn);
`render` imports the module that draws them.
"""

from __future__ import annotations

# kind -> (module in attnsim.figures, figure function names)
FIGURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "noisy_attention": ("robustness", ("rel_err_vs_n", "collapse")),
    "logit_entropy": ("information", ("entropy_vs_scale", "entropy_collapse")),
    "temperature_entropy": ("information", ("temperature_gap",)),
    "init_gradient": ("information", ("gradient_vs_entropy",)),
}


def figure_names(kind: str) -> list[str]:
    return list(FIGURES.get(kind, ("", ()))[1])
