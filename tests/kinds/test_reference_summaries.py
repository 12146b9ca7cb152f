"""Summaries stay the same across refactors: each reference sweep's summary rows (collect's
`summarise_chunks` of the reference rows), bit for bit on every CPU class recorded in
tests/data/reference_rows/<kind>.json (`summary_digests`; tests/helpers/reference_rows.py records
them beside the rows' digests), and on any other class (e.g. X86_V4-Haswell: numpy's AVX-512 with
OpenBLAS forced to Haswell) within the cross-class tolerance of the recorded values, as the rows
are: never skipped. A warning says when the tolerance comparison ran."""

from __future__ import annotations

import warnings

import pytest
from helpers import reference_rows as rr

from attnsim.kinds import all_kinds

KINDS = rr.kind_names()


def test_every_built_in_kind_has_reference_rows_and_summaries():
    """The real-model kinds' too: their rows use the fetched models (./resources or the tests'
    cache, `reference_rows.use_assets`), skipped without them."""
    built_in = {name for name, kind in all_kinds().items() if kind.package.startswith("attnsim.")}
    missing = sorted(built_in - set(KINDS))
    assert not missing, f"record reference rows of {missing} (tests/helpers/reference_rows.py)"
    assert all(rr.read(kind).get("summary_digests") for kind in KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_summaries_equal_the_reference(kind):
    result = rr.check(kind, 2)
    mode = result["summary_mode"]
    assert mode != "none", (
        f"{kind}: no summary digests for CPU class {result['class']} and no summary values to "
        "compare within the tolerance: re-record (python -m tests.helpers.reference_rows record)"
    )
    if mode == "tolerance":
        warnings.warn(
            f"{kind}: no summary digests recorded for CPU class {result['class']}; summaries "
            "checked within the cross-class tolerance instead",
            stacklevel=1,
        )
    assert result["summary_ids_match"], f"{kind}: the summary's points changed"
    assert not result["summary_failed"], (
        f"{kind} on {result['class']} ({mode}): {len(result['summary_failed'])} summary values "
        f"differ (first: {result['summary_failed'][0]})"
    )


def test_the_summary_tolerance_check_can_fail():
    ref = {"point_id": "p", "n_trials": 10, "gap_mean": 1.0, "gap_se": 0.01, "log_n": 2.0}
    ref |= {"gap_max": float("inf"), "gap_min": float("nan")}
    values = {"gap": [10, 1.0, -2.0, 0.5, 3.0]}  # scale 3
    assert rr.summary_within_tolerance(dict(ref), ref, values, 1e-4) == []
    near = dict(ref, gap_se=0.01 + 2.9e-4, log_n=2.0 + 1.9e-4)
    assert rr.summary_within_tolerance(near, ref, values, 1e-4) == []
    far = dict(ref, gap_se=0.01 + 3.1e-4, log_n=2.0 + 2.1e-4, n_trials=9, gap_max=3.0, gap_min=1.0)
    assert rr.summary_within_tolerance(far, ref, values, 1e-4) == [
        "n_trials",
        "gap_se",
        "log_n",
        "gap_max",
        "gap_min",
    ]


def test_an_unrecorded_class_compares_summaries_within_the_tolerance(monkeypatch):
    """What ran on X86_V4-Haswell (OpenBLAS forced to Haswell on an AVX-512 CPU) without a word
    before: a class with no summary digests is checked within the tolerance, not skipped."""
    from attnsim.records import cpu

    monkeypatch.setattr(cpu, "cpu_class", lambda: "X86_V4-Unrecorded")
    result = rr.check("temperature_entropy", 1)
    assert result["summary_mode"] == "tolerance" and result["summary_ids_match"]
    assert result["summary_failed"] == []
