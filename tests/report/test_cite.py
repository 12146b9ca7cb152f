"""`attnsim cite CLAIM`: a citable record (Markdown and BibTeX) with the verdict, numbers,
tolerance, regime, the digest of the data it read and the run; its BibTeX key is the footnote
key of the claim's row in `attnsim claims --format latex` (issue 39 item 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import small_store
from helpers.configs import small_config

from attnsim.cli.main import main


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("cite")
    small_store.make(small_config(), results)
    return results


def row(results: Path, claim_id: str) -> dict:
    rows = pq.read_table(results / "claims.parquet").to_pylist()
    return next(r for r in rows if r["claim_id"] == claim_id)


def test_the_record_carries_verdict_numbers_digests_and_versions(results, capsys):
    assert main(["cite", "delta_method_gaussian", "--store", str(results / "store")]) == 0
    out = capsys.readouterr().out
    stored = row(results, "delta_method_gaussian")
    for text in (
        f"verdict: **{stored['verdict']}**",
        "predicted 1 ± 0.05",
        "regime: gaussian noise",
        stored["inputs_sha256"],
        stored["config_hash"],
        stored["git_commit"],
        f"attnsim {stored['attnsim_version']}",
        "the essay's statement it tests",
    ):
        assert text in out, text
    bib = out[out.index("@misc{") :]
    assert bib.startswith("@misc{attnsim:delta_method_gaussian,")
    assert bib.count("{") == bib.count("}") and bib.isascii()
    assert stored["inputs_sha256"] in bib and stored["config_hash"] in bib


def test_the_latex_footnote_key_is_the_bibtex_key(results, capsys):
    config, store = str(results / "config.yaml"), str(results / "store")
    assert main(["claims", "--configfile", config, "--store", store, "--format", "latex"]) == 0
    latex = capsys.readouterr().out
    assert main(["cite", "next_order_theory", "--store", store, "--format", "bibtex"]) == 0
    key = re.match(r"@misc\{(.*),", capsys.readouterr().out).group(1)
    assert f"\\texttt{{{key.replace('_', chr(92) + '_')}}}" in latex


def test_an_unknown_claim_is_one_line(results, capsys):
    assert main(["cite", "no_such_claim", "--store", str(results / "store")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsim: error: ") and "no_such_claim" in err and err.count("\n") == 1
