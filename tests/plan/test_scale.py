"""Scale: columnar planning gives today's ids, jobs sized by cost, spare cores as threads, the
streaming summary equals the per-point one, a job's parse does not plan the sweep, a dry run
writes nothing."""

from __future__ import annotations

import copy
import math
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.configs import CONTRASTIVE, RECALL, REPO, small_config
from helpers.points import make_point
from oracles.points import chunk, expand, point_id
from oracles.points import chunk_id as oracle_chunk_id
from oracles.summaries import summarise_points, trials_by_point

from attnsim.config.load import load, load_file
from attnsim.jobs.collect import summarise_chunks
from attnsim.jobs.simulate import run_chunk, simulate_points
from attnsim.kinds import all_kinds, get_kind
from attnsim.plan.sweep import chunk_bounds, plan_all, plan_experiment
from attnsim.records import cost as resources
from attnsim.records.experiment import TrialSettings
from attnsim.records.grid import chunk_id, grid_columns, points_from_rows, row_ids
from attnsim.store import parquet as store
from attnsim.testing import run_experiment

GRIDS = {  # awkward values on purpose: ints given for floats, 1e-05, 1e4
    "noisy_attention": {
        "n": [16, 64],
        "d": [4],
        "logit_scale": [0, 1.5],
        "noise": ["gaussian", "student_t"],
        "noise_draws": [4],
        "noise_scale": [1e-05, 0.5, 3],
    },
    "logit_entropy": {
        "n": [16, 1024],
        "d": [2, 64],
        "logits": ["gaussian", "dot_product"],
        "scale": [0.001, 1, 2.5, 1e4],
    },
    "temperature_entropy": {"n": [16, 256], "d": [3], "tau": [0.05, 1, 10000]},
    "init_gradient": {"n": [16], "d": [16, 8], "scale": [0.1, 100, 1e-3]},
    "recall_training": RECALL,  # lr 16 diverges: +inf/NaN trials, the finite-only metrics
    "contrastive_training": CONTRASTIVE,
    "precision_attention": {
        "n": [16],
        "d": [4],
        "logit_scale": [0, 3],
        "outlier_channels": [1],
        "outlier_scale": [10],
        "format": ["float8_e4m3fn", "bfloat16"],
        "site": ["logits", "qk_rotated", "probs"],
    },
    "attention_dropout": {
        "n": [16],
        "d": [2],
        "logit_scale": [1],
        "value_mean": [0, 2],
        "noise_draws": [2],
        "rate": [0, 0.5],
        "form": ["transformers", "logit"],
    },
}
# every kind, assets or not
DEFAULT_GRIDS = {e.kind: e.grid for e in load_file(REPO / "config.yaml").experiments.values()}
# preset only
DEFAULT_GRIDS.setdefault(
    "real_precision",
    {"n": [12], "layer": [0, 5], "head": [3], "format": ["bfloat16"], "site": ["logits", "qk"]},
)


def any_grid(kind: str) -> dict:
    """The awkward grid if there is one, else the default sweep's, else the kind's own example."""
    return GRIDS.get(kind) or DEFAULT_GRIDS.get(kind) or all_kinds()[kind].example["grid"]


@pytest.mark.parametrize("kind", sorted(GRIDS))
def test_columnar_ids_are_the_canonical_ids(kind):
    """`config.grid.point_ids` (every id the code makes) against the canonical definition
    (json.dumps with sorted keys, sha256; tests/oracles/points.py), on every kind's grid."""
    # defaults filled
    given = (
        load(
            {
                "seed": 1,
                "experiments": {
                    "e": {"kind": kind, "trials": 2, "grid": copy.deepcopy(GRIDS[kind])}
                },
            }
        )
        .experiments["e"]
        .grid
    )
    grid = grid_columns(SimpleNamespace(kind=kind, grid=given))
    points = expand(SimpleNamespace(kind=kind, grid=given))
    assert grid.ids() == [p.id for p in points] == [point_id(kind, p.params) for p in points]
    raw = [
        tuple(
            given[n][i]
            for n, i in zip(
                all_kinds()[kind].param_names,
                np.unravel_index(k, [len(given[n]) for n in all_kinds()[kind].param_names]),
            )
        )
        for k in range(grid.size)
    ]
    assert row_ids(get_kind(kind), raw) == grid.ids()  # raw (uncanonical) values, as in a spec
    assert points_from_rows(get_kind(kind), raw) == points  # ids, streams, canonical params
    assert [make_point(kind, p.params) for p in points[:5]] == points[:5]
    some = np.random.default_rng(1).choice(grid.size, min(grid.size, 7), replace=False)
    assert grid.ids(some) == [points[i].id for i in some]
    assert chunk_id(grid.ids(some)) == oracle_chunk_id([points[i] for i in some])
    costs = grid.evaluate(all_kinds()[kind].compute.bytes_per_trial)
    assert costs.tolist() == [all_kinds()[kind].compute.bytes_per_trial(p.params) for p in points]


