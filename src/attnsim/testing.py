"""Conformance checks for experiment kinds: `check_kind(kind)` is what a kind's author (built-in or
plugin) calls in a test to know the kind keeps the `Kind` contract before anyone runs a sweep.

`check_kind` runs the kind's example experiment (`Kind.example`, at a few trials) through the
stages a run takes, without Snakemake: plan, simulate, collect, figures, claims. It checks what no
single stage can see alone: that the declarations agree with each other, that the rows are the same
whatever the thread count and chunking (the per-point streams promise it), that every declared
column is stored with its declared type, and that every number is finite where the kind does not
declare otherwise. A failure raises `KindCheckError` (an AssertionError, so pytest shows it) whose
message names the kind and the first thing wrong.

`run_experiment` is the same wiring for tests that want a small store of their own.
"""

from __future__ import annotations

import copy
import math
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from attnsim.config.load import load
from attnsim.kinds import get_kind
from attnsim.kinds.base import Kind, Work
from attnsim.records.experiment import Settings

# The example's trials are cut to this many: enough for a standard error, few enough that twelve
# kinds check in seconds each.
CHECK_TRIALS = 4


class KindCheckError(AssertionError):
    """A kind that breaks its contract: the message names the kind and what is wrong."""


@dataclass(frozen=True)
class StoredExperiment:
    """What `run_experiment` wrote: the chunk files, in plan order, and the summary file."""

    chunks: list[Path]
    summary: Path | None


def run_experiment(
    settings: Settings | Mapping, name: str, root: Path, threads: int = 1, summarise: bool = True
) -> StoredExperiment:
    """Plan experiment `name` of `settings` (a `Settings` or a config dict) against the store at
    `root`, simulate every pending chunk and (with `summarise`) collect its summary: the jobs of a
    run, in this process."""
    from attnsim.jobs.collect import collect
    from attnsim.jobs.simulate import run_chunk
    from attnsim.plan.sweep import experiment_json, plan_experiment
    from attnsim.store import parquet

    if not isinstance(settings, Settings):
        settings = load(dict(settings))
    plan = plan_experiment(settings, name, root)
    chunks = [
        run_chunk(plan.spec(c), parquet.chunk_path(root, plan.kind, plan.name, c), threads=threads)
        for c in plan.pending
    ]
    if not summarise:
        return StoredExperiment(chunks, None)
    summary = parquet.summary_path(root, plan.kind, name)
    collect(experiment_json(settings, name), chunks, summary)
    return StoredExperiment(chunks, summary)


def example_config(
    kind: Kind, trials: int | None = CHECK_TRIALS, seed: int = 1, chunk_size: int | None = None
) -> dict:
    """A config of one experiment, named after the kind: its example, at `trials` (None: the
    example's own)."""
    if not kind.example:
        raise KindCheckError(f"kind {kind.name}: declares no example experiment (Kind.example)")
    example: dict[str, Any] = copy.deepcopy(dict(kind.example))
    if trials is not None:
        example["trials"] = min(trials, int(example["trials"]))
    config: dict = {"seed": seed, "experiments": {kind.name: {"kind": kind.name, **example}}}
    if chunk_size is not None:
        config["chunk_size"] = chunk_size
    return config


def check_kind(kind: Kind | str, workdir: Path | None = None, figures: bool = True) -> None:
    """Check that `kind` keeps the `Kind` contract on its example experiment (see the module's
    doc); raise KindCheckError naming the first thing wrong. `workdir`: where the stores and
    figures go (a temporary folder when None). `figures=False` leaves the drawing out (for a test
    that draws them itself)."""
    kind = get_kind(kind) if isinstance(kind, str) else kind
    _check_declarations(kind)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix=f"attnsim-check-{kind.name}-") as tmp:
            _check_runs(kind, Path(tmp), figures)
    else:
        _check_runs(kind, Path(workdir), figures)


def _fail(kind: Kind, what: str) -> KindCheckError:
    return KindCheckError(f"kind {kind.name}: {what}")


