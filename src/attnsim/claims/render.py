"""The claims table for readers: Markdown, HTML (the report's Claims page) and one line per claim for a terminal."""

from __future__ import annotations

import math
from html import escape

from attnsim.claims.engine import Claim


def _number(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(claims: list[Claim]) -> str:
    lines = ["| claim | condition | predicted | measured [95% CI] | rel. dev. | verdict |", "|---|---|---|---|---|---|"]
    for c in claims:
        measured = _number(c.measured)
        if not math.isnan(c.ci_low):
            measured += f" [{_number(c.ci_low)}, {_number(c.ci_high)}]"
        verdict = f"**{c.verdict}**"
        lines.append(
            f"| `{c.claim_id}`: {_cell(c.claim)} | {_cell(c.condition)} | {_number(c.predicted)} | {measured} | {_number(c.rel_deviation)} | {verdict} |"
        )
    lines += ["", "Evidence:", ""] + [f"- `{c.claim_id}`: {c.evidence or 'no data'}" for c in claims]
    return "\n".join(lines) + "\n"


def short_from_table(claims_table) -> str:
    from attnsim.claims.io import from_table

    return short(from_table(claims_table))


def short(claims: list[Claim]) -> str:
    """One line per claim, for the terminal."""
    width = max(len(c.claim_id) for c in claims)
    out = []
    for c in claims:
        value = "" if math.isnan(c.measured) else f"measured {c.measured:.4g}" + ("" if math.isnan(c.predicted) else f" vs predicted {c.predicted:.4g}")
        out.append(f"  {c.claim_id:<{width}}  {c.verdict:<14} {value}")
    return "\n".join(out)


def html(claims: list[Claim], provenance: dict) -> str:
    """A self-contained page of the table (for the Snakemake report), with the run's provenance."""
    colour = {"holds": "#1a7f37", "fails": "#cf222e", "outside regime": "#9a6700", "not measured": "#6e7781"}
    rows = []
    for c in claims:
        measured = _number(c.measured) + ("" if math.isnan(c.ci_low) else f" [{_number(c.ci_low)}, {_number(c.ci_high)}]")
        rows.append(
            f"<tr><td><code>{escape(c.claim_id)}</code><br>{escape(c.claim)}</td><td>{escape(c.condition)}</td>"
            f"<td>{_number(c.predicted)}</td><td>{measured}</td><td>{_number(c.rel_deviation)}</td>"
            f"<td style='color:{colour[c.verdict]};font-weight:bold'>{escape(c.verdict)}</td><td>{escape(c.evidence)}</td></tr>"
        )
    meta = "".join(f"<li><b>{escape(k)}</b>: {escape(str(v))}</li>" for k, v in provenance.items())
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>attnsim claims</title>"
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;font-size:90%}</style>"
        "</head><body><h2>Claims: prediction vs measurement</h2><table><tr><th>claim</th><th>condition</th><th>predicted</th>"
        "<th>measured [95% CI]</th><th>rel. dev.</th><th>verdict</th><th>evidence</th></tr>"
        + "".join(rows)
        + f"</table><h3>Provenance</h3><ul>{meta}</ul></body></html>"
    )
