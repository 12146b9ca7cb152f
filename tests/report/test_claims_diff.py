"""`attnsim claims --diff OTHER`: only what changed, with the reason the stores know; a run against
itself prints nothing (issue 39 item 6)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
from helpers import small_store
from helpers.configs import small_config

from attnsim.cli.main import main


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("diff")
    small_store.make(small_config(), base / "a")
    more = copy.deepcopy(small_config())
    more["experiments"]["robustness"]["trials"] = 60
    small_store.make(more, base / "b")
    return base / "a", base / "b"


def test_a_run_against_itself_prints_nothing(runs, capsys, tmp_path):
    a, _ = runs
    copy_of_a = tmp_path / "a"
    shutil.copytree(a, copy_of_a)
    assert main(["claims", "--store", str(a / "store"), "--diff", str(a)]) == 0
    assert main(["claims", "--store", str(a / "store"), "--diff", str(copy_of_a)]) == 0
    assert capsys.readouterr().out == ""


def test_changed_verdicts_and_numbers_with_their_reason(runs, capsys):
    a, b = runs
    code = main(["claims", "--store", str(a / "store"), "--diff", str(b / "claims.parquet")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1 and lines
    assert all("robustness: trials 20 -> 60" in line for line in lines), lines
    ids = {line.split(":")[0] for line in lines}
    assert "delta_method_gaussian" in ids
    assert not any(i.startswith(("dropout_", "delta_method_laplace")) for i in ids)  # unchanged


def test_a_path_without_claims_is_one_line(runs, capsys, tmp_path):
    a, _ = runs
    assert main(["claims", "--store", str(a / "store"), "--diff", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsim: error: ") and err.count("\n") == 1
