"""Every kind of broken config stops with one line that names the offending key."""

from __future__ import annotations

import copy

import pytest
from helpers.configs import REPO, small_config

from attnsim.config.load import load, load_file
from attnsim.errors import ConfigError


def broken(edit):
    config = small_config()
    edit(config)
    return config


def grid(config):
    return config["experiments"]["robustness"]["grid"]


CASES = {
    "wrong type": (
        lambda c: grid(c).__setitem__("n", ["many"]),
        "experiments.robustness.grid.n[0]",
        "not of type integer",
    ),
    "unknown top-level key": (lambda c: c.__setitem__("sed", 1), "config", "unknown key 'sed'"),
    "unknown grid key": (
        lambda c: grid(c).__setitem__("temperature", [1.0]),
        "experiments.robustness.grid",
        "unknown key 'temperature'",
    ),
    "unknown noise family": (
        lambda c: grid(c).__setitem__("noise", ["gaussian", "cauchy"]),
        "experiments.robustness.grid.noise[1]",
        "'cauchy' is not one of",
    ),
    "empty list": (
        lambda c: grid(c).__setitem__("d", []),
        "experiments.robustness.grid.d",
        "empty list",
    ),
    "n below 2": (
        lambda c: grid(c).__setitem__("n", [1, 16]),
        "experiments.robustness.grid.n[0]",
        "less than the minimum of 2",
    ),
    "negative scale": (
        lambda c: grid(c).__setitem__("noise_scale", [-0.1]),
        "experiments.robustness.grid.noise_scale[0]",
        "less than the minimum of 0",
    ),
    "duplicate values": (
        lambda c: grid(c).__setitem__("n", [16, 16]),
        "experiments.robustness.grid.n",
        "duplicate values",
    ),
    "duplicate int and float": (
        lambda c: grid(c).__setitem__("noise_scale", [1, 1.0]),
        "experiments.robustness.grid.noise_scale",
        "duplicate values",
    ),
    "missing grid key": (
        lambda c: grid(c).pop("d"),
        "experiments.robustness.grid",
        "missing required key 'd'",
    ),
    "unknown kind": (
        lambda c: c["experiments"]["robustness"].__setitem__("kind", "attention"),
        "experiments.robustness.kind",
        "'attention' is not one of",
    ),
    "one trial": (
        lambda c: c["experiments"]["robustness"].__setitem__("trials", 1),
        "experiments.robustness.trials",
        "less than the minimum of 2",
    ),
    "unsafe experiment name": (
        lambda c: c["experiments"].__setitem__("../x", c["experiments"]["robustness"]),
        "experiments",
        "experiment name '../x'",
    ),
    "no experiments": (
        lambda c: c.__setitem__("experiments", {}),
        "experiments",
        "should be non-empty",
    ),
    "seed missing": (lambda c: c.pop("seed"), "config", "missing required key 'seed'"),
    "seed a string": (lambda c: c.__setitem__("seed", "forty-two"), "seed", "not of type integer"),
    "fraction as integer": (
        lambda c: c["experiments"]["robustness"].__setitem__("trials", 4096.5),
        "experiments.robustness.trials",
        "not of type integer; give a whole number",
    ),
    "fraction text as integer": (
        lambda c: grid(c).__setitem__("n", ["16.5"]),
        "experiments.robustness.grid.n[0]",
        "16.5 is not of type integer",
    ),
    "nan": (
        lambda c: grid(c).__setitem__("noise_scale", [float("nan")]),
        "experiments.robustness.grid.noise_scale[0]",
        "nan is not a finite number",
    ),
    "inf target_se": (
        lambda c: c["experiments"]["robustness"].update(target_se=float("inf"), max_trials=100),
        "experiments.robustness.target_se",
        "inf is not a finite number",
    ),
    "nan as text": (
        lambda c: grid(c).__setitem__("logit_scale", ["nan"]),
        "experiments.robustness.grid.logit_scale[0]",
        "nan is not a finite number",
    ),
    "boolean as number": (
        lambda c: grid(c).__setitem__("noise_scale", [False]),
        "experiments.robustness.grid.noise_scale[0]",
        "not of type number",
    ),
    "text true as integer": (
        lambda c: c.__setitem__("seed", "true"),
        "seed",
        "not of type integer",
    ),
    "target_se without max_trials": (
        lambda c: c["experiments"]["robustness"].__setitem__("target_se", 0.01),
        "experiments.robustness",
        "target_se needs max_trials as well",
    ),
    "zero target_se": (
        lambda c: c["experiments"]["robustness"].update(target_se=0, max_trials=100),
        "experiments.robustness.target_se",
        "less than or equal to the minimum of 0",
    ),
    "max_trials too small": (
        lambda c: c["experiments"]["robustness"].update(target_se=0.1, max_trials=30),
        "experiments.robustness.max_trials",
        "no room for a second round",
    ),
    "boolean as integer": (
        lambda c: grid(c).__setitem__("d", [True]),
        "experiments.robustness.grid.d[0]",
        "not of type integer",
    ),
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
    with pytest.raises(
        ConfigError,
        match=r"experiments.robustness.grid: the point \(n=1048576.* needs about [\d,]+ MiB per "
        r"trial, over memory_budget_mb = 64",
    ):
        load(config)


def test_defaults_are_filled_and_input_untouched():
    config = small_config()
    config.pop("chunk_size")
    before = copy.deepcopy(config)
    settings = load(config)
    assert (
        settings.chunk_size is None  # jobs sized by cost
        and settings.max_jobs == 10_000  # a default cap: a laptop never plans 10^5 jobs
        and settings.memory_budget_mb == 4096
    )
    assert config == before


def test_config_hash_ignores_runtime_knobs():
    assert (
        load(small_config(chunk_size=1)).config_hash == load(small_config(chunk_size=9)).config_hash
    )
    assert load(small_config(seed=1)).config_hash != load(small_config(seed=2)).config_hash


def test_shipped_configs_are_valid():
    """Each shipped config loads, and its boundaries name claims, experiments and values that
    exist (what `attnsim check-config` checks beyond the schema)."""
    from attnsim.report import boundaries

    for path in [REPO / "config.yaml", *sorted((REPO / "workflow" / "presets").glob("*.yaml"))]:
        settings = load_file(path)
        assert settings.experiments, path
        boundaries.check(settings)


def test_load_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_file(bad)


def test_schema_grid_keys_match_kind_parameters():
    from attnsim.config.load import schema
    from attnsim.kinds import all_kinds

    defs = schema()["$defs"]
    for name, kind in all_kinds().items():
        grid = defs[f"{name}_grid"]
        assert set(grid["properties"]) == set(kind.param_names)
        # a default may be left out
        assert set(grid["required"]) == {p.name for p in kind.schema.params if p.default is None}
        # generated from the declarations: type, bounds and choices
        for param in kind.schema.params:
            assert grid["properties"][param.name]["items"] == param.item_schema()
            assert grid["properties"][param.name]["description"] == param.doc


def test_a_parameter_with_a_default_may_be_left_out_of_a_grid():
    """A kind that gains a parameter keeps the configs written before it: the left-out parameter
    takes [default] (recall_training's values, logits and stop), and a given one is checked."""
    from attnsim.config.load import load

    grid = {
        "n": [16],
        "d": [16],
        "batch": [32],
        "scale": [1.0],
        "optimiser": ["sgd"],
        "lr": [1.0],
        "steps": [10],
    }
    config = {
        "seed": 1,
        "experiments": {"old": {"kind": "recall_training", "trials": 2, "grid": grid}},
    }
    settings = load(config)
    filled = settings.experiments["old"].grid
    assert (
        filled["values"] == ["trainable"]
        and filled["logits"] == ["dot"]
        and filled["stop"] == ["never"]
    )
    # the caller's mapping is not changed
    assert "values" not in config["experiments"]["old"]["grid"]
    config["experiments"]["old"]["grid"] = grid | {"stop": ["sometimes"]}
    with pytest.raises(ConfigError, match=r"^experiments\.old\.grid\.stop\[0\]"):
        load(config)


def test_a_renamed_value_loads_under_its_new_name_with_one_hint(caplog):
    """scale_type e8m0 (the round-up rule, renamed e8m0_ceil when OCP MX's rule joined it) is
    read as e8m0_ceil with one line saying so, once per process; the new name loads silently,
    and a value that is neither is one line naming the key."""
    import logging

    from attnsim.config import load as loader

    grid = {
        "n": [32],
        "d": [8],
        "logit_scale": [1.0],
        "outlier_channels": [0],
        "outlier_scale": [1.0],
        "format": ["float8_e4m3fn"],
        "site": ["logits"],
        "granularity": ["block16"],
        "scale_type": ["e8m0", "e4m3"],
    }
    config = {
        "seed": 1,
        "experiments": {"mx": {"kind": "precision_attention", "trials": 2, "grid": grid}},
    }
    loader._HINTED.clear()
    with caplog.at_level(logging.WARNING, logger="attnsim.config.load"):
        settings = load(config)
        load(config)
    assert settings.experiments["mx"].grid["scale_type"] == ["e8m0_ceil", "e4m3"]
    hints = [r.getMessage() for r in caplog.records]
    assert len(hints) == 1 and "\n" not in hints[0]
    assert hints[0].startswith("experiments.mx.grid.scale_type: e8m0 is now e8m0_ceil")
    assert grid["scale_type"] == ["e8m0", "e4m3"]  # the caller's mapping is not changed
    caplog.clear()
    renamed = copy.deepcopy(config)
    renamed["experiments"]["mx"]["grid"]["scale_type"] = ["e8m0_ceil", "e8m0_ocp"]
    with caplog.at_level(logging.WARNING, logger="attnsim.config.load"):
        load(renamed)
    assert not caplog.records
    config["experiments"]["mx"]["grid"] = grid | {"scale_type": ["e8m0_round"]}
    with pytest.raises(ConfigError, match=r"^experiments\.mx\.grid\.scale_type\[0\]"):
        load(config)


# --- NaN and infinities, numbers written as text, keys given twice -------------------------

SMALL_YAML = """\
seed: 7
chunk_size: 3
experiments:
  robustness:
    kind: noisy_attention
    trials: 20
    grid:
      n: [16, 64]
      d: [4]
      logit_scale: [0.0, 1.0]
      noise: [gaussian]
      noise_draws: [4]
      noise_scale: [0.1, 0.5]
"""


def config_file(tmp_path, old="", new="", text=SMALL_YAML):
    assert old in text
    path = tmp_path / "sweep.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "+.inf"])
def test_nan_and_infinity_are_one_line_errors(tmp_path, capsys, value):
    from attnsim.cli.main import main

    path = config_file(tmp_path, "noise_scale: [0.1, 0.5]", f"noise_scale: [{value}, 0.5]")
    with pytest.raises(
        ConfigError,
        match=r"^experiments\.robustness\.grid\.noise_scale\[0\]: [-+]?(nan|inf) is not a finite "
        r"number",
    ):
        load_file(path)
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("attnsim: error: experiments.robustness.grid.noise_scale[0]: ")
        and err.count("\n") == 1
    ), err


