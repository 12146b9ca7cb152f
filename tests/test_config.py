"""Every kind of broken config stops with one line that names the offending key."""

from __future__ import annotations

import copy

import pytest
import yaml

from attnsim.config import load, load_file
from attnsim.errors import ConfigError
from conftest import REPO, small_config


def broken(edit):
    config = small_config()
    edit(config)
    return config


def grid(config):
    return config["experiments"]["robustness"]["grid"]


CASES = {
    "wrong type": (lambda c: grid(c).__setitem__("n", ["many"]), "experiments.robustness.grid.n[0]", "not of type integer"),
    "unknown top-level key": (lambda c: c.__setitem__("sed", 1), "config", "unknown key 'sed'"),
    "unknown grid key": (lambda c: grid(c).__setitem__("temperature", [1.0]), "experiments.robustness.grid", "unknown key 'temperature'"),
    "unknown noise family": (lambda c: grid(c).__setitem__("noise", ["gaussian", "cauchy"]), "experiments.robustness.grid.noise[1]", "'cauchy' is not one of"),
    "empty list": (lambda c: grid(c).__setitem__("d", []), "experiments.robustness.grid.d", "empty list"),
    "n below 2": (lambda c: grid(c).__setitem__("n", [1, 16]), "experiments.robustness.grid.n[0]", "less than the minimum of 2"),
    "negative scale": (lambda c: grid(c).__setitem__("noise_scale", [-0.1]), "experiments.robustness.grid.noise_scale[0]", "less than the minimum of 0"),
    "duplicate values": (lambda c: grid(c).__setitem__("n", [16, 16]), "experiments.robustness.grid.n", "duplicate values"),
    "duplicate int and float": (lambda c: grid(c).__setitem__("noise_scale", [1, 1.0]), "experiments.robustness.grid.noise_scale", "duplicate values"),
    "missing grid key": (lambda c: grid(c).pop("d"), "experiments.robustness.grid", "missing required key 'd'"),
    "unknown kind": (lambda c: c["experiments"]["robustness"].__setitem__("kind", "attention"), "experiments.robustness.kind", "'attention' is not one of"),
    "one trial": (lambda c: c["experiments"]["robustness"].__setitem__("trials", 1), "experiments.robustness.trials", "less than the minimum of 2"),
    "unsafe experiment name": (lambda c: c["experiments"].__setitem__("../x", c["experiments"]["robustness"]), "experiments", "experiment name '../x'"),
    "no experiments": (lambda c: c.__setitem__("experiments", {}), "experiments", "should be non-empty"),
    "seed missing": (lambda c: c.pop("seed"), "config", "missing required key 'seed'"),
    "seed a string": (lambda c: c.__setitem__("seed", "42"), "seed", "not of type integer"),
    "target_se without max_trials": (lambda c: c["experiments"]["robustness"].__setitem__("target_se", 0.01), "experiments.robustness", "target_se needs max_trials as well"),
    "zero target_se": (lambda c: c["experiments"]["robustness"].update(target_se=0, max_trials=100), "experiments.robustness.target_se", "less than or equal to the minimum of 0"),
    "max_trials too small": (lambda c: c["experiments"]["robustness"].update(target_se=0.1, max_trials=30), "experiments.robustness.max_trials", "no room for a second round"),
    "boolean as integer": (lambda c: grid(c).__setitem__("d", [True]), "experiments.robustness.grid.d[0]", "not of type integer"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_config_names_the_key(case):
    edit, key, words = CASES[case]
    with pytest.raises(ConfigError) as info:
        load(broken(edit))
    message = str(info.value)
    assert message.startswith(key + ":"), message
    assert words in message
    assert "\n" not in message


def test_memory_budget_refuses_huge_point_with_estimate():
    config = small_config(memory_budget_mb=64)
    grid(config)["n"] = [1048576]
    grid(config)["d"] = [64]
    with pytest.raises(ConfigError, match=r"experiments.robustness.grid: the point \(n=1048576.* needs about [\d,]+ MiB per trial, over memory_budget_mb = 64"):
        load(config)


def test_defaults_are_filled_and_input_untouched():
    config = small_config()
    config.pop("chunk_size")
    before = copy.deepcopy(config)
    settings = load(config)
    assert settings.chunk_size == 64 and settings.memory_budget_mb == 4096
    assert config == before


def test_config_hash_ignores_runtime_knobs():
    assert load(small_config(chunk_size=1)).config_hash == load(small_config(chunk_size=9)).config_hash
    assert load(small_config(seed=1)).config_hash != load(small_config(seed=2)).config_hash


def test_shipped_configs_are_valid():
    for path in [REPO / "config.yaml", *sorted((REPO / "workflow" / "presets").glob("*.yaml"))]:
        assert load_file(path).experiments, path


def test_load_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_file(bad)


def test_schema_file_in_workflow_is_the_package_base_schema():
    from attnsim.config import base_schema

    assert yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text()) == base_schema()


def test_schema_grid_keys_match_kind_parameters():
    from attnsim.config import schema
    from attnsim.kinds import all_kinds

    defs = schema()["$defs"]
    for name, kind in all_kinds().items():
        grid = defs[f"{name}_grid"]
        assert set(grid["required"]) == set(kind.param_names) == set(grid["properties"])
        for param in kind.params:  # generated from the declarations: type, bounds and choices
            assert grid["properties"][param.name]["items"] == param.item_schema()
            assert grid["properties"][param.name]["description"] == param.doc
