"""Draw one named figure of an experiment from its summary file."""

from __future__ import annotations

import importlib
from pathlib import Path

from attnsim import store
from attnsim.errors import AttnsimError
from attnsim.figures import FIGURES, figure_names


def render(summary_path: Path, figure: str, output: Path) -> list[Path]:
    from attnsim.figures.style import save

    meta = store.read_meta(summary_path)
    kind = meta["kind"]
    if figure not in figure_names(kind):
        raise AttnsimError(f"no figure {figure!r} for kind {kind}; known: {', '.join(figure_names(kind))}")
    draw = getattr(importlib.import_module(f"attnsim.figures.{FIGURES[kind][0]}"), figure)
    frame = store.read_table(summary_path).to_pandas()
    return save(draw(frame), output)
