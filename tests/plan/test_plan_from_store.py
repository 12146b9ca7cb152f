"""Planning never trusts timestamps or Snakemake's metadata alone (issue 41 item 4): without
`.snakemake` (results copied to a fresh clone, or it was removed), with `--rerun-triggers mtime`
or with clock skew, what is stored (each summary's record of its settings and chunks, against
the plan) decides what runs. Before, adding a grid value gave "Nothing to be done", removing one
left the removed points in the summary, and a deleted chunk under future mtimes was never
recomputed (a trials view of 40 rows beside a summary counting 80)."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from helpers.configs import small_config
from helpers.workflow import snakemake, write_config

from attnsim.store import query

pytestmark = pytest.mark.slow

STORE = "results/store"
BOTH = (
    "SELECT (SELECT count(*) FROM robustness) AS points, (SELECT sum(n_trials) FROM robustness) "
    "AS trials, (SELECT count(DISTINCT point_id) FROM robustness_trials) AS trial_points, "
    "(SELECT count(*) FROM robustness_trials) AS rows"
)


def views(workdir) -> tuple[int, int, int, int]:
    frame = query.run(workdir / STORE, BOTH)
    return tuple(int(v) for v in frame.iloc[0])


def jobs(result) -> dict[str, int]:
    """Rule -> job count of a dry run's table (empty for "Nothing to be done")."""
    out = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] in ("simulate", "collect"):
            out[parts[0]] = int(parts[1])
    return out


@pytest.fixture(scope="module")
def run_once(tmp_path_factory):
    """`small_config()` run once for the module (a run is the costly part of these tests)."""
    workdir = tmp_path_factory.mktemp("finished")
    write_config(workdir, small_config())
    snakemake(workdir, "--cores", "2")
    assert views(workdir) == (16, 320, 16, 320)
    return workdir


@pytest.fixture
def finished(run_once, tmp_path):
    """A finished run's working directory, the test's own copy to change: `.snakemake` and every
    file's mtime kept, so that it plans as the run left it (nothing to do: the last test checks
    it); the tests that need no `.snakemake` or other mtimes make them so themselves."""
    return shutil.copytree(run_once, tmp_path / "finished", symlinks=True)


def with_n(workdir, values):
    config = small_config()
    config["experiments"]["robustness"]["grid"]["n"] = values
    write_config(workdir, config)


@pytest.mark.parametrize("how", ["no .snakemake", "--rerun-triggers mtime"])
def test_an_added_grid_value_runs_whatever_the_metadata_says(finished, how):
    args = ["--rerun-triggers", "mtime"] if how != "no .snakemake" else []
    if how == "no .snakemake":
        shutil.rmtree(finished / ".snakemake")
    with_n(finished, [16, 64, 128])
    planned = jobs(snakemake(finished, "-n", "--cores", "2", *args))
    assert planned.get("simulate", 0) > 0 and planned.get("collect") == 1, planned
    snakemake(finished, "--cores", "2", *args)
    assert views(finished) == (24, 480, 24, 480)
    assert len(list((finished / "results" / "rebuild").iterdir())) == 1  # the last one kept
    assert jobs(snakemake(finished, "-n", "--cores", "2", *args)) == {}


def test_a_removed_grid_value_leaves_both_views_consistent(finished):
    shutil.rmtree(finished / ".snakemake")
    with_n(finished, [16])
    assert jobs(snakemake(finished, "-n", "--cores", "2")).get("collect") == 1
    snakemake(finished, "--cores", "2")
    assert views(finished) == (8, 160, 8, 160)  # both views: the current grid's points only


def test_a_deleted_chunk_under_future_mtimes_is_one_line_then_recomputed(finished):
    """The issue's clock skew: every output an hour in the future, one chunk deleted. Snakemake
    fails any job whose input is dated after its output (it touches the output to now first),
    so the run stops in one line naming the files; dated to now, the chunk is recomputed."""
    future = time.time() + 3600
    for path in (finished / "results").rglob("*"):
        os.utime(path, (future, future))
    chunk = next((finished / STORE / "trials").rglob("chunk-*.parquet"))
    chunk.unlink()
    refused = snakemake(finished, "-n", "--cores", "2", check=False)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("attnsim: error:")]
    assert refused.returncode != 0 and len(errors) == 1, refused.stderr
    assert "min in the future (6 store files are;" in errors[0]
    now = time.time()
    for path in (finished / "results").rglob("*"):
        os.utime(path, (now, now))
    planned = jobs(snakemake(finished, "-n", "--cores", "2"))
    assert planned == {"simulate": 1, "collect": 1}, planned
    snakemake(finished, "--cores", "2")
    assert chunk.exists() and views(finished) == (16, 320, 16, 320)


def test_a_copied_results_folder_plans_as_the_original(finished, tmp_path_factory):
    """A fresh clone given the results: no spurious rebuild, nothing to run."""
    copy = tmp_path_factory.mktemp("clone")
    shutil.copy(finished / "config.yaml", copy / "config.yaml")
    shutil.copytree(finished / "results", copy / "results")  # new mtimes, no .snakemake
    assert jobs(snakemake(copy, "-n", "--cores", "2")) == {}
    assert jobs(snakemake(finished, "-n", "--cores", "2")) == {}
