"""Draw the figures of an experiment from its summary file, in one process (one import of the plotting stack)."""

from __future__ import annotations

from pathlib import Path

from attnsim.errors import AttnsimError
from attnsim.kinds import get_kind
from attnsim.store import parquet as store


def render(summary_path: Path, outdir: Path, figures: list[str] | None = None) -> list[Path]:
    """Write <outdir>/<figure>.png and .pdf for each named figure (default: all of the kind's)."""
    import matplotlib

    matplotlib.use("Agg")  # the figures job draws to files only (a figure module never chooses)
    from attnsim.figures.style import save

    kind = get_kind(store.read_meta(summary_path)["kind"])
    unknown = [f for f in figures or [] if f not in kind.figures]
    if unknown:
        raise AttnsimError(f"no figure {unknown[0]!r} for kind {kind.name}; known: {', '.join(kind.figures)}")
    module = kind.submodule("figures")
    frame = store.read_table(summary_path).to_pandas()
    written = []
    for figure in figures or kind.figures:
        written += save(getattr(module, figure)(frame), Path(outdir) / f"{figure}.png")
    return written
