"""The claims' I/O: the config's summaries from the store in, the table (Parquet, Markdown, HTML)
out."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from attnsim import files
from attnsim.claims.engine import (
    NUMBER_KINDS,
    OUTCOMES,
    ROLES,
    SIDES,
    STATEMENTS,
    VERDICTS,
    ClaimResult,
    canonical_rows,
    entropy_bounds,
    judge,
)
from attnsim.errors import StoreError
from attnsim.kinds.base import Column
from attnsim.report import provenance as run_provenance
from attnsim.report.claims_render import html, markdown, ordered
from attnsim.store import parquet as store


def _column(name: str, type: pa.DataType, description: str) -> pa.Field:
    """A column of claims.parquet with its description (docs/results-schema.md is made of them)."""
    return Column(name, type, description).field(nullable=True)


SCHEMA = pa.schema(
    [
        _column("claim_id", pa.string(), "short stable id of the claim"),
        _column("claim", pa.string(), "the claim in one sentence"),
        _column("condition", pa.string(), "the regime of parameters it was tested in"),
        _column(
            "statement",
            pa.string(),
            "which of the essay's statements it tests: " + ", ".join(STATEMENTS),
        ),
        _column("number", pa.string(), "what `measured` is, one of: " + "; ".join(NUMBER_KINDS)),
        _column(
            "compared_to",
            pa.string(),
            "what `predicted` is (or what the measurement "
            "is compared with), then what `measured` is",
        ),
        _column(
            "threshold", pa.string(), "the tolerance or threshold that decided the verdict, and why"
        ),
        _column(
            "figure",
            pa.string(),
            "the figure that shows it, <experiment>/<figure>: "
            "results/figures/<experiment>/<figure>.png",
        ),
        _column("experiments", pa.string(), "the experiments it rests on, comma-separated"),
        _column("points", pa.int64(), "grid points it rests on"),
        _column("trials", pa.int64(), "trials it rests on"),
        _column(
            "predicted",
            pa.float64(),
            "the theory's value the verdict is about (the centre of "
            "the tolerance band); null when nothing is predicted",
        ),
        _column(
            "measured",
            pa.float64(),
            "the headline number, labelled by `number`: a mean, fitted "
            "slope or rank correlation, the point farthest from the "
            "prediction (a range), the extreme trial, a share or an onset",
        ),
        _column(
            "ci_low",
            pa.float64(),
            "lower end of the 95% confidence interval of `measured`; "
            "null when none was computed (a range, an extreme, an onset)",
        ),
        _column(
            "ci_high", pa.float64(), "upper end of the 95% confidence interval; null when none"
        ),
        _column(
            "value_min",
            pa.float64(),
            "smallest value of a range over points or trials (not a "
            "confidence interval); null when the number is not a range",
        ),
        _column("value_max", pa.float64(), "largest value of that range; null when none"),
        _column("rel_deviation", pa.float64(), "(measured - predicted) / |predicted|"),
        _column(
            "verdict", pa.string(), "one of: " + ", ".join(VERDICTS) + " (docs/science.md §7.4)"
        ),
        _column(
            "evidence", pa.string(), "what the numbers are: points, experiments, the worst case"
        ),
        _column(
            "role",
            pa.string(),
            "one of: " + ", ".join(ROLES) + " (sanity: true by construction, counted apart)",
        ),
        _column("regime", pa.string(), "where theory makes the prediction, fixed before the data"),
        _column(
            "reason", pa.string(), "the docs/science.md section the regime and tolerance come from"
        ),
        _column(
            "tolerance",
            pa.float64(),
            "half-width of the band around `predicted` (equivalence claims); null otherwise",
        ),
        _column(
            "bound",
            pa.float64(),
            "the bound a one-sided or sanity claim is compared with; null otherwise",
        ),
        _column(
            "side",
            pa.string(),
            "which side of `bound` the claim is on: " + " or ".join(SIDES) + "; empty otherwise",
        ),
        _column(
            "detectable",
            pa.float64(),
            "half-width of the deciding 95% interval: the smallest deviation "
            "the data could have detected, to read against `tolerance`",
        ),
        _column(
            "alternative",
            pa.string(),
            "what would have made the claim fail (a competing value or "
            "named theory) and why it is plausible; empty for sanity checks",
        ),
        _column(
            "alternative_value",
            pa.float64(),
            "the alternative's value of the statistic; null if none",
        ),
        _column(
            "power",
            pa.float64(),
            "probability that the rule gives `fails` were `alternative_value` "
            "true, at the measurement's standard error; null without both",
        ),
        _column(
            "min_detectable",
            pa.float64(),
            "the deviation beyond the tolerance band (or bound) the "
            "rule detects with 80% power: (z_0.975 + z_0.8) x SE",
        ),
        _column(
            "outcome",
            pa.string(),
            "an evidence claim's outcome before the data: "
            + " or ".join(OUTCOMES)
            + " (open: it declares a plausible alternative); empty for sanity checks",
        ),
        _column(
            "budget",
            pa.string(),
            "the training budget it was judged at and whether the "
            "verdict could flip with it; empty when no budget matters",
        ),
        _column("n", pa.int64(), "the sample size behind the standard error (see `unit`)"),
        _column("unit", pa.string(), "what `n` counts: trials, runs, heads, rows, points"),
        _column(
            "needed",
            pa.int64(),
            "inconclusive: the sample size (in `needed_unit`) at which the "
            "interval would decide at the current effect and variance; 0 "
            "when more data cannot decide it (docs/science.md §7.6)",
        ),
        _column(
            "needed_unit", pa.string(), "what `needed` counts: trials per point, heads, points"
        ),
        _column(
            "to_decide", pa.string(), "inconclusive: what would decide it, and at which points"
        ),
        pa.field(
            "unjudged",
            pa.int64(),
            metadata={
                "description": "points of the regime the claim could not judge: a statistic its "
                "measure read is NaN there (a metric the kind declares non-finite, NaN at every "
                "trial); the verdict rests on the other points, the evidence names the columns"
            },
        ),
    ]
    + run_provenance.fields()
)
CLAIM_COLUMNS = [f.name for f in SCHEMA if f.name in ClaimResult.__dataclass_fields__]


def load_summaries(root: Path, experiments: dict[str, str]) -> dict[str, pd.DataFrame]:
    """experiment name -> its summary, for the config's experiments (name -> kind) that have one;
    for a kind whose claims fit every run (`run_columns`), each point's runs in a column `runs`."""
    frames = {}
    for name, kind in experiments.items():
        path = store.summary_path(root, kind, name)
        if path.exists():
            columns = run_columns(kind)
            frame = store.read_summary(path, ids=bool(columns)).to_pandas()
            if columns:
                frame = with_runs(frame, path, columns)
            frame.insert(0, "experiment", name)
            frames[name] = frame
    return frames


