"""Every caption of the report renders without a docutils message, as `snakemake --report` renders
it: Jinja first (with the rule's wildcards), then reStructuredText with the report's link targets
(`Claims`_, `Workflow`_, ...). A message (an undefined substitution from `|x|`, an unknown target,
a bad table) would print `(ERROR/3) ...` during the report and show a "Docutils System Messages"
block on its page. The built report is checked end to end in tests/cli/test_progress.py."""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
import yaml
from docutils.core import publish_parts
from helpers.configs import REPO

from attnsim.config.load import load
from attnsim.kinds import all_kinds
from attnsim.report.status import report_context

PLUGIN_CAPTIONS = sorted((REPO / "tests/plugin_example/src").rglob("report/*.rst"))
# the report's own targets (Snakemake appends them to every caption) and the result files' names
TARGETS = ("Workflow", "Statistics", "Claims", "claims.html")


def render(
    text: str, experiment: str = "robustness", config: dict | None = None
) -> tuple[str, str]:
    """(html, docutils' messages) for a caption, the way Snakemake's report renders one."""
    links = "\n\n" + "\n".join(f".. _{t}: javascript:void(0)" for t in TARGETS) + "\n"
    wildcards = SimpleNamespace(experiment=experiment)
    snakemake = SimpleNamespace(wildcards=wildcards, config=config or {})
    # Snakemake's report renders with trim_blocks and lstrip_blocks
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    rst = env.from_string(text + links).render(snakemake=snakemake, categories=[], files=[])
    messages = io.StringIO()
    html = publish_parts(
        rst,
        writer="html",
        settings_overrides={"warning_stream": messages, "report_level": 2, "halt_level": 5},
    )["body"]
    return html, messages.getvalue()


def captions() -> list[tuple[str, Path]]:
    found = [
        (f"{kind.name}/{figure}", kind.caption(figure))
        for kind in all_kinds().values()
        for figure in kind.presentation.figures
    ]
    found += [(f"plugin_example/{p.stem}", p) for p in PLUGIN_CAPTIONS]
    found += [("workflow/claims", REPO / "workflow/report/claims.rst")]
    return found


@pytest.mark.parametrize("name,path", captions(), ids=[name for name, _ in captions()])
def test_caption_renders_without_docutils_messages(name, path):
    html, messages = render(path.read_text())
    assert messages == "", f"{path.relative_to(REPO)}: {messages}"
    assert "system-message" not in html and len(html) > 200


@pytest.mark.parametrize(
    "config",
    [
        "config.yaml",
        *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "workflow/presets").glob("*.yaml")),
    ],
)
def test_the_report_home_renders_for_every_shipped_config(config, tmp_path):
    """workflow/report/workflow.rst, the report's home page, with the default sweep and each preset
    (nothing run yet: the counts the workflow computes from the workspace, `report_context`): no
    docutils message, and one short line per experiment (a long page would push its start out of
    view in the report's centred home pane)."""
    settings = yaml.safe_load((REPO / config).read_text())
    context = report_context(load(settings), tmp_path / "store")
    template = (REPO / "workflow/report/workflow.rst").read_text()
    html, messages = render(template, config=settings | {"attnsim_report": context})
    assert messages == "", messages
    assert "system-message" not in html and f"seed {settings['seed']}" in html
    for name in settings["experiments"]:
        assert f"<strong>{name}</strong>" in html
    assert len(re.sub(r"<[^>]+>", "", html)) < 2500 + 120 * len(settings["experiments"])


def test_the_check_sees_a_substitution_and_the_fix():
    """`|1 - ratio|` is reST substitution syntax; `\\|1 - ratio\\|` is the text."""
    _, messages = render("hollow = above the prediction (|1 − ratio| shown)")
    assert 'Undefined substitution referenced: "1 − ratio"' in messages
    html, messages = render("hollow = above the prediction (\\|1 − ratio\\| shown)")
    assert messages == "" and "|1 − ratio|" in html


def test_every_kind_has_its_captions():
    assert (
        len(captions())
        == sum(len(k.presentation.figures) for k in all_kinds().values()) + len(PLUGIN_CAPTIONS) + 1
    )
    assert PLUGIN_CAPTIONS