def _check_declarations(kind: Kind) -> None:
    """The declarations agree with each other and the registry knows the kind."""
    from attnsim.report.figure_check import check_kind as check_figures

    try:
        registered = get_kind(kind.name)
    except Exception as error:
        raise _fail(kind, f"not registered ({error})") from None
    if registered != kind:
        raise _fail(kind, "differs from the kind registered under its name")
    params = set(kind.param_names)
    metrics = [m.name for m in kind.schema.metrics]
    if kind.schema.main_metric not in metrics:
        raise _fail(kind, f"main_metric {kind.schema.main_metric!r} is not one of its metrics")
    for name in kind.schema.stream_params:
        if name not in params:
            raise _fail(kind, f"stream parameter {name!r} is not one of its parameters")
    summary = kind.summary
    for field in ("constant_metrics", "extreme_metrics", "finite_metrics", "nonfinite_metrics"):
        for name in getattr(summary, field):
            if name not in metrics:
                raise _fail(kind, f"summary.{field} names {name!r}, not one of its metrics")
    if summary.extra_columns and summary.extra is None:
        raise _fail(kind, "declares summary.extra_columns but no summary.extra to fill them")
    if kind.theory.columns and kind.theory.point is None:
        raise _fail(kind, "declares theory.columns but no theory.point to compute them")
    for name in kind.schema.run_columns:  # what the judge job reads from the trial files
        if name not in metrics and name != "trial":
            raise _fail(kind, f"schema.run_columns names {name!r}, not one of its metrics")
    for name in kind.presentation.claims_figures:
        if name not in kind.presentation.figures:
            raise _fail(kind, f"presentation.claims_figures names {name!r}, not one of its figures")
    _check_boundary_figures(kind)
    _check_counts(kind)
    check_figures(kind)


def _check_boundary_figures(kind: Kind) -> None:
    """Each claim `presentation.boundary_figures` names is a per-point claim of the kind (a
    boundary can be located of it), shown in the figure named (its `ClaimSpec.figure`), whose
    function takes the located boundaries (`boundaries=`)."""
    import inspect

    if not kind.presentation.boundary_figures:
        return
    from attnsim.claims.engine import ClaimSpec, PerPoint

    specs = {s.claim_id: s for s in kind.submodule("claims").CLAIMS if isinstance(s, ClaimSpec)}
    module = kind.submodule("figures")
    for claim, figure in kind.presentation.boundary_figures.items():
        where = f"presentation.boundary_figures[{claim!r}]"
        spec = specs.get(claim)
        if spec is None or not isinstance(spec.rule, PerPoint):
            raise _fail(kind, f"{where}: not a per-point claim of the kind")
        if figure not in kind.presentation.figures or spec.figure != figure:
            raise _fail(kind, f"{where} = {figure!r}: not one of its figures showing the claim")
        draw = inspect.unwrap(getattr(module, figure))
        if "boundaries" not in inspect.signature(draw).parameters:
            raise _fail(kind, f"{where}: {figure}() takes no boundaries=")


def _check_counts(kind: Kind) -> None:
    """`compute.counts`, if declared, gives the cost model finite, non-negative work (`Work`) at
    the example's first point."""
    if kind.compute.counts is None or kind.example is None:
        return
    grid = dict(kind.example.get("grid", {}))  # type: ignore[call-overload]
    params = {p.name: (grid.get(p.name) or [p.default])[0] for p in kind.schema.params}
    work = kind.compute.counts(params)
    if not isinstance(work, Work):
        raise _fail(kind, f"compute.counts returned {type(work).__name__}, not a Work")
    for part in ("own", "shared", "own_block", "shared_block", "setup"):
        values = getattr(work, part).values()
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise _fail(kind, f"compute.counts: {part} has a negative or non-finite count")


def _check_runs(kind: Kind, root: Path, figures: bool) -> None:
    """Plan, simulate and collect the example three ways; then figures and claims."""
    from attnsim.store import parquet

    config = example_config(kind)
    whole = run_experiment(config, kind.name, root / "one-chunk")
    threaded = run_experiment(config, kind.name, root / "two-threads", threads=2)
    points = math.prod(len(values) for values in config["experiments"][kind.name]["grid"].values())
    halves = dict(config, chunk_size=max(1, math.ceil(points / 2)))
    split = run_experiment(halves, kind.name, root / "two-chunks")
    if len(split.chunks) < 2 and points > 1:
        raise _fail(kind, f"a chunk_size of half its {points} points still made one chunk")
    rows = _rows(kind, whole.chunks)
    for how, stored in (("on 2 threads", threaded), ("in 2 chunks", split)):
        differ = _differing_column(_rows(kind, stored.chunks), rows)
        if differ:
            raise _fail(kind, f"trial column {differ!r} differs {how} from 1 thread and 1 chunk")
    assert whole.summary is not None and split.summary is not None
    summary = parquet.read_table(whole.summary)
    differ = _differing_column(parquet.read_table(split.summary), summary)
    if differ:
        raise _fail(kind, f"summary column {differ!r} differs when the trials come in 2 chunks")
    _check_columns(kind, "trials", rows.schema, parquet.trials_schema(kind))
    _check_columns(kind, "summary", summary.schema, parquet.summary_schema(kind))
    _check_finite(kind, rows, summary)
    if figures:
        _check_figures(kind, whole.summary, root / "figures")
    _check_claims(kind, root / "one-chunk")


