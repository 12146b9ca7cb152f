"""The claims table for readers: grouped under the essay's statements, every number labelled with what
it is and rounded to what its uncertainty supports (`attnsim.claims.numbers`), every row with the
threshold that decided it, what it rests on and the figure that shows it.

Renderings: `markdown` (results/claims.md), `html` (results/claims.html, the report's Claims page),
`terminal` (`attnsim claims`, the run summary), `json_text` and `csv_text` (scripts).

Figure links: claims.html lives in results/, so a figure is `figures/<experiment>/<figure>.png`
relative to it. The Snakemake report shows the page from a `data:` URL inside a frame, where no
relative link can resolve (and the report's own `javascript:app.showResultInfo(...)` links do not
cross into a frame of another origin): the page therefore embeds a copy of each figure at its
bottom, and a few lines of script point the figure links at those copies when the page is framed.
"""

from __future__ import annotations

import base64
import io as _io
import json
import math
import shutil
import textwrap
from collections import Counter
from html import escape
from pathlib import Path

from attnsim.claims import numbers
from attnsim.claims.engine import STATEMENT_TITLES, STATEMENTS, VERDICTS, Claim

CI_KINDS = ("mean (95% CI)", "fitted slope (95% CI)", "rank correlation (95% CI)")
EMBEDDED_WIDTH = 960  # pixels of the figure copies embedded in claims.html
HOW_TO_READ = (
    "Each row is one claim: what was measured (labelled: a mean or fitted slope with its 95% confidence "
    "interval, or a range, an extreme or an onset taken directly from the data), what it is compared with, "
    "the verdict and the threshold that decided it, what it rests on and the figure that shows it. "
    "A value with a confidence interval is rounded to two significant digits of the interval's half-width; "
    "other numbers are exact reductions of the data, shown to 4 significant digits. "
    "Verdicts: holds, fails, outside regime (the sweep has the experiment but no point in the claim's regime), "
    "not measured (no experiment of its kind)."
)


# --- what a row says -------------------------------------------------------------------------


def measured_text(c: Claim) -> str:
    """The measured number and its interval or range, rounded by `numbers` (without its label)."""
    if _nan(c.measured):
        return numbers.MISSING
    if c.number in CI_KINDS:
        return numbers.interval_text(c.measured, c.ci_low, c.ci_high)
    value = numbers.value(c.measured)
    if _nan(c.ci_low) or _nan(c.ci_high):
        return value
    if c.ci_low == c.ci_high == c.measured:
        return f"{value} (same at every point)"
    return f"{value} (smallest {numbers.value(c.ci_low)}, largest {numbers.value(c.ci_high)})"


def number_label(c: Claim) -> str:
    return c.number or "value"


def measured_labelled(c: Claim) -> str:
    return f"{number_label(c)}: {measured_text(c)}"


def deviation_text(c: Claim) -> str:
    """The relative deviation in percent; its precision from the measurement's interval when it is a confidence interval."""
    if _nan(c.rel_deviation):
        return ""
    half = (c.ci_high - c.ci_low) / 2 / abs(c.predicted) if c.number in CI_KINDS and c.predicted else None
    return numbers.percent(c.rel_deviation, half)


def compared_text(c: Claim) -> str:
    """The predicted value (if any), then what it is and what the measurement is."""
    if _nan(c.predicted):
        return c.compared_to or "no prediction"
    return numbers.value(c.predicted) + (f" ({c.compared_to})" if c.compared_to else "")


def rests_on(c: Claim) -> str:
    if not c.points:
        return "no data"
    return f"{c.experiments}: {c.points:,} points, {c.trials:,} trials"


def figure_href(c: Claim) -> str:
    """The figure's PNG relative to results/ (where claims.html and claims.md are written)."""
    return f"figures/{c.figure}.png" if c.figure else ""


def figure_anchor(figure: str) -> str:
    return "figure-" + figure.replace("/", "-")


def groups(claims: list[Claim]) -> list[tuple[str, list[Claim]]]:
    """(statement key, its claims), the essay's statements in order, then any other statement the claims name."""
    order = list(STATEMENTS) + [s for s in dict.fromkeys(c.statement for c in claims) if s not in STATEMENTS]
    return [(key, [c for c in claims if c.statement == key]) for key in order if any(c.statement == key for c in claims)]


def title(statement: str) -> str:
    return STATEMENT_TITLES.get(statement) or (statement.replace("_", " ").capitalize() if statement else "Other claims")


def tally(claims: list[Claim]) -> str:
    """'7 of 7 hold', or '5 of 7 hold; 1 fails, 1 not measured'."""
    count = Counter(c.verdict for c in claims)
    text = f"{count['holds']} of {len(claims)} hold"
    others = [f"{count[v]} {v}" for v in VERDICTS[1:] if count[v]]
    return text + ("; " + ", ".join(others) if others else "")


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