@pytest.mark.parametrize(
    "old,new,key,expected",
    [
        ("noise_scale: [0.1, 0.5]", "noise_scale: [1e-3, 0.5]", "noise_scale", [0.001, 0.5]),
        (
            "noise_scale: [0.1, 0.5]",
            "noise_scale: [2E+1, 1_000e-4, '0.5']",
            "noise_scale",
            [20.0, 0.1, 0.5],
        ),
        ("logit_scale: [0.0, 1.0]", "logit_scale: [0, 1e0]", "logit_scale", [0, 1.0]),
        ("n: [16, 64]", "n: [1.6e1, 64.0]", "n", [16, 64]),
        ("noise_draws: [4]", "noise_draws: ['4']", "noise_draws", [4]),
    ],
)
def test_numbers_written_as_yaml_1_1_strings_are_numbers(tmp_path, old, new, key, expected):
    settings = load_file(config_file(tmp_path, old, new))
    values = settings.experiments["robustness"].grid[key]
    assert values == expected and [type(v) for v in values] == [type(v) for v in expected]


def test_integers_accept_exact_whole_values_only(tmp_path):
    settings = load_file(
        config_file(
            tmp_path,
            "seed: 7\nchunk_size: 3",
            "seed: 1e3\nchunk_size: 3.0\nmemory_budget_mb: 4096.0",
        )
    )
    assert (settings.seed, settings.chunk_size, settings.memory_budget_mb) == (1000, 3, 4096)
    assert all(
        type(v) is int for v in (settings.seed, settings.chunk_size, settings.memory_budget_mb)
    )
    assert (
        load_file(config_file(tmp_path, "seed: 7", "seed: 12345678901234567000e-3")).seed
        == 12345678901234567
    )
    for bad in ("4096.5", "'4096.5'", "1.5e0"):
        with pytest.raises(
            ConfigError,
            match=r"^experiments\.robustness\.trials: [\d.]+ is not of type integer; give a "
            r"whole number",
        ):
            load_file(config_file(tmp_path, "trials: 20", f"trials: {bad}"))
    # as floats, neither is the integer written
    for inexact in ("123456789012345678.0", "12345678901234567890e-3"):
        with pytest.raises(
            ConfigError, match=r"^seed: 1\.23456789012345\d*e\+1[67] is not of type integer"
        ):
            load_file(config_file(tmp_path, "seed: 7", f"seed: {inexact}"))
    for bad in ("yes", "'12 apples'", "[1]"):
        with pytest.raises(ConfigError, match="is not of type integer"):
            load_file(config_file(tmp_path, "seed: 7", f"seed: {bad}"))


