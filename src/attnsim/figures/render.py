"""Draw one named figure of an experiment from its summary file."""

from __future__ import annotations

from pathlib import Path

from attnsim import store
from attnsim.errors import AttnsimError
from attnsim.figures import FIGURES
from attnsim.figures.style import save


def render(summary_path: Path, figure: str, output: Path) -> list[Path]:
    meta = store.read_meta(summary_path)
    kind = meta["kind"]
    try:
        draw = FIGURES[kind][figure]
    except KeyError:
        raise AttnsimError(f"no figure {figure!r} for kind {kind}; known: {', '.join(FIGURES.get(kind, {}))}") from None
    frame = store.read_table(summary_path).to_pandas()
    return save(draw(frame), output)
