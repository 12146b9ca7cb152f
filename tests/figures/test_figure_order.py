"""The same summary draws the same bytes (PNG and PDF) whatever the process drew before it: the
experiments drawn in one order and in the reverse order, in one process each (the figures job's
shared mathtext layouts, matplotlib's font caches), give identical files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnsim.kinds import get_kind
from attnsim.testing import example_config, run_experiment

KINDS = ("temperature_entropy", "attention_dropout", "logit_entropy")

DRAW = """
import sys
from pathlib import Path
from attnsim.report.figures import render
out = Path(sys.argv[1])
for summary in sys.argv[2:]:
    render(Path(summary), out / Path(summary).parent.name)
"""


@pytest.mark.slow
def test_figures_are_the_same_bytes_in_any_drawing_order(tmp_path):
    root = tmp_path / "store"
    summaries = [
        str(run_experiment(example_config(get_kind(k), trials=6, seed=5), k, root).summary)
        for k in KINDS
    ]
    drawn = {}
    for order, listed in (("forward", summaries), ("reverse", summaries[::-1])):
        out = tmp_path / order
        subprocess.run([sys.executable, "-c", DRAW, str(out), *listed], check=True, timeout=900)
        drawn[order] = {
            str(p.relative_to(out)): p.read_bytes() for p in sorted(Path(out).rglob("*.*"))
        }
    assert len(drawn["forward"]) >= 2 * len(KINDS)
    assert drawn["forward"] == drawn["reverse"]