def test_equal_configs_written_differently_hash_alike(tmp_path):
    plain = load_file(config_file(tmp_path))
    written = load_file(
        config_file(tmp_path, "noise_scale: [0.1, 0.5]", "noise_scale: ['1e-1', 5e-1]")
    )
    assert written.config_hash == plain.config_hash


def test_coerce_numbers_follows_any_schema_shape():
    from attnsim.config.coerce import coerce_numbers

    schema = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/thing"}},
            "count": {"type": ["integer", "null"]},
        },
        "$defs": {
            "thing": {
                "type": "object",
                "properties": {"kind": {"enum": ["a", "b"]}, "label": {"type": "string"}},
                "allOf": [
                    {
                        "if": {"properties": {"kind": {"const": "a"}}},
                        "then": {"properties": {"x": {"type": "integer"}}},
                    },
                    {
                        "if": {"properties": {"kind": {"const": "b"}}},
                        "then": {
                            "properties": {"x": {"type": "number"}},
                            "additionalProperties": {"type": "number"},
                        },
                    },
                ],
            }
        },
    }
    given = {
        "count": "2e1",
        "items": [
            {"kind": "a", "x": "1e3", "label": "1e3"},
            {"kind": "b", "x": "1e3", "y": "-2.5"},
            {"kind": "a", "x": True},
        ],
    }
    before = copy.deepcopy(given)
    assert coerce_numbers(given, schema) == {
        "count": 20,
        "items": [
            {"kind": "a", "x": 1000, "label": "1e3"},
            {"kind": "b", "x": 1000.0, "y": -2.5},
            {"kind": "a", "x": True},
        ],
    }
    assert given == before


