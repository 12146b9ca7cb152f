"""`attnsim run` checks the sweep before Snakemake does (one line, exit 2) and the workflow checks
it again at its start. A sweep that passed the first check with this very code
(`runner.checked_key`: the data, attnsim's files, the import path's folders, Python) is not
loaded again by the first: a cache entry per passed sweep. A changed sweep, bad or good, is loaded
in full; a sweep with hints is never skipped."""

from __future__ import annotations

import pytest
from helpers.workflow import write_config

from attnsim.cli import runner
from attnsim.config import load as loading
from attnsim.errors import ConfigError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNSIM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / runner.PASSED


def loads(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = loading.load
    monkeypatch.setattr(loading, "load", lambda data: calls.append(1) or real(data))
    return calls


def test_a_passed_sweep_is_not_loaded_again_a_changed_one_is(tmp_path, cache, monkeypatch, config):
    workdir = tmp_path / "work"
    workdir.mkdir()
    write_config(workdir, config)
    calls = loads(monkeypatch)
    runner.check_args([], workdir)
    assert len(calls) == 1 and len(list(cache.iterdir())) == 1
    runner.check_args([], workdir)
    assert len(calls) == 1  # the same sweep, the same code: its verdict kept
    with pytest.raises(ConfigError, match="seed"):  # a changed sweep: loaded, and refused
        runner.check_args(["--set", "seed=-1"], workdir)
    assert len(calls) == 2 and len(list(cache.iterdir())) == 1
    runner.check_args(["--set", "seed=5"], workdir)
    assert len(calls) == 3 and len(list(cache.iterdir())) == 2
    key = runner.checked_key({"seed": 5})
    assert key is not None and runner.checked_key({"seed": 6}) != key
    monkeypatch.setenv("ATTNSIM_CACHE", "off")
    runner.check_args([], workdir)
    assert len(calls) == 4


def test_a_sweep_with_hints_is_checked_every_time(tmp_path, cache, monkeypatch, config):
    workdir = tmp_path / "work"
    workdir.mkdir()
    write_config(workdir, config)
    real = loading.load

    def hinting(data):
        loading._HINTED.add(f"a hint {len(loading._HINTED)}")
        return real(data)

    monkeypatch.setattr(loading, "load", hinting)
    runner.check_args([], workdir)
    assert not cache.exists()


def test_data_that_is_not_json_has_no_key():
    assert runner.checked_key({"when": object()}) is None
