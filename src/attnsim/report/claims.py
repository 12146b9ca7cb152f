"""The claims' I/O: the config's summaries from the store in, the table (Parquet, Markdown, HTML)
out."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from attnsim import files
from attnsim.claims.engine import (
    PLANNED_FEWEST,
    PLANNED_TARGET,
    PLANNED_TRIALS,
    ClaimResult,
    canonical_rows,
    entropy_bounds,
    judge,
    planned_rows,
)
from attnsim.errors import StoreError
from attnsim.kinds.base import Kind
from attnsim.records.state import ClaimDesign
from attnsim.report import boundaries
from attnsim.report import provenance as run_provenance
from attnsim.report.claims_render import html, markdown, ordered
from attnsim.report.designs import SINGLE_LOOK, judging
from attnsim.store import parquet as store

ARROW_TYPES = {"str": pa.string(), "int": pa.int64(), "float": pa.float64()}


def result_fields() -> list[pa.Field]:
    """The columns of claims.parquet the result record declares (`engine.ClaimResult`), in its
    order: each field's annotation gives the type, its metadata the description
    (docs/results-schema.md is made of them); every column nullable (a missing number is null)."""
    return [
        pa.field(
            f.name,
            ARROW_TYPES[str(f.type)],
            nullable=True,
            metadata={"description": f.metadata["description"]},
        )
        for f in fields(ClaimResult)
    ]


SCHEMA = pa.schema(result_fields() + run_provenance.fields())
CLAIM_COLUMNS = [f.name for f in SCHEMA if f.name in ClaimResult.__dataclass_fields__]


def load_summaries(root: Path, experiments: dict[str, str]) -> dict[str, pd.DataFrame]:
    """experiment name -> its summary, for the config's experiments (name -> kind) that have one;
    for a kind whose claims fit every run (`run_columns`), each point's runs in a column `runs`."""
    frames = {}
    for name, kind in experiments.items():
        path = store.summary_path(root, kind, name)
        if path.exists():
            columns = run_columns(kind)
            frame = current_names(store.read_summary(path, ids=bool(columns)).to_pandas(), kind)
            if columns:
                frame = with_runs(frame, path, columns)
            frame.insert(0, "experiment", name)
            frame.attrs[PLAN] = planned_settings(store.read_meta(path))
            frames[name] = frame
    return frames


# a summary frame's attribute holding its experiment's planned trial settings (`TrialSettings`
# as JSON fields), read from the summary's provenance: the plan, never the rows measured
PLAN = "trial_settings"


def planned_settings(meta: dict) -> dict[str, Any]:
    """The trial settings the experiment planned (`TrialSettings.fields`), from a summary's
    provenance (`experiment_config`, the experiment's own JSON its collect job read); {} when the
    summary does not record them (then its kind's claims have no design)."""
    config = meta.get("experiment_config")
    if not config:
        return {}
    spec = json.loads(config) if isinstance(config, str) else dict(config)
    return {k: spec[k] for k in ("seed", "trials", "target_se", "max_trials") if k in spec}