def test_every_kind_is_covered():
    uncovered = (
        set(all_kinds())
        - set(GRIDS)
        - set(DEFAULT_GRIDS)
        - {k for k, kind in all_kinds().items() if kind.example}
    )
    assert not uncovered, "declare the kind's example (Kind.example)"


def test_chunk_bounds_is_grid_chunk():
    rng = np.random.default_rng(3)
    costs = rng.choice([16.0, 64.0, 256.0, 1e4], 500)
    points = list(range(500))
    for size, budget in [(1, math.inf), (7, math.inf), (64, 300.0), (500, 2000.0), (3, 1e9)]:
        expected = chunk(points, size, list(costs), budget)
        assert [list(range(a, b)) for a, b in chunk_bounds(costs, size, budget)] == expected


def million_like(points: int, **settings) -> dict:
    """A logit_entropy sweep of about `points` cheap points (the million preset's shape)."""
    scales = max(1, points // (40 * 25 * 2))
    grid = {
        "n": list(range(16, 56)),
        "d": list(range(8, 33)),
        "logits": ["gaussian", "dot_product"],
        "scale": [round(0.01 * 1.01**i, 8) for i in range(scales)],
    }
    return {
        "seed": 1,
        **settings,
        "experiments": {"big": {"kind": "logit_entropy", "trials": 100, "grid": grid}},
    }


def test_jobs_are_sized_by_cost_and_rows(tmp_path):
    # a cluster's job_minutes: the million preset (10^8 rows) makes few jobs, bounded by rows per
    # job
    preset = load_file(REPO / "workflow/presets/million.yaml")
    assert (
        sum(
            len(e.grid[k]) and math.prod(len(v) for v in e.grid.values())
            for e in preset.experiments.values()
            for k in ["n"]
        )
        == 10**6
    )
    cluster = plan_all(load(million_like(200_000, job_minutes=30)), tmp_path)["big"]
    assert len(cluster.pending) <= 2000 and all(
        cluster.cost(c).points * 100 <= 2**22 for c in cluster.pending
    )
    # costly points: job_minutes sets the count, and no job's estimate passes it by more than a
    # point
    heavy = {
        "seed": 1,
        "experiments": {
            "big": {
                "kind": "logit_entropy",
                "trials": 20_000,
                "grid": {
                    "n": [4096, 16384],
                    "d": [64],
                    "logits": ["gaussian", "dot_product"],
                    "scale": [0.01 * i for i in range(1, 101)],
                },
            }
        },
    }
    counts = {}
    for minutes in (0.05, 0.5):
        plan = plan_all(load(copy.deepcopy(heavy) | {"job_minutes": minutes}), tmp_path)["big"]
        seconds = [resources.expected_seconds(plan.cost(c)) for c in plan.pending]
        worst_point = 4 * max(seconds[i] / plan.cost(c).points for i, c in enumerate(plan.pending))
        assert max(seconds) <= minutes * 60 + worst_point
        counts[minutes] = len(plan.pending)
    assert counts[0.05] >= 5 * counts[0.5] >= 10
    # a laptop's default: the default sweep still makes at least a few chunks per core
    default = plan_all(load_file(REPO / "config.yaml"), tmp_path)
    assert sum(len(p.pending) for p in default.values()) >= 8


def test_spare_cores_become_threads():
    assert resources.spare_threads(1, 2) == 2 and resources.spare_threads(1, 8) == 8
    assert (
        resources.spare_threads(3, 8) == 2
        and resources.spare_threads(2, 2) == 1
        and resources.spare_threads(100, 2) == 1
    )
    assert resources.spare_threads(1, None) == 1  # a cluster: the profile sets threads


def kind_config(kind: str, **extra) -> dict:
    return {
        "seed": 5,
        "chunk_size": 4,
        "experiments": {
            "e": {"kind": kind, "trials": 12, "grid": copy.deepcopy(GRIDS[kind]), **extra}
        },
    }


@pytest.mark.parametrize("kind", sorted(GRIDS))
def test_streaming_summary_equals_the_per_point_summary(kind, tmp_path):
    extra = {"target_se": 0.05, "max_trials": 36} if kind == "noisy_attention" else {}
    if all_kinds()[kind].summary.finite_metrics:
        extra = {}
    settings = load(kind_config(kind, **extra))
    paths = run_experiment(settings, "e", tmp_path, summarise=False).chunks
    metrics = [m.name for m in all_kinds()[kind].schema.metrics]
    points = expand(settings.experiments["e"])
    old = summarise_points(
        kind,
        "e",
        trials_by_point([store.read_table(p) for p in paths], metrics),
        points,
        extra.get("target_se"),
    )
    grid = grid_columns(settings.experiments["e"])
    new = summarise_chunks(
        get_kind(kind),
        "e",
        grid,
        (store.read_table(p, ["point_id", *metrics]) for p in paths),
        extra.get("target_se"),
    )
    assert new.schema.equals(old.schema)
    # NaN == NaN for this comparison (a point whose runs all diverged has NaN means)
    nan = float("nan")
    key = lambda rows: [
        {k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in rows
    ]  # noqa: E731
    assert key(new.to_pylist()) == key(old.to_pylist()), nan
    if extra:
        assert len(set(new["n_trials"].to_pylist())) > 1  # rows of unequal counts were reduced too


def test_streaming_summary_refuses_missing_and_duplicated_points(tmp_path):
    from attnsim.errors import StoreError

    settings = load(kind_config("temperature_entropy"))
    paths = run_experiment(settings, "e", tmp_path, summarise=False).chunks
    grid = grid_columns(settings.experiments["e"])
    with pytest.raises(StoreError, match="no trials"):
        summarise_chunks(
            get_kind("temperature_entropy"), "e", grid, [store.read_table(p) for p in paths[1:]]
        )
    with pytest.raises(StoreError, match="more than one place"):
        summarise_chunks(
            get_kind("temperature_entropy"),
            "e",
            grid,
            [store.read_table(p) for p in paths + paths[:1]],
        )


def test_simulate_points_unchanged_by_points_from_rows():
    kind = get_kind("logit_entropy")
    made = [make_point(kind, dict(n=16, d=4, logits="gaussian", scale=s)) for s in (0.5, 1, 2)]
    rows = points_from_rows(kind, [(16, 4, "gaussian", s) for s in (0.5, 1, 2)])
    assert made == rows
    a, b = (
        simulate_points(kind, TrialSettings(3, 10), made),
        simulate_points(kind, TrialSettings(3, 10), rows),
    )
    assert all(np.array_equal(a[p.id][m], b[p.id][m]) for p in made for m in a[p.id])


def test_config_check_does_not_expand_the_grid(monkeypatch):
    from attnsim.records import grid as grid_module

    fail = lambda *a, **k: pytest.fail("a point or an id was made")
    monkeypatch.setattr(grid_module, "points_from_rows", fail)
    monkeypatch.setattr(grid_module, "point_ids", fail)
    load(million_like(10**6))  # the memory check evaluates one cost per distinct (n, d)
    config = small_config()
    config["experiments"]["robustness"]["grid"]["n"] = [16, 2**20]
    config["experiments"]["robustness"]["grid"]["noise_draws"] = [4096]
    from attnsim.errors import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"the point \(n=1048576, .*noise_draws=4096.*MiB per trial, over memory_budget_mb",
    ):
        load(config)


def _unused(path: Path) -> None:  # pragma: no cover
    pass


@pytest.mark.slow
def test_a_job_reads_its_spec_file_and_does_not_plan_the_sweep(tmp_path):
    """A job's parse (`--mode remote`, as the SLURM plugin runs it on a node) computes its chunk
    from the spec file the submitting run wrote, without planning: a store that planning refuses
    (a foreign file in it) does not stop it, and its rows are the planned chunk's."""
    import subprocess

    from helpers.workflow import (
        python_first_on_path,
        snakemake,
        snakemake_command,
        tree,
        write_config,
    )

    from attnsim.plan.sweep import write_specs

    write_config(tmp_path, small_config(chunk_size=8))
    plans = plan_all(load(small_config(chunk_size=8)), tmp_path / "results/store")
    write_specs(plans, tmp_path / "results", threads=2)
    plan = plans["robustness"]
    chunk = plan.pending[0]
    foreign = store.chunk_path(
        tmp_path / "results/store", "noisy_attention", "robustness", "0" * 16
    )
    foreign.parent.mkdir(parents=True, exist_ok=True)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), foreign)
    planned = snakemake(tmp_path, "-n", "--cores", "1", check=False)
    # planning reads the store
    assert planned.returncode != 0 and "foreign Parquet file" in planned.stderr
    before = tree(tmp_path)
    target = f"simulate:kind=noisy_attention,experiment=robustness,chunk={chunk}"
    cmd = snakemake_command(tmp_path, "--target-jobs", target, "--allowed-rules", "simulate")
    cmd += [
        "--mode",
        "remote",
        "--no-hooks",  # as Snakemake spawns a job: the submitting run's hooks are not rerun
        "--cores",
        "2",
        "--force",
        "--nolock",
        "--target-files-omit-workdir-adjustment",
        "--max-inventory-time",
        "0",
    ]
    job = subprocess.run(
        cmd, cwd=tmp_path, env=python_first_on_path(), capture_output=True, text=True, timeout=300
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    made = store.chunk_path(tmp_path / "results/store", "noisy_attention", "robustness", chunk)
    reference = run_chunk(plan.spec(chunk), tmp_path / "reference.parquet")
    assert store.read_table(made).equals(store.read_table(reference))
    log = (tmp_path / f"results/logs/simulate/robustness/noisy_attention-{chunk}.log").read_text()
    assert (
        "on 2 thread(s)" in log
        and "first kernel call" in log
        and "after the job's process started" in log
    )
    assert {k for k in tree(tmp_path) if k not in before} <= {
        str(made.relative_to(tmp_path / "results")),
        f"logs/simulate/robustness/noisy_attention-{chunk}.log",
    } | {f"benchmarks/simulate/robustness/noisy_attention-{chunk}.tsv"}


@pytest.mark.slow
def test_a_dry_run_writes_nothing_and_one_chunk_takes_every_core(tmp_path):
    from helpers.workflow import snakemake, tree, write_config

    config = small_config(chunk_size=100)  # 16 points: one chunk
    write_config(tmp_path, config)
    (tmp_path / "results").mkdir()
    before = tree(tmp_path)
    dry = snakemake(tmp_path, "-n", "--cores", "2")
    assert tree(tmp_path) == before and not (tmp_path / "results/plan").exists()
    assert dry.stdout.count("rule simulate:") == 1 and "threads: 2" in dry.stdout
    run = snakemake(tmp_path, "--cores", "2", "--until", "simulate")
    assert run.returncode == 0
    specs = list((tmp_path / "results/plan/robustness").glob("chunk-*.json"))
    assert len(specs) == 1 and '"threads":2' in specs[0].read_text()
    log = next((tmp_path / "results/logs/simulate").rglob("*.log")).read_text()
    assert "on 2 thread(s)" in log
    again = snakemake(tmp_path, "-n", "--cores", "2")
    assert "rule simulate:" not in again.stdout


def test_a_query_checks_and_reads_only_the_views_it_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attnsim.errors import StoreError
    from attnsim.jobs.collect import collect
    from attnsim.plan.sweep import experiment_json
    from attnsim.store import query

    settings = load(kind_config("temperature_entropy"))
    plan = plan_experiment(settings, "e", tmp_path)
    paths = [
        run_chunk(plan.spec(c), store.chunk_path(tmp_path, "temperature_entropy", "e", c))
        for c in plan.pending
    ]
    collect(
        experiment_json(settings, "e"),
        paths,
        store.summary_path(tmp_path, "temperature_entropy", "e"),
    )
    other = store.chunk_path(tmp_path, "temperature_entropy", "other", "0" * 16)
    other.parent.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), other)  # a foreign file elsewhere in the store
    frame = query.run(tmp_path, "SELECT n, tau, gap_mean FROM e WHERE tau = 1 ORDER BY n")
    assert frame["n"].tolist() == [16, 256]
    with pytest.raises(StoreError, match="foreign Parquet file"):
        # names every trials file: all are checked
        query.run(tmp_path, "SELECT count(*) FROM trials")
    with pytest.raises(StoreError, match="foreign Parquet file"):
        query.run(tmp_path, "SELECT * FROM provenance")


