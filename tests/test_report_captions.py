"""Every caption of the report renders without a docutils message, as `snakemake --report` renders
it: Jinja first (with the rule's wildcards), then reStructuredText with the report's link targets
(`Claims`_, `Workflow`_, ...). A message (an undefined substitution from `|x|`, an unknown target,
a bad table) would print `(ERROR/3) ...` during the report and show a "Docutils System Messages"
block on its page. The built report is checked end to end in tests/test_progress.py."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
from conftest import REPO
from docutils.core import publish_parts

from attnsim.kinds import all_kinds

PLUGIN_CAPTIONS = sorted((REPO / "tests/plugin_example/src").rglob("report/*.rst"))
# the report's own targets (Snakemake appends them to every caption) and the result files' names
TARGETS = ("Workflow", "Statistics", "Claims", "claims.html")


def render(text: str, experiment: str = "robustness") -> tuple[str, str]:
    """(html, docutils' messages) for a caption, the way Snakemake's report renders one."""
    links = "\n\n" + "\n".join(f".. _{t}: javascript:void(0)" for t in TARGETS) + "\n"
    snakemake = SimpleNamespace(wildcards=SimpleNamespace(experiment=experiment), config={})
    rst = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text + links).render(snakemake=snakemake, categories=[], files=[])
    messages = io.StringIO()
    html = publish_parts(rst, writer="html", settings_overrides={"warning_stream": messages, "report_level": 2, "halt_level": 5})["body"]
    return html, messages.getvalue()


def captions() -> list[tuple[str, Path]]:
    found = [(f"{kind.name}/{figure}", kind.caption(figure)) for kind in all_kinds().values() for figure in kind.figures]
    found += [(f"plugin_example/{p.stem}", p) for p in PLUGIN_CAPTIONS]
    found += [("workflow/claims", REPO / "workflow/report/claims.rst")]
    return found


@pytest.mark.parametrize("name,path", captions(), ids=[name for name, _ in captions()])
def test_caption_renders_without_docutils_messages(name, path):
    html, messages = render(path.read_text())
    assert messages == "", f"{path.relative_to(REPO)}: {messages}"
    assert "system-message" not in html and len(html) > 200


def test_the_check_sees_a_substitution_and_the_fix():
    """`|1 - ratio|` is reST substitution syntax; `\\|1 - ratio\\|` is the text."""
    _, messages = render("hollow = above the prediction (|1 − ratio| shown)")
    assert 'Undefined substitution referenced: "1 − ratio"' in messages
    html, messages = render("hollow = above the prediction (\\|1 − ratio\\| shown)")
    assert messages == "" and "|1 − ratio|" in html


def test_every_kind_has_its_captions():
    assert len(captions()) == sum(len(k.figures) for k in all_kinds().values()) + len(PLUGIN_CAPTIONS) + 1
    assert PLUGIN_CAPTIONS
