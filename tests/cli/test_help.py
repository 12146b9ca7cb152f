"""What a newcomer reads first: `attnsim --help`, `--version`, `run --help`, `query --help`, and
`attnsim show` on a half-done or adaptive sweep; the citation file."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest
import yaml
from helpers.configs import REPO, small_config

from attnsim import __version__
from attnsim.cli.main import QUERY_FORMATS, QUERY_ROWS, main
from attnsim.cli.runner import translate
from attnsim.report import status
from attnsim.store import query


def help_of(*args: str, capsys) -> str:
    with pytest.raises(SystemExit) as done:
        main([*args, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_top_help_starts_with_the_commands_people_use_then_examples(capsys):
    text = help_of(capsys=capsys)
    lines = text.splitlines()
    assert lines[0].startswith("usage: attnsim")
    commands = lines[lines.index("commands:") + 1 :]
    assert [c.split()[0] for c in commands[:4]] == ["run", "show", "claims", "query"]
    examples = lines[lines.index("examples:") + 1 :]
    assert examples[0].split()[:2] == ["attnsim", "run"] and any(
        "attnsim claims" in e for e in examples
    )
    assert lines.index("examples:") < 30  # both on the first screen
    listed = {c.split()[0] for c in commands[: commands.index("")]}
    # the workflow's, named once below
    assert not listed & {"simulate", "collect", "figures", "fetch-asset"}
    assert "`attnsim simulate`" in text
    assert max(len(line) for line in lines) <= 100


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out.strip()
    assert re.fullmatch(
        rf"attnsim {re.escape(__version__)} \(snakemake 9\.\S+, python 3\.\S+\)", out
    ), out
    run = subprocess.run(
        [sys.executable, "-m", "attnsim.cli.main", "--version"], capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stdout.strip() == out


def test_the_installed_version_is_the_packages():
    """pyproject.toml takes the version from attnsim.__version__: the installed metadata (what pip
    and `pip show` report) and the provenance every file records are the same string."""
    from importlib.metadata import version

    assert version("attnsim") == __version__ and re.fullmatch(r"\d+\.\d+\.\d+\S*", __version__)


def test_run_help_is_short_and_points_to_snakemakes(capsys):
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: attnsim run") and len(text.splitlines()) < 40
    assert (
        "snakemake --help" in text
        and "--report" in text
        and "--configfile" in text
        and "-n, --dry-run" in text
    )
    assert main(["run", "--configfile", "x.yaml", "-h"]) == 0 and capsys.readouterr().out == text


def test_plan_help_is_short(capsys):
    assert main(["plan", "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: attnsim plan") and len(text.splitlines()) < 20


def test_run_options_become_snakemakes():
    assert translate(["--report", "-v", "--cores", "2"]) == [
        "--report",
        "results/report.html",
        "--report-after-run",
        "--logger-attnsim-full",
        "--cores",
        "2",
    ]
    # a dry run prints the bill and the job counts, not Snakemake's rule blocks (-v: those too)
    assert translate(["-n", "--configfile", "a.yaml"]) == [
        "-n",
        "--configfile",
        "a.yaml",
        "--quiet",
        "rules",
        "host",
        "reason",
    ]
    assert translate(["-n", "-v"]) == ["-n", "--logger-attnsim-full"]
    # the report goes into the sweep's workspace; overrides and --workspace become one --config:
    # the overrides one list the workflow applies after the workspace's record, each replacing
    # its key whole (attnsim.config.state), recorded by a real run's workflow once it has planned
    assert translate(["--configfile", "a.yaml", "--report"])[2:4] == [
        "--report",
        "results/a/report.html",
    ]
    args = ["--set", "experiments.r.grid.n=[16,64]", "--workspace", "w", "--config", "seed=3"]
    assert translate([*args, "-n"]) == [
        "-n",
        "--quiet",
        "rules",
        "host",
        "reason",
        "--config",
        'attnsim_set=["experiments.r.grid.n=[16,64]", "seed=3"]',
        "workspace=w",
    ]
    assert translate(args, record=True)[-3:] == [
        'attnsim_set=["experiments.r.grid.n=[16,64]", "seed=3"]',
        "attnsim_record=true",
        "workspace=w",
    ]


def test_query_help_lists_the_views_and_the_formats(capsys):
    text = help_of("query", capsys=capsys)
    for view in ("summary", "trials", "<experiment>", "<experiment>_trials", "provenance"):
        assert re.search(rf"^  {re.escape(view)}\s", text, re.M), view
    assert "--format {table,csv,json,parquet}" in text
    assert QUERY_FORMATS == query.FORMATS and QUERY_ROWS == query.TERMINAL_ROWS


def test_show_never_says_100_percent_with_work_pending():
    assert status.percent_done(1317, 1323) == "99%"
    assert status.percent_done(1, 1323) == "0.07%"
    assert status.percent_done(0, 9) == "0%" and status.percent_done(9, 9) == "100%"
    assert status.percent_done(999_999, 1_000_000) == "99%"


def test_show_gives_an_adaptive_experiments_trial_range(tmp_path, monkeypatch, capsys):
    from attnsim.config.load import load
    from attnsim.jobs.collect import collect
    from attnsim.jobs.simulate import run_chunk
    from attnsim.plan.sweep import experiment_json, plan_experiment
    from attnsim.store import parquet as store

    monkeypatch.chdir(tmp_path)
    config = small_config()
    config["experiments"] = {
        "entropy": {
            "kind": "logit_entropy",
            "trials": 20,
            "target_se": 0.01,
            "max_trials": 160,
            "grid": {"n": [16], "d": [4], "logits": ["gaussian"], "scale": [0.0, 3.0]},
        }
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    assert main(["show"]) == 0
    before = capsys.readouterr().out
    assert (
        "20-160 adaptive" in before
        and "0 of 2 points done (0%)" in before
        and "1 chunk still to run" in before
    )
    settings = load(config)
    root = tmp_path / "results/store"
    plan = plan_experiment(settings, "entropy", root)
    paths = [
        run_chunk(plan.spec(c), store.chunk_path(root, plan.kind, plan.name, c))
        for c in plan.pending
    ]
    collect(
        experiment_json(settings, "entropy"), paths, store.summary_path(root, plan.kind, "entropy")
    )
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("entropy"))
    # scale 0 stops after one round (SE 0); scale 3 needs more: the trials run, not the config's 20
    assert re.search(r"20-160 adaptive\s+20-\d+\s+0$", row), row
    assert "2 of 2 points done (100%)" in out and "still to run" not in out


def test_citation_file_matches_the_package():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert str(citation["version"]) == __version__ and citation["license"] == project["license"]
    assert citation["title"] and citation["authors"] and citation["message"]