def test_items_fast_path_gives_jsonschemas_errors():
    """StrictValidator passes plainly valid lists without a look at each item: on random lists
    of awkward values (bools, NaN, infinities, huge ints, strings, boundaries) it reports exactly
    the errors of jsonschema's own item-by-item `items`."""
    import random

    from jsonschema import Draft202012Validator, validators

    from attnsim.config.coerce import StrictValidator, _plainly_valid, _strict_integer

    item_by_item = validators.extend(
        Draft202012Validator,
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
    )
    pool = [0, 1, 2, -1, 0.0, 0.5, 1.0, 2.0, 10000, 10000.0, 10001, 10000.000001, True, False]
    pool += [None, "a", "gaussian", "dot_product", float("nan"), float("inf"), -float("inf")]
    pool += [2**70, [1], {"a": 1}]
    item_schemas = [
        {"type": "integer", "minimum": 2, "maximum": 1048576},
        {"type": "number", "minimum": 0, "maximum": 10000},
        {"type": "number", "exclusiveMinimum": 0},
        {"type": "number", "exclusiveMaximum": 1},
        {"enum": ["gaussian", "dot_product"]},
        {"enum": [1, 2]},
        {"type": "string"},
        {"type": "integer"},
    ]
    rng = random.Random(7)
    fast = 0
    for _ in range(5000):
        items = rng.choice(item_schemas)
        instance = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        schema = {"type": "array", "items": items}
        want = sorted(f"{e.path} {e.message}" for e in item_by_item(schema).iter_errors(instance))
        got = sorted(f"{e.path} {e.message}" for e in StrictValidator(schema).iter_errors(instance))
        assert got == want, (items, instance)
        fast += _plainly_valid(instance, items)
    assert fast > 500  # the fast path was taken, not only the fallback


@pytest.mark.parametrize(
    "old,new,message",
    [
        ("chunk_size: 3", "chunk_size: 3\nseed: 8", "seed: key given twice (lines 1 and 3)"),
        (
            "d: [4]",
            "d: [4]\n      d: [8]",
            "experiments.robustness.grid.d: key given twice (lines 9 and 10)",
        ),
        (
            "    kind: noisy_attention",
            "    kind: noisy_attention\n    kind: logit_entropy",
            "experiments.robustness.kind: key given twice (lines 5 and 6)",
        ),
        (
            "experiments:",
            "experiments:\n  robustness: {kind: noisy_attention}",
            "experiments.robustness: key given twice (lines 4 and 5)",
        ),
    ],
)
def test_keys_given_twice_are_refused_with_both_lines(tmp_path, capsys, old, new, message):
    from attnsim.cli.main import main

    path = config_file(tmp_path, old, new)
    with pytest.raises(ConfigError) as info:
        load_file(path)
    assert str(info.value) == f"{path}: {message}; keep one"
    assert main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err == f"attnsim: error: {path}: {message}; keep one\n"


def test_yaml_merge_keys_are_not_duplicates(tmp_path):
    text = SMALL_YAML.replace(
        "experiments:", "defaults: &d {kind: noisy_attention, trials: 20}\nexperiments:"
    )
    from attnsim.config.yamlfile import check_duplicates

    # an override of a merged key is not a repeat
    check_duplicates("a: &x {b: 1}\nc:\n  <<: *x\n  b: 2\n", "f.yaml")
    check_duplicates(text, "f.yaml")
