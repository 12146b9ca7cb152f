"""`attnsim locate` (cli/locate.py, docs/science.md §7.9): the trials it computes are the rows a
run stores, its statistic is the claim's on the summary a run writes, it bills before it runs, it
locates the delta method's edge beside the theory's prediction, and bad input is one line."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import yaml
from helpers.configs import NOISY_GRID, small_config

from attnsim.cli import locate as cli
from attnsim.cli.main import main
from attnsim.config.load import load
from attnsim.jobs.collect import summarise_chunks
from attnsim.jobs.simulate import simulate_points, trials_table
from attnsim.kinds import get_kind
from attnsim.records import state
from attnsim.records.experiment import TrialSettings

ARGS = ["delta_method_gaussian", "--axis", "noise_scale", "--edge", "lower"]
AT = ["--at", "n=16", "logit_scale=0", "noise=gaussian"]
EXACT = 0.47344  # where the exact ratio (quadrature, uniform weights, n = 16) crosses 0.95


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    """The small config with rounds of 200 trials, noise scales 0.2-1, in a working directory."""
    monkeypatch.chdir(tmp_path)
    config = small_config()
    grid = copy.deepcopy(NOISY_GRID) | {"noise_scale": [0.2, 1.0], "d": [16]}
    config["experiments"]["robustness"] |= {"trials": 200, "grid": grid}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return load(config)


def target(settings, *extra):
    args = cli_args([*ARGS, *AT, *extra])
    return cli.resolve(settings, args)


def cli_args(argv):
    import argparse

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    return p.parse_args(argv)


def test_rounds_are_the_rows_a_run_stores(sweep):
    """Trials [400, 800) of two points sharing a stream: the blocks of rounds 2 and 3 alone, bit
    for bit the rows a run with max_trials 800 stores there."""
    points = cli.Points(target(sweep))
    _grid, members = points.points(np.array([0.3, 0.6]))
    assert members[0].stream == members[1].stream  # common random numbers along the noise scale
    mine = points.trials(members, 400, 800)
    settings = TrialSettings(sweep.seed, 200, target_se=1e-300, max_trials=800)
    stored = simulate_points(get_kind("noisy_attention"), settings, members)
    for member in members:
        for metric, values in stored[member.id].items():
            assert np.array_equal(mine[member.id][metric], values[400:800]), metric


def test_the_statistic_is_the_claims_on_the_summary_a_run_writes(sweep):
    points = cli.Points(target(sweep))
    x = np.array([0.6, 0.3])  # not in order: the values come back in the order asked
    grid, members = points.points(x)
    results = points.trials(members, 0, 400)
    value = points.statistic(grid, members, results, np.ones(400, dtype=bool), x)
    kind = get_kind("noisy_attention")
    table = trials_table(kind, members, results)
    rows = summarise_chunks(kind, "robustness", grid, [table]).to_pandas()
    ratio = dict(zip(rows["noise_scale"], rows["err_ratio"]))
    assert value.tolist() == [ratio[0.6], ratio[0.3]]
    got = points.evaluate(x, 0, 400)
    assert got.values.shape == (2, cli.GROUPS) and got.df == cli.GROUPS - 1
    assert np.all(np.abs(got.mean - value) < 3 * got.se)  # the jackknife's bias correction is small
    assert points.cost(x, 200, 600) == points.cost(x, 0, 400) > points.cost(x, 0, 200)


def test_dry_run_prints_the_bill(sweep, capsys):
    assert main(["locate", *ARGS, *AT, "--budget", "0.01", "-n"]) == 0
    out = capsys.readouterr().out
    assert "first look: 7 points x" in out and "rounds of 2 points" in out
    assert "noise_scale in [0.2, 1]" in out and "lower edge 0.95" in out
    assert "located" not in out.replace("attnsim locate", "")


def test_locates_the_delta_method_edge_beside_the_theory(sweep, capsys):
    """n = 16, uniform weights: the located interval holds where the exact ratio crosses 0.95,
    and the theory's next-order prediction is printed with the verdict against it."""
    assert main(["locate", *ARGS, *AT, "--budget", "0.0002"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"located: x\* = \S+, 95% interval \[(\S+), (\S+)\]", out)
    assert found, out
    low, high = float(found[1]), float(found[2])
    assert low <= EXACT <= high and high - low < 0.05
    assert "theory (next order" in out and "noise_scale* = 0.4768" in out
    assert re.search(r"against it: (holds|fails|inconclusive)", out)
    assert "CPU-minutes measured" in out
    # its points are in the workspace's store (role locate) and the answer in its state record;
    # asked again, it reads them (no chunk is written) and answers the same, bit for bit
    folder = sweep_workspace()
    chunks = sorted((folder / "store" / "trials").glob("kind=*/experiment=locate_*/*.parquet"))
    (name, record), *others = state.read(folder).boundaries.items()
    assert chunks and not others and record["claim"] == "delta_method_gaussian"
    assert main(["locate", *ARGS, *AT, "--budget", "0.0002"]) == 0
    again = capsys.readouterr().out
    assert again.split("  cost:")[0] == out.split("  cost:")[0]
    assert sorted((folder / "store" / "trials").glob("kind=*/*/*.parquet")) == chunks
    assert state.read(folder).boundaries[name] == record


def test_an_entropy_edge_is_printed_beside_its_exact_crossing(tmp_path, monkeypatch, capsys):
    """The small-scale law's edge along gaussian logits' scale (n = 64): no theory verdict (no
    expansion places it), the exact crossing of the quadrature instead, with its side of the
    located interval."""
    monkeypatch.chdir(tmp_path)
    config = small_config()
    grid = {"n": [64], "d": [64], "logits": ["gaussian"], "scale": [0.1, 3.0]}
    config["experiments"]["entropy"] = {"kind": "logit_entropy", "trials": 200, "grid": grid}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    argv = ["small_scale_entropy", "--axis", "scale", "--edge", "lower", "--range", "0.1", "3"]
    assert main(["locate", *argv, "--at", "n=64", "logits=gaussian", "--budget", "0.0005"]) == 0
    out = capsys.readouterr().out
    assert "theory (next order" not in out
    assert "exact, by the quadrature of E[H] at finite n" in out and "scale* = 0.9821" in out
    assert "inside the located interval (a check, not a verdict)" in out


def sweep_workspace():
    """The workspace of the config in the working directory (`results/`)."""
    from pathlib import Path

    return Path("results")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no_such_claim", "--axis", "x", "--edge", "upper"], "no claim of that id"),
        (["error_rate_sqrt_n", "--axis", "noise_scale", "--edge", "lower"], "point by point"),
        ([*ARGS[:-1], "bound", *AT], "no bound edge"),
        (ARGS, "give --at for n, logit_scale, noise"),
        (["delta_method_gaussian", "--axis", "n", "--edge", "lower"], "not a real-valued"),
        ([*ARGS, *AT, "--range", "-1", "1"], "outside noise_scale's bounds"),
        ([*ARGS, *AT, "--range", "1", "0.5"], "LO must be below HI"),
        ([*ARGS, "--at", "d=oops"], "--at d=oops"),
        ([*ARGS, *AT, "--budget", "1e-9"], "buys less than the first look"),
    ],
)
def test_bad_input_is_one_line(sweep, capsys, argv, message):
    assert main(["locate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
