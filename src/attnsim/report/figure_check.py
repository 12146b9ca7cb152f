"""Before any job: every figure a kind declares (`Kind.presentation.figures`) has its function and
its caption; and after a figure is drawn, nothing a reader needs reaches past its canvas
(`outside_canvas`).

Without this, a figure declared but not written is found only when the experiment's figures job
fails, after its chunks ran; a missing caption only when the report is built. The check reads the
figures module's source (its top-level names, with `ast`) instead of importing it: planning stays
free of the plotting stack.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util

from attnsim import files
from attnsim.errors import ConfigError
from attnsim.figures.canvas import outside_canvas, reaching_out  # noqa: F401 (its checks)


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


# the version of `top_level_names`: part of its cache entries' key (a new rule, new entries)
NAMES_RULE = 1


def cached_top_level_names(source: str) -> set[str]:
    """`top_level_names` of a source, kept by the source's sha256 (`files.cached_json`): parsing
    every kind's figures module was 0.12 CPU-s of each Snakemake start."""
    key = hashlib.sha256(f"{NAMES_RULE}\n{source}".encode()).hexdigest()
    names = files.cached_json("top-level-names", key, lambda: sorted(top_level_names(source)))
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return top_level_names(source)  # not an entry of ours: the cache is only a shortcut
    return set(names)


def check_kind(kind) -> None:
    """ConfigError naming the kind and the figure whose function or caption is missing."""
    figures = kind.presentation.figures
    if not figures:
        return
    where = f"kind {kind.name}"
    module = f"{kind.package}.figures"
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ConfigError(
            f"{where}: declares figures {', '.join(figures)} but has no module {module}"
        )
    with open(spec.origin, encoding="utf-8") as f:
        defined = cached_top_level_names(f.read())
    for figure in figures:
        if figure not in defined:
            raise ConfigError(
                f"{where}, figure {figure}: declared in Kind.presentation.figures but {module}"
                f" defines no {figure}() ({spec.origin})"
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
