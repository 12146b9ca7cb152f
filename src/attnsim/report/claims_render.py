"""The claims table for readers: grouped under the essay's statements, every number labelled with
what
it is and rounded to what its uncertainty supports (`attnsim.claims.numbers`), every row with the
threshold that decided it, what it rests on and the figure that shows it.

Renderings: `markdown` (results/claims.md), `html` (results/claims.html, the report's Claims page),
`terminal` (`attnsim claims`, the run summary), `json_text` and `csv_text` (scripts), `latex` (a
booktabs table for a paper). Every rendering lists the claims in the same order (`ordered`): the
evidence claims under the essay's statements, then the sanity checks, counted apart (`tally`).

Wording: `predicted` labels only a number the verdict is about (the centre of an equivalence
band); a bound of a one-sided or sanity claim is `compared with`.

Figure links: claims.html lives in results/, so a figure is `figures/<experiment>/<figure>.png`
relative to it. The Snakemake report shows the page from a `data:` URL inside a frame, where no
relative link can resolve (and the report's own `javascript:app.showResultInfo(...)` links do not
cross into a frame of another origin): the page therefore embeds a copy of each figure at its
bottom, and a few lines of script point the figure links at those copies when the page is framed.
Chromium loads no `data:` URL over 2 MB (the page stays blank), so the copies are scaled to keep
the whole page under 1 MB as base64 (`fitting_pngs`); the report holds every figure full size.
"""

from __future__ import annotations

import base64
import io as _io
import json
import math
import shutil
import textwrap
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from attnsim.claims import numbers
from attnsim.claims.engine import STATEMENT_TITLES, STATEMENTS, VERDICTS, ClaimResult
from attnsim.report import designs, normaliser_matrix

MIN_TEXT_WIDTH = 30  # columns left for a claim's text beside its id and verdict
EMBEDDED_WIDTH = 960  # pixels of the figure copies embedded in claims.html
SCALED = Path("claims/scaled")  # the workspace's folder of those copies, kept for the next run
HOW_TO_READ = (
    "Each row is one claim: what was measured (labelled: a mean or fitted slope with its 95% "
    "confidence "
    "interval, or a range, an extreme or an onset taken directly from the data), what it is "
    "compared with, "
    "the verdict and the threshold that decided it, what it rests on and the figure that shows it. "
    "A value with a confidence interval is rounded to two significant digits of the interval's "
    "half-width; "
    "other numbers are exact reductions of the data, shown to 4 significant digits. "
    "Verdicts: holds (the 95% interval lies inside the tolerance band, or on the claimed side of a "
    "bound), "
    "fails (it lies entirely outside), inconclusive (it straddles a band edge: the data cannot "
    "tell), "
    "outside regime (the sweep has the experiment but no point in the claim's regime), "
    "not measured (no experiment of its kind). A holds states the smallest deviation the data "
    "could detect "
    "(the interval's half-width) beside the tolerance. An evidence claim names the alternative "
    "that would have made it fail and the power against it: a test whose outcome was open; "
    "evidence without one is counted near-certain. Sanity checks are bounds true by "
    "construction, checked "
    "on every trial: they fail only through a bug, so they are shown and counted apart from the "
    "evidence."
)
SANITY = "sanity"  # the group key of the sanity checks
SANITY_TITLE = "Sanity checks"
SANITY_TEXT = (
    "Bounds that hold by construction (mathematical identities checked on every trial). They "
    "cannot fail "
    "except through a bug, so they are not evidence for the essay's statements and are counted "
    "apart."
)


# --- what a row says -------------------------------------------------------------------------


def measured_text(c: ClaimResult) -> str:
    """The measured number and its interval or range, rounded by `numbers` (without its label)."""
    if _nan(c.measured):
        return numbers.MISSING
    if has_interval(c):
        return numbers.interval_text(c.measured, c.ci_low, c.ci_high)
    value = numbers.value(c.measured)
    if _nan(c.value_min) or _nan(c.value_max):
        return value
    if c.value_min == c.value_max == c.measured:
        return f"{value} (same at every point)"
    return f"{value} (smallest {numbers.value(c.value_min)}, largest {numbers.value(c.value_max)})"


def has_interval(c: ClaimResult) -> bool:
    """Whether the claim's number has a 95% confidence interval (a mean, a slope, a share with its
    Wilson interval); a range over points or trials is `value_min`/`value_max` instead."""
    return not (_nan(c.ci_low) or _nan(c.ci_high))


def number_label(c: ClaimResult) -> str:
    return c.number or "value"


def measured_labelled(c: ClaimResult) -> str:
    return f"{number_label(c)}: {measured_text(c)}"


def deviation_text(c: ClaimResult) -> str:
    """The relative deviation in percent; its precision from the measurement's interval when it is a
    confidence interval."""
    if _nan(c.rel_deviation):
        return ""
    half = (
        (c.ci_high - c.ci_low) / 2 / abs(c.predicted) if has_interval(c) and c.predicted else None
    )
    return numbers.percent(c.rel_deviation, half)


