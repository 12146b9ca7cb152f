"""Draw the figures of an experiment from its summary file, in one process (one import of the plotting stack)."""

from __future__ import annotations

import importlib
from pathlib import Path

from attnsim import store
from attnsim.errors import AttnsimError
from attnsim.figures import FIGURES, figure_names


def render(summary_path: Path, outdir: Path, figures: list[str] | None = None) -> list[Path]:
    """Write <outdir>/<figure>.png and .pdf for each named figure (default: all of the kind's)."""
    from attnsim.figures.style import save

    meta = store.read_meta(summary_path)
    kind = meta["kind"]
    known = figure_names(kind)
    unknown = [f for f in figures or [] if f not in known]
    if unknown:
        raise AttnsimError(f"no figure {unknown[0]!r} for kind {kind}; known: {', '.join(known)}")
    module = importlib.import_module(f"attnsim.figures.{FIGURES[kind][0]}")
    frame = store.read_table(summary_path).to_pandas()
    written = []
    for figure in figures or known:
        written += save(getattr(module, figure)(frame), Path(outdir) / f"{figure}.png")
    return written