def test_cost_dependence_is_found_however_params_are_read():
    """`GridColumns.evaluate` calls a function once per combination of the parameters it reads;
    reading the params whole ({**p}, dict(p), items) counts as reading all of them."""
    grid = grid_columns(
        SimpleNamespace(
            kind="logit_entropy",
            grid={"n": [16, 64], "d": [2, 4], "logits": ["gaussian"], "scale": [0.1, 0.2, 0.3]},
        )
    )
    calls = []

    def by_key(p):
        calls.append(1)
        return p["n"] * 10

    # first pass, then once per n
    assert grid.evaluate(by_key).tolist() == [160] * 6 + [640] * 6 and len(calls) == 1 + 2
    for whole in (
        lambda p: {**p}["scale"],
        lambda p: dict(p)["scale"],
        lambda p: dict(p.items())["scale"],
        lambda p: sorted(p)[0] and p.copy()["scale"],
    ):
        assert grid.evaluate(whole).tolist() == [0.1, 0.2, 0.3] * 4
    assert (
        grid.evaluate(lambda p: p.get("d") * ("scale" in p)).tolist()
        == [2] * 3 + [4] * 3 + [2] * 3 + [4] * 3
    )


BUILT_IN = sorted(k for k, kind in all_kinds().items() if kind.package.startswith("attnsim.kinds."))


