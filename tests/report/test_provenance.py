"""Run-level provenance: one config hash per run, attnsim's version and the clone's commit on
every claims row and under claims.md, and per claim the digest of the summaries it read (issue
39 item 5; CITATION.cff's advice reads them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import small_store
from helpers.configs import REPO, small_config

import attnsim
from attnsim.config.load import load
from attnsim.plan.sweep import run_spec_path, write_experiment_specs
from attnsim.report import provenance


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("provenance")
    small_store.make(small_config(), results)
    return results


def test_every_claims_row_names_one_run(results):
    rows = pq.read_table(results / "claims.parquet").to_pandas()
    run = rows[["config_hash", "seed", "attnsim_version", "git_commit"]].drop_duplicates()
    assert len(run) == 1, "one run, one record: CITATION.cff's advice returns one row"
    config_hash, seed, version, commit = run.iloc[0]
    assert config_hash == load(small_config()).config_hash and seed == 7
    assert version == attnsim.__version__
    assert commit == provenance.git_commit() != ""
    footer = (results / "claims.md").read_text().splitlines()[-1]
    assert footer.startswith("Run: ") and config_hash in footer and commit in footer


def test_a_claim_carries_the_digest_of_the_summaries_it_read(results):
    rows = pq.read_table(results / "claims.parquet").to_pandas()
    measured = rows[rows["experiments"] != ""]
    assert len(measured) and (measured["inputs_sha256"].str.len() == 32).all()
    assert (rows.loc[rows["experiments"] == "", "inputs_sha256"] == "").all()
    digests = provenance.summary_digests(results / "store", {"robustness": "noisy_attention"})
    assert set(measured["inputs_sha256"]) == {provenance.inputs_digest("robustness", digests)}


def test_the_commit_is_the_clones_head_and_nothing_outside_a_clone(tmp_path):
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert provenance.git_commit(REPO).removesuffix("+dirty") == head
    assert provenance.git_commit(tmp_path) == ""


def test_the_run_file_the_claims_job_reads(tmp_path):
    settings = load(small_config())
    write_experiment_specs(settings, tmp_path)
    text = run_spec_path(tmp_path).read_text()
    assert settings.config_hash in text and '"seed": 7' in text
