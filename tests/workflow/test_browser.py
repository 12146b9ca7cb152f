"""The default sweep (config.yaml) as a user runs it and as a reader sees it, in headless
Chromium.

`attnsim run` then `attnsim run --report` in a fresh folder, on the default sweep's experiments,
claims and boundaries at an eighth of their trials and budgets (`lighter`: what these tests check
depends on how many experiments, figures and claims there are, not on how many trials each point
has; the README's run command runs it whole). It prints at most 60 lines (issue 51: a dozen job
lines, a headline of the claims, where everything is), and its report's Claims page stays under
1 MB as the `data:` URL the report shows it from (Chromium loads none over 2 MB).

Selenium then drives Debian's chromium through Debian's chromedriver (both given by path, so
Selenium Manager never runs and nothing is downloaded). The report is a single-page app: the
test clicks through it like a reader (sidebar category -> figure -> back) and checks that each of
every kind's figures decodes at its file's size with its caption beside it, that the claims
table (in the report and in claims.html) has one row per claim with its verdict visible, that
every link in claims.html resolves, and that no page logs a console error (level SEVERE).

Screenshots of the report's home, one figure page and the claims page go to the test's tmp
directory; `ATTNSIM_SCREENSHOTS=1 pytest tests/workflow/test_browser.py` also copies them to
docs/screenshots/ (the README shows them).

Needs /usr/bin/chromium and /usr/bin/chromedriver (`apt-get install chromium chromium-driver`;
.ci/run installs them); the browser's tests are skipped elsewhere, never under CI. The slow
tier."""

from __future__ import annotations

import base64
import os
import re
import shutil
import time
from pathlib import Path
from unittest import mock
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pytest
import yaml
from helpers.workflow import REPO, attnsim

from attnsim.kinds import all_kinds, get_kind
from attnsim.report import claims_render

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
NEEDS = "needs Debian's chromium and chromium-driver: apt-get install chromium chromium-driver"
FLAGS = (
    "--headless",
    "--no-sandbox",  # root
    "--disable-gpu",
    "--disable-dev-shm-usage",  # a small /dev/shm (containers) crashes tabs otherwise
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = (1280, 900)
SCREENSHOTS = REPO / "docs" / "screenshots"
DOCS_SHOTS = ("report-home", "report-figure", "report-claims")  # the ones docs/screenshots/ keeps
SCREENSHOT_MAX_BYTES = 300_000
FIGURE_SHOWN = ("robustness", "collapse")  # the figure page in docs/screenshots/report-figure.png
VERDICTS = ("holds", "fails", "inconclusive", "outside regime", "not measured")
# selenium's By.CSS_SELECTOR (selenium is imported only where the browser runs)
CSS = "css selector"
# seconds for the app to render a view (well under one here; generous for a loaded machine)
WAIT = 60

MAX_LINES = 60  # lines the default run prints


@pytest.fixture(scope="module")
def webdriver_module():
    """Selenium, or a skip with the reason (a failure under CI, which installs everything)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    reason = f"{NEEDS} (missing: {', '.join(missing)})" if missing else ""
    try:
        from selenium import webdriver
    except ImportError:
        reason = reason or "needs selenium: pip install -e '.[test]'"
        webdriver = None
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run under CI: {reason}")
        pytest.skip(reason)
    return webdriver


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, minilm_dir, glove_dir):
    """`attnsim run` of config.yaml (`lighter`) in a folder of its own, then its report: (workdir,
    the first run's output)."""
    workdir = tmp_path_factory.mktemp("default-run")
    config = lighter(yaml.safe_load((REPO / "config.yaml").read_text()), 8)
    config["assets"] = {"minilm": str(minilm_dir), "glove": str(glove_dir)}  # verified copies
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    outputs = []
    for args in (["run"], ["run", "--report"]):  # the second: nothing left to do but the report
        done = attnsim(workdir, *args, timeout=3600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        outputs.append(done.stdout + done.stderr)
    # docutils reports a caption's problems while the report is built (and on the page)
    assert not re.search(r"\((INFO|WARNING|ERROR|SEVERE)/\d\)", outputs[1]), outputs[1][-3000:]
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


@pytest.fixture(scope="module")
def run(webdriver_module, default_run):
    """The default run's workdir, for the tests that open it in the browser."""
    return default_run[0]


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Where screenshots go; with ATTNSIM_SCREENSHOTS set, copied to docs/screenshots/ at the
    end."""
    folder = tmp_path_factory.mktemp("screenshots")
    yield folder
    if os.environ.get("ATTNSIM_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for name in DOCS_SHOTS:
            shutil.copy2(folder / f"{name}.png", SCREENSHOTS / f"{name}.png")


@pytest.fixture(scope="module")
def browser(webdriver_module, tmp_path_factory):
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.selenium_manager import SeleniumManager

    options = webdriver_module.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_argument(f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    forbidden = AssertionError(
        "Selenium Manager must not run: it would download a driver or a browser"
    )
    with (
        pytest.MonkeyPatch.context() as env,
        mock.patch.object(SeleniumManager, "binary_paths", side_effect=forbidden),
    ):
        env.setenv("SE_OFFLINE", "true")  # belt and braces: even if it ran, no downloads
        env.delenv("SE_CHROMEDRIVER", raising=False)  # would override the driver path given below
        driver = webdriver_module.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        # Headless --window-size includes window chrome; this makes the page area exactly VIEWPORT.
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": VIEWPORT[0], "height": VIEWPORT[1], "deviceScaleFactor": 1, "mobile": False},
        )
        yield driver
    finally:
        driver.quit()


# ---------------------------------------------------------------- helpers


def console_errors(driver) -> list[str]:
    """The browser's console entries at level SEVERE since the last call (reading drains the
    log)."""
    return [
        f"{e.get('source')}: {e['message']}"
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE"
    ]


def screenshot(driver, folder: Path, name: str) -> Path:
    """The page as shown, in 256 colours: text on flat colours loses nothing a reader sees, at
    under half the bytes of Chromium's true-colour PNG (the copies in docs/ stay small)."""
    from PIL import Image

    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path))
    with Image.open(path) as shot:
        palette = shot.convert("RGB").quantize(256)
    palette.save(path, optimize=True)
    assert 0 < path.stat().st_size < SCREENSHOT_MAX_BYTES, (
        f"{path.name}: {path.stat().st_size} bytes"
    )
    return path


