"""`attnsim cite CLAIM`: one verdict as a short citable record, in Markdown and as a BibTeX note:
the statement it tests, the claim, verdict, number and interval, tolerance or bound, regime,
the level and design it was judged under (a single look, or decide's sequential design), what it
rests on, the digest of the data it read and the run (config hash, seed, attnsim's
version, git commit). The BibTeX key `attnsim:<claim id>` is the key each row of `attnsim claims
--format latex` carries in its footnote, so a table and its citations name the same records.
"""

from __future__ import annotations

import math
from pathlib import Path

from attnsim.claims.engine import STATEMENTS
from attnsim.errors import AttnsimError
from attnsim.report import claims as io
from attnsim.report.claims_check import checked
from attnsim.report.claims_render import (
    compared_text,
    decided_text,
    measured_labelled,
    rests_on,
    tex,
)
from attnsim.report.provenance import footer


def key(claim_id: str) -> str:
    """The claim's citation key, in BibTeX and in the LaTeX table's footnotes."""
    return f"attnsim:{claim_id}"


def find(table_path, claim_id: str, root: Path | None = None) -> dict:
    """The claim's row of the claims table at `table_path`, once the table passes the checks of
    `claims_check.checked` (the file, every verdict, and the claim's data against the store at
    `root`, when given): a record that is cited must be one `verify` would not refuse at a
    glance."""
    rows = checked(Path(table_path), root, [claim_id])
    for row in rows:
        if row["claim_id"] == claim_id:
            return row
    known = ", ".join(sorted(r["claim_id"] for r in rows)[:5])
    raise AttnsimError(f"{table_path}: no claim {claim_id!r} (claims are named like {known}, ...)")


def judged_text(claim) -> str:
    """The error the verdict controls and the design it was judged under (`report.designs`):
    "level 0.95, single look", or decide's sequential design with its look and boundary."""
    if not claim.design:
        return "level not recorded (a table of an older attnsim)"
    level = "level not recorded" if math.isnan(claim.level) else f"level {claim.level:.2f}"
    return f"{level}, {claim.design}"


def markdown(row: dict) -> str:
    claim = io.from_table_rows([row])[0]
    statement = STATEMENTS.get(claim.statement, "")
    lines = [
        f"**{claim.claim_id}** ({key(claim.claim_id)}): {claim.claim}",
        "",
        f"- verdict: **{claim.verdict}**",
        f"- {measured_labelled(claim)}",
        f"- compared with: {compared_text(claim)}",
        f"- decided by: {decided_text(claim)}" if decided_text(claim) else "",
        f"- regime: {claim.regime or claim.condition}",
        f"- judged: {judged_text(claim)}",
        f"- rests on: {rests_on(claim)}",
        f"- data digest (sha256 of the summaries it read): {row.get('inputs_sha256') or 'none'}",
        f"- {footer(row)}",
        f"- the essay's statement it tests: {statement}" if statement else "",
    ]
    return "\n".join(line for line in lines if line != "") + "\n"


def bibtex(row: dict) -> str:
    """A @misc entry whose note carries the verdict, numbers and provenance."""
    claim = io.from_table_rows([row])[0]
    note = (
        f"Verdict {claim.verdict}; {measured_labelled(claim)}; compared with "
        f"{compared_text(claim)}; regime: {claim.regime or claim.condition}; judged: "
        f"{judged_text(claim)}; data sha256 "
        f"{row.get('inputs_sha256') or 'none'}; {footer(row)}"
    )
    fields = {
        "title": tex(f"attnsim claim {claim.claim_id}: {claim.claim}"),
        "author": "{the attnsim authors}",  # one corporate name, not split into persons
        "howpublished": tex(
            f"attnsim {row.get('attnsim_version') or ''}, "
            f"commit {row.get('git_commit') or 'not recorded'}"
        ),
        "note": tex(note),
    }
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields.items())
    return f"@misc{{{key(claim.claim_id)},\n{body}\n}}\n"
