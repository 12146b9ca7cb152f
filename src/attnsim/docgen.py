"""Documentation generated from the declarations, so it cannot drift from the code: the result
store's columns (docs/results-schema.md, `attnsim schema`) from the kinds' columns and the claims
table's schema. tests/test_docs.py fails when a generated file is out of date."""

from __future__ import annotations

from attnsim.claims.io import SCHEMA as CLAIMS_SCHEMA
from attnsim.kinds import all_kinds
from attnsim.store.parquet import PARTITIONS, summary_schema, trials_schema


def schema_markdown(kind_name: str) -> str:
    """The README's column tables for one kind, generated from the schemas (so they cannot drift)."""
    lines = []
    for title, schema in (
        ("trials", trials_schema(kind_name)),
        ("summary", summary_schema(kind_name)),
    ):
        lines += [
            f"**`{title}`** table of `{kind_name}`",
            "",
            "| column | type | meaning |",
            "|---|---|---|",
        ]
        for f in [c.field() for c in PARTITIONS] + list(schema):
            base = next(
                (f.name[: -len(s)] for s in ("_se", "_ci_low", "_ci_high") if f.name.endswith(s)),
                None,
            )
            if base and f"{base}_mean" in schema.names:
                continue  # documented with its mean
            doc = f.metadata[b"description"].decode().replace("|", "\\|")
            name = f"`{f.name}`"
            if f.name.endswith("_mean"):
                name += ", `_se`, `_ci_low`, `_ci_high`"
                doc = doc.replace("mean over trials of", "mean, its standard error and 95% interval, of")
            lines.append(f"| {name} | {f.type} | {doc} |")
        lines.append("")
    return "\n".join(lines)


def schema_document() -> str:
    """docs/results-schema.md: every kind's columns, generated (a test keeps the file in sync)."""
    head = [
        "# The result store's columns",
        "",
        "Generated from the kinds' declarations by `attnsim schema --write docs/results-schema.md`;",
        "`tests/test_docs.py` fails when this file is out of date. Layout, provenance and queries: README.md.",
        "Every `<metric>_mean` comes with `_se` (standard error), `_ci_low` and `_ci_high` (95% Student-t interval).",
        "",
    ]
    body = []
    for name, kind in all_kinds().items():
        body += [f"## `{name}`", "", kind.description, "", schema_markdown(name)]
    return "\n".join(head + body + claims_schema_markdown()).rstrip() + "\n"


def claims_schema_markdown() -> list[str]:
    """The columns of results/claims.parquet (one row per claim), from `attnsim.claims.io.SCHEMA`."""
    lines = [
        "## The claims table",
        "",
        "`results/claims.parquet`, one row per claim (also `attnsim claims --format json` or `csv`); missing numbers are null.",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
    ]
    for f in CLAIMS_SCHEMA:
        doc = f.metadata[b"description"].decode().replace("|", "\\|")
        lines.append(f"| `{f.name}` | {f.type} | {doc} |")
    return lines + [""]