def text(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def wait(driver, condition, message: str, poll: float = 0.1):
    """condition(driver) once it is truthy (tried every `poll` s); else fail with the message and
    what the page shows."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(
            driver, WAIT, poll_frequency=poll, ignored_exceptions=(StaleElementReferenceException,)
        ).until(condition)
    except TimeoutException:
        shows = driver.execute_script(
            "return document.body ? document.body.innerText.slice(0, 600) : ''"
        )
        pytest.fail(f"{message} (after {WAIT} s); the page shows: {text(shows)!r}")


def click(driver, find, message: str) -> None:
    """Click the element `find(driver)` gives once the page has stopped moving under it: its box
    the same in two polls in a row and the element itself at the box's centre. The report's
    sidebar animates its rows; a click during the transition lands on a neighbouring icon (Chrome
    refuses it as intercepted, or the neighbour gets it)."""
    from selenium.common.exceptions import ElementClickInterceptedException

    seen = {}
    at_rest = (  # scrolled into view first: the default run's sidebar lists 27 experiments
        "const el = arguments[0]; el.scrollIntoView({block: 'nearest'});"
        "const r = el.getBoundingClientRect();"
        "const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);"
        "return [r.x, r.y, r.width, r.height, !!hit && (hit === el || el.contains(hit))];"
    )

    def clicked(d) -> bool:
        element = find(d)
        *box, hit = d.execute_script(at_rest, element)
        steady, seen["box"] = seen.get("box") == box, box
        if not (steady and hit):
            return False
        try:
            element.click()
        except ElementClickInterceptedException:
            return False
        return True

    wait(driver, clicked, message, poll=0.05)  # two polls of the same box: 50 ms at rest


SIDEBAR_JS = (
    "return [...document.querySelectorAll('#app nav ul li a')]"
    ".map(a => [a.innerText.trim(), a]).filter(e => e[0]);"
)


def sidebar_entries(driver) -> dict:
    """The report's sidebar menu (General and Results): entry text -> link. One script for all
    of them: an element's `.text` is a round trip to the browser each, and the default run's
    sidebar has ~30 entries (2.5 s a click, polled)."""
    return dict(driver.execute_script(SIDEBAR_JS))


def open_report(driver, run: Path) -> None:
    driver.get((run / "results/report.html").as_uri())
    wait(
        driver,
        lambda d: "Claims" in sidebar_entries(d),
        "the report's sidebar never listed the Claims category",
    )


def click_sidebar(driver, name: str) -> None:
    wait(
        driver,
        lambda d: (e := sidebar_entries(d)) and name in e and e,
        f"no sidebar entry {name!r}",
    )
    click(driver, lambda d: sidebar_entries(d)[name], f"sidebar entry {name!r} not clickable")


def breadcrumb(driver, name: str | None = None) -> None:
    """Click the breadcrumb above the sidebar: the home icon (None) or the entry called `name`."""

    def link(d):
        links = d.find_elements(CSS, "#app nav ol li a")
        return links[0] if name is None else next(a for a in links if a.text.strip() == name)

    click(driver, link, f"breadcrumb {name or 'home'!r} not clickable")


ROWS_JS = (
    "return [...document.querySelectorAll('#app nav table tbody tr')].filter(tr => tr.cells[0])"
    ".map(tr => [tr.cells[0].innerText.trim(), tr]);"
)


def result_rows(driver) -> dict:
    """A category's table of results in the sidebar: label (first cell) -> row (one script, as
    `sidebar_entries`)."""
    rows = wait(driver, lambda d: d.execute_script(ROWS_JS), "no results table in the sidebar")
    return dict(rows)


def show(driver, label: str, filename: str):
    """Click a result's eye button (in the current category's table); the element (img or iframe)
    that then shows the file in the main pane."""
    click(
        driver,
        lambda d: result_rows(d)[label].find_element(CSS, 'a[iconname="eye"]'),
        f"{label}: its eye button not clickable",
    )
    selector = f'#app img[src*="filename={filename};"], #app iframe[src*="filename={filename};"]'
    in_main = lambda d: [
        e
        for e in d.find_elements(CSS, selector)
        if not d.execute_script("return !!arguments[0].closest('nav')", e)
    ]
    return wait(driver, in_main, f"{label}: {filename} not shown")[0]


def describe(driver, label: str) -> str:
    """Click a result's info button: the sidebar shows its caption (the result stays shown). The
    sidebar's text."""
    click(
        driver,
        lambda d: result_rows(d)[label].find_element(CSS, 'a[iconname="information-circle"]'),
        f"{label}: its info button not clickable",
    )
    sidebar = lambda d: d.find_element(CSS, "#app nav").text
    wait(driver, lambda d: "DESCRIPTION" in sidebar(d).upper(), f"{label}: no description")
    return text(sidebar(driver))


