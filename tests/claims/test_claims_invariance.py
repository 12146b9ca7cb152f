"""Verdicts independent of experiment order and names (issue 38, docs/science.md §7.4): a
multi-experiment store built through the real pipeline, with points measured by two experiments,
gives the same claims however its experiments are listed or named; the CLI (config order) and the
workflow's command (experiments.json, sorted) write byte-identical claims.parquet, and
`attnsim summary` shows the claims of that file."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from attnsim.cli.main import main
from attnsim.config.load import load, load_file
from attnsim.jobs.collect import collect
from attnsim.jobs.simulate import run_chunk
from attnsim.plan.sweep import experiment_json, plan_experiment, run_json
from attnsim.report import claims as io
from attnsim.report import claims_render as render
from attnsim.store import parquet as store

RECALL = {"n": [6], "d": [4], "batch": [4], "optimiser": ["adam"], "lr": [0.5], "steps": [10]}
# config order is not alphabetical; "wide" and "narrow" share points with different trial counts
CONFIG = {
    "seed": 5,
    "chunk_size": 64,
    "experiments": {
        "wide": {
            "kind": "recall_training",
            "trials": 8,
            "grid": RECALL | {"scale": [0.3, 1.0, 3.0, 30.0]},
        },
        "narrow": {"kind": "recall_training", "trials": 5, "grid": RECALL | {"scale": [1.0, 3.0]}},
        "tau_small": {
            "kind": "temperature_entropy",
            "trials": 30,
            "grid": {"n": [16], "d": [3], "tau": [0.1, 1.0]},
        },
        "tau_one": {
            "kind": "temperature_entropy",
            "trials": 10,
            "grid": {"n": [16], "d": [3], "tau": [1.0]},
        },
    },
}
NAMED = ("experiments", "figure")  # the only columns that name experiments


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("invariance")
    (work / "config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    settings = load(CONFIG)
    root = work / "results" / "store"
    for name in settings.experiments:
        plan = plan_experiment(settings, name, root)
        paths = [
            run_chunk(plan.spec(c), store.chunk_path(root, plan.kind, plan.name, c))
            for c in plan.pending
        ]
        collect(experiment_json(settings, name), paths, store.summary_path(root, plan.kind, name))
    return work


def experiments() -> dict[str, str]:
    return {name: e["kind"] for name, e in CONFIG["experiments"].items()}


def claims_frame(summaries, listed) -> pd.DataFrame:
    return io.table(io.evaluate(summaries, listed)).to_pandas()


def test_order_and_names_of_experiments_change_no_claim(run):
    listed = experiments()
    summaries = io.load_summaries(run / "results" / "store", listed)
    reference = claims_frame(summaries, listed)
    assert (reference["points"] > 0).sum() >= 4  # the kinds' claims were judged on data
    backwards = dict(reversed(list(listed.items())))
    pd.testing.assert_frame_equal(
        claims_frame(dict(reversed(summaries.items())), backwards), reference
    )
    renames = {"wide": "zz_wide", "narrow": "aa_narrow", "tau_small": "b", "tau_one": "a"}
    renamed = {
        renames[name]: frame.assign(experiment=renames[name]) for name, frame in summaries.items()
    }
    other = claims_frame(renamed, {renames[n]: k for n, k in listed.items()})
    pd.testing.assert_frame_equal(
        other.drop(columns=list(NAMED)), reference.drop(columns=list(NAMED))
    )


def test_a_point_of_two_experiments_is_taken_from_the_one_with_more_trials(run):
    from attnsim.claims.engine import canonical_rows
    from attnsim.kinds import get_kind

    listed = experiments()
    summaries = io.load_summaries(run / "results" / "store", listed)
    kind = get_kind("recall_training")
    for order in (["wide", "narrow"], ["narrow", "wide"]):
        rows = canonical_rows([summaries[n] for n in order], kind.param_names)
        assert rows["scale"].tolist() == [0.3, 1.0, 3.0, 30.0]
        assert set(rows["experiment"]) == {"wide"} and (rows["n_trials"] == 8).all()


def test_cli_and_workflow_write_the_same_bytes_and_summary_shows_them(run, capsys):
    root = run / "results" / "store"
    cli_dir, flow_dir = run / "cli", run / "workflow"
    main(
        [
            "claims",
            "--configfile",
            str(run / "config.yaml"),
            "--store",
            str(root),
            "--write",
            str(cli_dir),
        ]
    )
    plan = run / "experiments.json"
    plan.write_text(json.dumps(dict(sorted(experiments().items()))))
    record = run / "provenance.json"  # the run's config hash, as the workflow passes it
    record.write_text(run_json(load_file(run / "config.yaml")))
    given = ["--experiments-file", str(plan), "--run-file", str(record)]
    main(["claims", *given, "--store", str(root), "--write", str(flow_dir)])
    main(
        [
            "claims",
            "--configfile",
            str(run / "config.yaml"),
            "--store",
            str(root),
            "--write",
            str(run / "results"),
        ]
    )
    first = (cli_dir / "claims.parquet").read_bytes()
    assert first == (flow_dir / "claims.parquet").read_bytes()
    assert first == (run / "results" / "claims.parquet").read_bytes()
    assert "created_utc" not in store.read_meta(cli_dir / "claims.parquet")
    capsys.readouterr()
    main(["summary", "--configfile", str(run / "config.yaml"), "--store", str(root)])
    shown = capsys.readouterr().out
    claims = io.from_table(store.read_table(cli_dir / "claims.parquet"))
    headline = render.render_headline(render.headline(claims)).splitlines()
    assert all(line in shown for line in headline[:-1])  # the last names the workspace's options


def test_exports_say_what_each_number_is(run):
    listed = experiments()
    table = io.table(io.evaluate(io.load_summaries(run / "results" / "store", listed), listed))
    frame = table.to_pandas()
    judged = frame[frame["verdict"].isin(["holds", "fails", "inconclusive"])]
    converted = judged[
        judged["claim_id"].isin(["tau_one_gap", "exact_gap_bound", "smaller_tau_widens"])
    ]
    assert len(converted) == 3
    # extremes over trials: a range, never a confidence interval
    assert converted["ci_low"].isna().all() and converted["ci_high"].isna().all()
    assert converted["value_min"].notna().all() and converted["value_max"].notna().all()
    for row in json.loads(render.json_text(table)):
        assert {"ci_low", "value_min", "value_max", "alternative", "power", "outcome"} <= set(row)