def compared_text(c: ClaimResult) -> str:
    """What the measurement is compared with: "predicted X ± tol" only when the verdict is about X
    (an equivalence band: the claim has a tolerance); a number without a band, or the bound of a
    one-sided or sanity claim, is "compared with"; else the text alone."""
    about = f" ({c.compared_to})" if c.compared_to else ""
    return (
        (short_compared(c)[2:] + about) if short_compared(c) else (c.compared_to or "no prediction")
    )


def detectable_text(c: ClaimResult) -> str:
    """For a judged statistical claim: the interval's half-width (the smallest deviation the data
    could detect) against the tolerance; empty where there is no interval."""
    if c.verdict not in ("holds", "fails", "inconclusive") or _nan(c.detectable):
        return ""
    text = f"detectable deviation ±{numbers.value(c.detectable)}"
    if not _nan(c.tolerance):
        text += f" (tolerance ±{numbers.value(c.tolerance)})"
    if c.verdict == "inconclusive" and c.to_decide:
        text += f"; to decide: {c.to_decide}"
    return text


def short_compared(c: ClaimResult) -> str:
    """'; predicted 1 ± 0.05' (an equivalence band), '; compared with: below 1' (a bound), ';
    compared
    with 0.0118' (a number the verdict is not decided against), or '', for the one-line
    renderings."""
    if not _nan(c.predicted) and not _nan(c.tolerance):
        return f"; predicted {numbers.value(c.predicted)} ± {numbers.value(c.tolerance)}"
    if not _nan(c.bound) and c.side:
        return f"; compared with: {c.side} {numbers.value(c.bound)}"
    if not _nan(c.predicted):
        return f"; compared with {numbers.value(c.predicted)}"
    return ""


def decided_text(c: ClaimResult) -> str:
    """The rule that decided, the resolution of the data against the tolerance, and the reason."""
    parts = [c.threshold] if c.threshold else []
    if detectable_text(c):
        parts.append(detectable_text(c))
    if c.reason:
        parts.append(f"regime and tolerance: {c.reason}")
    if alternative_text(c):
        parts.append(alternative_text(c))
    if c.budget:
        parts.append(f"budget: {c.budget}")
    return "; ".join(parts)


def rests_on(c: ClaimResult) -> str:
    if not c.points:
        return "no data"
    return f"{c.experiments}: {c.points:,} points, {c.trials:,} trials"


def figure_href(c: ClaimResult) -> str:
    """The figure's PNG relative to results/ (where claims.html and claims.md are written)."""
    return f"figures/{c.figure}.png" if c.figure else ""


def figure_anchor(figure: str) -> str:
    return "figure-" + figure.replace("/", "-")


def groups(claims: list[ClaimResult]) -> list[tuple[str, list[ClaimResult]]]:
    """(statement key, its evidence claims), the essay's statements in order, then any other
    statement the claims name, then ("sanity", the sanity checks)."""
    evidence = [c for c in claims if c.role != "sanity"]
    order = list(STATEMENTS) + [
        s for s in dict.fromkeys(c.statement for c in evidence) if s not in STATEMENTS
    ]
    out = [
        (key, [c for c in evidence if c.statement == key])
        for key in order
        if any(c.statement == key for c in evidence)
    ]
    sanity = [c for c in claims if c.role == "sanity"]
    return out + ([(SANITY, sanity)] if sanity else [])


def ordered(claims: list[ClaimResult]) -> list[ClaimResult]:
    """The claims in the grouped table's order (every rendering and the Parquet file use it)."""
    return [c for _, members in groups(claims) for c in members]


def title(statement: str) -> str:
    if statement == SANITY:
        return SANITY_TITLE
    return STATEMENT_TITLES.get(statement) or (
        statement.replace("_", " ").capitalize() if statement else "Other claims"
    )


def group_text(key: str) -> str:
    return SANITY_TEXT if key == SANITY else STATEMENTS.get(key, "")


VERDICT_WORDS = {
    "holds": "hold",
    "fails": "fail",
    "inconclusive": "inconclusive",
    "outside regime": "outside regime",
    "not measured": "not measured",
    "not predicted": "not predicted",
}


def _verdict_counts(claims: list[ClaimResult]) -> str:
    count = Counter(c.verdict for c in claims)
    return ", ".join(
        f"{count[v]} {VERDICT_WORDS[v]}"
        for v in VERDICTS
        if count[v] or v in ("holds", "fails", "inconclusive")
    )


def test_role(c: ClaimResult) -> str:
    """The claim's role fixed before the data (`ClaimResult.test_role`: open test, check,
    sanity). A table written before roles were recorded has none: its sanity claims are sanity,
    its declared checks checks and its evidence claims counted as open tests, as it counted them."""
    if c.test_role:
        return c.test_role
    return {"sanity": "sanity", "check": "check"}.get(c.role, "open test")


def failed_check(c: ClaimResult) -> bool:
    """A check or sanity claim that fails or is inconclusive: a bug or a finding, listed by id."""
    return test_role(c) != "open test" and c.verdict in ("fails", "inconclusive")


FAILED_CHECKS = (
    "a check or sanity claim that fails or is inconclusive: it could not have failed as a test, "
    "so a miss is a bug or a finding"
)


