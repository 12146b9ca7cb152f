"""examples/explore_results.py, the jupytext notebook, executed as a notebook's cells on a small
run: it reads the store, recomputes one claim from the summary (and agrees with the pipeline's
verdict), and redraws one figure in the reader's own style."""

from __future__ import annotations

import contextlib
import io
import os

import pytest
import yaml
from helpers.configs import REPO, small_config

from attnsim.cli.main import main

EXAMPLE = REPO / "examples/explore_results.py"


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A store and claims table of a small temperature_entropy sweep (a default sweep's kind)."""
    from attnsim.testing import run_experiment

    monkeypatch.chdir(tmp_path)
    config = small_config()
    config["experiments"] = {
        "temperature": {
            "kind": "temperature_entropy",
            "trials": 30,
            "grid": {"n": [16, 64], "d": [3], "tau": [0.3, 1.0]},
        }
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run_experiment(config, "temperature", tmp_path / "results/store")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["claims", "--write", "results"]) == 0
    return tmp_path / "results"


def test_the_notebook_runs_on_a_run_and_agrees_with_the_pipeline(results, monkeypatch):
    jupytext = pytest.importorskip("jupytext", reason="pip install -e '.[test]' installs jupytext")
    notebook = jupytext.read(EXAMPLE)
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds.count("markdown") >= 4 and kinds.count("code") >= 4 and kinds[0] == "markdown"
    monkeypatch.setenv("ATTNSIM_RESULTS", str(results))
    namespace: dict = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for cell in notebook.cells:
            if cell.cell_type == "code":
                # the cells in order, as a kernel runs them
                exec(compile(cell.source, str(EXAMPLE), "exec"), namespace)
    printed = out.getvalue()
    assert "tau = 1: the largest gap over 60 trials" in printed and ": holds" in printed
    assert "the pipeline says: holds" in printed
    picture = results / "examples/temperature_gap_mine.png"
    assert picture.stat().st_size > 20_000
    fig = namespace["fig"]
    assert fig.axes[0].get_facecolor()[:3] != (1.0, 1.0, 1.0)  # the reader's style, not attnsim's
    assert "serif" in fig.axes[0].xaxis.label.get_fontfamily()
    fig.canvas.draw()
    legend = fig.legends[0].get_window_extent()
    # kept in the canvas
    assert fig.bbox.y0 <= legend.y0 and legend.x0 >= fig.bbox.x0 and legend.x1 <= fig.bbox.x1


def test_it_runs_as_a_plain_script_too(results):
    import subprocess
    import sys

    env = dict(os.environ, ATTNSIM_RESULTS=str(results), MPLBACKEND="Agg")
    run = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "the pipeline says: holds" in run.stdout
