"""The `level` and `design` columns (issue 49 item 3): each verdict judged under the sequential
design the workspace's state record holds for it, else at a single look; verify recomputes with
the record and fails in one line without it; cite prints the design."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from helpers import small_store
from helpers.configs import small_config

from attnsim.claims import confidence_sequence as cs
from attnsim.claims.engine import (
    Alternative,
    ClaimResult,
    ClaimSpec,
    Equivalence,
    Estimate,
    Regime,
    judge,
)
from attnsim.cli.main import main
from attnsim.errors import StoreError
from attnsim.records import state
from attnsim.records.state import ClaimDesign, Look
from attnsim.report import claims as io
from attnsim.report import designs

FIRST, PLANNED = 160, 10_240


def sequence_record(claim_id: str, looks=(FIRST, 480, 1_280), planned: int = 4) -> ClaimDesign:
    """A claim's design as decide records it: a confidence sequence with `looks` so far."""
    sequence = cs.ConfidenceSequence.plan(FIRST, PLANNED)
    fields = cs.record(sequence, list(looks), ["e"])
    return ClaimDesign.from_fields(
        claim_id, fields | {"planned_looks": planned, "declared": "2026-12-07, attnsim 0.1.0"}
    )


def spec(low: float, high: float, n: int = 1_000) -> ClaimSpec:
    """A claim whose one estimate has the 95% interval [low, high] from n trials, judged
    against 1 ± 0.1."""
    return ClaimSpec(
        claim_id="c",
        statement="robustness",
        text="t",
        role="evidence",
        regime=Regime("every row", "r", lambda rows: rows["x"] > 0),
        rule=Equivalence(1.0, 0.1, "r"),
        measure=lambda rows: Estimate(
            (low + high) / 2, "mean (95% CI)", se=(high - low) / 3.92, ci_low=low, ci_high=high, n=n
        ),
        alternative=Alternative("a", 1.5, "r"),
    )


ROWS = pd.DataFrame({"experiment": ["e"], "x": [1.0], "n_trials": [1_280]})


def test_a_claim_without_a_design_is_a_single_look_at_95():
    judging = designs.judging(None)
    assert judging.interval is None and judging.level == 0.95 and judging.text == "single look"


def test_a_recorded_sequence_widens_every_deciding_interval_and_says_so():
    record = sequence_record("c")
    judging = designs.judging(record)
    sequence = cs.ConfidenceSequence.from_parameters(record.parameters)
    assert judging.level == sequence.level == pytest.approx(0.90)
    assert judging.interval is not None
    assert judging.interval(0.9, 1.1, 1_280) == sequence.widen(0.9, 1.1, 1_280, 1_280)
    low, high = judging.interval(0.9, 1.1, 1_280)
    assert high - low > 0.2 * 1.3  # wider than the 95% interval at look 3
    assert judging.text.startswith("sequential: look 3 of 4 planned, normal-mixture confidence")
    assert "at 1,280 trials per point, since 2026-12-07, attnsim 0.1.0" in judging.text
    assert designs.sequential_text(judging.text)


def test_the_same_rows_hold_at_a_single_look_and_not_under_the_sequence():
    """The engine decides on the design's widened intervals: a 95% interval just inside the band
    holds at a single look, and the sequence's wider one does not."""
    claim = spec(0.93, 1.05)
    assert judge(claim, ROWS).verdict == "holds"
    widened = judge(claim, ROWS, (), designs.judging(sequence_record("c")).interval)
    assert widened.verdict == "inconclusive"
    assert (widened.ci_low, widened.ci_high) == (0.93, 1.05)  # the measured interval is kept


def test_a_group_sequential_record_of_an_earlier_decide_still_judges_and_is_spent():
    record = ClaimDesign(
        claim_id="c",
        method="group sequential",
        level=0.9,
        parameters={"factors": [1, 4, 16]},
        looks=(Look(1, 100), Look(2, 400), Look(3, 1_600)),
        planned_looks=3,
    )
    judging = designs.judging(record)
    assert judging.level == pytest.approx(0.90) and "look 3 of 3 planned, spent" in judging.text
    assert record.spent and not sequence_record("c", planned=3).spent  # a sequence never is


def test_an_unreadable_record_is_one_line_naming_the_claim():
    broken = replace(sequence_record("c"), parameters={"rho": 3.0})
    with pytest.raises(StoreError, match="design of c cannot be read") as error:
        designs.judging(broken)
    assert "\n" not in str(error.value)


def test_the_headline_line_states_levels_and_designs():
    single = ClaimResult(claim_id="a", level=0.95, design="single look")
    later = ClaimResult(claim_id="b", level=0.90, design=designs.judging(sequence_record("b")).text)
    assert designs.design_summary([single]) == "every verdict at a single look (level 0.95)"
    line = designs.design_summary([single, later])
    assert line == (
        "1 verdict at a single look (level 0.95); 1 verdict under decide's confidence "
        "sequence (level 0.90): b"
    )
    assert designs.design_summary([ClaimResult(claim_id="old")]) == ""  # an older table


def test_every_row_of_a_table_carries_level_and_design():
    claims = io.evaluate({}, {})
    assert claims and all(c.level == 0.95 and c.design == "single look" for c in claims)


# --- verify and cite on a store judged under a recorded design ---------------------------------


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("designs") / "results"
    small_store.make(small_config(), results)
    return results


DECIDED = "next_order_theory"  # rests on the small store's `robustness` experiment


@pytest.fixture
def decided(made, tmp_path) -> Path:
    """The small store with a recorded sequence for one claim, its table written under it."""
    results = tmp_path / "results"
    shutil.copytree(made, results)
    record = sequence_record(DECIDED)
    state.write(results, state.WorkspaceState(designs={DECIDED: record}))
    small_store.write_claims(results / "config.yaml", results)
    return results


def test_the_table_written_under_a_record_says_so_and_verify_recomputes_it(decided, capsys):
    rows = pd.read_parquet(decided / "claims.parquet").set_index("claim_id")
    assert rows.loc[DECIDED, "level"] == pytest.approx(0.90)
    assert rows.loc[DECIDED, "design"].startswith("sequential: look 3 of 4 planned")
    others = rows.drop(index=DECIDED)
    assert (others["level"] == 0.95).all() and (others["design"] == "single look").all()
    capsys.readouterr()
    assert main(["verify", str(decided / "store")]) == 0, capsys.readouterr().out
    assert main(["cite", DECIDED, "--store", str(decided / "store")]) == 0
    out = capsys.readouterr().out
    assert "- judged: level 0.90, sequential: look 3 of 4 planned" in out
    assert "judged: level 0.90, sequential" in out.split("@misc")[1]  # the BibTeX note too


def test_verify_fails_in_one_line_when_the_record_is_removed(decided, capsys):
    state.path(decided).unlink()
    capsys.readouterr()
    assert main(["verify", str(decided / "store")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{state.path(decided)}: holds no sequential design for {DECIDED}")


def test_verify_names_a_claim_judged_under_another_design(decided, capsys):
    """A record changed after the table was written (another look recorded): the claim is
    recomputed under the record and named with both designs."""
    record = sequence_record(DECIDED, looks=(FIRST, 480, 1_280, 3_680), planned=5)
    state.write(decided, state.WorkspaceState(designs={DECIDED: record}))
    capsys.readouterr()
    assert main(["verify", str(decided / "store")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{DECIDED}: judged under 'sequential: look 3")
    assert "recomputed under 'sequential: look 4 of 5 planned" in lines[0]
    assert not math.isnan(pd.read_parquet(decided / "claims.parquet")["level"].iloc[0])