def png_width(path: Path) -> int:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big")  # IHDR width


def caption_opening(kind: str, figure: str, experiment: str) -> str:
    """The caption's first sentence as the reader sees it: the kind's report/<figure>.rst,
    rendered."""
    rst = get_kind(kind).caption(figure).read_text()
    rst = (
        rst.replace("{{ snakemake.wildcards.experiment }}", experiment)
        .replace("**", "")
        .replace("``", "")
    )
    return text(rst).split(". ")[0]


def caption_closing(kind: str, figure: str) -> str:
    """The caption's last words as the reader sees them (the claims it shows, or its last
    sentence)."""
    rst = (
        get_kind(kind)
        .caption(figure)
        .read_text()
        .replace("**", "")
        .replace("``", "")
        .replace("\\|", "|")
    )
    words = text(re.sub(r":math:`([^`]*)`", r"\1", rst)).rstrip(".").split()
    return " ".join(w.strip("`_") for w in words[-3:])


CLAIM_ROWS_JS = """
const rows = [];
for (const tr of document.querySelectorAll('tr')) {
  const first = tr.cells[0];
  if (!first) continue;
  const ids = [...first.querySelectorAll('code')].map(c => c.textContent.trim());
  if (!ids.length) continue;
  // the cells a reader sees without scrolling sideways
  const cells = [...tr.cells].filter(td => td.checkVisibility() && td.getClientRects().length
                                           && td.getBoundingClientRect().left >= 0
                                           && td.getBoundingClientRect().right <= document.documentElement.clientWidth + 1)
                             .map(td => td.innerText.replace(/\\s+/g, ' ').trim().toLowerCase());
  rows.push({ids: ids, cells: cells});
}
return rows;
"""  # noqa: E501

LINKS_JS = """
return [...document.querySelectorAll('a[href]')].map(a => {
  const raw = a.getAttribute('href');
  const frag = raw.startsWith('#') ? decodeURIComponent(raw.slice(1)) : null;
  return {raw: raw, href: a.href.slice(0, 1000),
          target: frag === null ? null : !!(document.getElementById(frag) || document.getElementsByName(frag).length)};
});
"""  # noqa: E501
# (a link of a page shown from a data: URL resolves against that URL: the default run's claims page
# is ~900 KB of it, and returned whole for every link the list runs to hundreds of MB)

