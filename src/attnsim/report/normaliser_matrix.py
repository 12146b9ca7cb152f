"""The verdicts per normaliser across kinds (docs/science.md §12): a row per claim family with
claims about normalisers (`normaliser_bias`, `escape_time_grows_with_scale`,
`remedy_prevents_divergence`, ...), a column per normaliser in the registry's order, a cell per
claim: each claim's declared `subject` and `family` place it.

Each kind draws only its own claims (kinds never import each other), so the one table that puts
the essay's last line side by side with every argument it rests on is built here, from the
judged claims: the same verdicts the claims table prints, each cell linked to its row."""

from __future__ import annotations

from html import escape

from attnsim.claims.engine import ClaimResult
from attnsim.subjects import normalisers

SUBJECT = "normaliser"  # the claims whose subject is a value of this parameter


def families(claims: list[ClaimResult]) -> dict[str, dict[str, ClaimResult]]:
    """Claim family -> normaliser -> claim, for the measured claims whose subject is a
    normaliser, families in the order their first claim appears; empty when the sweep measured no
    claim per normaliser (a table of cells saying "not measured" tells nothing)."""
    table: dict[str, dict[str, ClaimResult]] = {}
    for c in claims:
        if c.subject_type == SUBJECT and c.verdict != "not measured":
            table.setdefault(c.family, {})[c.subject] = c
    return table


def _columns(table: dict[str, dict[str, ClaimResult]]) -> list[str]:
    return [name for name in normalisers.names() if any(name in row for row in table.values())]


def html_table(claims: list[ClaimResult]) -> str:
    """A section of claims.html: the matrix, each cell coloured by its verdict (the claims
    table's classes) and linked to the claim's row; '' when no claim is per normaliser."""
    table = families(claims)
    if not table:
        return ""
    names = _columns(table)
    head = "".join(f"<th>{escape(name)}</th>" for name in names)
    rows = []
    for family, cells in table.items():
        tds = "".join(_html_cell(cells.get(name)) for name in names)
        rows.append(f"<tr><th><code>{escape(family)}</code></th>{tds}</tr>")
    return (
        "<section id='normaliser-matrix'><h2>Verdicts per normaliser</h2><p>Every claim judged "
        "per normaliser, a row per claim family (docs/science.md §12); a cell links to its "
        "claim's row above (not measured: only a preset runs it); a blank cell is a claim the "
        "family does not make for that map."
        f"</p><table class='matrix'><thead><tr><th>claim family</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _html_cell(c: ClaimResult | None) -> str:
    if c is None:
        return "<td></td>"
    verdict = escape(c.verdict)
    # a claim not measured has no row in the page to link to
    text = (
        verdict if c.verdict == "not measured" else f"<a href='#claim-{c.claim_id}'>{verdict}</a>"
    )
    return f"<td class='verdict {verdict.replace(' ', '-')}'>{text}</td>"


def markdown_lines(claims: list[ClaimResult]) -> list[str]:
    """The same matrix as a Markdown table for claims.md; [] when no claim is per normaliser."""
    table = families(claims)
    if not table:
        return []
    names = _columns(table)
    lines = [
        "## Verdicts per normaliser",
        "",
        "Every claim judged per normaliser, a row per claim family (docs/science.md §12).",
        "",
        "| claim family | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for family, cells in table.items():
        verdicts = (cells[name].verdict if name in cells else "" for name in names)
        lines.append(f"| `{family}` | " + " | ".join(verdicts) + " |")
    return lines + [""]
