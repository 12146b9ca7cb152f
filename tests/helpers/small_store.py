"""A small store made in process (plan, simulate, collect) and its claims written as the workflow
writes them: what verify, cite and claims --diff are tested on."""

from __future__ import annotations

from pathlib import Path

import yaml

from attnsim.cli.main import main
from attnsim.config.load import load
from attnsim.jobs.collect import collect
from attnsim.jobs.simulate import run_chunk
from attnsim.plan.sweep import experiment_json, plan_all, remove_replaced
from attnsim.store import parquet as store


def simulate(config: dict, root: Path) -> None:
    """The workflow's steps in process: plan, simulate every pending chunk, collect."""
    settings = load(config)
    plans = plan_all(settings, root)
    for plan in plans.values():
        for chunk in plan.pending:
            spec = plan.spec(chunk)
            run_chunk(spec, store.chunk_path(root, plan.kind, plan.name, chunk), threads=1)
    remove_replaced(plans, root)
    for name, plan in plan_all(settings, root).items():
        paths = [store.chunk_path(root, plan.kind, name, c) for c in plan.chunks]
        collect(experiment_json(settings, name), paths, store.summary_path(root, plan.kind, name))


def make(config: dict, results: Path) -> Path:
    """results/config.yaml, results/store and results/claims.*; returns the config's path."""
    results.mkdir(parents=True, exist_ok=True)
    path = results / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    simulate(config, results / "store")
    write_claims(path, results)
    return path


def write_claims(config: Path, results: Path) -> None:
    argv = ["claims", "--configfile", str(config), "--store", str(results / "store")]
    assert main([*argv, "--write", str(results), "--format", "json"]) == 0
