"""Bad input where it enters the workflow: foreign or truncated store files, oversized points.
Each stops with one line naming the problem, a non-zero exit, and results/ unchanged.
(Config-file cases: test_config.py; CLI and SQL cases: test_cli.py.)"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.configs import small_config
from helpers.workflow import snakemake, tree, write_config

from attnsim.cli.main import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("bad")
    write_config(workdir, small_config(chunk_size=16))
    snakemake(workdir, "--cores", "2")
    return workdir


def expect_one_line_failure(workdir, needle, *args):
    before = tree(workdir)
    result = snakemake(workdir, "-n", "--cores", "1", *args, check=False)
    lines = result.stderr.strip().splitlines()
    assert (
        result.returncode != 0
        and len(lines) == 1
        and lines[0].startswith("attnsim: error:")
        and needle in lines[0]
    ), result.stderr
    assert tree(workdir) == before


@pytest.mark.parametrize("damage", ["foreign", "truncated", "empty"])
def test_damaged_store_file_is_named(finished, tmp_path, damage):
    workdir = tmp_path / "w"
    shutil.copytree(finished, workdir)
    folder = next((workdir / "results/store/trials").rglob("experiment=robustness"))
    chunk = next(folder.glob("chunk-*.parquet"))
    bad = folder / "chunk-0123456789abcdef.parquet"
    if damage == "foreign":
        pq.write_table(pa.table({"x": [1]}), bad)
        needle = "a foreign Parquet file"
    elif damage == "truncated":
        bad.write_bytes(chunk.read_bytes()[:500])
        needle = "not a readable Parquet file"
    else:
        bad.write_bytes(b"")
        needle = "not a readable Parquet file"
    expect_one_line_failure(workdir, f"{bad.relative_to(workdir)}: {needle}")
    before = tree(workdir)
    import os

    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        assert main(["query", "SELECT count(*) FROM trials"]) == 2
    finally:
        os.chdir(cwd)
    assert tree(workdir) == before


def test_point_over_memory_budget_is_refused_up_front(finished):
    config = small_config(memory_budget_mb=64)
    config["experiments"]["robustness"]["grid"]["n"] = [16, 1048576]
    path = write_config(finished, config, "huge.yaml")
    expect_one_line_failure(finished, "needs about", "--configfile", str(path))


def test_experiment_renamed_kind_is_refused(finished):
    config = small_config(chunk_size=16)
    config["experiments"]["robustness"] = {
        "kind": "noisy_attention",
        "trials": 20,
        "grid": config["experiments"]["robustness"]["grid"],
    }
    # same name, same kind: fine (nothing to do); the folder of another kind under this name is
    # refused
    other = finished / "results/store/trials/kind=logit_entropy/experiment=robustness"
    other.mkdir(parents=True)
    shutil.copy(
        next((finished / "results/store/trials").rglob("chunk-*.parquet")),
        other / "chunk-0000000000000000.parquet",
    )
    try:
        expect_one_line_failure(finished, "was stored as kind=logit_entropy")
    finally:
        shutil.rmtree(other.parent)


# --- the config as Snakemake reads it: NaN, numbers written as text, keys given twice ---------

SWEEP = """\
seed: {seed}
chunk_size: {chunk_size}
experiments:
  robustness:
    kind: noisy_attention
    trials: {trials}
    grid:
      n: {n}
      d: [4]
      logit_scale: [0.0, 1.0]
      noise: [gaussian, student_t]
      noise_draws: [4]
      noise_scale: {noise_scale}
"""
# the values as the finished sweep was written
AS_WRITTEN = {
    "seed": "7",
    "chunk_size": "16",
    "trials": "20",
    "n": "[16, 64]",
    "noise_scale": "[0.1, 0.5]",
}


def sweep_file(workdir, name, **changes):
    path = workdir / name
    path.write_text(SWEEP.format(**(AS_WRITTEN | changes)))
    return path


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_nan_in_config_stops_snakemake_with_one_line(finished, value):
    path = sweep_file(finished, "nan.yaml", noise_scale=f"[0.1, {value}]")
    expect_one_line_failure(
        finished, "experiments.robustness.grid.noise_scale[1]: ", "--configfile", str(path)
    )
    expect_one_line_failure(
        finished,
        "seed: nan is not a finite number",
        "--configfile",
        str(sweep_file(finished, "ok.yaml")),
        "--config",
        "seed=nan",
    )


def test_numbers_written_as_text_are_the_same_sweep(finished):
    """1e-1, 2e1 or 64.0 (strings or floats to YAML 1.1) are the same numbers: nothing to
    compute."""
    before = tree(finished)
    path = sweep_file(
        finished,
        "written.yaml",
        seed="7e0",
        chunk_size="1.6e1",
        trials="2e1",
        n="[1.6e1, 64.0]",
        noise_scale="[1e-1, 5e-1]",
    )
    for extra in (
        [],
        ["--config", "seed=7.0", "chunk_size=16.0"],
        [
            "--config",
            "experiments={robustness: {kind: noisy_attention, trials: 2e1, grid: {n: [16, 64], "
            "d: ['4'], logit_scale: [0.0, 1e0], noise: [gaussian, student_t], noise_draws: "
            "[4], noise_scale: [1e-1, '0.5']}}}",
        ],
    ):
        # the default sweep's workspace on purpose: the same store, so nothing is left to compute
        extra = [*(extra or ["--config"]), "workspace=results"]
        result = snakemake(finished, "-n", "--cores", "1", "--configfile", str(path), *extra)
        assert "Nothing to be done" in result.stdout + result.stderr, result.stdout + result.stderr
    assert tree(finished) == before
    expect_one_line_failure(
        finished,
        "experiments.robustness.trials: 20.5 is not of type integer; give a whole number",
        "--configfile",
        str(sweep_file(finished, "frac.yaml", trials="20.5")),
    )
    expect_one_line_failure(
        finished,
        "seed: 'seven' is not of type integer",
        "--configfile",
        str(path),
        "--config",
        "seed=seven",
    )


def test_key_given_twice_stops_snakemake_with_both_lines(finished, tmp_path):
    path = sweep_file(finished, "twice.yaml", chunk_size="16\nseed: 8")
    expect_one_line_failure(
        finished,
        f"{path}: seed: key given twice (lines 1 and 3); keep one",
        "--configfile",
        str(path),
    )
    workdir = tmp_path / "w"  # the workflow's own config.yaml
    shutil.copytree(finished, workdir)
    (workdir / "config.yaml").write_text((workdir / "config.yaml").read_text() + "chunk_size: 8\n")
    expect_one_line_failure(workdir, "config.yaml: chunk_size: key given twice (lines 2 and ")


@pytest.mark.parametrize(
    "where", ["results/store", "results/store/trials", "results/store/summary"]
)
def test_a_file_where_a_store_folder_goes_is_one_line(tmp_path, where):
    """The issue's case: `results/store` as a file gave a NotADirectoryError traceback (from
    Snakemake's listing of the outputs), in a dry run and a real one."""
    write_config(tmp_path, small_config())
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text("not a folder\n")
    expect_one_line_failure(tmp_path, f"{where}: the store needs a folder here, not a file")
    real = snakemake(tmp_path, "--cores", "1", check=False)
    errors = [line for line in real.stderr.splitlines() if line.startswith("attnsim: error:")]
    assert real.returncode != 0 and len(errors) == 1 and "Traceback" not in real.stderr
    assert (tmp_path / where).read_text() == "not a folder\n"
