"""The package's layout is its architecture (docs/architecture.md, "The layout"): every module sits
in one layer, imports only from its own layer and the layers below, and no two modules import each
other, directly or around a circle. Imports inside functions count: a lazy import is still a
dependency. The graph is read from the source with `ast`, so the test imports nothing and is
fast."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# Bottom to top. A module belongs to the layer of the longest prefix that names it.
LAYERS = [
    (
        "foundation",
        ["attnsim", "attnsim.errors", "attnsim.files", "attnsim.seeding", "attnsim.stats"],
    ),
    (
        "libraries",
        [
            "attnsim.kernels",
            "attnsim.theory",
            "attnsim.models",
            "attnsim.claims",
            "attnsim.claims.engine",
            "attnsim.claims.numbers",
            "attnsim.figures",
            "attnsim.figures.canvas",
            "attnsim.figures.common",
            "attnsim.figures.style",
        ],
    ),
    ("kinds", ["attnsim.kinds"]),
    ("store", ["attnsim.store"]),
    ("config", ["attnsim.config"]),
    ("plan", ["attnsim.plan"]),
    (
        "outputs",
        [
            "attnsim.claims.io",
            "attnsim.claims.render",
            "attnsim.report",
            "attnsim.figures.render",
            "attnsim.figures.check",
        ],
    ),
    ("run", ["attnsim.run"]),
    ("entry", ["attnsim.cli", "attnsim.docgen"]),
]
# kinds/ modules that are not kinds: a kind is a package, a shared module a file beside them
SHARED = tuple(
    sorted(p.stem for p in (SRC / "attnsim" / "kinds").glob("*.py") if p.stem != "__init__")
)
RANK = {prefix: rank for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "attnsim").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.startswith("attnsim")}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                if base.startswith("attnsim"):
                    # `from pkg import mod` depends on pkg.mod; `from mod import name` on mod
                    targets |= {resolve(f"{base}.{a.name}") for a in node.names}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def layer(module: str) -> int:
    prefix = module
    while prefix not in RANK:
        prefix = prefix.rpartition(".")[0]
    return RANK[prefix]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan). A module importing its
    own package's declarations (a kind's besttau.py reading its __init__'s SETTING while the
    __init__ imports it lazily) is the one kind of circle Python resolves by design: left out."""
    graph = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# Upward imports still to remove, each with the reason (none left; the list only shrinks).
KNOWN_UPWARD: set[str] = set()

# Sibling imports still to remove (none left: shared code lives in kinds/ modules, theory/,
# kernels/).
KNOWN_SIBLING: set[str] = set()


def upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} ({LAYERS[layer(m)][0]}) -> {t} ({LAYERS[layer(t)][0]})"
        for m, targets in graph.items()
        for t in targets
        if layer(t) > layer(m) and f"{m} -> {t}" not in KNOWN_UPWARD
    )


def test_no_import_circles():
    assert circles(import_graph()) == []


def test_no_import_runs_up_a_layer():
    assert upward(import_graph()) == []


def test_kinds_never_import_sibling_kinds():
    graph = import_graph()
    bad = []
    for m, targets in graph.items():
        parts = m.split(".")
        if len(parts) >= 3 and parts[1] == "kinds" and parts[2] not in SHARED:
            bad += [
                f"{m} -> {t}"
                for t in targets
                if t.startswith("attnsim.kinds.") and t.split(".")[2] not in (parts[2], *SHARED)
            ]
    assert set(bad) <= KNOWN_SIBLING


def test_the_top_level_is_the_foundation_and_the_entry_points():
    top = {m for m in modules() if m.count(".") == 1 and not (SRC / m.replace(".", "/")).is_dir()}
    assert top == {
        "attnsim.errors",
        "attnsim.files",
        "attnsim.seeding",
        "attnsim.stats",
        "attnsim.cli",
        "attnsim.docgen",
    }


def report(graph: dict[str, set[str]] | None = None) -> str:
    """Modules per folder, import edges, circles and upward imports: `python
    tests/test_layout.py`."""
    graph = import_graph() if graph is None else graph
    folders: dict[str, int] = {}
    for path in modules().values():
        folder = path.parent.relative_to(SRC / "attnsim").as_posix()
        folder = "(top)" if folder == "." else folder.split("/")[0]
        folders[folder] = folders.get(folder, 0) + 1
    lines = [f"modules: {len(graph)}, import edges: {sum(len(t) for t in graph.values())}"]
    lines += [f"  {folder}/: {count}" for folder, count in sorted(folders.items())]
    lines.append(f"circles: {len(circles(graph))} {circles(graph)}")
    lines.append(f"upward imports: {len(upward(graph))} {upward(graph)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())


def test_the_architecture_table_names_every_stage_module():
    """docs/architecture.md follows the folders: each module of a stage folder is in its row."""
    table = (SRC.parent / "docs" / "architecture.md").read_text()
    rows = {
        line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")
    }
    missing = [
        f"{folder}/{path.stem}"
        for folder in ("config", "plan", "run", "store")
        for path in (SRC / "attnsim" / folder).glob("*.py")
        if path.stem != "__init__" and f"`{path.stem}`" not in rows[folder]
    ]
    assert not missing, f"add them to docs/architecture.md's layout table: {missing}"