def _rows(kind: Kind, chunks: list[Path]) -> pa.Table:
    """Every trial row of the chunks, in (point, trial) order: what must not depend on chunking."""
    from attnsim.store import parquet

    table = pa.concat_tables([parquet.read_table(p) for p in chunks])
    return table.sort_by([("point_id", "ascending"), ("trial", "ascending")])


def _differing_column(table: pa.Table, reference: pa.Table) -> str | None:
    """The first column whose content differs bit for bit (NaN equal to NaN), or None."""
    from attnsim.store.integrity import column_digest

    if table.column_names != reference.column_names:
        return next(
            (a for a, b in zip(table.column_names, reference.column_names) if a != b), "(count)"
        )
    for name in reference.column_names:
        if column_digest(table[name]) != column_digest(reference[name]):
            return name
    return None


def _check_columns(kind: Kind, what: str, stored: pa.Schema, declared: pa.Schema) -> None:
    for field in declared:
        if field.name not in stored.names:
            raise _fail(kind, f"the {what} file has no column {field.name!r}")
        found = stored.field(field.name).type
        if found != field.type:
            raise _fail(kind, f"{what} column {field.name!r} is {found}, declared {field.type}")
    extra = [name for name in stored.names if name not in declared.names]
    if extra:
        raise _fail(kind, f"the {what} file has undeclared columns {', '.join(extra)}")


def _check_finite(kind: Kind, rows: pa.Table, summary: pa.Table) -> None:
    """Metrics and their means finite, except the metrics declared otherwise."""
    allowed = set(kind.summary.finite_metrics) | set(kind.summary.nonfinite_metrics)
    for metric in kind.schema.metrics:
        if metric.name in allowed:
            continue
        values = rows[metric.name].to_numpy()
        if not np.isfinite(values).all():
            raise _fail(kind, f"metric {metric.name!r} is not finite in every trial row")
        if metric.name in kind.summary_metrics:
            mean = summary[f"{metric.name}_mean"].to_numpy()
            if not np.isfinite(mean).all():
                raise _fail(kind, f"summary column {metric.name}_mean is not finite")


def example_grid(kind: Kind) -> dict[str, list]:
    """The example's grid, every parameter listed (a left-out one at its default)."""
    assert kind.example is not None
    grid = dict(kind.example["grid"])  # type: ignore[call-overload]
    return {p.name: list(grid.get(p.name, [p.default])) for p in kind.schema.params}


def _check_figures(kind: Kind, summary: Path | None, out: Path) -> None:
    """Every figure that applies to the example's grid (`Presentation.figure_applies`) drawn, as
    PNG and PDF, by the figures job's own path, and no other."""
    from attnsim.report.figures import render
    from attnsim.report.judged import for_summary

    assert summary is not None
    # the figures of the kind's verdicts are drawn from its judged claims, as in a run
    claims = None
    if kind.presentation.claims_figures:
        claims = for_summary(summary, out / "claims.parquet")
    written = sorted(p.name for p in render(summary, out, claims=claims))
    drawn = kind.figures_for(example_grid(kind))
    expected = sorted(f"{f}.{s}" for f in drawn for s in ("png", "pdf"))
    if written != expected:
        raise _fail(kind, f"the figures job wrote {written}, expected {expected}")


def _check_claims(kind: Kind, root: Path) -> None:
    """The claims job's evaluation runs on the example's summary, every verdict a known one."""
    from attnsim.claims.engine import VERDICTS
    from attnsim.report import claims as claims_io

    experiments = {kind.name: kind.name}
    for claim in claims_io.evaluate(claims_io.load_summaries(root, experiments), experiments):
        if claim.verdict not in VERDICTS:
            raise _fail(kind, f"claim {claim.claim_id} has verdict {claim.verdict!r}")
