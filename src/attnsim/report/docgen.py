"""Documentation generated from the declarations, so it cannot drift from the code: the result
store's columns (docs/results-schema.md, `attnsim schema`) from the kinds' columns and the claims
table's schema, and the tables of kinds in README.md and docs/usage.md (`attnsim schema
--update-docs` rewrites all three). tests/workflow/test_docs.py fails when a generated part is out
of date, so a new kind needs no hand edit of any of them."""

from __future__ import annotations

from attnsim.kinds import all_kinds
from attnsim.report.claims import SCHEMA as CLAIMS_SCHEMA
from attnsim.store.parquet import PARTITIONS, summary_schema, trials_schema


def schema_markdown(kind_name: str) -> str:
    """The README's column tables for one kind, generated from the schemas (so they cannot
    drift)."""
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
                doc = doc.replace(
                    "mean over trials of", "mean, its standard error and 95% interval, of"
                )
            lines.append(f"| {name} | {f.type} | {doc} |")
        lines.append("")
    return "\n".join(lines)


def schema_document() -> str:
    """docs/results-schema.md: every kind's columns, generated (a test keeps the file in sync)."""
    head = [
        "# The result store's columns",
        "",
        "Generated from the kinds' declarations by `attnsim schema --write "
        "docs/results-schema.md`;",
        "`tests/workflow/test_docs.py` fails when this file is out of date. Layout, provenance and",
        "queries: README.md.",
        "Every `<metric>_mean` comes with `_se` (standard error), `_ci_low` and `_ci_high` (95% "
        "Student-t interval).",
        "",
    ]
    body = []
    for name, kind in all_kinds().items():
        body += [f"## `{name}`", "", kind.description, "", schema_markdown(name)]
    return "\n".join(head + body + claims_schema_markdown()).rstrip() + "\n"


def claims_schema_markdown() -> list[str]:
    """The columns of results/claims.parquet (one row per claim), from
    `attnsim.report.claims.SCHEMA`."""
    lines = [
        "## The claims table",
        "",
        "`results/claims.parquet`, one row per claim (also `attnsim claims --format json` or "
        "`csv`); missing numbers are null.",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
    ]
    for f in CLAIMS_SCHEMA:
        doc = f.metadata[b"description"].decode().replace("|", "\\|")
        lines.append(f"| `{f.name}` | {f.type} | {doc} |")
    return lines + [""]


BEGIN = "<!-- generated: {name} (attnsim schema --update-docs); do not edit by hand -->"
END = "<!-- end of generated: {name} -->"
STATEMENTS = ("robustness", "information", "temperature")


def _statements(kind) -> list[str]:
    """The essay's statements a kind's claims bear on (from its claims, judged on no data)."""
    found = {spec.statement for spec in kind.submodule("claims").CLAIMS}
    return [s for s in STATEMENTS if s in found] + sorted(found - set(STATEMENTS))


def _builtin_kinds() -> dict:
    return {
        name: kind
        for name, kind in all_kinds().items()
        if kind.package.startswith("attnsim.kinds.")
    }


def kinds_readme_table() -> str:
    """README.md's table of kinds: each kind's statements and description, by statement."""
    rows = sorted(
        _builtin_kinds().items(),
        key=lambda item: (
            STATEMENTS.index(s) if (s := (_statements(item[1]) or ["~"])[0]) in STATEMENTS else 9,
            item[0],
        ),
    )
    lines = ["| kind | statement | what it measures |", "|---|---|---|"]
    lines += [
        f"| `{name}` | {', '.join(_statements(kind))} | {kind.description} |" for name, kind in rows
    ]
    return "\n".join(lines)


def kinds_usage_table() -> str:
    """docs/usage.md's table of kinds: grid parameters (with their defaults) and the main metric."""

    def param(p) -> str:
        default = getattr(p, "default", None)
        return f"`{p.name}`" + (f" (default {default})" if default is not None else "")

    lines = [
        "| kind | grid parameters | main metric (`target_se` applies to it) |",
        "|---|---|---|",
    ]
    for name, kind in _builtin_kinds().items():
        params = ", ".join(param(p) for p in kind.schema.params)
        lines.append(f"| `{name}` | {params} | `{kind.schema.main_metric}` |")
    return "\n".join(lines)


GENERATED = {
    "README.md": {"kinds": kinds_readme_table},
    "docs/usage.md": {"kinds": kinds_usage_table},
}


def generated_part(text: str, name: str) -> str | None:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    if begin not in text or end not in text:
        return None
    return text[text.index(begin) + len(begin) : text.index(end)].strip("\n")


def update_part(text: str, name: str, body: str) -> str:
    """`text` with the generated part `name` replaced by `body` (the markers must be there)."""
    begin, end = BEGIN.format(name=name), END.format(name=name)
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def update_docs(repo) -> list:
    """Rewrite docs/results-schema.md and the generated parts of README.md and docs/usage.md."""
    from pathlib import Path

    from attnsim import files

    repo = Path(repo)
    written = []
    files.write_text(repo / "docs/results-schema.md", schema_document(), fsync=False)
    written.append(repo / "docs/results-schema.md")
    for relative, parts in GENERATED.items():
        path = repo / relative
        text = path.read_text()
        for name, make in parts.items():
            text = update_part(text, name, make())
        files.write_text(path, text, fsync=False)
        written.append(path)
    return written
