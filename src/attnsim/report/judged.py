"""The claims judged per kind: each kind's verdicts in a file of their own,
`<workspace>/claims/<kind>.parquet`, reused for as long as nothing they were judged from changed.

A kind's claims are judged on the rows of all of its experiments at once
(`report.claims.judge_kind`), so a kind is the unit: the workflow's `judge` job writes one kind's
file when one of its experiments changed, the figures that show verdicts read their kind's file
(`Kind.presentation.claims_figures`: no figure judges), and `attnsim claims` (the workflow's
last job, and the command) assembles the table from the files, judging afresh only a kind whose
file is missing or stale (`--no-cache`: every kind).

What a kind's verdicts are computed from, and so its file's key (`cache_key`, sha256), is:
- the content digest of each of its experiments' summaries, by experiment name (the names are
  part of what a claim reports);
- for a kind whose claims read trial rows run by run (`Kind.schema.run_columns`), the digests of
  the chunk files each summary records it was made from;
- the source of its claims module and of every attnsim module that module imports, followed
  statically (`sources`: the engine in `claims/`, `stats.py`, the kind's own modules, theory),
  plus all of `claims/`, `stats.py` and the modules that assemble the table;
- the sequential designs of its claims in the workspace's state record (`records.state`,
  `designs`), by claim id;
- the versions of Python, numpy, pandas and pyarrow.
The run record (config hash, seed, commit) is not in it: claims.parquet stamps that on every row
when the table is assembled.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attnsim
from attnsim.errors import StoreError
from attnsim.store import integrity
from attnsim.store import parquet as store

if TYPE_CHECKING:
    from attnsim.claims.engine import ClaimResult
    from attnsim.kinds.base import Kind

log = logging.getLogger(__name__)

FOLDER = "claims"  # <workspace>/claims/<kind>.parquet
FORMAT = 1  # of the key's inputs: bump when what goes into the key changes
PACKAGE = Path(attnsim.__file__).resolve().parent  # src/attnsim
# Besides the claims module's static imports: the whole engine library and the statistics, and
# the modules that turn a kind's rows into its verdicts and its file.
ALWAYS = ("claims", "stats.py", "report/claims.py", "report/designs.py", "report/judged.py")
VERSIONED = ("numpy", "pandas", "pyarrow")


@dataclass(frozen=True)
class Judged:
    """One kind's judged claims, in the kind's order, and the figures each of its experiments
    draws (`Kind.figures_for` of its summary's values: a claim's figure link is to a drawn one)."""

    kind: str
    claims: tuple[ClaimResult, ...]
    drawn: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "claims", tuple(self.claims))
        drawn = {name: tuple(figures) for name, figures in sorted(self.drawn.items())}
        object.__setattr__(self, "drawn", MappingProxyType(drawn))


def path(workspace: Path, kind: str) -> Path:
    return Path(workspace) / FOLDER / f"{kind}.parquet"


# --- what the verdicts depend on -----------------------------------------------------------------


def _attnsim_file(module: str) -> Path | None:
    """The source file of an attnsim module by its name, found without importing it."""
    parts = module.split(".")
    if parts[0] != "attnsim":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _module_file(module: str, top: str) -> Path | None:
    """The source of `module` if it is attnsim's or belongs to the top-level package `top` (a
    plugin kind's own package, imported already by the registry); None for any other."""
    if module.split(".")[0] == "attnsim":
        return _attnsim_file(module)
    if module.split(".")[0] != top:
        return None
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") else None


@functools.cache
def _imports(file: Path, module: str) -> tuple[str, ...]:
    """The modules a source file imports anywhere in it (a function's lazy imports included),
    relative imports resolved against `module` (the file's own module name); a name imported
    from a package is listed as a possible submodule too."""
    tree = ast.parse(file.read_bytes(), filename=str(file))
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return tuple(found)


