"""The report's home page and claims page as the workspace has them (issue 51 item 1): counts
read from the store (a generator's values, not its mapping's keys; an adaptive or topped-up
experiment's trial range), the workspace's store path; and a claims page whose `data:` URL stays
under 1 MB however many figures it embeds (Chromium loads none over 2 MB)."""

from __future__ import annotations

import base64
import copy
import math

import jinja2
from helpers.configs import REPO, small_config

from attnsim.config.load import load
from attnsim.report import claims_render
from attnsim.report.status import report_context
from attnsim.testing import run_experiment


def home_page(context: dict) -> str:
    template = (REPO / "workflow/report/workflow.rst").read_text()
    config = {"attnsim_report": context}
    return jinja2.Template(template).render(snakemake=type("S", (), {"config": config}))


def test_the_home_page_counts_from_the_workspace(tmp_path):
    config = small_config()
    config["experiments"]["robustness"]["grid"]["noise_scale"] = {"logspace": [0.1, 0.5, 3]}
    adaptive = copy.deepcopy(config["experiments"]["robustness"])
    adaptive.update(trials=10, target_se=1e-9, max_trials=40)
    config["experiments"]["adaptive"] = adaptive
    settings = load(config)
    root = tmp_path / "results" / "mine" / "store"
    run_experiment(settings, "robustness", root)
    page = home_page(report_context(settings, root))
    assert "**robustness** (``noisy_attention``, 24 points × 20 trials)" in page
    # not run yet: the config's range; run, every point's trials as stored (here all 40)
    assert "**adaptive** (``noisy_attention``, 24 points × 10-40 adaptive trials)" in page
    run_experiment(settings, "adaptive", root)
    page = home_page(report_context(settings, root))
    assert "**adaptive** (``noisy_attention``, 24 points × 40 trials)" in page
    assert "2 experiments" in page and f"``{root}/``" in page


def test_a_claims_page_of_many_figures_stays_under_a_megabyte_as_a_data_url(tmp_path):
    """The default run's page was 2.8 MB as a `data:` URL (37 figure copies at 960 px): the copies
    are scaled so the page fits 1 MB, and every figure keeps its copy."""
    from PIL import Image, ImageDraw

    figures = tmp_path / "figures"
    claims = []
    for i in range(40):  # figures of the default run's size: panels of curves, labels
        path = figures / f"e{i}" / "f.png"
        path.parent.mkdir(parents=True)
        image = Image.new("RGB", (2145, 898), "white")
        draw = ImageDraw.Draw(image)
        for panel in range(3):
            left = 60 + panel * 700
            draw.rectangle([left, 40, left + 640, 840], outline="black", width=2)
            for curve in range(5):
                points = [
                    (left + x, 440 + 300 * math.sin((x + 40 * curve + i) / (60 + 20 * curve)))
                    for x in range(0, 640, 4)
                ]
                draw.line(
                    points, fill=("navy", "darkred", "green", "orange", "purple")[curve], width=3
                )
            for tick in range(0, 640, 80):
                draw.text((left + tick, 850), f"{tick * (i + 1)}", fill="black")
        image.save(path)
        claims.append(claims_render_claim(f"claim_{i}", f"e{i}/f"))
    page = claims_render.html(claims, {"config_hash": "x"}, tmp_path)
    encoded = len(base64.b64encode(page.encode("utf-8")))
    assert encoded < claims_render.DATA_URL_BYTES
    assert page.count("data:image/png;base64,") == 40
    old = sum(
        len(u or "")
        for u in claims_render.embedded_pngs(
            [figures / f"e{i}" / "f.png" for i in range(40)]
        ).values()
    )
    # the copies at their old size: a page over 2 MB as a data URL (base64: 4 bytes per 3)
    assert old * 4 // 3 > 2 * claims_render.DATA_URL_BYTES


def claims_render_claim(claim_id: str, figure: str):
    from attnsim.claims.engine import ClaimResult

    return ClaimResult(
        claim_id, "a claim", "a regime", statement="robustness", verdict="holds", figure=figure
    )
