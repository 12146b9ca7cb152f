"""The default sweep (config.yaml) as a user runs it, `attnsim run` in a fresh folder (issue 51
items 1 and 6): it prints at most 60 lines (a dozen job lines, a headline of the claims, where
everything is), and its report's Claims page stays under 1 MB as the `data:` URL the report
shows it from (Chromium loads none over 2 MB), though its figures at their old size were over.

The default sweep's experiments, claims and boundaries, at an eighth of their trials and budgets
(`lighter`): what these tests check, the output's lines and the claims page's size, depends on
how many experiments, figures and claims there are, not on how many trials each point has, and
the full sweep costs minutes of CPU more (the README's run command runs it whole). The slow
tier."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
import yaml
from helpers.workflow import REPO, python_first_on_path
from test_browser import (  # noqa: F401  (browser, webdriver_module: fixtures)
    broken_links,
    browser,
    check_claims_table,
    click_sidebar,
    measured_claims,
    open_report,
    show,
    undecoded_images,
    wait,
    webdriver_module,
)

from attnsim.report import claims_render

pytestmark = pytest.mark.slow

MAX_LINES = 60


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, minilm_dir, glove_dir):  # noqa: F811  (fixtures)
    """`attnsim run` of config.yaml in a folder of its own, then its report: (workdir, the run's
    output)."""
    workdir = tmp_path_factory.mktemp("default-run")
    config = lighter(yaml.safe_load((REPO / "config.yaml").read_text()), 8)
    config["assets"] = {"minilm": str(minilm_dir), "glove": str(glove_dir)}  # verified copies
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    outputs = []
    for args in (["run"], ["run", "--report"]):  # the second: nothing left to do but the report
        done = subprocess.run(
            [sys.executable, "-m", "attnsim.cli.main", *args],
            cwd=workdir,
            env=python_first_on_path(),
            capture_output=True,
            text=True,
            timeout=3600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        outputs.append(done.stdout + done.stderr)
    return workdir, outputs[0]


def lighter(config: dict, factor: int) -> dict:
    """`config` with every experiment's trials (and trial cap) and every boundary's budget divided
    by `factor`, at least 4 trials a point: the same experiments, points, claims and figures."""
    for experiment in config["experiments"].values():
        for key in ("trials", "max_trials"):
            if key in experiment:
                experiment[key] = max(4, experiment[key] // factor)
    for boundary in config.get("boundaries", {}).values():
        boundary["budget"] = boundary["budget"] / factor
    return config


def test_the_default_run_prints_at_most_sixty_lines(default_run):
    _, output = default_run
    lines = output.splitlines()
    assert len(lines) <= MAX_LINES, "\n".join(lines)
    assert any(line.startswith("claims: ") for line in lines)  # the headline
    assert any("attnsim claims --all" in line for line in lines)  # where the rest is


def test_the_reports_claims_page_is_under_a_megabyte_as_a_data_url(default_run):
    workdir, _ = default_run
    page = (workdir / "results" / "claims.html").read_bytes()
    assert len(base64.b64encode(page)) < claims_render.DATA_URL_BYTES
    figures = sorted((workdir / "results" / "figures").glob("*/*.png"))
    copies = claims_render.embedded_pngs(figures, 2)  # at their old width: the page was > 2 MB
    assert sum(len(c or "") for c in copies.values()) * 4 // 3 > 2 * claims_render.DATA_URL_BYTES
    report = (workdir / "results" / "report.html").read_text()
    assert "Configuration of this run" in report and "results/store/" in report


def test_the_reports_claims_page_opens_in_chromium(default_run, browser):  # noqa: F811
    """The report of the default run in headless Chromium: its Claims page renders every measured
    claim with its verdict, its figure copies decode and its links resolve (test_browser.py
    drives the same browser over a small run of every kind)."""
    workdir, _ = default_run
    claims = measured_claims(workdir)
    open_report(browser, workdir)
    click_sidebar(browser, "Claims")
    frame = show(browser, "results/claims.html", "claims.html")
    browser.set_script_timeout(600)  # every link of 150 rows checked, on a loaded machine
    browser.switch_to.frame(frame)
    try:
        wait(
            browser,
            lambda d: d.execute_script("return document.readyState") == "complete",
            "claims page did not load",
        )
        check_claims_table(browser, claims)
        assert not undecoded_images(browser)
        assert not broken_links(browser)
    finally:
        browser.switch_to.default_content()
