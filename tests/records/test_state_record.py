"""The workspace's state record: a round trip keeps every field, a damaged or foreign file is one
line naming it (never reset), an empty record leaves no file, a write is atomic."""

from __future__ import annotations

import pytest

from attnsim.errors import StoreError
from attnsim.records import state
from attnsim.records.state import ClaimDesign, Look, Operation, TopUp, WorkspaceState


def _full() -> WorkspaceState:
    design = ClaimDesign(
        claim_id="rotation_gain_fp8",
        method="confidence sequence",
        level=0.9,
        parameters={"rho": 0.25, "first_alpha": 0.025},
        looks=(Look(1, 200), Look(2, 800)),
        experiments=("precision",),
        declared="abc1234",
    )
    return WorkspaceState(
        overrides=("experiments.robustness.grid.n=[64,4096]", "seed=3"),
        topups={"precision": TopUp(trials=800, look=2)},
        designs={"rotation_gain_fp8": design},
        boundaries={"delta_method:noise_scale": {"x": 0.31, "ci": [0.28, 0.35]}},
        operation=Operation(
            "decide", "t0k3n", 4242, "vm", "2026-12-07T04:00:00Z", {"precision": TopUp(1600, 3)}
        ),
    )


def test_round_trip_keeps_every_field(tmp_path):
    record = _full()
    state.write(tmp_path, record)
    assert state.read(tmp_path) == record


def test_absent_file_is_an_empty_record_and_empty_writes_no_file(tmp_path):
    assert state.read(tmp_path).empty
    state.write(tmp_path, _full())
    state.write(tmp_path, WorkspaceState())
    assert not state.path(tmp_path).exists()


@pytest.mark.parametrize(
    "text, why",
    [
        ("[1, 2]\n", "not a mapping"),
        ("format: 99\n", "format 99"),
        ("format: 1\nsurprise: 1\n", "unknown key"),
        ("format: 1\ntopups: {a: {trials: 0, look: 1}}\n", "top-up"),
        ("format: 1\ndesigns: {c: {method: peeking, level: 0.9}}\n", "method"),
        ("format: 1\n: : :\n", "state record"),
    ],
)
def test_a_damaged_record_is_one_line_naming_the_file(tmp_path, text, why):
    state.path(tmp_path).write_text(text)
    with pytest.raises(StoreError) as error:
        state.read(tmp_path)
    message = str(error.value)
    assert "\n" not in message and str(state.path(tmp_path)) in message and why in message
    assert state.path(tmp_path).read_text() == text  # never reset


def test_a_spent_design_knows_it():
    design = ClaimDesign(
        "c", "group sequential", 0.9, looks=(Look(1, 10), Look(2, 20)), planned_looks=2
    )
    assert design.spent
    assert not ClaimDesign("c", "confidence sequence", 0.9, looks=(Look(1, 10),)).spent


def test_a_confidence_sequence_from_the_claims_layer_survives_the_record(tmp_path):
    """The claims layer describes its design in plain fields; `ClaimDesign.from_fields` makes the
    record, and the sequence read back from the file is the same design (a rerun or a second
    decide continues it)."""
    from attnsim.claims import confidence_sequence as cs

    design = cs.ConfidenceSequence.plan(2500, 160000)
    fields = cs.record(design, [2500, 7500], ["precision"])
    record = ClaimDesign.from_fields("rotation_gain_fp8", fields)
    assert record.looks == (Look(1, 2500), Look(2, 7500)) and not record.spent
    state.write(tmp_path, WorkspaceState(designs={record.claim_id: record}))
    back = state.read(tmp_path).designs["rotation_gain_fp8"]
    assert back == record and back.level == pytest.approx(0.90)
    assert cs.continue_design(back.parameters, 1, 2) == design