def false_rate(c: ClaimResult) -> float:
    """The chance, at most, that a decided claim's verdict is false (docs/science.md §7.7): each
    verdict rests on one-sided decisions at the table's level, (1 - level) / 2 each (0.025 for
    the 95% interval; `level` when decide's sequential design set it). `holds` is false only if
    the truth lies outside the band (or on the wrong side of the bound) and the interval still
    lies inside: at most one side's error; `fails` is false only if the truth lies inside and the
    interval lies beyond one edge: again one side. A per-point rule holds only if every point
    holds, so a false holds needs a point whose truth is beyond the band to hold: one side's
    error; it fails if any point fails, so a false fails is a union over its `points` whose truth
    is inside: at most points x one side's error (Bonferroni; shared draws only lower it).
    Undecided verdicts (inconclusive, outside regime, not measured) cannot be false: 0."""
    if c.verdict not in ("holds", "fails"):
        return 0.0
    level = c.level if not _nan(c.level) and 0 < c.level < 1 else 0.95
    side = (1 - level) / 2
    per_point = c.threshold.startswith("at every point")
    return side * max(c.points, 1) if per_point and c.verdict == "fails" else side


def expected_false(claims: list[ClaimResult]) -> float:
    """The expected number of false verdicts among `claims`' open tests, at most: the sum of
    their `false_rate`s (checks and sanity claims are not counted: they could not have failed)."""
    return float(sum(false_rate(c) for c in claims if test_role(c) == "open test"))


def evidence_tally(claims: list[ClaimResult]) -> str:
    """'12 evidence claims: 9 hold, 1 fail, 2 inconclusive (open tests 8: 7 hold, 1 fail; checks
    4: 2 hold, 2 inconclusive; 2 failed checks)': the tests the design could have failed (design
    power >= 0.8) apart from the checks, and how many checks failed or were inconclusive (the
    tables name them: `failed_checks`)."""
    evidence = [c for c in claims if c.role != "sanity"]
    text = f"{len(evidence)} evidence claim{'s' if len(evidence) != 1 else ''}: "
    text += _verdict_counts(evidence)
    checks = [c for c in evidence if test_role(c) == "check"]
    if not checks:
        return text
    opened = [c for c in evidence if test_role(c) == "open test"]
    failed = failed_checks(checks)
    return (
        text
        + f" (open tests {len(opened)}: {_verdict_counts(opened)}; "
        + f"checks {len(checks)}: {_verdict_counts(checks)}"
        + (f"; {len(failed)} failed check{'s' if len(failed) != 1 else ''}" if failed else "")
        + ")"
    )


def failed_checks(claims: list[ClaimResult]) -> list[str]:
    """The ids of the failed checks among `claims` (`failed_check`), in the table's order."""
    return [c.claim_id for c in ordered(claims) if failed_check(c)]


def alternative_text(c: ClaimResult) -> str:
    """What would have made the claim fail, and the power against it (or the deviation the rule
    detects with 80% power); empty for sanity checks."""
    if not c.alternative:
        return ""
    text = f"alternative: {c.alternative}"
    if not _nan(c.power):
        text += f"; power against it {numbers.value(c.power)}"
    elif not _nan(c.min_detectable):
        text += f"; detects {numbers.value(c.min_detectable)} beyond the band with 80% power"
    return text


def sanity_tally(claims: list[ClaimResult]) -> str:
    """'9 sanity checks: all pass', or '9 sanity checks: 8 pass, 1 fail'."""
    sanity = [c for c in claims if c.role == "sanity"]
    count = Counter(c.verdict for c in sanity)
    head = f"{len(sanity)} sanity check{'s' if len(sanity) != 1 else ''}: "
    if count["holds"] == len(sanity):
        return head + "all pass"
    words = {"holds": "pass", "fails": "fail"}
    return head + ", ".join(
        f"{count[v]} {words.get(v, VERDICT_WORDS[v])}" for v in VERDICTS if count[v]
    )


def tally(claims: list[ClaimResult]) -> str:
    """'N evidence claims: a hold, b fail, c inconclusive; M sanity checks: all pass' (the sanity
    part only if there are sanity checks)."""
    sanity = any(c.role == "sanity" for c in claims)
    evidence = any(c.role != "sanity" for c in claims)
    if sanity and not evidence:
        return sanity_tally(claims)
    return evidence_tally(claims) + (f"; {sanity_tally(claims)}" if sanity else "")


def group_tally(key: str, members: list[ClaimResult]) -> str:
    """A group's tally: '3 of 4 hold; 1 inconclusive' for a statement, the sanity tally for the
    checks."""
    if key == SANITY:
        return sanity_tally(members)
    count = Counter(c.verdict for c in members)
    text = f"{count['holds']} of {len(members)} hold"
    others = [f"{count[v]} {v}" for v in VERDICTS[1:] if count[v]]
    return text + ("; " + ", ".join(others) if others else "")


def measured_only(claims: list[ClaimResult]) -> tuple[list[ClaimResult], int]:
    """The claims this sweep measured, and how many others need kinds it does not run (a plugin's
    claims in the default sweep, the presets' kinds in a small sweep): the tables list the first
    and count the second in one line (`unmeasured_line`); `attnsim claims --all` lists them all."""
    shown = [c for c in claims if c.verdict != "not measured"]
    return shown, len(claims) - len(shown)


