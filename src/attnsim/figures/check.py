"""Before any job: every figure a kind declares (`Kind.figures`) has its function and its caption;
and after a figure is drawn, nothing a reader needs reaches past its canvas (`outside_canvas`).

Without this, a figure declared but not written is found only when the experiment's figures job
fails, after its chunks ran; a missing caption only when the report is built. The check reads the
figures module's source (its top-level names, with `ast`) instead of importing it: planning stays
free of the plotting stack.
"""

from __future__ import annotations

import ast
import importlib.util

from attnsim.errors import ConfigError


def top_level_names(source: str) -> set[str]:
    """Names a module's top level defines: functions, classes, assignments and imports."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def check_kind(kind) -> None:
    """ConfigError naming the kind and the figure whose function or caption is missing."""
    if not kind.figures:
        return
    where = f"kind {kind.name}"
    module = f"{kind.package}.figures"
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ConfigError(
            f"{where}: declares figures {', '.join(kind.figures)} but has no module {module}"
        )
    with open(spec.origin, encoding="utf-8") as f:
        defined = top_level_names(f.read())
    for figure in kind.figures:
        if figure not in defined:
            raise ConfigError(
                f"{where}, figure {figure}: declared in Kind.figures but {module} defines"
                f" no {figure}() ({spec.origin})"
            )
        caption = kind.caption(figure)
        if not caption.is_file():
            raise ConfigError(
                f"{where}, figure {figure}: its caption report/{figure}.rst is missing ({caption});"
                " is report/*.rst package data?"
            )


def check_experiments(settings) -> None:
    """The figures of every kind the config's experiments use."""
    from attnsim.kinds import get_kind

    for kind in sorted({e.kind for e in settings.experiments.values()}):
        check_kind(get_kind(kind))


def reaching_out(fig, tolerance: float = 1.0) -> dict[str, tuple[float, float, float, float]]:
    """What of a laid-out figure reaches past its canvas by more than `tolerance` pixels (and so
    is cut off in a saved file): its legends (the figure's and each panel's), its titles and the
    panels' titles, each named ("figure legend 1", "legend of panel 2", "title of panel 3", ...)
    with how far it reaches out (left, bottom, right, top; pixels, 0 where it does not). Reads
    the extents of the last layout or draw; draws nothing itself."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    named = [(f"figure legend {i + 1}", legend) for i, legend in enumerate(fig.legends)]
    named += [("title", fig._suptitle), ("x label", fig._supxlabel), ("y label", fig._supylabel)]
    for i, ax in enumerate(fig.axes):
        named += [(f"legend of panel {i + 1}", ax.get_legend())]
        named += [(f"title of panel {i + 1}", ax.title)]
    out = {}
    for name, artist in named:
        if artist is None or not artist.get_visible():
            continue
        if hasattr(artist, "get_text") and not artist.get_text():
            continue  # an empty title takes no room
        box = artist.get_window_extent(renderer)
        if box.width == 0 and box.height == 0:
            continue
        reach = (-box.x0, -box.y0, box.x1 - width, box.y1 - height)
        if max(reach) > tolerance:
            out[name] = tuple(max(0.0, float(r)) for r in reach)
    return out


def outside_canvas(fig, tolerance: float = 1.0) -> list[str]:
    """The names of what `reaching_out` finds: a saved figure's legends and titles cut off."""
    return list(reaching_out(fig, tolerance))
