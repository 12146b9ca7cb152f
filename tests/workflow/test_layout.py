"""The package's layout is its architecture (docs/architecture.md, "The layout"): every module sits
in one layer, imports only from its own layer and the layers below, and no two modules import each
other, directly or around a circle. Imports inside functions count: a lazy import is still a
dependency. The graph is read from the source with `ast`, so the test imports nothing and is
fast. The tests mirror the folders (test_the_tests_mirror_the_source_folders)."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

# the repository: the nearest folder above with a pyproject.toml (the test also runs as a script,
# without the tests' helpers on the path)
REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SRC = REPO / "src"

# Bottom to top, one folder per layer (the foundation is the top-level files; `attnsim.testing`,
# the kinds' conformance suite, is a public top-level module on top of everything). A module
# belongs to the layer of the longest prefix that names it. config/, plan/ and jobs/ are the
# stages: one layer, side by side on records/, and no stage imports another
# (test_stages_never_import_each_other).
LAYERS = [
    (
        "foundation",
        ["attnsim", "attnsim.errors", "attnsim.files", "attnsim.seeding", "attnsim.stats"],
    ),
    # the science, bottom up: the records of what the essay is about (normalisers, noise
    # families), the kernels and models computed with them, the theory's laws (which may use a
    # kernel, never the reverse)
    ("subjects", ["attnsim.subjects"]),
    ("kernels", ["attnsim.kernels", "attnsim.models"]),
    ("theory", ["attnsim.theory"]),
    ("claims", ["attnsim.claims"]),
    ("figures", ["attnsim.figures"]),
    ("kinds", ["attnsim.kinds"]),
    ("store", ["attnsim.store"]),
    ("records", ["attnsim.records"]),
    ("stages", ["attnsim.config", "attnsim.plan", "attnsim.jobs"]),
    ("report", ["attnsim.report"]),
    ("cli", ["attnsim.cli"]),
    # the conformance suite a kind author runs: it drives every stage, as the CLI does
    ("testing", ["attnsim.testing"]),
]
STAGES = ("attnsim.config", "attnsim.plan", "attnsim.jobs")
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


def stage(module: str) -> str | None:
    return next((s for s in STAGES if module == s or module.startswith(s + ".")), None)


def test_stages_never_import_each_other():
    """Each stage reads and writes records (and the store): what one stage needs of another is a
    record, so it lives in records/."""
    graph = import_graph()
    crossing = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if stage(m) and stage(t) and stage(m) != stage(t)
    )
    assert crossing == []


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


def test_the_top_level_is_the_foundation_and_the_testing_module():
    top = {m for m in modules() if m.count(".") == 1 and not (SRC / m.replace(".", "/")).is_dir()}
    assert top == {
        "attnsim.errors",
        "attnsim.files",
        "attnsim.seeding",
        "attnsim.stats",
        "attnsim.testing",
    }


def folder(module: str) -> str:
    """The folder a module lives in (`(top)` for the foundation's files)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (SRC / "attnsim" / parts[1]).is_dir() else "(top)"


def report(graph: dict[str, set[str]] | None = None) -> str:
    """The layers top first, each with its folders, their modules and the folders they import;
    then circles and upward imports: `python tests/workflow/test_layout.py`."""
    graph = import_graph() if graph is None else graph
    mods = modules()
    lines = [f"modules: {len(graph)}, import edges: {sum(len(t) for t in graph.values())}"]
    for rank in reversed(range(len(LAYERS))):
        names = [m for m in mods if layer(m) == rank]
        for name in sorted({folder(m) for m in names}):
            own = [m for m in names if folder(m) == name]
            used = sorted({folder(t) for m in own for t in graph[m]} - {name})
            lines.append(
                f"  {LAYERS[rank][0]:10} {name + '/':10} {len(own):3} modules"
                f"  imports {', '.join(used) or '-'}"
            )
    lines.append(f"circles: {len(circles(graph))} {circles(graph)}")
    lines.append(f"upward imports: {len(upward(graph))} {upward(graph)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())


def test_the_architecture_table_names_every_module_of_a_folder():
    """docs/architecture.md follows the folders: each module of a folder is in its layer's row (the
    kinds and the science libraries are named by folder)."""
    table = (REPO / "docs" / "architecture.md").read_text()
    rows = {
        line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")
    }
    missing = [
        f"{folder}/{path.stem}"
        for name, prefixes in LAYERS
        for folder in (p.removeprefix("attnsim.") for p in prefixes if p.count(".") == 1)
        if name not in ("kinds", "subjects", "kernels", "theory")
        for path in (SRC / "attnsim" / folder).glob("*.py")
        if path.stem != "__init__" and f"`{path.stem}`" not in rows[name]
    ]
    assert not missing, f"add them to docs/architecture.md's layout table: {missing}"


# folders of tests/ that are not a layer's tests: what the tests share, the naive oracles, recorded
# data, the plugin example (a repository of its own, with its own tests), the local SLURM cluster
TEST_SUPPORT = {"helpers", "oracles", "data", "plugin_example", "slurm"}


def test_the_tests_mirror_the_source_folders():
    """Each test module sits in tests/<folder>/ for the src/attnsim folder it is about
    (tests/foundation/ for the top-level modules, tests/workflow/ for the workflow/ folder and
    whole runs), so that a layer's tests are one folder to run; none at the top of tests/, and no
    source folder without its tests. src/attnsim/workflow is a link to workflow/ (package data),
    not a layer: a copy of the tree without links must pass too."""
    tests = REPO / "tests"
    at_top = sorted(p.name for p in tests.glob("test_*.py"))
    assert not at_top, f"move them into tests/<the src/attnsim folder they test>/: {at_top}"
    layers = (p for p in (SRC / "attnsim").iterdir() if p.is_dir() and not p.is_symlink())
    sources = {p.name for p in layers if p.name[0] != "_"}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name[0] not in "._"}
    assert folders - TEST_SUPPORT == sources | {"foundation", "workflow"}
    empty = sorted(f for f in folders - TEST_SUPPORT if not any((tests / f).glob("test_*.py")))
    assert not empty, f"test folders without tests: {empty}"


MAX_TRACKED_BYTES = 1 << 20  # generated outputs belong under the ignored results/, not in git


def test_no_tracked_file_is_over_a_mebibyte():
    """A file this large in git is generated output or data that should be smaller (a reference
    sweep with fewer points); without a git checkout (a copy of the tree) there is nothing to
    check."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    paths = (REPO / name.decode() for name in listed if name)
    large = sorted(
        str(p.relative_to(REPO))
        for p in paths
        if p.is_file() and not p.is_symlink() and p.stat().st_size > MAX_TRACKED_BYTES
    )
    assert not large, f"tracked files over 1 MiB: {large}"
