"""Shared look of all figures and an atomic save to PNG and PDF.

The look is seaborn's `set_theme(context="paper", style="whitegrid", font_scale=1.1)`, written
out as the matplotlib settings it makes: importing seaborn costs ~1 s per figure job (it imports
scipy.stats where scipy is installed), and the figures need nothing else from it.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from cycler import cycler  # noqa: E402

# seaborn 0.13's "deep" palette: the default colour cycle of set_theme
DEEP = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"]
THEME = {  # seaborn.set_theme(context="paper", style="whitegrid", font_scale=1.1), as rcParams
    "axes.axisbelow": True,
    "axes.edgecolor": ".8",
    "axes.grid": True,
    "axes.labelcolor": ".15",
    "axes.labelsize": 10.56,
    "axes.linewidth": 1.0,
    "axes.prop_cycle": cycler(color=DEEP),
    "axes.titlesize": 10.56,
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "font.size": 10.56,
    "grid.color": ".8",
    "legend.fontsize": 9.68,
    "legend.title_fontsize": 10.56,
    "lines.linewidth": 1.2,
    "lines.markersize": 4.8,
    "lines.solid_capstyle": "round",
    "patch.edgecolor": "w",
    "patch.force_edgecolor": True,
    "patch.linewidth": 0.8,
    "text.color": ".15",
    "xtick.bottom": False,
    "xtick.color": ".15",
    "xtick.labelsize": 9.68,
    "xtick.major.size": 4.8,
    "xtick.major.width": 1.0,
    "xtick.minor.size": 3.2,
    "xtick.minor.width": 0.8,
    "ytick.color": ".15",
    "ytick.labelsize": 9.68,
    "ytick.left": False,
    "ytick.major.size": 4.8,
    "ytick.major.width": 1.0,
    "ytick.minor.size": 3.2,
    "ytick.minor.width": 0.8,
}
matplotlib.rcParams.update(THEME)
PALETTE = "viridis"


QUALITATIVE = {
    "tab10": 10,
    "tab20": 20,
    "tab20b": 20,
    "tab20c": 20,
    "Set1": 9,
    "Set2": 8,
    "Set3": 12,
    "Accent": 8,
    "Paired": 12,
    "Pastel1": 9,
    "Pastel2": 8,
    "Dark2": 8,
}


def palette(name: str, count: int) -> list[tuple[float, float, float]]:
    """`count` colours of a matplotlib colormap, as seaborn.color_palette(name, count): a qualitative map's
    first colours (repeated beyond its length), else colours spread over the map with its ends excluded."""
    cmap = matplotlib.colormaps[name]
    if name in QUALITATIVE:
        listed = cmap(np.linspace(0, 1, QUALITATIVE[name]))
        rgba = [listed[i % len(listed)] for i in range(count)]
    else:
        rgba = cmap(np.linspace(0, 1, count + 2)[1:-1])
    return [tuple(float(c) for c in colour[:3]) for colour in rgba]


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
