"""Sweeps people can write: grid generators in the config, expanded once at load, and nested
overrides on the command line (`--set KEY=VALUE`), the same in plan, show and run; every mistake
in either is one line."""

from __future__ import annotations

import copy

import pytest
import yaml
from helpers.configs import REPO, small_config

from attnsim.cli.main import main
from attnsim.config import overrides
from attnsim.config.generators import values
from attnsim.config.load import load, load_file
from attnsim.errors import ConfigError
from attnsim.records.grid import grid_columns


def test_generators_give_the_values_a_person_writes():
    assert values({"logspace": [0.01, 1, 3]}, "x") == [0.01, 0.1, 1.0]
    assert values({"linspace": [0.1, 1, 10]}, "x") == [
        0.1,
        0.2,
        0.3,
        0.4,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
    ]
    assert values({"range": [16, 80, 16]}, "x") == [16, 32, 48, 64]
    assert values({"range": ["3"]}, "x") == [0, 1, 2]  # text from --set / Snakemake's --config
    assert values({"logspace": ["1.0e-2", "1e2", "5"]}, "x")[-1] == 100.0


def test_a_generator_is_the_same_sweep_as_its_values_written_out():
    """Same records, same config hash, same point ids: the generator is expanded once, at load."""
    written = small_config()
    generated = copy.deepcopy(written)
    generated["experiments"]["robustness"]["grid"]["n"] = {"range": [16, 65, 48]}  # 16, 64
    generated["experiments"]["robustness"]["grid"]["noise_scale"] = {"logspace": [0.1, 0.5, 2]}
    a, b = load(written), load(generated)
    assert a.config_hash == b.config_hash
    assert a.experiments["robustness"].grid == b.experiments["robustness"].grid
    ids = [grid_columns(s.experiments["robustness"]).ids() for s in (a, b)]
    assert ids[0] == ids[1]


def test_the_million_preset_is_a_generator_with_the_points_it_always_had():
    text = (REPO / "workflow/presets/million.yaml").read_text()
    assert "logspace" in text and len(text) < 2000
    grid = load_file(REPO / "workflow/presets/million.yaml").experiments["million"].grid
    assert (len(grid["n"]), len(grid["d"]), len(grid["scale"])) == (40, 25, 500)
    assert grid["scale"][:3] == [0.01, 0.01019, 0.01038] and grid["scale"][-1] == 100.0


@pytest.mark.parametrize(
    ("rule", "needle"),
    [
        ({"logspace": [0, 1, 3]}, "g: logspace needs start and stop > 0"),
        ({"logspace": [0.1, 1]}, "g: write {logspace: [start, stop, count]}"),
        ({"linspace": [0, 1, 2.5]}, "g.linspace[2] (count): 2.5 is not a whole number"),
        ({"linspace": [0, "x", 3]}, "g.linspace[1]: 'x' is not a finite number"),
        ({"linspace": [0, 1, 0]}, "g.linspace[2] (count): 0 is outside 1..10,000,000"),
        ({"range": [5, 1]}, "g: {range: [5, 1]} is empty"),
        ({"range": [0, 1, 0]}, "g.range[2]: the step may not be 0"),
        ({"range": [0.5, 3]}, "g.range[0]: 0.5 is not a whole number"),
        ({"geomspace": [1, 2, 3]}, "g: a mapping here is a generator, one of"),
        ({"logspace": [1, 1.0000001, 5], "digits": 3}, "g: 5 values rounded to 3 significant"),
    ],
)
def test_a_bad_generator_is_one_line_naming_the_parameter(rule, needle):
    with pytest.raises(ConfigError) as info:
        values(rule, "g")
    assert str(info.value).startswith(needle) and "\n" not in str(info.value)


def test_a_bad_generator_in_a_config_names_its_key():
    config = small_config()
    config["experiments"]["robustness"]["grid"]["n"] = {"range": [2.5]}
    with pytest.raises(ConfigError, match=r"^experiments.robustness.grid.n.range\[0\]: 2.5 is not"):
        load(config)


