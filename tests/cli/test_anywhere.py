"""attnsim anywhere: the package ships the workflow, so `attnsim init DIR` and `attnsim run` work in
any folder, outside a clone (`snakemake --lint`: tests/workflow/test_workflow_style.py)."""

from __future__ import annotations

import pytest
from helpers.configs import REPO
from helpers.workflow import attnsim

from attnsim.cli.runner import packaged_snakefile, snakefile_args


def test_the_package_holds_the_workflow_and_run_uses_it_where_a_folder_has_none(tmp_path):
    snakefile = packaged_snakefile()
    for part in (
        "Snakefile",
        "rules/common.smk",
        "profiles/default/config.yaml",
        "envs/attnsim.yaml",
    ):
        assert (snakefile.parent / part).is_file(), part
    assert snakefile_args(["-n"], tmp_path) == ["--snakefile", str(snakefile)]
    assert snakefile_args(["-s", "x/Snakefile"], tmp_path) == []
    assert snakefile_args([], REPO) == []  # a clone runs its own workflow/Snakefile


def test_run_in_a_folder_without_a_config_says_how_to_start(tmp_path):
    run = attnsim(tmp_path, "run", "-n")
    assert run.returncode == 2 and run.stderr.strip() == (
        "attnsim: error: config.yaml: no such config file in this folder; `attnsim init .` "
        "writes a starter config, or name yours with --configfile FILE"
    )


@pytest.mark.slow
def test_init_then_run_in_an_empty_folder_outside_the_repository(tmp_path):
    folder = tmp_path / "my-study"
    assert not str(folder).startswith(str(REPO))
    init = attnsim(tmp_path, "init", "my-study")
    assert init.returncode == 0 and (folder / "config.yaml").is_file(), init.stderr
    run = attnsim(folder, "run", "--cores", "2")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Using workflow specific profile" in run.stderr  # the packaged profile and logger
    assert "] claims, " in run.stderr  # the attnsim logger's progress lines
    assert (folder / "results/claims.md").is_file()
    assert sorted(p.name for p in (folder / "results/figures").iterdir()) == [
        "entropy_scale",
        "robustness",
    ]
    claims = attnsim(folder, "claims")
    assert claims.returncode == 0 and "claims need kinds this sweep does not run" in claims.stdout
