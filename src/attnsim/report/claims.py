"""The claims' I/O: the config's summaries from the store in, the table (Parquet, Markdown, HTML)
out."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pyarrow as pa

from attnsim import files
from attnsim.claims.engine import (
    NUMBER_KINDS,
    ROLES,
    SIDES,
    STATEMENTS,
    VERDICTS,
    Claim,
    entropy_bounds,
)
from attnsim.report.claims_render import html, markdown, ordered
from attnsim.store import parquet as store

SCHEMA = pa.schema(
    [
        pa.field("claim_id", pa.string(), metadata={"description": "short stable id of the claim"}),
        pa.field("claim", pa.string(), metadata={"description": "the claim in one sentence"}),
        pa.field(
            "condition",
            pa.string(),
            metadata={"description": "the regime of parameters it was tested in"},
        ),
        pa.field(
            "statement",
            pa.string(),
            metadata={
                "description": "which of the essay's statements it tests: " + ", ".join(STATEMENTS)
            },
        ),
        pa.field(
            "number",
            pa.string(),
            metadata={"description": "what `measured` is, one of: " + "; ".join(NUMBER_KINDS)},
        ),
        pa.field(
            "compared_to",
            pa.string(),
            metadata={
                "description": "what `predicted` is (or what the measurement is compared with), "
                "then what `measured` is"
            },
        ),
        pa.field(
            "threshold",
            pa.string(),
            metadata={
                "description": "the tolerance or threshold that decided the verdict, and why"
            },
        ),
        pa.field(
            "figure",
            pa.string(),
            metadata={
                "description": "the figure that shows it, <experiment>/<figure>: "
                "results/figures/<experiment>/<figure>.png"
            },
        ),
        pa.field(
            "experiments",
            pa.string(),
            metadata={"description": "the experiments it rests on, comma-separated"},
        ),
        pa.field("points", pa.int64(), metadata={"description": "grid points it rests on"}),
        pa.field("trials", pa.int64(), metadata={"description": "trials it rests on"}),
        pa.field(
            "predicted",
            pa.float64(),
            metadata={
                "description": "the theory's value the verdict is about (the centre of the "
                "tolerance band); null when nothing is predicted"
            },
        ),
        pa.field("measured", pa.float64(), metadata={"description": "the measured value"}),
        pa.field(
            "ci_low",
            pa.float64(),
            metadata={
                "description": "lower end of the 95% interval (a `(95% CI)` number), else the "
                "smallest value of the range"
            },
        ),
        pa.field(
            "ci_high",
            pa.float64(),
            metadata={
                "description": "upper end of the 95% interval (a `(95% CI)` number), else the "
                "largest value of the range"
            },
        ),
        pa.field(
            "rel_deviation",
            pa.float64(),
            metadata={"description": "(measured - predicted) / |predicted|"},
        ),
        pa.field(
            "verdict",
            pa.string(),
            metadata={"description": "one of: " + ", ".join(VERDICTS) + " (docs/science.md §7.4)"},
        ),
        pa.field(
            "evidence",
            pa.string(),
            metadata={"description": "what the numbers are: points, experiments, the worst case"},
        ),
        pa.field(
            "role",
            pa.string(),
            metadata={
                "description": "one of: "
                + ", ".join(ROLES)
                + " (sanity: true by construction, counted apart)"
            },
        ),
        pa.field(
            "regime",
            pa.string(),
            metadata={"description": "where theory makes the prediction, fixed before the data"},
        ),
        pa.field(
            "reason",
            pa.string(),
            metadata={
                "description": "the docs/science.md section the regime and tolerance come from"
            },
        ),
        pa.field(
            "tolerance",
            pa.float64(),
            metadata={
                "description": "half-width of the band around `predicted` (equivalence claims); "
                "null otherwise"
            },
        ),
        pa.field(
            "bound",
            pa.float64(),
            metadata={
                "description": "the bound a one-sided or sanity claim is compared with; null "
                "otherwise"
            },
        ),
        pa.field(
            "side",
            pa.string(),
            metadata={
                "description": "which side of `bound` the claim is on: "
                + " or ".join(SIDES)
                + "; empty otherwise"
            },
        ),
        pa.field(
            "detectable",
            pa.float64(),
            metadata={
                "description": "half-width of the deciding 95% interval: the smallest deviation "
                "the data could have detected, to read against `tolerance`"
            },
        ),
    ]
)


def load_summaries(root: Path, experiments: dict[str, str]) -> dict[str, pd.DataFrame]:
    """experiment name -> its summary, for the config's experiments (name -> kind) that have one."""
    frames = {}
    for name, kind in experiments.items():
        path = store.summary_path(root, kind, name)
        if path.exists():
            frame = store.read_summary(path).to_pandas()
            frame.insert(0, "experiment", name)
            frames[name] = frame
    return frames


def table(claims: list[Claim]) -> pa.Table:
    """The claims as a typed table, in the grouped table's order (`render.ordered`)."""
    rows = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(c).items()}
        for c in ordered(claims)
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def from_table(claims_table: pa.Table) -> list[Claim]:
    return [
        Claim(**{str(k): (math.nan if v is None else v) for k, v in row.items()})  # type: ignore[arg-type]
        for row in claims_table.to_pylist()
    ]


def write(claims: list[Claim], results: Path, provenance: dict, threads: int = 1) -> list[Path]:
    """results/claims.parquet (typed, with provenance), claims.md and claims.html (with the figures
    drawn under results/figures embedded, `threads` at a time), each atomic."""
    json.dumps(provenance)  # provenance must stay JSON-serialisable
    results = Path(results)
    parquet = results / "claims.parquet"
    store.write_atomic(table(claims), parquet, store.provenance(table="claims", **provenance))
    written = [parquet]
    for name, text in (
        ("claims.md", markdown(claims)),
        ("claims.html", html(claims, provenance, results, threads)),
    ):
        path = results / name
        files.write_text(path, text, fsync=False)
        written.append(path)
    return written


def evaluate(summaries: dict[str, pd.DataFrame], experiments: dict[str, str]) -> list[Claim]:
    """Every registered kind's claims (name -> summary of the config's experiments of that kind, if
    any), then the claims that hold for every kind (the entropy bound)."""
    from attnsim.kinds import all_kinds

    kinds = all_kinds()
    by_kind: dict[str, list[pd.DataFrame]] = {}
    for name, kind in experiments.items():
        if name in summaries:
            by_kind.setdefault(kind, []).append(summaries[name])
    claims = []
    for name, registered in kinds.items():
        frames = by_kind.get(name)
        frame = pd.concat(frames, ignore_index=True) if frames else None
        claims += [judge(frame) for judge in registered.submodule("claims").CLAIMS]
    figures = {
        name: kinds[k].presentation.entropy_figure
        for name, k in experiments.items()
        if k in kinds and kinds[k].presentation.entropy_figure
    }
    claims.append(entropy_bounds(summaries, figures))
    return claims
