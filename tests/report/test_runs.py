"""`attnsim runs` (issue 51 item 7): every workspace under results/ in one table, newest first,
each with the config it ran, the config's hash, points and trials, CPU, claims and date; read from
the workspaces' own files."""

from __future__ import annotations

import os
import time

from helpers.configs import simulated_robustness

from attnsim.cli.main import main
from attnsim.jobs.collect import collect
from attnsim.plan.sweep import write_experiment_specs
from attnsim.report import runs
from attnsim.store import parquet as store


def workspace(folder, trials_note: str = ""):
    """small_config's robustness experiment simulated and summarised in `folder`/store, with the
    plan files a run writes."""
    settings, root, paths = simulated_robustness(folder / "store")
    kind = settings.experiments["robustness"].kind
    collect(
        settings.experiments["robustness"].to_json(),
        paths,
        store.summary_path(root, kind, "robustness"),
    )
    write_experiment_specs(settings, folder)
    bench = folder / "benchmarks" / "simulate" / "robustness" / "x.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\tcpu_time\n1.0\t36.0\n")
    return settings


def test_runs_lists_the_default_and_a_second_workspace_newest_first(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    settings = workspace(tmp_path / "results")
    workspace(tmp_path / "results" / "mine")
    old = time.time() - 3600
    for path in (tmp_path / "results" / "store").rglob("*.parquet"):
        os.utime(path, (old, old))
    rows = runs.table()
    assert [r.workspace for r in rows] == ["results/mine", "results"]  # newest first
    assert rows[1].config == "config.yaml" and rows[0].config == "mine.yaml?"
    assert all(r.points == 16 and r.trials == 16 * 20 for r in rows)
    assert all(r.config_hash == settings.config_hash[:12] for r in rows)
    assert all(abs(r.cpu_hours - 0.01) < 1e-9 for r in rows)
    assert main(["runs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["workspace", "config", "hash"] and len(out) == 3
    assert out[1].startswith("results/mine ") and out[2].startswith("results ")


def test_no_workspace_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["runs"]) == 0
    assert (
        capsys.readouterr().out.strip() == "no workspaces under results/ yet: attnsim run makes one"
    )


def test_a_workspace_named_alone_shows_its_own_claims(tmp_path, monkeypatch, capsys):
    """`attnsim claims --workspace DIR` (no --configfile) judges the sweep that workspace last ran
    (its plan/experiments.json), not config.yaml's; its headline counts what it measured."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("seed: 1\nexperiments: {}\n")  # another sweep entirely
    workspace(tmp_path / "results" / "other")
    assert main(["claims", "--workspace", "results/other"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("claims: ") and not first.startswith("claims: 0 evidence"), out
    assert "attnsim claims --workspace results/other --all" in out