def test_overrides_set_nested_keys_and_fold_into_snakemakes_config():
    data = overrides.apply(
        small_config(),
        ["experiments.robustness.grid.n=[16,64,256]", "seed=3", "experiments.robustness.trials=5"],
    )
    assert data["seed"] == 3 and data["experiments"]["robustness"]["trials"] == 5
    assert data["experiments"]["robustness"]["grid"]["n"] == [16, 64, 256]
    entries = overrides.snakemake_entries(
        ["seed=3", "experiments.r.trials=5", "experiments.r.grid.n={range: [16, 80, 16]}"]
    )
    assert entries == ["seed=3", "experiments={r: {trials: 5, grid: {n: {range: [16, 80, 16]}}}}"]
    assert yaml.safe_load(entries[1].split("=", 1)[1])["r"]["grid"]["n"] == {"range": [16, 80, 16]}


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("experiments.robustnes.trials=5", "the config has no mapping experiments.robustnes"),
        ("seed", "give KEY=VALUE"),
        ("experiments..trials=5", "give KEY=VALUE"),
        ("seed=[1", "the value is not valid YAML"),
        ("seed=", "no value after '='"),
    ],
)
def test_a_bad_override_is_one_line(item, needle):
    with pytest.raises(ConfigError) as info:
        overrides.apply(small_config(), [item])
    assert f"--set {item}: " in str(info.value) and needle in str(info.value)


def test_show_takes_the_same_overrides_and_says_a_bad_one_in_one_line(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(small_config()))
    assert main(["show", "--set", "experiments.robustness.grid.n={range: [16, 80, 16]}"]) == 0
    assert "0 of 32 points done" in capsys.readouterr().out
    assert main(["show", "--set", "experiments.robustness.trials=ten"]) == 2
    err = capsys.readouterr().err
    assert err == "attnsim: error: experiments.robustness.trials: 'ten' is not of type integer\n"


@pytest.mark.slow
def test_plan_and_run_take_nested_overrides_and_refuse_bad_ones_in_one_line(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(small_config()))
    env = dict(os.environ)
    env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"

    def attnsim(*args):
        cmd = [
            sys.executable,
            "-m",
            "attnsim.cli.main",
            *args,
            "-s",
            str(REPO / "workflow/Snakefile"),
        ]
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)

    plan = attnsim("plan", "--set", "experiments.robustness.grid.n=[16,32,64]")
    assert plan.returncode == 0 and "24 points (24 to run" in plan.stdout, plan.stderr
    plan = attnsim("plan", "--config", "experiments.robustness.grid.n={logspace: [16, 64, 3]}")
    assert plan.returncode == 0 and "24 points (24 to run" in plan.stdout, plan.stderr
    for command in ("plan", "run"):
        bad = attnsim(command, "-n", "--config", "experiments.robustness.trials=10x")
        lines = bad.stderr.strip().splitlines()
        assert bad.returncode == 2 and lines == [
            "attnsim: error: experiments.robustness.trials: '10x' is not of type integer"
        ], bad.stderr


@pytest.mark.slow
def test_set_is_remembered_replaces_a_generator_whole_and_plan_agrees_with_run_n(tmp_path):
    """`attnsim run --set` is recorded in the workspace's state record: a later `plan`, `run -n`
    and `show` see the same sweep without repeating it; an override generator replaces the file's
    generator (merged, the two would be one mapping of two rules: an error); `plan` prints the
    bill `run -n` prints, with or without a new --set (which they price, not record); `show
    --reset` forgets the override."""
    import os
    import subprocess
    import sys

    from attnsim.records import state as record

    config = small_config()
    config["experiments"]["robustness"]["grid"]["noise_scale"] = {"linspace": [0.1, 0.5, 3]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    env = dict(os.environ)
    env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"
    snakefile = ["-s", str(REPO / "workflow/Snakefile")]

    def attnsim(*args, snakemake=True):
        cmd = [sys.executable, "-m", "attnsim.cli.main", *args, *(snakefile if snakemake else [])]
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def bill(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("plan: "))
        return lines[start : start + 4]

    generator = "experiments.robustness.grid.noise_scale={logspace: [0.1, 0.5, 2]}"
    attnsim("run", "--cores", "2", "--set", generator)
    assert record.read(tmp_path / "results").overrides == (generator,)
    planned = attnsim("plan")
    assert "16 points (0 to run" in planned  # the override remembered: nothing left to do
    assert bill(planned) == bill(attnsim("run", "-n"))
    priced = ["--set", "experiments.robustness.grid.n=[16,32,64]"]
    planned = attnsim("plan", *priced)
    assert "24 points (8 to run" in planned and bill(planned) == bill(attnsim("run", "-n", *priced))
    assert record.read(tmp_path / "results").overrides == (generator,)  # priced, not recorded
    assert "--set " + generator in attnsim("show", snakemake=False)
    attnsim("show", "--reset", snakemake=False)
    assert "24 points (8 to run" in attnsim("plan")  # the file's generator again: 3 scales
