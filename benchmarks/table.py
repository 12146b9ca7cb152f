"""Rows of the benchmark table, and writing them as Markdown and Parquet."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema(
    [
        pa.field(
            "what", pa.string(), nullable=False, metadata={"description": "the quantity measured"}
        ),
        pa.field(
            "value",
            pa.float64(),
            metadata={"description": "its value (NaN if it could not be measured)"},
        ),
        pa.field("unit", pa.string(), nullable=False),
        pa.field(
            "target",
            pa.string(),
            metadata={"description": "the issue's target, e.g. '>= 20'; null if none"},
        ),
        pa.field(
            "met",
            pa.bool_(),
            metadata={"description": "value meets the target; null without a target"},
        ),
        pa.field(
            "note", pa.string(), nullable=False, metadata={"description": "how it was measured"}
        ),
    ]
)


@dataclass
class Row:
    what: str
    value: float
    unit: str
    target: str | None = None  # ">= 20", "<= 15", ...
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        if self.value is None or not math.isfinite(self.value):
            return False
        op, bound = self.target.split()
        return self.value >= float(bound) if op == ">=" else self.value <= float(bound)


def fmt(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value:,.3g}" if magnitude < 1e9 else f"{value:.3g}"
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def markdown(rows: list[Row], header: str) -> str:
    lines = [
        header,
        "",
        "| what | value | unit | target | met | note |",
        "|---|---:|---|---|---|---|",
    ]
    for r in rows:
        met = {True: "yes", False: "**no**", None: ""}[r.met]
        lines.append(
            f"| {r.what} | {fmt(r.value)} | {r.unit} | {r.target or ''} | {met} | {r.note} |"
        )
    return "\n".join(lines) + "\n"


def text(rows: list[Row]) -> str:
    width = max(len(r.what) for r in rows)
    out = []
    for r in rows:
        met = {True: "met", False: "NOT MET", None: ""}[r.met]
        out.append(f"{r.what:<{width}}  {fmt(r.value):>10} {r.unit:<14} {r.target or '':<8} {met}")
    return "\n".join(out)


def write(
    rows: list[Row], directory: Path, header: str, metadata: dict[str, str]
) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md = directory / "latest.md"
    md.write_text(markdown(rows, header))
    records = [
        asdict(r) | {"met": r.met, "value": float("nan") if r.value is None else float(r.value)}
        for r in rows
    ]
    table = pa.Table.from_pylist(records, schema=SCHEMA).replace_schema_metadata(
        {k.encode(): v.encode() for k, v in metadata.items()}
    )
    parquet = directory / "latest.parquet"
    pq.write_table(table, parquet)
    return md, parquet
