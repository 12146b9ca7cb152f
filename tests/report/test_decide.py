"""`attnsim decide` on a small store (issue 39 item 2, issue 51 item 2, issue 52 item 2):
power-limited inconclusive claims turn into holds or fails through runs of the workspace's own
config with top-ups recorded in its state record; the study's config keeps working afterwards
(and after a killed decide, which the next command rolls back without losing a trial); the budget
is a ceiling on the CPU measured; no look that cannot decide is planned."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers.workflow import REPO, point_rows, python_first_on_path, snakemake, write_config

from attnsim.cli.main import main
from attnsim.records import state as record
from attnsim.report.decide import Meter

CONFIG = {
    "seed": 3,
    "experiments": {
        "dropout": {
            "kind": "attention_dropout",
            "trials": 160,
            "grid": {
                "n": [64],
                "d": [8],
                "logit_scale": [0.5],
                "value_mean": [0.0],
                "noise_draws": [2],
                "rate": [0.1],
                "form": ["transformers", "logit"],
            },
        }
    },
}
TARGETS = ("dropout_transformers_iid", "dropout_transformers_exact")
SNAKEMAKE = ["--", "-s", str(REPO / "Snakefile"), "--cores", "1"]


def test_the_next_look_is_predicted_from_the_last_ones_measurements():
    meter = Meter(budget_seconds=100.0, remote=False)
    meter.overhead = 5.0
    assert meter.predict(10.0) == 15.0  # before any look: the cost model itself
    meter.learn(estimate_seconds=10.0, look_seconds=32.0, simulate_seconds=20.0)
    assert meter.calibration == 2.0 and meter.overhead == 12.0
    assert meter.predict(30.0) == 72.0
    cluster = Meter(budget_seconds=100.0, remote=True)
    cluster.learn(estimate_seconds=10.0, look_seconds=6.0, simulate_seconds=20.0)
    assert cluster.overhead == 6.0 and cluster.remote_seconds == 20.0  # the jobs ran elsewhere


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """A workdir whose run left both dropout claims inconclusive (a few hundred trials short)."""
    workdir = tmp_path_factory.mktemp("decide") / "work"
    config = write_config(workdir, CONFIG)
    snakemake(workdir, "--cores", "1", "--configfile", str(config))
    return workdir


def copy_of(judged: Path, tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    shutil.copytree(judged, workdir, ignore=shutil.ignore_patterns(".snakemake"))
    return workdir


def decide(workdir: Path, *args: str) -> int:
    argv = ["decide", *args, "--workdir", str(workdir), "--configfile", "config.yaml"]
    return main([*argv, *SNAKEMAKE])


def attnsim(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnsim.cli.main", *args],
        cwd=workdir,
        env=python_first_on_path(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def spent(out: str) -> tuple[float, float]:
    found = re.search(r"([\d.]+) CPU-minutes spent of ([\d.]+) \(measured\)", out)
    assert found, out
    return float(found.group(1)), float(found.group(2))


def fresh_rows_equal(workdir: Path, tmp_path: Path) -> None:
    """A fresh run of the workspace's effective config (`attnsim show --yaml`) computes the very
    rows the topped-up store holds."""
    shown = attnsim(workdir, "show", "--yaml")
    assert shown.returncode == 0, shown.stderr
    fresh = tmp_path / "fresh"
    config = write_config(fresh, yaml.safe_load(shown.stdout))
    snakemake(fresh, "--cores", "1", "--configfile", str(config), "--config", "workspace=results")
    assert point_rows(fresh) == point_rows(workdir)


@pytest.mark.slow
def test_decided_then_the_studys_own_config_keeps_working(judged, tmp_path, capsys):
    workdir = copy_of(judged, tmp_path)
    assert decide(workdir, "--budget", "0.05") == 0
    out = capsys.readouterr().out
    assert out.index("plan: ") < out.index("decide: look 2")  # the bill before any spending
    for claim in TARGETS:
        assert f"decide: {claim}: holds" in out or f"decide: {claim}: fails" in out, out
    used, budget = spent(out)
    assert used <= budget
    assert "recorded in results/state.yaml" in out and "attnsim show" in out
    state = record.read(workdir / "results")
    assert state.operation is None and state.topups["dropout"].trials > 160
    assert set(TARGETS) <= set(state.designs)
    assert "1e-300" not in out
    # the study's own config: show and run -n see the top-ups, nothing to compute, no refusal
    shown = attnsim(workdir, "show")
    assert shown.returncode == 0 and "decide's top-ups: dropout" in shown.stdout, shown.stderr
    dry = attnsim(workdir, "run", "-n", "-s", str(REPO / "Snakefile"))
    assert dry.returncode == 0 and "simulate 0" in dry.stdout, dry.stdout + dry.stderr
    assert "1e-300" not in shown.stdout + shown.stderr + dry.stdout + dry.stderr
    fresh_rows_equal(workdir, tmp_path)


@pytest.mark.slow
def test_a_killed_decide_is_rolled_back_and_continued_without_losing_a_trial(judged, tmp_path):
    workdir = copy_of(judged, tmp_path)
    trials = workdir / "results" / "store" / "trials"
    before = {p.name for p in trials.rglob("chunk-*.parquet")}
    command = [sys.executable, "-m", "attnsim.cli.main", "decide", "--budget", "0.05"]
    process = subprocess.Popen(
        [*command, *SNAKEMAKE],
        cwd=workdir,
        env=python_first_on_path(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not ({p.name for p in trials.rglob("chunk-*.parquet")} - before):
        assert process.poll() is None and time.monotonic() < deadline, "no top-up chunk came"
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)  # a look's chunk written, the look not complete
    process.wait()
    computed = {p.name for p in trials.rglob("chunk-*.parquet")} - before
    assert record.read(workdir / "results").operation is not None
    shown = attnsim(workdir, "show")  # any command that reads the workspace recovers it
    assert shown.returncode == 0, shown.stderr
    assert "interrupted" in shown.stderr and "back at its last complete look" in shown.stderr
    assert record.read(workdir / "results").operation is None
    dry = attnsim(workdir, "run", "-n", "-s", str(REPO / "Snakefile"))
    assert dry.returncode == 0 and "simulate 0" in dry.stdout, dry.stdout + dry.stderr
    assert computed <= {p.name for p in trials.rglob("chunk-*.parquet")}  # kept
    again = attnsim(workdir, "decide", "--budget", "0.05", *SNAKEMAKE)
    assert again.returncode == 0, again.stdout + again.stderr
    # the next decide continued from the last complete look (the killed look's chunk read where
    # Snakemake recorded it finished, else computed again: the same numbers either way)
    assert "decide: look 2" in again.stdout and "1e-300" not in again.stdout
    fresh_rows_equal(workdir, tmp_path)


@pytest.mark.slow
def test_the_budget_is_a_ceiling_on_what_is_measured(judged, tmp_path, capsys):
    """0.6 CPU-minutes: the cost model calls each look nearly free, but each run's measured
    overhead is not; the looks stop before the measured CPU would pass the budget."""
    workdir = copy_of(judged, tmp_path)
    code = decide(workdir, "--budget", "0.01")
    out = capsys.readouterr().out
    used, budget = spent(out)
    assert used <= budget == 0.6, out
    if code == 1:
        assert re.search(r"decide: look \d not run: it and the final run would cost about", out)


def test_too_small_a_budget_is_one_line(judged, tmp_path, capsys):
    workdir = copy_of(judged, tmp_path)
    assert decide(workdir, "--budget", "0") == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsim: error: decide: --budget 0") and err.count("\n") == 1


@pytest.mark.parametrize("budget", ["nan", "inf", "1e999", "-1"])
def test_a_budget_that_is_no_number_of_cpu_hours_is_one_line(tmp_path, capsys, budget):
    """Issue 52: `decide --budget nan` meant no limit (NaN compares false with every cost)."""
    assert decide(tmp_path, "--budget", budget) == 2
    err = capsys.readouterr().err
    assert err == (
        f"attnsim: error: --budget {float(budget):g}: give a finite number of CPU-hours, 0 or "
        "more (e.g. --budget 2)\n"
    )
    assert not (tmp_path / "results").exists()