def plan_of(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame | None:
    """An experiment's planned points (`engine.planned_rows`' input): its summary's `columns`
    (the parameters and the theory's columns, functions of them) with each point's planned trials
    (`TrialSettings.per_point`: the fewest it is sure to get, the most it can) and target SE
    (NaN when fixed), from the settings `load_summaries` attached; None without them. No
    measured column (`n_trials` included) is read."""
    from attnsim.records.experiment import TrialSettings

    fields_ = frame.attrs.get(PLAN) or {}
    if "trials" not in fields_:
        return None
    settings = TrialSettings.read({"seed": 0, **fields_})
    plan = frame[[c for c in columns if c in frame]].copy()
    plan[PLANNED_FEWEST], plan[PLANNED_TRIALS] = settings.per_point()
    plan[PLANNED_TARGET] = settings.target_se if settings.adaptive else math.nan
    return plan


def current_names(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """A summary collected before one of its values was renamed (`Param.renamed`: e.g. scale_type
    e8m0, now e8m0_ceil) read under the names the claims declare; one collected before the kind
    gained a parameter left out of ids at its default (`Param.id_omits_default`) gets that
    default, which is what its points computed."""
    from attnsim.kinds import get_kind

    for param in get_kind(kind).schema.params:
        if param.renamed and param.name in frame:
            frame[param.name] = frame[param.name].map(param.current)
        if param.id_omits_default and param.name not in frame:
            frame[param.name] = param.default
    return frame


def run_columns(kind: str) -> tuple[str, ...]:
    """The trial columns a kind's claims read besides its summary (`Kind.schema.run_columns`,
    e.g. right-censored escape times for a fit on every run); () for most kinds."""
    from attnsim.kinds import get_kind

    return get_kind(kind).schema.run_columns


def with_runs(summary: pd.DataFrame, path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """The summary (with its point ids) with a column `runs`: per point, a mapping column ->
    array of its runs' values in trial order, read from the chunk files the summary records it was
    made from (so the runs are exactly those it summarises, each point's first `n_trials`; a
    missing, changed or short chunk is a StoreError naming it). The point ids are dropped again."""
    meta = store.read_meta(path)
    root, kind, experiment = Path(path).parents[3], meta["kind"], meta["experiment"]
    recorded = meta.get("chunks") or {}
    tables = []
    for chunk in sorted(recorded):
        chunk_path = store.chunk_path(root, kind, experiment, chunk)
        if not chunk_path.exists():
            raise StoreError(f"{path}: its chunk {chunk} is no longer in the store; rerun")
        tables.append(store.read_table(chunk_path, columns=["point_id", "trial", *columns]))
    trials = pd.concat([t.to_pandas() for t in tables], ignore_index=True) if tables else None
    by_point = {}
    if trials is not None:
        trials = trials.sort_values(["point_id", "trial"], kind="stable")
        for point, rows in trials.groupby("point_id", sort=False):
            by_point[point] = {c: rows[c].to_numpy(dtype=float) for c in columns}
    runs = []
    for point, count in zip(summary["point_id"], summary["n_trials"]):
        found = by_point.get(point, {c: np.zeros(0) for c in columns})
        if len(found[columns[0]]) < count:
            raise StoreError(
                f"{path}: point {point} summarises {count} runs, its chunks hold "
                f"{len(found[columns[0]])}; rerun to rebuild the summary"
            )
        # its first `count` runs: a chunk may hold more than the config reads (FirstTrials)
        runs.append({c: values[:count] for c, values in found.items()})
    out = summary.drop(columns="point_id")
    out["runs"] = runs
    return out


def table(
    claims: list[ClaimResult], digests: dict[str, str] | None = None, run: dict | None = None
) -> pa.Table:
    """The claims as a typed table, in the grouped table's order (`render.ordered`), each row
    stamped with its provenance (`report.provenance.stamp`: the digest of the summaries it read,
    `digests` experiment -> summary digest, and the `run` record); unstamped without them."""
    rows = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(c).items()}
        for c in ordered(claims)
    ]
    rows = run_provenance.stamp(rows, digests or {}, run or {}) if digests is not None else rows
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def from_table(claims_table: pa.Table) -> list[ClaimResult]:
    """The claims of a claims table (its provenance columns aside)."""
    return from_table_rows(claims_table.to_pylist())


def _or_nan(value: Any) -> Any:
    """A stored null is a missing number: NaN in the record."""
    return math.nan if value is None else value


def from_table_rows(rows: list[dict]) -> list[ClaimResult]:
    return [
        ClaimResult(**{k: _or_nan(v) for k, v in row.items() if k in CLAIM_COLUMNS}) for row in rows
    ]


def write(
    claims: list[ClaimResult],
    results: Path,
    provenance: dict,
    threads: int = 1,
    digests: dict[str, str] | None = None,
) -> list[Path]:
    """results/claims.parquet (typed, every row stamped with the summaries' `digests` it read and
    the run record, the file with `provenance`), claims.md (the run named at its end) and
    claims.html (with the figures drawn under results/figures embedded, `threads` at a time),
    each atomic. `provenance` holds the run record (`report.provenance.run_record`)."""
    json.dumps(provenance)  # provenance must stay JSON-serialisable
    results = Path(results)
    parquet = results / "claims.parquet"
    stamped = table(claims, digests or {}, provenance)
    store.write_atomic(stamped, parquet, content_provenance(provenance))
    written = [parquet]
    footer = "\n" + run_provenance.footer(provenance) + "\n"
    located = boundaries.recorded(results)  # each located boundary, under its claim's id
    page = html(claims, provenance, results, threads)
    if located:
        page = page.replace("</body>", boundaries.html_section(located) + "</body>", 1)
        footer = "\n" + boundaries.markdown_section(located) + footer
    for name, text in (
        ("claims.md", markdown(claims) + footer),
        ("claims.html", page),
    ):
        path = results / name
        files.write_text(path, text, fsync=False)
        written.append(path)
    return written


def content_provenance(provenance: dict) -> dict:
    """The claims file's provenance without a time stamp: claims.parquet is a function of the
    summaries and the code, so the workflow, `attnsim claims --write` and any rerun write the same
    bytes (the summaries carry their own creation times, config hash and seed)."""
    meta = store.provenance(table="claims", **provenance)
    meta.pop("created_utc", None)
    return meta


def experiments_json(experiments: dict[str, str]) -> str:
    """The experiments (name -> kind) as the claims' provenance records them: sorted by name."""
    return json.dumps(dict(sorted(experiments.items())))


def evaluate(
    summaries: dict[str, pd.DataFrame],
    experiments: dict[str, str],
    designs: Mapping[str, ClaimDesign] | None = None,
) -> list[ClaimResult]:
    """Every registered kind's claims judged on the rows of the config's experiments of that kind
    (`judge_kind`, each claim under its recorded sequential design in `designs`), then the claim
    every kind shares (the entropy bound, `entropy_claim`)."""
    from attnsim.kinds import all_kinds

    claims: list[ClaimResult] = []
    drawn: dict[str, tuple[str, ...]] = {}
    for name, registered in all_kinds().items():
        frames = {e: summaries[e] for e, k in experiments.items() if k == name and e in summaries}
        judged, shown = judge_kind(registered, frames, designs)
        claims += judged
        drawn.update(shown)
    return claims + [entropy_claim(summaries, experiments, drawn)]


def judge_kind(
    kind: Kind,
    frames: dict[str, pd.DataFrame],
    designs: Mapping[str, ClaimDesign] | None = None,
) -> tuple[list[ClaimResult], dict[str, tuple[str, ...]]]:
    """A kind's claims judged on the rows of its experiments' summaries (`frames`: experiment ->
    summary, of this kind only) made independent of the experiments' order and names
    (`engine.canonical_rows`: one row per point, sorted by its parameters), each under its
    recorded sequential design (`designs`, from the workspace's state record; a single look
    without one: `report.designs`) and linked to a figure its experiments draw; and the figures
    each experiment draws (`drawn_figures`)."""
    rows = canonical_rows([frames[name] for name in sorted(frames)], kind.param_names)
    drawn = drawn_figures(frames, dict.fromkeys(frames, kind.name))
    params = kind.param_names
    theory = tuple(c.name for c in kind.theory.columns)
    plans = [plan_of(frames[name], params + theory) for name in sorted(frames)]
    planned = planned_rows([p for p in plans if p is not None], params)
    claims = []
    for spec in kind.submodule("claims").CLAIMS:
        how = judging((designs or {}).get(spec.claim_id))
        claim = judge(spec, rows, params, how.interval, planned)
        claims.append(replace(claim, level=how.level, design=how.text))
    return [replace(c, figure=shown_figure(c, drawn)) for c in claims], drawn


def entropy_claim(
    summaries: dict[str, pd.DataFrame],
    experiments: dict[str, str],
    drawn: dict[str, tuple[str, ...]],
) -> ClaimResult:
    """The claim every kind shares, 0 <= H <= log n (`engine.entropy_bounds`), on the summaries
    of every experiment that keeps the entropy's extremes (only the columns it reads are needed:
    `ENTROPY_COLUMNS`), shown in the first drawn entropy figure."""
    from attnsim.kinds import all_kinds

    kinds = all_kinds()
    figures = {
        name: kinds[k].presentation.entropy_figure
        for name, k in experiments.items()
        if k in kinds and kinds[k].presentation.entropy_figure in drawn.get(name, ())
    }
    result = entropy_bounds(summaries, figures)
    single = SINGLE_LOOK  # a bound on every trial: no interval a design could widen
    return replace(
        result, figure=shown_figure(result, drawn), level=single.level, design=single.text
    )


ENTROPY_COLUMNS = ("entropy_min", "entropy_max", "n", "n_trials")  # what entropy_bounds reads


def entropy_summaries(root: Path, experiments: dict[str, str]) -> dict[str, pd.DataFrame]:
    """experiment -> the columns of its summary the entropy bound reads (`ENTROPY_COLUMNS`, with
    `experiment` first, as `load_summaries` gives them), for the experiments that have a summary
    keeping the entropy's extremes: a few columns of each, checked, instead of every column."""
    import pyarrow.parquet as pq

    frames = {}
    for name, kind in sorted(experiments.items()):
        path = store.summary_path(root, kind, name)
        if not path.exists():
            continue
        store.check_summary_place(path, store.read_meta(path))  # a damaged footer: one line
        names = pq.read_schema(path).names
        if not {"entropy_min", "entropy_max", "n"} <= set(names):
            continue
        columns = [c for c in ENTROPY_COLUMNS if c in names]
        frame = store.read_table(path, columns=columns).to_pandas()
        frame.insert(0, "experiment", name)
        frames[name] = frame
    return frames


def drawn_figures(
    summaries: dict[str, pd.DataFrame], experiments: dict[str, str]
) -> dict[str, tuple[str, ...]]:
    """Each experiment's figures that the figures job draws for its grid (`Kind.figures_for` on
    the summary's distinct values, as report.figures reads it)."""
    from attnsim.kinds import all_kinds

    kinds = all_kinds()
    drawn = {}
    for name, frame in summaries.items():
        kind = kinds.get(experiments.get(name, ""))
        if kind is not None:
            values = {p: frame[p].unique().tolist() for p in kind.param_names}
            drawn[name] = kind.figures_for(values)
    return drawn


def shown_figure(claim: ClaimResult, drawn: dict[str, tuple[str, ...]]) -> str:
    """The claim's figure as `<experiment>/<figure>` from the first of its experiments whose grid
    draws it, or "" when none does: a link to a figure not drawn for this grid would be broken."""
    if not claim.figure:
        return ""
    figure = claim.figure.split("/", 1)[1]
    shown = [e for e in claim.experiments.split(", ") if figure in drawn.get(e, ())]
    return f"{shown[0]}/{figure}" if shown else ""
