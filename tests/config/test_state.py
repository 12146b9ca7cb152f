"""The effective config of a workspace (issue 51 items 2 and 5, issue 52 item 2): the config file
<- recorded overrides <- decide's top-ups <- this command's --set; an override replaces its key
whole (one generator replaces another); --set recorded and reset; an interrupted decide rolled
back by whichever command reads the workspace next, its trials kept."""

from __future__ import annotations

import os
import socket

import pytest
import yaml
from helpers.configs import small_config

from attnsim.cli.main import main
from attnsim.config import state
from attnsim.errors import StoreError
from attnsim.records import state as record
from attnsim.records.state import Operation, TopUp, WorkspaceState


def test_the_layers_apply_in_order_and_an_override_replaces_its_key_whole():
    data = small_config()
    data["experiments"]["robustness"]["grid"]["noise_scale"] = {"linspace": [0.1, 0.5, 3]}
    recorded = WorkspaceState(
        overrides=(
            "seed=3",
            "experiments.robustness.grid.noise_scale={logspace: [0.01, 1, 3]}",
        ),
        topups={"robustness": TopUp(trials=80, look=2), "gone": TopUp(trials=9, look=2)},
    )
    out = state.effective_data(data, recorded, ["seed=4"])
    spec = out["experiments"]["robustness"]
    assert out["seed"] == 4  # the command's --set last
    assert spec["grid"]["noise_scale"] == {"logspace": [0.01, 1, 3]}  # replaced, not merged
    assert spec["trials"] == 20 and spec["max_trials"] == 80  # the top-up: rounds of 20 to 80
    assert data["seed"] == 7 and "max_trials" not in data["experiments"]["robustness"]
    adaptive = small_config()
    adaptive["experiments"]["robustness"].update(target_se=0.1, max_trials=40)
    assert state.apply_topups(adaptive, recorded.topups) == adaptive  # decide never tops these up
    fewer = state.apply_topups(data, {"robustness": TopUp(trials=10, look=2)})
    assert "max_trials" not in fewer["experiments"]["robustness"]  # the config asks more itself


def test_a_pending_top_up_counts_only_for_its_own_runs():
    operation = Operation("decide", "tok", 1, "h", "t", {"robustness": TopUp(160, 3)})
    recorded = WorkspaceState(topups={"robustness": TopUp(80, 2)}, operation=operation)
    assert state.in_effect(recorded)["robustness"].trials == 80
    assert state.in_effect(recorded, "tok")["robustness"].trials == 160
    assert state.in_effect(recorded, "other")["robustness"].trials == 80


def test_run_records_its_overrides_the_last_value_of_a_key_wins(tmp_path):
    state.record_overrides(tmp_path, ["seed=3", "experiments.robustness.trials=30"])
    state.record_overrides(tmp_path, ["seed=5", "workspace=elsewhere"])
    assert record.read(tmp_path).overrides == ("experiments.robustness.trials=30", "seed=5")
    state.reset(tmp_path)
    assert not record.path(tmp_path).exists()  # an empty record leaves no file


def dead_operation(tmp_path) -> Operation:
    """The record of a decide whose process is gone (a pid no process has)."""
    pid = 2**22 + 7
    while os.path.exists(f"/proc/{pid}"):
        pid += 1
    operation = Operation(
        "decide", "tok", pid, socket.gethostname(), "2026-01-01T00:00:00Z", {"e": TopUp(160, 3)}
    )
    record.write(tmp_path, WorkspaceState(topups={"e": TopUp(80, 2)}, operation=operation))
    return operation


def test_an_interrupted_decide_is_rolled_back_by_the_next_reader(tmp_path, capsys):
    dead_operation(tmp_path)
    recovered = state.current(tmp_path)
    assert recovered.operation is None and recovered.topups == {"e": TopUp(80, 2)}
    assert record.read(tmp_path) == recovered  # written back: once
    note = capsys.readouterr().err
    assert "interrupted" in note and "back at its last complete look" in note
    assert "e 80 trials per point (look 2)" in note and "reuses them" in note
    assert note.count("\n") == 1 and "1e-300" not in note
    state.current(tmp_path)
    assert capsys.readouterr().err == ""


def test_a_live_decide_is_left_alone_and_a_real_run_beside_it_refused(tmp_path):
    live = Operation("decide", "tok", os.getpid(), socket.gethostname(), "t")
    record.write(tmp_path, WorkspaceState(operation=live))
    kept, note = state.recover(tmp_path)
    assert kept.operation == live and "is working" in note
    with pytest.raises(StoreError, match="is working here"):
        state.refuse_concurrent(kept, None, tmp_path)
    state.refuse_concurrent(kept, "tok", tmp_path)  # its own runs


def test_show_prints_what_is_in_effect_and_reset_clears_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(small_config()))
    state.record_overrides(tmp_path / "results", ["experiments.robustness.grid.n=[16]"])
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    assert "--set experiments.robustness.grid.n=[16]" in out and "robustness" in out
    table = out.splitlines()
    row = table[table.index(next(line for line in table if line.startswith("experiment"))) + 1]
    assert row.split()[:3] == ["robustness", "noisy_attention", "8"]  # n=[16]: 8 points, not 16
    assert main(["show", "--yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["experiments"]["robustness"]["grid"]["n"] == [16]
    assert main(["show", "--reset"]) == 0
    out = capsys.readouterr().out
    assert "overrides cleared" in out and "no overrides recorded" in out


def test_the_workflow_reads_the_same_effective_config(tmp_path):
    state.record_overrides(tmp_path / "w", ["experiments.robustness.grid.n=[16]", "seed=3"])
    config = small_config()
    config["workspace"] = str(tmp_path / "w")
    config[state.COMMAND_KEY] = ["seed=9"]
    read = state.workflow_settings(config, [], {"seed": 5})
    assert read.folder == tmp_path / "w" and read.token is None and not read.record
    # the record over the files; a plain `snakemake --config` over the record; --set last
    assert read.settings.seed == 9 and read.settings.experiments["robustness"].grid["n"] == [16]
    config = small_config() | {"workspace": str(tmp_path / "w")}
    assert state.workflow_settings(config, [], {"seed": 5}).settings.seed == 5