def test_every_built_in_kind_declares_an_example_that_is_a_valid_experiment():
    for name in BUILT_IN:
        example = all_kinds()[name].example
        assert example is not None, name
        settings = load({"seed": 1, "experiments": {"e": {"kind": name, **example}}})
        assert set(settings.experiments["e"].grid) <= set(all_kinds()[name].param_names), name


@pytest.mark.parametrize("kind", BUILT_IN)
def test_a_million_points_of_any_kind_plan_in_seconds_into_few_cluster_jobs(kind, tmp_path):
    """No chunk settings, the SLURM profile's job_minutes and max_jobs: at most 2,000 jobs (the
    profile's limit), planned in <= 20 CPU-s (the whole dry run: test below, and benchmarks
    --scale); CPU time, which a shared machine's load moves least."""
    from attnsim.plan import bill
    from benchmarks.scale import million_config, profile_settings

    started = time.process_time()
    settings = load(million_config(kind, **profile_settings()))
    plans = plan_all(settings, tmp_path)
    seconds = time.process_time() - started
    cost = bill.bill(settings, plans, tmp_path)
    # a kind of integer parameters only may have fewer points in all (real_precision: 0.7 M)
    assert settings.chunk_size is None and cost.points >= (
        10**6 if kind != "real_precision" else 7 * 10**5
    )
    assert cost.jobs["simulate"] <= settings.max_jobs == 2000
    assert all(
        p.cost(c).points * p.cost(c).trial_cap <= 2**22 for p in plans.values() for c in p.pending
    )
    assert seconds <= 20, f"{kind}: planning took {seconds:.1f} CPU-s"