IMAGES_JS = (
    "return [...document.images].map(i => ({src: i.src.slice(0, 80), complete: "
    "i.complete, width: i.naturalWidth}));"
)


def check_claims_table(driver, claims) -> None:
    """In the current document: one table row per claim (its id in a <code> of the first cell),
    the row's verdict in a cell of its own that is visible without scrolling sideways."""
    rows = driver.execute_script(CLAIM_ROWS_JS)
    expected = dict(zip(claims["claim_id"], claims["verdict"]))
    found = {}
    for row in rows:
        ids = [i for i in row["ids"] if i in expected]
        assert len(ids) <= 1, f"one row holds several claims: {ids}"
        if ids:
            assert ids[0] not in found, f"claim {ids[0]} has more than one row"
            found[ids[0]] = row["cells"]
    assert sorted(found) == sorted(expected), (
        f"rows for {sorted(found)}, claims.parquet has {sorted(expected)}"
    )
    for claim_id, verdict in expected.items():
        others = [v for v in VERDICTS if v != verdict]
        cells = [c for c in found[claim_id] if verdict in c and not any(o in c for o in others)]
        assert cells, (
            f"{claim_id}: verdict {verdict!r} not in a cell visible without scrolling sideways; "
            f"visible cells: {found[claim_id]}"
        )


def broken_links(driver) -> list[str]:
    """Links in the current document that lead nowhere: a missing local file or #anchor, or a
    relative link in a document that has no folder to resolve it against (an embedded data: page).
    Links to the web are not followed (no network here)."""
    broken = []
    for link in driver.execute_script(LINKS_JS):
        url = urlparse(link["href"])
        if link["target"] is not None:
            ok = link["target"]
        elif url.scheme == "file":
            ok = Path(unquote(url.path)).exists()
        else:
            ok = url.scheme in ("http", "https", "mailto")
        if not ok:
            broken.append(f"{link['raw']} (resolves to {link['href'][:100]})")
    return broken


def undecoded_images(driver) -> list[dict]:
    return [i for i in driver.execute_script(IMAGES_JS) if not (i["complete"] and i["width"] > 0)]


# ---------------------------------------------------------------- tests


def test_report_opens_offline_on_its_home_and_general_pages(run, browser, shots):
    started = time.monotonic()
    open_report(browser, run)
    entries = sidebar_entries(browser)
    drawn = {p.parent.name for p in (run / "results/figures").glob("*/*.png")}
    assert {"Workflow", "Statistics", "About", "Claims", *drawn} <= set(entries), sorted(entries)
    # innerText: the sidebar of 27 experiments pushes the description below its scrolled edge
    home = text(browser.execute_script("return document.querySelector('#app').innerText"))
    # the report's own first sentence
    opening = text((REPO / "workflow/report/workflow.rst").read_text().split("\n\n")[0])
    seed = yaml.safe_load((run / "config.yaml").read_text())["seed"]
    assert opening.split(" (")[0] in home and f"Configuration of this run: seed {seed}" in home
    assert not undecoded_images(browser)
    screenshot(browser, shots, "report-home")
    for page in ("Statistics", "About", "Workflow"):
        click_sidebar(browser, page)
        wait(
            browser,
            lambda d: (
                d.execute_script("return document.querySelector('#app').innerText.length") > 100
            ),
            f"{page} page is empty",
        )
        breadcrumb(browser)
    network = [
        e
        for e in browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        if e.startswith(("http:", "https:"))
    ]
    assert not network, f"the report loads from the network (it must open offline): {network}"
    assert console_errors(browser) == []
    print(f"home and general pages: {time.monotonic() - started:.1f} s")


def applicable_figures(run, experiment: str, kind: str) -> tuple[str, ...]:
    """The kind's figures that apply to the experiment's grid (`Kind.figures_for`, read from its
    summary as the figures job reads it): the others are neither drawn nor listed."""
    summary = run / f"results/store/summary/kind={kind}/experiment={experiment}/summary.parquet"
    frame = pq.read_table(summary).to_pandas()
    declared = get_kind(kind)
    return declared.figures_for({p: frame[p].unique().tolist() for p in declared.param_names})


