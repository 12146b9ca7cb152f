"""Bad input where it enters the workflow: foreign or truncated store files, oversized points.
Each stops with one line naming the problem, a non-zero exit, and results/ unchanged.
(Config-file cases: test_config.py; CLI and SQL cases: test_cli.py.)"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from attnsim.cli import main
from conftest import small_config
from workflow_helpers import snakemake, tree, write_config

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
    assert result.returncode != 0 and len(lines) == 1 and lines[0].startswith("attnsim: error:") and needle in lines[0], result.stderr
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
    config["experiments"]["robustness"] = {"kind": "noisy_attention", "trials": 20, "grid": config["experiments"]["robustness"]["grid"]}
    # same name, same kind: fine (nothing to do); the folder of another kind under this name is refused
    other = finished / "results/store/trials/kind=logit_entropy/experiment=robustness"
    other.mkdir(parents=True)
    shutil.copy(next((finished / "results/store/trials").rglob("chunk-*.parquet")), other / "chunk-0000000000000000.parquet")
    try:
        expect_one_line_failure(finished, "was stored as kind=logit_entropy")
    finally:
        shutil.rmtree(other.parent)