@pytest.mark.slow
@pytest.mark.parametrize("kind", BUILT_IN)
def test_a_million_points_dry_run_in_20_s_and_1_gb(kind, tmp_path):
    """`snakemake -n` of a 10^6-point config of every kind in a fresh process: its CPU time (the
    wall time on idle cores; a shared machine's wall time says more about the load) and peak RSS."""
    import json
    import subprocess
    import sys

    import yaml

    from benchmarks.scale import env, million_config, profile_settings, snakemake_cmd

    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(million_config(kind), sort_keys=False))
    overrides = [f"{k}={v}" for k, v in profile_settings().items()]
    cmd = snakemake_cmd(
        tmp_path, "-n", "--cores", "2", "--configfile", "sweep.yaml", "--config", *overrides
    )
    # Measured by a small launcher process: a child forked straight from this (large) pytest
    # process reports the parent's resident size as its own peak (Linux keeps ru_maxrss across
    # exec), so the dry run's peak is read as the launcher's children's usage instead.
    launcher = (
        "import json, resource, subprocess, sys; "
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, "
        "text=True); u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(json.dumps([r.returncode, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024, r.stdout]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", launcher, *cmd],
        cwd=tmp_path,
        env=env(),
        capture_output=True,
        text=True,
    )
    status, cpu, rss, out = json.loads(result.stdout)
    assert (
        status == 0
        and ("plan: 1 experiment, 1,0" in out or "plan: 1 experiment, 715,680" in out)
        and not (tmp_path / "results").exists()
    ), result.stderr[-2000:]
    assert cpu <= 20 and rss <= 1024, (kind, cpu, rss)


