"""End to end: Snakemake on tiny configs in scratch directories (marked slow: ~1 min in all)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.configs import small_config
from helpers.workflow import planned_jobs, point_rows, snakemake, tree, write_config

from attnsim.store import parquet as store

pytestmark = pytest.mark.slow

SUMMARY = store.summary_path(Path("results/store"), "noisy_attention", "robustness")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("run")
    write_config(workdir, small_config(chunk_size=8))
    result = snakemake(workdir, "--cores", "2")
    return workdir, result


def test_run_produces_store_figures_and_summary(finished):
    workdir, result = finished
    summary = (
        workdir / "results/store/summary/kind=noisy_attention/experiment=robustness/summary.parquet"
    )
    assert pq.read_table(summary).num_rows == 16
    for name in ("rel_err_vs_n", "collapse"):
        for ext in ("png", "pdf"):
            assert (workdir / f"results/figures/robustness/{name}.{ext}").stat().st_size > 10_000
    assert "attnsim run summary" in result.stdout and "16 points x 20 trials" in result.stdout
    # chunks, not points
    assert len(list((workdir / "results/store/trials").rglob("chunk-*.parquet"))) == 2
    assert list((workdir / "results/benchmarks/simulate").rglob("*.tsv")) and list(
        (workdir / "results/logs/simulate").rglob("*.log")
    )


def test_report_is_one_self_contained_file_with_captions_and_claims(finished):
    workdir, _ = finished
    snakemake(workdir, "--report", "results/report.html")
    html = (workdir / "results/report.html").read_text()
    assert (
        "Relative error of noisy attention vs the number of keys" in html
        and "Delta-method collapse" in html
    )
    assert "data:image/png;base64" in html or "base64" in html  # figures embedded, opens offline
    claims = pq.read_table(workdir / "results/claims.parquet").to_pandas()
    assert set(claims["verdict"]) <= {
        "holds",
        "fails",
        "inconclusive",
        "outside regime",
        "not measured",
    }
    measured = claims.set_index("claim_id")["verdict"]
    # no temperature experiment here
    assert measured["entropy_in_bounds"] == "holds" and measured["tau_one_gap"] == "not measured"
    page = (workdir / "results/claims.html").read_text()
    links = re.findall(r"href='(figures/[^']+)'", page)
    # standalone, relative to results/
    assert links and all((workdir / "results" / link).is_file() for link in links)
    # a copy of each for the report
    assert page.count("<img src='data:image/png;base64,") == len(set(links))
    assert "Claims it shows" in html  # the captions name the claims their figure shows


def test_adding_a_value_runs_only_new_points_and_keeps_old_rows(finished, tmp_path):
    workdir, _ = finished
    clone = tmp_path / "clone"
    import shutil

    shutil.copytree(workdir, clone, symlinks=True)
    before_rows, before_tree = point_rows(clone), tree(clone)
    config = small_config(chunk_size=8)
    config["experiments"]["robustness"]["grid"]["n"].append(128)
    write_config(clone, config)
    dry = snakemake(clone, "-n", "--cores", "2")
    assert planned_jobs(dry.stdout)["simulate"] == 1  # 8 new points, one chunk
    snakemake(clone, "--cores", "2")
    after_rows, after_tree = point_rows(clone), tree(clone)
    assert len(after_rows) == 24
    assert all(after_rows[pid] == rows for pid, rows in before_rows.items())
    old_chunks = {k: v for k, v in before_tree.items() if "/chunk-" in k}
    assert all(after_tree[k] == v for k, v in old_chunks.items())  # untouched: same size and mtime
    assert "Nothing to be done" in snakemake(clone, "-n", "--cores", "2").stdout


def test_results_identical_across_cores_and_chunk_sizes(finished, tmp_path):
    workdir, _ = finished
    other = tmp_path / "other"
    write_config(other, small_config(chunk_size=3))
    snakemake(other, str(SUMMARY), "--cores", "1")  # rows compared: figures and claims add none
    assert point_rows(other) == point_rows(workdir)


def test_bad_config_stops_before_any_job_and_writes_nothing(finished):
    workdir, _ = finished
    config = small_config(chunk_size=8)
    config["experiments"]["robustness"]["grid"]["noise"] = ["gaussian", "cauchy"]
    path = write_config(workdir, config, "broken.yaml")
    before = tree(workdir)
    result = snakemake(workdir, "--cores", "2", "--configfile", str(path), check=False)
    assert result.returncode != 0
    assert (
        result.stderr.strip().splitlines()[-1]
        == "attnsim: error: experiments.robustness.grid.noise[1]: 'cauchy' is not one of "
        "gaussian, uniform, laplace, gumbel, student_t"
    )
    assert tree(workdir) == before
    override = snakemake(workdir, "--cores", "2", "--config", "chunk_size=0", check=False)
    assert (
        override.returncode != 0
        and "chunk_size: 0 is less than the minimum of 1" in override.stderr
    )
    assert tree(workdir) == before


def test_configfile_replaces_the_default_sweep(tmp_path):
    write_config(tmp_path, small_config())
    preset = copy.deepcopy(small_config())
    preset["experiments"] = {"other": copy.deepcopy(preset["experiments"]["robustness"])}
    preset["experiments"]["other"]["grid"]["n"] = [32]
    path = write_config(tmp_path, preset, "preset.yaml")
    dry = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(path))
    assert "experiment=other" in dry.stdout and "experiment=robustness" not in dry.stdout


def test_fewer_trials_read_the_stored_first_ones_and_more_are_a_top_up(finished):
    workdir, _ = finished
    config = small_config(chunk_size=8)
    config["experiments"]["robustness"]["trials"] = 19
    path = write_config(workdir, config, "fewer_trials.yaml")
    # into the default sweep's workspace on purpose (by default the file would get its own)
    result = snakemake(
        workdir,
        "-n",
        "--cores",
        "1",
        "--configfile",
        str(path),
        "--config",
        "workspace=results",
    )
    # nothing computed, nothing dropped: the summary is rebuilt from each point's first 19 trials
    assert "rule simulate:" not in result.stdout and "(0 to run" in result.stdout
    assert "rule collect:" in result.stdout
    # more: planned as top-ups of the stored chunks (tests/plan/test_topup.py)
    config["experiments"]["robustness"]["trials"] = 21
    path = write_config(workdir, config, "more_trials.yaml")
    result = snakemake(
        workdir, "-n", "--cores", "1", "--configfile", str(path), "--config", "workspace=results"
    )
    assert (
        "rule simulate:" in result.stdout
        and "plan: 1 experiment, 16 points (16 to run" in result.stdout
    )


def test_several_experiments_summaries_are_one_runs_targets(tmp_path):
    """Two experiments' summaries asked of one run are both made (their chunks' folders were made
    one at a time while Snakemake checked them: the second counted as missing)."""
    config = small_config()
    fragile = copy.deepcopy(config["experiments"]["robustness"])
    fragile["grid"]["n"] = [32]
    config["experiments"]["fragile"] = fragile
    write_config(tmp_path, config)
    other = store.summary_path(Path("results/store"), "noisy_attention", "fragile")
    result = snakemake(tmp_path, str(SUMMARY), str(other), "--cores", "2", check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / SUMMARY).is_file() and (tmp_path / other).is_file()
    assert not (tmp_path / "results/figures").exists()  # the targets only
