"""`attnsim verify`: an untouched store passes; a single changed value in a summary or in a trial
file, whether the file's checksums were left stale or rewritten to match, and a code version
change make it name the claims they affect, one line each, exit status 1 (issue 39 item 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import small_store
from helpers.configs import small_config

import attnsim
from attnsim.cli.main import main
from attnsim.store import parquet as store

ROBUSTNESS_CLAIMS = {"delta_method_gaussian", "entropy_in_bounds"}  # next_order: outside regime


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("verify") / "results"
    small_store.make(small_config(), results)
    return results


@pytest.fixture
def results(made, tmp_path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(made, copy)
    return copy


def verify(results: Path, capsys) -> tuple[int, list[str]]:
    code = main(["verify", str(results / "store")])
    return code, capsys.readouterr().out.splitlines()


def change_one_value(path: Path, column: str, resign: bool) -> None:
    """Add 1e-9 to the first value of `column`; `resign`: rewrite the file's checksums to match
    (a deliberate edit), else keep the old ones (damage)."""
    table = pq.read_table(path)
    values = table[column].to_numpy().copy()
    values[0] += 1e-9
    index = table.column_names.index(column)
    table = table.set_column(index, table.field(column), pa.array(values))
    if resign:
        meta = store.read_meta(path)
        meta.pop("content_sha256")
        store.write_atomic(table.replace_schema_metadata(None), path, meta)
    else:
        pq.write_table(table, path)  # the old provenance, checksums included


def test_an_untouched_store_passes(results, capsys):
    code, lines = verify(results, capsys)
    assert code == 0 and len(lines) == 1 and lines[0].startswith("all ")


@pytest.mark.parametrize("resign", [False, True])
@pytest.mark.parametrize("where", ["summary", "trials"])
def test_a_single_changed_value_names_the_claims_it_affects(results, capsys, where, resign):
    root = results / "store"
    if where == "summary":
        path = store.summary_path(root, "noisy_attention", "robustness")
        column = "err_ratio"
    else:
        path = store.experiment_chunks(root, "noisy_attention", "robustness")[0]
        column = "sq_err"
    change_one_value(path, column, resign)
    code, lines = verify(results, capsys)
    named = {line.split(":")[0] for line in lines}
    assert code == 1 and ROBUSTNESS_CLAIMS <= named, lines
    assert not any(n.startswith(("dropout_", "rounding_", "real_", "tau_")) for n in named)
    assert all("robustness" in line for line in lines), lines  # the experiment changed
    assert len(lines) == len(named)  # one line each


def test_a_code_version_change_names_every_claim(results, capsys, monkeypatch):
    monkeypatch.setattr(attnsim, "__version__", "0.0.0-other")
    code, lines = verify(results, capsys)
    assert code == 1 and len(lines) == pq.read_metadata(results / "claims.parquet").num_rows
    assert all("judged by attnsim " in line for line in lines)


def test_a_store_without_claims_is_one_line(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "store")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