def test_past_max_jobs_the_run_stops_in_one_line_and_submits_nothing(tmp_path):
    from helpers.workflow import snakemake, write_config

    config = small_config(job_minutes=1e-9) | {"max_jobs": 3}
    del config["chunk_size"]  # with it the config's own check refuses first (test_bounded_inputs)
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--cores", "1", check=False)
    errors = [line for line in result.stderr.splitlines() if line.startswith("attnsim: error")]
    assert result.returncode != 0 and len(errors) == 1, result.stderr
    assert errors[0].startswith(
        "attnsim: error: max_jobs: the sweep needs 16 simulate jobs, over max_jobs = 3; raise "
        "job_minutes"
    )
    assert not (tmp_path / "results").exists() and "rule simulate" not in result.stdout


def test_attnsim_plan_prints_the_bill(tmp_path):
    import subprocess
    import sys

    from helpers.workflow import workflow_args, write_config

    write_config(tmp_path, small_config() | {"max_jobs": 100})
    attnsim = str(Path(sys.executable).parent / "attnsim")
    cmd = [attnsim, "plan", *workflow_args(tmp_path), "--cores", "2"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) == 6, result.stdout + result.stderr
    assert lines[0].startswith("plan: 1 experiment, 16 points (16 to run, up to 320 trials)")
    assert (
        lines[1].startswith("  jobs to run: simulate ")
        and "collect 1, judge 1, figures 1, claims 1" in lines[1]
    )
    assert "CPU-minutes estimated" in lines[2] and "peak memory per job" in lines[2]
    assert "simulate jobs of max_jobs = 100" in lines[3] and not (tmp_path / "results").exists()
    assert lines[4].startswith("  figures: about ") and "; claims: about " in lines[4]
    # the profile in effect: the workflow's default one here; inside the adding-a-kind guide's
    # clone, whose attnsim is imported from another tree, the one that tree names
    assert lines[5].startswith("  profile: ")


def test_attnsim_finds_its_own_snakemake_without_an_activated_venv(tmp_path):
    """`.venv/bin/attnsim plan` with a PATH that lacks the venv still finds the venv's
    Snakemake (and the rules its attnsim); with no Snakemake anywhere it says so in one line."""
    import subprocess
    import sys

    from helpers.workflow import workflow_args, write_config

    write_config(tmp_path, small_config())
    attnsim = str(Path(sys.executable).parent / "attnsim")
    cmd = [sys.executable, attnsim, "plan", *workflow_args(tmp_path)]
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=bare)
    assert result.returncode == 0 and result.stdout.startswith("plan: 1 experiment"), (
        result.stdout + result.stderr
    )
    # an interpreter whose scripts directory has no Snakemake, and none on PATH
    lonely = tmp_path / "bin"
    lonely.mkdir()
    (lonely / "python").symlink_to(sys.executable)
    code = (
        "import sys; sys.executable = sys.argv[1]; from attnsim.cli.main import main;"
        " raise SystemExit(main(['run', '-n']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(lonely / "python")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=bare,
    )
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "attnsim: error: snakemake is installed neither beside attnsim nor on PATH "
        "(pip install -e . does)"
    ], result.stderr
