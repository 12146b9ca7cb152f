"""Snakemake's start builds the DAG without importing any kind's claims or figures code, pandas or
the plotting stack: what the claims read is declared in the kinds' records (`Kind.schema.
run_columns`, `Kind.presentation.claims_figures`), so every start (a run, a dry run, a run with
nothing to do) pays only for planning. And each job imports only what it uses: a kind's judge
job its own kind's claims code, a figures job its own kind's figures code, neither seaborn."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.configs import RECALL, REPO, small_config
from helpers.workflow import python_first_on_path, snakemake, write_config

# Snakemake's start in this process: the executor plugins Snakemake finds itself are hidden (the
# SLURM plugin, when installed, imports pandas as Snakemake loads it: not the workflow's doing),
# then what the workflow's parsing and DAG build import is listed.
START = """
import json, pkgutil, sys
scan = pkgutil.iter_modules
pkgutil.iter_modules = lambda *a, **k: (
    m for m in scan(*a, **k) if not m.name.startswith("snakemake_executor_plugin_slurm")
)
import snakemake.cli
try:
    snakemake.cli.main(sys.argv[1:])
except SystemExit as stop:
    if stop.code:
        raise
print(json.dumps(sorted(sys.modules)))
"""


def started_modules(workdir, *args) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", START, "-s", str(REPO / "workflow/Snakefile"), "-d", str(workdir),
         "--cores", "2", "--quiet", "all", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=python_first_on_path(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def kinds_code(modules: list[str]) -> list[str]:
    code = (".claims", ".figures")
    return [m for m in modules if m.startswith("attnsim.kinds.") and m.endswith(code)]


HEAVY = ("pandas", "matplotlib", "seaborn", "scipy", "duckdb")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A config of three kinds: one whose claims read every run's trials (recall_training), one
    with a figure of verdicts (normaliser_attention), a plain one (in one chunk: what the jobs
    import does not depend on how many there are)."""
    from attnsim.kinds import get_kind

    workdir = tmp_path_factory.mktemp("lean")
    config = small_config(chunk_size=16)
    config["experiments"]["recall"] = {"kind": "recall_training", "trials": 2, "grid": RECALL}
    example = dict(get_kind("normaliser_attention").example)
    config["experiments"]["normalisers"] = {"kind": "normaliser_attention", **example}
    write_config(workdir, config)
    return workdir


def test_a_dry_run_imports_no_claims_figures_pandas_or_plotting(sweep):
    modules = started_modules(sweep, "-n")
    assert kinds_code(modules) == []
    assert [m for m in HEAVY if m in modules] == []
    assert "attnsim.report.claims" not in modules


@pytest.mark.slow
def test_jobs_import_only_what_they_use_and_a_finished_run_starts_lean(sweep):
    subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow/Snakefile"), "-d",
         str(sweep), "--cores", "2", "--quiet", "all"],
        check=True, capture_output=True, text=True, timeout=1800, env=python_first_on_path(),
    )  # fmt: skip
    modules = started_modules(sweep)  # nothing to do: the start alone
    assert kinds_code(modules) == []
    # pandas aside: with outputs to check, Snakemake's own params trigger imports it (to hash
    # DataFrame params) wherever it is installed
    assert [m for m in HEAVY if m in modules and m != "pandas"] == []
    results = sweep / "results"
    # the judge job of one kind: its claims code, no other kind's, no plotting
    code = """
import json, sys
from attnsim.cli.main import main
main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)))
"""
    judge = [
        "judge", "--kind", "recall_training", "--experiments-file",
        str(results / "plan/experiments.json"), "--workspace", str(results), "--output",
        str(sweep / "recall.parquet"),
    ]  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", code, *judge], capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert kinds_code(modules) == ["attnsim.kinds.recall_training.claims"]
    assert [m for m in ("matplotlib", "seaborn", "scipy") if m in modules] == []
    # a figures job: its kind's figures code (and the claims it reads thresholds from), no
    # other kind's, no seaborn
    summary = next((results / "store/summary/kind=noisy_attention").rglob("summary.parquet"))
    figures = ["figures", "--summary", str(summary), "--outdir", str(sweep / "fig")]
    out = subprocess.run(
        [sys.executable, "-c", code, *figures], capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in kinds_code(modules) if "noisy_attention" not in m] == []
    assert [m for m in ("seaborn", "scipy") if m in modules] == []


DEMO = {
    "claim": "delta_method_gaussian",
    "axis": "noise_scale",
    "edge": "lower",
    "at": {"n": 16, "logit_scale": 0.0, "noise": "gaussian"},
    "budget": 0.0001,
}


def boundaries_config(workdir) -> None:
    """Two experiments and two boundaries: one of a claim robustness's delta_shortfall draws,
    one of a claim no figure draws (next_order_theory)."""
    config = small_config()
    config["experiments"]["entropy"] = {
        "kind": "logit_entropy",
        "trials": 5,
        "grid": {"n": [16], "d": [4], "logits": ["gaussian"], "scale": [0.1, 1.0]},
    }
    config["boundaries"] = {"demo": DEMO, "own": DEMO | {"claim": "next_order_theory"}}
    write_config(workdir, config)


def test_a_dry_run_with_boundaries_imports_no_claims_code(tmp_path):
    """A config's boundaries add locate rounds to the DAG, which reads their files only: the
    claims code they need runs in the jobs (issue 53.4), and which figures jobs draw them is read
    from the kinds' records (`Kind.presentation.boundary_figures`)."""
    boundaries_config(tmp_path)
    modules = started_modules(tmp_path, "-n")
    assert kinds_code(modules) == []
    assert [m for m in HEAVY if m in modules] == []
    assert "attnsim.claims.boundary" not in modules and "attnsim.report.boundaries" not in modules


def test_only_the_figures_job_that_draws_a_boundary_waits_for_it(tmp_path):
    """A config's boundary is drawn in its claim's figure: that experiment's figures job takes
    the boundary's located file; another experiment's figures job starts after its summary, as
    before; a boundary of a claim no figure shows gets a figure of its own."""
    boundaries_config(tmp_path)
    dry = snakemake(tmp_path, "-n", "-p", "--cores", "2")
    figures = [line for line in dry.stdout.splitlines() if "attnsim figures " in line]
    waiting = {line.split("--outdir ")[1].split()[0]: "--boundary" in line for line in figures}
    assert waiting == {"results/figures/robustness": True, "results/figures/entropy": False}
    assert all("locate/own/" not in line for line in figures)
    assert any("--boundary results/locate/demo/located.json" in line for line in figures)
    (record,) = [line for line in dry.stdout.splitlines() if "attnsim record-boundaries" in line]
    assert "--draw own " in record and "--draw demo" not in record
