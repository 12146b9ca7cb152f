"""Figures per experiment kind: name -> function(summary DataFrame) -> matplotlib Figure."""

from __future__ import annotations

from attnsim.figures import robustness

FIGURES = {
    "noisy_attention": robustness.FIGURES,
}


def figure_names(kind: str) -> list[str]:
    return list(FIGURES.get(kind, {}))
