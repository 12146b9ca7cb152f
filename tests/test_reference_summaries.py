"""Summaries stay the same across refactors: each reference sweep's summary rows (collect's
`summarise_chunks` of the reference rows), bit for bit on every CPU class recorded in
tests/data/reference_rows/<kind>.json (`summary_digests`; tests/helpers/reference_rows.py records
them beside the rows' digests)."""

from __future__ import annotations

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
    if "summary_failed" not in result:
        pytest.skip(f"{kind}: no summary digests recorded for CPU class {result['class']}")
    assert result["summary_ids_match"], f"{kind}: the summary's points changed"
    assert not result["summary_failed"], (
        f"{kind} on {result['class']}: {len(result['summary_failed'])} of {result['points']} "
        f"summary rows differ (first: {result['summary_failed'][0]})"
    )
