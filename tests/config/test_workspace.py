"""A workspace per sweep: the default sweep keeps results/, any other config file gets
results/<stem>/ (or --workspace DIR), and every command finds it the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.configs import small_config
from helpers.workflow import snakemake, tree, write_config

from attnsim.cli.main import main
from attnsim.config import workspace
from attnsim.errors import ConfigError


def test_the_default_config_keeps_results(tmp_path):
    (tmp_path / "config.yaml").write_text("seed: 1\n")
    assert workspace.locate([], workdir=tmp_path) == Path("results")
    assert workspace.locate(["config.yaml"], workdir=tmp_path) == Path("results")
    assert workspace.locate([tmp_path / "config.yaml"], workdir=tmp_path) == Path("results")


def test_another_config_gets_its_stem_and_an_option_wins(tmp_path):
    assert workspace.locate(["workflow/presets/large.yaml"], workdir=tmp_path) == Path(
        "results/large"
    )
    assert workspace.locate(["a.yaml", "sub/b.yml"], workdir=tmp_path) == Path("results/b")
    assert workspace.locate(["a.yaml"], "elsewhere/w", workdir=tmp_path) == Path("elsewhere/w")
    config = {"workspace": "w", "seed": 1}
    assert workspace.from_config(config, ["a.yaml"], tmp_path) == Path("w")
    assert config == {"seed": 1}  # the sweep's config holds science only


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("store.yaml", "would put its workspace inside the default sweep's results/store/"),
        ("figures.yaml", "results/figures/"),
        ("my sweep.yaml", "its name 'my sweep' cannot name a workspace folder"),
    ],
)
def test_a_config_name_that_cannot_be_a_workspace_is_one_line(tmp_path, name, needle):
    with pytest.raises(ConfigError, match=needle):
        workspace.locate([name], workdir=tmp_path)


@pytest.mark.slow
def test_sweeps_side_by_side_keep_their_own_folders(tmp_path, monkeypatch, capsys):
    """The default sweep, then a sweep of the same experiment with fewer trials (one store would
    refuse it: "stored with trials=20 ... asks for fewer"), then one in a folder of its own: all
    three intact and readable, the default's claims.md unchanged byte for byte."""
    write_config(tmp_path, small_config(chunk_size=8))
    snakemake(tmp_path, "--cores", "2")
    claims = (tmp_path / "results/claims.md").read_bytes()
    default_files = tree(tmp_path)

    fewer = small_config(chunk_size=8)
    fewer["experiments"]["robustness"]["trials"] = 10
    write_config(tmp_path, fewer, "fewer.yaml")
    snakemake(tmp_path, "--cores", "2", "--configfile", "fewer.yaml")
    snakemake(tmp_path, "--cores", "2", "--configfile", "fewer.yaml", "--config", "workspace=mine")
    for folder in ("results", "results/fewer", "mine"):
        assert (tmp_path / folder / "claims.md").is_file(), folder
        assert (tmp_path / folder / "figures/robustness/collapse.png").is_file(), folder
    assert (tmp_path / "results/claims.md").read_bytes() == claims
    after = tree(tmp_path)
    assert all(after[k] == v for k, v in default_files.items())  # same size and mtime

    monkeypatch.chdir(tmp_path)
    for args, trials in (
        ([], 20),
        (["--configfile", "fewer.yaml"], 10),
        (["--workspace", "mine"], 10),
    ):
        sql = "SELECT count(*) AS n FROM robustness_trials"
        assert main(["query", sql, "--format", "csv", *args]) == 0
        assert capsys.readouterr().out.split()[-1] == str(16 * trials)
    assert main(["show", "--configfile", "fewer.yaml"]) == 0
    assert "store: results/fewer/store" in capsys.readouterr().out


@pytest.mark.parametrize("inside", ["store", "store/trials", "store/summary/kind=x"])
def test_a_workspace_inside_another_sweeps_store_is_refused(tmp_path, inside):
    """Issue 52: `--workspace` pointed at another sweep's store wrote a second workspace into
    it. Any workspace that is a store, or lies inside one, is now one line before anything is
    written."""
    from helpers.configs import simulated_robustness

    simulated_robustness(tmp_path / "results" / "store")
    for given in (f"results/{inside}", str(tmp_path / "results" / inside)):
        with pytest.raises(ConfigError) as refused:
            workspace.from_config({"workspace": given}, [], tmp_path)
        message = str(refused.value)
        assert message.startswith(f"{given}: inside the result store ") and "\n" not in message
    # beside the store, in the same results folder: fine (the presets' results/<stem>/)
    assert workspace.from_config({"workspace": "results/mine"}, [], tmp_path) == Path(
        "results/mine"
    )