def unmeasured_line(count: int) -> str:
    claims = "1 claim needs" if count == 1 else f"{count} claims need"
    return f"{claims} kinds this sweep does not run: attnsim claims --all"


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


# --- Markdown ----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(claims: list[ClaimResult], everything: bool = False) -> str:
    """claims.md: the measured claims (`everything`: all), grouped under the essay's statements."""
    matrix = normaliser_matrix.markdown_lines(claims)
    claims, hidden = (claims, 0) if everything else measured_only(claims)
    lines = [f"# Claims: {tally(claims)}", ""]
    lines += [unmeasured_line(hidden), ""] if hidden else []
    lines += [HOW_TO_READ, ""]
    failed = failed_checks(claims)
    if failed:
        lines += [f"Failed checks ({FAILED_CHECKS}): " + ", ".join(f"`{c}`" for c in failed), ""]
    for number, (key, members) in enumerate(groups(claims), 1):
        lines += [f"## {number}. {title(key)}: {group_tally(key, members)}", ""]
        if group_text(key):
            lines += [f"> {group_text(key)}", ""]
        lines += [
            "| claim (regime) | measured | compared with | verdict | decided by | rests on | "
            "figure |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in members:
            deviation = deviation_text(c)
            measured = measured_labelled(c) + (f" (rel. dev. {deviation})" if deviation else "")
            figure = f"[{c.figure}]({figure_href(c)})" if c.figure else "–"
            lines.append(
                f"| `{c.claim_id}`: {_cell(c.claim)} *({_cell(c.regime)})* | {_cell(measured)} "
                f"| {_cell(compared_text(c))} "
                f"| **{c.verdict}** ({test_role(c)}) | {_cell(decided_text(c))} "
                f"| {_cell(rests_on(c))} | {figure} |"
            )
        lines += (
            ["", "Evidence:", ""]
            + [f"- `{c.claim_id}`: {c.evidence or 'no data'}" for c in members]
            + [""]
        )
    return "\n".join(lines + matrix)


# --- terminal ----------------------------------------------------------------------------------


def terminal(
    claims: list[ClaimResult],
    width: int | None = None,
    detail: bool = True,
    everything: bool = False,
) -> str:
    """The grouped table for a terminal of `width` columns (default: the terminal's). One line per
    measured claim (`everything`: every claim): id, verdict, labelled measurement, prediction,
    wrapped to the width; with `detail`, the threshold and the figure below each."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    width = max(width, 60)
    claims, hidden = (claims, 0) if everything else measured_only(claims)
    note = _wrap("", unmeasured_line(hidden), width, 2) if hidden else []
    if not claims:
        return "\n".join(note)
    id_width = max(len(c.claim_id) for c in claims)
    lead = 2 + id_width + 2 + 15  # "  <id>  <verdict>  "
    below = width - lead < MIN_TEXT_WIDTH  # long ids, narrow terminal: the text under the id
    if below:
        lead = 6
    out = _wrap("", f"claims: {tally(claims)}", width, 2) + note
    for number, (key, members) in enumerate(groups(claims), 1):
        out += [""] + _wrap("", f"{number}. {title(key)}: {group_tally(key, members)}", width, 3)
        for c in members:
            text = measured_labelled(c) + short_compared(c)
            head = f"  {c.claim_id:<{id_width}}  {c.verdict:<15}"
            if below:
                out.append(f"  {c.claim_id}  {c.verdict}")
                head = " " * lead
            out += _wrap(head, text, width, lead)
            if detail:
                rows = (
                    ("decided by", c.threshold),
                    ("resolution", detectable_text(c)),
                    ("regime from", c.reason),
                    ("would fail if", alternative_text(c).removeprefix("alternative: ")),
                    ("budget", c.budget),
                    ("rests on", rests_on(c)),
                    ("figure", figure_href(c) or "–"),
                )
                for label, value in rows:
                    if value:
                        out += _wrap(" " * lead, f"{label}: {value}", width, lead + 2)
    return "\n".join(out)


def _wrap(head: str, text: str, width: int, indent: int) -> list[str]:
    """`text` wrapped after `head` to `width`, between words only: a path or an id longer than a
    line runs past it rather than being cut (a terminal folds it, a pager scrolls it, and a copy
    of it still works)."""
    wrapper = textwrap.TextWrapper(break_on_hyphens=False, break_long_words=False)
    wrapper.width = max(20, width - len(head))
    lines = wrapper.wrap(text) or [""]
    wrapper.width = max(20, width - indent)
    rest = wrapper.wrap(" ".join(lines[1:])) if len(lines) > 1 else []
    return [head + lines[0]] + [" " * indent + line for line in rest]


def short(claims: list[ClaimResult], width: int | None = None) -> str:
    """The grouped table without details."""
    return terminal(claims, width, detail=False)


# --- the headline: what a reader holds in mind ---------------------------------------------------

HEADLINE_LINES = 40  # at most, at HEADLINE_WIDTH columns (tests/report/test_claims_render.py)
HEADLINE_WIDTH = 80
LISTED = 4  # ids named per line of failed or undecided claims, the rest counted


@dataclass(frozen=True)
class StatementHeadline:
    """One statement of the essay in the headline: its measured open tests by verdict (the
    failing ones named), its checks (those that failed or were inconclusive named: failed checks)
    and the expected number of false verdicts among its open tests at the table's level, at most
    (`expected_false`)."""

    key: str
    title: str
    verdicts: Mapping[str, int]  # the open tests'
    failed: tuple[str, ...] = ()  # ids of the open tests that fail
    checks: Mapping[str, int] = field(default_factory=dict)
    failed_checks: tuple[str, ...] = ()  # checks that fail or are inconclusive
    expected_false: float = 0.0


@dataclass(frozen=True)
class Headline:
    """The per-statement headline of a claims table, the one input of `render_headline`: the run
    summary and `attnsim claims` print it, the same way."""

    statements: tuple[StatementHeadline, ...]
    sanity: Mapping[str, int]
    sanity_failed: tuple[str, ...]  # sanity checks that did not pass: a bug or a finding
    undecided_by_trials: tuple[str, ...]  # inconclusive claims more trials would decide
    not_measured: int
    design: str = ""  # the levels and designs the verdicts were judged under (designs.py)

    @property
    def measured(self) -> int:
        return sum(
            sum(s.verdicts.values()) + sum(s.checks.values()) for s in self.statements
        ) + sum(self.sanity.values())


def headline(claims: list[ClaimResult]) -> Headline:
    """The headline of `claims` (every claim of a table, measured or not): per statement its open
    tests apart from its checks (`test_role`), the failed checks named; sanity claims apart."""
    measured, hidden = measured_only(claims)
    statements = []
    for key, members in groups(measured):
        if key == SANITY:
            continue
        tests = [c for c in members if test_role(c) == "open test"]
        checks = [c for c in members if test_role(c) != "open test"]
        statements.append(
            StatementHeadline(
                key,
                title(key),
                dict(Counter(c.verdict for c in tests)),
                tuple(c.claim_id for c in tests if c.verdict == "fails"),
                dict(Counter(c.verdict for c in checks)),
                tuple(c.claim_id for c in checks if failed_check(c)),
                expected_false(tests),
            )
        )
    sanity = [c for c in measured if c.role == "sanity"]
    return Headline(
        statements=tuple(statements),
        sanity=dict(Counter(c.verdict for c in sanity)),
        sanity_failed=tuple(
            c.claim_id for c in sanity if c.verdict not in ("holds", "outside regime")
        ),
        undecided_by_trials=tuple(
            c.claim_id
            for c in measured
            if c.verdict == "inconclusive" and c.needed_unit == "trials per point"
        ),
        not_measured=hidden,
        design=designs.design_summary(measured),
    )


def _counts(verdicts: Mapping[str, int], words: Mapping[str, str] = VERDICT_WORDS) -> str:
    return ", ".join(f"{verdicts[v]} {words.get(v, v)}" for v in VERDICTS if verdicts.get(v))


def _named(label: str, ids: tuple[str, ...], width: int) -> list[str]:
    if not ids:
        return []
    shown = ", ".join(ids[:LISTED]) + (
        f" and {len(ids) - LISTED} more" if len(ids) > LISTED else ""
    )
    return _wrap(f"    {label}: ", shown, width, 6)


def render_headline(h: Headline, width: int = 80, more: str = "attnsim claims --all") -> str:
    """The headline in at most HEADLINE_LINES lines of `width` columns: per statement its measured
    open tests by verdict (the failing ones named), its checks (the failed checks named) and the
    expected number of false verdicts among its open tests; the sanity checks apart (any that did
    not pass named), the claims more trials would decide, and where the full list is (`more`)."""
    tests = sum(sum(s.verdicts.values()) for s in h.statements)
    total: Counter[str] = Counter()
    for statement in h.statements:
        total.update(statement.verdicts)
    checked = sum(sum(s.checks.values()) for s in h.statements)
    failed_checks = sum(len(s.failed_checks) for s in h.statements)
    false = sum(s.expected_false for s in h.statements)
    checks = sum(h.sanity.values())
    head = f"claims: {tests} open tests measured"
    head += f" ({_counts(total)}; expected false verdicts <= {false:.2f})" if tests else ""
    head += f"; {checked} checks ({failed_checks} failed)" if checked else ""
    head += f"; {checks} sanity checks" if checks else ""
    out = _wrap("", head, width, 2)
    out += _wrap("  ", f"judged: {h.design}", width, 4) if h.design else []
    for number, statement in enumerate(h.statements, 1):
        count = sum(statement.verdicts.values())
        text = f"{statement.title}: open tests {count}"
        text += f" ({_counts(statement.verdicts)})" if count else ""
        text += f", expected false <= {statement.expected_false:.2f}" if count else ""
        checked_here = sum(statement.checks.values())
        text += f"; checks {checked_here}" if checked_here else ""
        out += _wrap(f"  {number}. ", text, width, 6)
        out += _named("fail", statement.failed, width)
        out += _named("failed checks", statement.failed_checks, width)
    if checks:
        words = {"holds": "pass", "fails": "fail"}
        out += _wrap(
            "  ",
            f"sanity checks ({checks}): {_counts(h.sanity, {**VERDICT_WORDS, **words})}",
            width,
            4,
        )
        out += _named("did not pass (a bug or a finding)", h.sanity_failed, width)
    if h.undecided_by_trials:
        out += _wrap(
            "  ",
            f"{len(h.undecided_by_trials)} inconclusive claims more trials would decide: "
            "attnsim decide --budget CPU-HOURS -n prices it",
            width,
            4,
        )
    if h.not_measured:
        out += _wrap("  ", f"{h.not_measured} claims need kinds this sweep does not run", width, 4)
    last = f"every claim, with what it rests on: {more}"
    # the command whole on a line of its own (copied, it must work), never broken between words
    out += [last] if len(last) <= width else ["every claim, with what it rests on:", f"  {more}"]
    if len(out) > HEADLINE_LINES:
        out = out[: HEADLINE_LINES - 1] + [f"... ({more})"]
    return "\n".join(out)


# --- scripts -----------------------------------------------------------------------------------


def json_text(claims_table) -> str:
    """Every column, typed (missing numbers as null), one object per claim."""
    return json.dumps(claims_table.to_pylist(), indent=1, ensure_ascii=False) + "\n"


def csv_text(claims_table) -> str:
    return claims_table.to_pandas().to_csv(index=False)


# --- LaTeX -------------------------------------------------------------------------------------

LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "–": "--",
    "±": r"$\pm$",
    "σ": r"$\sigma$",
    "κ": r"$\kappa$",
    "τ": r"$\tau$",
    "Σ": r"$\Sigma$",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "−": "-",
}
LATEX_COLUMNS = ("Claim", "Measured", "Compared with", "Verdict")


def tex(text: str) -> str:
    """Plain text escaped for LaTeX (ASCII out: the special characters and the few Greek letters
    and symbols the table uses become commands)."""
    out = "".join(LATEX_SPECIAL.get(ch, ch) for ch in str(text))
    return out.encode("ascii", "replace").decode("ascii")


def latex(claims: list[ClaimResult], run: dict | None = None) -> str:
    """A booktabs table of the claims for a paper (``\\input`` it inside a table environment; needs
    ``\\usepackage{booktabs}``): one row per claim, grouped and ordered as the other renderings,
    a group per statement with its tally, then the sanity checks; the whole tally in a caption
    comment line at the top. Each claim's id carries a footnote with its citation key
    (`attnsim:<claim id>`, the key of `attnsim cite`'s BibTeX record) and the `run` it was
    judged in (config hash, commit)."""
    lines = [
        f"% attnsim claims: {tex(tally(claims))}",
        "% needs \\usepackage{booktabs}; columns: claim id, measured (95% CI or range), compared "
        "with, verdict",
        "\\begin{tabular}{@{}llll@{}}",
        "\\toprule",
        " & ".join(LATEX_COLUMNS) + " \\\\",
    ]
    for number, (key, members) in enumerate(groups(claims), 1):
        lines.append("\\midrule")
        heading = f"{number}. {title(key)}: {group_tally(key, members)}"
        lines.append(
            f"\\multicolumn{{{len(LATEX_COLUMNS)}}}{{@{{}}l}}{{\\textit{{{tex(heading)}}}}} \\\\"
        )
        for c in members:
            compared = short_compared(c)[2:] or "--"
            cells = (
                f"\\texttt{{{tex(c.claim_id)}}}\\footnotemark",
                tex(measured_text(c)),
                tex(compared),
                tex(c.verdict),
            )
            lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", *footnotes(ordered(claims), run or {}), ""]
    return "\n".join(lines)


def footnotes(claims: list[ClaimResult], run: dict) -> list[str]:
    """One footnote per row, after the table (the footnote marks inside a tabular are numbered
    by LaTeX's counter; the texts follow it): the claim's citation key (`attnsim cite`'s BibTeX
    key) and the run it was judged in."""
    where = f"; config {run['config_hash']}" if run.get("config_hash") else ""
    commit = run.get("git_commit") or ""
    if commit:
        head, _, dirty = commit.partition("+")
        where += f", commit {head[:12]}" + (f"+{dirty}" if dirty else "")
    lines = [f"\\addtocounter{{footnote}}{{-{len(claims)}}}"]
    for c in claims:
        name = tex(c.claim_id)
        text = f"{tex(c.verdict)}{tex(where)}; \\texttt{{attnsim cite {name}}}"
        lines.append(
            f"\\stepcounter{{footnote}}\\footnotetext{{\\texttt{{attnsim:{name}}}: {text}}}"
        )
    return lines


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
td.verdict.holds{color:#1a7f37}td.verdict.fails{color:#cf222e}td.verdict.inconclusive{color:#8250df}
td.verdict.outside-regime{color:#9a6700}td.verdict.not-measured{color:#6e7781}
table.matrix{width:auto}table.matrix td,table.matrix th{width:auto;text-align:center}
table.matrix td.verdict a{color:inherit}
figure{display:inline-block;margin:0.5em 1em 1em 0;vertical-align:top;max-width:48em}
figure img{max-width:100%;border:1px solid #d0d7de}
:target{outline:3px solid #0969da}
"""  # noqa: E501

# The page is framed (the Snakemake report shows it from a data: URL): results/-relative links
# cannot
# resolve there, so figure links go to the copies embedded at the bottom of the page instead.
FRAMED_SCRIPT = """
(function () {
  var framed = location.protocol === "data:";
  try { framed = framed || window.self !== window.top; } catch (e) { framed = true; }
  if (!framed) return;
  document.querySelectorAll("a[data-embedded]").forEach(function (a) { a.setAttribute("href",
  a.getAttribute("data-embedded")); });
  document.querySelectorAll("a.figure-file").forEach(function (a) { a.removeAttribute("href"); });
})();
"""


def embedded_png(path: Path, width: int = EMBEDDED_WIDTH) -> str | None:
    """A data: URI of the PNG at `path`, scaled down to `width` pixels and reduced to 256 colours
    (figures are line drawings: this keeps them legible at a fraction of the size), or None if
    absent. The fast octree palette, without PNG's `optimize` pass: half the time of the median
    cut (0.9 s against 1.9 s for the default sweep's 25 figures) and smaller files (505 KB against
    816 KB), no difference to see."""
    if not path.is_file():
        return None
    from PIL import Image

    with Image.open(path) as opened:
        image = opened.convert("RGB")
        if image.width > width:
            image = image.resize(
                (width, round(image.height * width / image.width)), Image.Resampling.LANCZOS
            )
        buffer = _io.BytesIO()
        image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def embedded_pngs(
    paths: list[Path],
    threads: int = 1,
    width: int = EMBEDDED_WIDTH,
    cache: Path | None = None,
) -> dict[Path, str | None]:
    """`embedded_png` of each path at `width`, `threads` at a time: Pillow's decoding, scaling,
    palette and encoding run without the GIL, so threads share the cores (the claims job runs
    last, alone). With a `cache` folder, a figure whose PNG is unchanged reuses its scaled copy
    (a run that redrew one experiment's figures scales only those; `prune` keeps a page's)."""

    def scale(path: Path) -> str | None:
        return embedded_png(path, width) if cache is None else _cached_png(path, cache, width)

    if threads <= 1 or len(paths) <= 1:
        found = {path: scale(path) for path in paths}
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(threads, len(paths))) as pool:
            found = dict(zip(paths, pool.map(scale, paths), strict=True))
    return found


def prune(cache: Path | None, paths: list[Path], widths: list[int]) -> None:
    """Keep in `cache` only the scaled copies of `paths` at `widths` (this page's)."""
    if cache is None or not cache.is_dir():
        return
    keep = {_cache_name(path, w) for path in paths if path.is_file() for w in widths}
    for old in cache.glob("*.txt"):
        if old.name not in keep:
            old.unlink(missing_ok=True)


def _cache_name(path: Path, width: int) -> str:
    """The scaled copy's name: what it is made from (the PNG's bytes, the width, Pillow)."""
    import hashlib

    from PIL import __version__ as pillow

    made_from = f"{width} {pillow} ".encode() + path.read_bytes()
    return hashlib.sha256(made_from).hexdigest()[:32] + ".txt"


def _cached_png(path: Path, cache: Path, width: int) -> str | None:
    if not path.is_file():
        return None
    kept = cache / _cache_name(path, width)
    try:
        return kept.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        pass
    uri = embedded_png(path, width)
    if uri is not None:
        from attnsim import files
        from attnsim.errors import WriteError

        try:
            cache.mkdir(parents=True, exist_ok=True)
            files.write_text(kept, uri, fsync=False)
        except (OSError, WriteError):  # a read-only or full workspace: scaled again next time
            pass
    return uri


def _row(c: ClaimResult) -> str:
    deviation = deviation_text(c)
    kind_class = c.verdict.replace(" ", "-")
    figure = (
        f"<a class='figure-link' href='{escape(figure_href(c))}' "
        f"data-embedded='#{escape(figure_anchor(c.figure))}'>"
        f"{escape(c.figure).replace('/', '/<wbr>')}</a>"
        if c.figure
        else "–"
    )
    evidence = f"<br><span class='note'>{escape(c.evidence)}</span>" if c.evidence else ""
    return (
        f"<tr id='claim-{escape(c.claim_id)}'>"
        f"<td><code>{escape(c.claim_id)}</code><br>{escape(c.claim)}<br><span "
        f"class='regime'>regime: {escape(c.regime)}</span></td>"
        f"<td class='measured'><span class='kind'>{escape(number_label(c))}</span><br><span "
        f"class='value'>{escape(measured_text(c))}</span>"
        + (f"<br><span class='note'>rel. dev. {escape(deviation)}</span>" if deviation else "")
        + "</td>"
        f"<td class='compared'>{escape(compared_text(c))}</td>"
        f"<td class='verdict {kind_class}'>{escape(c.verdict)}</td>"
        f"<td class='threshold'>{escape(decided_text(c))}</td>"
        f"<td class='rests-on'>{escape(rests_on(c))}{evidence}</td>"
        f"<td class='figure'>{figure}</td></tr>"
    )


def html(
    claims: list[ClaimResult], provenance: dict, results: Path | None = None, threads: int = 1
) -> str:
    """A self-contained page: a table per statement of the measured claims, the figures the rows
    link to (embedded from `results`/figures when drawn, `threads` at a time), the run's
    provenance."""
    matrix = normaliser_matrix.html_table(claims)
    claims, hidden = measured_only(claims)
    note = f"<p class='tally'>{escape(unmeasured_line(hidden))}</p>" if hidden else ""
    sections = []
    head = (
        "<colgroup><col style='width:21%'><col style='width:17%'><col style='width:15%'><col "
        "style='width:6%'>"
        "<col style='width:17%'><col style='width:14%'><col style='width:10%'></colgroup>"
        "<thead><tr><th>claim (regime)</th><th>measured</th><th>compared with</th><th>verdict</th>"
        "<th>decided by</th><th>rests on</th><th>figure</th></tr></thead>"
    )
    for number, (key, members) in enumerate(groups(claims), 1):
        statement = f"<p class='statement'>{escape(group_text(key))}</p>" if group_text(key) else ""
        sections.append(
            f"<section class='statement-group' id='statement-{escape(key or 'other')}'>"
            f"<h2>{number}. {escape(title(key))}</h2><p "
            f"class='tally'>{escape(group_tally(key, members))}</p>{statement}"
            f"<table class='claims'>{head}<tbody>"
            f"{''.join(_row(c) for c in members)}</tbody></table></section>"
        )
    shown = list(dict.fromkeys(c.figure for c in claims if c.figure))
    meta = "".join(f"<li><b>{escape(k)}</b>: {escape(str(v))}</li>" for k, v in provenance.items())
    text = _page(claims, note, sections, matrix, _figures(claims, shown, {}, results), meta)
    paths = [Path(results) / f"figures/{f}.png" for f in shown] if results else []
    cache = Path(results) / SCALED if results else None
    uris = fitting_pngs(paths, PAGE_BYTES - len(text.encode("utf-8")), threads, cache)
    return _page(claims, note, sections, matrix, _figures(claims, shown, uris, results), meta)


# The report shows claims.html from a `data:` URL, and Chromium refuses to load one over 2 MB (a
# blank page); the figure copies are sized so the whole page stays under 1 MB as base64.
DATA_URL_BYTES = 1_000_000
PAGE_BYTES = DATA_URL_BYTES * 3 // 4 - 10_000  # base64: 4 characters per 3 bytes; the URL's head
EMBEDDED_WIDTHS = (EMBEDDED_WIDTH, 720, 560, 480, 400, 360, 320)


def fitting_pngs(
    paths: list[Path], budget: int, threads: int = 1, cache: Path | None = None
) -> dict[Path, str | None]:
    """The figure copies at the largest of EMBEDDED_WIDTHS at which all of them fit in `budget`
    bytes; none when even the smallest do not (the page then links each figure's file only).
    `cache`: the workspace's folder of scaled copies (`embedded_pngs`)."""
    if not paths or budget <= 0:
        return {}
    tried = [EMBEDDED_WIDTHS[0]]
    uris = embedded_pngs(paths, threads, tried[0], cache)
    size = full = sum(len(u or "") for u in uris.values())
    for width in EMBEDDED_WIDTHS[1:]:  # a copy's bytes grow about as its area
        if size <= budget:
            break
        if full * (width / EMBEDDED_WIDTHS[0]) ** 2 > budget and width != EMBEDDED_WIDTHS[-1]:
            continue
        tried.append(width)
        uris = embedded_pngs(paths, threads, width, cache)
        size = sum(len(u or "") for u in uris.values())
    prune(cache, paths, tried)
    return uris if size <= budget else {}


def _figures(
    claims: list[ClaimResult], shown: list[str], uris: dict[Path, str | None], results
) -> list[str]:
    figures = []
    for figure in shown:
        shows = ", ".join(
            f"<a href='#claim-{escape(c.claim_id)}'><code>{escape(c.claim_id)}</code></a>"
            for c in claims
            if c.figure == figure
        )
        path = Path(results) / f"figures/{figure}.png" if results else None
        uri = uris.get(path) if path is not None else None
        if uri:
            image = (
                f"<a class='figure-file' href='figures/{escape(figure)}.png'><img src='{uri}' "
                f"alt='figure {escape(figure)}'></a>"
            )
        elif path is not None and path.is_file():
            experiment = figure.split("/")[0]
            image = (
                f"<p class='note'><a class='figure-file' href='figures/{escape(figure)}.png'>"
                f"figures/{escape(figure)}.png</a> (in the report: under {escape(experiment)})</p>"
            )
        else:
            image = "<p class='note'>(not drawn yet)</p>"
        figures.append(
            f"<figure id='{escape(figure_anchor(figure))}'>{image}<figcaption>"
            f"<code>{escape(figure)}</code> shows {shows}</figcaption></figure>"
        )
    return figures


def _page(
    claims: list[ClaimResult],
    note: str,
    sections: list[str],
    matrix: str,
    figures: list[str],
    meta: str,
) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>attnsim claims</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>Claims of the essay: {escape(tally(claims))}</h1>{note}<p>{escape(HOW_TO_READ)}</p>"
        + "".join(sections)
        + matrix
        + "<section id='figures'><h2>Figures</h2>"
        + "".join(figures)
        + f"</section><h2>Provenance</h2><ul>{meta}</ul>"
        f"<script>{FRAMED_SCRIPT}</script></body></html>\n"
    )