# --- Markdown ----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(claims: list[Claim]) -> str:
    lines = [f"# Claims: {tally(claims)}", "", HOW_TO_READ, ""]
    for number, (key, members) in enumerate(groups(claims), 1):
        lines += [f"## {number}. {title(key)}: {tally(members)}", ""]
        if key in STATEMENTS:
            lines += [f"> {STATEMENTS[key]}", ""]
        lines += [
            "| claim (regime) | measured | compared with | verdict | decided by | rests on | figure |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in members:
            deviation = deviation_text(c)
            measured = measured_labelled(c) + (f" (rel. dev. {deviation})" if deviation else "")
            figure = f"[{c.figure}]({figure_href(c)})" if c.figure else "–"
            lines.append(
                f"| `{c.claim_id}`: {_cell(c.claim)} *({_cell(c.condition)})* | {_cell(measured)} | {_cell(compared_text(c))} "
                f"| **{c.verdict}** | {_cell(c.threshold)} | {_cell(rests_on(c))} | {figure} |"
            )
        lines += ["", "Evidence:", ""] + [f"- `{c.claim_id}`: {c.evidence or 'no data'}" for c in members] + [""]
    return "\n".join(lines)


# --- terminal ----------------------------------------------------------------------------------


def terminal(claims: list[Claim], width: int | None = None, detail: bool = True) -> str:
    """The grouped table for a terminal of `width` columns (default: the terminal's). One line per
    claim (id, verdict, labelled measurement, prediction), wrapped to the width; with `detail`, the
    threshold and the figure below each."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    width = max(width, 60)
    id_width = max(len(c.claim_id) for c in claims)
    lead = 2 + id_width + 2 + 15  # "  <id>  <verdict>  "
    out = _wrap("", f"claims: {tally(claims)}", width, 2)
    for number, (key, members) in enumerate(groups(claims), 1):
        out += [""] + _wrap("", f"{number}. {title(key)}: {tally(members)}", width, 3)
        for c in members:
            text = measured_labelled(c) + ("" if _nan(c.predicted) else f"; predicted {numbers.value(c.predicted)}")
            head = f"  {c.claim_id:<{id_width}}  {c.verdict:<15}"
            out += _wrap(head, text, width, lead)
            if detail:
                for label, value in (("decided by", c.threshold), ("rests on", rests_on(c)), ("figure", figure_href(c) or "–")):
                    if value:
                        out += _wrap(" " * lead, f"{label}: {value}", width, lead + 2)
    return "\n".join(out)


def _wrap(head: str, text: str, width: int, indent: int) -> list[str]:
    lines = textwrap.wrap(text, width=max(20, width - len(head)), break_on_hyphens=False) or [""]
    rest = textwrap.wrap(" ".join(lines[1:]), width=max(20, width - indent), break_on_hyphens=False) if len(lines) > 1 else []
    return [head + lines[0]] + [" " * indent + line for line in rest]


def short(claims: list[Claim], width: int | None = None) -> str:
    """The grouped table without details, for the run summary."""
    return terminal(claims, width, detail=False)


def short_from_table(claims_table, width: int | None = None) -> str:
    from attnsim.claims.io import from_table

    return short(from_table(claims_table), width)


# --- scripts -----------------------------------------------------------------------------------


def json_text(claims_table) -> str:
    """Every column, typed (missing numbers as null), one object per claim."""
    return json.dumps(claims_table.to_pylist(), indent=1, ensure_ascii=False) + "\n"


def csv_text(claims_table) -> str:
    return claims_table.to_pandas().to_csv(index=False)


# --- HTML --------------------------------------------------------------------------------------

STYLE = """
body{font-family:system-ui,sans-serif;margin:1em 1.5em;color:#1f2328;max-width:110em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
p.statement{font-style:italic;max-width:60em}p.tally{font-weight:bold}
table{border-collapse:collapse;margin-bottom:0.6em;table-layout:fixed;width:100%}
th,td{border:1px solid #d0d7de;padding:4px 6px;vertical-align:top;font-size:88%;text-align:left}
th{background:#f6f8fa}
td.measured .value{font-family:ui-monospace,monospace}
.kind,.regime,.note{color:#59636e;font-size:92%}
th:nth-child(1){width:21%}th:nth-child(2){width:14%}th:nth-child(3){width:12%}th:nth-child(4){width:9%}
th:nth-child(5){width:18%}th:nth-child(6){width:14%}th:nth-child(7){width:12%}
td{overflow-wrap:anywhere}
td.verdict{font-weight:bold;overflow-wrap:normal}
td.verdict.holds{color:#1a7f37}td.verdict.fails{color:#cf222e}
td.verdict.outside-regime{color:#9a6700}td.verdict.not-measured{color:#6e7781}
figure{display:inline-block;margin:0.5em 1em 1em 0;vertical-align:top;max-width:48em}
figure img{max-width:100%;border:1px solid #d0d7de}
:target{outline:3px solid #0969da}
"""

# The page is framed (the Snakemake report shows it from a data: URL): results/-relative links cannot
# resolve there, so figure links go to the copies embedded at the bottom of the page instead.
FRAMED_SCRIPT = """
(function () {
  var framed = location.protocol === "data:";
  try { framed = framed || window.self !== window.top; } catch (e) { framed = true; }
  if (!framed) return;
  document.querySelectorAll("a[data-embedded]").forEach(function (a) { a.setAttribute("href", a.getAttribute("data-embedded")); });
  document.querySelectorAll("a.figure-file").forEach(function (a) { a.removeAttribute("href"); });
})();
"""


def embedded_png(path: Path, width: int = EMBEDDED_WIDTH) -> str | None:
    """A data: URI of the PNG at `path`, scaled down to `width` pixels and reduced to 256 colours
    (figures are line drawings: this keeps them legible at a fraction of the size), or None if absent."""
    if not path.is_file():
        return None
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        if image.width > width:
            image = image.resize((width, round(image.height * width / image.width)), Image.Resampling.LANCZOS)
        buffer = _io.BytesIO()
        image.quantize(colors=256).save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _row(c: Claim) -> str:
    deviation = deviation_text(c)
    kind_class = c.verdict.replace(" ", "-")
    figure = (
        f"<a class='figure-link' href='{escape(figure_href(c))}' data-embedded='#{escape(figure_anchor(c.figure))}'>{escape(c.figure).replace('/', '/<wbr>')}</a>"
        if c.figure
        else "–"
    )
    evidence = f"<br><span class='note'>{escape(c.evidence)}</span>" if c.evidence else ""
    return (
        f"<tr id='claim-{escape(c.claim_id)}'>"
        f"<td><code>{escape(c.claim_id)}</code><br>{escape(c.claim)}<br><span class='regime'>regime: {escape(c.condition)}</span></td>"
        f"<td class='measured'><span class='kind'>{escape(number_label(c))}</span><br><span class='value'>{escape(measured_text(c))}</span>"
        + (f"<br><span class='note'>rel. dev. {escape(deviation)}</span>" if deviation else "")
        + "</td>"
        f"<td class='compared'>{escape(compared_text(c))}</td>"
        f"<td class='verdict {kind_class}'>{escape(c.verdict)}</td>"
        f"<td class='threshold'>{escape(c.threshold)}</td>"
        f"<td class='rests-on'>{escape(rests_on(c))}{evidence}</td>"
        f"<td class='figure'>{figure}</td></tr>"
    )


def html(claims: list[Claim], provenance: dict, results: Path | None = None) -> str:
    """A self-contained page: a table per statement, the figures the rows link to (embedded from
    `results`/figures when drawn), the run's provenance."""
    sections = []
    head = (
        "<colgroup><col style='width:21%'><col style='width:17%'><col style='width:15%'><col style='width:6%'>"
        "<col style='width:17%'><col style='width:14%'><col style='width:10%'></colgroup>"
        "<thead><tr><th>claim (regime)</th><th>measured</th><th>compared with</th><th>verdict</th>"
        "<th>decided by</th><th>rests on</th><th>figure</th></tr></thead>"
    )
    for number, (key, members) in enumerate(groups(claims), 1):
        statement = f"<p class='statement'>{escape(STATEMENTS[key])}</p>" if key in STATEMENTS else ""
        sections.append(
            f"<section class='statement-group' id='statement-{escape(key or 'other')}'>"
            f"<h2>{number}. {escape(title(key))}</h2><p class='tally'>{escape(tally(members))}</p>{statement}"
            f"<table class='claims'>{head}<tbody>{''.join(_row(c) for c in members)}</tbody></table></section>"
        )
    figures = []
    for figure in dict.fromkeys(c.figure for c in claims if c.figure):
        shows = ", ".join(f"<a href='#claim-{escape(c.claim_id)}'><code>{escape(c.claim_id)}</code></a>" for c in claims if c.figure == figure)
        uri = embedded_png(Path(results) / f"figures/{figure}.png") if results else None
        image = (
            f"<a class='figure-file' href='figures/{escape(figure)}.png'><img src='{uri}' alt='figure {escape(figure)}'></a>"
            if uri
            else "<p class='note'>(not drawn yet)</p>"
        )
        figures.append(f"<figure id='{escape(figure_anchor(figure))}'>{image}<figcaption><code>{escape(figure)}</code> shows {shows}</figcaption></figure>")
    meta = "".join(f"<li><b>{escape(k)}</b>: {escape(str(v))}</li>" for k, v in provenance.items())
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>attnsim claims</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>Claims of the essay: {escape(tally(claims))}</h1><p>{escape(HOW_TO_READ)}</p>"
        + "".join(sections)
        + "<section id='figures'><h2>Figures</h2>"
        + "".join(figures)
        + f"</section><h2>Provenance</h2><ul>{meta}</ul><script>{FRAMED_SCRIPT}</script></body></html>\n"
    )