@functools.cache
def _digest(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def _relative(file: Path) -> str:
    try:
        return str(file.relative_to(PACKAGE.parent))
    except ValueError:  # a plugin's module: its path is what names it
        return str(file)


@functools.cache
def sources(package: str) -> Mapping[str, str]:
    """The source digests (sha256) a kind's verdicts depend on: its claims module and every
    attnsim module (or module of the kind's own top-level package) it imports, followed
    statically through their imports, each parent package's `__init__` too, plus `ALWAYS`.
    Read with `ast`, nothing imported: checking a cache costs no import of the claims code."""
    top = package.split(".")[0]
    files: dict[str, Path] = {}
    todo = [f"{package}.claims"]
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for depth in range(1, len(parts)):  # importing a.b.c runs a/__init__ and a/b/__init__
            todo.append(".".join(parts[:depth]))
        if module in files:
            continue
        file = _module_file(module, top)
        if file is None:
            continue
        files[module] = file
        todo += [m for m in _imports(file, module) if m not in files]
    chosen = set(files.values())
    for name in ALWAYS:
        where = PACKAGE / name
        chosen.update(sorted(where.rglob("*.py")) if where.is_dir() else [where])
    return MappingProxyType({_relative(f): _digest(f) for f in sorted(chosen, key=_relative)})


@functools.cache
def versions() -> Mapping[str, str]:
    """The numerical libraries' versions (installed metadata: nothing imported)."""
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = ""
    return MappingProxyType(found)


def data_inputs(kind: Kind, experiments: Mapping[str, str], root: Path) -> dict[str, Any]:
    """The stored inputs of a kind's verdicts: per experiment of the kind (`experiments`: name ->
    kind) that has a summary, its content digest and, for a kind whose claims read trial rows,
    the digests of the chunks the summary records. Footers only: no table is read."""
    summaries: dict[str, str] = {}
    chunks: dict[str, Any] = {}
    for name in sorted(n for n, k in experiments.items() if k == kind.name):
        summary = store.summary_path(root, kind.name, name)
        if not summary.exists():
            continue
        meta = store.read_meta(summary)
        summaries[name] = integrity.file_digest(meta.get("content_sha256", {}))
        if kind.schema.run_columns:
            chunks[name] = dict(sorted((meta.get("chunks") or {}).items()))
    return {"summaries": summaries, "chunks": chunks}


def designs_of(claim_ids: list[str] | tuple[str, ...], designs: Mapping[str, Any]) -> dict:
    """The sequential designs (`records.state.ClaimDesign`) of these claims, as the state record
    writes them."""
    from attnsim.records import state

    mine = {cid: designs[cid] for cid in claim_ids if cid in designs}
    return state.to_data(state.WorkspaceState(designs=mine)).get("designs", {})


def cache_key(
    kind: Kind,
    inputs: Mapping[str, Any],
    claim_ids: list[str] | tuple[str, ...],
    designs: Mapping[str, Any],
) -> str:
    """sha256 over everything a kind's verdicts are computed from (the module docstring)."""
    record = {
        "format": FORMAT,
        "kind": kind.name,
        "data": dict(inputs),
        "sources": dict(sources(kind.package)),
        "designs": designs_of(claim_ids, designs),
        "versions": dict(versions()),
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


# --- judging, writing, reading -------------------------------------------------------------------


def judge(
    kind: Kind,
    experiments: Mapping[str, str],
    root: Path,
    designs: Mapping[str, Any] | None = None,
) -> Judged:
    """The kind's claims judged on its experiments' summaries in the store at `root` (and their
    runs, for a kind with `run_columns`), each under its sequential design in `designs` (the
    workspace's state record) or at a single look."""
    from attnsim.report import claims as io

    mine = {name: k for name, k in experiments.items() if k == kind.name}
    claims, drawn = io.judge_kind(kind, io.load_summaries(root, mine), designs)
    return Judged(kind.name, tuple(claims), drawn)


def write(target: Path, judged: Judged, key: str) -> Path:
    """The kind's claims file (atomic): its claims as claims.parquet's rows (unstamped: the run
    record is stamped when the table is assembled), the key and the drawn figures in its
    provenance."""
    from attnsim.report import claims as io

    meta = {
        "table": "judged claims",
        "kind": judged.kind,
        "key": key,
        "claim_ids": [c.claim_id for c in judged.claims],
        "drawn": {name: list(figures) for name, figures in judged.drawn.items()},
        "format": store.FORMAT,
        "attnsim_version": attnsim.__version__,
    }
    store.write_atomic(io.table(list(judged.claims)), Path(target), meta)
    return Path(target)


def read(target: Path) -> tuple[Judged, dict[str, Any]]:
    """A kind's claims file: (its claims, its provenance). StoreError if it is damaged or is not
    a judged-claims file."""
    from attnsim.report import claims as io

    meta = store.read_meta(target)
    if meta.get("table") != "judged claims":
        raise StoreError(f"{target}: not a kind's judged claims file; delete it and rerun")
    table = store.read_table(target)
    by_id = {c.claim_id: c for c in io.from_table(table)}
    claims = tuple(by_id[cid] for cid in meta.get("claim_ids", []) if cid in by_id)
    return Judged(meta["kind"], claims, meta.get("drawn") or {}), meta


def cached(
    kind: Kind, target: Path, inputs: Mapping[str, Any], designs: Mapping[str, Any]
) -> Judged | None:
    """The kind's claims from its file if the file is there and its key is the key of the
    current inputs; else None (a damaged file too: it is judged afresh)."""
    if not Path(target).is_file():
        return None
    try:
        judged, meta = read(target)
    except StoreError as error:
        log.info("%s: not reused (%s)", target, error)
        return None
    if judged.kind != kind.name:
        return None
    if meta.get("key") != cache_key(kind, inputs, meta.get("claim_ids", []), designs):
        log.info("%s: stale (its experiments, code or designs changed): judged afresh", target)
        return None
    return judged


def current(
    kind: Kind,
    experiments: Mapping[str, str],
    root: Path,
    workspace: Path | None,
    designs: Mapping[str, Any] | None = None,
    cache: bool = True,
) -> Judged:
    """The kind's judged claims: from `<workspace>/claims/<kind>.parquet` when it is current
    (and `cache`), else judged now (nothing written). A kind none of `experiments` is of is
    judged on no rows (every claim `not measured`), which needs no file."""
    designs = designs or {}
    mine = {name: k for name, k in experiments.items() if k == kind.name}
    if not mine:
        return judge(kind, {}, root)
    if cache and workspace is not None:
        found = cached(kind, path(workspace, kind.name), data_inputs(kind, mine, root), designs)
        if found is not None:
            return found
    return judge(kind, mine, root, designs)


def judge_to_file(
    kind: Kind, experiments: Mapping[str, str], root: Path, target: Path, designs: Mapping
) -> Judged:
    """The workflow's `judge` job: the kind's claims judged and written to `target` with the key
    of the inputs they were judged from (read before judging: a summary replaced meanwhile makes
    the file stale, never wrong)."""
    mine = {name: k for name, k in experiments.items() if k == kind.name}
    inputs = data_inputs(kind, mine, root)
    judged = judge(kind, mine, root, designs)
    key = cache_key(kind, inputs, [c.claim_id for c in judged.claims], designs)
    write(target, judged, key)
    return judged


def workspace_designs(workspace: Path | None) -> Mapping[str, Any]:
    """Each claim's sequential design from the workspace's state record (empty without one)."""
    if workspace is None:
        return {}
    from attnsim.records import state

    return state.read(workspace).designs


def evaluate(
    root: Path, experiments: Mapping[str, str], workspace: Path | None, cache: bool = True
) -> list[ClaimResult]:
    """Every registered kind's claims, each kind's from its current claims file or judged now
    (`current`), then the claim every kind shares (the entropy bound, on the few columns it
    reads): the same claims as `report.claims.evaluate` on every summary, in the same order."""
    from attnsim.kinds import all_kinds
    from attnsim.report import claims as io

    designs = workspace_designs(workspace)
    claims: list[ClaimResult] = []
    drawn: dict[str, tuple[str, ...]] = {}
    for kind in all_kinds().values():
        judged = current(kind, experiments, root, workspace, designs, cache)
        claims += judged.claims
        drawn.update(judged.drawn)
    listed = dict(experiments)
    return claims + [io.entropy_claim(io.entropy_summaries(root, listed), listed, drawn)]


def for_summary(summary: Path, target: Path) -> Path:
    """The claims of a summary's kind judged on that one experiment, written to `target`: what a
    figure of verdicts (`Kind.presentation.claims_figures`) is drawn from outside a run (a
    notebook, the conformance suite). In a run, the judge job judges on every experiment of the
    kind."""
    from attnsim.kinds import get_kind

    meta = store.read_meta(summary)
    root = Path(summary).parents[3]  # <root>/summary/kind=<kind>/experiment=<name>/summary.parquet
    kind = get_kind(meta["kind"])
    judge_to_file(kind, {meta["experiment"]: kind.name}, root, target, {})
    return Path(target)