def run_columns(kind: str) -> tuple[str, ...]:
    """The trial columns a kind's claims read besides its summary (`RUN_COLUMNS` of its claims
    module, e.g. right-censored escape times for a fit on every run); () for most kinds."""
    from attnsim.kinds import get_kind

    return tuple(getattr(get_kind(kind).submodule("claims"), "RUN_COLUMNS", ()))


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
    for name, text in (
        ("claims.md", markdown(claims) + footer),
        ("claims.html", html(claims, provenance, results, threads)),
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


def evaluate(summaries: dict[str, pd.DataFrame], experiments: dict[str, str]) -> list[ClaimResult]:
    """Every registered kind's claims judged on the rows of the config's experiments of that kind
    (`engine.canonical_rows`: one row per point, sorted by its parameters, whatever the
    experiments' order or names), then the claim every kind shares (the entropy bound)."""
    from attnsim.kinds import all_kinds

    kinds = all_kinds()
    by_kind: dict[str, list[pd.DataFrame]] = {}
    for name, kind in sorted(experiments.items()):
        if name in summaries:
            by_kind.setdefault(kind, []).append(summaries[name])
    claims = []
    for name, registered in kinds.items():
        rows = canonical_rows(by_kind.get(name, []), registered.param_names)
        claims += [judge(spec, rows) for spec in registered.submodule("claims").CLAIMS]
    drawn = drawn_figures(summaries, experiments)
    figures = {
        name: kinds[k].presentation.entropy_figure
        for name, k in experiments.items()
        if k in kinds and kinds[k].presentation.entropy_figure in drawn.get(name, ())
    }
    claims.append(entropy_bounds(summaries, figures))
    return [replace(c, figure=shown_figure(c, drawn)) for c in claims]


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