def every_figure_once(run) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Experiment -> (kind, figures): in config order, each experiment's figures of its kind that
    no earlier experiment drew (every kind's every figure and caption once: clicking through all
    of the default run's figures would show the same captions again at twice the time). Every
    experiment's figures on disk are the ones its grid applies to."""
    experiments = yaml.safe_load((run / "config.yaml").read_text())["experiments"]
    assert {e["kind"] for e in experiments.values()} == set(all_kinds()), (
        "a kind without an experiment in config.yaml"
    )
    chosen, seen = {}, set()
    for name, experiment in experiments.items():
        kind = experiment["kind"]
        figures = applicable_figures(run, name, kind)
        on_disk = sorted(p.stem for p in (run / "results/figures" / name).glob("*.png"))
        assert on_disk == sorted(figures), name
        new = tuple(f for f in figures if (kind, f) not in seen)
        if new:
            chosen[name] = (kind, new)
            seen |= {(kind, f) for f in new}
    return chosen


def test_every_figure_renders_with_its_caption(run, browser, shots):
    started = time.monotonic()
    open_report(browser, run)
    shown = expected = 0
    for experiment, (kind, figures) in every_figure_once(run).items():
        expected += len(figures)
        click_sidebar(browser, experiment)
        listed = sorted(result_rows(browser))
        drawn = sorted(applicable_figures(run, experiment, kind))
        assert listed == drawn, f"{experiment}: sidebar lists {listed}"
        for figure in figures:
            image = show(browser, figure, f"{figure}.png")
            assert image.tag_name == "img"
            wait(
                browser,
                lambda d, image=image: d.execute_script(
                    "return arguments[0].complete && arguments[0].naturalWidth > 0", image
                ),
                f"{experiment}/{figure}: image does not decode",
            )
            width = browser.execute_script("return arguments[0].naturalWidth", image)
            assert width == png_width(run / "results/figures" / experiment / f"{figure}.png")
            assert image.is_displayed() and image.size["width"] > 200, (
                f"{experiment}/{figure}: image not visible ({image.size})"
            )
            caption, sidebar = caption_opening(kind, figure, experiment), describe(browser, figure)
            assert caption in sidebar, (
                f"{experiment}/{figure}: caption {caption!r} not shown; sidebar reads "
                f"{sidebar[:400]!r}"
            )
            assert "System Message" not in sidebar and "Docutils" not in sidebar, (
                f"{experiment}/{figure}: docutils error in the caption"
            )
            assert caption_closing(kind, figure) in sidebar, (
                f"{experiment}/{figure}: caption cut short; sidebar reads {sidebar[-400:]!r}"
            )
            if (experiment, figure) == FIGURE_SHOWN:
                screenshot(browser, shots, "report-figure")
            shown += 1
            breadcrumb(browser, experiment)
        breadcrumb(browser)
    assert shown == expected > 0
    assert console_errors(browser) == []
    print(f"{shown} figures: {time.monotonic() - started:.1f} s")


def measured_claims(run):
    """claims.parquet's rows the tables show: the claims this sweep measured (the rest, `not
    measured`, are one line under the table: attnsim claims --all)."""
    claims = pq.read_table(run / "results/claims.parquet").to_pandas()
    return claims[claims["verdict"] != "not measured"].reset_index(drop=True)


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


def test_report_claims_page_has_every_claim_with_its_verdict(run, browser, shots):
    started = time.monotonic()
    claims = measured_claims(run)
    open_report(browser, run)
    click_sidebar(browser, "Claims")
    assert list(result_rows(browser)) == ["results/claims.html"]
    frame = show(browser, "results/claims.html", "claims.html")
    assert frame.tag_name == "iframe" and frame.is_displayed() and frame.size["height"] > 300
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
        broken = broken_links(browser)
    finally:
        browser.switch_to.default_content()
    assert not broken, (
        "links in the report's claims page lead nowhere (it is embedded as a data: URL, so "
        f"relative links cannot resolve): {broken}"
    )
    screenshot(browser, shots, "report-claims")
    # "The claims table, the project's headline result"
    caption = text((REPO / "workflow/report/claims.rst").read_text()).split(":")[0]
    assert caption in describe(browser, "results/claims.html")
    assert console_errors(browser) == []
    print(f"claims page: {time.monotonic() - started:.1f} s")


def test_claims_html_has_every_claim_with_its_verdict_and_its_links_resolve(run, browser, shots):
    claims = measured_claims(run)
    browser.get((run / "results/claims.html").as_uri())
    check_claims_table(browser, claims)
    assert not undecoded_images(browser), undecoded_images(browser)
    assert broken_links(browser) == []
    # not copied to docs: the report's claims page shows the same table
    screenshot(browser, shots, "claims")
    assert console_errors(browser) == []
