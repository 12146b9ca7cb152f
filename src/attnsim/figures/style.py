"""Shared look of all figures (seaborn's paper theme and palettes) and an atomic save to PNG and PDF.

seaborn is imported once per figure job (~0.55 CPU-s measured on this project's machines): the
price of its theme and palettes instead of a copy of them here.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)
PALETTE = "viridis"


def palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours of a named palette (seaborn.color_palette): a qualitative map's first colours, else
    colours spread over the map with its ends excluded."""
    return [tuple(map(float, colour)) for colour in sns.color_palette(name, count)]


PAD_INCHES = 0.1  # margin around the drawn content, as savefig's bbox_inches="tight" leaves


def save(fig, png: Path) -> list[Path]:
    """Write `fig` as PNG and PDF next to each other, each via a hidden temp file.

    The tight bounding box is found once (one layout pass without rasterising) and used for
    both files: `bbox_inches="tight"` would lay the figure out again for each format.
    """
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.draw_without_rendering()
    bbox = fig.get_tightbbox().padded(PAD_INCHES)
    written = []
    for path in (png, png.with_suffix(".pdf")):
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
        fig.savefig(tmp, dpi=150, bbox_inches=bbox)
        os.replace(tmp, path)
        written.append(path)
    plt.close(fig)
    return written


def theory_legend_handle(label: str = "theory (dashed)"):
    return matplotlib.lines.Line2D([], [], color="0.2", linestyle="--", label=label)
