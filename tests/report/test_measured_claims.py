"""Claims for what was measured: the tables list the claims of the kinds a sweep runs, and the
rest is one line (`attnsim claims --all` lists them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.configs import small_config
from helpers.workflow import REPO, write_config

from attnsim.claims.engine import ClaimResult
from attnsim.report import claims_render as render


def claims() -> list[ClaimResult]:
    return [
        ClaimResult("a_holds", "a", statement="robustness", verdict="holds", measured=1.0),
        ClaimResult("b_not_run", "b", statement="robustness"),  # its kind is not in the sweep
        ClaimResult("c_not_run", "c", statement="entropy"),
        ClaimResult("d_sanity", "d", role="sanity", verdict="holds"),
    ]


def test_tables_list_the_measured_claims_and_count_the_rest_in_one_line():
    line = "2 claims need kinds this sweep does not run: attnsim claims --all"
    for text in (
        render.terminal(claims(), width=100),
        render.markdown(claims()),
        render.html(claims(), {}),
    ):
        assert "a_holds" in text and "d_sanity" in text and line in text
        assert "b_not_run" not in text and "c_not_run" not in text
    assert "not measured" not in render.terminal(claims(), width=100)
    everything = render.terminal(claims(), width=100, everything=True)
    assert "b_not_run" in everything and line not in everything
    assert render.markdown(claims(), everything=True).count("not measured") >= 2


def test_one_unmeasured_claim_and_none_measured():
    only = [ClaimResult("b_not_run", "b", statement="robustness")]
    assert render.terminal(only) == (
        "1 claim needs kinds this sweep does not run: attnsim claims --all"
    )


@pytest.mark.slow
def test_a_six_point_sweep_of_one_kind_prints_at_most_40_lines(tmp_path):
    config = small_config(chunk_size=8)
    config["experiments"]["robustness"]["grid"].update(n=[16, 64, 256], noise=["gaussian"])
    config["experiments"]["robustness"]["grid"].update(noise_scale=[0.1], logit_scale=[0.0, 1.0])
    write_config(tmp_path, config)
    env = dict(os.environ, COLUMNS="100")
    env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnsim.cli.main",
            "run",
            "--cores",
            "2",
            "-s",
            str(REPO / "workflow/Snakefile"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = (run.stdout + run.stderr).splitlines()
    assert run.returncode == 0, run.stderr
    assert "6 points x 20 trials" in run.stdout
    assert len(lines) <= 40, "\n".join(lines)
    assert any(line.endswith("claims need kinds this sweep does not run") for line in lines)
    assert "attnsim claims --all" in run.stdout
    assert "not measured" not in run.stdout
